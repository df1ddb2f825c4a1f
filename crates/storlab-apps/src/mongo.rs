//! MongoDB 2.x (mmapv1 storage) under YCSB workloads A to F (`ycsb-a` ..
//! `ycsb-f`; docs/spec/workloads.md and docs/spec/nvmm.md: 1,000 operations on 1,000
//! records of 1 KB).
//!
//! MongoDB keeps its data in memory-mapped files: a read is loads from
//! mapped pages, a write is stores that dirty them. Two write concerns
//! (YCSB's `mongodb.writeConcern`, parameter `mode`):
//! - `fsync-safe` (FSYNC_SAFE): after every write, `getLastError` with
//!   `fsync: true` msyncs the mapped files (`MemoryMappedFile::flushAll`);
//!   no journal (docs/spec/nvmm.md: "FSYNC_SAFE mode syncs the data file after
//!   every write");
//! - `journaled` (JOURNALED, `j: true`): the write is acknowledged once
//!   the journal thread has written and synced a journal section that
//!   holds it; the data files are flushed lazily (`syncdelay`).
//!
//! Where the files live decides how loads, stores and msyncs cost:
//! - on NVMM (the `nvmm` device class, PMFS, direct access): loads that
//!   miss the CPU caches stall for the NVMM read latency, stores cost
//!   their bytes at the throttled bandwidth, and msync is the NVMM class's
//!   sync (`storlab_pmem::model::NvmmParams::sync_plan`/`sync_cost`, the
//!   code the `nvmm` device prices fio's fsync with): M_SYNC picks the
//!   lines (every line of the file, or SPF's dirty pages), M_FLUSH prices
//!   them, then a fence and L_WBAR. Lines flushed with clflush,
//!   clflushopt or WOF leave the CPU caches, so the next loads of them
//!   miss to NVMM again;
//! - on any other device: the files are in the page cache of the file
//!   system (ext4 on SSD and disk in the NVMM study, tmpfs on DRAM, XFS
//!   elsewhere by default): stores dirty page-cache pages (a buffered
//!   write of the bytes), msync is an fsync of each mapped file (its dirty
//!   pages written back, the file system's journal, the device's cache
//!   flush).

use std::collections::BTreeSet;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::{Layout, PAGE};
use storlab_model::host::FileSystem;
use storlab_pmem::model::{FlushMode, NvmmParams, Preset, SyncMode};

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{FileIo, LogSpec, LogSync, MetricKind, Model, PlanCx, SetupCx, Step};

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "mode",
        default: "fsync-safe",
        help: "YCSB's MongoDB write concern: fsync-safe (msync the data files after every write, no journal) or journaled (wait for the journal's group commit)",
    },
    ParamDef {
        name: "records",
        default: "1000",
        help: "records loaded before the run (docs/spec/workloads.md: 1,000), scaled by `scale`",
    },
    ParamDef {
        name: "operations",
        default: "1000",
        help: "operations in all client threads together (docs/spec/workloads.md: 1,000)",
    },
    ParamDef {
        name: "record",
        default: "1k",
        help: "bytes of a record's fields (YCSB: 10 fields of 100 bytes)",
    },
    ParamDef {
        name: "clients",
        default: "1",
        help: "YCSB client threads (YCSB's default 1: ESTIMATE, the study does not say)",
    },
    ParamDef {
        name: "cpu_us",
        default: "100",
        help: "CPU per operation outside the data accesses, µs (ESTIMATE: YCSB's Java client and driver, the loopback TCP round trip and mongod's query path, ~250k instructions at IPC 1 on the PMEP's 2.6 GHz Xeons)",
    },
    ParamDef {
        name: "scan_record_us",
        default: "5",
        help: "extra CPU per record a scan returns, µs (ESTIMATE: BSON encoding in mongod and decoding in the client of 1 KB, ~13k instructions)",
    },
    ParamDef {
        name: "llc",
        default: "20m",
        help: "last-level cache the data set's lines compete for, bytes (docs/spec/nvmm.md: 40 MB on the PMEP's two sockets; one socket's 20 MB, where mongod runs)",
    },
    ParamDef {
        name: "commit_interval",
        default: "100ms",
        help: "journalCommitInterval, 2 ms to 300 ms (MongoDB 2.x default 100 ms with the journal and data on one volume); with a j:true write waiting the journal thread commits every third of it",
    },
    ParamDef {
        name: "syncdelay",
        default: "60s",
        help: "the data files' periodic flush (mongod --syncdelay, default 60 s)",
    },
];

