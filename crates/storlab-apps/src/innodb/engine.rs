//! InnoDB's storage engine as the applications share it ([`Inno`]): the
//! tablespace's layout, the buffer pool (and hybrid memory's DRAM), the
//! redo log with group commit, the doublewrite buffer and the background
//! flushing and checkpoints; the parameters and model text both
//! applications take (the module `innodb` describes the engine).

use serde_json::json;
use storlab_model::host::fs::Layout;

use crate::error::AppError;
use crate::info::{ParamDef, Params};
use crate::kit::BufferPool;
use crate::model::{FileIo, LogSpec, LogSync, PlanCx, SetupCx, Step};

/// InnoDB's page size (`UNIV_PAGE_SIZE`, 16 KiB).
pub(super) const PAGE: u64 = 16 << 10;
/// Pages of the doublewrite buffer written in one batch
/// (`TRX_SYS_DOUBLEWRITE_BLOCK_SIZE`: two blocks of 64 pages).
pub(super) const DBLWR_BATCH: usize = 64;
/// Fill of leaf pages loaded in key order (InnoDB leaves 1/16 free on
/// sequential inserts: `BTR_PAGE_SEQ_INSERT_LIMIT`).
pub(super) const SEQ_FILL: f64 = 15.0 / 16.0;
/// Fill of pages of an index filled in random key order (B+trees after
/// random inserts settle near ln 2; ESTIMATE 0.7).
pub(super) const RANDOM_FILL: f64 = 0.7;
/// Bytes of InnoDB's per-row overhead in a clustered index (5-byte record
/// header, 6-byte transaction id, 7-byte roll pointer, the page directory
/// share: ~20 bytes; MySQL manual, "InnoDB row formats").
pub(super) const ROW_OVERHEAD: u64 = 20;
/// Undo log pages in the ring the transactions write (rollback segment
/// pages, reused after purge): ESTIMATE, 64 MiB.
pub(super) const UNDO_PAGES: u64 = 4096;
/// Redo bytes per row change: the record (page number, offset, changed
/// fields, ~100-300 bytes) plus the undo record's own redo (ESTIMATE:
/// 400 bytes in all).
pub(super) const REDO_PER_CHANGE: u64 = 400;
/// Redo bytes of a commit (the undo header update and the commit record:
/// ESTIMATE 100 bytes).
pub(super) const REDO_COMMIT: u64 = 100;
/// CPU of handling one row inside a statement (InnoDB's row fetch or
/// change, MySQL's handler call and row evaluation): ESTIMATE 1 µs, about
/// 2,000 instructions at an IPC near 1 on the studies' 2.3-2.6 GHz
/// Xeons. Used to share a transaction's CPU between statements and rows
/// when the OLTP calibration is carried over to TPC-C.
pub(super) const ROW_US: f64 = 1.0;

/// CALIBRATED: CPU per sysbench OLTP transaction (18 statements, about
/// 414 rows), against the Moneta study's Table V (OLTP, 799 tx/s on the
/// full Moneta, `moneta-balance`, XFS, 16 threads): the one number
/// calibrated for MySQL; the RAID-Disk, RAID-SSD and FusionIO figures of
/// the same table are predictions, as are all TPC-C figures. Found with
/// `storlab apps calibrate oltp --device moneta-balance --param cpu_us
/// --target 799` (20,000 transactions; the run is CPU-bound there: 16
/// threads on the host's 8 cores, the pool's hit ratio 0.92).
pub(super) const OLTP_CPU_US: f64 = 10012.6;
/// sysbench OLTP's statements per transaction (oltp.lua: 10 point
/// selects, 4 range queries, 2 updates, 1 delete, 1 insert).
pub(super) const OLTP_STATEMENTS: f64 = 18.0;
/// sysbench OLTP's rows handled per transaction: 10 + 4 x 100 + 2 + 1 + 1.
pub(super) const OLTP_ROWS: f64 = 414.0;

/// CPU per SQL statement outside its rows (parse, optimise, open tables,
/// the protocol), derived from the OLTP calibration:
/// (OLTP_CPU_US - OLTP_ROWS x ROW_US) / OLTP_STATEMENTS.
pub(super) fn statement_us(oltp_cpu_us: f64) -> f64 {
    ((oltp_cpu_us - OLTP_ROWS * ROW_US) / OLTP_STATEMENTS).max(0.0)
}

