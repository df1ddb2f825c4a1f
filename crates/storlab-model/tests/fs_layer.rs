//! The file-system layer (`storlab_model::host::fs`) alone, in front of a host
//! with no software cost and a fixed-latency device, driven by a small
//! event loop: lock semantics per file system, allocation sections, the
//! log, the page cache (hits, misses, read-ahead, the flusher under the
//! dirty limit), direct IO bypassing it, fsync, unwritten extents
//! (preallocated files), determinism.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use storlab_model::config::PresetStore;
use storlab_model::devices::fixed::FixedLatency;
use storlab_model::host::config::{CompletionMode, FileSystem, HostConfig};
use storlab_model::host::fs::behaviour::Layout;
use storlab_model::host::fs::config::FsConfig;
use storlab_model::host::fs::layer::FileLayer;
use storlab_model::host::fs::request::{FileOp, FileReq, FsCounters};
use storlab_model::host::fs::state::FS_TOKEN;
use storlab_model::host::io::{HostCx, IoDone};
use storlab_model::host::stack::Host;
use storlab_model::{Cx, DevRequest, Device, DeviceReport, Nanos, Op, SystemConfig};

const DEV_NS: u64 = 10_000;
const FS_NS: u64 = 1_000;

/// The rig's device: a fixed latency, counting the reads and writes it
/// was given.
struct Counted {
    inner: FixedLatency,
    io: Arc<[AtomicU64; 2]>,
}

impl Device for Counted {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        match req.op {
            Op::Read => self.io[0].fetch_add(1, Ordering::Relaxed),
            Op::Write => self.io[1].fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        self.inner.submit(now, req, cx)
    }
    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        self.inner.on_event(now, token, cx)
    }
    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }
    fn report(&self, now: Nanos) -> DeviceReport {
        self.inner.report(now)
    }
}

struct Rig {
    fs: FileLayer,
    /// Device reads and writes so far.
    io: Arc<[AtomicU64; 2]>,
    host: Host,
    cx: HostCx,
    heap: BinaryHeap<Reverse<(Nanos, u64, u64)>>,
    seq: u64,
    done: Vec<IoDone>,
}

impl Rig {
    fn new(kind: FileSystem, cfg: FsConfig) -> Rig {
        Rig::with_host(kind, cfg, |_| {})
    }

    /// A rig whose host configuration `tweak` changes first.
    fn with_host(kind: FileSystem, cfg: FsConfig, tweak: impl FnOnce(&mut HostConfig)) -> Rig {
        let (_, sys) =
            SystemConfig::load(&PresetStore::default(), "null", &[]).expect("null preset");
        let mut hc = sys.host;
        tweak(&mut hc);
        hc.file_system = kind;
        hc.xfs_ns = storlab_model::units::Rw {
            read: FS_NS,
            write: FS_NS,
        };
        let cap = 64 << 30;
        let threads = 8;
        let io = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let dev = Counted {
            inner: FixedLatency::new(DEV_NS, cap),
            io: io.clone(),
        };
        let host = Host::new(hc, Box::new(dev), threads + 1);
        Rig {
            fs: FileLayer::new(kind, cfg, cap, threads),
            io,
            host,
            cx: HostCx::default(),
            heap: BinaryHeap::new(),
            seq: 0,
            done: Vec::new(),
        }
    }

    fn queue(&mut self) {
        for &(t, tok) in &self.cx.dev.wakeups {
            self.seq += 1;
            self.heap.push(Reverse((t, self.seq, tok)));
        }
        self.cx.dev.wakeups.clear();
        self.done.append(&mut self.cx.done);
    }

    fn submit(&mut self, now: Nanos, req: FileReq) {
        self.fs.submit(now, req, &mut self.host, &mut self.cx);
        self.queue();
    }

    /// Run until nothing is pending; returns the completions so far.
    fn run(&mut self) -> Vec<IoDone> {
        self.run_until(Nanos::MAX)
    }

    /// Run the events before `end`; returns the completions so far.
    fn run_until(&mut self, end: Nanos) -> Vec<IoDone> {
        while let Some(&Reverse((t, _, tok))) = self.heap.peek() {
            if t >= end {
                break;
            }
            self.heap.pop();
            if tok & FS_TOKEN == FS_TOKEN {
                self.fs.on_event(t, tok, &mut self.host, &mut self.cx);
            } else {
                self.host.on_event(t, tok, &mut self.cx);
                self.fs.absorb(t, &mut self.host, &mut self.cx);
            }
            self.queue();
        }
        std::mem::take(&mut self.done)
    }

    /// Device (reads, writes) so far.
    fn dev_io(&self) -> (u64, u64) {
        (
            self.io[0].load(Ordering::Relaxed),
            self.io[1].load(Ordering::Relaxed),
        )
    }

    fn at(&self, done: &[IoDone], id: u64) -> Nanos {
        done.iter().find(|d| d.id == id).expect("completed").at
    }
}

fn req(id: u64, thread: u32, op: FileOp, offset: u64, direct: bool) -> FileReq {
    FileReq {
        id,
        thread,
        op,
        file: 0,
        offset,
        len: 4096,
        direct,
        fua: false,
        poll: false,
    }
}

/// The rig's file system: its tests run to the end of their events, so
/// the flusher's 30 s expiry is off (it would write back what they
/// leave dirty; `dirty_data_is_written_back_once_it_expires` turns it
/// on).
fn cfg() -> FsConfig {
    FsConfig {
        alloc_ns: 5_000,
        dirty_expire_ms: 0,
        ..FsConfig::default()
    }
}

#[test]
fn xfs_direct_reads_run_side_by_side() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    for t in 0..4 {
        r.submit(0, req(t as u64, t, FileOp::Read, t as u64 * 8192, true));
    }
    let done = r.run();
    assert_eq!(done.len(), 4);
    for d in &done {
        assert_eq!(d.at, DEV_NS + FS_NS, "no read waits for another");
    }
    assert_eq!(r.fs.counters().inode_lock_waits, 0);
}

#[test]
fn xfs_allocating_writes_serialise_only_their_allocation() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
    for t in 0..3 {
        r.submit(0, req(t as u64, t, FileOp::Write, t as u64 * 8192, true));
    }
    let done = r.run();
    let c = r.fs.counters();
    assert_eq!(c.allocations, 3);
    assert_eq!(
        c.inode_lock_waits, 2,
        "the 2nd and 3rd wait for the allocation section"
    );
    // the sections run one after another; the device IOs overlap
    for t in 0..3u64 {
        assert_eq!(r.at(&done, t), (t + 1) * 5_000 + DEV_NS + FS_NS);
    }
    // and overwriting the same blocks allocates nothing
    for t in 0..3 {
        r.submit(
            100_000,
            req(10 + t as u64, t, FileOp::Write, t as u64 * 8192, true),
        );
    }
    let done = r.run();
    assert!(done.iter().all(|d| d.at == 100_000 + DEV_NS + FS_NS));
    assert_eq!(r.fs.counters().allocations, 3);
}

#[test]
fn xfs_extending_write_takes_the_lock_exclusive() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Empty).unwrap();
    // the write extends the empty file: exclusive, held across its IO; the
    // read behind it waits for all of it
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    r.submit(0, req(2, 1, FileOp::Read, 1 << 20, true));
    let done = r.run();
    let w = r.at(&done, 1);
    assert_eq!(w, 5_000 + DEV_NS + FS_NS);
    assert_eq!(r.at(&done, 2), w + DEV_NS + FS_NS);
    let rd = done.iter().find(|d| d.id == 2).unwrap();
    assert_eq!(
        rd.breakdown.get(storlab_model::Component::LockWait),
        w,
        "the wait is the inode lock's"
    );
}

