//! The `peers` study: Table III of the Moneta study, the arrays' software
//! shares and HASTE's Fig. 4, as `storlab lab reproduce peers` reports
//! them; and the host-stack findings behind them (the libaio ceiling, the
//! named waits, instructions, the unwritten-flash notice).
//!
//! Sizes are scaled down as the study module says (small flash devices
//! with the real spare ratios, a small controller cache for the disk
//! array's sustained writes), so the whole study runs in seconds.

mod support;
use support::*;

use storlab_lab::studies::peers;
use storlab_model::Component;

#[test]
fn the_study_has_every_row_and_no_unexplained_miss() {
    let (rep, _) = reproduce("peers");
    // 8 IOPS, 8 instruction counts, the baseline's 20,000, 2 software
    // shares, 5 HASTE Fig. 4 findings, Intel's X25-E write rating (the
    // preconditioning is checked by the study itself: it is no published
    // figure)
    assert_eq!(rep.rows.len(), 25);
    // the audit's "published points scored as ranges": the disk array's
    // "1 %" software share is a point, its error measured from it
    let share = rep
        .rows
        .iter()
        .find(|r| r.what == "RAID-Disk, software share of 4 KB read latency, QD1")
        .expect("share row");
    assert_eq!(share.target, Some(1.0));
    assert!(share.error.expect("an error") > 0.0, "{}", share.model);
    // and no row that holds carries a reason written in advance
    assert!(rep.rows.iter().all(|r| !r.pass || r.reason.is_none()));
    // the instruction counts of the three peers are Table III's (inputs),
    // the disk array's destage order was chosen against its write IOPS and
    // the ioDrive driver's worker share against its read IOPS
    let inputs = rep.rows.iter().filter(|r| r.input.is_some()).count();
    assert_eq!(inputs, 9);
    // ... which still have to come out of the model within Table III's ±30 %
    let f = rep
        .rows
        .iter()
        .find(|r| r.what == "FusionIO, 4 KB random read IOPS, 16 threads")
        .expect("FusionIO read row");
    assert!(f.pass, "FusionIO reads: {}", f.model);
    let w = rep
        .rows
        .iter()
        .find(|r| r.what == "RAID-Disk, 4 KB random write IOPS, 16 threads")
        .expect("RAID-Disk write row");
    assert!(w.pass, "RAID-Disk writes: {}", w.model);
    // the predictions that hold must keep holding
    for what in [
        "RAID-Disk, 4 KB random read IOPS, 16 threads",
        "Moneta+Spin, 4 KB random read IOPS, 16 threads",
        "Moneta+Spin, 4 KB random write IOPS, 16 threads",
        "Moneta+Spin, instructions per 4 KB read",
        "Moneta+Spin, instructions per 4 KB write",
        "RAID-SSD, software share of 4 KB read latency, QD1",
        // the disk's long sleeps leave the path cold (host.cold_lines)
        "RAID-Disk, software share of 4 KB read latency, QD1",
        "HASTE Fig. 4: 4 MB sequential reads, SSD array / Fusion-io",
        // predictions of the X25-E's cached mapping table
        "RAID-SSD, 4 KB random write IOPS, 16 threads",
        "X25-E, random 4 KB write IOPS, QD32 (Intel's rating, product manual)",
        // the worker's rate, in the steady state of XDD's footprint
        "FusionIO, 4 KB random write IOPS, 16 threads",
    ] {
        let r = rep.rows.iter().find(|r| r.what == what).expect(what);
        assert!(r.pass, "{what}: {}", r.model);
    }
    // HASTE's 4 KB peak is the same 16-thread run: no longer the NAND
    // banks' 589 MB/s but the worker's rate, within 2x of 280 MB/s
    let h = rep
        .rows
        .iter()
        .find(|r| r.what == "HASTE Fig. 4: Fusion-io, 4 KB random peak (reads)")
        .expect("HASTE peak row");
    let mbps: f64 = h.model.trim_end_matches(" MB/s").parse().expect("a number");
    assert!((300.0..420.0).contains(&mbps), "{}", h.model);
}

