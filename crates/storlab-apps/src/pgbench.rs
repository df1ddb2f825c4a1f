//! pgbench (`pgbench`): PostgreSQL's built-in TPC-B-like transaction
//! (pgbench's default script, "tpcb-like") from `clients` connections, as
//! the real program `storlab app run pgbench` runs it (crates/storlab/src/
//! app/pgbench.rs: PostgreSQL 15, its defaults). No study measured
//! pgbench: the model exists so that `storlab app check pgbench` can hold
//! it against the real server on the same emulated device (issue 57).
//!
//! A transaction (pgbench documentation, "What Is the 'Transaction'
//! Actually Performed in pgbench?"): update a random account's balance
//! (the primary key's B-tree, then the heap page), read it back, update a
//! random teller's and a random branch's balance (row locks held until
//! commit), insert a history row, commit. Pages live in `shared_buffers`
//! (clock replacement, as PostgreSQL's buffer manager); a miss reads the
//! 8 KiB page through the operating system's page cache (PostgreSQL reads
//! and writes its data files buffered) and a dirty victim is written
//! back by the backend first.
//!
//! The commit makes the transaction's WAL durable (`XLogFlush`, xlog.c):
//! the backend holding WALWriteLock writes every record inserted so far,
//! whole 8 KiB WAL pages from the page its last write ended in (the
//! partly filled page again), then fdatasync(2)s the segment
//! (`wal_sync_method` defaults to fdatasync on Linux); backends whose
//! records a running flush covers wait for it (group commit). WAL
//! segments are zero-filled when created and recycled after checkpoints,
//! so the WAL overwrites allocated blocks and fdatasync forces no file
//! system log. After each checkpoint the first change to a page logs the
//! whole page (`full_page_writes`). The checkpointer starts a checkpoint
//! every `checkpoint_timeout` or when the WAL since the last one reaches
//! `max_wal_size / (1 + checkpoint_completion_target)` (xlog.c,
//! `CalculateCheckpointSegments`), writes every dirty buffer spread over
//! `checkpoint_completion_target` of the interval, then fsyncs the data
//! files.
//!
//! Heap tuples follow PostgreSQL's update rule (README.HOT): pgbench
//! loads its tables with fillfactor 100, so the first update on a full
//! page finds no room, and the new version goes to the relation's last
//! page (extending it) with a new index entry; the dead version is
//! pruned on a later visit, so the page has room from then on and later
//! updates of its rows stay on it (heap-only tuples, no index entry).

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::kit::BufferPool;
use crate::model::{FileIo, LogSpec, LogSync, MetricKind, Model, PlanCx, SetupCx, Step};
use crate::postgres::PAGE;

/// Usable bytes of a heap page: the block less its 24-byte header.
const PAGE_USABLE: u64 = PAGE - 24;
/// A pgbench_accounts (or _tellers, _branches) tuple: the 23-byte
/// header (MAXALIGNed to 24), three int4 columns and the char(84)
/// filler with its 1-byte varlena header (97 bytes), MAXALIGNed to 128,
/// and its 4-byte line pointer.
const ACCOUNT_TUPLE: u64 = 128 + 4;
/// Accounts a heap page holds at fillfactor 100: 61.
const ACCOUNTS_PER_PAGE: u64 = PAGE_USABLE / ACCOUNT_TUPLE;
/// A pgbench_history tuple: the header, four int4 columns, a timestamp
/// and the char(22) filler (71 bytes), MAXALIGNed to 72, and its line
/// pointer.
const HISTORY_TUPLE: u64 = 72 + 4;
/// History rows a page holds: 107.
const HISTORY_PER_PAGE: u64 = PAGE_USABLE / HISTORY_TUPLE;
/// Entries of a primary-key leaf: an index tuple of an int4 key (8-byte
/// header, MAXALIGNed to 16) and its line pointer, 20 bytes, in the
/// 8,152 bytes left by the page header and B-tree special space, filled
/// to 90 % by CREATE INDEX (nbtree's BTREE_DEFAULT_FILLFACTOR): 366.
const INDEX_LEAF_ENTRIES: u64 = (PAGE - 24 - 16) * 9 / 10 / 20;
/// Children of an internal index page (filled to 70 %,
/// BTREE_NONLEAF_FILLFACTOR): 285.
const INDEX_FANOUT: u64 = (PAGE - 24 - 16) * 7 / 10 / 20;
/// A WAL segment (`wal_segment_size`, 16 MiB): the log file, recycled.
const WAL_SEGMENT: u64 = 16 << 20;

