//! Tests of the swap model.

use crate::config::PresetStore;
use crate::host::config::CompletionMode;
use crate::system::SystemConfig;

use super::config::PAGE;
use super::machine::{run, run_with_device};
use super::workload::{MemReport, MemWorkload, Pattern};

/// The swap-linux preset with `dram` bytes of DRAM, swapping to
/// `device` with a swap area of `swap` bytes.
fn sys(dram: u64, device: &str, swap: u64, extra: &[&str]) -> SystemConfig {
    let mut o = vec![
        format!("device.capacity_bytes={dram}"),
        format!("swap.device=\"{device}\""),
        format!("swap.swap_bytes={swap}"),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    SystemConfig::load(&PresetStore::default(), "swap-linux", &o)
        .expect("loads")
        .1
}

fn thrash(pages_per_thread: u64, accesses: u64) -> MemWorkload {
    MemWorkload {
        threads: 16,
        pages_per_thread,
        accesses,
        pattern: Pattern::Uniform,
        write_fraction: 1.0,
        cpu_ns: 100,
        bytes_per_access: 64,
        seed: 1,
    }
}

const MIB: u64 = 1 << 20;

/// Scaled down: 4 MiB of DRAM (1,024 frames) is enough for every
/// mechanism (watermarks at 64/80/96 pages, 32-page batches).
fn go(device: &str, ratio: u64, extra: &[&str]) -> MemReport {
    let dram = 4 * MIB;
    let s = sys(dram, device, 16 * dram, extra);
    let w = thrash(ratio * dram / PAGE / 16 / 2, 400);
    run(&s, &PresetStore::default(), &w).expect("runs")
}

#[test]
fn with_enough_dram_nothing_pages_and_each_update_costs_access_plus_cpu() {
    let r = go("haste-pcm", 1, &[]);
    assert_eq!(r.major_faults + r.minor_faults + r.pages_written, 0);
    // 16 threads, 150 ns access + 100 ns computation each
    let want = 16.0 / 250e-9;
    assert!((r.accesses_per_s / want - 1.0).abs() < 1e-3, "{r:?}");
}

#[test]
fn with_enough_dram_a_page_visit_takes_its_share_of_the_dram_bandwidth() {
    // 16 threads each running over whole pages with 100 ns of CPU a page:
    // a visit takes its page's traffic at a sixteenth of the bandwidth
    let dram = 4 * MIB;
    let rate = |bw: u64, write_fraction: f64| {
        let s = sys(
            dram,
            "haste-pcm",
            16 * dram,
            &[&format!("swap.dram_bytes_per_s={bw}")],
        );
        let mut w = thrash(dram / PAGE / 16 / 2, 400);
        w.bytes_per_access = PAGE;
        w.write_fraction = write_fraction;
        run(&s, &PresetStore::default(), &w).expect("runs")
    };
    let r = rate(16_000_000_000, 0.0);
    // 4,096 B x 16 threads / 16 GB/s = 4.096 us, plus the 150 ns access
    let want = 16.0 / (4096e-9 + 150e-9);
    assert!((r.accesses_per_s / want - 1.0).abs() < 0.02, "{r:?}");
    assert_eq!(r.bandwidth_bound, r.accesses, "{r:?}");
    // a store reads its lines for ownership and writes them back: twice
    let w = rate(16_000_000_000, 1.0);
    let want = 16.0 / (8192e-9 + 150e-9);
    assert!((w.accesses_per_s / want - 1.0).abs() < 0.02, "{w:?}");
    // a bandwidth that covers the CPU time leaves the CPU binding,
    // 100 ns + 150 ns
    let c = rate(1_000_000_000_000, 0.0);
    assert!(
        (c.accesses_per_s / (16.0 / 250e-9) - 1.0).abs() < 1e-3,
        "{c:?}"
    );
    assert_eq!(c.bandwidth_bound, 0, "{c:?}");
}

#[test]
fn the_swap_devices_driver_memory_leaves_fewer_page_frames() {
    // an array of half of 8 MiB of DRAM fits, until the swap device's
    // driver keeps 4.5 MiB of it for itself
    let dram = 8 * MIB;
    let with = |kept: u64| {
        let set = format!("swap.device_set=[\"host.driver_memory_bytes={kept}\"]");
        let s = sys(dram, "haste-pcm", 16 * dram, &[&set]);
        run(
            &s,
            &PresetStore::default(),
            &thrash(dram / PAGE / 16 / 2, 400),
        )
    };
    let none = with(0).expect("runs");
    assert_eq!(none.major_faults + none.pages_written, 0, "{none:?}");
    let kept = with(9 * MIB / 2).expect("runs");
    assert!(
        kept.major_faults > 100 && kept.pages_written > 0,
        "{kept:?}"
    );
    // a driver that keeps all of it leaves nothing to run in
    let e = with(dram).expect_err("refused");
    assert!(e.to_string().contains("host.driver_memory_bytes"), "{e}");
}

#[test]
fn a_bandwidth_below_a_mebibyte_a_second_is_refused() {
    let o = vec!["swap.dram_bytes_per_s=1000".to_string()];
    let e = SystemConfig::load(&PresetStore::default(), "swap-linux", &o).expect_err("refused");
    assert!(e.to_string().contains("swap.dram_bytes_per_s"), "{e}");
}

#[test]
fn an_array_beyond_dram_faults_reads_ahead_and_writes_out_in_clusters() {
    let r = go("haste-pcm", 4, &[]);
    assert!(r.major_faults > 1000, "{r:?}");
    assert!(r.kswapd_reclaimed > 0 && r.pages_written > 0, "{r:?}");
    assert!(r.shootdowns > 0, "{r:?}");
    // read-ahead: more pages than requests
    assert!(r.pages_read > r.swap_reads, "{r:?}");
    // swap-out in clusters: several pages per write request
    assert!(r.pages_per_write > 2.0, "{r:?}");
    assert!(r.accesses_per_s < 16.0 / 250e-9 / 10.0, "{r:?}");
}

#[test]
fn clearing_young_bits_costs_shootdowns_and_time() {
    let on = go("haste-pcm", 4, &["swap.young_flush=true"]);
    let off = go("haste-pcm", 4, &["swap.young_flush=false"]);
    // every second chance to a young page is one more shootdown
    assert!(
        on.shootdowns as f64 > 1.3 * off.shootdowns as f64,
        "{on:?} {off:?}"
    );
    assert!(on.accesses_per_s < off.accesses_per_s, "{on:?} {off:?}");
}

#[test]
fn a_ram_disk_takes_one_request_per_page_a_queued_device_merges() {
    // ddr-pcm: completion on the CPU, no request queue
    let r = go("ddr-pcm", 4, &[]);
    assert!(r.pages_read > 0 && r.pages_written > 0, "{r:?}");
    assert_eq!(r.pages_read, r.swap_reads, "{r:?}");
    assert_eq!(r.pages_written, r.swap_writes, "{r:?}");
    // the same RAM disk behind a request queue (interrupt completion)
    // merges contiguous slots again
    let s = sys(4 * MIB, "ddr-pcm", 64 * MIB, &[]);
    let (_, mut dc) = SystemConfig::load(&PresetStore::default(), "ddr-pcm", &[]).expect("loads");
    dc.host.completion = CompletionMode::Interrupt;
    let w = thrash(4 * 4 * MIB / PAGE / 16 / 2, 400);
    let q = run_with_device(&s, &PresetStore::default(), &dc, &w).expect("runs");
    assert!(q.pages_read > q.swap_reads, "{q:?}");
    assert!(q.pages_per_write > 2.0, "{q:?}");
}

#[test]
fn page_cluster_zero_reads_only_the_faulting_page() {
    let r = go("haste-pcm", 4, &["swap.page_cluster=0"]);
    assert_eq!(r.pages_read, r.swap_reads, "{r:?}");
    assert_eq!(r.readahead_hits, 0);
}

#[test]
fn without_kswapd_headroom_threads_reclaim_directly() {
    // a high min watermark and one kswapd: faulting threads reclaim too
    let r = go("ddr-pcm", 4, &["swap.min_free_kbytes=1024"]);
    assert!(r.direct_reclaims > 0 && r.direct_reclaimed > 0, "{r:?}");
}

#[test]
fn a_slower_swap_device_pages_slower() {
    let fast = go("ddr-pcm", 4, &[]);
    let slow = go("raid-ssd", 4, &[]);
    assert!(
        fast.accesses_per_s > 2.0 * slow.accesses_per_s,
        "{fast:?} {slow:?}"
    );
    assert!(slow.major_fault_ns > fast.major_fault_ns);
}

#[test]
fn shootdown_ipis_cost_the_computing_threads() {
    // the IPIs of unmapping alone (young_flush off: fewer shootdowns,
    // the run not bound by the anon_vma lock)
    let none = go(
        "ddr-pcm",
        4,
        &["swap.tlb_ipi_ns=0", "swap.young_flush=false"],
    );
    let some = go(
        "ddr-pcm",
        4,
        &["swap.tlb_ipi_ns=5000", "swap.young_flush=false"],
    );
    assert_eq!(none.ipi_ns, 0);
    assert!(some.ipi_ns > 0 && some.shootdowns > 0, "{some:?}");
    assert!(
        some.accesses_per_s < none.accesses_per_s,
        "{none:?} {some:?}"
    );
}

#[test]
fn read_ahead_serves_a_sweep_and_clean_pages_are_not_written_again() {
    // one thread sweeping 4x DRAM, loads only: its pages went out in
    // order, so each fault's read-ahead brings the next pages
    let dram = 4 * MIB;
    let s = sys(dram, "haste-pcm", 16 * dram, &[]);
    let w = MemWorkload {
        threads: 1,
        pages_per_thread: 4 * dram / PAGE,
        accesses: 8192,
        pattern: Pattern::Sequential,
        write_fraction: 0.0,
        cpu_ns: 100,
        bytes_per_access: 64,
        seed: 1,
    };
    let r = run(&s, &PresetStore::default(), &w).expect("runs");
    assert!(r.major_faults > 100, "{r:?}");
    assert!(r.readahead_hits > 4 * r.major_faults, "{r:?}");
    // loads leave the swap copies valid: only the pages still dirty
    // from the touch are written in this phase
    assert!(r.pages_written <= dram / PAGE, "{r:?}");
}

#[test]
fn a_hot_set_that_fits_in_dram_pages_little() {
    let dram = 4 * MIB;
    let s = sys(dram, "raid-ssd", 16 * dram, &[]);
    let mut w = thrash(4 * dram / PAGE / 16, 400);
    let uniform = run(&s, &PresetStore::default(), &w).expect("runs");
    w.pattern = Pattern::Hot {
        pages: 0.1,
        accesses: 0.95,
    };
    let hot = run(&s, &PresetStore::default(), &w).expect("runs");
    assert!(
        hot.accesses_per_s > 3.0 * uniform.accesses_per_s,
        "{hot:?} {uniform:?}"
    );
    w.pattern = Pattern::Hot {
        pages: 0.0,
        accesses: 0.5,
    };
    let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
    assert!(e.to_string().contains("hot set"), "{e}");
    w.pattern = Pattern::Uniform;
    w.write_fraction = 1.5;
    let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
    assert!(e.to_string().contains("write_fraction"), "{e}");
}

#[test]
fn adi_odd_passes_visit_every_page_across_the_planes() {
    let p = Pattern::Adi { run: 2, stride: 8 };
    let n = 20; // two planes of 8 pages, 4 pages past them
    let even: Vec<u64> = (0..n).map(|k| p.sweep_index(k, n)).collect();
    assert_eq!(even, (0..n).collect::<Vec<_>>());
    let odd: Vec<u64> = (n..2 * n).map(|k| p.sweep_index(k, n)).collect();
    assert_eq!(
        odd,
        vec![0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 16, 17, 18, 19]
    );
    let mut sorted = odd.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, even);
    // a stride beyond the part is a plain sweep
    let q = Pattern::Adi { run: 1, stride: 64 };
    assert_eq!(q.sweep_index(n + 3, n), 3);
}

