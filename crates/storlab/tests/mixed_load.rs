//! Devices under mixed and small-request load (issue 58): the read tail
//! under writes for each device class (flash, disk, RAID), reported in
//! fio's JSON percentiles for the reader's job; and requests smaller than
//! a flash mapping unit (512 B reads move only their bytes, 512 B writes
//! read the old unit first and count it in the flash counters).

use std::process::Command;

fn sim(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(["sim", "--output-format=json"])
        .args(args)
        .output()
        .expect("run storlab");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// The reader job's read completion-latency percentile `p` ("99.000000"), µs.
fn reader_pct(v: &serde_json::Value, p: &str) -> f64 {
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "reader", "the reader is the first job");
    job["read"]["clat_ns"]["percentile"][p]
        .as_f64()
        .unwrap_or_else(|| panic!("no read percentile {p} in {job}"))
        / 1e3
}

/// One QD1 reader of 4 KB random reads, alone and beside `writers`
/// random writers (QD1 each); the reader's p99 both ways, µs.
fn read_p99_alone_and_under_writes(
    device: &str,
    sets: &[&str],
    size: &str,
    reads: u32,
    writes: u32,
) -> (f64, f64) {
    let mut common: Vec<String> = vec![
        format!("--device={device}"),
        "--direct=1".into(),
        "--bs=4k".into(),
        format!("--size={size}"),
    ];
    for s in sets {
        common.push("--set".into());
        common.push(s.to_string());
    }
    let reader = [
        "--name=reader".to_string(),
        "--rw=randread".into(),
        format!("--number_ios={reads}"),
    ];
    let writer = [
        "--name=writer".to_string(),
        "--rw=randwrite".into(),
        "--numjobs=4".into(),
        format!("--number_ios={writes}"),
    ];
    let alone: Vec<&str> = common.iter().chain(&reader).map(|s| s.as_str()).collect();
    let under: Vec<&str> = common
        .iter()
        .chain(&reader)
        .chain(&writer)
        .map(|s| s.as_str())
        .collect();
    let a = sim(&alone);
    let u = sim(&under);
    // the percentiles are the reader's own, as fio reports any job's
    assert_eq!(u["jobs"][0]["read"]["total_ios"], reads as u64);
    assert_eq!(u["jobs"][0]["write"]["total_ios"], 0);
    (reader_pct(&a, "99.000000"), reader_pct(&u, "99.000000"))
}

#[test]
fn flash_reads_wait_behind_programs_and_collection() {
    // a small X25-E written once: a read that reaches a die busy with a
    // program (200 us, no suspend on the 2008 controller) waits for it
    let (alone, under) = read_p99_alone_and_under_writes(
        "x25e",
        &[
            "device.capacity_bytes=536870912",
            "ssd.nand.blocks_per_plane=64",
            "ssd.ftl.precondition=\"full\"",
        ],
        "256m",
        400,
        400,
    );
    assert!(
        under > 2.0 * alone,
        "read p99 {under} us under writes, {alone} us alone"
    );
}

#[test]
fn disk_reads_wait_behind_writes_on_the_platter() {
    // the drive's cache off: every write is a positioning on the platter
    // the reader's requests queue with
    let (alone, under) =
        read_p99_alone_and_under_writes("hdd-7200", &["disk.write_cache=false"], "4g", 60, 60);
    assert!(
        under > 1.5 * alone,
        "read p99 {under} us under writes, {alone} us alone"
    );
}

#[test]
fn raid_reads_wait_behind_the_controller_cache_destaging() {
    // the 3ware's cache made small so the writers fill it at once: its
    // destaging occupies the disks the reads need
    let (alone, under) = read_p99_alone_and_under_writes(
        "raid-disk",
        &["raid.controller.cache_bytes=4194304"],
        "4g",
        60,
        1000,
    );
    assert!(
        under > 1.5 * alone,
        "read p99 {under} us under writes, {alone} us alone"
    );
}

