//! MySQL/InnoDB: sysbench OLTP (`oltp`) and TPC-C (`tpcc`) on one model
//! of InnoDB's storage engine (docs/spec/workloads.md: OLTP 8 GB; TPC-C 100
//! warehouses, 100 clients, 9.4 GB in the NVMM study, 200 GB with 24 GB
//! of DRAM in the flash placement study, docs/spec/hybrid.md).
//!
//! The engine ([`Inno`]): 16 KB pages of one tablespace file held in a
//! buffer pool (clock replacement; InnoDB's LRU with a midpoint insertion
//! behaves alike for the point accesses modelled here); a page that
//! misses is read from the tablespace (buffered `pread` with
//! `innodb_flush_method=fdatasync`, the default of the studies' MySQL
//! versions, or `O_DIRECT`). A transaction's row changes dirty their leaf
//! pages and an undo page, and produce redo records; COMMIT appends them
//! to the redo log with group commit and waits for the write and its
//! fsync (`innodb_flush_log_at_trx_commit=1`). A background thread (the
//! master thread / page cleaner) wakes every second and flushes dirty
//! pages from the replacement end of the pool: `innodb_io_capacity`
//! pages, more when the dirty share passes `innodb_max_dirty_pages_pct`
//! and as many as the redo written since the last round stands for
//! (adaptive flushing), every page written twice: first a batch of up to
//! 64 pages sequentially into the doublewrite area and an fsync, then each
//! page in place and an fsync of the tablespace. When the redo not yet
//! covered by flushed pages passes 15/16 of the log's capacity, the next
//! transaction's thread flushes every dirty page itself before it goes on
//! and the other threads wait for it (`log_check_margins`: a synchronous
//! checkpoint). A user thread that needs a frame whose page is dirty
//! flushes that page itself through the doublewrite buffer (a single-page
//! flush).
//!
//! Hybrid memory (docs/spec/hybrid.md, placement 2): with `hybrid` bytes the
//! buffer pool is `buffer_pool + hybrid` bytes of flash-backed memory of
//! which only `buffer_pool` bytes are in DRAM; a touch of a buffer page
//! that is not in DRAM waits for the page to be faulted in from the flash
//! (`hybrid_fault_us`).

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::fs::Layout;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::kit::BufferPool;
use crate::model::{FileIo, LogSpec, LogSync, MetricKind, Model, PlanCx, SetupCx, Step};

/// InnoDB's page size (`UNIV_PAGE_SIZE`, 16 KiB).
const PAGE: u64 = 16 << 10;
/// Pages of the doublewrite buffer written in one batch
/// (`TRX_SYS_DOUBLEWRITE_BLOCK_SIZE`: two blocks of 64 pages).
const DBLWR_BATCH: usize = 64;
/// Fill of leaf pages loaded in key order (InnoDB leaves 1/16 free on
/// sequential inserts: `BTR_PAGE_SEQ_INSERT_LIMIT`).
const SEQ_FILL: f64 = 15.0 / 16.0;
/// Fill of pages of an index filled in random key order (B+trees after
/// random inserts settle near ln 2; ESTIMATE 0.7).
const RANDOM_FILL: f64 = 0.7;
/// Bytes of InnoDB's per-row overhead in a clustered index (5-byte record
/// header, 6-byte transaction id, 7-byte roll pointer, the page directory
/// share: ~20 bytes; MySQL manual, "InnoDB row formats").
const ROW_OVERHEAD: u64 = 20;
/// Undo log pages in the ring the transactions write (rollback segment
/// pages, reused after purge): ESTIMATE, 64 MiB.
const UNDO_PAGES: u64 = 4096;
/// Redo bytes per row change: the record (page number, offset, changed
/// fields, ~100-300 bytes) plus the undo record's own redo (ESTIMATE:
/// 400 bytes in all).
const REDO_PER_CHANGE: u64 = 400;
/// Redo bytes of a commit (the undo header update and the commit record:
/// ESTIMATE 100 bytes).
const REDO_COMMIT: u64 = 100;
/// CPU of handling one row inside a statement (InnoDB's row fetch or
/// change, MySQL's handler call and row evaluation): ESTIMATE 1 µs, about
/// 2,000 instructions at an IPC near 1 on the studies' 2.3-2.6 GHz
/// Xeons. Used to share a transaction's CPU between statements and rows
/// when the OLTP calibration is carried over to TPC-C.
const ROW_US: f64 = 1.0;

/// CALIBRATED: CPU per sysbench OLTP transaction (18 statements, about
/// 414 rows), against the Moneta study's Table V (OLTP, 799 tx/s on the
/// full Moneta, `moneta-balance`, XFS, 16 threads): the one number
/// calibrated for MySQL; the RAID-Disk, RAID-SSD and FusionIO figures of
/// the same table are predictions, as are all TPC-C figures. Found with
/// `storlab apps calibrate oltp --device moneta-balance --param cpu_us
/// --target 799` (20,000 transactions; the run is CPU-bound there: 16
/// threads on the host's 8 cores, the pool's hit ratio 0.92).
const OLTP_CPU_US: f64 = 10012.6;
/// sysbench OLTP's statements per transaction (oltp.lua: 10 point
/// selects, 4 range queries, 2 updates, 1 delete, 1 insert).
const OLTP_STATEMENTS: f64 = 18.0;
/// sysbench OLTP's rows handled per transaction: 10 + 4 x 100 + 2 + 1 + 1.
const OLTP_ROWS: f64 = 414.0;

/// CPU per SQL statement outside its rows (parse, optimise, open tables,
/// the protocol), derived from the OLTP calibration:
/// (OLTP_CPU_US - OLTP_ROWS x ROW_US) / OLTP_STATEMENTS.
fn statement_us(oltp_cpu_us: f64) -> f64 {
    ((oltp_cpu_us - OLTP_ROWS * ROW_US) / OLTP_STATEMENTS).max(0.0)
}

