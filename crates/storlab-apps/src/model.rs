//! The model interface of the closed-loop applications: a [`Model`]
//! plans each operation of its threads as a list of [`Step`]s (CPU, file
//! requests, locks, group commit), sets its files and logs up through a
//! [`SetupCx`] and plans through a [`PlanCx`]; the driver
//! (`crate::driver::AppRun`) runs the steps inside the engine.

use serde_json::Value;
use storlab_model::host::fs::{FileLayer, FileOp, Layout, PAGE};
use storlab_model::host::HostConfig;
use storlab_model::{Nanos, Op};
use storlab_pmem::model::NvmmParams;

use crate::error::AppError;

/// What an application's metric counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Completed operations of the counted kinds per second.
    Rate,
    /// Seconds the whole run took (lower is better).
    Seconds,
}

/// A file request of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIo {
    /// Read, write or fsync.
    pub op: FileOp,
    /// The file.
    pub file: u32,
    /// Byte offset.
    pub offset: u64,
    /// Bytes (0 for fsync).
    pub len: u64,
    /// O_DIRECT.
    pub direct: bool,
    /// O_SYNC/O_DSYNC write (force unit access).
    pub fua: bool,
}

impl FileIo {
    /// A buffered read.
    pub fn read(file: u32, offset: u64, len: u64) -> Self {
        FileIo {
            op: FileOp::Read,
            file,
            offset,
            len,
            direct: false,
            fua: false,
        }
    }
    /// A buffered write.
    pub fn write(file: u32, offset: u64, len: u64) -> Self {
        FileIo {
            op: FileOp::Write,
            ..Self::read(file, offset, len)
        }
    }
    /// fsync of the file.
    pub fn fsync(file: u32) -> Self {
        FileIo {
            op: FileOp::Fsync,
            ..Self::read(file, 0, 0)
        }
    }
    /// fdatasync(2) on `file`: as [`FileIo::fsync`], but a change of the
    /// timestamps alone does not force the file system's log.
    pub fn fdatasync(file: u32) -> Self {
        FileIo {
            op: FileOp::Fdatasync,
            ..Self::read(file, 0, 0)
        }
    }
    /// The namespace work of creating `file` (made with
    /// [`PlanCx::create_file`]) in directory number `dir` (each directory
    /// has its own lock): directory entry, inode, log.
    pub fn create(file: u32, dir: u64) -> Self {
        FileIo {
            op: FileOp::Create,
            ..Self::read(file, dir, 0)
        }
    }
    /// Unlink `file` from directory number `dir`: the namespace work,
    /// then its pages and space freed.
    pub fn unlink(file: u32, dir: u64) -> Self {
        FileIo {
            op: FileOp::Unlink,
            ..Self::read(file, dir, 0)
        }
    }
    /// The same request with O_DIRECT set to `direct`.
    pub fn direct(mut self, direct: bool) -> Self {
        self.direct = direct;
        self
    }
}

/// One step of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Compute for this many ns on a core.
    Cpu(u64),
    /// A file request; the thread waits for it.
    Io(FileIo),
    /// A file request the thread does not wait for (until [`Step::Join`]).
    Issue(FileIo),
    /// Wait for every request the thread issued.
    Join,
    /// A request to the block device itself (no file system): the thread
    /// waits for it.
    Raw {
        /// Read or write.
        op: Op,
        /// Byte offset on the device.
        offset: u64,
        /// Bytes.
        len: u64,
    },
    /// Wait this long without a core (a timer, a client's think time).
    Sleep(u64),
    /// Use application channel `ch`: a device the application reaches
    /// outside the file system and block layer (the flash behind hybrid
    /// memory), modelled as one server taken in arrival order (FIFO) and
    /// held `busy` ns (its bandwidth share per request). The thread waits,
    /// without a core, until `latency` ns after its turn began (at least
    /// `busy`); with `latency` 0 it does not wait (a write-back it does
    /// not see). Its wait counts as device time.
    Channel {
        /// The channel (numbered from 0).
        ch: u32,
        /// Time the request holds the channel, ns.
        busy: u64,
        /// Time from its turn to its completion, ns; 0: not waited for.
        latency: u64,
    },
    /// Take application lock `n` (FIFO; locks are numbered from 0).
    Lock(u32),
    /// Release application lock `n`.
    Unlock(u32),
    /// Append `bytes` to group-commit log `log` (from
    /// [`SetupCx::log`]) and wait until they are durable.
    Commit {
        /// The log.
        log: u32,
        /// Bytes of log record.
        bytes: u64,
    },
    /// Delete a file (its cached pages are dropped).
    Delete(u32),
    /// The core stalls on memory for this many ns: loads that miss to a
    /// memory-mapped region, stores through its bandwidth, an msync's
    /// cache-line flushes and barrier (priced by the model with the
    /// device class's cost model, e.g. [`SetupCx::nvmm`]). It holds a core
    /// like [`Step::Cpu`], but its time is the device's in the time by
    /// layer.
    Mem(u64),
    /// Append `bytes` to log `log` and wait until a flush started by
    /// another thread with [`Step::FlushLog`] covers them; the appending
    /// thread never leads a flush itself (a timer-driven group commit:
    /// MongoDB's journal thread).
    Append {
        /// The log.
        log: u32,
        /// Bytes of log record.
        bytes: u64,
    },
    /// Write (and sync, as the log's [`LogSync`] says) everything buffered
    /// in log `log`, waking the appenders it covers; nothing when nothing
    /// is buffered or a flush is under way.
    FlushLog(u32),
    /// The operation of kind `k` (an index into [`Model::op_names`]) ends
    /// here: its latency is recorded and the next one starts.
    End(u16),
    /// Internal: this thread, woken to lead the next flush of log `log`,
    /// writes everything buffered by now (records appended while it was
    /// waking join it).
    #[doc(hidden)]
    LeadFlush(u32),
    /// Internal: a log flush led by this thread covered records up to
    /// this sequence number.
    #[doc(hidden)]
    FlushDone {
        /// The log.
        log: u32,
        /// Last record covered.
        upto: u64,
    },
}