fn counter(v: &serde_json::Value, name: &str) -> f64 {
    v["jobs"][0]["storlab"]["counters"]
        .as_array()
        .expect("counters")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no counter {name}"))["value"]
        .as_f64()
        .expect("a number")
}

fn small_x25e(rw: &str, bs: &str) -> serde_json::Value {
    sim(&[
        "--device=x25e",
        "--set",
        "device.capacity_bytes=536870912",
        "--set",
        "ssd.nand.blocks_per_plane=64",
        "--set",
        "ssd.ftl.precondition=\"full\"",
        "--name=s",
        &format!("--rw={rw}"),
        &format!("--bs={bs}"),
        "--size=256m",
        "--number_ios=300",
    ])
}

fn mean_us(v: &serde_json::Value, dir: &str) -> f64 {
    v["jobs"][0][dir]["clat_ns"]["mean"].as_f64().expect("mean") / 1e3
}

#[test]
fn sub_unit_flash_writes_read_modify_write() {
    // 512 B writes into the X25-E's 4 KB mapping units: each reads its
    // unit's old data first, counted, and waits for it
    let small = small_x25e("randwrite", "512");
    let whole = small_x25e("randwrite", "4k");
    assert_eq!(counter(&small, "rmw_reads"), 300.0);
    assert_eq!(counter(&whole, "rmw_reads"), 0.0);
    // the 512 B write moves an eighth of a 4 KB unit through the
    // controller (presets/x25e.toml: unit_ns.write 23.7 us per 4 KB, charged
    // per byte), so it saves 7/8 of that against the 4 KB write, and then
    // waits for the old unit's page read (read_ns, 25 us): most of it shows
    let saved = 23.7 * 7.0 / 8.0;
    let (s, w) = (mean_us(&small, "write"), mean_us(&whole, "write"));
    assert!(
        s - (w - saved) > 0.8 * 25.0,
        "512 B {s} us, 4 KB {w} us: the read-modify-write's page read does not show"
    );
}

#[test]
fn sub_unit_flash_reads_move_only_their_bytes() {
    // a 512 B read costs the command and the page read as a 4 KB one
    // does, but moves an eighth of the bytes over SATA (13.7 us for 4 KB
    // at 300 MB/s)
    let small = mean_us(&small_x25e("randread", "512"), "read");
    let whole = mean_us(&small_x25e("randread", "4k"), "read");
    assert!(
        small < whole - 8.0 && small > 0.5 * whole,
        "512 B {small} us, 4 KB {whole} us"
    );
}

#[test]
fn program_suspend_lets_reads_past_programs() {
    // the same reader beside writers on a small X25-E, without suspend
    // (the drive as it was) and with it (a later part's): suspended
    // programs let the reads through, and are counted
    let base = [
        "device.capacity_bytes=536870912",
        "ssd.nand.blocks_per_plane=64",
        "ssd.ftl.precondition=\"full\"",
    ];
    let (_, off) = read_p99_alone_and_under_writes("x25e", &base, "256m", 400, 400);
    let on: Vec<&str> = base
        .iter()
        .copied()
        .chain(["ssd.nand.suspend=true", "ssd.nand.suspend_resume_ns=20000"])
        .collect();
    let (alone, with) = read_p99_alone_and_under_writes("x25e", &on, "256m", 400, 400);
    assert!(
        with < 0.8 * off && with >= alone,
        "read p99 under writes: {with} us with suspend, {off} us without ({alone} us alone)"
    );
}

#[test]
fn disk_reads_are_not_starved_behind_write_cache_destages() {
    // the drive's write cache on and made small (1 MB) so the writers fill
    // it at once and its destages age past the 0.5 s starvation bound: a
    // host read still waits behind at most a few destages (tens of ms), not
    // behind the whole cache served oldest-first (seconds)
    let (alone, under) =
        read_p99_alone_and_under_writes("hdd-7200", &["disk.cache_bytes=1048576"], "4g", 100, 1000);
    assert!(
        under > alone,
        "read p99 {under} us under writes, {alone} us alone"
    );
    assert!(
        under < 100_000.0,
        "read p99 {under} us under writes: starved behind destages"
    );
}