/// The YCSB workloads (YCSB's workloads/workloada .. workloadf).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    A,
    B,
    C,
    D,
    E,
    F,
}

const MODELS: &[&str] = &[
    "YCSB core workloads: A 50 % read / 50 % update, B 95/5, C 100 % read, D 95 % read / 5 % insert (latest distribution: the newest records are the most popular), E 95 % scan (uniform length 1 to 100, YCSB's maxscanlength) / 5 % insert, F 50 % read / 50 % read-modify-write (two requests: a read, then an update); keys scrambled-zipfian (YCSB's default, theta 0.99) except D; an update sets one 100-byte field (YCSB's writeallfields=false)",
    "MongoDB 2.x mmapv1: records of `record` bytes plus a 16-byte record header and ~100 bytes of BSON field names and lengths, laid out in a 64 MB first data file (then files doubling, as mongod allocates them) and a 16 MB namespace file; the _id index is a B-tree of 8 KB buckets (~40 bytes a key at 90 % fill) in the data files",
    "a read walks the index root to leaf (8 dependent line misses per bucket: its binary search) and loads the record (one exposed miss, the rest at bandwidth); an update also stores the field (dirtying its page) under the global write lock (MongoDB 2.x's database lock: writers serialise); an insert stores the record, the key into its leaf bucket (keys after it shift: a quarter of the bucket's bytes, ESTIMATE for an insert into the middle of a 90 %-full bucket of key headers and key data) and the collection's counters in the namespace file",
    "fsync-safe: after the write, msync of each mapped file (data and namespace): on NVMM the NVMM class's sync over the whole file (default M_SYNC: every line; SPF: the pages written since the last sync) plus the system call; elsewhere fsync of each file",
    "journaled: the write's journal record (its bytes, 20 bytes of write intent and section headers) joins the journal; while a j:true write waits, the journal thread commits every third of journalCommitInterval (MongoDB 2.4's dur.cpp durThread sleeps interval/3 + 1 ms, then commits when a waiter is pending; the 2.x manual: 'mongod will reduce journalCommitInterval to a third of the set value'; the interval's default is 100 ms with journal and data on one volume, 30 ms on separate ones): 34 ms; it writes the section rounded to 8 KB with O_DIRECT and fdatasyncs it (buffered on tmpfs; on PMFS the write itself is durable: non-temporal copies and a fence); the writer waits for that commit, after releasing the write lock; the data files are flushed every `syncdelay`",
    "CPU caches: a line stays cached once loaded unless an NVMM msync flushed it with clflush, clflushopt or WOF (they evict; clwb keeps it); when the data set exceeds `llc`, a share 1 - llc/data set of cached loads misses anyway; a miss costs L_READ on NVMM, PMEP's DRAM latency (the pdram configuration's 150 ns) elsewhere",
];