#[test]
fn ext3_serialises_writers_for_the_whole_io() {
    // a page cache too small to keep the file's mapping blocks (1 GiB of
    // file: 256 of them, 1 MiB, more than half of 1 MiB): the first
    // write reads one
    let small = FsConfig {
        page_cache_bytes: 1 << 20,
        ..cfg()
    };
    let mut r = Rig::new(FileSystem::Ext3, small);
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    for t in 0..3 {
        r.submit(0, req(t as u64, t, FileOp::Write, t as u64 * 8192, true));
    }
    let done = r.run();
    let mut at: Vec<_> = done.iter().map(|d| d.at).collect();
    at.sort();
    // the first reads the file's indirect block before its write
    let first = 2 * (DEV_NS + FS_NS);
    assert_eq!(
        at,
        vec![first, first + DEV_NS + FS_NS, first + 2 * (DEV_NS + FS_NS)]
    );
    assert_eq!(
        r.fs.counters().metadata_reads,
        1,
        "one mapping block covers 4 MiB"
    );
}

/// Four ext3 direct reads of one file at `t0` (its mapping block read
/// before): their completion times, sorted.
fn ext3_direct_reads(r: &mut Rig) -> Vec<Nanos> {
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    r.submit(0, req(100, 0, FileOp::Read, 0, true));
    let t0 = r.run()[0].at;
    for t in 0..4 {
        r.submit(t0, req(t as u64, t, FileOp::Read, t as u64 * 8192, true));
    }
    let mut at: Vec<_> = r.run().iter().map(|d| d.at - t0).collect();
    at.sort();
    at
}

#[test]
fn a_laid_out_files_mapping_blocks_stay_cached_when_they_fit() {
    // 1 GiB of file, 1 MiB of mapping blocks: cached in the default 4 GiB
    // page cache, read once each from a 1 MiB one
    for (cache, reads) in [(4u64 << 30, 0), (1 << 20, 2)] {
        let mut r = Rig::new(
            FileSystem::Ext3,
            FsConfig {
                page_cache_bytes: cache,
                ..cfg()
            },
        );
        r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
        for (t, off) in [0u64, 4096, 8 << 20].into_iter().enumerate() {
            r.submit(0, req(t as u64, t as u32, FileOp::Read, off, true));
        }
        r.run();
        assert_eq!(r.fs.counters().metadata_reads, reads, "cache {cache}");
    }
}

#[test]
fn ext3_direct_reads_hold_i_mutex_while_they_submit() {
    // DIO_LOCKING: each read holds the mutex through its submission (here
    // the file system's CPU, FS_NS), not its device time
    let mut r = Rig::new(FileSystem::Ext3, cfg());
    let at = ext3_direct_reads(&mut r);
    let one = FS_NS + DEV_NS;
    assert_eq!(at, vec![one, one + FS_NS, one + 2 * FS_NS, one + 3 * FS_NS]);
    assert_eq!(r.fs.counters().inode_lock_waits, 3);
    // on a RAM disk the submission is the transfer: the reads take turns
    let mut r = Rig::with_host(FileSystem::Ext3, cfg(), |h| {
        h.completion = CompletionMode::Cpu
    });
    let at = ext3_direct_reads(&mut r);
    assert_eq!(at, vec![one, 2 * one, 3 * one, 4 * one]);
    // ext3's buffered reads and XFS's direct ones take no mutex
    let mut r = Rig::with_host(FileSystem::Xfs, cfg(), |h| {
        h.completion = CompletionMode::Cpu
    });
    assert_eq!(ext3_direct_reads(&mut r), vec![one; 4]);
}

#[test]
fn buffered_reads_miss_then_hit_and_direct_reads_bypass_the_cache() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    r.submit(0, req(1, 0, FileOp::Read, 1 << 20, false));
    let miss = r.run()[0].at;
    r.submit(miss, req(2, 0, FileOp::Read, 1 << 20, false));
    let hit = r.run()[0].at - miss;
    assert!(miss >= DEV_NS, "a miss reads the device");
    assert!(hit < DEV_NS, "a hit does not ({hit} ns)");
    let c = r.fs.counters();
    assert_eq!((c.page_cache_misses, c.page_cache_hits), (1, 1));
    // a direct read of the same page goes to the device, counted nowhere
    r.submit(2 * miss, req(3, 0, FileOp::Read, 1 << 20, true));
    let direct = r.run()[0].at - 2 * miss;
    assert_eq!(direct, DEV_NS + FS_NS);
    let c2 = r.fs.counters();
    assert_eq!((c2.page_cache_misses, c2.page_cache_hits), (1, 1));
}

#[test]
fn sequential_buffered_reads_read_ahead() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    let mut now = 0;
    for k in 0..64u64 {
        r.submit(now, req(k, 0, FileOp::Read, k * 4096, false));
        now = r.run()[0].at;
    }
    let c = r.fs.counters();
    // windows of 16, 32, 64, 128, 128 KiB: five misses
    assert_eq!(c.page_cache_misses, 5, "{c:?}");
    assert!(c.readahead_bytes > 0);
    // random reads read only what they ask
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    for k in 1..17u64 {
        r.submit(
            now,
            req(k, 0, FileOp::Read, (k * 7919 % 1000) * (1 << 20), false),
        );
        now = r.run()[0].at;
    }
    assert_eq!(r.fs.counters().readahead_bytes, 0);
}

#[test]
fn the_flusher_writes_back_under_the_dirty_limit() {
    let pages = 1024u64;
    // one page per writeback IO, one at a time: the writer (1 µs a page)
    // outruns the flusher (10 µs a page)
    let cfg = FsConfig {
        page_cache_bytes: pages * 4096,
        writeback_max_bytes: 4096,
        writeback_depth: 1,
        ..cfg()
    };
    let limit = pages * cfg.dirty_ratio_pct as u64 / 100;
    let mut r = Rig::new(FileSystem::Xfs, cfg);
    r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
    // eight writers, each writing its next page as soon as the last
    // returned
    let mut max_dirty = 0;
    let mut next = [0u64; 8];
    for t in 0..8u32 {
        r.submit(0, req(t as u64, t, FileOp::Write, t as u64 * 4096, false));
    }
    let mut issued = 8u64;
    let mut now = 0;
    while issued < 2000 {
        let Some(&Reverse((t, _, _))) = r.heap.peek() else {
            break;
        };
        now = t;
        for d in r.run_until(t + 1) {
            let th = d.thread as usize;
            next[th] += 1;
            let page = issued;
            issued += 1;
            r.submit(d.at, req(page, d.thread, FileOp::Write, page * 4096, false));
        }
        max_dirty = max_dirty.max(r.fs.dirty_pages());
    }
    r.run();
    let c = r.fs.counters();
    assert!(c.writeback_writes > 0, "{c:?}");
    assert!(c.dirty_throttled > 0, "the writer outran writeback: {c:?}");
    assert!(
        max_dirty <= limit,
        "dirty pages {max_dirty} over the limit {limit}"
    );
    // writeback allocated (delayed allocation) and logged
    assert!(c.allocations > 0);
    // fsync writes everything back, forces the log and flushes
    r.submit(
        now,
        FileReq {
            op: FileOp::Fsync,
            len: 0,
            ..req(9999, 0, FileOp::Fsync, 0, false)
        },
    );
    let d = r.run();
    assert_eq!(d.len(), 1);
    assert_eq!(r.fs.dirty_pages(), 0);
}

