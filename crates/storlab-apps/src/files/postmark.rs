//! Postmark (an email server's small-file traffic, Postmark 1.5): the
//! pool created, transactions of a read or an append and a create or a
//! delete, the pool deleted; buffered, O_DIRECT, or on a `sync,dirsync`
//! mount.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::Layout;

use super::chunk::{cpu_param, Chunker, PIECE};
use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{FileIo, MetricKind, Model, PlanCx, SetupCx, Step};

const POSTMARK_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "files",
        default: "10000",
        help: "files in the initial pool (docs/spec/workloads.md: 10,000)",
    },
    ParamDef {
        name: "size_lo",
        default: "1k",
        help: "smallest file, bytes (docs/spec/workloads.md: 1 KB)",
    },
    ParamDef {
        name: "size_hi",
        default: "64k",
        help: "largest file, bytes; appends stop a file there. A documented reading of docs/spec/workloads.md's \"1 KB to 64 MB\" as 64 KB: 10,000 files averaging 32 MB (320 GB, more as appends grow them) fit on none of the devices that ran Postmark (the 16 GB RAM disk, the 64 GB Moneta, the 80 GB Fusion-io); set size_hi=64m for the spec's words",
    },
    ParamDef {
        name: "transactions",
        default: "100000",
        help: "transactions (docs/spec/workloads.md: 100,000), each a read or an append and a create or a delete",
    },
    ParamDef {
        name: "block",
        default: "512",
        help: "Postmark's read and write block (`set read`/`set write`, default 512 bytes)",
    },
    ParamDef {
        name: "direct",
        default: "0",
        help: "1: O_DIRECT reads and writes (the studies' direct-IO runs; requests of 128 KiB), 0: buffered (Postmark's `buffering true`: stdio, 4 KiB system calls). Unset, a run takes the Moneta study's Table V rule for its device: direct on Moneta and the Fusion-io (`pcie` and `ssd` classes), buffered on the RAIDs and the rest",
    },
    ParamDef {
        name: "sync",
        default: "0",
        help: "1: the file system mounted `sync,dirsync` (what `storlab app run postmark --direct` does, Postmark having no O_DIRECT switch): IO goes through the page cache (direct is taken as 0), every write system call of `block` bytes returns once its data and the file's new size are on the device (O_DSYNC: fdatasync's rule), and every create and unlink commits its transaction synchronously (a log force)",
    },
    ParamDef {
        name: "cpu_us",
        default: "",
        help: "Postmark's own CPU per transaction, µs (default: the CALIBRATED value, see calibration)",
    },
];

/// CALIBRATED: Postmark's CPU per transaction, against the Moneta study's
/// Table V (Postmark on Moneta, `moneta-balance`, XFS, 27.4 s), run as
/// the study ran it there: with direct IO, the study's rule for Moneta
/// and the Fusion-io ("whenever practical and possible ... since it
/// improves performance", [`super::device_defaults`]), the one number
/// calibrated for this application (the RAID-Disk, RAID-SSD and
/// FusionIO figures of that table and the HASTE study's ratios are
/// predictions). It holds what the model does not simulate per
/// transaction: Postmark's own work (its file table, the Mersenne
/// Twister, stdio's buffer copies) and the open/fopen, fclose and path
/// lookups of each file it touches, which the file-system layer does not
/// cost (it costs the reads, writes, creates and unlinks). Workload as
/// read in `size_hi` (files of 1 KB to 64 KB). Command (the device's
/// rule sets direct=1): `storlab apps calibrate postmark --device
/// moneta-balance --set 'host.file_system="xfs"' --target 27.4 --lo 1
/// --hi 1000` gives 156.4357 (122.71 when the row was run buffered).
const POSTMARK_CPU_US: f64 = 156.44;

/// glibc's stdio buffer for a file: `st_blksize`, 4 KiB (Postmark's
/// buffered mode reads and writes through `fread`/`fwrite`).
const STDIO_BUFFER: u64 = 4096;

