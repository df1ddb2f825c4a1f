//! What a user watches while a run goes (issue 60, item 10): a job with
//! no size works over the whole device and shows a bar with the time left
//! on a terminal (and nothing when stderr is not one); application jobs
//! and closed-loop replays fill fio's "IO depths" lines as fio jobs do.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_storlab");

/// Run storlab under a pseudo-terminal (util-linux `script`), returning
/// everything it wrote there.
fn on_a_terminal(args: &str) -> String {
    let out = Command::new("script")
        .args(["-qec", &format!("{BIN} {args}"), "/dev/null"])
        .output()
        .expect("run script (util-linux)");
    assert!(out.status.success(), "{args}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_job_with_no_size_shows_how_far_it_is_and_the_time_left() {
    // no size: from the offset to the device's end (the null device's
    // last 2 GiB, half a million IOs: a second or two of wall time)
    let args = "sim --device null --name=whole --rw=randread --bs=4k --offset=62g";
    let tty = on_a_terminal(args);
    assert!(tty.contains("left)"), "no time left shown: {tty}");
    assert!(tty.contains('%'), "no share shown: {tty}");
    assert!(
        tty.contains("issued rwts: total=524288,"),
        "the run's report is missing: {tty}"
    );
    // not a terminal: quiet
    let out = Command::new(BIN)
        .args(args.split(' '))
        .output()
        .expect("run storlab");
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("left)"), "a bar off a terminal: {err}");
}

#[test]
fn a_runtime_job_shows_its_share_of_the_runtime() {
    let tty = on_a_terminal(
        "sim --device sata-ssd --name=t --rw=randread --bs=4k --iodepth=32 --time_based --runtime=4s",
    );
    assert!(tty.contains("left)"), "no time left shown: {tty}");
}

fn job_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .args(args)
        .args(["--output-format=json"])
        .output()
        .expect("run storlab");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["jobs"][0].clone()
}

/// The shares of fio's `iodepth_level` buckets.
fn levels(job: &serde_json::Value) -> Vec<f64> {
    let m = job["iodepth_level"].as_object().expect("iodepth_level");
    m.values().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn an_application_job_reports_the_depths_it_issued_at() {
    // Berkeley DB's transaction threads and checkpointer run concurrently:
    // some requests are issued with others in flight
    let job = job_json(&[
        "sim",
        "--device",
        "moneta-balance",
        "--app",
        "bdb-btree",
        "--runtime=1s",
    ]);
    let l = levels(&job);
    let total: f64 = l.iter().sum();
    assert!(total >= 99.0, "IO depths add to {total} %: {l:?}");
    assert!(
        l[1..].iter().sum::<f64>() > 0.0,
        "never above depth 1: {l:?}"
    );
    assert_eq!(job["iodepth_submit"]["4"].as_f64(), Some(100.0));
    assert_eq!(job["iodepth_complete"]["4"].as_f64(), Some(100.0));
}

#[test]
fn a_closed_loop_replay_reports_the_depths_it_issued_at() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../storlab-trace/tests/data/sample.closed"
    );
    let job = job_json(&[
        "sim", "--device", "sata-ssd", "--trace", trace, "--replay", "closed",
    ]);
    let l = levels(&job);
    // fio counts syncs in the depths but not in the total (as fio prints
    // 199.9 % for fsync=1): at least every read, write and trim
    assert!(l.iter().sum::<f64>() >= 99.0, "{l:?}");
    assert!(job["iodepth_submit"]["4"].as_f64() == Some(100.0), "{job}");
}

#[test]
fn a_trace_iodepth_without_its_value_says_how_to_give_it() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../storlab-trace/tests/data/sample.closed"
    );
    let out = Command::new(BIN)
        .args([
            "sim",
            "--device",
            "sata-ssd",
            "--trace",
            trace,
            "--replay",
            "afap",
            "--iodepth",
            "8",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--iodepth=N"), "{err}");
}