// Dirty data older than `dirty_expire_ms` is written back at the
// flusher's next periodic wake-up (Linux's kupdate writeback: 30 s, a
// 5 s period), however little of it there is; with expiry off it stays
// dirty (below the background threshold nothing else writes it).
#[test]
fn dirty_data_is_written_back_once_it_expires() {
    for expire_ms in [30_000, 0] {
        let mut r = Rig::new(
            FileSystem::Xfs,
            FsConfig {
                dirty_expire_ms: expire_ms,
                ..cfg()
            },
        );
        r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
        r.submit(1_000_000_000, req(1, 0, FileOp::Write, 0, false));
        // the write returns at once; the kupdate wake-up (if any) is due
        // at the first 5 s tick after 31 s
        let d = r.run_until(30_000_000_000);
        assert_eq!(d.len(), 1);
        assert_eq!(r.fs.dirty_pages(), 1, "not expired yet");
        assert_eq!(r.dev_io().1, 0);
        r.run_until(34_999_999_999);
        assert_eq!(r.fs.dirty_pages(), 1, "the flusher wakes at 35 s");
        r.run();
        let c = r.fs.counters();
        if expire_ms > 0 {
            assert_eq!(r.fs.dirty_pages(), 0);
            assert_eq!((c.expired_files, c.writeback_writes), (1, 1), "{c:?}");
            assert!(r.dev_io().1 >= 1);
        } else {
            assert_eq!(r.fs.dirty_pages(), 1);
            assert_eq!((c.expired_files, c.writeback_writes), (0, 0), "{c:?}");
        }
    }
}

#[test]
fn fsync_forces_the_log_with_its_own_write() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    let t = r.run()[0].at;
    assert_eq!(
        r.fs.counters().journal_writes,
        0,
        "one allocation fills no log buffer"
    );
    r.submit(
        t,
        FileReq {
            len: 0,
            ..req(2, 0, FileOp::Fsync, 0, true)
        },
    );
    let d = r.run();
    let c = r.fs.counters();
    assert_eq!(c.journal_writes, 1);
    // the log write's pre-flush, the write, its post-flush (FUA emulated:
    // host/fs/fsync.rs)
    assert_eq!(c.flushes, 2);
    assert_eq!(d[0].at - t, 3 * DEV_NS + FS_NS);
}

/// A sync request of `op` on file 0 at `at`; its completion time.
fn sync_at(r: &mut Rig, id: u64, op: FileOp, at: Nanos) -> Nanos {
    r.submit(
        at,
        FileReq {
            len: 0,
            ..req(id, 0, op, 0, true)
        },
    );
    r.run()[0].at
}

// Issue 57: XFS's fsync forces the log for a write's timestamp update,
// fdatasync does not (xfs_file_fsync: `datasync` skips a pin of
// XFS_ILOG_TIMESTAMP alone): an overwrite then fdatasync is one device
// flush; then fsync is the log's pre-flush, write and post-flush.
#[test]
fn fdatasync_of_an_overwrite_is_one_flush_and_fsync_forces_the_log() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    let t = r.run()[0].at;
    let end = sync_at(&mut r, 2, FileOp::Fdatasync, t);
    let c = r.fs.counters();
    assert_eq!((c.journal_writes, c.flushes), (0, 1), "{c:?}");
    assert_eq!(end - t, DEV_NS, "one flush");
    // the same write and fsync: the timestamps pinned the inode
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    let t = r.run()[0].at;
    let end = sync_at(&mut r, 2, FileOp::Fsync, t);
    let c = r.fs.counters();
    assert_eq!((c.journal_writes, c.flushes), (1, 2), "{c:?}");
    assert_eq!(end - t, 3 * DEV_NS + FS_NS);
}

// Issue 57: a write's timestamps are logged once per tick of the coarse
// clock (current_time), so a second write in the same tick leaves nothing
// for the next fsync to force, and a write in a later tick does.
#[test]
fn timestamps_are_logged_once_a_tick() {
    use storlab_model::host::fs::fsync::TICK_NS;
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    let t = r.run()[0].at;
    sync_at(&mut r, 2, FileOp::Fsync, t);
    assert_eq!(r.fs.counters().journal_writes, 1);
    // same tick: no new timestamp, so no log to force
    r.submit(t + 1, req(3, 0, FileOp::Write, 0, true));
    let t2 = r.run()[0].at;
    assert!(t2 < TICK_NS, "the test's second write is in the first tick");
    sync_at(&mut r, 4, FileOp::Fsync, t2);
    let c = r.fs.counters();
    assert_eq!((c.journal_writes, c.flushes), (1, 3), "{c:?}");
    // a later tick: logged, forced
    r.submit(TICK_NS, req(5, 0, FileOp::Write, 0, true));
    let t3 = r.run()[0].at;
    sync_at(&mut r, 6, FileOp::Fsync, t3);
    let c = r.fs.counters();
    assert_eq!((c.journal_writes, c.flushes), (2, 5), "{c:?}");
}

// Issue 57: a create or unlink with `fua` (a `dirsync`/`sync` mount:
// XFS's wsync, xfs_trans_set_sync) forces the log as it commits (the
// log's pre-flush, write and post-flush) and returns after the force;
// without it the transaction stays in the in-core log and the call
// returns from the namespace work alone.
#[test]
fn synchronous_creates_and_unlinks_force_the_log() {
    let mut took_by = [0; 2];
    for fua in [false, true] {
        let mut r = Rig::new(FileSystem::Xfs, cfg());
        let f = r.fs.create_file(1 << 20, Layout::Empty).unwrap();
        let ns = |id, op| FileReq {
            file: f,
            len: 0,
            fua,
            ..req(id, 0, op, 0, false)
        };
        r.submit(0, ns(1, FileOp::Create));
        let t = r.run()[0].at;
        let c = r.fs.counters();
        let want = if fua { (1, 2) } else { (0, 0) };
        assert_eq!(
            (c.journal_writes, c.flushes),
            want,
            "create, fua {fua}: {c:?}"
        );
        r.submit(t, ns(2, FileOp::Unlink));
        let d = r.run();
        let c = r.fs.counters();
        let want = if fua { (2, 4) } else { (0, 0) };
        assert_eq!(
            (c.journal_writes, c.flushes),
            want,
            "unlink, fua {fua}: {c:?}"
        );
        assert!(!r.fs.is_live(f));
        let took = d[0].at - t;
        took_by[usize::from(fua)] = took;
        // the breakdown still covers the whole call
        assert_eq!(d[0].breakdown.total(), took);
    }
    // a synchronous commit waits for the three device requests
    assert!(
        took_by[1] >= took_by[0] + 3 * DEV_NS,
        "unlink took {took_by:?} ns"
    );
}

// Issue 57: fdatasync still forces the log for a change other than
// timestamps (an allocating write's extents and size).
#[test]
fn fdatasync_forces_the_log_after_an_allocating_write() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    let t = r.run()[0].at;
    sync_at(&mut r, 2, FileOp::Fdatasync, t);
    let c = r.fs.counters();
    assert_eq!((c.journal_writes, c.flushes), (1, 2), "{c:?}");
}

#[test]
fn tmpfs_never_touches_the_device() {
    let mut r = Rig::new(FileSystem::Tmpfs, cfg());
    r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    r.submit(0, req(2, 1, FileOp::Read, 1 << 20, false));
    let d = r.run();
    assert!(d.iter().all(|d| d.at < DEV_NS));
    assert_eq!(r.fs.counters().writeback_writes, 0);
}

#[test]
fn the_layer_is_deterministic() {
    let go = || {
        let mut r = Rig::new(FileSystem::Xfs, cfg());
        r.fs.create_file(256 << 20, Layout::Sparse).unwrap();
        let mut x = 12345u64;
        for k in 0..300u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let op = if x >> 63 == 0 {
                FileOp::Read
            } else {
                FileOp::Write
            };
            let off = (x >> 20) % (256 << 8) * 4096;
            r.submit(k * 3000, req(k, (k % 8) as u32, op, off, x & 4 == 0));
        }
        r.run()
            .iter()
            .map(|d| (d.id, d.at, d.breakdown.total()))
            .collect::<Vec<_>>()
    };
    assert_eq!(go(), go());
}