/// How a group-commit log makes its writes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSync {
    /// Write, then fsync(2) the log file (the inode's timestamps
    /// included: on XFS a write's timestamp update makes the fsync force
    /// the file system's log).
    Fsync,
    /// Write, then fdatasync(2) the log file (timestamps alone force no
    /// log).
    Fdatasync,
    /// The write itself is O_DSYNC (force unit access).
    Dsync,
    /// No sync: the write only reaches the page cache.
    None,
}

/// A group-commit log: a file written sequentially (wrapping round).
#[derive(Clone, Copy, Debug)]
pub struct LogSpec {
    /// The log file.
    pub file: u32,
    /// Its size: writes wrap round at the end, bytes.
    pub size: u64,
    /// Writes are rounded up to this many bytes (the log's block).
    pub block: u64,
    /// Written with O_DIRECT.
    pub direct: bool,
    /// How writes become durable.
    pub sync: LogSync,
    /// At the end of the file, start a new one of the same size laid
    /// out as this says (Berkeley DB's log segments are created empty:
    /// [`Layout::Empty`], writes allocate and extend them; RocksDB's WAL
    /// files are preallocated with FALLOC_FL_KEEP_SIZE) instead of
    /// wrapping round (`None`).
    pub rotate: Option<Layout>,
    /// Each flush writes from the start of the block the previous one
    /// ended in (that block's records again, and the new ones), and the
    /// log advances by the bytes appended, not by whole blocks: a log
    /// whose partly filled last block is rewritten until it is full
    /// (PostgreSQL's XLogWrite writes whole WAL pages from the page its
    /// last write ended in, xlog.c). `false`: every flush starts a new
    /// block.
    pub rewrite_last_block: bool,
}

/// What a model sees when it sets up its files.
pub struct SetupCx<'a> {
    pub(crate) fs: &'a mut FileLayer,
    pub(crate) host: &'a HostConfig,
    /// The group-commit logs registered, in order (the driver runs them).
    pub(crate) logs: &'a mut Vec<LogSpec>,
    pub(crate) capacity: u64,
    pub(crate) app: &'static str,
    pub(crate) nvmm: Option<&'a NvmmParams>,
}