/// One thread, loads only, over 4x DRAM: a sweep's pages go out and
/// come back in order; the strided passes of an ADI sweep read them
/// back in another order, and when a row across the planes reads
/// ahead more pages than DRAM holds (256 planes x 8 pages over 1,024
/// frames), read-ahead serves fewer of them.
#[test]
fn strided_passes_defeat_read_ahead_that_serves_a_sweep() {
    let dram = 4 * MIB;
    let s = sys(dram, "haste-pcm", 16 * dram, &[]);
    let mut w = MemWorkload {
        threads: 1,
        pages_per_thread: 4 * dram / PAGE,
        accesses: 8 * dram / PAGE,
        pattern: Pattern::Sequential,
        write_fraction: 0.0,
        cpu_ns: 100,
        bytes_per_access: 64,
        seed: 1,
    };
    let seq = run(&s, &PresetStore::default(), &w).expect("runs");
    w.pattern = Pattern::Adi { run: 1, stride: 16 };
    let adi = run(&s, &PresetStore::default(), &w).expect("runs");
    let hits = |r: &MemReport| r.readahead_hits as f64 / r.accesses as f64;
    assert!(hits(&adi) < 0.75 * hits(&seq), "{seq:?} {adi:?}");
    assert!(adi.accesses_per_s < seq.accesses_per_s, "{seq:?} {adi:?}");
    w.pattern = Pattern::Adi { run: 3, stride: 64 };
    let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
    assert!(e.to_string().contains("adi"), "{e}");
}