pub(super) const INNODB_PARAMS: [ParamDef; 10] = [
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
        help: "innodb_io_capacity: pages the background flush writes in a second with no transaction activity, or while the dirty share is above max_dirty_pct, and the most adaptive flushing writes in one (MySQL 5.5/5.6 default 200)",
    },
    ParamDef {
        name: "max_dirty_pct",
        default: "75",
        help: "innodb_max_dirty_pages_pct: above this share of dirty pages the background flush writes io_capacity pages a second even while transactions run (MySQL 5.5/5.6 default 75)",
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
    },    ParamDef {
        name: "server",
        default: "mysql-5.6",
        help: "the server's own file handling: mysql-5.6 (the studies' era: InnoDB syncs its files with fsync(2), os_file_fsync, and writes its redo log files full of zeros when it creates them) or mariadb-10.11 (the real server storlab app runs: os_file_sync_posix syncs with fdatasync(2), os_file_set_size makes the redo log with posix_fallocate, unwritten extents on XFS and ext4, and the log is written with O_DIRECT, innodb_log_file_buffering=OFF; so a commit that writes into a block not yet written converts it and its fdatasync forces the file system's log, and the others only flush the device's cache)",
    },
];

pub(super) const ENGINE_MODELS: &[&str] = &[
    "InnoDB: 16 KB pages of a tablespace file per table (innodb_file_per_table, MySQL 5.6's default) in a buffer pool (clock replacement); a miss reads the page (buffered pread with flush_method=fdatasync, O_DIRECT with o_direct); a frame whose page is dirty is flushed by the user thread first (doublewrite, then in place)",
    "commit: the transaction's redo (400 bytes per row change, 100 per commit) joins the log buffer; group commit writes and fsyncs the redo log (innodb_flush_log_at_trx_commit=1) before the client goes on; a read-only transaction commits without the log",
    "background flush every second, as MySQL 5.6's page cleaner decides (buf0flu.cc): after a second with transactions, the dirty pages among the next victims of the pool's replacement (the LRU tail, innodb_lru_scan_depth 1,024 frames in each of 8 instances, 1 under a 1 GB pool), then io_capacity pages from the replacement end while dirty pages are above max_dirty_pct, otherwise the share of dirty pages the round's redo stands for (adaptive flushing, at most io_capacity); after a second without transactions, io_capacity pages; batches of 64 pages go sequentially into the doublewrite area (fsync), then each page in place (fsync of the tablespace)",
    "synchronous checkpoint: when the redo not covered by flushed pages passes 15/16 of log_file, the next transaction's thread flushes every dirty page and the other clients wait for it (log_check_margins)",
    "hybrid memory (hybrid > 0): the pool grows by `hybrid` bytes of flash-backed memory; DRAM (buffer_pool bytes) caches it by clock; touching a buffer page not in DRAM faults it in from the flash and evicting a page that changed writes it back (write-back, as the hybrid-mem preset); both hold the flash for hybrid_busy_us in arrival order (one queue for the card, shared by every client) and a fault completes hybrid_fault_us after its turn",
];

pub(super) const ENGINE_SIMPLIFIES: &[&str] = &[
    "B+tree internal pages are taken as always resident (they are under 2 % of the data and the hottest pages): only leaf, undo and new pages are looked up in the pool",
    "no row locks, latches or the kernel mutex: their waits are inside the calibrated CPU; no page splits (each table keeps its shape), no insert buffer, no read-ahead, no purge thread (undo pages are reused in a ring)",
    "the pool starts warm: the transactions' own access pattern is run without IO until the pool has turned over twice (or 8 accesses a frame when it holds the data), then every page is clean; the operating system's page cache starts empty",
    "a new page (an append at a table's end) is created in the pool without a read",
];