const SIMPLIFIES: &[&str] = &[
    "the data set starts loaded and resident (YCSB's load phase wrote it): no page faults on the page-cache path, and every line cached",
    "a store into a mapped page of a block device's file system (ext4, XFS) is issued as a buffered write of its bytes (it dirties the same pages for writeback; its system-call and copy cost stand for the page_mkwrite fault of the first store to a page writeback cleaned); on tmpfs it is a DRAM store",
    "readers do not wait for the write lock (with YCSB's one client thread there is nothing to wait for); the msync happens after the write lock is released",
    "mmapv1's record moves (an update that grows a record) do not happen: YCSB's updates replace a field of the same size; bucket splits are not modelled (5 % inserts into 1,000 records)",
    "only the test database's files are mapped (no local database); the next data file is not preallocated",
    "the journal file is at most a quarter of the device (MongoDB preallocates 1 GB journal files; only the part the run writes matters)",
    "on NVMM, the memory channels' bandwidth is not shared with other threads' accesses (one client thread); the cost of an msync is computed when the operation is planned",
    "scrambled zipfian: YCSB's zipfian over the record count with the rank FNV-hashed onto the keys (YCSB draws over 10^10 items before hashing)",
];

/// `ycsb-a` .. `ycsb-f`.
pub static APPS: &[&AppInfo] = &[&YCSB_A, &YCSB_B, &YCSB_C, &YCSB_D, &YCSB_E, &YCSB_F];

const CALIBRATION: &str = "none (no Table V figure for MongoDB): cpu_us and scan_record_us are ESTIMATEs; the device-dependent part (msync, journal commit, NVMM loads and stores) comes from the device's model";

macro_rules! ycsb {
    ($id:ident, $name:literal, $summary:literal, $w:expr) => {
        static $id: AppInfo = AppInfo {
            name: $name,
            summary: $summary,
            unit: "operations/s",
            models: MODELS,
            simplifies: SIMPLIFIES,
            calibration: CALIBRATION,
            params: PARAMS,
            build: |p| build(p, $w),
        };
    };
}

ycsb!(
    YCSB_A,
    "ycsb-a",
    "MongoDB (mmapv1) under YCSB A: 50 % read, 50 % update",
    Workload::A
);
ycsb!(
    YCSB_B,
    "ycsb-b",
    "MongoDB (mmapv1) under YCSB B: 95 % read, 5 % update",
    Workload::B
);
ycsb!(
    YCSB_C,
    "ycsb-c",
    "MongoDB (mmapv1) under YCSB C: 100 % read",
    Workload::C
);
ycsb!(
    YCSB_D,
    "ycsb-d",
    "MongoDB (mmapv1) under YCSB D: 95 % read (latest), 5 % insert",
    Workload::D
);
ycsb!(
    YCSB_E,
    "ycsb-e",
    "MongoDB (mmapv1) under YCSB E: 95 % short scans, 5 % insert",
    Workload::E
);
ycsb!(
    YCSB_F,
    "ycsb-f",
    "MongoDB (mmapv1) under YCSB F: 50 % read, 50 % read-modify-write",
    Workload::F
);

/// Record header of mmapv1 (length, extent offset, next and previous
/// record offsets): 16 bytes (MongoDB 2.x db/pdfile.h `Record`).
const RECORD_HEADER: u64 = 16;
/// BSON overhead of YCSB's record: `_id` ("user" + up to 19 digits),
/// ten field names ("field0".."field9") with type bytes, string lengths
/// and terminators, the document's length: ~100 bytes (ESTIMATE from the
/// BSON spec: 10 x (1 + 7 + 4 + 1) + 30 + 5).
const BSON_OVERHEAD: u64 = 100;
/// YCSB's field: 100 bytes (fieldlength default).
const FIELD: u64 = 100;
/// Index bucket (mmapv1 `BtreeBucket`): 8 KB.
const BUCKET: u64 = 8192;
/// Bytes per key in a bucket: the key (~28-byte string in BSON), its
/// 8-byte record location and 4-byte key-node header: ~40 (ESTIMATE).
const INDEX_KEY: u64 = 40;
/// Dependent line misses to search one bucket: binary search over ~180
/// key headers (log2 180 ≈ 8).
const BUCKET_MISSES: u64 = 8;
/// Namespace file: 16 MB (mongod's default `--nssize`).
const NS_FILE: u64 = 16 << 20;
/// First data file 64 MB, each next one twice as big up to 2 GB (mmapv1).
const FIRST_DATA_FILE: u64 = 64 << 20;
/// Journal write intent per operation plus section header/footer share:
/// ~20 bytes of `JEntry` per write intent (MongoDB 2.x dur_journalformat.h).
const JOURNAL_ENTRY: u64 = 20;
/// Journal sections are aligned to 8 KB (dur_journalformat.h
/// `Alignment`).
const JOURNAL_ALIGN: u64 = 8192;
/// Cache line, bytes (x86-64).
const LINE: u64 = 64;
/// YCSB's zipfian constant.
const ZIPF_THETA: f64 = 0.99;
/// YCSB's maxscanlength default.
const MAX_SCAN: u64 = 100;