const INNODB_PARAMS: [ParamDef; 9] = [
    ParamDef {
        name: "flush_method",
        default: "fdatasync",
        help: "innodb_flush_method for the tablespace: fdatasync (buffered reads and writes through the page cache, fsync; the default of MySQL 5.x) or o_direct",
    },
    ParamDef {
        name: "log_file",
        default: "96m",
        help: "redo log capacity, bytes (innodb_log_files_in_group x innodb_log_file_size: 2 x 48 MB, MySQL 5.6's default)",
    },
    ParamDef {
        name: "io_capacity",
        default: "200",
        help: "innodb_io_capacity: pages the background flush writes per second at least (MySQL 5.5/5.6 default 200)",
    },
    ParamDef {
        name: "max_dirty_pct",
        default: "75",
        help: "innodb_max_dirty_pages_pct: above this share of dirty pages the background flush writes the excess too (MySQL 5.5/5.6 default 75)",
    },
    ParamDef {
        name: "hybrid",
        default: "0",
        help: "bytes of flash-backed hybrid memory added to the buffer pool (docs/spec/hybrid.md placement 2): the pool is buffer_pool + hybrid bytes, only buffer_pool of it in DRAM; 0: none",
    },
    ParamDef {
        name: "hybrid_fault_us",
        default: "103",
        help: "µs to fault a 16 KB buffer page of hybrid memory in from flash with the flash idle (ESTIMATE from this model's devices: storlab sim --device fusion-io --rw=randread --bs=16k --iodepth=1 --set ssd.ftl.precondition='\"full\"' gives 100.9 µs; plus the hybrid-mem preset's 2 µs of fault handling, miss_ns)",
    },
    ParamDef {
        name: "hybrid_busy_us",
        default: "30",
        help: "µs one 16 KB page moved between hybrid memory's DRAM and its flash holds the flash: faults and write-backs of dirty pages queue on it in arrival order, so 100 clients wait for each other (ESTIMATE from this model's devices: the fusion-io preset saturates at 34.0k 16 KB random reads/s, 29.4 µs each, and 28.9k of a 50/50 read/write mix, 34.6 µs: storlab sim --device fusion-io --ioengine=libaio --direct=1 --rw=randread --bs=16k --iodepth=16 --set ssd.ftl.precondition='\"full\"')",
    },
    ParamDef {
        name: "transactions",
        default: "",
        help: "transactions in all clients together (the run ends after them, or at runtime=); empty: the model's default",
    },
    ParamDef {
        name: "cpu_us",
        default: "",
        help: "CPU per OLTP transaction, µs (default: the calibrated value; TPC-C derives its per-statement CPU from it)",
    },
];

const OLTP_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "db",
        default: "8g",
        help: "database size, bytes (docs/spec/workloads.md: sysbench OLTP on 8 GB); the table's rows follow from it",
    },
    ParamDef {
        name: "buffer_pool",
        default: "2g",
        help: "innodb_buffer_pool_size, bytes (ESTIMATE: the study does not give it; a quarter of the 8 GB database, so that it does not fit, as the study meant)",
    },
    INNODB_PARAMS[0],
    INNODB_PARAMS[1],
    INNODB_PARAMS[2],
    INNODB_PARAMS[3],
    INNODB_PARAMS[4],
    INNODB_PARAMS[5],
    INNODB_PARAMS[6],
    ParamDef {
        name: "transactions",
        default: "20000",
        help: "transactions in all threads together (the run ends after them, or at runtime=)",
    },
    INNODB_PARAMS[8],
];

const TPCC_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "warehouses",
        default: "100",
        help: "TPC-C warehouses (the database is about 94 MB each: 100 give the NVMM study's 9.4 GB; about 2,130 the flash placement study's 200 GB, run there with buffer_pool=20g, flush_method=o_direct and, for flash as hybrid memory, hybrid=160g)",
    },
    ParamDef {
        name: "buffer_pool",
        default: "2g",
        help: "innodb_buffer_pool_size, bytes (ESTIMATE: a quarter of the NVMM study's 8 GB of DRAM; the flash placement study: 20g of its 24 GB)",
    },
    INNODB_PARAMS[0],
    INNODB_PARAMS[1],
    INNODB_PARAMS[2],
    INNODB_PARAMS[3],
    INNODB_PARAMS[4],
    INNODB_PARAMS[5],
    INNODB_PARAMS[6],
    ParamDef {
        name: "transactions",
        default: "20000",
        help: "transactions in all clients together (the run ends after them, or at runtime=)",
    },
    ParamDef {
        name: "cpu_us",
        default: "",
        help: "CPU per OLTP transaction, µs, from which TPC-C's CPU per statement is derived (default: the OLTP calibration)",
    },
];

const ENGINE_MODELS: &[&str] = &[
    "InnoDB: 16 KB pages of a tablespace file per table (innodb_file_per_table, MySQL 5.6's default) in a buffer pool (clock replacement); a miss reads the page (buffered pread with flush_method=fdatasync, O_DIRECT with o_direct); a frame whose page is dirty is flushed by the user thread first (doublewrite, then in place)",
    "commit: the transaction's redo (400 bytes per row change, 100 per commit) joins the log buffer; group commit writes and fsyncs the redo log (innodb_flush_log_at_trx_commit=1) before the client goes on; a read-only transaction commits without the log",
    "background flush every second from the replacement end of the pool: io_capacity pages, the excess over max_dirty_pct, and the share of dirty pages the round's redo stands for (adaptive flushing); batches of 64 pages go sequentially into the doublewrite area (fsync), then each page in place (fsync of the tablespace)",
    "synchronous checkpoint: when the redo not covered by flushed pages passes 15/16 of log_file, the next transaction's thread flushes every dirty page and the other clients wait for it (log_check_margins)",
    "hybrid memory (hybrid > 0): the pool grows by `hybrid` bytes of flash-backed memory; DRAM (buffer_pool bytes) caches it by clock; touching a buffer page not in DRAM faults it in from the flash and evicting a page that changed writes it back (write-back, as the hybrid-mem preset); both hold the flash for hybrid_busy_us in arrival order (one queue for the card, shared by every client) and a fault completes hybrid_fault_us after its turn",
];

const ENGINE_SIMPLIFIES: &[&str] = &[
    "B+tree internal pages are taken as always resident (they are under 2 % of the data and the hottest pages): only leaf, undo and new pages are looked up in the pool",
    "no row locks, latches or the kernel mutex: their waits are inside the calibrated CPU; no page splits (each table keeps its shape), no insert buffer, no read-ahead, no purge thread (undo pages are reused in a ring)",
    "the pool starts warm: the transactions' own access pattern is run without IO until the pool has turned over twice (or 8 accesses a frame when it holds the data), then every page is clean; the operating system's page cache starts empty",
    "a new page (an append at a table's end) is created in the pool without a read",
];