/// A stream over 3x DRAM with a resident random region beside it
/// faults about once per read-ahead window of the stream; uniform
/// accesses over the same part fault on most accesses.
#[test]
fn a_stream_with_a_resident_random_region_pages_like_a_sweep() {
    let dram = 4 * MIB;
    let s = sys(dram, "raid-ssd", 16 * dram, &[]);
    let mut w = thrash(3 * dram / PAGE / 16, 1200);
    w.write_fraction = 0.0;
    let uniform = run(&s, &PresetStore::default(), &w).expect("runs");
    w.pattern = Pattern::Stream {
        random: 0.5,
        region: 0.05,
        stream_store: 0.0,
    };
    let stream = run(&s, &PresetStore::default(), &w).expect("runs");
    let per = |r: &MemReport| r.major_faults as f64 / r.accesses as f64;
    assert!(per(&stream) < 0.3 * per(&uniform), "{stream:?} {uniform:?}");
    assert!(stream.accesses_per_s > 2.0 * uniform.accesses_per_s);
    w.pattern = Pattern::Stream {
        random: 0.5,
        region: 0.0,
        stream_store: 0.0,
    };
    let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
    assert!(e.to_string().contains("stream"), "{e}");
}

/// A bucket sort's scatter over 4x DRAM into a few buckets (write
/// fronts, each filled in order) finds the pages read ahead with its
/// faults: it faults on fewer of its stores than the same stores spread
/// uniformly (`Stream` with every access random), whose read-ahead brings
/// pages it rarely wants.
#[test]
fn a_scatter_into_few_buckets_reads_ahead_usefully() {
    let dram = 4 * MIB;
    let s = sys(dram, "raid-ssd", 16 * dram, &[]);
    let mut w = thrash(4 * dram / PAGE / 16, 1200);
    w.pattern = Pattern::Stream {
        random: 1.0,
        region: 1.0,
        stream_store: 0.0,
    };
    let anywhere = run(&s, &PresetStore::default(), &w).expect("runs");
    w.pattern = Pattern::Scatter {
        random: 1.0,
        region: 1.0,
        fronts: 4,
    };
    let buckets = run(&s, &PresetStore::default(), &w).expect("runs");
    let per = |r: &MemReport| r.major_faults as f64 / r.accesses as f64;
    assert!(
        per(&buckets) < 0.8 * per(&anywhere),
        "{buckets:?} {anywhere:?}"
    );
    assert!(
        buckets.readahead_hits > 3 * anywhere.readahead_hits,
        "{buckets:?} {anywhere:?}"
    );
    w.pattern = Pattern::Scatter {
        random: 0.5,
        region: 0.5,
        fronts: 0,
    };
    let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
    assert!(e.to_string().contains("scatter"), "{e}");
}

