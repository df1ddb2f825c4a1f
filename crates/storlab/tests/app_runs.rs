//! Every application runs from `storlab app run` on `null`, `fusion-io`
//! and `raid-disk`, briefly and at a small scale (sizes scaled down so
//! the whole file takes a couple of minutes), reports its metric and the
//! device's figures, and leaves nothing behind. Needs root, FUSE, loop
//! devices and the applications' Debian packages (`scripts/test`
//! installs them); a missing package fails with its name.

mod app_common;

use app_common::*;

const DEVICES: [&str; 3] = ["null", "fusion-io", "raid-disk"];

/// Run `app` with `extra` options on each device; checks and returns the
/// reports.
fn on_each_device(app: &str, extra: &[&str], unit: &str, durable: bool) -> Vec<serde_json::Value> {
    DEVICES
        .iter()
        .map(|dev| {
            let s = Scratch::new();
            let json = tempfile::NamedTempFile::new().expect("json file");
            let j = json.path().to_str().expect("utf-8 path");
            let mut args = vec![
                "app",
                "run",
                app,
                "--device",
                dev,
                "--size",
                "1G",
                "--floor-probe",
                "200",
                "--threads",
                "2",
                "--json",
                j,
            ];
            args.extend_from_slice(extra);
            let out = s.run(&args);
            let rep = report(&out, json.path());
            s.assert_clean();
            assert_eq!(rep["device"], *dev);
            assert_eq!(rep["result"]["unit"], unit, "{rep}");
            let v = rep["result"]["value"].as_f64().expect("a value");
            assert!(v > 0.0 && v.is_finite(), "{app} on {dev}: {v}");
            if durable {
                // durable commits reach the device as flushes (or FUA
                // writes) within the measured phase
                assert!(
                    requests(&rep, "flush") + requests(&rep, "write") > 0,
                    "{app} on {dev} wrote nothing: {}",
                    rep["device_stats"]
                );
            }
            rep
        })
        .collect()
}

#[test]
fn bdb_btree() {
    let reps = on_each_device(
        "bdb-btree",
        &["--scale", "0.0005", "--duration", "1s"],
        "transactions/s",
        true,
    );
    // bdb-bench times its own CPU over its transactions
    for r in &reps {
        let cpu = r["result"]["cpu_user_s"].as_f64().expect("cpu_user_s");
        let wall = r["run_s"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu < 2.0 * wall, "{r}");
    }
}

#[test]
fn bdb_hash() {
    on_each_device(
        "bdb-hash",
        &["--scale", "0.0005", "--duration", "1s"],
        "transactions/s",
        true,
    );
}

#[test]
fn postmark_buffered_and_direct() {
    on_each_device("postmark", &["--scale", "0.002"], "seconds", false);
    // direct: the sync mount makes every write reach the device
    on_each_device(
        "postmark",
        &["--scale", "0.002", "--direct"],
        "seconds",
        true,
    );
}

#[test]
fn sysbench_oltp() {
    let reps = on_each_device(
        "sysbench-oltp",
        &["--scale", "0.0005", "--duration", "1s"],
        "transactions/s",
        true,
    );
    assert!(reps[0]["result"]["extra"].to_string().contains("queries/s"));
    // the server's and the client's user CPU over the run, which `app
    // check` hands to the model: some, and less than the run's wall time
    // on this machine's two cores
    for r in &reps {
        let cpu = r["result"]["cpu_user_s"].as_f64().expect("cpu_user_s");
        let wall = r["run_s"].as_f64().unwrap();
        assert!(cpu > 0.0 && cpu < 2.0 * wall, "{r}");
    }
}

#[test]
fn pgbench() {
    on_each_device(
        "pgbench",
        &["--scale", "0.01", "--duration", "1s"],
        "transactions/s",
        true,
    );
}

#[test]
fn sqlite() {
    on_each_device(
        "sqlite",
        &["--scale", "0.002", "--duration", "1s"],
        "transactions/s",
        true,
    );
}

#[test]
fn rocksdb() {
    let reps = on_each_device(
        "rocksdb",
        &["--scale", "0.0001", "--duration", "2s"],
        "fillrandom ops/s (synced)",
        true,
    );
    assert!(reps[0]["result"]["extra"]
        .to_string()
        .contains("readrandom"));
}

#[test]
fn build() {
    on_each_device("build", &["--scale", "0.1"], "seconds", false);
}
