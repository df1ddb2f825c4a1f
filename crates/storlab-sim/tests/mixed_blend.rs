//! Flash under a 50/50 random mix (issue 58): a die that takes its
//! operations in arrival order (`ssd.nand.die_order = "arrival"`, the
//! X25-E's and the ioDrive's presets) makes host reads wait behind the
//! buffered pages' programs, garbage collection's copies and erases queued
//! before them, so the mix delivers less than the harmonic blend of the
//! pure read and pure write rates, and the mix's read tail is far above
//! the pure reads'. With reads first the same drive's mix is at the blend.

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::run::simulate;
use storlab_sim::stats::JobStats;

/// The one (group-reported) job of a run.
fn job(device: &str, overrides: &[String], fio: &[String]) -> JobStats {
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, overrides).expect("preset loads");
    let jobs = storlab_workload::fio::parse_cli_args(fio).expect("fio args parse");
    let mut out = simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})
        .expect("simulation runs")
        .jobs;
    assert_eq!(out.len(), 1, "one reported job");
    out.remove(0)
}

/// Bytes per ns of direction `d` (0 read, 1 write).
fn bw(j: &JobStats, d: usize) -> f64 {
    j.dirs[d].io_bytes() as f64 / j.runtime_ns[d].max(1) as f64
}

/// The reads' completion-latency 99th percentile, µs.
fn read_p99_us(j: &JobStats) -> f64 {
    j.dirs[0].percentile(99.0) as f64 / 1e3
}

/// XDD's shape: 16 threads, one 4 KB random request each, over `span`.
fn xdd(rw: &str, span: &str) -> Vec<String> {
    [
        "--name=xdd",
        &format!("--rw={rw}"),
        "--rwmixread=50",
        "--bs=4k",
        "--direct=1",
        "--numjobs=16",
        "--iodepth=1",
        "--group_reporting",
        &format!("--size={span}"),
        "--number_ios=400",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// (mixed bandwidth / harmonic blend of the pure rates, read p99 in the
/// mix, read p99 alone).
fn blend(device: &str, ov: &[String], span: &str) -> (f64, f64, f64) {
    let r = job(device, ov, &xdd("randread", span));
    let w = job(device, ov, &xdd("randwrite", span));
    let m = job(device, ov, &xdd("randrw", span));
    let harmonic = 1.0 / (0.5 / bw(&r, 0) + 0.5 / bw(&w, 1));
    // both directions' bytes over the run
    let mix = (m.dirs[0].io_bytes() + m.dirs[1].io_bytes()) as f64
        / m.runtime_ns[0].max(m.runtime_ns[1]).max(1) as f64;
    (mix / harmonic, read_p99_us(&m), read_p99_us(&r))
}

/// A small X25-E (the lab's scaled drive) aged over 70 % of its space,
/// its dies in `order`; its mapping table whole in DRAM (the preset's 15
/// MB covers the small drive), so the dies, not translation-page misses
/// on the controller, are what reads and writes share.
fn small_x25e(order: &str) -> Vec<String> {
    [
        "device.capacity_bytes=536870912",
        "ssd.nand.blocks_per_plane=64",
        "ssd.ftl.precondition=\"aged\"",
        "ssd.ftl.fullness=0.7",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("ssd.nand.die_order=\"{order}\"")])
    .collect()
}

#[test]
fn flash_mix_falls_below_the_blend_when_reads_wait_in_arrival_order() {
    // the preset's own order is arrival
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), "x25e", &[]).expect("preset");
    assert_eq!(
        cfg.ssd.expect("flash").nand.die_order,
        storlab_model::devices::flash::DieOrder::Arrival
    );
    let (fifo, p99_mix, p99_alone) = blend("x25e", &small_x25e("arrival"), "370m");
    let (first, p99_first, _) = blend("x25e", &small_x25e("reads_first"), "370m");
    assert!(
        fifo < 0.93,
        "arrival order: the mix runs at {fifo:.3} of the harmonic blend"
    );
    assert!(
        fifo < first - 0.08,
        "arrival order {fifo:.3} of the blend, reads first {first:.3}"
    );
    assert!(
        p99_mix > 4.0 * p99_alone && p99_mix > 2.0 * p99_first,
        "read p99 {p99_mix:.0} us in the mix ({p99_first:.0} reads first), {p99_alone:.0} us alone"
    );
}

#[test]
fn ssd_raid_mix_falls_below_the_blend() {
    // four small X25-Es (the lab's scaled array, its members' mapping
    // tables scaled with them as the lab does) aged over 70 %, as preset
    let member = small_x25e("arrival")
        .iter()
        .chain(&["ssd.ftl.map_cache.bytes=262144".to_string()])
        .map(|s| format!("\"{}\"", s.replace('"', "\\\"")))
        .collect::<Vec<_>>()
        .join(", ");
    let ov = vec![
        "device.capacity_bytes=2147483648".to_string(),
        format!("raid.member_set=[{member}]"),
    ];
    let (ratio, p99_mix, p99_alone) = blend("raid-ssd", &ov, "1500m");
    assert!(
        ratio < 0.93,
        "the array's mix runs at {ratio:.3} of the harmonic blend"
    );
    assert!(
        p99_mix > 4.0 * p99_alone,
        "read p99 {p99_mix:.0} us in the mix, {p99_alone:.0} us alone"
    );
}
