//! RocksDB (`rocksdb`): db_bench's `fillrandom` (puts of random keys,
//! each synced when `sync=1`) then `readrandom` (gets of random keys), as
//! the real program `storlab app run rocksdb` runs them (crates/storlab/
//! src/app/rocksdb.rs: RocksDB 7.8's db_bench with its defaults). No study
//! measured RocksDB: the model exists so that `storlab app check rocksdb`
//! can hold it against the real program on the same emulated device
//! (issue 57).
//!
//! A put (RocksDB wiki, "Write Ahead Log", "MemTable", "Leveled
//! Compaction"; db/db_impl/db_impl_write.cc): the write group's leader
//! appends every waiting writer's batch to the WAL (one buffered write;
//! a record is the 7-byte log header, the 12-byte batch header and the
//! key and value with their lengths) and, with `sync`, fdatasyncs it
//! (`use_fsync` false); then each batch goes into the memtable. WAL files
//! are preallocated with fallocate(FALLOC_FL_KEEP_SIZE)
//! (`allow_fallocate`, PosixWritableFile::Allocate), so each sync also
//! commits the file's new size and converted extent through XFS's log.
//! A full memtable (`write_buffer_size`) becomes immutable and a new WAL
//! starts; writers stop while `max_write_buffer_number` memtables are
//! full, slow to `delayed_write_rate` at `level0_slowdown_writes_trigger`
//! L0 files and stop at `level0_stop_writes_trigger`.
//!
//! Background jobs (`max_background_jobs` 2: one flush, one compaction):
//! a flush writes the immutable memtable as an L0 table file (buffered
//! writes of `writable_file_max_buffer_size`, then fdatasync), records it
//! in the MANIFEST (append, fdatasync). Compaction is leveled: when L0
//! holds `level0_file_num_compaction_trigger` files they merge with the
//! whole of L1 (random keys: every file overlaps); when a level exceeds
//! its target (`max_bytes_for_level_base`, times the multiplier per
//! level) one of its files merges with the files of the next level its
//! key range overlaps. A merge reads its inputs sequentially, writes
//! files of `target_file_size_base`, syncs each, edits the MANIFEST and
//! deletes its inputs; keys present in both inputs are kept once.
//!
//! A get looks in the memtables, then in every L0 file (newest first)
//! and in one file of each deeper level, until it finds the key: without
//! a filter (db_bench's default `bloom_bits` -1 sets none) each table
//! searched costs a data block, from the block cache or read from the
//! file (buffered; RocksDB advises random access, so no read-ahead).

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::Layout;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{FileIo, LogSpec, LogSync, MetricKind, Model, PlanCx, SetupCx, Step};