#[test]
fn ext3_direct_writes_into_holes_fall_back_to_the_page_cache() {
    for (kind, fallbacks) in [(FileSystem::Ext3, 1), (FileSystem::Xfs, 0)] {
        let mut r = Rig::new(kind, cfg());
        r.fs.create_file(1 << 30, Layout::Sparse).unwrap();
        r.submit(
            0,
            FileReq {
                len: 8 << 20,
                ..req(1, 0, FileOp::Write, 0, true)
            },
        );
        let d = r.run();
        assert_eq!(d.len(), 1);
        let c = r.fs.counters();
        assert_eq!(c.fallback_writes, fallbacks, "{kind:?}: {c:?}");
        if fallbacks > 0 {
            // written back in writeback-sized pieces (4 MiB), side by side
            assert_eq!(c.writeback_writes, 2);
        }
    }
}

#[test]
fn bad_fs_values_are_refused_naming_the_key() {
    for (set, key) in [
        ("fs.dirty_ratio_pct=0", "fs.dirty_ratio_pct"),
        (
            "fs.dirty_background_ratio_pct=50",
            "fs.dirty_background_ratio_pct",
        ),
        ("fs.log_buffer_bytes=10", "fs.log_buffer_bytes"),
        ("fs.writeback_depth=0", "fs.writeback_depth"),
        ("fs.page_cache_bytes=4096", "fs.page_cache_bytes"),
        ("fs.namespace_ns=2000000000", "fs.namespace_ns"),
        (
            "fs.log_bytes_per_namespace_op=4000000",
            "fs.log_bytes_per_namespace_op",
        ),
        ("fs.convert_ns=2000000000", "fs.convert_ns"),
        (
            "fs.log_bytes_per_convert=4000000",
            "fs.log_bytes_per_convert",
        ),
        ("fs.no_such_key=1", "no_such_key"),
    ] {
        let e = SystemConfig::load(&PresetStore::default(), "moneta-base", &[set.to_string()])
            .err()
            .unwrap_or_else(|| panic!("{set} accepted"));
        assert!(e.to_string().contains(key), "{set}: {e}");
    }
    // and a good value is taken
    let (_, c) = SystemConfig::load(
        &PresetStore::default(),
        "moneta-base",
        &["fs.alloc_ns=1000".to_string()],
    )
    .expect("accepted");
    let fs = c.fs.expect("an [fs] table");
    assert_eq!(fs.alloc_ns, 1000);
    // the conversion follows the allocation's split unless set
    assert_eq!(fs.convert_ns(), 500);
    let (_, c) = SystemConfig::load(
        &PresetStore::default(),
        "moneta-base",
        &["fs.convert_ns=700".to_string()],
    )
    .expect("accepted");
    let fs = c.fs.expect("an [fs] table");
    assert_eq!((fs.convert_ns(), fs.alloc_ns), (700, 19_500));
}

#[test]
fn deleted_files_space_is_reused_and_merged() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    let big = 20u64 << 30;
    let a = r.fs.create_file(big, Layout::Allocated).expect("fits");
    r.fs.create_file(big, Layout::Allocated)
        .expect("fits after the log");
    r.fs.create_file(big, Layout::Allocated)
        .expect("fits around the second");
    // a fourth 20 GiB file does not fit on 64 GiB beside them and the log
    assert!(r.fs.create_file(big, Layout::Allocated).is_err());
    let left = r.fs.free_bytes();
    r.fs.delete_file(a);
    assert!(!r.fs.is_live(a));
    assert_eq!(r.fs.free_bytes(), left + big);
    let b =
        r.fs.create_file(big, Layout::Allocated)
            .expect("reuses the space");
    assert_eq!(r.fs.free_bytes(), left);
    // neighbours freed merge into one range a larger file fits in whole
    let g = 1u64 << 30;
    let x = r.fs.create_file(g, Layout::Empty).expect("fits");
    let y = r.fs.create_file(g, Layout::Empty).expect("fits");
    let _z = r.fs.create_file(g, Layout::Empty).expect("fits");
    let left = r.fs.free_bytes();
    r.fs.delete_file(x);
    r.fs.delete_file(y);
    r.fs.delete_file(y); // twice: nothing more
    assert_eq!(r.fs.free_bytes(), left + 2 * g);
    let w =
        r.fs.create_file(2 * g, Layout::Empty)
            .expect("fits the merged range");
    assert_eq!(r.fs.extents(w).len(), 1);
    assert_eq!(r.fs.free_bytes(), left);
    let _ = b;
}

#[test]
fn creates_and_unlinks_serialise_on_the_directory_and_log() {
    let c = FsConfig {
        namespace_ns: 20_000,
        log_bytes_per_namespace_op: 1024,
        ..cfg()
    };
    let mut r = Rig::new(FileSystem::Xfs, c.clone());
    let files: Vec<u32> = (0..32)
        .map(|_| r.fs.create_file(1 << 20, Layout::Empty).expect("fits"))
        .collect();
    for (k, &f) in files.iter().enumerate() {
        r.submit(
            0,
            FileReq {
                file: f,
                ..req(k as u64, (k % 8) as u32, FileOp::Create, 0, false)
            },
        );
    }
    let done = r.run();
    assert_eq!(done.len(), 32);
    let mut ends: Vec<Nanos> = done.iter().map(|d| d.at).collect();
    ends.sort();
    // one directory: each waits for the one before
    for w in ends.windows(2) {
        assert!(w[1] - w[0] >= c.namespace_ns, "{ends:?}");
    }
    let k = r.fs.counters();
    assert_eq!(k.creates, 32);
    assert!(k.namespace_wait_ns > 0);
    // the first 8 entries live in the directory's inode (1 KiB each);
    // from the 9th the directory is a block, relogged whole with each
    // create (XFS before delayed logging): 8 x 1 KiB + 24 x 5 KiB =
    // 128 KiB of log, four 32 KiB log buffers written
    assert_eq!(k.journal_writes, 4, "{k:?}");
    assert_eq!(k.journal_bytes, 4 * 32 * 1024, "{k:?}");
    // an unlink drops the dirty pages and frees the space
    r.submit(
        ends[31],
        FileReq {
            file: files[0],
            len: 65536,
            ..req(100, 0, FileOp::Write, 0, false)
        },
    );
    r.run();
    assert!(r.fs.dirty_pages() > 0);
    let dirty = r.fs.dirty_pages();
    let free = r.fs.free_bytes();
    let now = ends[31] + 1_000_000;
    r.submit(
        now,
        FileReq {
            file: files[0],
            ..req(101, 0, FileOp::Unlink, 0, false)
        },
    );
    let done = r.run();
    assert!(r.at(&done, 101) >= now + c.namespace_ns);
    assert!(!r.fs.is_live(files[0]));
    assert!(r.fs.dirty_pages() < dirty);
    assert_eq!(r.fs.free_bytes(), free + (1 << 20));
    assert_eq!(r.fs.counters().unlinks, 1);
}

#[test]
fn creates_in_different_directories_run_side_by_side() {
    let c = FsConfig {
        namespace_ns: 20_000,
        ..cfg()
    };
    let mut r = Rig::new(FileSystem::Xfs, c.clone());
    let a = r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    let b = r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    // directory numbers travel in the request's offset
    r.submit(
        0,
        FileReq {
            file: a,
            ..req(1, 0, FileOp::Create, 3, false)
        },
    );
    r.submit(
        0,
        FileReq {
            file: b,
            ..req(2, 1, FileOp::Create, 4, false)
        },
    );
    let done = r.run();
    let (ta, tb) = (r.at(&done, 1), r.at(&done, 2));
    assert!(ta.abs_diff(tb) < c.namespace_ns, "{ta} {tb}");
    assert_eq!(r.fs.counters().namespace_wait_ns, 0);
}

