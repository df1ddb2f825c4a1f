//! `storlab sim` treats fio's IO engines as fio does: with a synchronous
//! engine (fio's default, psync, among them) a job runs at depth 1 and the
//! console says so, while the report stays clean JSON.

use std::process::Command;

fn sim(extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec![
        "sim",
        "--device=fusion-io",
        "--output-format=json",
        "--name=q",
        "--rw=randread",
        "--bs=4k",
        "--size=64m",
        "--number_ios=2000",
        "--iodepth=8",
    ];
    args.extend(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(&args)
        .output()
        .expect("run storlab");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    let json = serde_json::from_slice(&out.stdout).expect("stdout is the JSON report alone");
    (json, err)
}

fn iops(v: &serde_json::Value) -> f64 {
    v["jobs"][0]["read"]["iops"].as_f64().unwrap()
}

#[test]
fn a_synchronous_engine_runs_at_depth_one_and_says_so() {
    let (default, note) = sim(&[]);
    assert_eq!(
        note.matches("queue depth will be capped at 1").count(),
        1,
        "{note}"
    );
    assert!(note.contains("ioengine=psync, fio's default"), "{note}");
    let (psync, _) = sim(&["--ioengine=psync"]);
    let (qd1, quiet) = sim(&["--iodepth=1"]);
    assert_eq!(quiet, "", "no note at depth 1");
    let (aio, quiet) = sim(&["--ioengine=libaio"]);
    assert_eq!(quiet, "", "no note with an asynchronous engine");
    assert_eq!(iops(&default), iops(&qd1));
    assert_eq!(iops(&psync), iops(&qd1));
    // fusion-io completes by interrupt: a thread can keep several in flight.
    assert!(
        iops(&aio) > 1.2 * iops(&qd1),
        "{} vs {}",
        iops(&aio),
        iops(&qd1)
    );
    assert_eq!(
        default["jobs"][0]["latency_depth"], 8,
        "as fio: the depth written"
    );
}

#[test]
fn an_unknown_engine_is_an_error_naming_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(["sim", "--name=q", "--rw=read", "--ioengine=libiao"])
        .output()
        .expect("run storlab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`libiao`") && err.contains("ioengine") && err.contains("libaio"),
        "{err}"
    );
}