/// The ioDrive's driver runs a share of its work on one worker thread per
/// card: that thread, not the NAND, holds 16 threads' 4 KB reads near
/// Table III's 92k; without it (share 0) the same card reads at its NAND
/// banks' rate, far above. The instructions per IO do not change.
#[test]
fn the_iodrive_is_held_by_its_drivers_worker_thread() {
    let ov = peers::fusion("full");
    let with = sim(peers::xdd_4k("fusion-io", &ov, "randread", 300, None));
    let mut ov0 = ov.clone();
    ov0.push("host.driver_worker_share=0".into());
    let without = sim(peers::xdd_4k("fusion-io", &ov0, "randread", 300, None));
    let (a, b) = (with.iops(0), without.iops(0));
    assert!(b > 1.3 * a, "worker {a:.0} IOPS, none {b:.0}");
    assert!((80_000.0..105_000.0).contains(&a), "{a:.0} IOPS");
    let bd = with.stats.dirs[0].mean_breakdown_ns();
    assert!(bd[Component::WorkerWait as usize] > 1_000.0, "{bd:?}");
    assert_eq!(
        without.stats.dirs[0].mean_breakdown_ns()[Component::WorkerWait as usize],
        0.0
    );
    let (ia, ib) = (
        with.instructions(0).unwrap(),
        without.instructions(0).unwrap(),
    );
    assert!((ia - ib).abs() < 0.01 * ib, "{ia} against {ib}");
}

/// XDD's writes age only its 55 GB footprint: the rest of the ioDrive,
/// never written, is spare for the garbage collector, which then stays out
/// of the writes' way and the driver's worker sets the rate. The whole card
/// aged (a preconditioning neither study describes) puts foreground
/// collection in the writes' way: stalled writes come back together and
/// queue at the one worker thread.
#[test]
fn the_iodrives_writes_run_in_the_steady_state_of_the_footprint() {
    let footprint = sim(peers::fusion_footprint_writes(800));
    let span = format!("{}m", peers::SMALL_FUSION_SPAN_MIB);
    let whole = sim(peers::xdd_4k(
        "fusion-io",
        &peers::fusion("aged"),
        "randwrite",
        800,
        Some(&span),
    ));
    let (f, w) = (footprint.iops(1), whole.iops(1));
    assert!(f > 1.5 * w, "footprint {f:.0} IOPS, whole card {w:.0}");
    // the footprint's state is that of a drive written only there: the
    // never-written rest keeps its blocks free, so collection moves less
    let moved = |r: &storlab_lab::measure::Run| r.counter_sum("gc_units_moved");
    assert!(
        moved(&footprint) < moved(&whole),
        "{} against {}",
        moved(&footprint),
        moved(&whole)
    );
}

/// The 52,645 IOPS seen with one libaio thread at depth 16 on fusion-io
/// was the host charging that one thread a context switch out and back
/// per IO (19 µs of thread time per IO, shown as lock_wait): a thread
/// with work waiting goes on without sleeping, and the wait is named.
#[test]
fn one_libaio_thread_is_held_by_its_own_software_not_a_lock() {
    let r = run(
        "fusion-io",
        &[],
        &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=16",
            "--numjobs=1",
            "--number_ios=4000",
        ],
    );
    let b = r.stats.dirs[0].mean_breakdown_ns();
    assert_eq!(
        b[Component::LockWait as usize],
        0.0,
        "fusion-io has no driver lock"
    );
    assert!(
        b[Component::ThreadWait as usize] > 10_000.0,
        "waiting for the one thread is named: {b:?}"
    );
    // most completions find the thread running: far less than a 4 µs
    // wake-up per IO on average
    assert!(b[Component::Wakeup as usize] < 2_000.0, "{b:?}");
    // the ceiling is the thread's own software per IO: its core time
    // less the interrupt handler and the driver's worker thread, which run
    // on other cores (the worker: 0.415 of the 22.1 us of driver
    // instructions, the tag and three issue PIO words)
    let cpu = r.cpu_ns(0).expect("host time reported");
    let worker_ns = (0.415f64 * 22_096.0).round() + 510.0 + 3.0 * 385.0;
    let thread_ns = cpu - 310.0 - 2.0 * 385.0 - worker_ns;
    let iops = r.iops(0);
    eprintln!("one libaio thread: {iops:.0} IOPS, {thread_ns:.0} ns of thread time per IO");
    assert!(
        (iops * thread_ns / 1e9 - 1.0).abs() < 0.05,
        "one thread is busy all the time: {iops} IOPS x {thread_ns} ns"
    );
}

