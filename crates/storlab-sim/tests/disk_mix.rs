//! Disks under mixed load (issue 58).
//!
//! A drive's write cache destages in positioning order: the firmware's
//! starvation bound ages the host's queued commands, not the destages of
//! writes it has already reported done. When the bound also applied to
//! destages, a full cache (every entry older than the bound) went oldest
//! first, in the host's random order, while the reads of a 50/50 mix
//! switched that off; pure random writes then destaged at a third of the
//! rate they had inside the mix and the mix ran at 1.9x the harmonic blend
//! of the pure rates. The drive finds the nearest destage through a
//! cylinder index of its cache (`storlab-model`'s disk `sched`, whose unit
//! test checks it against ranking every destage), so the rule costs no
//! scan of the cache per media decision.
//!
//! Two sequential streams on one disk, a read stream and a write stream
//! far apart, alternate: each switch pays a seek and a rotational wait,
//! so together they deliver less than either stream alone.

mod common;

/// Bytes per ns of direction `d` (0 read, 1 write) of a job.
fn bw(j: &storlab_sim::stats::JobStats, d: usize) -> f64 {
    j.dirs[d].io_bytes() as f64 / j.runtime_ns[d].max(1) as f64
}

/// Both directions' bytes per ns over the run.
fn total_bw(j: &storlab_sim::stats::JobStats) -> f64 {
    (j.dirs[0].io_bytes() + j.dirs[1].io_bytes()) as f64
        / j.runtime_ns[0].max(j.runtime_ns[1]).max(1) as f64
}

/// XDD's shape on a disk (the studies' runs): 16 threads, one 4 KB
/// random request each, over a 55 GB footprint.
fn xdd(rw: &str, ios: u32) -> Vec<String> {
    [
        "--name=xdd".to_string(),
        format!("--rw={rw}"),
        "--rwmixread=50".to_string(),
        "--bs=4k".to_string(),
        "--direct=1".to_string(),
        "--numjobs=16".to_string(),
        "--iodepth=1".to_string(),
        "--size=55g".to_string(),
        format!("--number_ios={ios}"),
    ]
    .to_vec()
}

fn merged(device: &str, ov: &[String], fio: &[String]) -> storlab_sim::stats::JobStats {
    let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
    let fio: Vec<&str> = fio.iter().map(|s| s.as_str()).collect();
    common::run(device, &ov, &fio)
}

/// Requests per second of direction `d` over the run.
fn iops(j: &storlab_sim::stats::JobStats, d: usize) -> f64 {
    bw(j, d) * 1e9 / 4096.0
}

#[test]
fn disk_random_mix_is_at_the_blend_and_reads_wait_behind_writes() {
    let none: Vec<String> = Vec::new();
    let r = merged("hdd-7200", &none, &xdd("randread", 300));
    // the write rate once the 32 MB cache (8,192 writes) is full: the
    // second half of a run twice as long as the first
    let w1 = merged("hdd-7200", &none, &xdd("randwrite", 2000));
    let w2 = merged("hdd-7200", &none, &xdd("randwrite", 4000));
    let steady = 2000.0 * 16.0 * 1e9 / (w2.runtime_ns[1] - w1.runtime_ns[1]) as f64;
    // the cache sorts its destages (positioning order over thousands):
    // random writes beat random reads at 16 outstanding (with the
    // destages aged out, 177 writes against 339 reads per second)
    let reads = iops(&r, 0);
    assert!(
        steady > 1.15 * reads,
        "pure writes {steady:.0} IOPS once the cache is full, pure reads {reads:.0} IOPS"
    );
    let m = merged("hdd-7200", &none, &xdd("randrw", 2000));
    let harmonic = 1.0 / (0.5 / reads + 0.5 / steady);
    let mix = iops(&m, 0) + iops(&m, 1);
    let ratio = mix / harmonic;
    // at the blend: 1.9x before the destages went in positioning order
    assert!(
        (0.8..1.12).contains(&ratio),
        "the 50/50 mix: {mix:.0} IOPS, {ratio:.3} of the harmonic blend of {reads:.0} and {steady:.0}"
    );
    // a read waits behind destages (up to DESTAGES_BEFORE_HOST of them)
    // and behind the other threads' reads: its tail grows under writes
    let p99 = |j: &storlab_sim::stats::JobStats| j.dirs[0].percentile(99.0);
    assert!(
        p99(&m) as f64 > 1.2 * p99(&r) as f64,
        "read p99 {:.1} ms under writes, {:.1} ms alone",
        p99(&m) as f64 / 1e6,
        p99(&r) as f64 / 1e6
    );
}