/// Levels below L0 (RocksDB's default num_levels 7: L1 to L6).
const DEEP_LEVELS: usize = 6;
/// Sequential reads of a compaction's inputs, bytes a request (the
/// buffered reads of the table reader, merged by read-ahead).
const COMPACTION_READ: u64 = 64 << 10;
/// A MANIFEST record of a version edit (the files added and deleted),
/// bytes: ESTIMATE, a few hundred bytes of varints and key ranges.
const MANIFEST_EDIT: u64 = 256;
/// How long an obsolete file outlives the version that dropped it
/// (readers of the old version finish first), ns: ESTIMATE.
const PURGE_AFTER_NS: u64 = 100_000_000;
/// The background threads' wait when they find nothing to do, ns.
const IDLE_NS: u64 = 1_000_000;
/// A write stopped by a full set of memtables or L0 sleeps this long
/// before it looks again (the write controller's 1 ms waits,
/// db/db_impl/db_impl_write.cc `DelayWrite`, kDelayInterval).
const STALL_NS: u64 = 1_001_000;
/// `delayed_write_rate` when RocksDB slows writes, bytes/s (its default
/// when unset: 16 MB/s).
const DELAYED_WRITE_RATE: f64 = 16.0 * 1024.0 * 1024.0;

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "num",
        default: "100000000",
        help: "keys at scale 1 (db_bench --num: random keys are drawn from this many; the real program's 100 M, an ESTIMATE of its own: no study gives RocksDB's size); the common `scale` multiplies it",
    },
    ParamDef {
        name: "writes",
        default: "100000",
        help: "fillrandom's puts, all threads together (the run ends after them and the reads, or at runtime=)",
    },
    ParamDef {
        name: "reads",
        default: "10000",
        help: "readrandom's gets after the puts, all threads together",
    },
    ParamDef {
        name: "sync",
        default: "1",
        help: "1: every put's WAL write is synced (db_bench --sync=1, as the real program runs it); 0: written to the page cache only",
    },
    ParamDef {
        name: "key_size",
        default: "16",
        help: "bytes of a key (db_bench's default)",
    },
    ParamDef {
        name: "value_size",
        default: "100",
        help: "bytes of a value (db_bench --value_size, as the real program runs it)",
    },
    ParamDef {
        name: "compression_ratio",
        default: "0.5",
        help: "what a value shrinks to in a table file (db_bench's generated values compress to 0.5 with its default snappy)",
    },
    ParamDef {
        name: "write_buffer_size",
        default: "64m",
        help: "bytes of a memtable (db_bench's default)",
    },
    ParamDef {
        name: "max_write_buffer_number",
        default: "2",
        help: "memtables, the active one included; writes stop while all are full (db_bench's default)",
    },
    ParamDef {
        name: "l0_trigger",
        default: "4",
        help: "level0_file_num_compaction_trigger: L0 files that start a compaction into L1",
    },
    ParamDef {
        name: "l0_slowdown",
        default: "20",
        help: "level0_slowdown_writes_trigger: L0 files that slow writes to delayed_write_rate",
    },
    ParamDef {
        name: "l0_stop",
        default: "36",
        help: "level0_stop_writes_trigger: L0 files that stop writes",
    },
    ParamDef {
        name: "target_file_size",
        default: "64m",
        help: "target_file_size_base: bytes of a compaction's output file",
    },
    ParamDef {
        name: "level_base",
        default: "256m",
        help: "max_bytes_for_level_base: L1's target bytes; each deeper level's is 10 times the one above (max_bytes_for_level_multiplier)",
    },
    ParamDef {
        name: "cache_size",
        default: "8m",
        help: "the block cache, bytes of uncompressed blocks (db_bench's default)",
    },
    ParamDef {
        name: "put_cpu_us",
        default: "4",
        help: "CPU per put, µs (ESTIMATE, not calibrated: no study measured RocksDB; db_bench's key generation, the write batch, the write group's bookkeeping and the memtable's skiplist insert, a few µs as db_bench reports unsynced puts)",
    },
    ParamDef {
        name: "get_cpu_us",
        default: "4",
        help: "CPU per get, µs, table searches apart (ESTIMATE, not calibrated: the memtables' skiplists and the version's file search)",
    },
];

const MODELS: &[&str] = &[
    "threads put random keys (uniform over num), then get random keys; the writes form groups: the leader appends every waiting batch to the WAL (7-byte record header, 12-byte batch header, key and value with their varint lengths) and fdatasyncs it once (sync=1)",
    "WAL files are preallocated keeping their size (FALLOC_FL_KEEP_SIZE), so a synced append commits the new size and converted extent through the file system's log; a new WAL starts with each memtable",
    "a memtable holds write_buffer_size bytes (skiplist node, internal key, value); then it is flushed by the flush thread as one L0 file (1 MiB buffered writes, fdatasync, a MANIFEST edit synced); writers stop while max_write_buffer_number memtables are full, slow to 16 MB/s at l0_slowdown L0 files and stop at l0_stop",
    "the compaction thread: L0 into L1 when L0 has l0_trigger files (with all of L1: random keys overlap everywhere), a level above its target into the next (one target_file_size file with the overlapping share of the next level); inputs read sequentially (64 KiB buffered reads), outputs written as files of target_file_size, each synced, the MANIFEST edited, inputs deleted; a key in both inputs is kept once (the expected overlap of two random key sets)",
    "a get searches the memtables (CPU), every L0 file newest first and one file per deeper level until a table holds the key (the chance a table does: its keys over num); each table searched costs a data block, a block-cache hit with the chance cache_size over the tables' uncompressed bytes (uniform keys), else a buffered read of the block at a random place in the file",
];