#[test]
fn instructions_per_io_are_reported_per_direction() {
    // the host's wake-up and interrupt spread off: the exact per-IO sums
    // below are the configured means (with it, a 200-IO sample mean)
    let mut ov = peers::raid_ssd("full");
    ov.extend(["host.wakeup_spread=0", "host.interrupt_spread=0"].map(String::from));
    let rd = run(
        "raid-ssd",
        &raid_refs(&ov),
        &["--rw=randread", "--bs=4k", "--number_ios=200"],
    );
    let wr = run(
        "raid-ssd",
        &raid_refs(&ov),
        &["--rw=randwrite", "--bs=4k", "--number_ios=200"],
    );
    let (r, w) = (rd.instructions(0).unwrap(), wr.instructions(1).unwrap());
    assert!((r - 31_251.0).abs() < 2.0, "{r}");
    assert!((w - 32_540.0).abs() < 2.0, "{w}");
    assert_eq!(rd.instructions(1), None, "no writes in a read run");
    // a preset without a clock reports core time only
    let nul = run(
        "null",
        &[],
        &["--rw=randread", "--bs=4k", "--number_ios=50"],
    );
    assert_eq!(nul.instructions(0), None);
}

#[test]
fn a_fresh_flash_drive_answers_reads_without_media_and_preconditioning_stops_it() {
    let fresh = run(
        "fusion-io",
        psd_small_fusion(),
        &["--rw=randread", "--bs=4k", "--number_ios=300"],
    );
    assert_eq!(fresh.counter_sum("unmapped_reads"), 300.0);
    let note = storlab_sim::run::unmapped_note(std::slice::from_ref(&fresh.stats))
        .expect("a notice for a fresh drive");
    assert!(
        note.contains("300 never-written flash mapping units")
            && note.contains("300 reads")
            && note.contains("precondition"),
        "{note}"
    );
    // the counter is of 4 KiB mapping units: a 16 KiB read counts four,
    // and the note says units, not reads (it said "1200 of 300 reads")
    let big = run(
        "fusion-io",
        psd_small_fusion(),
        &["--rw=randread", "--bs=16k", "--number_ios=300"],
    );
    assert_eq!(big.counter_sum("unmapped_reads"), 1200.0);
    let note = storlab_sim::run::unmapped_note(std::slice::from_ref(&big.stats)).expect("a note");
    assert!(
        note.contains("1200 never-written flash mapping units") && note.contains("300 reads"),
        "{note}"
    );
    let full = run(
        "fusion-io",
        &raid_refs(&peers::fusion("full")),
        &["--rw=randread", "--bs=4k", "--number_ios=300"],
    );
    assert_eq!(full.counter_sum("unmapped_reads"), 0.0);
    assert!(storlab_sim::run::unmapped_note(std::slice::from_ref(&full.stats)).is_none());
    // and the media shows in the latency
    assert!(full.lat_us(0) > fresh.lat_us(0) + 20.0);
}

fn raid_refs(v: &[String]) -> Vec<&str> {
    v.iter().map(|s| s.as_str()).collect()
}

fn psd_small_fusion() -> &'static [&'static str] {
    SMALL_FUSION
}

/// The disk array's software share comes from its long sleeps: without the
/// cold path (host.cold_lines = 0) the same QD1 reads give under half of it.
#[test]
fn the_disk_arrays_software_share_is_its_cold_path() {
    let cold = peers::qd1("raid-disk-16k", &[], "randread", peers::SPAN, 100);
    let warm = peers::qd1(
        "raid-disk-16k",
        &["host.cold_lines=0".to_string()],
        "randread",
        peers::SPAN,
        100,
    );
    let (c, w) = (sim(cold), sim(warm));
    let (sc, sw) = (c.software_share(0), w.software_share(0));
    assert!(sw < 0.5 * sc, "warm {sw} against cold {sc}");
    // the refetch stalls the core: no extra instructions
    let (ic, iw) = (c.instructions(0).unwrap(), w.instructions(0).unwrap());
    assert!(
        (ic - iw).abs() < 0.01 * iw,
        "{ic} against {iw} instructions"
    );
}
