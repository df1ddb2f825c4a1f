//! Shared by the integration tests of several crates (included with
//! `#[path]`): run a program to its end and insist on how it ended.

use std::process::{Command, Output};

/// `cmd` as a command line, for messages.
fn describe(cmd: &Command) -> String {
    let mut line = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        line.push(' ');
        line.push_str(&a.to_string_lossy());
    }
    line
}

fn run(cmd: &mut Command) -> (String, Output) {
    let line = describe(cmd);
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run `{line}` ({e}); install it (the Debian package of the same name)")
    });
    (line, out)
}

/// Run `cmd`; its standard output. Failing (non-zero exit, or not
/// starting) panics with the command line and its standard error.
pub fn stdout_of(cmd: &mut Command) -> Vec<u8> {
    let (line, out) = run(cmd);
    assert!(
        out.status.success(),
        "`{line}`: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Run `cmd`, which must fail with a message and not a panic; its
/// standard error.
#[allow(dead_code)] // not every test that includes this module needs it
pub fn stderr_of_failure(cmd: &mut Command) -> String {
    let (line, out) = run(cmd);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "`{line}` succeeded: {err}");
    assert!(!err.contains("panicked"), "`{line}` panicked: {err}");
    err
}
