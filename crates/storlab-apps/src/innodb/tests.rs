//! The InnoDB model's tests: database sizes, statement CPU, the
//! doublewrite buffer, synchronous checkpoints and hybrid memory.

use super::engine::*;
use super::oltp::*;
use super::tpcc::*;
use crate::info::{AppInfo, AppKind, Params};
use crate::model::Step;

fn params(app: &'static AppInfo, pairs: &[&str]) -> Params {
    let v: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
    Params::parse(app, &v, "test").unwrap()
}

#[test]
fn tpcc_database_is_about_94_mb_a_warehouse() {
    let AppKind::Closed(m) = build_tpcc(&params(&TPCC, &["warehouses=100"])).unwrap() else {
        panic!("closed")
    };
    let gb = m.extra()["database_bytes"].as_f64().unwrap() / 1e9;
    // docs/spec/workloads.md: 100 warehouses, 9.4 GB
    assert!((gb - 9.4).abs() < 1.0, "{gb} GB");
}

#[test]
fn statement_cpu_comes_from_the_oltp_transaction() {
    assert!((statement_us(18.0 * 10.0 + 414.0) - 10.0).abs() < 1e-9);
    assert_eq!(statement_us(0.0), 0.0);
}

#[test]
fn dirty_victims_are_flushed_through_the_doublewrite_buffer() {
    let ep = engine_params(&params(&OLTP, &["buffer_pool=32k"])).unwrap();
    let undo = Table {
        base: 100,
        pages: 1,
        per_page: 1,
    };
    let mut e = Inno::new(&ep, &Layouter::flat(101), undo);
    e.touch(1, true, false);
    e.touch(2, false, false);
    e.steps.clear();
    e.touch(3, false, false); // evicts page 1 (dirty)
    let writes = e
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Io(f) | Step::Issue(f) if f.op == storlab_model::host::fs::FileOp::Write))
        .count();
    let syncs = e
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Io(f) if f.op == storlab_model::host::fs::FileOp::Fsync))
        .count();
    assert_eq!((writes, syncs), (2, 2), "{:?}", e.steps);
    assert!(
        matches!(e.steps.last(), Some(Step::Io(f)) if f.op == storlab_model::host::fs::FileOp::Read)
    );
}

#[test]
fn a_full_redo_log_makes_one_thread_checkpoint_and_the_others_wait() {
    let ep = engine_params(&params(&OLTP, &["log_file=1m"])).unwrap();
    let undo = Table {
        base: 0,
        pages: 1,
        per_page: 1,
    };
    let mut e = Inno::new(&ep, &Layouter::flat(1000), undo);
    for p in 0..10 {
        e.touch(p, true, false);
    }
    e.steps.clear();
    assert!(!e.margin(0));
    e.redo_age = 1 << 20;
    assert!(e.margin(0));
    assert_eq!(e.pool.dirty_pages(), 0);
    e.steps.clear();
    assert!(!e.margin(1));
    assert_eq!(e.steps, vec![Step::Lock(0), Step::Unlock(0)]);
    e.steps.clear();
    assert!(!e.margin(0)); // the owner's next transaction: done
    assert!(e.steps.is_empty());
}

/// OLTP with a 32 KiB pool in 64 KiB of hybrid memory (2 DRAM
/// frames, the rest on the flash).
fn hybrid_params() -> EngineParams {
    engine_params(&params(&OLTP, &["buffer_pool=32k", "hybrid=64k"])).unwrap()
}

/// An engine over `ep` on a flat 100-page layout with a one-page undo.
fn hybrid_engine(ep: &EngineParams) -> Inno {
    let undo = Table {
        base: 0,
        pages: 1,
        per_page: 1,
    };
    Inno::new(ep, &Layouter::flat(100), undo)
}

#[test]
fn hybrid_memory_faults_pages_beyond_dram() {
    let ep = hybrid_params();
    let mut e = hybrid_engine(&ep);
    for p in 0..6 {
        e.touch(p, false, true);
    }
    e.steps.clear();
    // all 6 are in the pool (2 DRAM + 4 flash pages); the first ones
    // left DRAM
    e.touch(0, false, false);
    assert_eq!(
        e.steps,
        vec![Step::Channel {
            ch: FLASH,
            busy: ep.busy_ns,
            latency: ep.fault_ns,
        }]
    );
}