pub(super) static POSTMARK: AppInfo = AppInfo {
    name: "postmark",
    summary: "Postmark: an email server's pool of files, read, appended, created and deleted",
    unit: "seconds",
    models: &[
        "Postmark 1.5's three phases on one thread: create the pool (`files` files, sizes uniform between size_lo and size_hi, as Postmark draws them), run `transactions` transactions, delete what is left; the metric is the whole run's time",
        "a transaction: a read of a whole file or an append to one (even odds, Postmark's `bias read 5`), then a create or a delete (even odds, `bias create 5`); as in Postmark 1.5, a create draws size_lo + RND(size_hi - size_lo) bytes and an append RND(size_hi - size) + 1 (uniform over the room left; a full file is not appended to)",
        "the workload as read: the spec's \"10,000 files of 1 KB to 64 MB\" is run as 1 KB to 64 KB (size_hi=64k), a documented reading, not a fit: 10,000 files of mean 32 MB are 320 GB (more as appends grow them), larger than every device that ran Postmark (the HASTE study's 16 GB RAM disk, the 64 GB Moneta, the 80 GB Fusion-io), and Postmark's `set size` takes bytes (atoi, no unit suffix); 64 KB keeps Postmark's email-sized files (its defaults are 500 B to 9.77 KB)",
        "a create: the namespace work (directory entry, inode, log bytes; fs.namespace_ns under the directory's lock) and the file's contents written; a delete: unlink (namespace work, the file's pages dropped, its space freed for later files); on XFS each is a transaction that relogs the directory's data and leaf blocks into 8 log buffers of 32 KiB written as barriers, and waits when all 8 are under IO (XFS before delayed logging): the device's part of buffered Postmark",
        "buffered (direct=0): stdio turns Postmark's 512-byte blocks into 4 KiB system calls through the page cache (read-ahead, dirty pages written back by the flusher under the dirty limit, delayed allocation); direct=1: O_DIRECT requests bypass it (each extending write allocates under the inode lock)",
        "sync=1, a `sync,dirsync` mount (the real program's `--direct` under `storlab app run`): each write system call is followed by its fdatasync (O_DSYNC: the page written back, allocated at writeback, and the log forced for the allocation or the new size: a pre-flush, the log's write, a post-flush where the queue has no FUA), and each create and unlink forces the log as its transaction commits",
    ],
    simplifies: &[
        "requests are issued in pieces of up to 128 KiB; the 4 KiB system calls inside a piece add their entry, exit and file-system CPU (the host's costs) instead of being simulated one by one",
        "the directory lookup of each open hits the dentry cache: its CPU is inside cpu_us; files live in one directory (Postmark's default `set subdirectories 0`), whose lock serialises creates and deletes",
        "each file is placed with room for size_hi (appends stay contiguous); freed space is reused first fit",
        "direct IO requests are 128 KiB (the studies do not say how they made Postmark use O_DIRECT; the same size as buffered read-ahead, so the two modes differ by the page cache alone)",
        "the page cache starts empty; Postmark's own memory (its file table) is not modelled",
    ],
    calibration: "CALIBRATED: cpu_us (Postmark's CPU per transaction, with the open/close and lookups the file-system layer does not cost), against the Moneta study's Table V, Postmark on Moneta (moneta-balance, XFS, direct IO as the study ran Postmark on Moneta and the Fusion-io): 27.4 s gives 156.44 µs (storlab apps calibrate postmark --device moneta-balance --set 'host.file_system=\"xfs\"' --target 27.4 --lo 1 --hi 1000; the device's rule sets direct=1), with files of 1 KB to 64 KB (the reading in `models`; with the spec's 64 MB the IO alone takes hours and no CPU cost reaches 27.4 s). Table V's other devices and the HASTE study's ratios are predictions",
    params: POSTMARK_PARAMS,
    build: build_postmark,
};

fn build_postmark(p: &Params) -> Result<AppKind, AppError> {
    let files = p.scaled(p.u64("files", 1, 10_000_000)?, 1);
    let lo = p.u64("size_lo", 1, 1 << 40)?;
    let hi = p.u64("size_hi", lo, 1 << 40)?;
    let transactions = p.scaled(p.u64("transactions", 0, 1 << 40)?, 1);
    let block = p.u64("block", 1, 1 << 30)?;
    let sync = p.u64("sync", 0, 1)? == 1;
    // a sync mount's IO is buffered
    let direct = !sync && p.u64("direct", 0, 1)? == 1;
    if p.threads(1) != 1 {
        return Err(p.bad("threads", "Postmark runs on one thread"));
    }
    Ok(AppKind::Closed(Box::new(Postmark {
        files,
        lo,
        hi,
        transactions,
        block,
        direct,
        sync,
        cpu_ns: cpu_param(p, "cpu_us", POSTMARK_CPU_US, 1e3)?,
        table: Vec::new(),
        made: 0,
        done: 0,
        chunker: Chunker::default(),
        rng: Pcg64Mcg::seed_from_u64(0),
        bytes_read: 0,
        bytes_written: 0,
    })))
}

struct Postmark {
    files: u64,
    lo: u64,
    hi: u64,
    transactions: u64,
    block: u64,
    direct: bool,
    /// A `sync,dirsync` mount (the `sync` parameter).
    sync: bool,
    cpu_ns: u64,
    /// Live files: (file, size).
    table: Vec<(u32, u64)>,
    made: u64,
    done: u64,
    chunker: Chunker,
    rng: Pcg64Mcg,
    bytes_read: u64,
    bytes_written: u64,
}