const SIMPLIFIES: &[&str] = &[
    "the database starts empty (db_bench's fillrandom creates it); key and value sizes are fixed",
    "one flush thread and one compaction thread (max_background_jobs 2), no subcompactions; compaction picks by level score without RocksDB's file-choice heuristics; obsolete WAL files are not deleted",
    "the block cache's hit chance is its share of the data (uniform keys); index blocks are held by the table readers; no filter blocks",
    "CPU per put and per get are ESTIMATEs, not calibrated; against the real db_bench on the emulator (`storlab app check rocksdb`, docs/apps.md) IO per put agrees on every device, but on a device as fast as fusion-io the real synced put takes about 0.26 ms more on the project's two-core test host (two fdatasync paths through this kernel's XFS, each device request crossing nbdfuse and the loop device), which these estimates leave out",
];

/// `rocksdb`.
pub static APPS: &[&AppInfo] = &[&ROCKSDB];

static ROCKSDB: AppInfo = AppInfo {
    name: "rocksdb",
    summary: "RocksDB db_bench: fillrandom (synced puts), then readrandom; WAL group commit, flushes, leveled compaction",
    unit: "puts/s",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "no calibration: no study measured RocksDB; put_cpu_us and get_cpu_us are ESTIMATEs and every IO follows from RocksDB's WAL, memtables, flushes and compactions",
    params: PARAMS,
    build,
};

/// Bytes of a varint encoding `n`.
fn varint(n: u64) -> u64 {
    (64 - n.max(1).leading_zeros() as u64).div_ceil(7)
}

