//! Where the file-system layer puts files and its log (issue 58 item 4):
//! the log at the start of mkfs.xfs's middle allocation group, a file
//! larger than the space before the log made of extents on both sides of
//! it, IO to such a file on the studies' 64 GB HASTE arrays and 80 GB
//! ioDrive landing on both sides and never in the log, and the error of a
//! file that does not fit naming the free space and the largest file.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use storlab_model::config::PresetStore;
use storlab_model::host::config::FileSystem;
use storlab_model::host::fs::behaviour::Layout;
use storlab_model::host::fs::config::FsConfig;
use storlab_model::host::fs::layer::FileLayer;
use storlab_model::host::fs::request::{FileOp, FileReq, FsError};
use storlab_model::host::fs::state::FS_TOKEN;
use storlab_model::host::io::{HostCx, IoDone};
use storlab_model::host::stack::Host;
use storlab_model::{Cx, DevRequest, Device, DeviceReport, Nanos, Op, SystemConfig};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// A preset's device, recording every request it is given.
struct Recorded {
    inner: Box<dyn Device>,
    seen: Arc<Mutex<Vec<(Op, u64, u64)>>>,
}

impl Device for Recorded {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        self.seen
            .lock()
            .unwrap()
            .push((req.op, req.offset, req.len));
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

/// XFS on a preset's device with its host, driven by a small event loop.
struct Rig {
    fs: FileLayer,
    host: Host,
    cx: HostCx,
    heap: BinaryHeap<Reverse<(Nanos, u64, u64)>>,
    seq: u64,
    done: Vec<IoDone>,
    seen: Arc<Mutex<Vec<(Op, u64, u64)>>>,
}

const THREADS: u32 = 16;

impl Rig {
    fn preset(name: &str, kind: FileSystem) -> Rig {
        let (_, sys) = SystemConfig::load(&PresetStore::default(), name, &[]).expect("preset");
        let mut hc = sys.host.clone();
        hc.file_system = kind;
        let inner = sys.build_device().expect("device");
        let cap = inner.capacity();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let dev = Recorded {
            inner,
            seen: seen.clone(),
        };
        let host = Host::new(hc, Box::new(dev), THREADS + 1);
        Rig {
            fs: FileLayer::new(kind, sys.fs.clone().unwrap_or_default(), cap, THREADS),
            host,
            cx: HostCx::default(),
            heap: BinaryHeap::new(),
            seq: 0,
            done: Vec::new(),
            seen,
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

    /// Run the events before `end` (at most `max_events` in all).
    fn run_until(&mut self, end: Nanos, max_events: u64) {
        let mut events = 0;
        while let Some(&Reverse((t, _, tok))) = self.heap.peek() {
            if t >= end {
                break;
            }
            self.heap.pop();
            events += 1;
            assert!(events <= max_events, "no end after {max_events} events");
            if tok & FS_TOKEN == FS_TOKEN {
                self.fs.on_event(t, tok, &mut self.host, &mut self.cx);
            } else {
                self.host.on_event(t, tok, &mut self.cx);
                self.fs.absorb(t, &mut self.host, &mut self.cx);
            }
            self.queue();
        }
    }
}

fn req(id: u64, thread: u32, op: FileOp, file: u32, offset: u64, len: u64) -> FileReq {
    FileReq {
        id,
        thread,
        op,
        file,
        offset,
        len,
        direct: true,
        fua: false,
        poll: false,
    }
}

/// A file of `size` bytes on `preset` through XFS, used by 16 threads:
/// direct 4 KiB random writes and reads over the whole file, a direct
/// 64 KiB write across the first extent's end and a buffered one written
/// back by fsync. Every request completes; the device sees IO before and
/// after the log, and none of the file's IO touches the log (its writes
/// there are the log's own).
fn big_file_is_made_and_used(preset: &str, size: u64) {
    const MS: Nanos = 1_000_000;
    let mut r = Rig::preset(preset, FileSystem::Xfs);
    let (log, log_len) = r.fs.log_range();
    // sparse (fio's fallocate=none): writes allocate, and the log fills
    let f = r.fs.create_file(size, Layout::Sparse).expect("fits");
    let ext = r.fs.extents(f).to_vec();
    assert!(ext.len() >= 2, "{preset}: {ext:?}");
    for &(b, n) in &ext {
        assert!(
            b + n <= log || b >= log + log_len,
            "{preset}: {ext:?} log {log}"
        );
    }
    let total: u64 = ext.iter().map(|e| e.1).sum();
    assert!(total >= size, "{preset}: {ext:?}");
    let mut id = 0;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..8u64 {
        r.run_until(round * MS, 10_000_000);
        for t in 0..THREADS {
            // a deterministic spread over the whole file
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let offset = (x >> 11) % (size / 4096) * 4096;
            let op = if (t + round as u32).is_multiple_of(2) {
                FileOp::Write
            } else {
                FileOp::Read
            };
            r.submit(round * MS, req(id, t, op, f, offset, 4096));
            id += 1;
        }
    }
    // writes that start 32 KiB before the end of the first extent: one
    // direct, one buffered and written back by an fsync
    let across = ext[0].1 - 32 * 1024;
    let first_end = ext[0].0 + ext[0].1;
    r.run_until(9 * MS, 10_000_000);
    r.submit(9 * MS, req(id, 0, FileOp::Write, f, across, 64 * 1024));
    id += 1;
    r.run_until(10 * MS, 10_000_000);
    let piece = |r: &Rig, from: usize, at: u64| {
        r.seen.lock().unwrap()[from..].contains(&(Op::Write, at, 32 * 1024))
    };
    // the direct write went as two pieces, one ending at the extent's end
    // and one at the start of the next extent
    assert!(
        piece(&r, 0, first_end - 32 * 1024),
        "{preset}: before the end"
    );
    assert!(piece(&r, 0, ext[1].0), "{preset}: after it");
    let mark = r.seen.lock().unwrap().len();
    let buffered = FileReq {
        direct: false,
        ..req(id, 1, FileOp::Write, f, across, 64 * 1024)
    };
    r.submit(10 * MS, buffered);
    id += 1;
    r.run_until(11 * MS, 10_000_000);
    r.submit(11 * MS, req(id, 1, FileOp::Fsync, f, 0, 0));
    id += 1;
    r.run_until(Nanos::MAX, 10_000_000);
    // the writeback stopped at the extent's end too
    assert!(
        piece(&r, mark, first_end - 32 * 1024),
        "{preset}: writeback before"
    );
    assert!(piece(&r, mark, ext[1].0), "{preset}: writeback after");
    let done = std::mem::take(&mut r.done);
    assert_eq!(done.len() as u64, id, "{preset}: every request completes");
    let seen = r.seen.lock().unwrap().clone();
    let in_log = |o: u64| o >= log && o < log + log_len;
    assert!(
        seen.iter().any(|&(op, o, _)| op != Op::Flush && o < log),
        "{preset}: IO before the log"
    );
    assert!(
        seen.iter().any(|&(_, o, _)| o >= log + log_len),
        "{preset}: IO after the log"
    );
    // the file's IO never touches the log: every IO lies on one side of
    // it, and the writes in it are the log's own
    for &(op, o, n) in &seen {
        if op != Op::Flush && !in_log(o) {
            assert!(
                o + n <= log || o >= log + log_len,
                "{preset}: {op:?} {o}+{n}"
            );
        }
        assert!(!(op == Op::Read && in_log(o)), "{preset}: read {o}");
    }
    let log_writes = seen
        .iter()
        .filter(|&&(op, o, _)| op == Op::Write && in_log(o))
        .count() as u64;
    assert!(log_writes > 0, "{preset}: the fsync forced the log");
    assert_eq!(log_writes, r.fs.counters().journal_writes, "{preset}");
}

#[test]
fn a_60_gib_file_on_haste_dram_spans_the_log() {
    big_file_is_made_and_used("haste-dram", 60 * GIB);
}

#[test]
fn a_60_gib_file_on_haste_pcm_spans_the_log() {
    big_file_is_made_and_used("haste-pcm", 60 * GIB);
}

#[test]
fn a_60_gib_file_on_haste_sttm_spans_the_log() {
    big_file_is_made_and_used("haste-sttm", 60 * GIB);
}

#[test]
fn a_75_gb_file_on_the_iodrive_spans_the_log() {
    big_file_is_made_and_used("fusion-io", 75_000_000_000);
}

#[test]
fn the_log_sits_at_the_start_of_the_middle_allocation_group() {
    let at = |cap: u64| FileLayer::new(FileSystem::Xfs, FsConfig::default(), cap, 0).log_range();
    // 64 GiB: 4 AGs of 16 GiB, the log at AG 2
    assert_eq!(at(64 * GIB), (32 * GIB, 64 * MIB));
    // 80 GB: 19,531,250 blocks, AGs of ceil(/4) = 4,882,813 blocks
    assert_eq!(at(80_000_000_000).0, 2 * 4_882_813 * 4096);
    // 48 MiB (32-64 MB: 2 AGs of 24 MiB): a 4 MiB log starts AG 1
    let small = FsConfig {
        log_region_bytes: 4 * MIB,
        ..FsConfig::default()
    };
    let l = FileLayer::new(FileSystem::Xfs, small, 48 * MIB, 0);
    assert_eq!(l.log_range().0, 24 * MIB);
    // 5 TiB: 1 TiB AGs, 5 of them: AG 2 at 2 TiB
    assert_eq!(at(5 << 40).0, 2 << 40);
}

#[test]
fn a_file_that_fits_whole_takes_one_extent_and_larger_ones_take_the_rest() {
    let mut l = FileLayer::new(FileSystem::Xfs, FsConfig::default(), 64 * GIB, 0);
    let (log, log_len) = l.log_range();
    let a = l.create_file(20 * GIB, Layout::Allocated).unwrap();
    assert_eq!(l.extents(a), &[(0, 20 * GIB)]);
    // 12 GiB are left before the log: a 20 GiB file goes after it whole
    let b = l.create_file(20 * GIB, Layout::Allocated).unwrap();
    assert_eq!(l.extents(b), &[(log + log_len, 20 * GIB)]);
    // a third takes the 12 GiB before the log and 8 after the second
    let c = l.create_file(20 * GIB, Layout::Allocated).unwrap();
    assert_eq!(
        l.extents(c),
        &[(20 * GIB, 12 * GIB), (log + log_len + 20 * GIB, 8 * GIB)]
    );
    let free = 64 * GIB - log_len - 60 * GIB;
    assert_eq!(l.free_bytes(), free);
    assert_eq!(l.largest_file(), free);
    // the space a deleted file leaves is free again, merged
    l.delete_file(a);
    assert_eq!(l.free_bytes(), free + 20 * GIB);
    let d = l.create_file(20 * GIB, Layout::Allocated).unwrap();
    assert_eq!(l.extents(d), &[(0, 20 * GIB)]);
}

#[test]
fn a_file_too_large_is_refused_naming_the_free_space_and_what_fits() {
    let mut l = FileLayer::new(FileSystem::Xfs, FsConfig::default(), 64 * GIB, 0);
    l.create_file(10 * GIB, Layout::Allocated).unwrap();
    let free = 54 * GIB - 64 * MIB;
    let e = l.create_file(60 * GIB, Layout::Sparse).unwrap_err();
    assert_eq!(
        e,
        FsError::NoSpace {
            size: 60 * GIB,
            free,
            largest: free,
        }
    );
    let msg = e.to_string();
    assert!(
        msg.contains(&free.to_string()) && msg.contains("largest file that fits"),
        "{msg}"
    );
    // what it names does fit, filling the device
    l.create_file(free, Layout::Sparse)
        .expect("the largest fits");
    assert_eq!(l.free_bytes(), 0);
    assert!(l.create_file(4096, Layout::Empty).is_err());
}

#[test]
fn ext3s_largest_file_leaves_room_for_its_mapping_blocks() {
    let cap = 8 * GIB;
    let mk = || FileLayer::new(FileSystem::Ext3, FsConfig::default(), cap, 0);
    let l = mk();
    let free = l.free_bytes();
    let largest = l.largest_file();
    // one 4 KiB mapping block per 4 MiB of data
    assert!(
        largest < free && largest > free - free / 1000,
        "{largest} {free}"
    );
    assert!(mk().create_file(largest, Layout::Allocated).is_ok());
    match mk().create_file(largest + 4096, Layout::Allocated) {
        Err(FsError::NoSpace { largest: l2, .. }) => assert_eq!(l2, largest),
        other => panic!("{other:?}"),
    }
}