// WAL record sizes, bytes (access/xlogrecord.h, access/heapam_xlog.h,
// access/nbtxlog.h, access/xact.h): a record is its 24-byte
// XLogRecord header, a 20-byte block reference per page it changes
// (block header, relation and block number), a 2-byte data header and
// its data, MAXALIGNed to 8.
/// A heap-only update on the same page: xl_heap_update (14 bytes), the
/// new tuple's xl_heap_header (5) and only the bytes that differ from
/// the old version (prefix and suffix compression leaves the 4-byte
/// balance and 4 bytes of lengths): 73, 80 aligned.
const WAL_HOT_UPDATE: u64 = 80;
/// An update to another page: two block references and the whole new
/// tuple (97 bytes; no prefix or suffix compression across pages): 182,
/// 184 aligned.
const WAL_COLD_UPDATE: u64 = 184;
/// The new version's primary-key entry: xl_btree_insert (2 bytes) and
/// the 16-byte index tuple: 64 aligned.
const WAL_INDEX_INSERT: u64 = 64;
/// The history row: xl_heap_insert (3 bytes), xl_heap_header (5) and
/// the tuple's 48 bytes of data: 102, 104 aligned.
const WAL_INSERT: u64 = 104;
/// The commit record: xl_xact_commit's timestamp and flags: 40 aligned.
const WAL_COMMIT: u64 = 40;

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "scale_factor",
        default: "100",
        help: "pgbench's scale factor at scale 1 (100,000 accounts, 10 tellers and 1 branch each; 100 is about 1.5 GB: an ESTIMATE, no study gives pgbench's size); the common `scale` multiplies it, as `storlab app run pgbench --scale` does",
    },
    ParamDef {
        name: "transactions",
        default: "10000",
        help: "transactions of all clients together (the run ends after them, or at runtime=)",
    },
    ParamDef {
        name: "shared_buffers",
        default: "128m",
        help: "PostgreSQL's shared_buffers, bytes (its default)",
    },
    ParamDef {
        name: "checkpoint_timeout",
        default: "300s",
        help: "time between checkpoints (PostgreSQL's default, 5 min)",
    },
    ParamDef {
        name: "max_wal_size",
        default: "1g",
        help: "WAL between checkpoints that starts one early, as max_wal_size / (1 + checkpoint_completion_target) (PostgreSQL's default, 1 GB)",
    },
    ParamDef {
        name: "completion_target",
        default: "0.9",
        help: "checkpoint_completion_target: the share of the interval a checkpoint's writes are spread over (PostgreSQL's default)",
    },
    ParamDef {
        name: "cpu_us",
        default: "250",
        help: "CPU per transaction, µs (ESTIMATE, not calibrated: no study measured pgbench; seven statements, each a round trip between pgbench and its backend over a unix socket, about 15 µs of system calls and context switches, and its parse, plan and execution, about 20 µs)",
    },
];

const MODELS: &[&str] = &[
    "each client runs pgbench's tpcb-like transaction back to back: a random account (uniform over 100,000 x scale factor), teller (10 x) and branch; the account's primary-key leaf and heap page, the teller's and branch's rows (locked until commit, first teller then branch as every client does), a history row appended, commit",
    "shared_buffers is a clock-replaced pool of 8 KiB pages; a miss reads the page through the page cache, a dirty victim is written (buffered) first; the tables start in the page cache (pgbench -i loaded them through it)",
    "the first update on a full page (fillfactor 100) moves the row to the relation's last page, extending it (a zero page written), and adds a primary-key entry; the page has room from then on (the dead version is pruned), so later updates there are heap-only",
    "WAL: each change appends a record of its xlog format's size; a commit flushes the WAL as XLogFlush does (group commit; whole 8 KiB pages from the page the last write ended in; fdatasync), into a 16 MiB segment of allocated blocks (recycled segments); after a checkpoint the first change to a page logs the page (full_page_writes)",
    "the checkpointer: a checkpoint every checkpoint_timeout, or when the WAL since the last reaches max_wal_size / (1 + completion_target); it writes every dirty buffer (buffered, in page order) spread over completion_target of the interval, then fsyncs each data file",
];

