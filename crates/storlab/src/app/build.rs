//! `build`: compiling a real C code base that lives on the emulated
//! device, `make -jN` (compute bound, as the studies' Linux build):
//! Brotli's C library and command-line tool (37 files, about 40,000 lines
//! plus its large static tables), from the Brotli source distribution on
//! PyPI, fetched once with `pip download` into the cache. Its own build
//! files (CMake, setup.py) are not used: a generated Makefile compiles
//! every C file of `c/common`, `c/dec`, `c/enc` and `c/tools` and links
//! the `brotli` tool, which is then run to check the build. `--scale N`
//! builds N copies one after the other; a scale below 1 (for tests)
//! compiles only that fraction of the files, without linking.

use std::process::Command;
use std::time::Instant;

use anyhow::Context;

use super::kit::{App, Measured};
use super::opts::Ctx;

/// The build.
pub struct Build;

const VERSION: &str = "1.2.1";

const MAKEFILE: &str = "\
SRC := $(wildcard c/common/*.c c/dec/*.c c/enc/*.c) c/tools/brotli.c
OBJ := $(SRC:.c=.o)
CFLAGS := -O2 -Ic/include
FRACTION := $(wordlist 1,$(N),$(sort $(OBJ)))
brotli: $(OBJ)
\t$(CC) $(OBJ) -lm -o $@
part: $(FRACTION)
%.o: %.c
\t$(CC) $(CFLAGS) -c $< -o $@
";

/// C files of the build (c/common, c/dec, c/enc and the tool).
const FILES: f64 = 36.0;

impl Build {
    fn copies(cx: &Ctx) -> u64 {
        (cx.scale.round() as u64).max(1)
    }
}

impl App for Build {
    fn name(&self) -> &'static str {
        "build"
    }
    fn about(&self) -> &'static str {
        "make -jN of Brotli's C sources (PyPI sdist, cached) on the device"
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("make", "make"),
            ("cc", "gcc"),
            ("tar", "tar"),
            ("python3", "python3-pip"),
        ]
    }
    fn default_scale(&self) -> f64 {
        1.0
    }
    fn study(&self) -> &'static str {
        "one Brotli tree; --scale N builds N copies (the studies compiled Linux: ESTIMATE of the same kind of work)"
    }
    fn timed(&self) -> bool {
        false
    }
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()> {
        let src = super::kit::cache_dir().join("src");
        std::fs::create_dir_all(&src)?;
        let tarball = src.join(format!("brotli-{VERSION}.tar.gz"));
        if !tarball.is_file() {
            cx.run(
                "pip download brotli",
                Command::new("python3")
                    .args([
                        "-m",
                        "pip",
                        "download",
                        "--no-deps",
                        "--no-binary",
                        "brotli",
                    ])
                    .arg(format!("brotli=={VERSION}"))
                    .arg("-d")
                    .arg(&src),
            )
            .context("fetching Brotli's sources from PyPI (the build application's code base)")?;
        }
        for i in 0..Self::copies(cx) {
            let dir = cx.mnt.join(format!("build{i}"));
            std::fs::create_dir_all(&dir)?;
            cx.run(
                "tar",
                Command::new("tar")
                    .arg("xzf")
                    .arg(&tarball)
                    .arg("-C")
                    .arg(&dir),
            )?;
            std::fs::write(
                dir.join(format!("brotli-{VERSION}"))
                    .join("Makefile.storlab"),
                MAKEFILE,
            )?;
        }
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let t = Instant::now();
        for i in 0..Self::copies(cx) {
            let dir = cx
                .mnt
                .join(format!("build{i}"))
                .join(format!("brotli-{VERSION}"));
            let mut make = Command::new("make");
            make.arg("-C")
                .arg(&dir)
                .args(["-f", "Makefile.storlab"])
                .arg(format!("-j{}", cx.threads));
            if cx.scale < 1.0 {
                let n = ((FILES * cx.scale).ceil() as u64).max(1);
                make.arg(format!("N={n}")).arg("part");
                cx.run("make", &mut make)?;
            } else {
                cx.run("make", &mut make)?;
                cx.run(
                    "brotli --version",
                    Command::new(dir.join("brotli")).arg("--version"),
                )?;
            }
        }
        Ok(Measured {
            unit: "seconds",
            value: t.elapsed().as_secs_f64(),
            higher_better: false,
            work: Vec::new(),
            cpu_user_s: None,
            extra: Vec::new(),
        })
    }
}
