//! fio jobs through the file-system layer (`--fs`): fio's file options
//! define the files, the `storlab` object counts the layer's work, bad
//! combinations are refused naming the job and option, and runs are
//! deterministic.

use serde_json::Value;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::report::{write_json, ReportOptions};
use storlab_sim::run::{simulate, RunError};

fn run(device: &str, fs: &str, fio: &[&str]) -> Result<Value, RunError> {
    let ov = vec![format!("host.file_system=\"{fs}\"")];
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, &ov).expect("preset");
    let args: Vec<String> = fio.iter().map(|s| s.to_string()).collect();
    let jobs = storlab_workload::fio::parse_cli_args(&args).expect("args");
    let r = simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})?;
    let mut out = Vec::new();
    write_json(&r.jobs, &mut out, &ReportOptions::default()).expect("json");
    Ok(serde_json::from_slice(&out).expect("json"))
}

fn fs_counter(v: &Value, name: &str) -> u64 {
    v["jobs"][0]["storlab"]["fs"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no fs.{name} in {}", v["jobs"][0]["storlab"]))
}

#[test]
fn the_raw_device_has_no_fs_object() {
    let v = run(
        "moneta-base",
        "none",
        &["--name=a", "--rw=randread", "--bs=4k", "--number_ios=50"],
    )
    .expect("runs");
    assert!(v["jobs"][0]["storlab"].get("fs").is_none());
}

#[test]
fn buffered_and_direct_reads_differ_as_the_page_cache_says() {
    let base = [
        "--name=a",
        "--rw=read",
        "--bs=4k",
        "--size=64m",
        "--number_ios=1000",
    ];
    let buffered = run("moneta-base", "xfs", &base).expect("runs");
    let direct = run("moneta-base", "xfs", &[&base[..], &["--direct=1"]].concat()).expect("runs");
    assert!(fs_counter(&buffered, "page_cache_hits") > 900);
    assert!(fs_counter(&buffered, "readahead_bytes") > 0);
    assert_eq!(fs_counter(&direct, "page_cache_hits"), 0);
    let lat = |v: &Value| v["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap();
    assert!(
        lat(&buffered) < lat(&direct) / 2.0,
        "read-ahead hides the device"
    );
}

#[test]
fn ext3_with_several_files_and_fsync_runs_and_counts() {
    let v = run(
        "haste-dram",
        "ext3",
        &[
            "--name=a",
            "--rw=write",
            "--bs=4m",
            "--size=60m",
            "--nrfiles=3",
            "--numjobs=2",
            "--direct=1",
            "--fallocate=none",
            "--fsync=2",
        ],
    )
    .expect("runs");
    assert!(fs_counter(&v, "allocations") > 0);
    assert!(
        fs_counter(&v, "fallback_writes") > 0,
        "ext3 writes into holes"
    );
    assert!(fs_counter(&v, "journal_writes") > 0, "fsync forces the log");
    assert_eq!(v["jobs"][0]["storlab"]["fs"]["file_system"], "ext3");
}

#[test]
fn jobs_a_file_system_cannot_run_are_refused_by_name() {
    let e = run("moneta-base", "xfs", &["--name=nosize", "--rw=read"]).unwrap_err();
    let m = e.to_string();
    assert!(m.contains("nosize") && m.contains("size"), "{m}");
    let e = run(
        "moneta-base",
        "xfs",
        &["--name=t", "--rw=trim", "--size=1m"],
    )
    .unwrap_err();
    let m = e.to_string();
    assert!(m.contains("`t`") && m.contains("rw"), "{m}");
    let e = run(
        "ddr-dram",
        "xfs",
        &["--name=big", "--rw=read", "--size=64g"],
    )
    .unwrap_err();
    assert!(e.to_string().contains("big"), "{e}");
}

#[test]
fn runs_through_a_file_system_are_deterministic() {
    let job = [
        "--name=a",
        "--rw=randrw",
        "--bs=4k",
        "--size=256m",
        "--numjobs=4",
        "--filename=shared",
        "--number_ios=300",
        "--fsync=16",
    ];
    let a = run("haste-dram", "xfs", &job).expect("runs");
    let b = run("haste-dram", "xfs", &job).expect("runs");
    assert_eq!(a, b);
}