#[test]
fn pmfs_persists_writes_and_fsync_needs_no_flush() {
    let mut r = Rig::new(FileSystem::Pmfs, cfg());
    r.fs.create_file(1 << 20, Layout::Allocated).expect("fits");
    r.submit(0, req(1, 0, FileOp::Write, 0, false));
    let done = r.run();
    let w = r.at(&done, 1);
    r.submit(
        w,
        FileReq {
            len: 0,
            ..req(2, 0, FileOp::Fsync, 0, false)
        },
    );
    let done = r.run();
    // nothing dirty, no log pending beyond the buffer: fsync returns
    // without a device round trip
    assert!(r.at(&done, 2) - w < DEV_NS, "{:?}", done);
}

#[test]
fn fsync_writes_back_its_own_file_only() {
    // file 0 holds many dirty pages, file 1 one: fsync of file 1 waits for
    // its own page's writeback, the log and the flush, not for file 0's
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    r.fs.create_file(1 << 20, Layout::Allocated).unwrap();
    for k in 0..512u64 {
        r.submit(0, req(100 + k, 0, FileOp::Write, k * 2 * 4096, false));
    }
    r.submit(
        0,
        FileReq {
            file: 1,
            ..req(1, 1, FileOp::Write, 0, false)
        },
    );
    let t = r.run().iter().map(|d| d.at).max().unwrap();
    let dirty = r.fs.dirty_pages();
    assert_eq!(
        dirty, 513,
        "buffered writes under the background limit stay dirty"
    );
    r.submit(
        t,
        FileReq {
            file: 1,
            len: 0,
            ..req(2, 1, FileOp::Fsync, 0, false)
        },
    );
    let d = r.run();
    let fsync = d.iter().find(|x| x.id == 2).expect("fsync done").at - t;
    // one page written back, then the flush: a few device times, not 512
    assert!(fsync < 5 * DEV_NS, "fsync took {fsync} ns");
    assert_eq!(r.fs.dirty_pages(), 512, "file 0's pages are still dirty");
}

const UNWRITTEN: Layout = Layout::Unwritten { keep_size: false };

#[test]
fn first_writes_to_preallocated_blocks_convert_at_completion() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, UNWRITTEN).unwrap();
    // one of the allocating path's two transactions
    let conv = cfg().convert_ns();
    assert_eq!(conv, cfg().alloc_ns / 2);
    for t in 0..3 {
        r.submit(0, req(t as u64, t, FileOp::Write, t as u64 * 8192, true));
    }
    let done = r.run();
    let c = r.fs.counters();
    assert_eq!((c.allocations, c.conversions), (0, 3), "{c:?}");
    assert_eq!(
        c.inode_lock_waits, 2,
        "the 2nd and 3rd wait for the conversion before them"
    );
    // the device IOs overlap, the conversions after them take turns
    for t in 0..3u64 {
        assert_eq!(r.at(&done, t), DEV_NS + FS_NS + (t + 1) * conv);
    }
    let d = done.iter().find(|d| d.id == 0).unwrap();
    assert_eq!(
        d.breakdown.get(storlab_model::Component::FileSystem),
        FS_NS + conv,
        "the conversion is the file system's"
    );
    // a second pass over the same blocks converts nothing
    for t in 0..3 {
        r.submit(
            100_000,
            req(10 + t as u64, t, FileOp::Write, t as u64 * 8192, true),
        );
    }
    let done = r.run();
    assert!(done.iter().all(|d| d.at == 100_000 + DEV_NS + FS_NS));
    assert_eq!(r.fs.counters().conversions, 3);
    assert_eq!(r.fs.counters().inode_lock_waits, 2);
    // a write over a written and an unwritten block converts once
    r.submit(
        200_000,
        FileReq {
            len: 8192,
            ..req(20, 0, FileOp::Write, 4096, true)
        },
    );
    let done = r.run();
    assert_eq!(done[0].at, 200_000 + DEV_NS + FS_NS + conv);
    assert_eq!(r.fs.counters().conversions, 4);
    // and the conversion logs half an allocation's bytes
    assert_eq!(cfg().log_bytes_per_convert(), cfg().log_bytes_per_alloc / 2);
}

#[test]
fn conversions_cost_less_than_allocations_and_more_than_written_blocks() {
    // eight writers at once on one file: the sections under the inode
    // lock set the pace
    let last = |layout: Layout| {
        let mut r = Rig::new(FileSystem::Xfs, cfg());
        r.fs.create_file(1 << 30, layout).unwrap();
        for t in 0..8 {
            r.submit(0, req(t as u64, t, FileOp::Write, t as u64 * 8192, true));
        }
        r.run().iter().map(|d| d.at).max().unwrap()
    };
    let (sparse, unwritten, written) = (
        last(Layout::Sparse),
        last(UNWRITTEN),
        last(Layout::Allocated),
    );
    assert_eq!(written, DEV_NS + FS_NS);
    assert_eq!(unwritten, DEV_NS + FS_NS + 8 * cfg().convert_ns());
    assert_eq!(sparse, DEV_NS + FS_NS + 8 * cfg().alloc_ns);
    // a convert_ns set apart from alloc_ns is taken
    let c = FsConfig {
        convert_ns: Some(1_000),
        ..cfg()
    };
    assert_eq!(c.convert_ns(), 1_000);
}

#[test]
fn reads_of_unwritten_blocks_touch_no_device() {
    for direct in [true, false] {
        let mut r = Rig::new(FileSystem::Xfs, cfg());
        r.fs.create_file(1 << 30, UNWRITTEN).unwrap();
        for t in 0..4 {
            r.submit(0, req(t as u64, t, FileOp::Read, (t as u64) << 20, direct));
        }
        let done = r.run();
        assert_eq!(done.len(), 4);
        assert!(
            done.iter().all(|d| d.at < DEV_NS),
            "direct {direct}: zeros without the device"
        );
        assert_eq!(r.dev_io(), (0, 0), "direct {direct}: no device IO");
        assert_eq!(r.fs.counters().unwritten_reads, 4);
        // once written, the block is read from the device, and so is a
        // read over it and an unwritten block
        r.submit(1_000_000, req(10, 0, FileOp::Write, 0, true));
        r.run();
        r.submit(2_000_000, req(11, 0, FileOp::Read, 0, true));
        assert_eq!(r.run()[0].at, 2_000_000 + DEV_NS + FS_NS);
        r.submit(
            3_000_000,
            FileReq {
                len: 8192,
                ..req(12, 0, FileOp::Read, 0, true)
            },
        );
        assert_eq!(r.run()[0].at, 3_000_000 + DEV_NS + FS_NS);
        assert_eq!(r.dev_io(), (2, 1), "direct {direct}");
        assert_eq!(r.fs.counters().unwritten_reads, 4);
    }
}

#[test]
fn buffered_writes_into_unwritten_blocks_convert_at_writeback() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    r.fs.create_file(1 << 30, UNWRITTEN).unwrap();
    for k in 0..4u64 {
        r.submit(0, req(k, 0, FileOp::Write, k * 4096, false));
    }
    r.run();
    r.submit(
        1_000_000,
        FileReq {
            len: 0,
            ..req(9, 0, FileOp::Fsync, 0, false)
        },
    );
    r.run();
    let c = r.fs.counters();
    // one writeback IO of the four pages, one conversion, no allocation
    assert_eq!(
        (c.writeback_writes, c.conversions, c.allocations),
        (1, 1, 0),
        "{c:?}"
    );
}