/// IOPS of 4 KB random `rw` at QD32 over 8 GB of a full X25-E.
fn x25e_iops(rw: &str, mix: &[&str]) -> f64 {
    let mut a = vec![
        "--device=x25e",
        "--set",
        "ssd.ftl.precondition=\"full\"",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=32",
        "--bs=4k",
        "--size=8g",
        "--name=j",
        "--number_ios=20000",
    ];
    let rw = format!("--rw={rw}");
    a.push(&rw);
    a.extend_from_slice(mix);
    let v = sim(&a);
    let j = &v["jobs"][0];
    j["read"]["iops"].as_f64().expect("iops") + j["write"]["iops"].as_f64().expect("iops")
}

#[test]
fn flash_mix_pays_its_reads_map_misses_like_its_writes() {
    // the X25-E's cached mapping table misses on 8 GB of random 4 KB
    // requests; a read's miss holds the controller for the translation
    // page's load as a write's does (DFTL), so a 50/50 mix comes out no
    // faster than the harmonic blend of the pure rates (each request of
    // the mix costs what it costs alone, plus interference); with reads'
    // misses free for the controller it came out 1.39 times the blend
    let r = x25e_iops("randread", &[]);
    let w = x25e_iops("randwrite", &[]);
    let m = x25e_iops("randrw", &["--rwmixread=50"]);
    let blend = 1.0 / (0.5 / r + 0.5 / w);
    assert!(
        m < 1.05 * blend,
        "mix {m} IOPS, harmonic blend {blend} (read {r}, write {w})"
    );
}

/// A QD1 reader beside four QD1 writers of 4 KB random writes on a p5336
/// written once, its firmware concurrent or not: (the reader's mean
/// completion latency in µs, the writers' IOPS, the drive's
/// read-modify-write reads).
fn p5336_reader_beside_rmw_writes(concurrent: bool) -> (f64, f64, f64) {
    let cf = format!("ssd.concurrent_firmware={concurrent}");
    let v = sim(&[
        "--device=p5336",
        "--set",
        "ssd.ftl.precondition=\"full\"",
        "--set",
        &cf,
        "--direct=1",
        "--bs=4k",
        "--size=1g",
        "--name=reader",
        "--rw=randread",
        "--number_ios=400",
        "--name=writer",
        "--rw=randwrite",
        "--numjobs=4",
        "--number_ios=400",
    ]);
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 5, "the reader and four writers");
    let writes: f64 = jobs[1..]
        .iter()
        .map(|j| j["write"]["iops"].as_f64().expect("iops"))
        .sum();
    // (the drive's counters, the same in every job's report)
    let rmw = counter(&v, "rmw_reads");
    (mean_us(&v, "read"), writes, rmw)
}

#[test]
fn concurrent_firmware_does_not_hold_the_controller_for_a_writes_reads() {
    // the QLC drive's 16 KB indirection unit makes every 4 KB write read
    // its unit's old data (about 100 us on a QLC page): a serial firmware
    // holds the controller for it, so the reader's commands and the other
    // writes queue behind each one; a concurrent one (the preset's) lets
    // only the write wait
    let (_, cfg) = storlab_model::SystemConfig::load(
        &storlab_model::config::PresetStore::default(),
        "p5336",
        &[],
    )
    .expect("preset");
    assert!(cfg.ssd.expect("flash").concurrent_firmware);
    let (read_c, writes_c, rmw_c) = p5336_reader_beside_rmw_writes(true);
    let (read_s, writes_s, rmw_s) = p5336_reader_beside_rmw_writes(false);
    assert!(
        rmw_c >= 1000.0 && rmw_s >= 1000.0,
        "rmw reads {rmw_c}, {rmw_s}"
    );
    assert!(
        read_s > 2.0 * read_c,
        "reader's mean: {read_c} us concurrent, {read_s} us serial"
    );
    assert!(
        writes_c > 2.0 * writes_s,
        "writes: {writes_c} IOPS concurrent, {writes_s} serial"
    );
}