/// Keys in an index bucket at 90 % fill.
fn keys_per_bucket() -> u64 {
    (BUCKET * 9 / 10 / INDEX_KEY).max(2)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    FsyncSafe,
    Journaled,
}

fn build(p: &Params, w: Workload) -> Result<AppKind, AppError> {
    let mode = match p.choice("mode", &["fsync-safe", "journaled"])? {
        "fsync-safe" => Mode::FsyncSafe,
        _ => Mode::Journaled,
    };
    let records = p.scaled(p.u64("records", 1, 1 << 32)?, 1);
    let record_fields = p.u64("record", FIELD, 16 << 20)?;
    let cpu_us = p.f64("cpu_us")?;
    if !(0.0..=1e7).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 10,000,000"));
    }
    let scan_us = p.f64("scan_record_us")?;
    if !(0.0..=1e7).contains(&scan_us) {
        return Err(p.bad("scan_record_us", "must be from 0 to 10,000,000"));
    }
    let interval = p.time_ns("commit_interval", 1000)?;
    if !(2_000_000..=300_000_000).contains(&interval) {
        return Err(p.bad(
            "commit_interval",
            "must be from 2 ms to 300 ms (MongoDB's accepted range)",
        ));
    }
    let syncdelay = p.time_ns("syncdelay", 1_000_000)?;
    if syncdelay == 0 {
        return Err(p.bad("syncdelay", "must be above 0"));
    }
    let clients = p.threads(p.u64("clients", 1, 4096)? as u32);
    let operations = p.u64("operations", 1, 1 << 40)?;
    // inserts grow the collection: room for every operation to insert
    let max_records = records + operations;
    let slot = record_fields + BSON_OVERHEAD + RECORD_HEADER;
    let buckets = max_records.div_ceil(keys_per_bucket()).max(1) * 2;
    let levels = crate::kit::btree_levels(records, keys_per_bucket()).max(1) as u64;
    let data_bytes = max_records * slot + buckets * BUCKET;
    let mut data_file = 0;
    let mut next = FIRST_DATA_FILE;
    while data_file < data_bytes {
        data_file += next;
        next = (next * 2).min(2 << 30);
    }
    Ok(AppKind::Closed(Box::new(Mongo {
        w,
        mode,
        records,
        inserted: 0,
        slot,
        levels,
        index_base: max_records * slot,
        data_file_bytes: data_file,
        cpu_ns: (cpu_us * 1000.0).round() as u64,
        scan_ns: (scan_us * 1000.0).round() as u64,
        llc: p.u64("llc", 0, 1 << 40)?,
        // dur.cpp: `unsigned oneThird = (ms / 3) + 1;` in whole ms
        third_ns: (interval / 1_000_000 / 3 + 1) * 1_000_000,
        syncdelay_ns: syncdelay,
        clients,
        operations,
        started: 0,
        rng: Pcg64Mcg::seed_from_u64(0),
        zipf: Zipfian::new(records.max(1), ZIPF_THETA),
        files: [0, 0],
        journal: 0,
        mem: NvmmParams::preset(Preset::Pdram),
        direct_access: false,
        memory_store: false,
        file_pages: [0, 0],
        dirty: [BTreeSet::new(), BTreeSet::new()],
        evicted: [Vec::new(), Vec::new()],
        miss_share: 0.0,
        syscall_ns: 0,
        bg_phase: [false, false],
        counts: Counts::default(),
    })))
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    msyncs: u64,
    lines_flushed: u64,
    msync_ns: u64,
    line_misses: u64,
    journal_commits: u64,
}