#[test]
fn keep_size_leaves_the_file_empty_so_xfs_writes_extend_it() {
    // two direct writes at once: inside the size they share the IO lock;
    // beyond it (FALLOC_FL_KEEP_SIZE) each takes it exclusive
    let conv = cfg().convert_ns();
    for (keep_size, second) in [
        (false, DEV_NS + FS_NS + 2 * conv),
        (true, 2 * (DEV_NS + FS_NS + conv)),
    ] {
        let mut r = Rig::new(FileSystem::Xfs, cfg());
        r.fs.create_file(1 << 30, Layout::Unwritten { keep_size })
            .unwrap();
        r.submit(0, req(1, 0, FileOp::Write, 0, true));
        r.submit(0, req(2, 1, FileOp::Write, 8192, true));
        let done = r.run();
        assert_eq!(r.at(&done, 2), second, "keep_size {keep_size}");
        assert_eq!(r.fs.counters().conversions, 2);
    }
}

#[test]
fn preallocation_follows_the_file_system() {
    // ext3 has no fallocate(2)
    assert_eq!(Layout::preallocated(FileSystem::Ext3, false), None);
    for fs in [FileSystem::Xfs, FileSystem::Ext4] {
        assert_eq!(Layout::preallocated(fs, false), Some(UNWRITTEN));
    }
    // tmpfs and PMFS preallocate plain blocks: nothing to convert
    for fs in [FileSystem::Pmfs, FileSystem::Tmpfs] {
        let layout = Layout::preallocated(fs, false).expect("fallocate(2)");
        let mut r = Rig::new(fs, cfg());
        r.fs.create_file(1 << 30, layout).unwrap();
        r.submit(0, req(1, 0, FileOp::Write, 0, true));
        r.submit(0, req(2, 1, FileOp::Read, 1 << 20, true));
        r.run();
        let c = r.fs.counters();
        assert_eq!(
            (c.conversions, c.allocations, c.unwritten_reads),
            (0, 0, 0),
            "{fs:?}"
        );
    }
    // ext4 converts as XFS does, its writers holding i_mutex throughout
    let mut r = Rig::new(FileSystem::Ext4, cfg());
    r.fs.create_file(1 << 30, UNWRITTEN).unwrap();
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    r.submit(0, req(2, 1, FileOp::Write, 8192, true));
    let done = r.run();
    let one = DEV_NS + FS_NS + cfg().convert_ns();
    assert_eq!(r.at(&done, 2), 2 * one);
    assert_eq!(r.fs.counters().conversions, 2);
}

/// PMFS reads are loads through the CPU caches: a file read again is
/// served from the last-level cache without a device read, a write's
/// non-temporal stores take its pages out, and data beyond the caches'
/// size is read from the device again.
#[test]
fn pmfs_rereads_hit_the_cpu_caches_until_written_or_evicted() {
    use storlab_model::host::fs::behaviour::PMEP_CACHE_BYTES;
    let mut r = Rig::new(FileSystem::Pmfs, cfg());
    let f = r.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    let reads = |r: &Rig| r.io[0].load(Ordering::Relaxed);
    let mut at = 0;
    let mut go = |r: &mut Rig, id: u64, op: FileOp, off: u64, len: u64| {
        let mut q = req(id, 0, op, off, false);
        q.file = f;
        q.len = len;
        r.submit(at, q);
        at = r.run()[0].at;
    };
    go(&mut r, 1, FileOp::Read, 0, 64 << 10);
    assert_eq!(reads(&r), 1, "a first read reaches the NVMM");
    go(&mut r, 2, FileOp::Read, 0, 64 << 10);
    assert_eq!(reads(&r), 1, "a reread hits the CPU caches");
    assert_eq!(r.fs.counters().cpu_cache_hits, 1);
    go(&mut r, 3, FileOp::Write, 0, 4096);
    go(&mut r, 4, FileOp::Read, 0, 64 << 10);
    assert_eq!(reads(&r), 2, "a written page left the caches");
    // read more than the caches hold: the first range is evicted
    go(&mut r, 5, FileOp::Read, 1 << 20, PMEP_CACHE_BYTES);
    let before = reads(&r);
    go(&mut r, 6, FileOp::Read, 0, 64 << 10);
    assert_eq!(reads(&r), before + 1, "evicted lines are read again");
    // XFS has no such cache: its direct reads always reach the device
    let mut x = Rig::new(FileSystem::Xfs, cfg());
    x.fs.create_file(1 << 30, Layout::Allocated).unwrap();
    x.submit(0, req(1, 0, FileOp::Read, 0, true));
    let t = x.run()[0].at;
    x.submit(t, req(2, 0, FileOp::Read, 0, true));
    x.run();
    assert_eq!(x.io[0].load(Ordering::Relaxed), 2);
    assert_eq!(x.fs.counters().cpu_cache_hits, 0);
}

#[test]
fn a_page_cache_started_at_the_background_threshold_writes_back_what_is_dirtied() {
    // 1 MiB of page cache: 256 pages, a background threshold of 25
    let cfg = FsConfig {
        page_cache_bytes: 1 << 20,
        ..cfg()
    };
    let limit = 256 * cfg.dirty_background_ratio_pct as u64 / 100;
    let mut r = Rig::new(FileSystem::Xfs, cfg.clone());
    r.fs.create_file(64 << 20, Layout::Allocated).unwrap();
    // every other page, repeated: duplicates count once, the walk stops at
    // the threshold
    let pages = (0..10u64).flat_map(|_| (0..1000u64).map(|p| 2 * p));
    assert_eq!(r.fs.dirty_to_background(0, pages), limit);
    assert_eq!(r.fs.dirty_pages(), limit);
    assert_eq!(r.io[1].load(Ordering::Relaxed), 0, "nothing written yet");
    // ten buffered writes of new pages: the flusher writes back as many
    // pages as they dirty (each a page of its own), the dirty count stays
    // at the threshold
    for k in 0..10u64 {
        r.submit(0, req(k, 0, FileOp::Write, (4001 + 2 * k) * 4096, false));
        r.run();
    }
    let c = r.fs.counters();
    assert_eq!(c.writeback_writes, 10, "{c:?}");
    assert_eq!(r.fs.dirty_pages(), limit);
    // a file system with no page cache, or whose memory is the store,
    // has nothing to start dirty
    for kind in [FileSystem::Pmfs, FileSystem::Tmpfs] {
        let mut r = Rig::new(kind, cfg.clone());
        r.fs.create_file(64 << 20, Layout::Allocated).unwrap();
        assert_eq!(r.fs.dirty_to_background(0, 0..1000), 0);
        assert_eq!(r.fs.dirty_pages(), 0);
    }
}

#[test]
fn pmfs_allocates_with_its_own_light_transaction_not_xfs_s() {
    // an appending write on PMFS allocates through pmfs_new_blocks and a
    // cache-line-logged transaction: it costs PMFS_ALLOC_NS over an
    // overwrite, not the XFS transaction of fs.alloc_ns
    use storlab_model::host::fs::behaviour::PMFS_ALLOC_NS;
    let c = FsConfig::default();
    assert!(
        c.alloc_ns > 4 * PMFS_ALLOC_NS,
        "the two costs differ in kind"
    );
    let time = |fs: FileSystem, layout: Layout| {
        let mut r = Rig::new(fs, c.clone());
        r.fs.create_file(1 << 20, layout).expect("fits");
        r.submit(0, req(1, 0, FileOp::Write, 0, false));
        let done = r.run();
        (r.at(&done, 1), r.fs.counters().allocations)
    };
    let (over, a0) = time(FileSystem::Pmfs, Layout::Allocated);
    let (append, a1) = time(FileSystem::Pmfs, Layout::Empty);
    assert_eq!((a0, a1), (0, 1));
    assert_eq!(append - over, PMFS_ALLOC_NS, "{append} {over}");
    // XFS's direct appending write still pays fs.alloc_ns
    let mut r = Rig::new(FileSystem::Xfs, c.clone());
    r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    r.submit(0, req(1, 0, FileOp::Write, 0, true));
    let done = r.run();
    assert_eq!(r.at(&done, 1), c.alloc_ns + DEV_NS + FS_NS);
}