/// A sweep over 1.5x DRAM that turns back (LU's SSOR) finds the pages
/// it touched last still resident; one that starts over in page order
/// finds none (the clock evicted each page before the sweep came back).
#[test]
fn a_zigzag_reuses_what_a_restarting_sweep_evicts() {
    let dram = 4 * MIB;
    // the clock's order alone (young_flush off: its shootdowns change
    // reclaim's timing, not which pages the clock passes over)
    let s = sys(dram, "raid-ssd", 16 * dram, &["swap.young_flush=false"]);
    let mut w = thrash(3 * dram / PAGE / 2 / 16, 0);
    w.accesses = 4 * w.pages_per_thread;
    w.write_fraction = 0.3;
    w.pattern = Pattern::Sequential;
    let seq = run(&s, &PresetStore::default(), &w).expect("runs");
    w.pattern = Pattern::Zigzag;
    let zig = run(&s, &PresetStore::default(), &w).expect("runs");
    assert!(
        (zig.major_faults as f64) < 0.75 * seq.major_faults as f64,
        "{zig:?} {seq:?}"
    );
    assert!(zig.accesses_per_s > seq.accesses_per_s);
    assert_eq!(Pattern::Zigzag.sweep_index(12, 10), 7);
}

#[test]
fn runs_are_deterministic() {
    // the ioDrive's driver keeps its 800 MB scaled as 4 MiB is of 8 GB
    let set = [r#"swap.device_set=["host.driver_memory_bytes=409600"]"#];
    let a = serde_json::to_string(&go("fusion-io", 3, &set)).expect("json");
    let b = serde_json::to_string(&go("fusion-io", 3, &set)).expect("json");
    assert_eq!(a, b);
}

#[test]
fn bad_configurations_are_refused_by_name() {
    let s = sys(4 * MIB, "haste-pcm", 1 << 40, &[]);
    let e = run(&s, &PresetStore::default(), &thrash(64, 1)).expect_err("too big");
    assert!(e.to_string().contains("swap.swap_bytes"), "{e}");
    let e = SystemConfig::load(
        &PresetStore::default(),
        "swap-linux",
        &["swap.page_cluster=11".to_string()],
    )
    .expect_err("refused");
    assert!(e.to_string().contains("swap.page_cluster"), "{e}");
    // more pages than frames and slots
    let s = sys(4 * MIB, "haste-pcm", 4 * MIB, &[]);
    let e = run(&s, &PresetStore::default(), &thrash(4096, 1)).expect_err("does not fit");
    assert!(e.to_string().contains("do not fit"), "{e}");
}
