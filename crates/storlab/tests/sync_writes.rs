//! fio's `sync=` (`O_SYNC`/`O_DSYNC` writes): every write must be durable
//! when it completes, so a device's volatile write cache cannot absorb it.

use std::process::Command;

fn sim(args: &[&str]) -> Result<serde_json::Value, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(["sim", "--output-format=json", "--name=s", "--size=64m"])
        .args(args)
        .output()
        .expect("run storlab");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).expect("JSON"))
}

fn mean_us(v: &serde_json::Value, dir: &str) -> f64 {
    v["jobs"][0][dir]["lat_ns"]["mean"].as_f64().unwrap() / 1e3
}

#[test]
fn synchronous_writes_get_past_the_write_cache() {
    // a disk with a write cache: a cached write is a transfer, a
    // synchronous one waits for the platter
    let job = ["--device=hdd-7200", "--rw=randwrite", "--number_ios=200"];
    let cached = mean_us(&sim(&job).unwrap(), "write");
    for mode in ["sync", "1", "dsync"] {
        let arg = format!("--sync={mode}");
        let synced = mean_us(&sim(&[&job[..], &[&arg]].concat()).unwrap(), "write");
        assert!(
            synced > 10.0 * cached,
            "sync={mode}: {synced} vs {cached} µs"
        );
    }
    let none = mean_us(
        &sim(&[&job[..], &["--sync=none"]].concat()).unwrap(),
        "write",
    );
    assert_eq!(none, cached);
}

#[test]
fn synchronous_writes_leave_reads_alone() {
    let job = ["--device=hdd-7200", "--rw=randread", "--number_ios=200"];
    let plain = sim(&job).unwrap();
    let synced = sim(&[&job[..], &["--sync=1"]].concat()).unwrap();
    assert_eq!(plain["jobs"][0]["read"], synced["jobs"][0]["read"]);
}

#[test]
fn an_unknown_sync_mode_is_refused_by_name() {
    let err = sim(&["--sync=2"]).unwrap_err();
    assert!(err.contains("sync") && err.contains("dsync"), "{err}");
}