/// `n` creates at time 0, each in its own directory (no directory lock
/// between them, no directory blocks relogged) on its own thread, each
/// logging a whole log buffer; returns the last completion and the
/// counters.
fn creates_each_filling_a_log_buffer(c: FsConfig, n: u64) -> (Nanos, FsCounters) {
    let mut r = Rig::new(FileSystem::Xfs, c);
    let files: Vec<u32> = (0..n)
        .map(|_| r.fs.create_file(1 << 20, Layout::Empty).expect("fits"))
        .collect();
    for (k, &f) in files.iter().enumerate() {
        r.submit(
            0,
            FileReq {
                file: f,
                ..req(k as u64, (k % 8) as u32, FileOp::Create, k as u64, false)
            },
        );
    }
    let done = r.run();
    assert_eq!(done.len() as u64, n);
    let last = done.iter().map(|d| d.at).max().expect("some");
    (last, r.fs.counters())
}

/// Issue 57: XFS before delayed logging copies transactions into
/// `fs.log_buffers` in-core log buffers; when every one is full and under
/// IO, a committing transaction waits for one to be written
/// (Documentation/filesystems/xfs-delayed-logging-design.txt).
#[test]
fn xfs_transactions_wait_for_a_log_buffer_when_all_are_under_io() {
    let c = FsConfig {
        namespace_ns: 1_000,
        log_bytes_per_namespace_op: 32 << 10,
        log_buffers: 2,
        log_barrier: false,
        ..cfg()
    };
    let (last, k) = creates_each_filling_a_log_buffer(c.clone(), 8);
    assert!(k.log_buffer_waits >= 5, "{k:?}");
    assert!(k.log_buffer_wait_ns > 0, "{k:?}");
    // two buffers at a time through a 10 us device: 8 buffers' writes
    // before the last commit is copied in
    assert!(last >= 3 * DEV_NS, "{last}");
    // with buffers enough for all, nobody waits for the device
    let many = FsConfig {
        log_buffers: 64,
        ..c.clone()
    };
    let (last_many, k_many) = creates_each_filling_a_log_buffer(many, 8);
    assert_eq!(k_many.log_buffer_waits, 0, "{k_many:?}");
    assert!(last_many < DEV_NS, "{last_many}");
    // ext4's journal is not bound this way
    let mut r = Rig::new(FileSystem::Ext4, c);
    let f = r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    for k in 0..8u64 {
        r.submit(
            0,
            FileReq {
                file: f,
                ..req(k, (k % 8) as u32, FileOp::Create, k, false)
            },
        );
    }
    r.run();
    assert_eq!(r.fs.counters().log_buffer_waits, 0);
}

/// Issue 57: with barriers (XFS's default mount option on the studies'
/// kernels) each background log buffer is a device flush and then the
/// write, so a transaction waiting for a buffer waits for both.
#[test]
fn xfs_log_buffers_are_written_as_barriers() {
    let c = FsConfig {
        namespace_ns: 1_000,
        log_bytes_per_namespace_op: 32 << 10,
        log_buffers: 2,
        log_barrier: false,
        ..cfg()
    };
    let (plain, _) = creates_each_filling_a_log_buffer(c.clone(), 8);
    let barrier = FsConfig {
        log_barrier: true,
        ..c
    };
    let (with_barrier, k) = creates_each_filling_a_log_buffer(barrier, 8);
    assert_eq!(k.journal_writes, 8, "{k:?}");
    // each buffer's flush takes the device's latency before its write
    assert!(with_barrier >= plain + 2 * DEV_NS, "{plain} {with_barrier}");
}

/// Issue 57: a create or unlink relogs its directory's blocks whole
/// (XFS before delayed logging): none while the directory fits in its
/// inode, one 4 KiB block in block form, a data and a leaf block past
/// one block.
#[test]
fn xfs_relogs_the_directory_blocks_by_directory_form() {
    let c = FsConfig {
        namespace_ns: 1_000,
        log_bytes_per_namespace_op: 0,
        log_buffer_bytes: 4096,
        log_barrier: false,
        log_buffers: 1024,
        ..cfg()
    };
    let mut r = Rig::new(FileSystem::Xfs, c);
    let f = r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    let mut now = 0;
    let mut journal = Vec::new();
    for k in 0..200u64 {
        r.submit(
            now,
            FileReq {
                file: f,
                ..req(k, 0, FileOp::Create, 0, false)
            },
        );
        r.run();
        now += 100_000;
        journal.push(r.fs.counters().journal_bytes);
    }
    // short form (the first 8): nothing relogged
    assert_eq!(journal[7], 0);
    // block form: 4 KiB per create
    assert_eq!(journal[20] - journal[19], 4096);
    // leaf form (past 126 entries): 8 KiB per create
    assert_eq!(journal[199] - journal[198], 8192);
}

/// The completion time of one request `q` submitted at 0 on a fresh rig
/// of `kind` whose file 0 is laid out as `layout` (1 MiB).
fn one(kind: FileSystem, c: &FsConfig, layout: Layout, q: FileReq) -> Nanos {
    let mut r = Rig::new(kind, c.clone());
    r.fs.create_file(1 << 20, layout).expect("fits");
    r.submit(0, q);
    let done = r.run();
    r.at(&done, q.id)
}

#[test]
fn copies_of_pages_in_memory_pay_the_memory_copy_per_kib() {
    // issue 57: a copy out of or into pages held in memory is not free:
    // fs.memory_copy_ns_per_kib per KiB, on tmpfs and the page cache
    let free = cfg();
    let paid = FsConfig {
        memory_copy_ns_per_kib: storlab_model::units::Rw {
            read: 240,
            write: 100,
        },
        ..cfg()
    };
    let len = 64 << 10;
    let q = |op: FileOp| FileReq {
        len,
        ..req(1, 0, op, 0, false)
    };
    for op in [FileOp::Read, FileOp::Write] {
        let per_kib = if op == FileOp::Read { 240 } else { 100 };
        let a = one(FileSystem::Tmpfs, &free, Layout::Allocated, q(op));
        let b = one(FileSystem::Tmpfs, &paid, Layout::Allocated, q(op));
        assert_eq!(b - a, per_kib * 64, "tmpfs {op:?}: {a} {b}");
    }
    // a page-cache hit on XFS pays it too: read the range twice
    let hit = |c: &FsConfig| {
        let mut r = Rig::new(FileSystem::Xfs, c.clone());
        r.fs.create_file(1 << 20, Layout::Allocated).expect("fits");
        r.submit(0, q(FileOp::Read));
        let t = r.run()[0].at;
        r.submit(
            t,
            FileReq {
                id: 2,
                ..q(FileOp::Read)
            },
        );
        let done = r.run();
        r.at(&done, 2) - t
    };
    assert_eq!(hit(&paid) - hit(&free), 240 * 64);
    // PMFS: a read from the NVMM pays the read copy after the device, a
    // reread from the CPU caches does not, and its non-temporal writes
    // pay no write copy
    let pmfs = |c: &FsConfig| {
        let mut r = Rig::new(FileSystem::Pmfs, c.clone());
        r.fs.create_file(1 << 20, Layout::Allocated).expect("fits");
        r.submit(0, q(FileOp::Read));
        let miss = r.run()[0].at;
        r.submit(
            miss,
            FileReq {
                id: 2,
                ..q(FileOp::Read)
            },
        );
        let hit = r.run()[0].at - miss;
        (miss, hit)
    };
    let ((m0, h0), (m1, h1)) = (pmfs(&free), pmfs(&paid));
    assert_eq!(m1 - m0, 240 * 64, "a miss pays the copy");
    assert_eq!(h1, h0, "a CPU-cache hit does not");
    assert_eq!(
        one(FileSystem::Pmfs, &paid, Layout::Allocated, q(FileOp::Write)),
        one(FileSystem::Pmfs, &free, Layout::Allocated, q(FileOp::Write)),
        "PMFS's writes are non-temporal stores: no write copy"
    );
}