impl SetupCx<'_> {
    /// The NVMM device's parameters when the device is main memory on
    /// the processor's bus (the `nvmm` class), for pricing loads, stores
    /// and msyncs of a mapped file ([`Step::Mem`]); `None` otherwise.
    pub fn nvmm(&self) -> Option<&NvmmParams> {
        self.nvmm
    }
    /// Create a file of `size` bytes laid out as `layout`.
    pub fn create_file(&mut self, size: u64, layout: Layout) -> Result<u32, AppError> {
        self.fs
            .create_file(size, layout)
            .map_err(|e| no_room(self.app, e))
    }
    /// Create a file of `size` bytes of a tree that was on the device
    /// before the run, in directory `dir` (a new number starts the next
    /// directory), taking `inodes` inodes (more than 1 for a file that
    /// stands for several the run never opens): its first request reads
    /// its directory's block and its inode's block when they are not
    /// cached ([`storlab_model::host::fs::FileLayer::create_tree_file`]).
    pub fn create_tree_file(&mut self, size: u64, dir: u64, inodes: u64) -> Result<u32, AppError> {
        self.fs
            .create_tree_file(size, dir, inodes)
            .map_err(|e| no_room(self.app, e))
    }
    /// Directory `dir` (the number creates and unlinks name in their
    /// offset) holds `n` entries before the run: files laid out in it
    /// without a create request. Its form (XFS: in the inode, one block,
    /// or leaf blocks) decides what each later create or unlink in it
    /// logs.
    pub fn dir_entries(&mut self, dir: u64, n: u64) {
        self.fs.set_dir_entries(dir, n);
    }
    /// Create a file with room for `size` bytes, its first `written`
    /// bytes already written (allocated; later writes beyond them
    /// allocate and extend it).
    pub fn create_written(&mut self, size: u64, written: u64) -> Result<u32, AppError> {
        self.fs
            .create_file_written(size, written)
            .map_err(|e| no_room(self.app, e))
    }
    /// Start the page cache as a long run of buffered, unsynced writes to
    /// `file` leaves it: dirty pages (taken from `pages`, page numbers of
    /// the file) up to the flusher's background threshold, so that the
    /// flusher writes back as much as the run dirties
    /// ([`FileLayer::dirty_to_background`]). Returns the pages dirtied.
    pub fn dirty_to_background(&mut self, file: u32, pages: impl IntoIterator<Item = u64>) -> u64 {
        self.fs.dirty_to_background(file, pages)
    }
    /// Start the page cache holding `file`'s first `bytes` clean (a
    /// database loaded through the page cache before the run:
    /// [`FileLayer::cache_clean`]).
    pub fn cache_clean(&mut self, file: u32, bytes: u64) {
        self.fs.cache_clean(file, 0, bytes.div_ceil(PAGE));
    }
    /// Register a group-commit log.
    pub fn log(&mut self, spec: LogSpec) -> u32 {
        self.logs.push(spec);
        (self.logs.len() - 1) as u32
    }
    /// The host's configuration.
    pub fn host(&self) -> &HostConfig {
        self.host
    }
    /// The device's capacity, bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
}

/// A file the data set needs does not fit on the device: the layer's
/// error, and what to do about it.
fn no_room(app: &str, e: storlab_model::host::fs::FsError) -> AppError {
    AppError::Run {
        app: app.into(),
        message: format!("{e} (lower the data set with --app-set scale=...)"),
    }
}

/// What a model sees when it plans an operation.
pub struct PlanCx<'a> {
    pub(crate) now: Nanos,
    pub(crate) steps: &'a mut Vec<Step>,
    pub(crate) fs: &'a mut FileLayer,
    pub(crate) app: &'static str,
}

impl PlanCx<'_> {
    /// Current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }
    /// Add a step to the operation.
    pub fn push(&mut self, s: Step) {
        self.steps.push(s);
    }
    /// Create a file now (its creation's costs are steps the model adds).
    pub fn create_file(&mut self, size: u64, layout: Layout) -> Result<u32, AppError> {
        self.fs
            .create_file(size, layout)
            .map_err(|e| no_room(self.app, e))
    }
}

/// An application model: its threads' operations.
pub trait Model {
    /// Names of the operation kinds, indexed by [`Step::End`].
    fn op_names(&self) -> &'static [&'static str];
    /// Which kinds the metric counts (for [`MetricKind::Rate`]).
    fn counted(&self, kind: u16) -> bool {
        let _ = kind;
        true
    }
    /// Rate (counted operations per second) or seconds for the whole run.
    fn metric(&self) -> MetricKind;
    /// Foreground threads (their operations are the metric) and
    /// background threads (log writers, cleaners), in that order.
    fn threads(&self) -> (u32, u32);
    /// Create the files and logs, before the run.
    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError>;
    /// Plan thread `t`'s next operation into `cx`; `false` when the
    /// thread has no more work (foreground threads) .
    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError>;
    /// The model's own figures for the report (hit ratios, ...).
    fn extra(&self) -> Value {
        Value::Null
    }
}

/// Time-by-layer names, in report order.
pub const LAYERS: [&str; 8] = [
    "application_cpu",
    "application_locks",
    "group_commit",
    "file_system",
    "page_cache",
    "block_layer",
    "device",
    "swap",
];

/// Bytes rounded up to whole pages.
pub fn pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE)
}
