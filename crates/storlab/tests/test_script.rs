//! `scripts/test` says what it installs and why before it does, and ends
//! with one `N passed, N failed` line over every suite, failing when one
//! failed (its `--plan` and `--summarize` modes run those parts alone).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test")
}

fn run(args: &[&str], path: Option<&Path>) -> Output {
    let mut c = Command::new("/bin/bash");
    c.arg(script()).args(args);
    if let Some(p) = path {
        c.env("PATH", p);
    }
    c.output().expect("run scripts/test")
}

#[test]
fn the_plan_names_each_missing_package_and_what_needs_it() {
    // a PATH with none of the tools: every package is missing
    let dir = tempfile::tempdir().expect("tempdir");
    let dirname = Command::new("/bin/bash")
        .args(["-c", "command -v dirname"])
        .output()
        .expect("bash");
    let dirname = String::from_utf8_lossy(&dirname.stdout).trim().to_string();
    std::os::unix::fs::symlink(&dirname, dir.path().join("dirname")).expect("symlink");
    let out = run(&["--plan"], Some(dir.path()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("missing; the tests need them"), "{text}");
    for pkg in [
        "fio",
        "libnbd-bin",
        "nbdfuse",
        "nbdkit",
        "qemu-utils",
        "xfsprogs",
        "fuse3",
        "sqlite3",
        "blktrace",
        "mount",
        "parallel",
    ] {
        let line = lines
            .iter()
            .find(|l| l.starts_with(&format!("  {pkg}: needs `")))
            .unwrap_or_else(|| panic!("no line for {pkg}: {text}"));
        // what needs it: a test or an example, by its file
        assert!(line.contains(".rs"), "{line}");
    }
    // the guide's tools: linkchecker from Debian, with what needs it;
    // mdBook, which Debian does not package, from crates.io at a pinned
    // version, the command shown
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  linkchecker: needs `linkchecker`: ") && l.contains("guide")),
        "{text}"
    );
    assert!(text.contains("mdbook is missing"), "{text}");
    assert!(
        text.contains("cargo install mdbook --locked --no-default-features")
            && text.contains("--version 0."),
        "{text}"
    );
    assert!(
        text.contains("fio.service"),
        "the service fio ships: {text}"
    );
    assert!(text.contains("installing nothing"), "{text}");
    assert!(!text.contains("apt-get update"), "--plan installs: {text}");
}

#[test]
fn the_summary_counts_every_suite_and_fails_on_any_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.log");
    let b = dir.path().join("b.log");
    std::fs::write(
        &a,
        "running 3 tests\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.1s\n",
    )
    .expect("write");
    std::fs::write(
        &b,
        "     Running tests/limits.rs (target/debug/deps/limits-0123)\n\
         test idle_clients_are_closed ... ok\n\
         test fio_throughput_is_held_under_each_attack ... FAILED\n\
         test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.1s\n\
         test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.1s\n",
    )
    .expect("write");
    let out = run(
        &["--summarize", a.to_str().unwrap(), b.to_str().unwrap()],
        None,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().last(), Some("9 passed, 1 failed"), "{text}");
    assert!(!out.status.success(), "a failure must fail the script");
    // the failing test by name and binary, not only its suite (issue 60)
    assert!(
        text.contains(
            "scripts/test: failed: tests/limits.rs: fio_throughput_is_held_under_each_attack"
        ),
        "{text}"
    );
    assert!(!text.contains("idle_clients_are_closed"), "{text}");
    let out = run(&["--summarize", a.to_str().unwrap()], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().last(), Some("3 passed, 0 failed"), "{text}");
    assert!(out.status.success());
}

#[test]
fn a_full_run_ends_with_the_summary_and_runs_every_suite() {
    let text = std::fs::read_to_string(script()).expect("scripts/test");
    // every cargo test binary runs even after one fails
    assert!(text.contains("cargo test --no-fail-fast"), "{text}");
    // the last two commands: the summary line, then the status from it
    let cmds: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        cmds[cmds.len() - 2],
        r#"echo "$passed passed, $failed failed""#
    );
    assert_eq!(cmds[cmds.len() - 1], r#"[ "$failed" -eq 0 ]"#);
    // the guide is built and link-checked as a step of its own
    assert!(text.contains("run_check guide check_guide"), "{text}");
    assert!(text.contains("mdbook build docs"), "{text}");
    assert!(
        text.contains("linkchecker -f scripts/linkcheckerrc"),
        "{text}"
    );
    // no step runs outside the counting (a bare cargo line would be
    // neither counted nor, with set +e, able to fail the script)
    for l in &cmds {
        assert!(
            !l.starts_with("cargo ") || l.starts_with(r#"cargo test --no-fail-fast "$@""#),
            "a step outside run_check/run_cargo_test: {l}"
        );
    }
}

#[test]
fn python_goes_into_a_virtual_environment_said_at_the_start() {
    // issue 60: the test command installed ~35 packages into the system's
    // Python without saying so; now --plan says where pip installs, and no
    // step runs the system's pip
    let out = run(&["--plan"], None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("into the virtual")
            && text.contains("target/venv")
            && text.contains("nothing is installed into the system's Python"),
        "{text}"
    );
    let script = std::fs::read_to_string(script()).expect("scripts/test");
    for l in script
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
    {
        assert!(
            !l.contains("python3 -m pip") && !l.contains("pip3 install"),
            "the system's pip: {l}"
        );
    }
    assert!(script.contains(r#""$py" -m pip install"#), "{script}");
    assert!(script.contains(r#""$py" -m pytest"#), "{script}");
}

/// A one-package Cargo project in `dir` whose lock file names `version`.
fn project(dir: &Path, version: &str) {
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"lockcheck\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        dir.join("Cargo.lock"),
        format!("# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"lockcheck\"\nversion = \"{version}\"\n"),
    )
    .unwrap();
}

#[test]
fn a_lock_file_that_a_build_would_rewrite_fails_the_lock_check() {
    // issue 60: python/Cargo.lock was rewritten by every build, leaving each
    // clone dirty; scripts/check-locks (run by scripts/test) names it
    let check = script().with_file_name("check-locks");
    let good = tempfile::tempdir().unwrap();
    project(good.path(), "0.1.0");
    let o = Command::new(&check).arg(good.path()).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("1 lock files, none that a build would change"),
        "{text}"
    );

    let stale = tempfile::tempdir().unwrap();
    project(stale.path(), "0.0.9");
    let o = Command::new(&check).arg(stale.path()).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(!o.status.success(), "{text}");
    assert!(text.contains("Cargo.lock is out of date"), "{text}");
    let script = std::fs::read_to_string(script()).expect("scripts/test");
    assert!(script.contains("run_check \"lock files\" scripts/check-locks"));
    assert!(script.contains("run_check \"tree unchanged\" tree_clean"));
}