struct Mongo {
    w: Workload,
    mode: Mode,
    records: u64,
    inserted: u64,
    slot: u64,
    levels: u64,
    /// Offset of the index buckets in the data file.
    index_base: u64,
    data_file_bytes: u64,
    cpu_ns: u64,
    scan_ns: u64,
    llc: u64,
    /// A third of journalCommitInterval, whole ms, +1 ms (dur.cpp).
    third_ns: u64,
    syncdelay_ns: u64,
    clients: u32,
    operations: u64,
    started: u64,
    rng: Pcg64Mcg,
    zipf: Zipfian,
    /// Data file, namespace file.
    files: [u32; 2],
    journal: u32,
    /// NVMM pricing, when the files are on NVMM through PMFS.
    /// Memory pricing: the NVMM device's parameters on NVMM through
    /// PMFS; PMEP's DRAM (the pdram configuration's latency and
    /// bandwidth) otherwise.
    mem: NvmmParams,
    /// The files are on NVMM through PMFS (loads and stores reach NVMM,
    /// msync is the NVMM class's sync).
    direct_access: bool,
    /// The files are in tmpfs: stores are plain DRAM stores (nothing is
    /// ever written back).
    memory_store: bool,
    file_pages: [u64; 2],
    /// Pages written since their last SPF sync, per file.
    dirty: [BTreeSet<u64>; 2],
    /// Per page: an msync's flushes evicted its lines from the CPU caches
    /// and no load has brought them back since.
    evicted: [Vec<bool>; 2],
    /// Share of cached loads that miss anyway (data set over the LLC).
    miss_share: f64,
    syscall_ns: u64,
    /// Background threads: the next round is a sleep (false) or the work.
    bg_phase: [bool; 2],
    counts: Counts,
}

const OPS: &[&str] = &[
    "read",
    "update",
    "insert",
    "scan",
    "read-modify-write",
    "journal-commit",
    "datafile-sync",
];

impl Mongo {
    /// Which record an operation picks.
    fn next_key(&mut self) -> u64 {
        let n = self.records + self.inserted;
        match self.w {
            Workload::D => {
                // YCSB's SkewedLatestGenerator: newest first
                let r = self.zipf.next(&mut self.rng).min(n - 1);
                n - 1 - r
            }
            _ => fnv64(self.zipf.next(&mut self.rng)) % self.records,
        }
    }

    /// Cost of loading `lines` lines of page `page` of file `f`, of which
    /// `dependent` are exposed one after another (pointer chasing), ns.
    fn load(&mut self, f: usize, off: u64, bytes: u64, dependent: u64) -> u64 {
        let m = &self.mem;
        let page = (off / PAGE) as usize;
        let cached = self.evicted[f].get(page).is_some_and(|&e| !e);
        let lines = bytes.div_ceil(LINE).max(1);
        let share = if cached { self.miss_share } else { 1.0 };
        // the page's lines are cached again once loaded
        let last = ((off + bytes.max(1) - 1) / PAGE) as usize;
        for pg in page..=last.min(self.evicted[f].len().saturating_sub(1)) {
            self.evicted[f][pg] = false;
        }
        if share == 0.0 {
            return 0;
        }
        self.counts.line_misses += (lines as f64 * share).round() as u64;
        let exposed = dependent.min(lines) as f64 * share;
        let ns = exposed * m.read_latency_ns() + m.read_ns(bytes, 0) as f64 * share;
        ns.round() as u64
    }

