//! `storlab hybrid thrash`: the paging benchmark on the hybrid-memory
//! runtime, with its counters, and bad input refused by name.

use std::process::{Command, Output};

fn thrash(args: &[&str]) -> Output {
    let mut a = vec!["hybrid", "thrash"];
    a.extend_from_slice(args);
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(&a)
        .output()
        .expect("run storlab")
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend_from_slice(&["--output-format", "json"]);
    let out = thrash(&a);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
fn paging_to_a_device_is_slower_than_dram_and_loses_no_update() {
    let r = json(&[
        "--device",
        "fusion-io",
        "--size",
        "16m",
        "--dram",
        "2m",
        "--threads",
        "4",
        "--updates",
        "2000",
    ]);
    assert_eq!(r["checksum"], r["expected_checksum"], "{r}");
    let s = &r["stats"];
    assert_eq!(s["dram_pages"], 512);
    assert!(s["resident_peak"].as_u64().unwrap() <= 512, "{r}");
    assert_eq!(s["zero_fills"], 4096, "each page touched first once: {r}");
    assert!(s["device_reads"].as_u64().unwrap() > 4000, "{r}");
    assert!(s["device_writes"].as_u64().unwrap() > 3500, "{r}");
    // the model's flash read (25 µs array read + transfer) bounds a fault:
    // the median fault waits at least the median read (medians, as a die
    // busy with a program gives some reads a long tail that moves the mean)
    let model = s["model_read_us"]["mean"].as_f64().unwrap();
    assert!(model > 25.0, "{r}");
    let model_p50 = s["model_read_us"]["p50"].as_f64().unwrap();
    assert!(model_p50 > 25.0, "{r}");
    assert!(
        s["fault_us"]["p50"].as_f64().unwrap() >= model_p50 * 0.9,
        "{r}"
    );
    let rel = r["relative"].as_f64().unwrap();
    assert!(rel > 0.0 && rel < 0.2, "paging costs: {rel}");
}

#[test]
fn enough_dram_means_no_device_traffic() {
    let r = json(&[
        "--size",
        "4m",
        "--dram",
        "4m",
        "--threads",
        "2",
        "--updates",
        "5000",
        "--no-baseline",
    ]);
    assert_eq!(r["checksum"], r["expected_checksum"], "{r}");
    assert_eq!(r["stats"]["device_reads"], 0, "{r}");
    assert_eq!(r["stats"]["device_writes"], 0, "{r}");
    assert!(r["dram"].is_null() && r["relative"].is_null());
}

#[test]
fn bad_input_is_refused_by_name() {
    for (args, want) in [
        (vec!["--size", "4q"], "--size 4q"),
        (
            vec!["--dram", "1k", "--size", "1m"],
            "--dram 1k: 1024 holds fewer",
        ),
        (
            vec!["--size", "100000"],
            "--size 100000: 100000 is not a positive multiple",
        ),
        (vec!["--device", "nosuch"], "nosuch"),
        (vec!["--store", "disk:/x"], "--store"),
        (
            vec!["--threads", "0", "--size", "1m", "--dram", "1m"],
            "--threads 0: 0 is not 1 to 1024",
        ),
        (vec!["--output-format", "xml"], "--output-format=xml"),
    ] {
        let out = thrash(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