#[test]
fn two_sequential_streams_on_one_disk_pay_a_seek_per_switch() {
    // write cache off: each write goes to the media when it is served
    let ov = vec!["disk.write_cache=false".to_string()];
    let job = |name: &str, rw: &str, offset: &str| -> Vec<String> {
        [
            format!("--name={name}"),
            format!("--rw={rw}"),
            "--bs=128k".to_string(),
            "--direct=1".to_string(),
            "--iodepth=1".to_string(),
            "--size=1g".to_string(),
            format!("--offset={offset}"),
            "--number_ios=200".to_string(),
        ]
        .to_vec()
    };
    let read = merged("hdd-7200", &ov, &job("r", "read", "0"));
    let write = merged("hdd-7200", &ov, &job("w", "write", "400g"));
    let mut both = job("r", "read", "0");
    both.extend(job("w", "write", "400g"));
    let m = merged("hdd-7200", &ov, &both);
    let seeks_alone = common::counter(&read, "seeks") + common::counter(&write, "seeks");
    let seeks_mixed = common::counter(&m, "seeks");
    // every switch between the streams is a seek of 400 GB's cylinders
    assert!(
        seeks_mixed > 100.0 && seeks_mixed > 10.0 * seeks_alone.max(1.0),
        "seeks: {seeks_mixed} with both streams, {seeks_alone} alone"
    );
    // so the two streams together deliver less than either alone
    let mix = total_bw(&m);
    assert!(
        mix < 0.8 * bw(&read, 0).min(bw(&write, 1)),
        "both streams {:.1} MB/s, read alone {:.1}, write alone {:.1}",
        mix * 1e3,
        bw(&read, 0) * 1e3,
        bw(&write, 1) * 1e3
    );
}

/// One thread's reads on the disk RAID, 64 KB at queue depth 1, with the
/// controller's read-ahead at `ra` bytes.
fn raid_reads(rw: &str, ra: u64) -> storlab_sim::stats::JobStats {
    let ov = vec![format!("raid.controller.read_ahead_bytes={ra}")];
    let fio: Vec<String> = [
        "--name=ra".to_string(),
        format!("--rw={rw}"),
        "--bs=64k".to_string(),
        "--direct=1".to_string(),
        "--iodepth=1".to_string(),
        "--size=4g".to_string(),
        "--number_ios=300".to_string(),
    ]
    .to_vec();
    merged("raid-disk", &ov, &fio)
}

#[test]
fn controller_read_ahead_streams_sequential_reads_and_leaves_random_ones() {
    // the preset reads ahead (3ware's "Intelligent" read cache)
    let (_, cfg) = storlab_model::SystemConfig::load(
        &storlab_model::config::PresetStore::default(),
        "raid-disk",
        &[],
    )
    .expect("preset");
    let ra = cfg.raid.expect("raid").controller.expect("controller");
    assert!(ra.read_ahead_bytes > 0, "raid-disk reads ahead");
    let on = raid_reads("read", ra.read_ahead_bytes);
    let off = raid_reads("read", 0);
    // a QD1 reader finds its next request fetched (or on its way) while
    // it turned around: the disks stream instead of waiting for it
    assert!(
        bw(&on, 0) > 1.5 * bw(&off, 0),
        "sequential 64 KB at QD1: {:.0} MB/s reading ahead, {:.0} MB/s not",
        bw(&on, 0) * 1e3,
        bw(&off, 0) * 1e3
    );
    assert!(common::counter(&on, "read_aheads") > 250.0);
    // random reads are no stream: nothing is read ahead, the rate stays
    let ron = raid_reads("randread", ra.read_ahead_bytes);
    let roff = raid_reads("randread", 0);
    assert!(common::counter(&ron, "read_aheads") < 5.0);
    let r = bw(&ron, 0) / bw(&roff, 0);
    assert!(
        (0.97..1.03).contains(&r),
        "random reads with read-ahead at {r:.3} of those without"
    );
}
