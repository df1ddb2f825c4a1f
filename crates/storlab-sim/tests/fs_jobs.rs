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

/// A counter of the `fs` object the report leaves out when it is 0
/// (`conversions`, `unwritten_reads`).
fn fs_count(v: &Value, name: &str) -> u64 {
    let fs = &v["jobs"][0]["storlab"]["fs"];
    assert!(
        fs.is_object(),
        "no fs object in {}",
        v["jobs"][0]["storlab"]
    );
    fs[name].as_u64().unwrap_or(0)
}

fn write_bw(v: &Value) -> f64 {
    v["jobs"][0]["write"]["bw_bytes"]
        .as_f64()
        .expect("bw_bytes")
}

/// 16 threads of 4 KB random direct writes into one 4 GiB file on the
/// HASTE DRAM array: through `fs` ("none": the raw device) with `extra`.
fn random_writes(fs: &str, extra: &[&str]) -> Value {
    let job = [
        "--name=m",
        "--filename=f",
        "--rw=randwrite",
        "--bs=4k",
        "--numjobs=16",
        "--direct=1",
        "--size=4g",
        "--number_ios=200",
        "--group_reporting",
    ];
    run("haste-dram", fs, &[&job[..], extra].concat()).expect("runs")
}

#[test]
fn xfs_preallocated_files_lose_less_than_sparse_and_more_than_written_ones() {
    let raw = write_bw(&random_writes("none", &[]));
    let native = random_writes("xfs", &["--fallocate=native"]);
    let none = random_writes("xfs", &["--fallocate=none"]);
    let written = random_writes("xfs", &["--overwrite=1"]);
    let loss = |v: &Value| raw - write_bw(v);
    assert!(
        loss(&native) < loss(&none) && loss(&native) > loss(&written),
        "raw {raw}, native {}, none {}, written {}",
        write_bw(&native),
        write_bw(&none),
        write_bw(&written)
    );
    // native converts (nearly) every write and allocates none; none
    // allocates every write; the written file does neither
    let writes = 16 * 200;
    assert_eq!(fs_counter(&native, "allocations"), 0);
    assert!(fs_count(&native, "conversions") > writes * 99 / 100);
    assert!(fs_counter(&none, "allocations") > writes * 99 / 100);
    assert_eq!(fs_count(&none, "conversions"), 0);
    assert_eq!(fs_count(&written, "conversions"), 0);
    assert_eq!(fs_counter(&written, "allocations"), 0);
    // a conversion is one of the allocating path's two transactions: the
    // serialised sections set the pace, so native runs about twice as fast
    let ratio = write_bw(&native) / write_bw(&none);
    assert!((1.8..2.2).contains(&ratio), "native / none = {ratio}");
}

#[test]
fn a_second_pass_over_preallocated_blocks_converts_nothing() {
    // one thread writes the 1 MiB file through (256 blocks), then a
    // second job writes the same blocks again at random
    let first = [
        "--name=first",
        "--filename=f",
        "--rw=write",
        "--bs=4k",
        "--size=1m",
        "--direct=1",
    ];
    let second = [
        "--name=second",
        "--stonewall",
        "--filename=f",
        "--rw=randwrite",
        "--bs=4k",
        "--size=1m",
        "--direct=1",
    ];
    let one = run("haste-dram", "xfs", &first).expect("runs");
    let both = run("haste-dram", "xfs", &[&first[..], &second[..]].concat()).expect("runs");
    assert_eq!(fs_count(&one, "conversions"), 256);
    assert_eq!(
        fs_count(&both, "conversions"),
        256,
        "the second pass converts nothing"
    );
    let lat = |v: &Value, j: usize| v["jobs"][j]["write"]["lat_ns"]["mean"].as_f64().unwrap();
    // the first pass waits for a conversion per write, the second none
    let conv = storlab_model::host::fs::FsConfig::default().convert_ns() as f64;
    assert!(
        lat(&both, 0) - lat(&both, 1) > 0.9 * conv,
        "first {} ns, second {} ns",
        lat(&both, 0),
        lat(&both, 1)
    );
}

