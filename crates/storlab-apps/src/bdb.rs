//! Berkeley DB: random inserts and deletes on a key/value store kept as
//! a B+tree (`bdb-btree`) or a hash table (`bdb-hash`), every update an
//! ACID transaction (docs/spec/workloads.md: 16 GB in the HASTE study, 4 GB in the
//! Moneta study).
//!
//! A transaction: the thread computes (`cpu_us`: the library's code, the
//! lock manager, the log record's construction), walks its access path
//! through the memory pool (B+tree: root to leaf; hash: the bucket page),
//! reading each page that misses from the database file (buffered
//! `pread` through the operating system's page cache, as Berkeley DB does
//! with no `DB_DIRECT_DB`) after writing a dirty victim back (`pwrite`,
//! buffered), dirties the leaf or bucket, and commits: its log record
//! goes into the log buffer and the commit waits until a log write and
//! `fdatasync` cover it (`DB_TXN_SYNC`, Berkeley DB's default; group
//! commit). A checkpoint thread periodically writes every dirty pool page
//! and syncs the database file (`txn_checkpoint`).

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::{Layout, PAGE};
use storlab_model::units::Bits;

use crate::bdb_hash::HashShape;
use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::kit::BufferPool;
use crate::model::{FileIo, LogSpec, LogSync, MetricKind, Model, PlanCx, SetupCx, Step};

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "db",
        default: "4g",
        help: "database size, bytes (docs/spec/workloads.md: 4 GB in the Moneta study, 16 GB in the HASTE study)",
    },
    ParamDef {
        name: "record",
        default: "128",
        help: "bytes per key/data pair on a page, with its overhead (ESTIMATE: the studies do not give the record size; an 8-byte key, about 100 bytes of data and Berkeley DB's item headers)",
    },
    ParamDef {
        name: "page",
        default: "4k",
        help: "database page size, bytes (Berkeley DB's default: the file system's block size, 4 KiB)",
    },
    ParamDef {
        name: "cache",
        default: "512m",
        help: "memory pool (DB_ENV->set_cachesize), bytes (ESTIMATE: the studies do not give it)",
    },
    ParamDef {
        name: "transactions",
        default: "50000",
        help: "transactions in all threads together (the run ends after them, or at runtime=); 50,000 are a few seconds on the NVM devices, the count the calibration used",
    },
    ParamDef {
        name: "cpu_us",
        default: "",
        help: "CPU per transaction, µs (default: the calibrated value, see calibration)",
    },
    ParamDef {
        name: "log_record",
        default: "",
        help: "log bytes per transaction (default: the record twice (a delete logs the old item, an insert the new one with its page header) plus 60 bytes of commit and log headers)",
    },
    ParamDef {
        name: "checkpoint",
        default: "60s",
        help: "time between checkpoints (txn_checkpoint from the application: ESTIMATE, a once-a-minute checkpoint)",
    },
];

/// CALIBRATED: CPU per B+tree transaction, against the Moneta study's
/// Table V (Berkeley DB BTree, 14,884 tx/s on the full Moneta,
/// `moneta-balance`, XFS, 16 threads); the one number calibrated for this
/// application (the RAID-Disk, RAID-SSD and FusionIO figures of the same
/// table are predictions). Found with `storlab apps calibrate bdb-btree
/// --device moneta-balance --param cpu_us --target 14884 --app-set
/// transactions=50000` (the run is CPU-bound there: 16 threads on the
/// host's 8 cores).
const BTREE_CPU_US: f64 = 537.3;
/// CALIBRATED: CPU per hash-table transaction, against the Moneta study's
/// Table V (HashTable, 10,980 tx/s on `moneta-balance`), as for the
/// B+tree (`storlab apps calibrate bdb-hash --device moneta-balance
/// --param cpu_us --target 10980 --app-set transactions=50000`); rerun
/// when deletes that find nothing stopped syncing the log (727.9 before;
/// the B+tree's run is CPU-bound either way and gives 537.3 again).
const HASH_CPU_US: f64 = 729.1;