/// Engine parameters common to both applications.
pub(super) struct EngineParams {
    pub(super) pool_bytes: u64,
    pub(super) hybrid_bytes: u64,
    pub(super) fault_ns: u64,
    pub(super) busy_ns: u64,
    pub(super) direct: bool,
    pub(super) log_bytes: u64,
    pub(super) io_capacity: u64,
    pub(super) max_dirty: f64,
    pub(super) cpu_us: f64,
    pub(super) transactions: u64,
    /// MariaDB 10.11's file handling (`server=mariadb-10.11`): fdatasync,
    /// a fallocated redo log.
    pub(super) mariadb: bool,
}

pub(super) fn engine_params(p: &Params) -> Result<EngineParams, AppError> {
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
        mariadb: p.choice("server", &["mysql-5.6", "mariadb-10.11"])? == "mariadb-10.11",
    })
}

/// A table (or index) laid out in the tablespace: `rows` rows at
/// `per_page` a page from page `base`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Table {
    pub(super) base: u64,
    pub(super) pages: u64,
    pub(super) per_page: u64,
}

impl Table {
    pub(super) fn page_of(&self, row: u64) -> u64 {
        self.base + (row / self.per_page).min(self.pages - 1)
    }
}

/// Tables are laid out one after another from page 0, each in a file of
/// its own (`innodb_file_per_table`, MySQL 5.6's default).
pub(super) struct Layouter {
    pub(super) next: u64,
    /// First page of each table.
    pub(super) firsts: Vec<u64>,
}

impl Layouter {
    /// One file of `pages` pages.
    pub(super) fn flat(pages: u64) -> Layouter {
        Layouter {
            next: pages,
            firsts: vec![0],
        }
    }