/// `oltp` and `tpcc`.
pub static APPS: &[&AppInfo] = &[&OLTP, &TPCC];

static OLTP: AppInfo = AppInfo {
    name: "oltp",
    summary: "sysbench OLTP (read/write) on MySQL/InnoDB: 18-statement transactions",
    unit: "transactions/s",
    models: &[
        "16 threads (the studies' thread count) run sysbench oltp.lua transactions back to back: 10 point selects by primary key, 4 range queries of 100 rows, an update of the indexed column k, an update of c, a delete and an insert of the same id, between BEGIN and COMMIT",
        "the table sbtest: rows of 190 bytes (id, k, c char(120), pad char(60)) plus InnoDB's 20, in a clustered index loaded in key order (15/16 full); a secondary index on k (16-byte entries, 0.7 full, k random); rows = db / their bytes",
        "ids follow sysbench's default 'special' distribution: 75 % uniform over the central 1 % of ids, 25 % the mean of 12 uniform draws",
        ENGINE_MODELS[0],
        ENGINE_MODELS[1],
        ENGINE_MODELS[2],
        ENGINE_MODELS[3],
        ENGINE_MODELS[4],
    ],
    simplifies: &[
        ENGINE_SIMPLIFIES[0],
        ENGINE_SIMPLIFIES[1],
        ENGINE_SIMPLIFIES[2],
        ENGINE_SIMPLIFIES[3],
        "CPU per transaction is one calibrated figure, spread evenly over the 18 statements",
    ],
    calibration: "cpu_us (CPU per transaction) is CALIBRATED against the Moneta study's Table V, OLTP on Moneta (moneta-balance, XFS, 16 threads): 799 tx/s gives 10,012.6 µs (storlab apps calibrate oltp --device moneta-balance --param cpu_us --target 799); everything else is derived from the parameters",
    params: OLTP_PARAMS,
    build: build_oltp,
};

static TPCC: AppInfo = AppInfo {
    name: "tpcc",
    summary: "TPC-C on MySQL/InnoDB: new-order, payment, order-status, delivery, stock-level",
    unit: "transactions/s",
    models: &[
        "100 clients (one per warehouse in turn) run the TPC-C mix back to back, no keying or think time (as tpcc-mysql): new-order 45 %, payment 43 %, order-status, delivery and stock-level 4 % each; the metric counts every transaction (tpmC, new-orders a minute, is in the model object)",
        "tables per warehouse with TPC-C's cardinalities and row sizes plus InnoDB's 20 bytes, pages 15/16 full: stock 100,000 x 306 B, customer 30,000 x 655 B (and an index by last name), orders 30,000 x 24 B, order_line 300,000 x 54 B, new_order 9,000 x 8 B, history 30,000 x 46 B; item 100,000 x 82 B shared; about 94 MB a warehouse",
        "new-order: warehouse, district (update), customer; 5-15 lines (uniform), each an item (NURand(8191)), its stock row read and updated (1 % from a remote warehouse) and an order line inserted; an order and a new_order row inserted. payment: warehouse and district updated, customer (60 % by last name: index page and 3 rows) updated, history inserted. order-status: customer (60 % by name), its last order via the orders-by-customer index, its lines. delivery: for 10 districts the oldest new order deleted, its order and lines updated, its customer updated. stock-level: the district, the lines of its last 20 orders, and the stock rows of their ~200 items",
        "customers and items are drawn with TPC-C's NURand (A = 1023 and 8191, C chosen at load): the skew decides the pool's hit ratio",
        "CPU: statements x the CPU per statement carried over from the OLTP calibration, plus rows x 1 µs (ESTIMATE, see calibration)",
        ENGINE_MODELS[0],
        ENGINE_MODELS[1],
        ENGINE_MODELS[2],
        ENGINE_MODELS[3],
        ENGINE_MODELS[4],
    ],
    simplifies: &[
        ENGINE_SIMPLIFIES[0],
        ENGINE_SIMPLIFIES[1],
        ENGINE_SIMPLIFIES[2],
        ENGINE_SIMPLIFIES[3],
        "orders, order lines and new orders reuse each district's region in a ring (the tables do not grow); history appends to one ring",
        "order-status and delivery find their rows by position (the order a customer placed last is a random recent one), not by searching",
        "1 % of new-orders roll back in TPC-C: not modelled",
    ],
    calibration: "no Table V figure for TPC-C: CPU is an ESTIMATE carried over from the OLTP calibration (799 tx/s on moneta-balance): CPU per statement = (OLTP CPU - 414 rows x 1 µs) / 18 statements, and a TPC-C transaction costs its statements x that plus its rows x 1 µs (new-order ~35 statements, ~45 rows)",
    params: TPCC_PARAMS,
    build: build_tpcc,
};

/// Engine parameters common to both applications.
struct EngineParams {
    pool_bytes: u64,
    hybrid_bytes: u64,
    fault_ns: u64,
    busy_ns: u64,
    direct: bool,
    log_bytes: u64,
    io_capacity: u64,
    max_dirty: f64,
    cpu_us: f64,
    transactions: u64,
}

fn engine_params(p: &Params) -> Result<EngineParams, AppError> {
    let cpu_us = match p.str("cpu_us") {
        "" => OLTP_CPU_US,
        _ => p.f64("cpu_us")?,
    };
    if !(0.0..=1e8).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 100,000,000"));
    }
    let fault_us = p.f64("hybrid_fault_us")?;
    if !(0.0..=1e6).contains(&fault_us) {
        return Err(p.bad("hybrid_fault_us", "must be from 0 to 1,000,000"));
    }
    let busy_us = p.f64("hybrid_busy_us")?;
    if !(0.0..=1e6).contains(&busy_us) {
        return Err(p.bad("hybrid_busy_us", "must be from 0 to 1,000,000"));
    }
    Ok(EngineParams {
        pool_bytes: p.u64("buffer_pool", PAGE, 1 << 46)?,
        hybrid_bytes: p.u64("hybrid", 0, 1 << 46)?,
        fault_ns: (fault_us * 1000.0).round() as u64,
        busy_ns: (busy_us * 1000.0).round() as u64,
        direct: p.choice("flush_method", &["fdatasync", "o_direct"])? == "o_direct",
        log_bytes: p.u64("log_file", 1 << 20, 1 << 40)?,
        io_capacity: p.u64("io_capacity", 1, 1 << 30)?,
        max_dirty: p.u64("max_dirty_pct", 1, 100)? as f64 / 100.0,
        cpu_us,
        transactions: p.u64("transactions", 1, 1 << 50)?,
    })
}