const MODELS: &[&str] = &[
    "16 threads (ESTIMATE: the studies' thread count for every benchmark) each run transactions back to back: an insert or a delete (even odds) of a uniformly random key of a key space twice the records stored (as apps/bdb-bench.c, the real program `storlab app run` measures, loads every other key), so in the steady state half the keys are present: an insert adds its key or overwrites it, a delete removes its key when present",
    "a delete whose key is absent finds nothing (DB_NOTFOUND): it reads its access path but dirties no page and logs nothing, and a transaction without log records commits without writing or syncing the log (Berkeley DB txn/txn.c, __txn_commit: \"If there are any log records, write a log record and sync the log, else do no log writes\"); a quarter of the transactions in the steady state",
    "B+tree: levels from the entries per leaf (page x 0.7 fill / record) and the internal fan-out (page x 0.7 / 24-byte separator and page number); every level's page is looked up in the memory pool, root to leaf; hash table: the stored records loaded as Berkeley DB lays them out (linear hashing that splits the next bucket whenever an insert adds an overflow page, hash/hash_page.c __ham_add_el; apps/bdb-bench.c's keys under Berkeley DB's own hash function, __ham_func5; bdb_hash.rs), and a lookup walks its bucket's chain of pages from the first to the key's page, all of it when the key is absent (__ham_lookup), each page looked up in the memory pool",
    "memory pool: clock replacement over `cache` bytes of pages; a miss reads the page from the database file through the page cache (buffered pread), after writing back a dirty victim (buffered pwrite)",
    "commit: the log record joins the log buffer; group commit (the first committer writes everything buffered and fdatasyncs the log, committers arriving meanwhile wait for the next write, which the first of them leads once it has woken (the host's wake-up, with its spread), taking every record appended by then: __log_flush_int's DB_COMMIT_FLUSH), so how many commits share a sync turns on the host's wake-up against a transaction's CPU (`storlab app check` with two threads: 0.57-0.60 flushes a transaction real on its 2-vCPU guest, 0.82 modelled with the studies' 4 µs wake-up, 0.63 with 15 µs; docs/apps.md); 10 MB log files, each new one created empty (its writes allocate)",
    "checkpoint thread: every `checkpoint`, writes every dirty pool page (buffered, 64 at a time in flight) and fdatasyncs the database file",
];

const SIMPLIFIES: &[&str] = &[
    "page splits and merges are not modelled: inserts and deletes balance, so the tree keeps its shape; a delete that finds nothing costs the same CPU (cpu_us) as one that logs",
    "Berkeley DB's page and record locks are not modelled: 16 threads on uniformly random leaves rarely conflict; the log buffer's region mutex is inside cpu_us",
    "the database starts loaded and warm, in the steady state between checkpoints: the memory pool is full of uniformly chosen leaves, dirty (every transaction dirties its leaf and the pool turns over far faster than the 60 s checkpoint), so a miss first writes a dirty victim back; the operating system's page cache starts with no clean pages and with uniformly chosen database pages dirty up to the flusher's background threshold (vm.dirty_background_ratio), the steady state of victims that are written back (within dirty_expire_centisecs, 30 s) as fast as they come: from the first victim on the flusher writes one back for each",
    "the hash table keeps the shape its load left (its splits are part of the load, not of the measured steady state: the run's inserts and deletes balance); a present key's place in its chain is drawn from the key",
];

/// `bdb-btree` and `bdb-hash`.
pub static APPS: &[&AppInfo] = &[&BTREE, &HASH];

static BTREE: AppInfo = AppInfo {
    name: "bdb-btree",
    summary: "Berkeley DB B+tree: random inserts and deletes, each a durable transaction",
    unit: "transactions/s",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "cpu_us (CPU per transaction) is CALIBRATED against the Moneta study's Table V, Berkeley-DB BTree on Moneta (moneta-balance, XFS, 16 threads): 14,884 tx/s gives 537.3 µs (storlab apps calibrate bdb-btree --device moneta-balance --param cpu_us --target 14884 --app-set transactions=50000); everything else is derived from the parameters; the real program (apps/bdb-bench.c on libdb5.3, `storlab app check`) spends 10-40 µs of user CPU a transaction on a 2020s Xeon core, so the calibrated figure stands for whatever held the study's 16 threads to its rate on Moneta as much as for CPU (docs/apps.md)",
    params: PARAMS,
    build: |p| build(p, Kind::Btree),
};

