//! `storlab app run` takes everything down (server, nbdfuse, loop device,
//! mount, the application's processes, the private directory) after a
//! success, after an application's failure and after SIGTERM mid-run;
//! without root it says what it needs. Needs root, FUSE and loop devices
//! (as the emulator's nbdfuse test does).

mod app_common;

use std::time::{Duration, Instant};

use app_common::*;

#[test]
fn success_leaves_nothing_behind() {
    let s = Scratch::new();
    let json = tempfile::NamedTempFile::new().expect("json file");
    let j = json.path().to_str().expect("utf-8 path");
    let keep = tempfile::tempdir().expect("tempdir");
    let trace = keep.path().join("bdb.trace");
    let t = trace.to_str().expect("utf-8 path");
    let out = s.run(&[
        "app",
        "run",
        "bdb-hash",
        "--device",
        "fusion-io",
        "--size",
        "1G",
        "--scale",
        "0.0005",
        "--duration",
        "1s",
        "--floor-probe",
        "500",
        "--json",
        j,
        "--record",
        t,
    ]);
    let rep = report(&out, json.path());
    s.assert_clean();
    // the recording is a closed-loop trace the simulator replays
    assert!(
        rep["record"]
            .as_str()
            .is_some_and(|r| r.contains("bdb.trace")),
        "{rep}"
    );
    let sim = s.run(&[
        "sim",
        "--device",
        "moneta-spin",
        "--trace",
        t,
        "--replay",
        "closed",
    ]);
    assert!(
        sim.status.success(),
        "{}",
        String::from_utf8_lossy(&sim.stderr)
    );
    assert!(!sim.stdout.is_empty());
    assert!(rep["result"]["value"].as_f64().expect("value") > 0.0);
    assert_eq!(rep["result"]["unit"], "transactions/s");
    assert!(requests(&rep, "flush") > 0, "durable commits flush: {rep}");
    assert!(rep["device_stats"]["transport_floor"]["count"].as_u64() == Some(500));
    let text = String::from_utf8_lossy(&out.stdout);
    for what in [
        "result:",
        "lateness (reply - deadline)",
        "transport floor",
        "breakdown (mean)",
    ] {
        assert!(text.contains(what), "no {what:?} in:\n{text}");
    }
}

#[test]
fn an_application_failure_leaves_nothing_behind() {
    let s = Scratch::new();
    // 16 MiB cannot hold 330 k records: the load fails (ENOSPC)
    let out = s.run(&[
        "app",
        "run",
        "bdb-btree",
        "--device",
        "null",
        "--fs",
        "ext4",
        "--size",
        "16M",
        "--scale",
        "0.005",
        "--duration",
        "1s",
        "--floor-probe",
        "0",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bdb-btree load failed"), "{err}");
    s.assert_clean();
}

/// Start `app` for two minutes, signal it with `sig` once the log
/// `marker` of its measured phase exists, and check the teardown.
fn signal_mid_run(app: &str, marker: &str, sig: i32, name: &str) {
    let s = Scratch::new();
    let mut child = s
        .command(&[
            "app",
            "run",
            app,
            "--device",
            "null",
            "--size",
            "1G",
            "--scale",
            "0.0005",
            "--duration",
            "120s",
            "--floor-probe",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start storlab app run");
    let t = Instant::now();
    let started = || {
        std::fs::read_dir(s.path())
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join(marker).exists())
    };
    while !started() {
        assert!(
            t.elapsed() < Duration::from_secs(90),
            "{app} never started its run"
        );
        assert!(
            child.try_wait().expect("wait").is_none(),
            "storlab ended early"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
    let t = Instant::now();
    let out = child.wait_with_output().expect("wait");
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "teardown took {:?}",
        t.elapsed()
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("interrupted by {name}")), "{err}");
    s.assert_clean();
}

#[test]
fn sigterm_mid_run_leaves_nothing_behind() {
    // a database server, its client and the whole device chain running
    signal_mid_run(
        "sysbench-oltp",
        "sysbench_run.log",
        libc::SIGTERM,
        "SIGTERM",
    );
}

#[test]
fn ctrl_c_mid_run_leaves_nothing_behind() {
    signal_mid_run(
        "bdb-hash",
        "bdb-hash_run.log",
        libc::SIGINT,
        "SIGINT (Ctrl-C)",
    );
}

#[test]
fn without_root_it_says_what_it_needs() {
    let s = Scratch::new();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_storlab"))
        .args(["app", "run", "sqlite", "--device", "null"])
        .env("TMPDIR", s.path())
        .output()
        .expect("setpriv (util-linux)");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs root (or CAP_SYS_ADMIN)"), "{err}");
    s.assert_clean();
}

#[test]
fn list_names_every_application_and_its_package() {
    let s = Scratch::new();
    let out = s.run(&["app", "list"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for (app, pkg) in [
        ("bdb-btree", "libdb5.3-dev"),
        ("bdb-hash", "libdb5.3-dev"),
        ("postmark", "postmark"),
        ("sysbench-oltp", "mariadb-server"),
        ("pgbench", "postgresql"),
        ("sqlite", "sqlite3"),
        ("rocksdb", "rocksdb-tools"),
        ("build", "make"),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{app} ")))
            .unwrap_or_else(|| panic!("no {app} in:\n{text}"));
        assert!(line.contains(pkg), "{line}");
        assert!(
            line.contains(" yes "),
            "{app} is not installed here: {line}"
        );
    }
    // one default scale per line: postmark's column says 0.05 and its
    // description says when it is 0.005 instead (issue 60), not "default 0.005"
    let postmark = text.lines().find(|l| l.starts_with("postmark ")).unwrap();
    assert!(postmark.contains(" 0.05 "), "{postmark}");
    assert!(
        !postmark.contains("default scale 0.005") && postmark.contains("--direct"),
        "{postmark}"
    );
    // each subcommand's help points to the other
    let h = s.run(&["app", "--help"]);
    assert!(String::from_utf8_lossy(&h.stdout).contains("`storlab apps`"));
    let h = s.run(&["apps", "--help"]);
    assert!(String::from_utf8_lossy(&h.stdout).contains("`storlab app`"));
}

#[test]
fn kernel_nbd_attach_runs_where_the_host_has_it() {
    let s = Scratch::new();
    let json = tempfile::NamedTempFile::new().expect("json file");
    let j = json.path().to_str().expect("utf-8 path");
    let out = s.run(&[
        "app",
        "run",
        "sqlite",
        "--device",
        "null",
        "--size",
        "1G",
        "--scale",
        "0.002",
        "--duration",
        "1s",
        "--floor-probe",
        "0",
        "--attach",
        "nbd",
        "--json",
        j,
    ]);
    if std::path::Path::new("/dev/nbd0").exists() {
        let rep = report(&out, json.path());
        assert_eq!(rep["attach"], "nbd (kernel client)");
    } else {
        // this host has no nbd module: the option says so and nothing
        // is started
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("/dev/nbd0 is missing"), "{err}");
    }
    s.assert_clean();
}

#[test]
fn a_zero_size_points_to_app_runs_own_default() {
    // issue 60: the hint named the device's capacity (serve's default),
    // though app run's is 8G
    let s = Scratch::new();
    let out = s.run(&["app", "run", "sqlite", "--size", "0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("0: needs at least one byte (leave --size out for app run's default, 8G)"),
        "{err}"
    );
    assert!(!err.contains("capacity"), "{err}");
    s.assert_clean();
}