#[test]
fn reads_of_a_preallocated_file_issue_no_device_reads() {
    // the file the first job preallocated has its full size, so fio lays
    // nothing out for the reader: it reads unwritten blocks
    let job = [
        "--name=w",
        "--filename=f",
        "--rw=randwrite",
        "--bs=4k",
        "--size=1g",
        "--direct=1",
        "--number_ios=10",
        "--name=r",
        "--stonewall",
        "--filename=f",
        "--rw=randread",
        "--bs=4k",
        "--size=1g",
        "--direct=1",
        "--number_ios=500",
    ];
    let v = run("haste-dram", "xfs", &job).expect("runs");
    let reads = fs_count(&v, "unwritten_reads");
    // at most the ten written blocks are read from the device
    assert!((490..=500).contains(&reads), "{reads} unwritten reads");
    // the same reads of a written file go to the device
    let written = run(
        "haste-dram",
        "xfs",
        &[&job[..7], &["--overwrite=1"], &job[7..]].concat(),
    )
    .expect("runs");
    assert_eq!(fs_count(&written, "unwritten_reads"), 0);
    let lat = |v: &Value| v["jobs"][1]["read"]["lat_ns"]["mean"].as_f64().unwrap();
    assert!(
        lat(&v) < lat(&written) / 2.0,
        "zeros {} ns, device {} ns",
        lat(&v),
        lat(&written)
    );
}

#[test]
fn ext3_has_no_fallocate_so_native_runs_as_none_and_keep_is_refused() {
    let job = |mode: &str| {
        run(
            "haste-dram",
            "ext3",
            &[
                "--name=a",
                "--rw=randwrite",
                "--bs=4k",
                "--size=64m",
                "--direct=1",
                "--number_ios=200",
                &format!("--fallocate={mode}"),
            ],
        )
    };
    let native = job("native").expect("runs");
    let none = job("none").expect("runs");
    assert_eq!(native["jobs"][0]["write"], none["jobs"][0]["write"]);
    assert_eq!(
        native["jobs"][0]["storlab"]["fs"],
        none["jobs"][0]["storlab"]["fs"]
    );
    assert!(fs_counter(&native, "allocations") > 0);
    assert_eq!(fs_count(&native, "conversions"), 0);
    // posix is glibc's emulation: the blocks are written before the run
    let posix = job("posix").expect("runs");
    assert_eq!(fs_counter(&posix, "allocations"), 0);
    assert_eq!(fs_counter(&posix, "fallback_writes"), 0);
    assert!(write_bw(&posix) > write_bw(&none));
    let e = job("keep").unwrap_err().to_string();
    assert!(e.contains("`a`") && e.contains("fallocate=keep"), "{e}");
}

/// Issue 58 item 4: the studies' XDD runs through XFS covered 55 GB of
/// 64 and 80 GB devices. A shared file larger than the space before the
/// log (fio: `filename` shared by the job's 16 threads, `size` the file's)
/// is made around the log and every thread's IOs complete.
#[test]
fn files_larger_than_the_space_before_the_log_run_through_xfs() {
    for (device, size) in [
        ("haste-dram", "60g"),
        ("haste-pcm", "60g"),
        ("haste-sttm", "60g"),
        ("fusion-io", "75000000000"),
    ] {
        let size = format!("--size={size}");
        let v = run(
            device,
            "xfs",
            &[
                "--name=m",
                "--filename=f",
                "--rw=randwrite",
                "--bs=4k",
                "--numjobs=16",
                "--direct=1",
                &size,
                "--number_ios=200",
            ],
        )
        .unwrap_or_else(|e| panic!("{device}: {e}"));
        let jobs = v["jobs"].as_array().expect("jobs");
        assert_eq!(jobs.len(), 16, "{device}");
        let ios: u64 = jobs
            .iter()
            .map(|j| j["write"]["total_ios"].as_u64().unwrap())
            .sum();
        assert_eq!(ios, 16 * 200, "{device}");
    }
}

#[test]
fn a_file_larger_than_the_free_space_is_refused_naming_what_fits() {
    // 75 GiB on the 80 GB ioDrive: fio sizes the file to the device, and
    // the device less the 64 MiB log is what fits
    let e = run(
        "fusion-io",
        "xfs",
        &["--name=big", "--rw=randwrite", "--direct=1", "--size=75g"],
    )
    .unwrap_err()
    .to_string();
    let fits = 80_000_000_000u64 - (64 << 20);
    assert!(
        e.contains("big") && e.contains(&format!("largest file that fits is {fits} bytes")),
        "{e}"
    );
}