static HASH: AppInfo = AppInfo {
    name: "bdb-hash",
    summary: "Berkeley DB hash table: random inserts and deletes, each a durable transaction",
    unit: "transactions/s",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "cpu_us (CPU per transaction) is CALIBRATED against the Moneta study's Table V, HashTable on Moneta (moneta-balance, XFS, 16 threads): 10,980 tx/s gives 729.1 µs (storlab apps calibrate bdb-hash --device moneta-balance --param cpu_us --target 10980 --app-set transactions=50000); everything else is derived from the parameters; the real program (apps/bdb-bench.c on libdb5.3, `storlab app check`) spends 10-40 µs of user CPU a transaction on a 2020s Xeon core, so the calibrated figure stands for whatever held the study's 16 threads to its rate on Moneta as much as for CPU (docs/apps.md)",
    params: PARAMS,
    build: |p| build(p, Kind::Hash),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Btree,
    Hash,
}

/// Fill factor of B+tree pages (B+trees after random inserts settle near
/// ln 2; ESTIMATE 0.7), which also sets the records a database of `db`
/// bytes stores (the hash table's pages follow from them: bdb_hash.rs).
const FILL: f64 = 0.7;
/// Bytes of an internal-page entry: separator key and page number with
/// item header (ESTIMATE).
const INTERNAL_ENTRY: u64 = 24;
/// The keys a run draws from: twice the records stored, as
/// apps/bdb-bench.c's (which loads every other key), with whether each
/// is stored now.
struct KeySpace {
    stored: Bits,
    keys: u64,
}

impl KeySpace {
    /// `stored` records: keys `0..2 x stored`, every other one present.
    fn every_other(stored: u64) -> Self {
        let keys = (2 * stored).max(2);
        let mut s = Bits::new(keys);
        for k in (0..keys).step_by(2) {
            s.set(k, true);
        }
        Self { stored: s, keys }
    }

    fn keys(&self) -> u64 {
        self.keys
    }

    /// Store (`true`) or remove key `k`; whether it was stored before.
    fn set(&mut self, k: u64, on: bool) -> bool {
        let was = self.stored.get(k);
        self.stored.set(k, on);
        was
    }
}

/// Berkeley DB log files (`DB_ENV->set_lg_max` default 10 MB).
const LOG_FILE: u64 = 10 << 20;

fn build(p: &Params, kind: Kind) -> Result<AppKind, AppError> {
    let page = p.u64("page", 512, 64 << 10)?;
    let record = p.u64("record", 8, page / 2)?;
    let db = p.scaled(p.u64("db", page, 1 << 50)?, 64 * page);
    let cache = p.u64("cache", page, 1 << 46)?;
    let cpu_us = match p.str("cpu_us") {
        "" => match kind {
            Kind::Btree => BTREE_CPU_US,
            Kind::Hash => HASH_CPU_US,
        },
        _ => p.f64("cpu_us")?,
    };
    if !(0.0..=1e7).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 10,000,000"));
    }
    let log_record = match p.str("log_record") {
        "" => 2 * record + 60,
        _ => p.u64("log_record", 1, 1 << 20)?,
    };
    let leaves = db / page;
    let per_leaf = ((page as f64 * FILL) / record as f64).max(1.0) as u64;
    let fanout = ((page as f64 * FILL) / INTERNAL_ENTRY as f64).max(2.0) as u64;
    // page numbers: leaves first, then each internal level
    let mut levels = vec![(0u64, leaves)];
    if kind == Kind::Btree {
        let mut n = leaves;
        let mut base = leaves;
        while n > 1 {
            n = n.div_ceil(fanout);
            levels.push((base, n));
            base += n;
        }
    }
    // the hash table: the stored records loaded as Berkeley DB's linear
    // hashing lays them out (bdb_hash.rs), its pages in place of leaves
    let hash = (kind == Kind::Hash).then(|| HashShape::load(leaves * per_leaf, record, page));
    if let Some(h) = &hash {
        levels = vec![(0, h.pages())];
    }
    let pages: u64 = levels.iter().map(|l| l.1).sum();
    let threads = p.threads(16);
    Ok(AppKind::Closed(Box::new(Bdb {
        kind,
        page,
        pages,
        present: KeySpace::every_other(leaves * per_leaf),
        noop_deletes: 0,
        per_leaf,
        fanout,
        levels,
        hash,
        pool: BufferPool::new(cache / page, pages),
        cpu_ns: (cpu_us * 1000.0).round() as u64,
        log_record,
        transactions: p.u64("transactions", 1, 1 << 50)?,
        started: 0,
        checkpoint_ns: p.time_ns("checkpoint", 1_000_000)?,
        threads,
        rng: Pcg64Mcg::seed_from_u64(0),
        db_file: 0,
        log: 0,
        scratch: Vec::new(),
        victims_written: 0,
        checkpoint_due: false,
        cache_dirty_at_start: 0,
    })))
}

