//! `storlab app compare`: one application on several devices, the Table V
//! shaped table as text, JSON, CSV and Markdown, every run taken down.

mod app_common;

use app_common::*;

#[test]
fn compare_writes_every_format_and_speedups_over_the_first() {
    let s = Scratch::new();
    let out_dir = tempfile::tempdir().expect("tempdir");
    let f = |n: &str| out_dir.path().join(n).display().to_string();
    let (j, c, m) = (f("t.json"), f("t.csv"), f("t.md"));
    let out = s.run(&[
        "app",
        "compare",
        "bdb-btree",
        "--devices",
        "raid-disk,fusion-io",
        "--size",
        "1G",
        "--scale",
        "0.0005",
        "--duration",
        "1s",
        "--floor-probe",
        "200",
        "--threads",
        "2",
        "--json",
        &j,
        "--csv",
        &c,
        "--markdown",
        &m,
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    s.assert_clean();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).expect("json")).expect("JSON");
    assert_eq!(v["devices"], serde_json::json!(["raid-disk", "fusion-io"]));
    assert_eq!(v["speedups"][0], 1.0);
    let (a, b) = (
        v["values"][0].as_f64().expect("raid-disk value"),
        v["values"][1].as_f64().expect("fusion-io value"),
    );
    let sp = v["speedups"][1].as_f64().expect("speedup");
    assert!((sp - b / a).abs() < 1e-9 * sp, "{sp} vs {b}/{a}");
    let csv = std::fs::read_to_string(&c).expect("csv");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.starts_with("app,unit,device,value,speedup\n"));
    let md = std::fs::read_to_string(&m).expect("markdown");
    assert!(md.contains("| bdb-btree | transactions/s |"), "{md}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("speedup over raid-disk"), "{text}");
    // issue 60 item 2: two rounds, alternating (raid-disk, fusion-io,
    // fusion-io, raid-disk), and the transport floor measured during each
    // run, not only at the server's start
    let err = String::from_utf8_lossy(&out.stderr);
    let order: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("storlab app compare: bdb-btree on "))
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(
        order,
        ["raid-disk", "fusion-io", "fusion-io", "raid-disk"],
        "{err}"
    );
    for r in v["runs"].as_array().expect("runs") {
        let f = &r["device_stats"]["transport_floor_during_run"];
        assert!(f["probes"].as_u64().unwrap_or(0) >= 1, "{r}");
        assert!(f["mean_ns"].as_f64().unwrap_or(0.0) > 0.0, "{r}");
    }
}

#[test]
fn predict_records_every_run_and_reports_the_error() {
    let s = Scratch::new();
    let out_dir = tempfile::tempdir().expect("tempdir");
    let j = out_dir.path().join("p.json").display().to_string();
    let traces = out_dir.path().join("traces");
    let t = traces.display().to_string();
    let out = s.run(&[
        "app",
        "compare",
        "sqlite",
        "--devices",
        "raid-disk,fusion-io",
        "--size",
        "1G",
        "--scale",
        "0.002",
        "--duration",
        "2s",
        "--floor-probe",
        "200",
        "--predict",
        "--traces",
        &t,
        "--json",
        &j,
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    s.assert_clean();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).expect("json")).expect("JSON");
    // the second device did the first one's work
    assert_eq!(
        v["runs"][0]["result"]["work"], v["runs"][1]["result"]["work"],
        "{v}"
    );
    let p = &v["predictions"][0];
    assert_eq!(p["device"], "fusion-io", "{v}");
    let (pred, real) = (
        p["predicted_runtime_s"].as_f64().expect("predicted"),
        p["real_runtime_s"].as_f64().expect("real"),
    );
    assert!(pred > 0.0 && real > 0.0, "{p}");
    let err = p["runtime_error"].as_f64().expect("error");
    assert!((err - (pred / real - 1.0)).abs() < 1e-9, "{p}");
    // the simulator replaying a recording on its own device comes back
    // to the recording
    assert!(
        p["self_runtime_error"].as_f64().expect("self").abs() < 0.2,
        "{p}"
    );
    // the traces were kept, one per device
    let n = std::fs::read_dir(&traces).expect("traces").count();
    assert_eq!(n, 2);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("closed-loop prediction from the recording on raid-disk"),
        "{text}"
    );
}