    pub(super) fn table(&mut self, rows: u64, row_bytes: u64, fill: f64) -> Table {
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
pub(super) const FLASH: u32 = 0;

/// The storage engine: buffer pool, files, redo, flushing.
pub(super) struct Inno {
    pub(super) pool: BufferPool,
    /// Hybrid memory: which buffer pages are in DRAM.
    pub(super) dram: Option<BufferPool>,
    pub(super) fault_ns: u64,
    pub(super) busy_ns: u64,
    pub(super) direct: bool,
    /// MariaDB 10.11's file handling ([`EngineParams::mariadb`]).
    pub(super) mariadb: bool,
    pub(super) pages: u64,
    /// (first page, file) of each table's file, in page order.
    pub(super) segs: Vec<(u64, u32)>,
    pub(super) dblwr: u32,
    pub(super) log: u32,
    pub(super) log_bytes: u64,
    /// Redo written since the pages it covers were last flushed.
    pub(super) redo_age: u64,
    /// Redo written since the last background round.
    pub(super) redo_round: u64,
    /// A transaction started since the last background round (the
    /// server's activity count moved).
    pub(super) active_round: bool,
    pub(super) io_capacity: u64,
    pub(super) max_dirty: f64,
    pub(super) ckpt_owner: Option<u32>,
    pub(super) undo: Table,
    pub(super) undo_next: u64,
    pub(super) dblwr_half: u64,
    /// Plan buffer (steps of the operation being planned).
    pub(super) steps: Vec<Step>,
    /// Warming: pool accesses only, no steps.
    pub(super) dry: bool,
    pub(super) scratch: Vec<u64>,
    pub(super) flushed: u64,
    pub(super) single_flushes: u64,
    pub(super) sync_checkpoints: u64,
    pub(super) faults: u64,
    /// Hybrid memory: changed pages written back to the flash.
    pub(super) writebacks: u64,
}

impl Inno {
    pub(super) fn new(ep: &EngineParams, lay: &Layouter, undo: Table) -> Inno {
        let pages = lay.next.max(1);
        let frames = (ep.pool_bytes + ep.hybrid_bytes) / PAGE;
        let dram = (ep.hybrid_bytes > 0).then(|| BufferPool::new(ep.pool_bytes / PAGE, pages));
        Inno {
            pool: BufferPool::new(frames, pages),
            dram,
            fault_ns: ep.fault_ns,
            busy_ns: ep.busy_ns,
            direct: ep.direct,
            mariadb: ep.mariadb,
            pages,
            segs: lay.firsts.iter().map(|&f| (f, 0)).collect(),
            dblwr: 0,
            log: 0,
            log_bytes: ep.log_bytes,
            redo_age: 0,
            redo_round: 0,
            active_round: false,
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

    pub(super) fn setup(&mut self, cx: &mut SetupCx) -> Result<(), AppError> {
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
        // MySQL 5.x writes its new log files full of zeros; MariaDB
        // 10.11's os_file_set_size preallocates with posix_fallocate
        // (unwritten extents where the file system has them)
        let log_layout = if self.mariadb {
            Layout::preallocated(cx.host().file_system, false).unwrap_or(Layout::Allocated)
        } else {
            Layout::Allocated
        };
        let log_file = cx.create_file(self.log_bytes, log_layout)?;
        self.log = cx.log(LogSpec {
            file: log_file,
            size: self.log_bytes,
            block: 512,
            // MySQL 5.x writes its log through the page cache whatever
            // innodb_flush_method says; MariaDB 10.8 and later open
            // ib_logfile0 with O_DIRECT on Linux (innodb_log_file_buffering
            // OFF by default: MDEV-28111, MDEV-28766)
            direct: self.mariadb,
            // innodb_flush_method's default on Linux syncs with fsync(2)
            // (MySQL 5.x os/os0file.c: os_file_flush -> os_file_fsync ->
            // fsync), not fdatasync: each group commit's write changes the
            // log file's mtime, so on XFS the fsync forces the file
            // system's log too (host/fs/fsync.rs). MariaDB 10.11
            // (os0file.cc, os_file_sync_posix) calls fdatasync, which
            // forces the log only for a write that converted unwritten
            // extents
            sync: if self.mariadb {
                LogSync::Fdatasync
            } else {
                LogSync::Fsync
            },
            rotate: None,
            rewrite_last_block: false,
        });
        Ok(())
    }

    /// The file holding `page` and the page's offset in it.
    pub(super) fn place(&self, page: u64) -> (u32, u64) {
        let i = self.segs.partition_point(|s| s.0 <= page).max(1) - 1;
        let (first, file) = self.segs[i];
        (file, (page - first) * PAGE)
    }

    pub(super) fn read_io(&self, page: u64) -> FileIo {
        let (f, off) = self.place(page);
        FileIo::read(f, off, PAGE).direct(self.direct)
    }

    pub(super) fn write_io(&self, page: u64) -> FileIo {
        let (f, off) = self.place(page);
        FileIo::write(f, off, PAGE).direct(self.direct)
    }

    /// Hybrid memory: the buffer page must be in DRAM.
    pub(super) fn in_dram(&mut self, page: u64, write: bool) {
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
    pub(super) fn touch(&mut self, page: u64, write: bool, fresh: bool) {
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
    pub(super) fn change(&mut self, page: u64, fresh: bool) -> u64 {
        self.touch(page, true, fresh);
        let u = self.undo.base + (self.undo_next / self.undo.per_page) % self.undo.pages;
        self.undo_next += 1;
        self.touch(u, true, true);
        REDO_PER_CHANGE
    }

    /// Frames the page cleaner's LRU flush looks at a second: MySQL
    /// 5.6's innodb_lru_scan_depth (1,024) in each of the pool's
    /// instances (innodb_buffer_pool_instances: 8, or 1 for a pool under
    /// 1 GB); MariaDB 10.5 and later keep one instance and scan 1,536.
    fn lru_depth(&self) -> usize {
        if self.mariadb {
            1536
        } else if self.pool.frames() * PAGE >= 1 << 30 {
            8 * 1024
        } else {
            1024
        }
    }

    /// The sync of a data file: fsync(2) (MySQL 5.x), fdatasync(2)
    /// (MariaDB 10.11).
    fn sync_io(&self, file: u32) -> FileIo {
        if self.mariadb {
            FileIo::fdatasync(file)
        } else {
            FileIo::fsync(file)
        }
    }

    /// Write `pages` through the doublewrite buffer (the caller's steps).
    pub(super) fn flush_batch(&mut self, pages: &[u64]) {
        for chunk in pages.chunks(DBLWR_BATCH) {
            let off = self.dblwr_half * DBLWR_BATCH as u64 * PAGE;
            self.dblwr_half ^= 1;
            let mut w = FileIo::write(self.dblwr, off, chunk.len() as u64 * PAGE);
            w.direct = self.direct;
            self.steps.push(Step::Io(w));
            self.steps.push(Step::Io(self.sync_io(self.dblwr)));
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
                self.steps.push(Step::Io(self.sync_io(f)));
            }
            self.flushed += chunk.len() as u64;
        }
    }

    /// Flush up to `n` dirty pages from the replacement end.
    pub(super) fn flush_dirty(&mut self, n: usize) -> usize {
        self.flush_picked(|pool, v| pool.clean(n, v))
    }

    /// Flush the dirty pages `pick` marks clean in the pool; how many.
    fn flush_picked(&mut self, pick: impl FnOnce(&mut BufferPool, &mut Vec<u64>)) -> usize {
        let mut v = std::mem::take(&mut self.scratch);
        v.clear();
        pick(&mut self.pool, &mut v);
        self.flush_batch(&v);
        let k = v.len();
        self.scratch = v;
        k
    }

    /// The background thread's round: sleep a second, then flush, as
    /// MySQL 5.6's page cleaner decides (storage/innobase/buf/buf0flu.cc,
    /// `buf_flush_page_cleaner_thread` and
    /// `page_cleaner_flush_pages_if_needed`): a server with no activity
    /// in the last second (`srv_check_activity`: no transaction moved
    /// the activity count) flushes `PCT_IO(100)`, io_capacity pages; an
    /// active one flushes io_capacity pages only while the dirty share
    /// is above innodb_max_dirty_pages_pct, and otherwise the adaptive
    /// rate (at most io_capacity) that keeps the checkpoint age steady.
    /// A busy server below the dirty limit so flushes only what its redo
    /// rate asks for, beside its LRU flush (`page_cleaner_flush_LRU_tail`:
    /// the dirty pages among the next victims, [`Inno::lru_depth`] frames,
    /// so that misses find clean frames; it does not move the checkpoint). MariaDB 10.11's page cleaner (buf0flu.cc) flushes
    /// at innodb_io_capacity only when `last_activity_count ==
    /// srv_get_activity_count()` in the same way. (MySQL 5.1/5.5's
    /// master thread adds PCT_IO(10) every ten seconds, 2 pages a
    /// second at the default: left out.)
    pub(super) fn background(&mut self) {
        self.steps.push(Step::Sleep(1_000_000_000));
        let dirty = self.pool.dirty_pages();
        let frames = self.pool.frames();
        let limit = (self.max_dirty * frames as f64) as u64;
        // adaptive: the round's redo, as a share of the log's usable
        // space, of the dirty pages
        let usable = self.log_bytes as f64 * 7.0 / 8.0;
        let adaptive = (dirty as f64 * (self.redo_round as f64 / usable)).ceil() as u64;
        let active = self.active_round;
        let n = if !active || dirty > limit {
            self.io_capacity
        } else {
            adaptive.min(self.io_capacity)
        }
        .min(dirty);
        self.active_round = false;
        self.redo_round = 0;
        if active {
            // page_cleaner_flush_LRU_tail: the dirty pages among the next
            // victims, so that the clients' misses find clean frames
            let depth = self.lru_depth();
            self.flush_picked(|pool, v| pool.clean_victims(depth, v));
        }
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
    pub(super) fn margin(&mut self, t: u32) -> bool {
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

    pub(super) fn commit(&mut self, redo: u64) {
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
    pub(super) fn warm(&mut self, mut f: impl FnMut(&mut Inno)) {
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
        self.active_round = false;
    }

    /// What thread `t` does before its next transaction, shared by the
    /// workloads: the background thread's round (thread `threads`), a
    /// checkpoint when the redo log is nearly full, or the end of the
    /// run; `None` when it runs a transaction (counted in `started`).
    pub(super) fn before_transaction(
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
        self.active_round = true;
        None
    }

    pub(super) fn emit(&mut self, cx: &mut PlanCx) {
        for s in self.steps.drain(..) {
            cx.push(s);
        }
    }

    pub(super) fn extra(&self) -> serde_json::Value {
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

impl Inno {
    /// An empty engine (a stand-in while the real one is lent out).
    pub(super) fn placeholder() -> Inno {
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
            mariadb: false,
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
