//! The PSD study's qualitative findings (targets.md, "PCM SSD"; peer-devices.md)
//! and the flash steady state, through the whole host + device path with
//! fio jobs. Each check compares the PCM SSD with the flash SSDs on the same
//! workload, so it cannot pass by a constant: it needs the mechanisms
//! (in-place PCM writes versus out-of-place flash with an FTL, read-ahead,
//! garbage collection) to differ as they do in the devices.

mod peer_support;
use peer_support::*;

/// QD1, 4 KB, one thread, over 1 GB (the study's file size).
fn qd1(device: &str, ov: &[&str], rw: &str, n: u32) -> Run {
    run(
        device,
        ov,
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--iodepth=1",
            "--size=1g",
            &format!("--number_ios={n}"),
        ],
    )
}

fn full<'a>(ov: &[&'a str]) -> Vec<&'a str> {
    with(ov, &["ssd.ftl.precondition=\"full\""])
}

#[test]
fn psd_random_costs_about_the_same_as_sequential_flash_does_not() {
    let psd = |rw: &str| qd1("micron-psd", &[], rw, 2000);
    let (rr, sr, rw, sw) = (psd("randread"), psd("read"), psd("randwrite"), psd("write"));
    // PCM: no mapping, no read-ahead, no seeks: within 5%
    within(
        "PSD random/sequential read latency",
        rr.lat_us(0) / sr.lat_us(0),
        1.0,
        0.05,
    );
    within(
        "PSD random/sequential write latency",
        rw.lat_us(1) / sw.lat_us(1),
        1.0,
        0.05,
    );

    // flash (X25-E, written): sequential reads ride the read-ahead
    let x = full(SMALL_X25E);
    let (xr, xs) = (
        qd1("x25e", &x, "randread", 2000),
        qd1("x25e", &x, "read", 2000),
    );
    let flash_read = xr.lat_us(0) / xs.lat_us(0);
    assert!(
        flash_read > 1.5,
        "X25-E random/sequential read latency {flash_read:.2}: flash should be sensitive"
    );

    // flash writes, each in its own steady state (SNIA-style: precondition
    // with the workload's own pattern): sequential writes after a
    // sequential fill invalidate whole blocks; random writes on an aged
    // device wait for garbage collection
    let fl = qd1("x25e", &full(SMALL_X25E), "write", 20000);
    let ag = qd1(
        "x25e",
        &with(SMALL_X25E, &["ssd.ftl.precondition=\"aged\""]),
        "randwrite",
        20000,
    );
    let flash_write = ag.lat_us(1) / fl.lat_us(1);
    assert!(
        flash_write > 1.5,
        "X25-E random (aged) / sequential (full) write latency {flash_write:.2}"
    );
    assert!(ag.counter("gc_runs") > 0.0 && fl.counter("gc_runs") == 0.0);
}

#[test]
fn psd_writes_are_several_times_slower_than_reads_far_more_than_on_flash() {
    let ratio = |device: &str, ov: &[&str]| {
        let r = qd1(device, ov, "randread", 1000);
        let w = qd1(device, ov, "randwrite", 1000);
        w.lat_us(1) / r.lat_us(0)
    };
    let psd = ratio("micron-psd", &[]);
    let x25e = ratio("x25e", &full(SMALL_X25E));
    let fusion = ratio("fusion-io", &full(SMALL_FUSION));
    assert!(psd >= 3.0, "PSD write/read latency {psd:.2}: several times");
    assert!(
        psd >= 3.0 * x25e,
        "PSD {psd:.2} vs X25-E {x25e:.2}: the gap must be far larger on PCM"
    );
    assert!(psd >= 3.0 * fusion, "PSD {psd:.2} vs ioDrive {fusion:.2}");
}

#[test]
fn psd_performance_depends_on_iodepth() {
    let bw = |rw: &str, qd: u32| {
        run(
            "micron-psd",
            &[],
            &[
                &format!("--rw={rw}"),
                "--bs=4k",
                &format!("--iodepth={qd}"),
                "--size=1g",
                "--number_ios=12000",
            ],
        )
        .total_mbps()
    };
    let writes: Vec<f64> = [1, 4, 16, 64].iter().map(|&q| bw("randwrite", q)).collect();
    for w in writes.windows(2) {
        assert!(
            w[1] > w[0] * 1.1,
            "write bandwidth should grow with iodepth: {writes:?}"
        );
    }
    assert!(
        writes[3] > 5.0 * writes[0],
        "QD64 far above QD1: {writes:?}"
    );
    let reads: Vec<f64> = [1, 4].iter().map(|&q| bw("randread", q)).collect();
    assert!(
        reads[1] > 1.3 * reads[0],
        "read bandwidth should grow with iodepth: {reads:?}"
    );
}

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
    let job = [
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=32",
        "--number_ios=60000",
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