#[test]
fn a_changed_page_leaving_hybrid_dram_is_written_back_on_the_flash_queue() {
    let ep = hybrid_params();
    let mut e = hybrid_engine(&ep);
    for p in 0..6 {
        e.touch(p, true, true);
    }
    e.steps.clear();
    let before = e.writebacks;
    // page 0 is in flash now; DRAM's two frames hold changed pages
    e.touch(0, false, false);
    let wb = e
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Channel { latency: 0, .. }))
        .count();
    let faults = e
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Channel { latency, .. } if *latency == ep.fault_ns))
        .count();
    assert_eq!((wb, faults), (1, 1), "{:?}", e.steps);
    assert_eq!(e.writebacks, before + 1);
}

/// An engine with a 400-page pool (6.25 MiB), io_capacity 200 and
/// max_dirty_pct 75, `dirty` pages of it dirty.
fn cleaner_engine(dirty: u64) -> Inno {
    let ep = engine_params(&params(
        &OLTP,
        &["buffer_pool=6400k", "io_capacity=200", "max_dirty_pct=75"],
    ))
    .unwrap();
    let undo = Table {
        base: 0,
        pages: 1,
        per_page: 1,
    };
    let mut e = Inno::new(&ep, &Layouter::flat(1000), undo);
    for p in 0..dirty {
        e.touch(p, true, false);
    }
    e.steps.clear();
    e
}

/// Pages the background round writes.
fn round_writes(e: &mut Inno) -> u64 {
    let before = e.flushed;
    e.background();
    e.steps.clear();
    e.flushed - before
}

#[test]
fn the_page_cleaner_flushes_io_capacity_only_when_idle_or_above_the_dirty_limit() {
    // MySQL 5.6's page cleaner (buf0flu.cc): a second with transactions
    // and dirty pages under the limit flushes the adaptive share of its
    // redo, not io_capacity; before, every round wrote io_capacity pages
    // and a busy server's background writes outnumbered its commits
    let mut busy = cleaner_engine(250);
    busy.active_round = true;
    busy.redo_round = 4096;
    let n = round_writes(&mut busy);
    assert!(n < 10, "busy, 250 of 400 dirty: {n} pages written");
    assert!(!busy.active_round, "a round starts inactive");
    // the same state after a second with no transaction: io_capacity
    let mut idle = cleaner_engine(250);
    assert_eq!(round_writes(&mut idle), 200);
    // busy but above max_dirty_pct (320 of 400 > 75 %): io_capacity
    let mut over = cleaner_engine(320);
    over.active_round = true;
    assert_eq!(round_writes(&mut over), 200);
    // never more than are dirty
    let mut few = cleaner_engine(30);
    assert_eq!(round_writes(&mut few), 30);
}

#[test]
fn the_page_cleaner_cleans_the_next_victims_so_misses_find_clean_frames() {
    // MySQL 5.6's page_cleaner_flush_LRU_tail: a busy second also writes
    // the dirty pages at the pool's replacement end; without it every
    // miss of a busy server found a dirty victim and its client flushed
    // it itself (doublewrite, fsync, write, fsync)
    let mut e = cleaner_engine(400);
    // a miss sweeps the clock once (every page was referenced), evicting
    // frame 0's dirty page; the other 399 are now the next victims
    e.touch(500, false, false);
    assert_eq!(e.single_flushes, 1);
    e.steps.clear();
    e.active_round = true;
    let n = round_writes(&mut e);
    assert!(n >= 399, "{n} pages written");
    e.touch(501, false, false);
    assert_eq!(e.single_flushes, 1, "the next miss finds a clean victim");
    // a referenced (recently used) dirty page is not a next victim
    let mut hot = cleaner_engine(250);
    hot.active_round = true;
    assert!(round_writes(&mut hot) < 10);
}