    /// A store of `bytes` at `off` in file `f`: on NVMM its bandwidth (the
    /// dirty page is remembered for SPF), on tmpfs DRAM's; on a block
    /// device's file system a buffered write.
    fn store(&mut self, f: usize, off: u64, bytes: u64, cx: &mut PlanCx, mem_ns: &mut u64) {
        if self.direct_access {
            *mem_ns += self.mem.write_ns(bytes);
            for pg in off / PAGE..=(off + bytes.max(1) - 1) / PAGE {
                self.dirty[f].insert(pg);
            }
        } else if self.memory_store {
            *mem_ns += self.mem.write_ns(bytes);
        } else {
            cx.push(Step::Io(FileIo::write(self.files[f], off, bytes)));
        }
    }

    /// msync of every mapped file (MongoDB's flushAll): steps into `cx`.
    fn msync_all(&mut self, cx: &mut PlanCx) {
        self.counts.msyncs += 1;
        if !self.direct_access {
            for f in self.files {
                cx.push(Step::Io(FileIo::fsync(f)));
            }
            return;
        }
        let m = self.mem.clone();
        let mut ns = 0;
        let evicts = m.m_flush != FlushMode::Clwb;
        for f in 0..2 {
            let dirty: Vec<u64> = self.dirty[f].iter().copied().collect();
            let len = self.file_pages[f] * PAGE;
            let plan = m.sync_plan(0, len, &dirty);
            let cost = m.sync_cost(&plan);
            ns += self.syscall_ns + cost.total_ns();
            self.counts.lines_flushed += cost.lines_flushed;
            match plan.mode {
                SyncMode::Default => {
                    // every line of the file was flushed (default msync
                    // neither reads nor needs the dirty pages)
                    if evicts {
                        self.evicted[f].iter_mut().for_each(|e| *e = true);
                    }
                    self.dirty[f].clear();
                }
                SyncMode::Spf => {
                    for &pg in &dirty {
                        if pg >= plan.clear_first && pg < plan.clear_end {
                            self.dirty[f].remove(&pg);
                            if evicts {
                                self.evicted[f][pg as usize] = true;
                            }
                        }
                    }
                }
            }
        }
        self.counts.msync_ns += ns;
        push_mem(cx, ns);
    }

    /// Index walk to the leaf of `key`, root first: ns of loads.
    fn index_walk(&mut self, key: u64) -> u64 {
        let mut ns = 0;
        let kpb = keys_per_bucket();
        let leaves = self.index_bytes() / BUCKET / 2;
        let leaf = key / kpb;
        for lv in 0..self.levels {
            let below = self.levels - 1 - lv;
            // leaves first in the index's space, internal buckets after
            let bucket = if below == 0 {
                leaf
            } else {
                leaves + leaf / kpb.pow(below as u32).max(1)
            };
            let off = self.index_base + (bucket * BUCKET).min(self.index_bytes() - BUCKET);
            ns += self.load(0, off, BUCKET_MISSES * LINE, BUCKET_MISSES);
        }
        ns
    }

    fn index_bytes(&self) -> u64 {
        (self.data_file_bytes - self.index_base).max(BUCKET)
    }

    fn record_off(&self, key: u64) -> u64 {
        key * self.slot
    }

    fn read(&mut self, key: u64) -> u64 {
        let ns = self.index_walk(key);
        let off = self.record_off(key);
        ns + self.load(0, off, self.slot, 1)
    }

    fn write_begin(&mut self, cx: &mut PlanCx) {
        cx.push(Step::Lock(0));
    }

    /// After the write lock is released: make the write durable.
    fn write_end(&mut self, bytes: u64, cx: &mut PlanCx) {
        cx.push(Step::Unlock(0));
        match self.mode {
            Mode::FsyncSafe => self.msync_all(cx),
            Mode::Journaled => cx.push(Step::Append {
                log: self.journal,
                bytes: bytes + JOURNAL_ENTRY,
            }),
        }
    }

    fn background(&mut self, b: usize, cx: &mut PlanCx) -> bool {
        let work = self.bg_phase[b];
        self.bg_phase[b] = !work;
        match (b, work) {
            (0, false) => cx.push(Step::Sleep(self.syncdelay_ns)),
            (0, true) => {
                self.msync_all(cx);
                cx.push(Step::End(6));
            }
            (_, false) => cx.push(Step::Sleep(self.third_ns)),
            (_, true) => {
                self.counts.journal_commits += 1;
                cx.push(Step::FlushLog(self.journal));
                cx.push(Step::End(5));
            }
        }
        true
    }
}

