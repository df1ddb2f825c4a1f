//! `storlab serve` refuses bad options with one clear message naming what
//! is wrong, and a non-zero exit, before it listens.

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
    let cases: [(&[&str], &str); 5] = [
        (
            &["--floor-probe", "20000000", "--socket", sock],
            "20000000 is not in 0..=10000000",
        ),
        (
            &["--device", "nosuch", "--socket", sock],
            "unknown device 'nosuch'",
        ),
        (&["--size", "12Q", "--socket", sock], "12Q: unknown unit"),
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
