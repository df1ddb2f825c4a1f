//! `storlab serve --record-format closed` and `storlab sim --replay
//! closed` from the command line: a recording made by the binary replays,
//! the report is fio's layout with `storlab.closed_loop`, a faster device
//! finishes sooner, the output is deterministic, and bad input is refused
//! naming the file and line or the option.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn storlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args)
        .output()
        .expect("run storlab")
}

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../storlab-trace/tests/data/sample.closed")
        .display()
        .to_string()
}

fn closed_json(device: &str, trace: &str) -> (serde_json::Value, Vec<u8>) {
    let out = storlab(&[
        "sim",
        "--device",
        device,
        "--trace",
        trace,
        "--replay",
        "closed",
        "--output-format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    (v, out.stdout)
}

#[test]
fn the_sample_replays_faster_on_a_faster_device_deterministically() {
    let (disk, _) = closed_json("raid-disk", &sample());
    let (pcm, a) = closed_json("moneta-spin", &sample());
    let (_, b) = closed_json("moneta-spin", &sample());
    assert_eq!(a, b, "the same replay twice differs");
    let c = |v: &serde_json::Value| v["jobs"][0]["storlab"]["closed_loop"].clone();
    let (d, p) = (c(&disk), c(&pcm));
    assert_eq!(d["requests"], 600);
    assert!(d["runtime_s"].as_f64().unwrap() > p["runtime_s"].as_f64().unwrap());
    assert!(p["requests_per_s"].as_f64().unwrap() > d["requests_per_s"].as_f64().unwrap());
    // the recorded figures sit beside the simulated ones, the same for both
    assert_eq!(d["recorded"], p["recorded"]);
    // fio's layout: the writes and the flushes of the replay are counted
    let job = &pcm["jobs"][0];
    assert!(job["write"]["total_ios"].as_u64().unwrap() > 0, "{job}");
    assert!(job["sync"].is_object(), "{job}");
    let text = storlab(&[
        "sim",
        "--device",
        "moneta-spin",
        "--trace",
        &sample(),
        "--replay",
        "closed",
    ]);
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(t.contains("closed-loop replay of"), "{t}");
    assert!(t.contains("run time simulated/recorded"), "{t}");
}

#[test]
fn bad_input_is_refused_naming_the_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.closed");
    std::fs::write(
        &bad,
        format!(
            "{} 1\n{}\n0 0 0 0 read 0 4096 0 10 5 20 0\n",
            storlab_trace::closed::MAGIC,
            storlab_trace::closed::COLUMNS
        ),
    )
    .unwrap();
    let out = storlab(&[
        "sim",
        "--trace",
        bad.to_str().unwrap(),
        "--replay",
        "closed",
    ]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("bad.closed:3"), "{e}");
    let out = storlab(&[
        "sim",
        "--trace",
        &sample(),
        "--replay",
        "closed",
        "--iodepth=4",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--iodepth=4"));
}

#[test]
fn serve_records_a_closed_trace_that_replays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("s.sock");
    let trace = dir.path().join("t.closed");
    let child = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args([
            "serve",
            "--device",
            "fusion-io",
            "--size",
            "64M",
            "--floor-probe",
            "0",
        ])
        .arg("--socket")
        .arg(&sock)
        .arg("--record")
        .arg(&trace)
        .args(["--record-format", "closed"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let end = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(Instant::now() < end, "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let fio = Command::new("fio")
        .args([
            "--name=t",
            "--ioengine=nbd",
            &format!("--uri=nbd+unix:///?socket={}", sock.display()),
            "--rw=randwrite",
            "--bs=4k",
            "--size=16m",
            "--number_ios=200",
            "--fsync=10",
            "--thinktime=20",
        ])
        .output()
        .expect("fio (Debian package fio) runs");
    assert!(
        fio.status.success(),
        "{}",
        String::from_utf8_lossy(&fio.stderr)
    );
    let report = common::stop_server(child);
    assert!(report.contains("recorded"), "{report}");
    let (v, _) = closed_json("moneta-spin", trace.to_str().unwrap());
    let c = &v["jobs"][0]["storlab"]["closed_loop"];
    // 200 writes and a flush every 10 (the nbd engine's fsync)
    assert!(c["requests"].as_u64().unwrap() >= 200, "{c}");
    assert!(c["runtime_s"].as_f64().unwrap() > 0.0);
}