/// A table (or index) laid out in the tablespace: `rows` rows at
/// `per_page` a page from page `base`.
#[derive(Clone, Copy, Debug)]
struct Table {
    base: u64,
    pages: u64,
    per_page: u64,
}

impl Table {
    fn page_of(&self, row: u64) -> u64 {
        self.base + (row / self.per_page).min(self.pages - 1)
    }
}

/// Tables are laid out one after another from page 0, each in a file of
/// its own (`innodb_file_per_table`, MySQL 5.6's default).
struct Layouter {
    next: u64,
    /// First page of each table.
    firsts: Vec<u64>,
}

impl Layouter {
    /// One file of `pages` pages.
    fn flat(pages: u64) -> Layouter {
        Layouter {
            next: pages,
            firsts: vec![0],
        }
    }

    fn table(&mut self, rows: u64, row_bytes: u64, fill: f64) -> Table {
        let per_page = ((PAGE as f64 * fill) / row_bytes as f64).max(1.0) as u64;
        let pages = rows.div_ceil(per_page).max(1);
        let t = Table {
            base: self.next,
            pages,
            per_page,
        };
        self.firsts.push(self.next);
        self.next += pages;
        t
    }
}

/// The application channel of hybrid memory's flash ([`Step::Channel`]).
const FLASH: u32 = 0;

/// The storage engine: buffer pool, files, redo, flushing.
struct Inno {
    pool: BufferPool,
    /// Hybrid memory: which buffer pages are in DRAM.
    dram: Option<BufferPool>,
    fault_ns: u64,
    busy_ns: u64,
    direct: bool,
    pages: u64,
    /// (first page, file) of each table's file, in page order.
    segs: Vec<(u64, u32)>,
    dblwr: u32,
    log: u32,
    log_bytes: u64,
    /// Redo written since the pages it covers were last flushed.
    redo_age: u64,
    /// Redo written since the last background round.
    redo_round: u64,
    io_capacity: u64,
    max_dirty: f64,
    ckpt_owner: Option<u32>,
    undo: Table,
    undo_next: u64,
    dblwr_half: u64,
    /// Plan buffer (steps of the operation being planned).
    steps: Vec<Step>,
    /// Warming: pool accesses only, no steps.
    dry: bool,
    scratch: Vec<u64>,
    flushed: u64,
    single_flushes: u64,
    sync_checkpoints: u64,
    faults: u64,
    /// Hybrid memory: changed pages written back to the flash.
    writebacks: u64,
}

impl Inno {
    fn new(ep: &EngineParams, lay: &Layouter, undo: Table) -> Inno {
        let pages = lay.next.max(1);
        let frames = (ep.pool_bytes + ep.hybrid_bytes) / PAGE;
        let dram = (ep.hybrid_bytes > 0).then(|| BufferPool::new(ep.pool_bytes / PAGE, pages));
        Inno {
            pool: BufferPool::new(frames, pages),
            dram,
            fault_ns: ep.fault_ns,
            busy_ns: ep.busy_ns,
            direct: ep.direct,
            pages,
            segs: lay.firsts.iter().map(|&f| (f, 0)).collect(),
            dblwr: 0,
            log: 0,
            log_bytes: ep.log_bytes,
            redo_age: 0,
            redo_round: 0,
            io_capacity: ep.io_capacity,
            max_dirty: ep.max_dirty,
            ckpt_owner: None,
            undo,
            undo_next: 0,
            dblwr_half: 0,
            steps: Vec::new(),
            dry: false,
            scratch: Vec::new(),
            flushed: 0,
            single_flushes: 0,
            sync_checkpoints: 0,
            faults: 0,
            writebacks: 0,
        }
    }

    fn setup(&mut self, cx: &mut SetupCx) -> Result<(), AppError> {
        if self.segs.is_empty() {
            self.segs.push((0, 0));
        }
        for i in 0..self.segs.len() {
            let end = self.segs.get(i + 1).map_or(self.pages, |s| s.0);
            let n = end - self.segs[i].0;
            self.segs[i].1 = cx.create_file(n.max(1) * PAGE, Layout::Allocated)?;
        }
        // the doublewrite area: 2 x 64 pages in the system tablespace
        self.dblwr = cx.create_file(2 * DBLWR_BATCH as u64 * PAGE, Layout::Allocated)?;
        let log_file = cx.create_file(self.log_bytes, Layout::Allocated)?;
        self.log = cx.log(LogSpec {
            file: log_file,
            size: self.log_bytes,
            block: 512,
            direct: false,
            sync: LogSync::Fsync,
            rotate: false,
        });
        Ok(())
    }

    /// The file holding `page` and the page's offset in it.
    fn place(&self, page: u64) -> (u32, u64) {
        let i = self.segs.partition_point(|s| s.0 <= page).max(1) - 1;
        let (first, file) = self.segs[i];
        (file, (page - first) * PAGE)
    }

    fn read_io(&self, page: u64) -> FileIo {
        let (f, off) = self.place(page);
        FileIo::read(f, off, PAGE).direct(self.direct)
    }

    fn write_io(&self, page: u64) -> FileIo {
        let (f, off) = self.place(page);
        FileIo::write(f, off, PAGE).direct(self.direct)
    }

    /// Hybrid memory: the buffer page must be in DRAM.
    fn in_dram(&mut self, page: u64, write: bool) {
        if let Some(d) = &mut self.dram {
            let a = d.access(page, write);
            if !a.hit && !self.dry {
                if a.evicted_dirty.is_some() {
                    // the changed page leaving DRAM is written back to
                    // the flash; the faulting client does not wait for it
                    self.writebacks += 1;
                    self.steps.push(Step::Channel {
                        ch: FLASH,
                        busy: self.busy_ns,
                        latency: 0,
                    });
                }
                self.faults += 1;
                self.steps.push(Step::Channel {
                    ch: FLASH,
                    busy: self.busy_ns,
                    latency: self.fault_ns,
                });
            }
        }
    }

