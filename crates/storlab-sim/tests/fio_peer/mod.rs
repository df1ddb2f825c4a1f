//! The real fio these report tests compare against.

use std::path::Path;
use std::process::Command;

/// Run fio in `dir` and return its stdout. fio is required: these tests
/// exist to keep storlab's output identical in shape to fio's.
pub fn run_fio(dir: &Path, args: &[&str]) -> String {
    let v = Command::new("fio").arg("--version").output().unwrap_or_else(|e| {
        panic!("cannot run fio ({e}): the report tests compare against fio 3.33; install it (apt-get install fio)")
    });
    let version = String::from_utf8_lossy(&v.stdout).trim().to_string();
    assert_eq!(
        version, "fio-3.33",
        "the report mirrors fio 3.33's layout; found {version}"
    );
    let out = Command::new("fio")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("fio runs");
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("fio prints UTF-8")
}
