//! The PSD study's other findings (docs/spec/peer-devices.md: performance depends
//! on the read/write mix; on queue depth: the study's figure, checked in
//! `reproductions.rs`) and the flash steady state,
//! through the whole host + device path with fio jobs. The findings
//! docs/spec/targets.md lists (pattern and write sensitivity against flash) are rows
//! of `storlab lab reproduce psd`, checked in `reproductions.rs`.

mod support;
use support::*;

#[test]
fn psd_performance_depends_on_the_read_write_mix() {
    let bw = |mix: u32| {
        run(
            "micron-psd",
            &[],
            &[
                "--rw=randrw",
                &format!("--rwmixread={mix}"),
                "--bs=4k",
                "--iodepth=16",
                "--numjobs=4",
                "--size=256m",
                "--number_ios=6000",
            ],
        )
        .total_mbps()
    };
    let by_mix: Vec<f64> = [100, 70, 30, 0].iter().map(|&m| bw(m)).collect();
    for w in by_mix.windows(2) {
        assert!(
            w[1] < w[0] * 0.95,
            "more writes, less bandwidth: {by_mix:?} (read share 100, 70, 30, 0%)"
        );
    }
}

#[test]
fn flash_steady_state_shows_gc_write_amplification_and_lower_throughput() {
    // four threads of depth 8: the ioDrive's driver runs Table III's
    // 60,147 instructions per write in the submitting thread (about 44 us
    // of core time), so one thread alone would hold the fresh drive to
    // about 27,000 IOPS and hide the device's own difference
    let job = [
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=8",
        "--numjobs=4",
        "--number_ios=15000",
    ];
    let fresh = run("fusion-io", SMALL_FUSION, &job);
    let aged = run(
        "fusion-io",
        &with(SMALL_FUSION, &["ssd.ftl.precondition=\"aged\""]),
        &job,
    );
    assert_eq!(fresh.counter("gc_runs"), 0.0, "fresh: nothing to collect");
    assert!(
        aged.counter("gc_runs") > 0.0 && aged.counter("gc_units_moved") > 0.0,
        "aged: garbage collection runs"
    );
    let wa = aged.counter("write_amplification");
    assert!(wa > 1.5, "write amplification above 1: {wa}");
    assert!(
        aged.mbps(1) < 0.6 * fresh.mbps(1),
        "aged {:.0} MB/s vs fresh {:.0} MB/s",
        aged.mbps(1),
        fresh.mbps(1)
    );
    // time waiting behind garbage collection shows in the breakdown
    let bd = aged.stats.dirs[1].mean_breakdown_ns();
    assert!(
        bd[storlab_model::Component::Background as usize] > 0.0,
        "background time in the breakdown"
    );
    // erase counts are reported
    assert!(aged.storlab["wear"]["max"].as_u64().unwrap_or(0) >= 1);

    // the "full" state (written once, sequentially) sits in between: no
    // garbage at first, collection once the spare pool is used up
    let half = run(
        "fusion-io",
        &with(
            SMALL_FUSION,
            &["ssd.ftl.precondition=\"full\"", "ssd.ftl.fullness=0.5"],
        ),
        &job,
    );
    assert!(half.mbps(1) > aged.mbps(1), "half-full beats aged-full");
}