    /// Look `page` up (dirtying it when `write`); a miss reads it, after
    /// flushing a dirty victim. `fresh`: a new page, created without a
    /// read.
    fn touch(&mut self, page: u64, write: bool, fresh: bool) {
        let a = self.pool.access(page, write);
        if !a.hit && !self.dry {
            if let Some(v) = a.evicted_dirty {
                self.single_flushes += 1;
                self.flush_batch(&[v]);
            }
            if !fresh {
                self.steps.push(Step::Io(self.read_io(page)));
            }
        }
        self.in_dram(page, write);
    }

    /// A row change: its leaf page dirtied, an undo record, redo.
    fn change(&mut self, page: u64, fresh: bool) -> u64 {
        self.touch(page, true, fresh);
        let u = self.undo.base + (self.undo_next / self.undo.per_page) % self.undo.pages;
        self.undo_next += 1;
        self.touch(u, true, true);
        REDO_PER_CHANGE
    }

    /// Write `pages` through the doublewrite buffer (the caller's steps).
    fn flush_batch(&mut self, pages: &[u64]) {
        for chunk in pages.chunks(DBLWR_BATCH) {
            let off = self.dblwr_half * DBLWR_BATCH as u64 * PAGE;
            self.dblwr_half ^= 1;
            let mut w = FileIo::write(self.dblwr, off, chunk.len() as u64 * PAGE);
            w.direct = self.direct;
            self.steps.push(Step::Io(w));
            self.steps.push(Step::Io(FileIo::fsync(self.dblwr)));
            let mut files: [u32; DBLWR_BATCH] = [u32::MAX; DBLWR_BATCH];
            let mut nf = 0;
            for &pg in chunk {
                let w = self.write_io(pg);
                if !files[..nf].contains(&w.file) {
                    files[nf] = w.file;
                    nf += 1;
                }
                self.steps.push(Step::Issue(w));
            }
            self.steps.push(Step::Join);
            // fil_flush of every tablespace written
            for &f in &files[..nf] {
                self.steps.push(Step::Io(FileIo::fsync(f)));
            }
            self.flushed += chunk.len() as u64;
        }
    }

    /// Flush up to `n` dirty pages from the replacement end.
    fn flush_dirty(&mut self, n: usize) -> usize {
        let mut v = std::mem::take(&mut self.scratch);
        v.clear();
        self.pool.clean(n, &mut v);
        self.flush_batch(&v);
        let k = v.len();
        self.scratch = v;
        k
    }

    /// The background thread's round: sleep a second, then flush.
    fn background(&mut self) {
        self.steps.push(Step::Sleep(1_000_000_000));
        let dirty = self.pool.dirty_pages();
        let frames = self.pool.frames();
        let mut n = self.io_capacity.min(dirty);
        let limit = (self.max_dirty * frames as f64) as u64;
        if dirty > limit {
            n = n.max(dirty - limit + self.io_capacity.min(limit));
        }
        // adaptive: the round's redo, as a share of the log's usable
        // space, of the dirty pages
        let usable = self.log_bytes as f64 * 7.0 / 8.0;
        let adaptive = (dirty as f64 * (self.redo_round as f64 / usable)).ceil() as u64;
        n = n.max(adaptive.min(dirty));
        self.redo_round = 0;
        if n > 0 {
            let k = self.flush_dirty(n as usize) as u64;
            let left = dirty.saturating_sub(k).max(1);
            self.redo_age = self
                .redo_age
                .saturating_sub((self.redo_age as f64 * k as f64 / (k + left) as f64) as u64);
            if self.pool.dirty_pages() == 0 {
                self.redo_age = 0;
            }
        }
    }

    /// Before a transaction of thread `t`: the synchronous checkpoint
    /// when the redo is near the log's end. Returns true when this
    /// operation is the checkpoint itself.
    fn margin(&mut self, t: u32) -> bool {
        if self.ckpt_owner == Some(t) {
            // its flush is done
            self.ckpt_owner = None;
        }
        if self.ckpt_owner.is_some() {
            // wait for the checkpoint in progress
            self.steps.push(Step::Lock(0));
            self.steps.push(Step::Unlock(0));
            return false;
        }
        if self.redo_age > self.log_bytes / 16 * 15 {
            self.ckpt_owner = Some(t);
            self.sync_checkpoints += 1;
            self.steps.push(Step::Lock(0));
            self.flush_dirty(usize::MAX);
            self.steps.push(Step::Unlock(0));
            self.redo_age = 0;
            return true;
        }
        false
    }

    fn commit(&mut self, redo: u64) {
        let bytes = redo + REDO_COMMIT;
        self.redo_age += bytes;
        self.redo_round += bytes;
        self.steps.push(Step::Commit {
            log: self.log,
            bytes,
        });
    }

    /// Warm the pool with `f`'s accesses until it has turned over twice,
    /// then mark every page clean.
    fn warm(&mut self, mut f: impl FnMut(&mut Inno)) {
        self.dry = true;
        let frames = self.pool.frames();
        // two turnovers, or (a pool that holds the data) 8 accesses a
        // frame
        while self.pool.misses() < 2 * frames && self.pool.hits() + self.pool.misses() < 20 * frames
        {
            f(self);
            self.steps.clear();
        }
        self.dry = false;
        let mut v = Vec::new();
        self.pool.clean(usize::MAX, &mut v);
        if let Some(d) = &mut self.dram {
            let mut w = Vec::new();
            d.clean(usize::MAX, &mut w);
            d.reset_counts();
        }
        self.pool.reset_counts();
        self.redo_age = 0;
        self.redo_round = 0;
    }

    /// What thread `t` does before its next transaction, shared by the
    /// workloads: the background thread's round (thread `threads`), a
    /// checkpoint when the redo log is nearly full, or the end of the
    /// run; `None` when it runs a transaction (counted in `started`).
    fn before_transaction(
        &mut self,
        t: u32,
        threads: u32,
        started: &mut u64,
        transactions: u64,
        cx: &mut PlanCx,
    ) -> Option<bool> {
        if t == threads {
            self.background();
            self.emit(cx);
            return Some(true);
        }
        if self.margin(t) {
            self.emit(cx);
            return Some(true);
        }
        if *started >= transactions {
            self.steps.clear();
            return Some(false);
        }
        *started += 1;
        None
    }

