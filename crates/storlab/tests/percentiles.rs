//! fio's percentile options reach the report: `percentile_list` chooses the
//! percentiles and `lat_percentiles`/`clat_percentiles` the series, as the
//! same options do in fio's own JSON.

#[path = "../../../testsupport/command.rs"]
mod command;

use std::process::Command;

use serde_json::Value;

fn storlab_json(args: &[&str]) -> Value {
    let out = command::stdout_of(
        Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args([
                "sim",
                "--output-format=json",
                "--name=p",
                "--rw=randread",
                "--size=1m",
            ])
            .args(args),
    );
    serde_json::from_slice(&out).expect("JSON")
}

fn fio_json(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = command::stdout_of(
        Command::new("fio")
            .args([
                "--ioengine=null",
                "--output-format=json",
                "--name=p",
                "--rw=randread",
                "--size=1m",
            ])
            .args(args)
            .current_dir(dir.path()),
    );
    serde_json::from_slice(&out).expect("fio's JSON")
}

/// The percentile keys of each latency series of the read direction.
fn keys(v: &Value) -> Vec<Option<Vec<String>>> {
    ["slat_ns", "clat_ns", "lat_ns"]
        .iter()
        .map(|k| {
            v["jobs"][0]["read"][k]["percentile"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
        })
        .collect()
}

#[test]
fn percentile_list_and_series_match_fio() {
    for args in [
        vec!["--percentile_list=50:99.5"],
        vec![
            "--percentile_list=10:90",
            "--lat_percentiles=1",
            "--clat_percentiles=0",
        ],
    ] {
        let ours = keys(&storlab_json(&args));
        let theirs = keys(&fio_json(&args));
        // fio's null engine has no submission latency, so its slat has no
        // percentiles either way: compare clat and lat
        assert_eq!(ours[1..], theirs[1..], "{args:?}");
        assert!(
            ours[1].is_some() || ours[2].is_some(),
            "{args:?}: some series has percentiles"
        );
    }
}
