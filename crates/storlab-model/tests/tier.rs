//! The block cache (`tier`): hits at the cache device's latency, misses at
//! the backing device's and filled behind them, LRU eviction, and each
//! write policy's latency and durability, on fixed-latency devices whose
//! arithmetic is plain.

mod common;
use common::drive;

use storlab_model::devices::fixed::FixedLatency;
use storlab_model::devices::tier::config::{TierConfig, TierMode};
use storlab_model::devices::tier::flash_cache::FlashCache;
use storlab_model::units::Rw;
use storlab_model::{DevRequest, Device, Op};

const FAST: u64 = 10_000; // cache device, ns
const SLOW: u64 = 1_000_000; // backing device, ns
const LOOKUP: u64 = 500;
const B: u64 = 4096;

fn tier(mode: TierMode, blocks: u64) -> FlashCache {
    tier_with(mode, blocks, false)
}

const MISS: u64 = 2_000;

fn tier_with(mode: TierMode, blocks: u64, write_allocate: bool) -> FlashCache {
    let cfg = TierConfig {
        cache: "n/a".into(),
        cache_set: vec![],
        backing: "n/a".into(),
        backing_set: vec![],
        cache_bytes: blocks * B,
        block_bytes: B,
        mode,
        lookup_ns: Rw {
            read: LOOKUP,
            write: LOOKUP,
        },
        miss_ns: Rw {
            read: MISS,
            write: MISS,
        },
        write_allocate,
        destage_threshold: 0.5,
        destage_depth: 4,
        warm_bytes: 0,
    };
    FlashCache::new(
        cfg,
        Box::new(FixedLatency::new(FAST, 1 << 30)),
        Box::new(FixedLatency::new(SLOW, 1 << 30)),
        1 << 30,
    )
}

fn req(id: u64, op: Op, block: u64) -> DevRequest {
    DevRequest::new(id, op, block * B, if op == Op::Flush { 0 } else { B })
}

fn latencies(d: &mut dyn Device, reqs: &[(u64, DevRequest)]) -> Vec<u64> {
    let done = drive(d, reqs, 100_000).expect("the tier serves every request");
    reqs.iter().map(|(t, r)| done[&r.id].at - t).collect()
}

fn counter(d: &dyn Device, name: &str) -> f64 {
    let r = d.report(0);
    r.counters
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no counter {name}: {:?}", r.counters))
}

#[test]
fn a_miss_costs_the_backing_device_and_the_next_read_hits() {
    let mut t = tier(TierMode::WriteThrough, 16);
    let l = latencies(
        &mut t,
        &[
            (0, req(0, Op::Read, 7)),
            (5_000_000, req(1, Op::Read, 7)),
            // a read spanning a cached and an uncached block misses
            (6_000_000, req(2, Op::Read, 8)),
            (
                8_000_000,
                DevRequest {
                    len: 2 * B,
                    ..req(3, Op::Read, 7)
                },
            ),
        ],
    );
    assert_eq!(
        l,
        [
            SLOW + LOOKUP + MISS,
            FAST + LOOKUP,
            SLOW + LOOKUP + MISS,
            FAST + LOOKUP
        ]
    );
    assert_eq!(counter(&t, "tier_read_hits"), 2.0);
    assert_eq!(counter(&t, "tier_fills"), 2.0);
}

#[test]
fn a_block_is_not_read_from_the_cache_before_its_fill_ends() {
    let mut t = tier(TierMode::WriteThrough, 16);
    // the fill starts when the miss ends (SLOW) and takes FAST
    let l = latencies(
        &mut t,
        &[
            (0, req(0, Op::Read, 1)),
            (SLOW + FAST / 2, req(1, Op::Read, 1)),
            (SLOW + 2 * FAST, req(2, Op::Read, 1)),
        ],
    );
    assert_eq!(
        l,
        [SLOW + LOOKUP + MISS, SLOW + LOOKUP + MISS, FAST + LOOKUP]
    );
}

#[test]
fn the_least_recently_used_block_is_evicted() {
    let mut t = tier(TierMode::WriteThrough, 4);
    let gap = 3 * SLOW;
    let mut reqs = Vec::new();
    // fill blocks 0..4, touch 0 again, then 4 evicts 1 (the oldest)
    for (i, b) in [0, 1, 2, 3, 0, 4, 0, 1].iter().enumerate() {
        reqs.push((i as u64 * gap, req(i as u64, Op::Read, *b)));
    }
    let l = latencies(&mut t, &reqs);
    let hit = FAST + LOOKUP;
    let miss = SLOW + LOOKUP + MISS;
    assert_eq!(l, [miss, miss, miss, miss, hit, miss, hit, miss]);
}

#[test]
fn write_through_waits_for_the_backing_device_and_keeps_the_block() {
    let mut t = tier(TierMode::WriteThrough, 16);
    let l = latencies(
        &mut t,
        &[(0, req(0, Op::Write, 3)), (3 * SLOW, req(1, Op::Read, 3))],
    );
    assert_eq!(l, [SLOW + LOOKUP, FAST + LOOKUP]);
    assert_eq!(counter(&t, "tier_dirty_at_end"), 0.0);
}

