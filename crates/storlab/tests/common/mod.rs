//! Helpers shared by the CLI tests.

use std::process::Child;

/// Stop a `storlab serve` child with SIGTERM, as a user would; it must exit
/// successfully. Returns what it printed on stdout (its report, when
/// stdout was piped).
pub fn stop_server(child: Child) -> String {
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let out = child.wait_with_output().expect("wait for server");
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "server exit: {}\n{report}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    report
}
