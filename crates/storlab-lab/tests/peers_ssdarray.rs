//! The X25-E's cached mapping table (`ssd.ftl.map_cache`) as the `peers`
//! study uses it: random small writes over a randomly written drive miss
//! the cache and wait for translation pages; sequential writes and reads of
//! a sequentially written drive never do; turning the cache off removes
//! the cost.
//!
//! Sizes: the small X25-E of the study (512 MiB) with its cache scaled in
//! proportion ([`peers::SMALL_X25E_MAP_CACHE`], 8 translation pages of
//! 128), so the share of the map cached is the real drive's.

mod support;
use support::*;

use storlab_lab::studies::peers;

fn ov(state: &str, cache_on: bool) -> Vec<String> {
    let mut v = peers::x25e(state);
    if !cache_on {
        v.push("ssd.ftl.map_cache.bytes=0".into());
    }
    v
}

fn go(state: &str, cache_on: bool, fio: &[&str]) -> Run {
    let o = ov(state, cache_on);
    let r: Vec<&str> = o.iter().map(|s| s.as_str()).collect();
    run("x25e", &r, fio)
}

const RANDW: &[&str] = &[
    "--rw=randwrite",
    "--bs=4k",
    "--ioengine=libaio",
    "--iodepth=32",
    "--number_ios=3000",
];

#[test]
fn random_writes_on_an_aged_drive_wait_for_translation_pages() {
    let on = go("aged", true, RANDW);
    let off = go("aged", false, RANDW);
    let loads = on.counter_sum("map_loads");
    let wbs = on.counter_sum("map_writebacks");
    // 8 of 128 pages cached: almost every write misses, and the evicted
    // page is dirty (the cache holds written pages)
    assert!(loads > 0.85 * 3000.0, "loads {loads}");
    assert!(wbs > 0.85 * 3000.0, "write-backs {wbs}");
    assert_eq!(on.counter_sum("map_nand_programs"), wbs);
    // each miss holds the controller for a program and a read (~350 us)
    // instead of the 36 us of a write's own processing
    let (a, b) = (on.iops(1), off.iops(1));
    assert!(a < 0.5 * b, "cached map {a:.0} IOPS, resident map {b:.0}");
    // off: nothing of the mechanism runs
    assert_eq!(off.counter_sum("map_loads"), 0.0);
}

#[test]
fn sequential_writes_and_reads_of_written_data_cost_nothing() {
    let seq: &[&str] = &[
        "--rw=write",
        "--bs=128k",
        "--iodepth=4",
        "--number_ios=1500",
    ];
    let (a, b) = (go("full", true, seq), go("full", false, seq));
    assert_eq!(a.counter_sum("map_fragmented"), 0.0);
    assert_eq!(a.counter_sum("map_loads"), 0.0);
    assert!(
        (a.mbps(1) / b.mbps(1) - 1.0).abs() < 0.01,
        "{} vs {}",
        a.mbps(1),
        b.mbps(1)
    );
    // random reads of a sequentially written drive: compact extents, resident
    let rr: &[&str] = &[
        "--rw=randread",
        "--bs=4k",
        "--iodepth=32",
        "--number_ios=4000",
    ];
    let (a, b) = (go("full", true, rr), go("full", false, rr));
    assert_eq!(a.counter_sum("map_loads"), 0.0);
    assert!(
        (a.iops(0) / b.iops(0) - 1.0).abs() < 0.01,
        "{} vs {}",
        a.iops(0),
        b.iops(0)
    );
}

#[test]
fn a_read_of_a_randomly_written_region_waits_for_its_translation_page() {
    let q: &[&str] = &[
        "--rw=randread",
        "--bs=4k",
        "--iodepth=1",
        "--number_ios=500",
    ];
    let (a, b) = (go("aged", true, q), go("aged", false, q));
    assert!(a.counter_sum("map_nand_reads") > 400.0);
    // one more page read on the die: array read plus its transfer
    let extra = a.device_us(0) - b.device_us(0);
    assert!((30.0..80.0).contains(&extra), "extra {extra:.1} us");
}

#[test]
fn small_writes_break_a_sequential_region_and_the_cache_then_holds_it() {
    // QD1 random 4 KB writes on a sequentially written drive fragment the
    // pages they touch; once more pages are fragmented than the cache
    // holds, writes start to miss
    let q: &[&str] = &[
        "--rw=randwrite",
        "--bs=4k",
        "--iodepth=1",
        "--number_ios=2000",
    ];
    let a = go("full", true, q);
    let frag = a.counter_sum("map_fragmented");
    assert!(frag > 100.0 && frag <= 128.0, "fragmented {frag}");
    assert!(a.counter_sum("map_loads") > 0.0);
}

#[test]
fn md_hands_its_members_requests_of_at_most_max_sectors() {
    // 4 MB sequential writes on the (small) SSD array: each X25-E's 1 MB
    // piece as one request waits for its 1 MB buffer to drain; as two
    // 512 KB requests (Linux's max_sectors_kb) it is double-buffered
    let go = |limit: u64| {
        let mut ov = peers::raid_ssd("full");
        ov.push(format!("raid.member_max_request_bytes={limit}"));
        sim(peers::seq_4m("raid-ssd", &ov, "write", 4))
    };
    let (cut, whole) = (go(524_288), go(0));
    assert!(
        cut.mbps(1) > 1.5 * whole.mbps(1),
        "512 KB requests {:.0} MB/s, 1 MB pieces {:.0} MB/s",
        cut.mbps(1),
        whole.mbps(1)
    );
    // but no faster than four drives' rated 170 MB/s
    assert!(cut.mbps(1) < 4.0 * 170.0, "{}", cut.mbps(1));
}