    fn emit(&mut self, cx: &mut PlanCx) {
        for s in self.steps.drain(..) {
            cx.push(s);
        }
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "pool_hit_ratio": self.pool.hit_ratio(),
            "pool_pages": self.pool.frames(),
            "database_pages": self.pages,
            "pages_flushed": self.flushed,
            "single_page_flushes": self.single_flushes,
            "sync_checkpoints": self.sync_checkpoints,
            "hybrid_faults": self.faults,
            "hybrid_writebacks": self.writebacks,
            "dram_hit_ratio": self.dram.as_ref().map(|d| d.hit_ratio()),
        })
    }
}

// ---------------------------------------------------------------- oltp

/// sysbench's sbtest row: id int, k int, c char(120), pad char(60).
const SBTEST_ROW: u64 = 4 + 4 + 120 + 60 + 2;
/// A secondary-index entry on k: k, the primary key, record header.
const SBTEST_K_ENTRY: u64 = 4 + 4 + 8;

fn build_oltp(p: &Params) -> Result<AppKind, AppError> {
    let ep = engine_params(p)?;
    let db = p.scaled(p.u64("db", 1 << 20, 1 << 50)?, 1 << 20);
    let per_row =
        (SBTEST_ROW + ROW_OVERHEAD) as f64 / SEQ_FILL + SBTEST_K_ENTRY as f64 / RANDOM_FILL;
    let rows = ((db as f64 / per_row) as u64).max(1000);
    let mut lay = Layouter {
        next: 0,
        firsts: Vec::new(),
    };
    let table = lay.table(rows, SBTEST_ROW + ROW_OVERHEAD, SEQ_FILL);
    let kidx = lay.table(rows, SBTEST_K_ENTRY, RANDOM_FILL);
    let undo = lay.table(UNDO_PAGES, PAGE, 1.0);
    let eng = Inno::new(&ep, &lay, undo);
    Ok(AppKind::Closed(Box::new(Oltp {
        eng,
        rows,
        table,
        kidx,
        stmt_ns: (ep.cpu_us / OLTP_STATEMENTS * 1000.0).round() as u64,
        transactions: ep.transactions,
        started: 0,
        threads: p.threads(16),
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

struct Oltp {
    eng: Inno,
    rows: u64,
    table: Table,
    kidx: Table,
    stmt_ns: u64,
    transactions: u64,
    started: u64,
    threads: u32,
    rng: Pcg64Mcg,
}

impl Oltp {
    /// An id from sysbench's 'special' distribution (sb_rand_special:
    /// rand-spec-pct 1, rand-spec-res 75, rand-iter 12).
    fn id(&mut self) -> u64 {
        let n = self.rows;
        if self.rng.gen_bool(0.75) {
            let width = (n / 100).max(1);
            n / 2 - width / 2 + self.rng.gen_range(0..width)
        } else {
            let s: u64 = (0..12).map(|_| self.rng.gen_range(0..n)).sum();
            s / 12
        }
    }

    fn stmt(&mut self) {
        if !self.eng.dry {
            self.eng.steps.push(Step::Cpu(self.stmt_ns));
        }
    }

    /// One transaction's accesses into the engine's plan buffer.
    fn transaction(&mut self) {
        for _ in 0..10 {
            self.stmt();
            let id = self.id();
            self.eng.touch(self.table.page_of(id), false, false);
        }
        for _ in 0..4 {
            self.stmt();
            let id = self.id().min(self.rows.saturating_sub(100));
            let (a, b) = (self.table.page_of(id), self.table.page_of(id + 99));
            for pg in a..=b {
                self.eng.touch(pg, false, false);
            }
        }
        let mut redo = 0;
        // update of the indexed column k: the row and two index entries
        self.stmt();
        let id = self.id();
        redo += self.eng.change(self.table.page_of(id), false);
        let k_old = self.rng.gen_range(0..self.rows);
        redo += self.eng.change(self.kidx.page_of(k_old), false);
        redo += self
            .eng
            .change(self.kidx.page_of((k_old + 1) % self.rows), false);
        // update of c
        self.stmt();
        let id = self.id();
        redo += self.eng.change(self.table.page_of(id), false);
        // delete and insert of one id: the row and its index entry, twice
        let id = self.id();
        let k = self.rng.gen_range(0..self.rows);
        for _ in 0..2 {
            self.stmt();
            redo += self.eng.change(self.table.page_of(id), false);
            redo += self.eng.change(self.kidx.page_of(k), false);
        }
        if !self.eng.dry {
            self.eng.commit(redo);
        }
    }
}

impl Model for Oltp {
    fn op_names(&self) -> &'static [&'static str] {
        &["transaction"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 1)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x0175);
        self.eng.setup(cx)?;
        let mut eng = std::mem::replace(&mut self.eng, Inno::placeholder());
        eng.warm(|e| {
            std::mem::swap(&mut self.eng, e);
            self.transaction();
            std::mem::swap(&mut self.eng, e);
        });
        self.eng = eng;
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if let Some(more) =
            self.eng
                .before_transaction(t, self.threads, &mut self.started, self.transactions, cx)
        {
            return Ok(more);
        }
        self.transaction();
        self.eng.steps.push(Step::End(0));
        self.eng.emit(cx);
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        let mut v = self.eng.extra();
        v["rows"] = json!(self.rows);
        v
    }
}

impl Inno {
    /// An empty engine (a stand-in while the real one is lent out).
    fn placeholder() -> Inno {
        let ep = EngineParams {
            pool_bytes: PAGE,
            hybrid_bytes: 0,
            fault_ns: 0,
            busy_ns: 0,
            direct: false,
            log_bytes: 1 << 20,
            io_capacity: 1,
            max_dirty: 1.0,
            cpu_us: 0.0,
            transactions: 0,
        };
        Inno::new(
            &ep,
            &Layouter::flat(1),
            Table {
                base: 0,
                pages: 1,
                per_page: 1,
            },
        )
    }
}

// ---------------------------------------------------------------- tpcc

/// TPC-C row sizes (TPC-C standard, clause 1.3 and 4.2) in bytes.
mod rows {
    pub const WAREHOUSE: u64 = 89;
    pub const DISTRICT: u64 = 95;
    pub const CUSTOMER: u64 = 655;
    pub const HISTORY: u64 = 46;
    pub const NEW_ORDER: u64 = 8;
    pub const ORDERS: u64 = 24;
    pub const ORDER_LINE: u64 = 54;
    pub const ITEM: u64 = 82;
    pub const STOCK: u64 = 306;
    /// An index entry by customer last name (w, d, last, first, id).
    pub const CUSTOMER_NAME_ENTRY: u64 = 4 + 4 + 16 + 16 + 4 + 8;
    /// An index entry of orders by customer (w, d, c, o).
    pub const ORDERS_CUSTOMER_ENTRY: u64 = 16 + 8;
}

/// Transaction kinds in report order.
const TPCC_OPS: &[&str] = &[
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

fn build_tpcc(p: &Params) -> Result<AppKind, AppError> {
    let ep = engine_params(p)?;
    let w = p.scaled(p.u64("warehouses", 1, 1 << 20)?, 1);
    let d = w * 10;
    let mut lay = Layouter {
        next: 0,
        firsts: Vec::new(),
    };
    let t =
        |lay: &mut Layouter, rows: u64, bytes: u64| lay.table(rows, bytes + ROW_OVERHEAD, SEQ_FILL);
    let warehouse = t(&mut lay, w, rows::WAREHOUSE);
    let district = t(&mut lay, d, rows::DISTRICT);
    let item = t(&mut lay, 100_000, rows::ITEM);
    let customer = t(&mut lay, d * 3000, rows::CUSTOMER);
    let cust_name = lay.table(d * 3000, rows::CUSTOMER_NAME_ENTRY, RANDOM_FILL);
    let stock = t(&mut lay, w * 100_000, rows::STOCK);
    let orders = t(&mut lay, d * 3000, rows::ORDERS);
    let orders_cust = lay.table(d * 3000, rows::ORDERS_CUSTOMER_ENTRY, RANDOM_FILL);
    let order_line = t(&mut lay, d * 30_000, rows::ORDER_LINE);
    let new_order = t(&mut lay, d * 900, rows::NEW_ORDER);
    let history = t(&mut lay, w * 30_000, rows::HISTORY);
    let undo = lay.table(UNDO_PAGES, PAGE, 1.0);
    let eng = Inno::new(&ep, &lay, undo);
    let stmt_us = statement_us(ep.cpu_us);
    Ok(AppKind::Closed(Box::new(Tpcc {
        eng,
        w,
        tabs: Tabs {
            warehouse,
            district,
            item,
            customer,
            cust_name,
            stock,
            orders,
            orders_cust,
            order_line,
            new_order,
            history,
        },
        stmt_ns: (stmt_us * 1000.0).round() as u64,
        row_ns: (ROW_US * 1000.0).round() as u64,
        next_o: vec![0; d as usize],
        oldest_new: vec![0; d as usize],
        hist_next: 0,
        c_last: 0,
        c_id: 0,
        c_item: 0,
        transactions: ep.transactions,
        started: 0,
        new_orders: 0,
        threads: p.threads(100),
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

#[derive(Clone, Copy)]
struct Tabs {
    warehouse: Table,
    district: Table,
    item: Table,
    customer: Table,
    cust_name: Table,
    stock: Table,
    orders: Table,
    orders_cust: Table,
    order_line: Table,
    new_order: Table,
    history: Table,
}

struct Tpcc {
    eng: Inno,
    w: u64,
    tabs: Tabs,
    stmt_ns: u64,
    row_ns: u64,
    /// Next order number of each district (in its ring of 3,000).
    next_o: Vec<u32>,
    /// Oldest undelivered order of each district.
    oldest_new: Vec<u32>,
    hist_next: u64,
    c_last: u64,
    c_id: u64,
    c_item: u64,
    transactions: u64,
    started: u64,
    new_orders: u64,
    threads: u32,
    rng: Pcg64Mcg,
}

impl Tpcc {
    /// TPC-C's NURand(A, x, y) (clause 2.1.6).
    fn nurand(&mut self, a: u64, x: u64, y: u64, c: u64) -> u64 {
        let r1 = self.rng.gen_range(0..=a);
        let r2 = self.rng.gen_range(x..=y);
        (((r1 | r2) + c) % (y - x + 1)) + x
    }

    /// CPU of `stmts` statements handling `rows` rows.
    fn cpu(&mut self, stmts: u64, rows: u64) {
        if !self.eng.dry {
            self.eng
                .steps
                .push(Step::Cpu(stmts * self.stmt_ns + rows * self.row_ns));
        }
    }

    /// A customer of district `dist` (60 % by last name: an index page
    /// and the 3 rows of that name, TPC-C clause 2.5.1.2): its row.
    fn customer(&mut self, dist: u64, write: bool) -> u64 {
        let tb = self.tabs;
        let c = self.nurand(1023, 0, 2999, self.c_id);
        if self.rng.gen_bool(0.6) {
            let name = self.nurand(255, 0, 999, self.c_last);
            self.eng
                .touch(tb.cust_name.page_of(dist * 3000 + name * 3), false, false);
            for _ in 0..2 {
                let r = self.rng.gen_range(0..3000);
                self.eng
                    .touch(tb.customer.page_of(dist * 3000 + r), false, false);
            }
        }
        let row = dist * 3000 + c;
        if write {
            self.eng.change(tb.customer.page_of(row), false)
        } else {
            self.eng.touch(tb.customer.page_of(row), false, false);
            0
        }
    }

    fn new_order(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        let lines = self.rng.gen_range(5..=15u64);
        self.cpu(3 + 3 * lines + 2, 3 + 3 * lines + 2);
        let mut redo = 0;
        self.eng.touch(tb.warehouse.page_of(w), false, false);
        redo += self.eng.change(tb.district.page_of(dist), false);
        self.customer(dist, false);
        let o = self.next_o[dist as usize];
        self.next_o[dist as usize] = (o + 1) % 3000;
        let orow = dist * 3000 + o as u64;
        for l in 0..lines {
            let i = self.nurand(8191, 0, 99_999, self.c_item);
            self.eng.touch(tb.item.page_of(i), false, false);
            let sw = if self.w > 1 && self.rng.gen_bool(0.01) {
                self.rng.gen_range(0..self.w)
            } else {
                w
            };
            redo += self.eng.change(tb.stock.page_of(sw * 100_000 + i), false);
            let line = orow * 10 + l;
            let fresh = line.is_multiple_of(tb.order_line.per_page);
            redo += self.eng.change(tb.order_line.page_of(line), fresh);
        }
        redo += self.eng.change(
            tb.orders.page_of(orow),
            (o as u64).is_multiple_of(tb.orders.per_page),
        );
        redo += self.eng.change(
            tb.orders_cust
                .page_of(dist * 3000 + self.rng.gen_range(0..3000)),
            false,
        );
        let n = dist * 900 + (o as u64 % 900);
        redo += self.eng.change(tb.new_order.page_of(n), false);
        self.new_orders += 1;
        redo
    }

    fn payment(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        self.cpu(6, 6);
        let mut redo = self.eng.change(tb.warehouse.page_of(w), false);
        redo += self.eng.change(tb.district.page_of(dist), false);
        // 15 % of payments are for a customer of a remote warehouse
        let cd = if self.w > 1 && self.rng.gen_bool(0.15) {
            self.rng.gen_range(0..self.w) * 10 + self.rng.gen_range(0..10)
        } else {
            dist
        };
        redo += self.customer(cd, true);
        let h = self.hist_next;
        self.hist_next = (h + 1) % (tb.history.pages * tb.history.per_page);
        redo += self
            .eng
            .change(tb.history.page_of(h), h.is_multiple_of(tb.history.per_page));
        redo
    }

    fn order_status(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        self.cpu(4, 14);
        self.customer(dist, false);
        let o = self.rng.gen_range(0..3000u64);
        self.eng
            .touch(tb.orders_cust.page_of(dist * 3000 + o), false, false);
        let orow = dist * 3000 + o;
        self.eng.touch(tb.orders.page_of(orow), false, false);
        self.eng
            .touch(tb.order_line.page_of(orow * 10), false, false);
        self.eng
            .touch(tb.order_line.page_of(orow * 10 + 9), false, false);
        0
    }

    fn delivery(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        self.cpu(10 * 5, 10 * 14);
        let mut redo = 0;
        for d in 0..10 {
            let dist = w * 10 + d;
            let o = self.oldest_new[dist as usize];
            if o == self.next_o[dist as usize] {
                continue; // nothing to deliver in this district
            }
            self.oldest_new[dist as usize] = (o + 1) % 3000;
            let orow = dist * 3000 + o as u64;
            redo += self
                .eng
                .change(tb.new_order.page_of(dist * 900 + o as u64 % 900), false);
            redo += self.eng.change(tb.orders.page_of(orow), false);
            redo += self.eng.change(tb.order_line.page_of(orow * 10), false);
            redo += self.eng.change(tb.order_line.page_of(orow * 10 + 9), false);
            let c = self.rng.gen_range(0..3000);
            redo += self.eng.change(tb.customer.page_of(dist * 3000 + c), false);
        }
        redo
    }

    fn stock_level(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        self.cpu(2, 1 + 200 + 200);
        self.eng.touch(tb.district.page_of(dist), false, false);
        let o = self.next_o[dist as usize] as u64;
        let first = (o + 3000 - 20) % 3000;
        for k in 0..20u64 {
            let orow = dist * 3000 + (first + k) % 3000;
            self.eng
                .touch(tb.order_line.page_of(orow * 10), false, false);
        }
        for _ in 0..200 {
            let i = self.nurand(8191, 0, 99_999, self.c_item);
            self.eng
                .touch(tb.stock.page_of(w * 100_000 + i), false, false);
        }
        0
    }

    /// One transaction of the mix for a client of warehouse `w`; its
    /// kind.
    fn transaction(&mut self, w: u64) -> u16 {
        let x = self.rng.gen_range(0..100u32);
        let (kind, redo) = match x {
            0..=44 => (0, self.new_order(w)),
            45..=87 => (1, self.payment(w)),
            88..=91 => (2, self.order_status(w)),
            92..=95 => (3, self.delivery(w)),
            _ => (4, self.stock_level(w)),
        };
        // a read-only transaction writes no redo and waits for no log
        // write at commit (trx_commit with no undo)
        if !self.eng.dry && redo > 0 {
            self.eng.commit(redo);
        }
        kind
    }
}

impl Model for Tpcc {
    fn op_names(&self) -> &'static [&'static str] {
        TPCC_OPS
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 1)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x79cc);
        // NURand's run-time constants C (clause 2.1.6)
        self.c_last = self.rng.gen_range(0..=255);
        self.c_id = self.rng.gen_range(0..=1023);
        self.c_item = self.rng.gen_range(0..=8191);
        // each district starts with 2,100 orders delivered and 900 new
        for (d, o) in self.next_o.iter_mut().enumerate() {
            *o = 0;
            self.oldest_new[d] = 2100;
        }
        self.eng.setup(cx)?;
        let mut eng = std::mem::replace(&mut self.eng, Inno::placeholder());
        let w = self.w;
        eng.warm(|e| {
            std::mem::swap(&mut self.eng, e);
            let home = self.rng.gen_range(0..w);
            self.transaction(home);
            std::mem::swap(&mut self.eng, e);
        });
        self.eng = eng;
        self.new_orders = 0;
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if let Some(more) =
            self.eng
                .before_transaction(t, self.threads, &mut self.started, self.transactions, cx)
        {
            return Ok(more);
        }
        let kind = self.transaction(t as u64 % self.w);
        self.eng.steps.push(Step::End(kind));
        self.eng.emit(cx);
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        let mut v = self.eng.extra();
        v["warehouses"] = json!(self.w);
        v["database_bytes"] = json!(self.eng.pages * PAGE);
        v["new_orders"] = json!(self.new_orders);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .filter(|s| matches!(s, Step::Io(f) | Step::Issue(f) if f.op == storlab_model::fs::FileOp::Write))
            .count();
        let syncs = e
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Io(f) if f.op == storlab_model::fs::FileOp::Fsync))
            .count();
        assert_eq!((writes, syncs), (2, 2), "{:?}", e.steps);
        assert!(
            matches!(e.steps.last(), Some(Step::Io(f)) if f.op == storlab_model::fs::FileOp::Read)
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
}
