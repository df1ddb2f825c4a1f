//! The real fio these report tests compare against.

#[path = "../../../../testsupport/command.rs"]
mod command;

use std::path::Path;
use std::process::Command;

/// Run fio in `dir` and return its stdout. fio is required: these tests
/// exist to keep storlab's output identical in shape to fio's.
pub fn run_fio(dir: &Path, args: &[&str]) -> String {
    let v = command::stdout_of(Command::new("fio").arg("--version"));
    let version = String::from_utf8_lossy(&v).trim().to_string();
    assert_eq!(
        version, "fio-3.33",
        "the report mirrors fio 3.33's layout; found {version}"
    );
    let out = command::stdout_of(Command::new("fio").args(args).current_dir(dir));
    String::from_utf8(out).expect("fio prints UTF-8")
}
