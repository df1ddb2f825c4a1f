//! `storlab apps` and `storlab sim --app`: every application model listed
//! and shown, run from the command line and from a job file beside a fio
//! job on several classes of device, deterministic for a seed, with bad
//! names and parameters refused naming the place.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn storlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .output()
        .expect("run storlab")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

fn refused(out: &Output, want: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted; stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in want {
        assert!(err.contains(w), "stderr lacks '{w}': {err}");
    }
}

/// The names `storlab apps` lists.
fn names() -> Vec<String> {
    ok(&storlab(&["apps"]))
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Parameters that make an application quick: a small data set and few
/// operations where the model has such parameters.
fn quick(app: &str) -> String {
    let show = ok(&storlab(&["apps", "show", app]));
    let mut p = vec!["scale=0.01".to_string()];
    for (name, v) in [
        ("transactions", "200"),
        ("operations", "200"),
        ("queries", "1"),
        ("requests", "500"),
    ] {
        if show
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{name} ")))
        {
            p.push(format!("{name}={v}"));
        }
    }
    p.join(",")
}

fn app_object(json: &str) -> Value {
    let v: Value = serde_json::from_str(json).expect("json");
    v["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find_map(|j| j.get("app").cloned())
        .expect("an app object")
}

#[test]
fn every_application_is_listed_shown_and_runs_deterministically() {
    let names = names();
    assert!(names.iter().any(|n| n == "bdb-btree"), "{names:?}");
    for app in &names {
        let show = ok(&storlab(&["apps", "show", app]));
        for part in ["models:", "simplifies:", "calibration:", "parameters"] {
            assert!(show.contains(part), "{app}: no {part}: {show}");
        }
        let set = quick(app);
        for device in ["moneta-spin", "fusion-io", "raid-disk"] {
            let args = [
                "sim",
                "--device",
                device,
                "--app",
                app,
                "--app-set",
                &set,
                "--output-format=json",
            ];
            let a = app_object(&ok(&storlab(&args)));
            let m = a["metric"].as_f64().expect("metric");
            assert!(m.is_finite() && m > 0.0, "{app} on {device}: metric {m}");
            assert!(
                a["unit"].is_string() && a["time_by_layer"].is_object(),
                "{a}"
            );
            if device == "fusion-io" {
                let again = app_object(&ok(&storlab(&args)));
                assert_eq!(a, again, "{app} on {device} is not deterministic");
            }
        }
    }
}

#[test]
fn an_application_runs_beside_a_fio_job_from_a_job_file() {
    let out = ok(&storlab(&[
        "sim",
        "--device",
        "moneta-spin",
        "--output-format=json",
        "jobs/apps/bdb-beside-fio.fio",
    ]));
    let v: Value = serde_json::from_str(&out).expect("json");
    let jobs = v["jobs"].as_array().expect("jobs");
    let bdb = jobs
        .iter()
        .find(|j| j["jobname"] == "bdb")
        .expect("bdb job");
    let scan = jobs
        .iter()
        .find(|j| j["jobname"] == "scan")
        .expect("scan job");
    assert_eq!(bdb["app"]["operations_counted"], 2000);
    assert!(
        scan["read"]["io_bytes"].as_u64().unwrap() == 256 << 20,
        "{scan}"
    );
    assert!(scan.get("app").is_none());
    // both ran at once: the application's reads share the device
    assert!(bdb["read"]["total_ios"].as_u64().unwrap() > 0);
}

#[test]
fn bad_applications_and_parameters_are_refused_with_their_place() {
    refused(
        &storlab(&["sim", "--app", "bdb-tree"]),
        &["--app", "bdb-tree", "bdb-btree"],
    );
    refused(
        &storlab(&["sim", "--app", "bdb-btree", "--app-set", "colour=red"]),
        &["--app-set", "colour", "transactions"],
    );
    refused(
        &storlab(&["sim", "--app", "bdb-btree", "--app-set", "page=3"]),
        &["page=3", "from 512"],
    );
    refused(&storlab(&["sim", "--app-set", "db=1g"]), &["--app"]);
    refused(&storlab(&["apps", "show", "nope"]), &["nope", "bdb-hash"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("bad.fio");
    std::fs::write(
        &job,
        "[db]\napp=bdb-btree\napp_set=db=1g\napp_set=records=5\n",
    )
    .unwrap();
    refused(
        &storlab(&["sim", job.to_str().unwrap()]),
        &["bad.fio:4", "app_set", "records"],
    );
}