#[test]
fn tmpfs_allocates_the_pages_a_write_adds_and_frees_them_after_the_unlink() {
    use storlab_model::host::fs::behaviour::{TMPFS_PAGE_ALLOC_NS, TMPFS_PAGE_FREE_NS};
    let c = cfg();
    let w = |id: u64, off: u64| FileReq {
        len: 16 << 10,
        ..req(id, 0, FileOp::Write, off, false)
    };
    // a write into an empty file allocates its 4 pages; into allocated
    // pages (an overwrite) none
    let new = one(FileSystem::Tmpfs, &c, Layout::Empty, w(1, 0));
    let over = one(FileSystem::Tmpfs, &c, Layout::Allocated, w(1, 0));
    assert_eq!(new - over, 4 * TMPFS_PAGE_ALLOC_NS);
    let mut r = Rig::new(FileSystem::Tmpfs, c.clone());
    let f = r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    let g = r.fs.create_file(1 << 20, Layout::Empty).expect("fits");
    r.submit(0, w(1, 0));
    let t = r.run()[0].at;
    r.submit(t, w(2, 0));
    let t2 = r.run()[0].at;
    assert_eq!(t2 - t, over, "the second write allocates nothing");
    // the unlink frees the 4 pages after the directory's lock: a create
    // in the same directory behind it does not wait for the freeing
    r.submit(
        t2,
        FileReq {
            file: f,
            ..req(3, 0, FileOp::Unlink, 0, false)
        },
    );
    r.submit(
        t2,
        FileReq {
            file: g,
            ..req(4, 1, FileOp::Create, 0, false)
        },
    );
    let done = r.run();
    let ns = storlab_model::host::fs::behaviour::TMPFS_NAMESPACE_NS;
    assert_eq!(r.at(&done, 3) - t2, ns + 4 * TMPFS_PAGE_FREE_NS);
    assert_eq!(
        r.at(&done, 4) - t2,
        2 * ns,
        "the create waited for the lock only"
    );
    // XFS frees nothing this way
    let mut x = Rig::new(FileSystem::Xfs, c.clone());
    let f = x.fs.create_file(1 << 20, Layout::Allocated).expect("fits");
    x.submit(
        0,
        FileReq {
            file: f,
            ..req(3, 0, FileOp::Unlink, 0, false)
        },
    );
    let done = x.run();
    assert_eq!(x.at(&done, 3), c.namespace_ns);
}

#[test]
fn pmfs_and_tmpfs_creates_and_unlinks_cost_their_own_not_xfs_s() {
    use storlab_model::host::fs::behaviour::{
        PMFS_DIR_SCAN_NS_PER_ENTRY, PMFS_NAMESPACE_NS, TMPFS_NAMESPACE_NS,
    };
    let c = cfg();
    let time = |kind: FileSystem, op: FileOp, entries: u64| {
        let mut r = Rig::new(kind, c.clone());
        let f = r.fs.create_file(1 << 20, Layout::Allocated).expect("fits");
        r.fs.set_dir_entries(0, entries);
        r.submit(
            0,
            FileReq {
                file: f,
                ..req(1, 0, op, 0, false)
            },
        );
        let done = r.run();
        r.at(&done, 1)
    };
    assert_eq!(time(FileSystem::Xfs, FileOp::Create, 0), c.namespace_ns);
    assert_eq!(time(FileSystem::Pmfs, FileOp::Create, 0), PMFS_NAMESPACE_NS);
    assert_eq!(
        time(FileSystem::Tmpfs, FileOp::Create, 1000),
        TMPFS_NAMESPACE_NS
    );
    // PMFS scans its directory linearly: a create walks every entry for
    // room, an unlink half of them for the name
    let scan = PMFS_DIR_SCAN_NS_PER_ENTRY;
    assert_eq!(
        time(FileSystem::Pmfs, FileOp::Create, 1000),
        PMFS_NAMESPACE_NS + 1000 * scan
    );
    assert_eq!(
        time(FileSystem::Pmfs, FileOp::Unlink, 1000),
        PMFS_NAMESPACE_NS + 500 * scan
    );
    assert!(
        PMFS_NAMESPACE_NS.max(TMPFS_NAMESPACE_NS) < c.namespace_ns,
        "no journal: cheaper than XFS's transaction"
    );
}

/// A read of file `f` (its first page, direct), as request `id` of
/// thread `t`.
fn read_file(id: u64, t: u32, f: u32) -> FileReq {
    FileReq {
        file: f,
        ..req(id, t, FileOp::Read, 0, true)
    }
}

#[test]
fn a_cold_trees_first_read_reads_its_directory_and_inode_blocks_once() {
    let mut r = Rig::new(FileSystem::Xfs, cfg());
    // two directories: files 0-39 in 0 (two inode clusters of 32), 40 in 1
    let files: Vec<u32> = (0..41u64)
        .map(|k| r.fs.create_tree_file(4096, k / 40, 1).unwrap())
        .collect();
    // the first read: the directory's block, then the inode cluster, then
    // the data, one after the other
    r.submit(0, read_file(1, 0, files[0]));
    let first = r.run()[0].at;
    assert_eq!(r.dev_io(), (3, 0));
    // (each a host request: the device and the host's file-system path)
    assert_eq!(first, 3 * (DEV_NS + FS_NS), "lookup, inode, data in turn");
    assert_eq!(r.fs.counters().metadata_reads, 2);
    // the same directory and inode cluster: cached
    r.submit(first, read_file(2, 0, files[5]));
    let second = r.run()[0].at - first;
    assert_eq!(second, DEV_NS + FS_NS);
    assert_eq!(r.dev_io(), (4, 0));
    // the 33rd file: its inode is in the next cluster, its directory cached
    r.submit(2 * first, read_file(3, 0, files[32]));
    r.run();
    assert_eq!(r.dev_io(), (6, 0));
    // a new directory (its file's inode in the cluster file 32 brought
    // in): two requests for it at once read its block once, the second
    // waiting for the first's read
    r.submit(3 * first, read_file(4, 0, files[40]));
    r.submit(3 * first, read_file(5, 1, files[40]));
    let d = r.run();
    assert_eq!(d.len(), 2);
    assert_eq!(r.fs.counters().metadata_reads, 4);
    assert_eq!(r.dev_io(), (6 + 1 + 2, 0));
    for x in &d {
        assert_eq!(
            x.at - 3 * first,
            2 * (DEV_NS + FS_NS),
            "both after the lookup"
        );
    }
    // a file made by the run, and a plain laid-out one, read no metadata
    let plain = r.fs.create_file(4096, Layout::Allocated).unwrap();
    r.submit(4 * first, read_file(6, 0, plain));
    assert_eq!(r.run()[0].at - 4 * first, DEV_NS + FS_NS);
    assert_eq!(r.fs.counters().metadata_reads, 4);
}

#[test]
fn a_cold_tree_on_tmpfs_or_pmfs_reads_nothing_more() {
    for kind in [FileSystem::Tmpfs, FileSystem::Pmfs] {
        let mut r = Rig::new(kind, cfg());
        let f = r.fs.create_tree_file(4096, 0, 1).unwrap();
        r.submit(0, read_file(1, 0, f));
        r.run();
        assert_eq!(r.fs.counters().metadata_reads, 0, "{kind:?}");
    }
}