const SIMPLIFIES: &[&str] = &[
    "no background writer and no autovacuum: backends write their own dirty victims, and free space found by pruning is reused only on its own page (the free space map is not updated without VACUUM); tellers' and branches' updates are heap-only (small hot tables pruned on every visit)",
    "index leaves never split (CREATE INDEX leaves 10 % free); the index's internal pages stay resident",
    "the checkpointer paces its writes by time only (not by WAL progress too) and does not issue sync_file_range (checkpoint_flush_after); the first checkpoint comes checkpoint_timeout after the run starts, and the load's WAL is taken to follow the last checkpoint (no page needs a full-page image until the run's first checkpoint)",
    "shared_buffers starts warm with uniformly chosen clean pages and the index's internal pages; one WAL segment, reused (no segment switch costs); the history table grows to at most the accounts heap's size, later rows going to its last page",
    "CPU per transaction is one ESTIMATE, not calibrated; `storlab app check pgbench` runs the model with the real server's and client's user CPU instead (86-139 µs a transaction on the project's two-core test host, 2026-12-01), and then IO and time per transaction agree on raid-disk, fusion-io and hdd-7200 (docs/apps.md)",
];

/// `pgbench`.
pub static APPS: &[&AppInfo] = &[&PGBENCH];

static PGBENCH: AppInfo = AppInfo {
    name: "pgbench",
    summary: "PostgreSQL pgbench: TPC-B-like transactions, WAL group commit, checkpoints",
    unit: "transactions/s",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "no calibration: no study measured pgbench; cpu_us is an ESTIMATE and every IO follows from PostgreSQL's storage layout, WAL and checkpoints",
    params: PARAMS,
    build,
};

/// The relations, in the order of their page ranges in the pool.
const HEAP: usize = 0;
const INDEX: usize = 1;
const TELLERS: usize = 2;
const BRANCHES: usize = 3;
const HISTORY: usize = 4;

