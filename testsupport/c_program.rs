//! Shared by the C API tests of storlab-pmem and storlab-hybrid (included
//! with `#[path]`): compile a C program against a crate's header and its
//! freshly built shared library with gcc, warnings as errors.

#[path = "command.rs"]
mod command;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding the freshly built `lib{lib}.so` (`package` is
/// built first when it is not there).
fn lib_dir(package: &str, lib: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    let candidates = [
        deps.clone(),
        deps.parent().expect("profile dir").to_path_buf(),
    ];
    let so = format!("lib{lib}.so");
    let newest = candidates
        .iter()
        .filter_map(|d| {
            let t = std::fs::metadata(d.join(&so)).ok()?.modified().ok()?;
            Some((t, d.clone()))
        })
        .max();
    if let Some((_, d)) = newest {
        return d;
    }
    // Not built alongside the tests: build it.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .args(["build", "-p", package])
        .status()
        .expect("cargo build");
    assert!(st.success(), "cargo build -p {package} failed");
    candidates[1].clone()
}

/// Compile `program` in `dir` against `include/` of the crate at `manifest`
/// and `lib{lib}.so` of `package`; the executable's path.
pub fn compile(manifest: &Path, package: &str, lib: &str, program: &str, dir: &Path) -> PathBuf {
    let src = dir.join("prog.c");
    std::fs::write(&src, program).expect("write the C program");
    let exe = dir.join("prog");
    let libdir = lib_dir(package, lib);
    command::stdout_of(
        Command::new("gcc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I"])
            .arg(manifest.join("include"))
            .arg(&src)
            .arg("-L")
            .arg(&libdir)
            .arg(format!("-l{lib}"))
            .arg(format!("-Wl,-rpath,{}", libdir.display()))
            .arg("-o")
            .arg(&exe),
    );
    exe
}