impl Model for Mongo {
    fn op_names(&self) -> &'static [&'static str] {
        OPS
    }

    fn counted(&self, kind: u16) -> bool {
        kind < 5
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        match self.mode {
            Mode::FsyncSafe => (self.clients, 1),
            Mode::Journaled => (self.clients, 2),
        }
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x6d6f6e676f);
        let fs = cx.host().file_system;
        self.direct_access = fs == FileSystem::Pmfs && cx.nvmm().is_some();
        self.memory_store = fs == FileSystem::Tmpfs;
        if let (true, Some(n)) = (self.direct_access, cx.nvmm()) {
            self.mem = n.clone();
        }
        let h = cx.host();
        self.syscall_ns = h.syscall_entry_ns.write + h.syscall_exit_ns.write;
        self.files[0] = cx.create_file(self.data_file_bytes, Layout::Allocated)?;
        self.files[1] = cx.create_file(NS_FILE, Layout::Allocated)?;
        self.file_pages = [self.data_file_bytes / PAGE, NS_FILE / PAGE];
        self.evicted = [
            vec![false; self.file_pages[0] as usize],
            vec![false; self.file_pages[1] as usize],
        ];
        let working = (self.records * self.slot + self.index_bytes().min(self.records * 64)) as f64;
        self.miss_share = if self.llc as f64 >= working {
            0.0
        } else {
            1.0 - self.llc as f64 / working
        };
        if self.mode == Mode::Journaled {
            let size = (1u64 << 30).min(cx.capacity() / 4) / JOURNAL_ALIGN * JOURNAL_ALIGN;
            let size = size.max(JOURNAL_ALIGN);
            let file = cx.create_file(size, Layout::Allocated)?;
            let (direct, sync) = match fs {
                // PMFS: the write is durable when it returns
                FileSystem::Pmfs => (false, LogSync::Dsync),
                // tmpfs has no O_DIRECT
                FileSystem::Tmpfs => (false, LogSync::Fsync),
                _ => (true, LogSync::Fsync),
            };
            self.journal = cx.log(LogSpec {
                file,
                size,
                block: JOURNAL_ALIGN,
                direct,
                sync,
                rotate: None,
                rewrite_last_block: false,
            });
        }
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if t >= self.clients {
            return Ok(self.background((t - self.clients) as usize, cx));
        }
        if self.started >= self.operations {
            return Ok(false);
        }
        self.started += 1;
        let x: f64 = self.rng.gen();
        let (read_p, update_p, insert_p, scan_p) = match self.w {
            Workload::A => (0.5, 0.5, 0.0, 0.0),
            Workload::B => (0.95, 0.05, 0.0, 0.0),
            Workload::C => (1.0, 0.0, 0.0, 0.0),
            Workload::D => (0.95, 0.0, 0.05, 0.0),
            Workload::E => (0.0, 0.0, 0.05, 0.95),
            Workload::F => (0.5, 0.0, 0.0, 0.0),
        };
        cx.push(Step::Cpu(self.cpu_ns));
        let mut mem = 0;
        let kind: u16;
        if x < read_p {
            kind = 0;
            let k = self.next_key();
            mem += self.read(k);
            push_mem(cx, mem);
        } else if x < read_p + scan_p {
            kind = 3;
            let k = self.next_key();
            let len = self.rng.gen_range(1..=MAX_SCAN);
            mem += self.index_walk(k);
            for i in 0..len {
                // the index is in key order; the records are scattered
                let r = fnv64(k + i) % (self.records + self.inserted);
                let off = self.record_off(r);
                mem += self.load(0, off, self.slot, 1);
            }
            cx.push(Step::Cpu(self.scan_ns * len));
            push_mem(cx, mem);
        } else if x < read_p + scan_p + insert_p {
            kind = 2;
            let k = self.records + self.inserted;
            if k < self.records + self.operations {
                self.inserted += 1;
            }
            self.write_begin(cx);
            mem += self.index_walk(k);
            let off = self.record_off(k);
            self.store(0, off, self.slot, cx, &mut mem);
            let leaf = self.index_base + (k / keys_per_bucket()) * BUCKET;
            let leaf = leaf.min(self.data_file_bytes - BUCKET);
            self.store(0, leaf, BUCKET / 4, cx, &mut mem);
            // the collection's counters (NamespaceDetails::stats)
            self.store(1, 0, 16, cx, &mut mem);
            push_mem(cx, mem);
            self.write_end(self.slot, cx);
        } else {
            // update (A, B) or read-modify-write (F)
            kind = if update_p > 0.0 { 1 } else { 4 };
            let k = self.next_key();
            if kind == 4 {
                // YCSB's read-modify-write is two requests: a read, then
                // an update
                mem += self.read(k);
                push_mem(cx, std::mem::take(&mut mem));
                cx.push(Step::Cpu(self.cpu_ns));
            }
            self.write_begin(cx);
            mem += self.index_walk(k);
            let field = self
                .rng
                .gen_range(0..(self.slot - RECORD_HEADER) / FIELD)
                .min(9);
            let off = self.record_off(k) + RECORD_HEADER + field * FIELD;
            self.store(0, off, FIELD, cx, &mut mem);
            push_mem(cx, mem);
            self.write_end(FIELD, cx);
        }
        cx.push(Step::End(kind));
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "mode": match self.mode { Mode::FsyncSafe => "fsync-safe", Mode::Journaled => "journaled" },
            "direct_access": self.direct_access,
            "records": self.records,
            "inserted": self.inserted,
            "data_file_bytes": self.data_file_bytes,
            "index_levels": self.levels,
            "msyncs": self.counts.msyncs,
            "nvmm_lines_flushed": self.counts.lines_flushed,
            "nvmm_msync_ns_mean": self.counts.msync_ns as f64 / self.counts.msyncs.max(1) as f64,
            "nvmm_line_misses": self.counts.line_misses,
            "journal_rounds": self.counts.journal_commits,
            "llc_miss_share": self.miss_share,
        })
    }
}

