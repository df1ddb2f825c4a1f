//! `storlab sim` treats fio's IO engines as fio does: with a synchronous
//! engine (fio's default, psync, among them) a job runs at depth 1 and the
//! console says so, while the report stays clean JSON.

use std::process::Command;

fn sim(extra: &[&str]) -> (serde_json::Value, String) {
    let mut args = vec![
        "sim",
        "--device=fusion-io",
        // written once, so reads reach the flash (a fresh drive's reads
        // would be noted on stderr as measuring no media)
        "--set",
        "ssd.ftl.precondition=\"full\"",
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

fn breakdown(v: &serde_json::Value, part: &str) -> f64 {
    v["jobs"][0]["storlab"]["breakdown_ns"]["read"][part]
        .as_f64()
        .unwrap()
}

fn mean_ns(v: &serde_json::Value) -> f64 {
    v["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap()
}

/// `hipri` polls for completions: on a device that completes by interrupt
/// (fusion-io) the interrupt and the wake-up leave the latency, nothing
/// else changes; on one the driver already polls (moneta-spin) nothing
/// does.
#[test]
fn hipri_polls_for_completions() {
    let base = ["--ioengine=io_uring", "--iodepth=1"];
    let (irq, _) = sim(&base);
    let (polled, _) = sim(&[&base[..], &["--hipri"]].concat());
    let saved = breakdown(&irq, "interrupt") + breakdown(&irq, "wakeup");
    assert!(
        saved > 1000.0,
        "fusion-io completes by interrupt: {saved} ns"
    );
    assert_eq!(
        breakdown(&polled, "interrupt") + breakdown(&polled, "wakeup"),
        0.0
    );
    assert!(
        (mean_ns(&irq) - mean_ns(&polled) - saved).abs() < 1.0,
        "{} - {} vs {saved}",
        mean_ns(&irq),
        mean_ns(&polled)
    );
    let spin = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args([
                "sim",
                "--device=moneta-spin",
                "--output-format=json",
                "--name=s",
                "--rw=randread",
                "--number_ios=500",
                "--ioengine=io_uring",
            ])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(
        spin(&[])["jobs"][0]["read"],
        spin(&["--hipri=1"])["jobs"][0]["read"]
    );
}

/// io_uring's own options: accepted with the engines fio knows them for
/// (and then recorded, or for `hipri` simulated), refused by name with the
/// others, as fio refuses them.
#[test]
fn engine_options_need_their_engine() {
    for opt in [
        "--hipri",
        "--fixedbufs",
        "--registerfiles",
        "--sqthread_poll=1",
        "--nowait=1",
    ] {
        let (ok, _) = sim(&["--ioengine=io_uring", opt]);
        assert!(ok["jobs"][0]["read"]["total_ios"].as_u64().unwrap() > 0);
        let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args(["sim", "--name=q", "--ioengine=psync", opt])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let name = opt[2..].split('=').next().unwrap();
        assert_eq!(out.status.code(), Some(1), "{opt}: {err}");
        assert!(
            err.contains(name) && err.contains("io_uring"),
            "{opt}: {err}"
        );
        // fio agrees
        let fio = Command::new("fio")
            .args(["--parse-only", "--name=q", "--ioengine=psync", opt])
            .output()
            .expect("fio is installed (apt-get install fio)");
        assert!(
            String::from_utf8_lossy(&fio.stderr).contains("unrecognized option"),
            "fio accepts {opt} with psync"
        );
    }
    // nowait is libaio's too
    sim(&["--ioengine=libaio", "--nowait=1"]);
}
