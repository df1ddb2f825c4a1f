//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/data/<name>`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

/// The fio binary; the tests that compare with fio need it and fail (not
/// skip) when it is missing.
pub fn fio_binary() -> PathBuf {
    let candidates = [
        std::env::var_os("FIO").map(PathBuf::from),
        Some(PathBuf::from("/usr/bin/fio")),
        Some(PathBuf::from("/usr/local/bin/fio")),
    ];
    for c in candidates.into_iter().flatten() {
        if c.is_file() {
            return c;
        }
    }
    panic!(
        "fio is required by these tests (they compare storlab's parser with fio's) but was not found \
         at $FIO, /usr/bin/fio or /usr/local/bin/fio; install fio (e.g. `apt-get install fio`)"
    );
}

/// Run `fio <args>` and return (success, stdout + stderr).
pub fn run_fio(args: &[&str]) -> (bool, String) {
    let out = Command::new(fio_binary())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run fio: {e}"));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// No environment variables.
pub fn no_env(_: &str) -> Option<String> {
    None
}
