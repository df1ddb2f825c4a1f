//! `storlab serve` refuses bad options with one clear message naming what
//! is wrong, and a non-zero exit, before it listens.

mod common;

use std::process::Command;

/// Run `storlab serve` with `args`; its exit success and stderr.
fn serve(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .arg("serve")
        .args(args)
        .output()
        .expect("run storlab");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_serve_options_name_what_is_wrong() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("s.sock");
    let sock = sock.to_str().expect("utf-8 path");
    let cases: [(&[&str], &str); 7] = [
        (
            &["--floor-probe", "20000000", "--socket", sock],
            "20000000 is not in 0..=10000000",
        ),
        (
            &["--device", "nosuch", "--socket", sock],
            "unknown device 'nosuch'",
        ),
        (&["--size", "12Q", "--socket", sock], "12Q: invalid digit"),
        (
            &["--device", "fusion-io", "--size", "1T", "--socket", sock],
            "size 1099511627776 B (1024.0 GiB) exceeds the device's capacity, 80000000000 B (74.5 GiB)",
        ),
        (
            &["--size", "0", "--socket", sock],
            "0: needs at least one byte (leave --size out for the device's capacity)",
        ),
        (
            &["--listen", "10.0.0.1:10809"],
            "non-loopback address 10.0.0.1:10809",
        ),
        (
            &[
                "--size",
                "1M",
                "--store",
                "file:/nonexistent-dir/img",
                "--socket",
                sock,
            ],
            "opening store file:/nonexistent-dir/img: No such file or directory",
        ),
    ];
    for (args, want) in cases {
        let (ok, err) = serve(args);
        assert!(!ok, "{args:?} was accepted");
        assert!(
            err.contains(want),
            "{args:?}: {err:?} does not say {want:?}"
        );
        assert!(
            err.matches("os error").count() <= 1,
            "{args:?}: the OS error is printed once: {err:?}"
        );
    }
}

#[test]
fn sigterm_while_starting_is_a_clean_shutdown() {
    // The socket exists before the floor probe ends and serving starts; a
    // SIGTERM then must still end the server cleanly, with its report.
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("s.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args([
            "serve",
            "--device",
            "null",
            "--size",
            "1M",
            "--floor-probe",
            "200000",
            "--socket",
        ])
        .arg(&sock)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start storlab serve");
    let t0 = std::time::Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed().as_secs() < 20, "no socket");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let report = common::stop_server(child);
    assert!(report.contains("storlab serve:"), "{report}");
    assert!(!sock.exists(), "the socket is removed at shutdown");
}