#[test]
fn write_around_drops_the_cached_copy() {
    let mut t = tier(TierMode::WriteAround, 16);
    let l = latencies(
        &mut t,
        &[
            (0, req(0, Op::Read, 3)),
            (3 * SLOW, req(1, Op::Write, 3)),
            (6 * SLOW, req(2, Op::Read, 3)),
        ],
    );
    assert_eq!(
        l,
        [SLOW + LOOKUP + MISS, SLOW + LOOKUP, SLOW + LOOKUP + MISS]
    );
}

#[test]
fn write_back_acknowledges_from_the_cache_and_a_flush_waits_for_destaging() {
    let mut t = tier(TierMode::WriteBack, 16);
    let l = latencies(
        &mut t,
        &[
            (0, req(0, Op::Write, 3)),
            (FAST + LOOKUP, req(1, Op::Flush, 0)),
            (10 * SLOW, req(2, Op::Read, 3)),
        ],
    );
    assert_eq!(
        l[0],
        FAST + LOOKUP,
        "a write-back write costs the cache device"
    );
    // the destage reads the block back (FAST) and writes it (SLOW); the
    // flush then goes to the backing device (SLOW)
    assert!(
        l[1] >= FAST + SLOW + SLOW,
        "flush {} before the data was on disk",
        l[1]
    );
    assert_eq!(l[2], FAST + LOOKUP, "still cached, clean");
    assert_eq!(counter(&t, "tier_destages"), 1.0);
    assert_eq!(counter(&t, "tier_dirty_at_end"), 0.0);
}

#[test]
fn write_back_writes_wait_when_every_block_is_dirty() {
    let mut t = tier(TierMode::WriteBack, 2);
    // threshold 0.5 of 2 blocks: destaging starts at the second dirty
    // block; the third write needs room and waits for a destage to end
    let l = latencies(
        &mut t,
        &[
            (0, req(0, Op::Write, 0)),
            (0, req(1, Op::Write, 1)),
            (0, req(2, Op::Write, 2)),
        ],
    );
    assert_eq!(l[0], FAST + LOOKUP);
    assert!(
        l[2] >= FAST + SLOW,
        "the third write waited for room: {}",
        l[2]
    );
    assert!(counter(&t, "tier_write_waits") >= 1.0);
}

#[test]
fn partial_and_fua_writes_go_through_in_write_back() {
    let mut t = tier(TierMode::WriteBack, 16);
    let l = latencies(
        &mut t,
        &[
            (
                0,
                DevRequest {
                    len: 512,
                    ..req(0, Op::Write, 5)
                },
            ),
            (
                0,
                DevRequest {
                    fua: true,
                    ..req(1, Op::Write, 6)
                },
            ),
        ],
    );
    assert_eq!(l, [SLOW + LOOKUP, SLOW + LOOKUP]);
}

#[test]
fn write_allocate_reads_the_block_then_writes_it_back_dirty() {
    let mut t = tier_with(TierMode::WriteBack, 16, true);
    let l = latencies(
        &mut t,
        &[
            (
                0,
                DevRequest {
                    offset: 5 * B + 64,
                    len: 64,
                    ..req(0, Op::Write, 5)
                },
            ),
            (3 * SLOW, req(1, Op::Read, 5)),
        ],
    );
    // a store to a page not present: read it in, write it to memory
    assert_eq!(l, [SLOW + FAST + LOOKUP + MISS, FAST + LOOKUP]);
    assert_eq!(counter(&t, "tier_write_allocs"), 1.0);
    assert_eq!(
        counter(&t, "tier_destages"),
        1.0,
        "dirty, destaged while idle"
    );
}

#[test]
fn a_warm_cache_holds_an_even_share_of_the_footprint() {
    use storlab_model::devices::tier::config::WARM_CHUNK;
    // a cache of 4 chunks over a footprint of 16: every 4th chunk cached
    let blocks = 4 * WARM_CHUNK / B;
    let mk = |warm: u64| {
        let cfg = TierConfig {
            cache: "n/a".into(),
            cache_set: vec![],
            backing: "n/a".into(),
            backing_set: vec![],
            cache_bytes: blocks * B,
            block_bytes: B,
            mode: TierMode::WriteThrough,
            lookup_ns: Rw {
                read: LOOKUP,
                write: LOOKUP,
            },
            miss_ns: Rw { read: 0, write: 0 },
            write_allocate: false,
            destage_threshold: 0.5,
            destage_depth: 4,
            warm_bytes: warm,
        };
        FlashCache::new(
            cfg,
            Box::new(FixedLatency::new(FAST, 1 << 30)),
            Box::new(FixedLatency::new(SLOW, 1 << 30)),
            1 << 30,
        )
    };
    assert_eq!(mk(0).cached_blocks(), 0);
    let mut t = mk(16 * WARM_CHUNK);
    assert_eq!(t.cached_blocks(), blocks);
    // reads of one block in each chunk: a quarter hit, at the cache's speed
    let reqs: Vec<(u64, DevRequest)> = (0..16u64)
        // the last block of each chunk (the misses' fills evict the
        // oldest cached blocks, each chunk's first)
        .map(|c| {
            (
                c * 10 * SLOW,
                req(c, Op::Read, (c + 1) * WARM_CHUNK / B - 1),
            )
        })
        .collect();
    let fast = latencies(&mut t, &reqs)
        .iter()
        .filter(|l| **l < SLOW)
        .count();
    assert_eq!(fast, 4);
    // a footprint smaller than the cache is cached whole
    assert_eq!(mk(2 * WARM_CHUNK).cached_blocks(), 2 * WARM_CHUNK / B);
}