struct Bdb {
    kind: Kind,
    page: u64,
    pages: u64,
    /// Which keys of the key space (twice `entries`) are stored.
    present: KeySpace,
    /// Deletes that found no key (no log record, no sync).
    noop_deletes: u64,
    per_leaf: u64,
    fanout: u64,
    /// (first page number, pages) of each level, leaves first (the hash
    /// table's pages, one level).
    levels: Vec<(u64, u64)>,
    /// The hash table's buckets and chains.
    hash: Option<HashShape>,
    pool: BufferPool,
    cpu_ns: u64,
    log_record: u64,
    transactions: u64,
    started: u64,
    checkpoint_ns: u64,
    threads: u32,
    rng: Pcg64Mcg,
    db_file: u32,
    log: u32,
    scratch: Vec<u64>,
    /// Dirty victims written back by transactions.
    victims_written: u64,
    /// The checkpoint thread has slept; its next operation checkpoints.
    checkpoint_due: bool,
    /// Pages of the database file dirty in the page cache when the run
    /// starts (its steady state: up to the flusher's background
    /// threshold).
    cache_dirty_at_start: u64,
}

impl Bdb {
    /// Look `page` up in the pool, reading it (and writing a dirty victim
    /// back first) on a miss.
    fn touch(&mut self, page: u64, write: bool, cx: &mut PlanCx) {
        let a = self.pool.access(page, write);
        if a.hit {
            return;
        }
        if let Some(v) = a.evicted_dirty {
            self.victims_written += 1;
            cx.push(Step::Io(FileIo::write(
                self.db_file,
                v * self.page,
                self.page,
            )));
        }
        cx.push(Step::Io(FileIo::read(
            self.db_file,
            page * self.page,
            self.page,
        )));
    }
}