fn build(p: &Params) -> Result<AppKind, AppError> {
    let num = p.scaled(p.u64("num", 1, 1 << 40)?, 1000);
    let key = p.u64("key_size", 8, 1 << 16)?;
    let value = p.u64("value_size", 0, 1 << 24)?;
    let ratio = p.fraction("compression_ratio")?;
    let put_cpu = p.f64("put_cpu_us")?;
    let get_cpu = p.f64("get_cpu_us")?;
    for (name, v) in [("put_cpu_us", put_cpu), ("get_cpu_us", get_cpu)] {
        if !(0.0..=1e7).contains(&v) {
            return Err(p.bad(name, "must be from 0 to 10,000,000"));
        }
    }
    let wbs = p.u64("write_buffer_size", 64 << 10, 1 << 40)?;
    let buffers = p.u64("max_write_buffer_number", 2, 64)?;
    let l0_trigger = p.u64("l0_trigger", 1, 1 << 20)? as usize;
    let l0_slowdown = p.u64("l0_slowdown", 1, 1 << 20)? as usize;
    let l0_stop = p.u64("l0_stop", 1, 1 << 20)? as usize;
    if l0_stop < l0_trigger {
        return Err(p.bad("l0_stop", "must be at least l0_trigger"));
    }
    let sync = match p.str("sync") {
        "1" => true,
        "0" => false,
        _ => return Err(p.bad("sync", "must be 0 or 1")),
    };
    // a WAL record: log header (checksum, length, type), batch header
    // (sequence, count), the value type, the key and value with lengths
    let wal_record = 7 + 12 + 1 + varint(key) + key + varint(value) + value;
    // a memtable entry: the skiplist node's next pointers (4/3 levels of
    // 8 bytes on average, branching 4, rounded up), the encoded internal
    // key (key and the 8-byte sequence and type) and the value
    let mem_entry = 11 + varint(key + 8) + key + 8 + varint(value) + value;
    // a table entry: the key less its prefix shared with the previous
    // (sorted random keys of a 1 M-key file share about 4 bytes: ESTIMATE),
    // the 8-byte sequence and type, the compressed value, three varints
    let sst_entry = key.saturating_sub(4) + 8 + (value as f64 * ratio).ceil() as u64 + 3;
    let block_entry = key + 8 + value + 3;
    let per_memtable = (wbs / mem_entry).max(1);
    Ok(AppKind::Closed(Box::new(Rocksdb {
        threads: p.threads(1),
        num,
        writes: p.u64("writes", 0, 1 << 40)?,
        reads: p.u64("reads", 0, 1 << 40)?,
        sync,
        wal_record,
        sst_entry,
        block_entry,
        per_memtable,
        buffers,
        l0_trigger,
        l0_slowdown,
        l0_stop,
        target_file: p.u64("target_file_size", 64 << 10, 1 << 40)?,
        level_base: p.u64("level_base", 64 << 10, 1 << 50)?,
        cache: p.u64("cache_size", 0, 1 << 50)?,
        put_ns: (put_cpu * 1000.0).round() as u64,
        get_ns: (get_cpu * 1000.0).round() as u64,
        puts: 0,
        gets: 0,
        mem: 0,
        imm: Vec::new(),
        l0: Vec::new(),
        levels: vec![Level::default(); DEEP_LEVELS],
        flushing: None,
        compacting: None,
        obsolete: Vec::new(),
        manifest: 0,
        manifest_at: 0,
        wal: 0,
        flushes: 0,
        compactions: 0,
        compaction_bytes: [0, 0],
        stalls: 0,
        block_reads: 0,
        block_hits: 0,
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

/// A table file: its file, bytes and keys.
#[derive(Clone, Copy, Debug)]
struct Table {
    file: u32,
    bytes: u64,
    keys: u64,
}

/// A level below L0: its files (key ranges split evenly among them).
#[derive(Clone, Debug, Default)]
struct Level {
    files: Vec<Table>,
    keys: u64,
    bytes: u64,
}

/// A compaction under way: what it replaces when it ends.
#[derive(Debug)]
struct Compaction {
    /// The level it writes (1 to 6); L0 into L1 when `from_l0`.
    into: usize,
    from_l0: usize,
    /// Files of the upper level it takes (indices), L1 and deeper.
    upper: Option<usize>,
    outputs: Vec<Table>,
    /// Input files, deleted after it ends.
    inputs: Vec<u32>,
}

struct Rocksdb {
    threads: u32,
    num: u64,
    writes: u64,
    reads: u64,
    sync: bool,
    wal_record: u64,
    sst_entry: u64,
    block_entry: u64,
    per_memtable: u64,
    buffers: u64,
    l0_trigger: usize,
    l0_slowdown: usize,
    l0_stop: usize,
    target_file: u64,
    level_base: u64,
    cache: u64,
    put_ns: u64,
    get_ns: u64,
    puts: u64,
    gets: u64,
    /// Keys in the active memtable.
    mem: u64,
    /// Immutable memtables (their keys), oldest first.
    imm: Vec<u64>,
    /// L0's files, oldest first.
    l0: Vec<Table>,
    levels: Vec<Level>,
    /// The flush under way: the L0 file it writes.
    flushing: Option<Table>,
    compacting: Option<Compaction>,
    /// Files to delete once no reader can need them: (file, after).
    obsolete: Vec<(u32, u64)>,
    manifest: u32,
    manifest_at: u64,
    wal: u32,
    flushes: u64,
    compactions: u64,
    /// Bytes compactions read and wrote.
    compaction_bytes: [u64; 2],
    stalls: u64,
    block_reads: u64,
    block_hits: u64,
    rng: Pcg64Mcg,
}

impl Rocksdb {
    /// Keys after merging two sets of random keys (of `num`): those in
    /// both are kept once.
    fn merged(&self, a: u64, b: u64) -> u64 {
        let (a, b) = (a as f64, b as f64);
        (a + b - a * b / self.num as f64).round().max(0.0) as u64
    }

    fn target(&self, level: usize) -> u64 {
        self.level_base
            .saturating_mul(10u64.saturating_pow(level as u32 - 1))
    }

    /// Write a new table file of `keys` keys: created, written in 1 MiB
    /// buffered requests, synced.
    fn write_table(&mut self, keys: u64, cx: &mut PlanCx) -> Result<Table, AppError> {
        let bytes = (keys * self.sst_entry).max(4096);
        let file = cx.create_file(bytes, Layout::Empty)?;
        cx.push(Step::Io(FileIo::create(file, 0)));
        let mut off = 0;
        while off < bytes {
            let n = (bytes - off).min(1 << 20);
            cx.push(Step::Io(FileIo::write(file, off, n)));
            off += n;
        }
        cx.push(Step::Io(FileIo::fdatasync(file)));
        Ok(Table { file, bytes, keys })
    }

    /// Append a version edit to the MANIFEST and sync it.
    fn edit_manifest(&mut self, cx: &mut PlanCx) {
        cx.push(Step::Io(FileIo::write(
            self.manifest,
            self.manifest_at,
            MANIFEST_EDIT,
        )));
        self.manifest_at += MANIFEST_EDIT;
        cx.push(Step::Io(FileIo::fdatasync(self.manifest)));
    }

    /// Read `t` sequentially (a compaction's input).
    fn read_table(t: &Table, cx: &mut PlanCx) {
        let mut off = 0;
        while off < t.bytes {
            let n = (t.bytes - off).min(COMPACTION_READ);
            cx.push(Step::Io(FileIo::read(t.file, off, n)));
            off += n;
        }
    }

    /// Delete the files whose time has come.
    fn purge(&mut self, cx: &mut PlanCx) {
        let now = cx.now();
        let mut i = 0;
        while i < self.obsolete.len() {
            if self.obsolete[i].1 <= now {
                let (f, _) = self.obsolete.swap_remove(i);
                cx.push(Step::Io(FileIo::unlink(f, 0)));
            } else {
                i += 1;
            }
        }
    }

    fn put(&mut self, cx: &mut PlanCx) -> bool {
        if self.mem >= self.per_memtable {
            if self.imm.len() as u64 + 1 >= self.buffers {
                // every memtable is full: wait for the flush
                self.stalls += 1;
                cx.push(Step::Sleep(STALL_NS));
                return false;
            }
            self.imm.push(self.mem);
            self.mem = 0;
        }
        if self.l0.len() >= self.l0_stop {
            self.stalls += 1;
            cx.push(Step::Sleep(STALL_NS));
            return false;
        }
        if self.l0.len() >= self.l0_slowdown {
            let ns = self.wal_record as f64 / DELAYED_WRITE_RATE * 1e9;
            cx.push(Step::Sleep(ns.round() as u64));
        }
        self.puts += 1;
        cx.push(Step::Cpu(self.put_ns));
        cx.push(Step::Commit {
            log: self.wal,
            bytes: self.wal_record,
        });
        self.mem += 1;
        cx.push(Step::End(0));
        true
    }

    /// The chance a table of `keys` keys holds a random key.
    fn holds(&self, keys: u64) -> f64 {
        (keys as f64 / self.num as f64).min(1.0)
    }

    /// Search table `t` for the key: a data block (cache or file);
    /// whether it held the key.
    fn search(&mut self, t: Table, hit_chance: f64, cx: &mut PlanCx) -> bool {
        if self.rng.gen_bool(hit_chance) {
            self.block_hits += 1;
        } else {
            self.block_reads += 1;
            // a compressed block of about block_size uncompressed bytes
            let len = (4096 * self.sst_entry / self.block_entry).max(512);
            let off = self.rng.gen_range(0..t.bytes.saturating_sub(len).max(1));
            cx.push(Step::Io(FileIo::read(t.file, off, len)));
        }
        self.rng.gen_bool(self.holds(t.keys))
    }

    fn get(&mut self, cx: &mut PlanCx) {
        self.gets += 1;
        cx.push(Step::Cpu(self.get_ns));
        let memtables = self.mem + self.imm.iter().sum::<u64>();
        if self.rng.gen_bool(self.holds(memtables)) {
            cx.push(Step::End(1));
            return;
        }
        let uncompressed: u64 = (self.l0.iter().map(|t| t.keys).sum::<u64>()
            + self.levels.iter().map(|l| l.keys).sum::<u64>())
            * self.block_entry;
        let hit = (self.cache as f64 / uncompressed.max(1) as f64).min(1.0);
        let mut found = false;
        for i in (0..self.l0.len()).rev() {
            let t = self.l0[i];
            if self.search(t, hit, cx) {
                found = true;
                break;
            }
        }
        if !found {
            for l in 0..DEEP_LEVELS {
                let n = self.levels[l].files.len();
                if n == 0 {
                    continue;
                }
                let t = self.levels[l].files[self.rng.gen_range(0..n)];
                // the level's file holds its share of the level's keys
                let t = Table {
                    keys: self.levels[l].keys / n as u64,
                    ..t
                };
                if self.search(t, hit, cx) {
                    break;
                }
            }
        }
        cx.push(Step::End(1));
    }

    /// The flush thread's next job.
    fn flush_thread(&mut self, cx: &mut PlanCx) -> Result<(), AppError> {
        if let Some(t) = self.flushing.take() {
            // the flush's IO is done: the file joins L0, the memtable goes
            self.l0.push(t);
            self.imm.remove(0);
            self.flushes += 1;
        }
        if let Some(&keys) = self.imm.first() {
            let t = self.write_table(keys, cx)?;
            self.edit_manifest(cx);
            self.flushing = Some(t);
        } else {
            cx.push(Step::Sleep(IDLE_NS));
        }
        Ok(())
    }

    /// The compaction thread's next job.
    fn compaction_thread(&mut self, cx: &mut PlanCx) -> Result<(), AppError> {
        if let Some(c) = self.compacting.take() {
            self.finish(c, cx.now());
        }
        self.purge(cx);
        // the highest score of at least 1: L0's files over the trigger,
        // a level's bytes over its target
        let mut best = (1.0, None);
        let l0 = self.l0.len() as f64 / self.l0_trigger as f64;
        if l0 >= best.0 {
            best = (l0, Some(0));
        }
        for l in 1..DEEP_LEVELS {
            let s = self.levels[l - 1].bytes as f64 / self.target(l) as f64;
            if s > best.0 {
                best = (s, Some(l));
            }
        }
        match best.1 {
            Some(0) => self.compact_l0(cx)?,
            Some(l) => self.compact_level(l, cx)?,
            None => cx.push(Step::Sleep(IDLE_NS)),
        }
        Ok(())
    }

    /// Write `keys` keys as files of the target size.
    fn write_outputs(&mut self, keys: u64, cx: &mut PlanCx) -> Result<Vec<Table>, AppError> {
        let per_file = (self.target_file / self.sst_entry).max(1);
        let mut out = Vec::new();
        let mut left = keys;
        while left > 0 {
            let k = left.min(per_file);
            out.push(self.write_table(k, cx)?);
            left -= k;
        }
        let bytes: u64 = out.iter().map(|t| t.bytes).sum();
        self.compaction_bytes[1] += bytes;
        Ok(out)
    }

    fn compact_l0(&mut self, cx: &mut PlanCx) -> Result<(), AppError> {
        let n = self.l0.len();
        let mut keys = 0;
        let mut inputs = Vec::new();
        for i in 0..n {
            let t = self.l0[i];
            Self::read_table(&t, cx);
            self.compaction_bytes[0] += t.bytes;
            keys = self.merged(keys, t.keys);
            inputs.push(t.file);
        }
        for t in &self.levels[0].files {
            Self::read_table(t, cx);
            self.compaction_bytes[0] += t.bytes;
            inputs.push(t.file);
        }
        keys = self.merged(keys, self.levels[0].keys);
        let outputs = self.write_outputs(keys, cx)?;
        self.edit_manifest(cx);
        self.compacting = Some(Compaction {
            into: 1,
            from_l0: n,
            upper: None,
            outputs,
            inputs,
        });
        Ok(())
    }

    /// One file of level `l` (1-based) into level `l + 1`.
    fn compact_level(&mut self, l: usize, cx: &mut PlanCx) -> Result<(), AppError> {
        let up = &self.levels[l - 1];
        if up.files.is_empty() || l >= DEEP_LEVELS {
            cx.push(Step::Sleep(IDLE_NS));
            return Ok(());
        }
        let i = self.rng.gen_range(0..up.files.len());
        let t = up.files[i];
        let share = t.keys as f64 / up.keys.max(1) as f64;
        Self::read_table(&t, cx);
        self.compaction_bytes[0] += t.bytes;
        let mut inputs = vec![t.file];
        // the next level's files its key range overlaps
        let down = &self.levels[l];
        let n = down.files.len();
        let overlap = ((n as f64 * share).ceil() as usize).min(n);
        let first = if n > overlap {
            self.rng.gen_range(0..=n - overlap)
        } else {
            0
        };
        let mut below = 0;
        let taken: Vec<Table> = self.levels[l].files[first..first + overlap].to_vec();
        for d in &taken {
            Self::read_table(d, cx);
            self.compaction_bytes[0] += d.bytes;
            below += d.keys;
            inputs.push(d.file);
        }
        let keys = self.merged(t.keys, below);
        let outputs = self.write_outputs(keys, cx)?;
        self.edit_manifest(cx);
        self.compacting = Some(Compaction {
            into: l + 1,
            from_l0: 0,
            upper: Some(i),
            outputs,
            inputs,
        });
        Ok(())
    }

    /// A compaction's IO is done: its outputs replace its inputs.
    fn finish(&mut self, c: Compaction, now: u64) {
        self.compactions += 1;
        let gone = |files: &mut Vec<Table>, inputs: &[u32]| {
            files.retain(|t| !inputs.contains(&t.file));
        };
        if c.from_l0 > 0 {
            self.l0.drain(..c.from_l0);
        }
        if let Some(i) = c.upper {
            let up = &mut self.levels[c.into - 2];
            let t = up.files.remove(i);
            up.keys = up.keys.saturating_sub(t.keys);
            up.bytes = up.bytes.saturating_sub(t.bytes);
        }
        let down = &mut self.levels[c.into - 1];
        gone(&mut down.files, &c.inputs);
        down.files.extend(c.outputs.iter().copied());
        down.keys = down.files.iter().map(|t| t.keys).sum();
        down.bytes = down.files.iter().map(|t| t.bytes).sum();
        for f in c.inputs {
            self.obsolete.push((f, now + PURGE_AFTER_NS));
        }
    }
}

impl Model for Rocksdb {
    fn op_names(&self) -> &'static [&'static str] {
        &["put", "get", "flush", "compaction"]
    }

    fn counted(&self, kind: u16) -> bool {
        kind == 0
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 2)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0072_6f63_6b73_6462);
        self.manifest = cx.create_file(64 << 20, Layout::Empty)?;
        // a WAL file per memtable, preallocated keeping its size
        let size = self.per_memtable * self.wal_record;
        let layout = Layout::preallocated(cx.host().file_system, true).unwrap_or(Layout::Empty);
        let wal = cx.create_file(size, layout)?;
        self.wal = cx.log(LogSpec {
            file: wal,
            size,
            block: 1,
            direct: false,
            sync: if self.sync {
                LogSync::Fdatasync
            } else {
                LogSync::None
            },
            rotate: Some(layout),
            rewrite_last_block: true,
        });
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if t == self.threads {
            self.flush_thread(cx)?;
            cx.push(Step::End(2));
            return Ok(true);
        }
        if t > self.threads {
            self.compaction_thread(cx)?;
            cx.push(Step::End(3));
            return Ok(true);
        }
        if self.puts < self.writes {
            self.put(cx);
            return Ok(true);
        }
        if self.gets < self.reads {
            self.get(cx);
            return Ok(true);
        }
        Ok(false)
    }

    fn extra(&self) -> serde_json::Value {
        let levels: Vec<u64> = std::iter::once(self.l0.iter().map(|t| t.bytes).sum())
            .chain(self.levels.iter().map(|l| l.bytes))
            .collect();
        json!({
            "keys": self.num,
            "puts": self.puts,
            "gets": self.gets,
            "memtable_flushes": self.flushes,
            "compactions": self.compactions,
            "compaction_read_bytes": self.compaction_bytes[0],
            "compaction_write_bytes": self.compaction_bytes[1],
            "level_bytes": levels,
            "write_stalls": self.stalls,
            "block_reads": self.block_reads,
            "block_cache_hits": self.block_hits,
        })
    }
}
