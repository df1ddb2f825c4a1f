//! `bdb-btree`, `bdb-hash`: the studies' Berkeley DB workload, the C
//! program `apps/bdb-bench.c` compiled here at run time against libdb5.3
//! (so building storlab never needs libdb).

use std::process::Command;

use super::kit::{App, Measured};
use super::opts::Ctx;

/// Berkeley DB with an access method.
pub struct Bdb {
    name: &'static str,
    method: &'static str,
}

/// The B+tree variant.
pub static BDB_BTREE: Bdb = Bdb {
    name: "bdb-btree",
    method: "btree",
};
/// The hash-table variant.
pub static BDB_HASH: Bdb = Bdb {
    name: "bdb-hash",
    method: "hash",
};

const SOURCE: &str = include_str!("../../../../apps/bdb-bench.c");

/// Keys at scale 1: half of them are loaded, 100-byte values, about
/// 128 bytes a record on the page: 32 Mi records, the Moneta study's
/// 4 GB data set (spec docs/spec/workloads.md).
const STUDY_KEYS: f64 = 64.0 * 1048576.0;

impl Bdb {
    fn keys(&self, cx: &Ctx) -> u64 {
        ((STUDY_KEYS * cx.scale) as u64).max(1000)
    }
}

impl Bdb {
    /// Run bdb-bench (compiled on first use) in `mode`; its output.
    fn bench(&self, cx: &mut Ctx, mode: &str) -> anyhow::Result<String> {
        let bin = compile_c(cx, "bdb-bench", SOURCE, &["-pthread"], &["-ldb"])?;
        cx.run(
            &format!("{} {mode}", self.name),
            Command::new(bin)
                .arg(cx.mnt.join("bdb"))
                .arg(self.method)
                .arg(self.keys(cx).to_string())
                .arg(cx.threads.to_string())
                .arg(match (&cx.work, mode) {
                    (Some(w), "run") => format!("x{}", w[0]),
                    _ => format!("{:.3}", cx.duration.as_secs_f64()),
                })
                .arg("64")
                .arg(mode),
        )
    }
}

impl App for Bdb {
    fn name(&self) -> &'static str {
        self.name
    }
    fn about(&self) -> &'static str {
        if self.method == "btree" {
            "apps/bdb-bench.c on libdb5.3, B+tree: random insert/delete transactions, durable commits, N threads"
        } else {
            "apps/bdb-bench.c on libdb5.3, hash table: random insert/delete transactions, durable commits, N threads"
        }
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        vec![("cc", "gcc"), ("/usr/include/db.h", "libdb5.3-dev")]
    }
    fn default_scale(&self) -> f64 {
        0.005
    }
    fn study(&self) -> &'static str {
        "64 Mi keys, half loaded: a 4 GB database (Moneta; --scale 4 for HASTE's 16 GB)"
    }
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()> {
        self.bench(cx, "load")?;
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let out = self.bench(cx, "run")?;
        let line = out
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .ok_or_else(|| anyhow::anyhow!("bdb-bench printed no result:\n{out}"))?;
        let v: serde_json::Value = serde_json::from_str(line)?;
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        Ok(Measured {
            unit: "transactions/s",
            value: f("tps"),
            higher_better: true,
            work: vec![f("transactions") as u64],
            cpu_user_s: v.get("cpu_user_s").and_then(|x| x.as_f64()),
            extra: vec![
                ("transactions".into(), f("transactions")),
                ("deadlocks retried".into(), f("deadlocks")),
            ],
        })
    }
}

/// Compile `source` (C, or C++ when `name` ends in `++`) into the cache
/// once per distinct source; the binary's path.
pub fn compile_c(
    cx: &mut Ctx,
    name: &str,
    source: &str,
    flags: &[&str],
    libs: &[&str],
) -> anyhow::Result<std::path::PathBuf> {
    // FNV-1a of the source and flags names the binary
    let mut h: u64 = 0xcbf29ce484222325;
    for b in source
        .bytes()
        .chain(flags.concat().bytes())
        .chain(libs.concat().bytes())
    {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    let (base, cc, ext) = match name.strip_suffix("++") {
        Some(b) => (b, "c++", "cc"),
        None => (name, "cc", "c"),
    };
    let dir = super::kit::cache_dir().join("bin");
    std::fs::create_dir_all(&dir)?;
    let bin = dir.join(format!("{base}-{h:016x}"));
    if bin.is_file() {
        return Ok(bin);
    }
    let src = cx.tmp.join(format!("{base}.{ext}"));
    std::fs::write(&src, source)?;
    let part = cx.tmp.join(format!("{base}.bin"));
    cx.run(
        &format!("{cc} {base}"),
        Command::new(cc)
            .arg("-O2")
            .args(flags)
            .arg(&src)
            .arg("-o")
            .arg(&part)
            .args(libs),
    )?;
    // runs compiling at once each copy to their own name, then rename
    // (atomic) into place
    let staged = bin.with_extension(format!("part{}", std::process::id()));
    std::fs::copy(&part, &staged)?;
    std::fs::rename(&staged, &bin)?;
    Ok(bin)
}