const PM_CREATE: u16 = 0;
const PM_READ: u16 = 1;
const PM_APPEND: u16 = 2;
const PM_DELETE: u16 = 3;

impl Postmark {
    /// Write `len` bytes of `file` from `offset`: through the chunker, or
    /// on a `sync` mount one system call of `block` bytes at a time, each
    /// returning once it is on the device (a write on a `sync` mount is
    /// O_DSYNC: `iocb_flags` sets IOCB_DSYNC for `IS_SYNC` inodes and
    /// `generic_write_sync` runs `vfs_fsync_range(..., datasync = 1)`
    /// after it, Linux fs.h and mm/filemap.c).
    fn write(&self, cx: &mut PlanCx, file: u32, offset: u64, len: u64) {
        if !self.sync {
            self.chunker
                .transfer(cx, file, offset, len, true, self.direct);
            return;
        }
        let mut at = offset;
        while at < offset + len {
            let n = self.block.min(offset + len - at);
            cx.push(Step::Io(FileIo::write(file, at, n)));
            cx.push(Step::Io(FileIo::fdatasync(file)));
            at += n;
        }
    }

    /// A create or unlink request: committed synchronously on a `sync`
    /// mount (`dirsync`).
    fn namespace(&self, io: FileIo) -> FileIo {
        FileIo {
            fua: self.sync,
            ..io
        }
    }

    fn create(&mut self, cx: &mut PlanCx) -> Result<(), AppError> {
        // Postmark 1.5's create_file: low + RND(high - low)
        let size = if self.hi > self.lo {
            self.rng.gen_range(self.lo..self.hi)
        } else {
            self.lo
        };
        let f = cx.create_file(self.hi, Layout::Empty)?;
        cx.push(Step::Io(self.namespace(FileIo::create(f, 0))));
        self.write(cx, f, 0, size);
        self.bytes_written += size;
        self.table.push((f, size));
        cx.push(Step::End(PM_CREATE));
        Ok(())
    }

    fn delete(&mut self, k: usize, cx: &mut PlanCx) {
        let (f, _) = self.table.swap_remove(k);
        cx.push(Step::Io(self.namespace(FileIo::unlink(f, 0))));
        cx.push(Step::End(PM_DELETE));
    }
}

impl Model for Postmark {
    fn op_names(&self) -> &'static [&'static str] {
        &["create", "read", "append", "delete"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Seconds
    }

    fn threads(&self) -> (u32, u32) {
        (1, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x9057_3a4b);
        let syscall = if self.direct {
            PIECE
        } else {
            // stdio gathers Postmark's blocks into its buffer
            STDIO_BUFFER.max(self.block)
        };
        self.chunker = Chunker::new(cx.host(), syscall);
        Ok(())
    }

    fn next_op(&mut self, _t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if self.made < self.files {
            self.made += 1;
            self.create(cx)?;
            return Ok(true);
        }
        if self.done < self.transactions {
            self.done += 1;
            cx.push(Step::Cpu(self.cpu_ns));
            if !self.table.is_empty() {
                let k = self.rng.gen_range(0..self.table.len());
                let (f, size) = self.table[k];
                if self.rng.gen_bool(0.5) {
                    self.chunker.transfer(cx, f, 0, size, false, self.direct);
                    self.bytes_read += size;
                    cx.push(Step::End(PM_READ));
                } else if size < self.hi {
                    // Postmark 1.5's append_file: RND(hi - size) + 1 bytes,
                    // uniform over the room left below the largest size
                    let n = self.rng.gen_range(1..=self.hi - size);
                    self.write(cx, f, size, n);
                    self.bytes_written += n;
                    self.table[k].1 += n;
                    cx.push(Step::End(PM_APPEND));
                } else {
                    // a full file is not appended to (Postmark 1.5)
                    cx.push(Step::End(PM_APPEND));
                }
            }
            if self.rng.gen_bool(0.5) || self.table.is_empty() {
                self.create(cx)?;
            } else {
                let k = self.rng.gen_range(0..self.table.len());
                self.delete(k, cx);
            }
            return Ok(true);
        }
        if let Some(k) = self.table.len().checked_sub(1) {
            self.delete(k, cx);
            return Ok(true);
        }
        Ok(false)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "transactions": self.done,
            "bytes_read": self.bytes_read,
            "bytes_written": self.bytes_written,
            "direct": self.direct,
            "sync": self.sync,
        })
    }
}