impl Model for Bdb {
    fn op_names(&self) -> &'static [&'static str] {
        &["insert", "delete"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 1)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0xbdb);
        self.db_file = cx.create_file(self.pages * self.page, Layout::Allocated)?;
        let log_file = cx.create_file(LOG_FILE, Layout::Empty)?;
        self.log = cx.log(LogSpec {
            file: log_file,
            size: LOG_FILE,
            block: 512,
            direct: false,
            // Berkeley DB syncs with fdatasync where the system has it
            // (os/os_fsync.c, `__os_fsync`: `fdatasync` under
            // HAVE_FDATASYNC, else fsync): each segment is appended, so
            // every sync still forces XFS's log for the new size
            sync: LogSync::Fdatasync,
            rotate: Some(Layout::Empty),
            rewrite_last_block: false,
        });
        // warm: the pool full of uniformly chosen leaves (bucket pages),
        // dirty, and the hot internal pages resident and clean. Every
        // transaction dirties the leaf it reads, and a checkpoint comes
        // once a `checkpoint` (60 s), while the pool turns over in a few
        // seconds (its frames / the misses a second), so in the steady
        // state the study measured nearly every page the pool evicts is
        // dirty and is written back before its frame is reused (Berkeley
        // DB Reference Guide, "Berkeley DB Memory Pool": a thread needing
        // a buffer writes a dirty one out, `__memp_alloc`; memp_trickle
        // exists to do it ahead of them).
        let internal = self.levels.get(1..).unwrap_or(&[]);
        let leaves = self.levels[0].1;
        crate::kit::warm_pool(&mut self.pool, &mut self.rng, leaves, internal, true);
        // the page cache in the same steady state: every victim the pool
        // writes is a buffered pwrite nobody syncs until the checkpoint,
        // so the kernel's flusher has been writing them back as fast as
        // they come (within 30 s, dirty_expire_centisecs, or sooner above
        // dirty_background_ratio); dirty leaves up to the background
        // threshold make it do so from the run's first victim on, where
        // a run of seconds would otherwise end before any reached the
        // device (FileLayer::dirty_to_background)
        let (page, rng) = (self.page, &mut self.rng);
        let os_pages = (0..).flat_map(|_| {
            let leaf = rng.gen_range(0..leaves.max(1));
            (leaf * page / PAGE)..((leaf + 1) * page).div_ceil(PAGE)
        });
        self.cache_dirty_at_start = cx.dirty_to_background(self.db_file, os_pages);
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if t == self.threads {
            // the checkpoint thread: one operation sleeps until the
            // checkpoint is due, the next takes the dirty pages then (a
            // plan is made when its operation starts, so the pages must
            // be chosen after the sleep, not before it)
            if !self.checkpoint_due {
                self.checkpoint_due = true;
                cx.push(Step::Sleep(self.checkpoint_ns));
                cx.push(Step::End(0));
                return Ok(true);
            }
            self.checkpoint_due = false;
            self.scratch.clear();
            let mut dirty = std::mem::take(&mut self.scratch);
            self.pool.clean(usize::MAX, &mut dirty);
            for (i, &pg) in dirty.iter().enumerate() {
                cx.push(Step::Issue(FileIo::write(
                    self.db_file,
                    pg * self.page,
                    self.page,
                )));
                if i % 64 == 63 {
                    cx.push(Step::Join);
                }
            }
            cx.push(Step::Join);
            // __os_fsync: fdatasync (above)
            cx.push(Step::Io(FileIo::fdatasync(self.db_file)));
            cx.push(Step::End(0));
            self.scratch = dirty;
            return Ok(true);
        }
        if self.started >= self.transactions {
            return Ok(false);
        }
        self.started += 1;
        let insert = self.rng.gen_bool(0.5);
        cx.push(Step::Cpu(self.cpu_ns));
        let key = self.rng.gen_range(0..self.present.keys());
        // an insert stores its key (new, or an overwrite: logged either
        // way); a delete removes it, or finds nothing
        let was_present = self.present.set(key, insert);
        let writes = insert || was_present;
        match self.kind {
            Kind::Btree => {
                // a key's leaf: the stored records are spread over the key
                // space (half of it), in key order
                let leaf = (key / 2 / self.per_leaf).min(self.levels[0].1 - 1);
                // root to leaf
                for lv in (1..self.levels.len()).rev() {
                    let (base, n) = self.levels[lv];
                    let idx = leaf / self.fanout.pow(lv as u32).max(1);
                    self.touch(base + idx.min(n - 1), false, cx);
                }
                self.touch(leaf, writes, cx);
            }
            Kind::Hash => {
                // the key's bucket chain, from its first page to the
                // key's page (all of it when the key is absent); the
                // last page walked holds the key, or takes the new one
                let mut walk = std::mem::take(&mut self.scratch);
                if let Some(t) = &self.hash {
                    t.walk(key, was_present, &mut walk);
                }
                let n = walk.len();
                for (i, &pg) in walk.iter().enumerate() {
                    self.touch(pg, writes && i + 1 == n, cx);
                }
                self.scratch = walk;
            }
        }
        if writes {
            cx.push(Step::Commit {
                log: self.log,
                bytes: self.log_record,
            });
        } else {
            // no log records: __txn_commit writes and syncs nothing
            self.noop_deletes += 1;
        }
        cx.push(Step::End(if insert { 0 } else { 1 }));
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "pool_hit_ratio": self.pool.hit_ratio(),
            "pool_misses": self.pool.misses(),
            "victims_written": self.victims_written,
            "deletes_not_found": self.noop_deletes,
            "page_cache_dirty_at_start": self.cache_dirty_at_start,
            "pool_pages": self.pool.frames(),
            "database_pages": self.pages,
            "levels": self.levels.len(),
            "hash_buckets": self.hash.as_ref().map(|h| h.buckets()),
            "hash_overflow_pages": self.hash.as_ref().map(|h| h.overflow_pages()),
            "kind": format!("{:?}", self.kind).to_lowercase(),
        })
    }
}