/// A memory stall, when there is one.
fn push_mem(cx: &mut PlanCx, ns: u64) {
    if ns > 0 {
        cx.push(Step::Mem(ns));
    }
}

/// FNV-1a 64 of a number's eight bytes (YCSB's `Utils.FNVhash64`, which
/// scrambles zipfian ranks onto keys).
pub(crate) fn fnv64(v: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut v = v;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        v >>= 8;
    }
    h
}

/// YCSB's `ZipfianGenerator` (Gray et al., "Quickly generating
/// billion-record synthetic databases", SIGMOD 1994): ranks `0..n`, rank
/// 0 the most popular. Hand-written so the draws follow YCSB's algorithm
/// (rand_distr's `Zipf` is a different sampler with different tails for
/// theta below 1).
#[derive(Clone, Debug)]
pub(crate) struct Zipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Over `n` items with constant `theta` (0 < theta < 1).
    pub(crate) fn new(n: u64, theta: f64) -> Self {
        // zeta(n) = sum 1/i^theta: exact up to 10^6 items, then the
        // integral's tail (the sum's terms vary slowly there)
        let exact = n.min(1_000_000);
        let mut zetan: f64 = (1..=exact).map(|i| 1.0 / (i as f64).powf(theta)).sum();
        if n > exact {
            let a = exact as f64 + 0.5;
            let b = n as f64 + 0.5;
            zetan += (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        }
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipfian {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
        }
    }

    /// The next rank.
    pub(crate) fn next(&self, rng: &mut Pcg64Mcg) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 || self.n < 2 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

#[cfg(test)]
mod tests;