fn build(p: &Params) -> Result<AppKind, AppError> {
    let sf = p.scaled(p.u64("scale_factor", 1, 1 << 24)?, 1);
    let transactions = p.u64("transactions", 1, 1 << 40)?;
    let cpu_us = p.f64("cpu_us")?;
    if !(0.0..=1e7).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 10,000,000"));
    }
    let completion = p.fraction("completion_target")?;
    let accounts = 100_000 * sf;
    let tellers = 10 * sf;
    let heap = accounts.div_ceil(ACCOUNTS_PER_PAGE);
    // room for the rows that move to the relation's end: a page loses
    // a row that way once (it has room from then on), so at most one row
    // a page moves, and the pages they fill move at most one each too
    let heap_room = heap + heap.div_ceil(ACCOUNTS_PER_PAGE - 1) + 2;
    let leaves = accounts.div_ceil(INDEX_LEAF_ENTRIES);
    let mut internal = Vec::new();
    let mut n = leaves;
    while n > 1 {
        n = n.div_ceil(INDEX_FANOUT);
        internal.push(n);
    }
    let index = leaves + internal.iter().sum::<u64>();
    let sizes = [
        heap_room,
        index,
        tellers.div_ceil(ACCOUNTS_PER_PAGE),
        sf.div_ceil(ACCOUNTS_PER_PAGE),
        // the history table's room: what the run inserts, at most the
        // accounts heap's size (beyond it rows go to its last page)
        (transactions.div_ceil(HISTORY_PER_PAGE) + 1).min(heap.max(1024)),
    ];
    let mut base = [0u64; 5];
    for r in 1..5 {
        base[r] = base[r - 1] + sizes[r - 1];
    }
    let shared = p.u64("shared_buffers", PAGE, 1 << 46)? / PAGE;
    let timeout = p.time_ns("checkpoint_timeout", 1_000_000)?;
    if timeout == 0 {
        return Err(p.bad("checkpoint_timeout", "must be above 0"));
    }
    let max_wal = p.u64("max_wal_size", WAL_SEGMENT, 1 << 50)?;
    Ok(AppKind::Closed(Box::new(Pgbench {
        clients: p.threads(1),
        sf,
        accounts,
        heap,
        leaves,
        internal,
        sizes,
        base,
        // sized in setup, once the files are known to fit the device
        shared,
        pool: BufferPool::new(1, 1),
        moved: HashMap::new(),
        room: Vec::new(),
        tail: heap - 1,
        tail_rows: accounts - (heap - 1) * ACCOUNTS_PER_PAGE,
        history_rows: 0,
        fpi_epoch: Vec::new(),
        epoch: 0,
        cpu_ns: (cpu_us * 1000.0).round() as u64,
        transactions,
        started: 0,
        files: [0; 5],
        wal: 0,
        wal_bytes: 0,
        wal_at_checkpoint: 0,
        wal_trigger: ((max_wal as f64) / (1.0 + completion)) as u64,
        timeout,
        completion,
        last_checkpoint: None,
        to_write: Vec::new(),
        written: 0,
        per_round: 1,
        checkpoints: 0,
        cold_updates: 0,
        full_pages: 0,
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

struct Pgbench {
    clients: u32,
    sf: u64,
    accounts: u64,
    /// Heap pages of the loaded accounts.
    heap: u64,
    leaves: u64,
    /// Pages of each internal level of the primary key, bottom up.
    internal: Vec<u64>,
    /// Pages of each relation (the heap with room to grow).
    sizes: [u64; 5],
    /// Each relation's first page number in the pool's space.
    base: [u64; 5],
    /// shared_buffers, pages.
    shared: u64,
    pool: BufferPool,
    /// The heap page of each account whose live version moved off its
    /// loaded page (at most one row a page moves: a map, not a vector
    /// of every account).
    moved: HashMap<u64, u64>,
    /// Heap pages with room for a new version (pruned once).
    room: Vec<bool>,
    /// The heap's last page, and the rows on it.
    tail: u64,
    tail_rows: u64,
    history_rows: u64,
    /// The checkpoint epoch in which each page last logged its image.
    fpi_epoch: Vec<u32>,
    epoch: u32,
    cpu_ns: u64,
    transactions: u64,
    started: u64,
    files: [u32; 5],
    wal: u32,
    wal_bytes: u64,
    wal_at_checkpoint: u64,
    wal_trigger: u64,
    timeout: u64,
    completion: f64,
    /// When the last checkpoint started (the run's start at first).
    last_checkpoint: Option<u64>,
    /// The checkpoint's pages to write, and how many are written.
    to_write: Vec<u64>,
    written: usize,
    per_round: usize,
    checkpoints: u64,
    cold_updates: u64,
    full_pages: u64,
    rng: Pcg64Mcg,
}

/// The checkpointer's round: it sleeps this long between checks and
/// between batches of writes, ns.
const ROUND_NS: u64 = 100_000_000;

impl Pgbench {
    /// The relation of pool page `pg` and the byte offset in its file.
    fn place(&self, pg: u64) -> (u32, u64) {
        let r = (0..5).rev().find(|&r| pg >= self.base[r]).unwrap_or(0);
        (self.files[r], (pg - self.base[r]) * PAGE)
    }

    /// Bytes of the full-page image of pool page `pg`: the page less
    /// its hole (the free space between line pointers and tuples is not
    /// logged).
    fn image_bytes(&self, pg: u64) -> u64 {
        if pg >= self.base[TELLERS] && pg < self.base[HISTORY] {
            // tellers and branches: as many rows as the page holds
            let rows = if pg < self.base[BRANCHES] {
                10 * self.sf
            } else {
                self.sf
            };
            return 24 + rows.min(ACCOUNTS_PER_PAGE) * ACCOUNT_TUPLE;
        }
        if pg >= self.base[HISTORY] {
            // the page being filled: half full on average
            return 24 + HISTORY_PER_PAGE * HISTORY_TUPLE / 2;
        }
        PAGE
    }

    /// Bring `pg` into shared_buffers (reading it, and first writing a
    /// dirty victim) and, when `write`, change it: returns the WAL bytes
    /// of its full-page image if this is its first change since the
    /// checkpoint.
    fn touch(&mut self, pg: u64, write: bool, cx: &mut PlanCx) -> u64 {
        let a = self.pool.access(pg, write);
        if let Some(v) = a.evicted_dirty {
            let (f, off) = self.place(v);
            cx.push(Step::Io(FileIo::write(f, off, PAGE)));
        }
        if !a.hit {
            let (f, off) = self.place(pg);
            cx.push(Step::Io(FileIo::read(f, off, PAGE)));
        }
        if write && self.fpi_epoch[pg as usize] < self.epoch {
            self.fpi_epoch[pg as usize] = self.epoch;
            self.full_pages += 1;
            return self.image_bytes(pg);
        }
        0
    }

    /// A new page at the end of relation `r` (page `k` of it):
    /// PostgreSQL extends a relation by writing a zero page (mdextend),
    /// then the page is in shared_buffers, changed.
    fn extend(&mut self, r: usize, k: u64, cx: &mut PlanCx) {
        let pg = self.base[r] + k;
        let (f, off) = self.place(pg);
        cx.push(Step::Io(FileIo::write(f, off, PAGE)));
        // its first change logs no image: the page is new (the insert's
        // record initialises it, XLOG_HEAP_INIT_PAGE)
        self.fpi_epoch[pg as usize] = self.epoch;
    }

    /// The primary key's pages on the way to `aid`'s leaf.
    fn index_path(&mut self, aid: u64, cx: &mut PlanCx) -> u64 {
        let leaf = aid / INDEX_LEAF_ENTRIES;
        let mut base = self.base[INDEX] + self.leaves;
        let mut below = leaf;
        for l in 0..self.internal.len() {
            below /= INDEX_FANOUT;
            self.touch(base + below, false, cx);
            base += self.internal[l];
        }
        self.base[INDEX] + leaf
    }

    fn transaction(&mut self, cx: &mut PlanCx) {
        cx.push(Step::Cpu(self.cpu_ns));
        let aid = self.rng.gen_range(0..self.accounts);
        let tid = self.rng.gen_range(0..10 * self.sf);
        let bid = self.rng.gen_range(0..self.sf);
        let mut wal = 0;
        // UPDATE pgbench_accounts: the key's leaf, the row's page
        let leaf = self.index_path(aid, cx);
        self.touch(leaf, false, cx);
        let page = self
            .moved
            .get(&aid)
            .copied()
            .unwrap_or(aid / ACCOUNTS_PER_PAGE);
        wal += self.touch(self.base[HEAP] + page, true, cx);
        if self.room[page as usize] {
            wal += WAL_HOT_UPDATE;
        } else {
            // no room: the new version goes to the last page, with a
            // new index entry; the old page is pruned later
            self.cold_updates += 1;
            self.room[page as usize] = true;
            if self.tail_rows == ACCOUNTS_PER_PAGE && self.tail + 1 < self.sizes[HEAP] {
                self.tail += 1;
                self.tail_rows = 0;
                self.extend(HEAP, self.tail, cx);
            }
            self.tail_rows += 1;
            if self.tail != page {
                wal += self.touch(self.base[HEAP] + self.tail, true, cx);
                self.moved.insert(aid, self.tail);
            }
            wal += self.touch(leaf, true, cx);
            wal += WAL_COLD_UPDATE + WAL_INDEX_INSERT;
        }
        // SELECT abalance: the same pages, in the pool
        // UPDATE pgbench_tellers, pgbench_branches: row locks to commit
        let lock_t = tid as u32;
        let lock_b = (10 * self.sf + bid) as u32;
        cx.push(Step::Lock(lock_t));
        wal += self.touch(self.base[TELLERS] + tid / ACCOUNTS_PER_PAGE, true, cx);
        wal += WAL_HOT_UPDATE;
        cx.push(Step::Lock(lock_b));
        wal += self.touch(self.base[BRANCHES] + bid / ACCOUNTS_PER_PAGE, true, cx);
        wal += WAL_HOT_UPDATE;
        // INSERT INTO pgbench_history: its last page, a new one when full
        let k = self.history_rows / HISTORY_PER_PAGE;
        if self.history_rows.is_multiple_of(HISTORY_PER_PAGE) && k < self.sizes[HISTORY] {
            self.extend(HISTORY, k, cx);
        }
        self.history_rows += 1;
        wal += self.touch(
            self.base[HISTORY] + k.min(self.sizes[HISTORY] - 1),
            true,
            cx,
        );
        wal += WAL_INSERT + WAL_COMMIT;
        self.wal_bytes += wal;
        cx.push(Step::Commit {
            log: self.wal,
            bytes: wal,
        });
        cx.push(Step::Unlock(lock_b));
        cx.push(Step::Unlock(lock_t));
        cx.push(Step::End(0));
    }

    /// The checkpointer's next round.
    fn checkpointer(&mut self, cx: &mut PlanCx) {
        let now = cx.now();
        let last = *self.last_checkpoint.get_or_insert(now);
        if self.written < self.to_write.len() {
            let end = (self.written + self.per_round).min(self.to_write.len());
            for i in self.written..end {
                let (f, off) = self.place(self.to_write[i]);
                cx.push(Step::Io(FileIo::write(f, off, PAGE)));
            }
            self.written = end;
            if end == self.to_write.len() {
                // CheckPointGuts ends with fsync of every file written
                for f in self.files {
                    cx.push(Step::Io(FileIo::fsync(f)));
                }
            }
        } else if now >= last + self.timeout
            || self.wal_bytes - self.wal_at_checkpoint >= self.wal_trigger
        {
            // the redo point: every page's next change logs its image
            self.epoch += 1;
            self.checkpoints += 1;
            self.last_checkpoint = Some(now);
            self.wal_at_checkpoint = self.wal_bytes;
            self.to_write.clear();
            let n = self.pool.dirty_pages() as usize;
            self.pool.clean(n, &mut self.to_write);
            // BufferSync writes in file and block order
            self.to_write.sort_unstable();
            self.written = 0;
            let rounds = ((self.completion * self.timeout as f64) / ROUND_NS as f64).max(1.0);
            self.per_round = (self.to_write.len() as f64 / rounds).ceil().max(1.0) as usize;
        }
        cx.push(Step::Sleep(ROUND_NS));
        cx.push(Step::End(1));
    }
}

impl Model for Pgbench {
    fn op_names(&self) -> &'static [&'static str] {
        &["transaction", "checkpointer"]
    }

    fn counted(&self, kind: u16) -> bool {
        kind == 0
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.clients, 1)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0070_6762_656e_6368);
        let loaded = [
            self.heap,
            self.sizes[INDEX],
            self.sizes[TELLERS],
            self.sizes[BRANCHES],
            0,
        ];
        for ((file, size), loaded) in self.files.iter_mut().zip(self.sizes).zip(loaded) {
            *file = cx.create_written(size * PAGE, loaded * PAGE)?;
            // pgbench -i loaded the tables through the page cache
            cx.cache_clean(*file, loaded * PAGE);
        }
        let total = self.base[HISTORY] + self.sizes[HISTORY];
        self.pool = BufferPool::new(self.shared, total);
        self.room = vec![false; self.sizes[HEAP] as usize];
        self.fpi_epoch = vec![0; total as usize];
        let wal = cx.create_written(WAL_SEGMENT, WAL_SEGMENT)?;
        self.wal = cx.log(LogSpec {
            file: wal,
            size: WAL_SEGMENT,
            block: PAGE,
            direct: false,
            sync: LogSync::Fdatasync,
            rotate: None,
            rewrite_last_block: true,
        });
        // a running server's pool: random heap pages, the index's
        // internal levels, the small tables
        let mut internal = vec![(
            self.base[INDEX] + self.leaves,
            self.sizes[INDEX] - self.leaves,
        )];
        internal.push((
            self.base[TELLERS],
            self.sizes[TELLERS] + self.sizes[BRANCHES],
        ));
        crate::kit::warm_btree_pool(&mut self.pool, &mut self.rng, self.heap, &internal);
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if t >= self.clients {
            self.checkpointer(cx);
            return Ok(true);
        }
        if self.started >= self.transactions {
            return Ok(false);
        }
        self.started += 1;
        self.transaction(cx);
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "scale_factor": self.sf,
            "accounts": self.accounts,
            "buffer_hit_ratio": self.pool.hit_ratio(),
            "cold_updates": self.cold_updates,
            "full_page_images": self.full_pages,
            "wal_bytes": self.wal_bytes,
            "checkpoints": self.checkpoints,
        })
    }
}
