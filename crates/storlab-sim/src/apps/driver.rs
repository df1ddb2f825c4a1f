//! The closed-loop driver: an application's threads run operations, each
//! a list of [`Step`]s a [`Model`] plans, inside the engine beside fio
//! threads ([`crate::engine::AppDriver`]).
//!
//! Mechanisms the driver provides so every model has them alike:
//! - **CPU** ([`Step::Cpu`]): the application's computation runs on a
//!   pool of the host's `cores` cores, first come first served (a thread
//!   waits for a core when all are busy).
//! - **Files** ([`Step::Io`], [`Step::Issue`] + [`Step::Join`]): requests
//!   through the file-system layer (page cache, inode lock, allocation,
//!   log, writeback), blocking or several in flight.
//! - **Locks** ([`Step::Lock`], [`Step::Unlock`]): the application's own
//!   mutexes, FIFO.
//! - **Group commit** ([`Step::Commit`]): a transaction's log record goes
//!   into the log's buffer; the committing thread waits until a log write
//!   (and its sync) that covers the record completes. When no flush is in
//!   progress the committer leads one (writing everything buffered);
//!   otherwise it waits, and when the running flush ends the first waiter
//!   not covered leads the next, taking every record buffered meanwhile
//!   (the leader/follower group commit of Berkeley DB's `__log_flush`,
//!   InnoDB's `log_write_up_to` and PostgreSQL's `XLogFlush`).
//!
//! Time by layer: a foreground thread's time is attributed step by step:
//! CPU steps (with the wait for a core) to `application_cpu`; waits for
//! the application's locks to `application_locks`; a follower's wait for
//! the group commit to `group_commit`; a request's latency by its
//! breakdown's components: `file_system` (file-system code and its locks),
//! `page_cache` (copies, waits for writeback or the dirty limit),
//! `block_layer` (system calls, block queue, driver, waits for cores and
//! threads, interrupt, wake-up) and `device` (link, queues, controller,
//! media). Background threads' time is not an operation's.

use std::collections::VecDeque;

use serde_json::{json, Value};
use storlab_model::breakdown::{Breakdown, Component, COMPONENTS};
use storlab_model::fs::{FileLayer, FileOp, FileReq, Layout, PAGE};
use storlab_model::host::{HostConfig, HostIo, IoDone};
use storlab_model::{Nanos, Op};
use storlab_pmem::model::NvmmParams;

use super::{AppError, AppInfo, MetricKind, Params};
use crate::engine::{AppCx, AppDriver};
use crate::stats::{JobStats, LatStat};

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
    /// Write, then fsync the log file (fdatasync).
    Fsync,
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
    /// At the end of the file, start a new one of the same size (empty:
    /// its writes allocate and extend it, as Berkeley DB's and
    /// PostgreSQL's log segments are created) instead of wrapping round.
    pub rotate: bool,
}

/// What a model sees when it sets up its files.
pub struct SetupCx<'a> {
    fs: &'a mut FileLayer,
    host: &'a HostConfig,
    logs: &'a mut Vec<Log>,
    capacity: u64,
    app: &'static str,
    nvmm: Option<&'a NvmmParams>,
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
            .map_err(|e| AppError::Run {
                app: self.app.into(),
                message: format!("{e} (lower the data set with --app-set scale=...)"),
            })
    }
    /// Create a file with room for `size` bytes, its first `written`
    /// bytes already written (allocated; later writes beyond them
    /// allocate and extend it).
    pub fn create_written(&mut self, size: u64, written: u64) -> Result<u32, AppError> {
        self.fs
            .create_file_written(size, written)
            .map_err(|e| AppError::Run {
                app: self.app.into(),
                message: format!("{e} (lower the data set with --app-set scale=...)"),
            })
    }
    /// Register a group-commit log.
    pub fn log(&mut self, spec: LogSpec) -> u32 {
        self.logs.push(Log::new(spec));
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

/// What a model sees when it plans an operation.
pub struct PlanCx<'a> {
    now: Nanos,
    steps: &'a mut Vec<Step>,
    fs: &'a mut FileLayer,
    app: &'static str,
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
            .map_err(|e| AppError::Run {
                app: self.app.into(),
                message: format!("{e} (lower the data set with --app-set scale=...)"),
            })
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

/// The layer a breakdown component's time belongs to.
fn layer_of(c: Component) -> usize {
    use Component::*;
    match c {
        FileSystem | LockWait => 3,
        Copy | Background => 4,
        Syscall | BlockLayer | Driver | ThreadWait | SchedulerWait | WorkerWait | CoreWait
        | Interrupt | Wakeup => 5,
        Pio | Link | DeviceQueue | Interconnect | Controller | Media | Cache => 6,
    }
}

#[derive(Clone, Debug)]
struct Log {
    spec: LogSpec,
    tail: u64,
    pending: u64,
    next_seq: u64,
    flushing: bool,
    waiters: VecDeque<(u32, u64)>,
    /// Flushed only by [`Step::FlushLog`]: waiters never lead one.
    timed: bool,
}

impl Log {
    fn new(spec: LogSpec) -> Self {
        Log {
            spec,
            tail: 0,
            pending: 0,
            next_seq: 0,
            flushing: false,
            waiters: VecDeque::new(),
            timed: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    None,
    Cpu,
    Mem,
    Io,
    Join,
    Lock,
    Commit,
    Sleep,
    Channel,
}

struct Th {
    steps: Vec<Step>,
    pos: usize,
    fg: bool,
    done: bool,
    op_start: Nanos,
    wait: Wait,
    wait_since: Nanos,
    outstanding: u32,
    joined_bd: Breakdown,
}

/// An application running in the engine.
pub struct AppRun {
    info: &'static AppInfo,
    params: Params,
    model: Box<dyn super::driver::Model>,
    threads: Vec<Th>,
    first_thread: u32,
    fg: u32,
    cores: Vec<Nanos>,
    locks: Vec<(bool, VecDeque<u32>)>,
    /// Application channels ([`Step::Channel`]): when each is next free.
    channels: Vec<Nanos>,
    logs: Vec<Log>,
    start: Nanos,
    runtime_ns: Nanos,
    /// Last foreground operation's end.
    last_end: Nanos,
    fg_running: u32,
    ops: Vec<LatStat>,
    counted_ops: u64,
    layers: [u64; LAYERS.len()],
    stats: JobStats,
    error: Option<AppError>,
    commits: u64,
    flushes: u64,
}

impl AppRun {
    /// Set `model` up on `fs` (its files and logs) and make it ready to
    /// run as host threads `first_thread..` (`threads()` of them), as job
    /// `job` of fio group `group_id`; `nvmm`: the device's parameters when
    /// it is NVMM ([`SetupCx::nvmm`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        info: &'static AppInfo,
        params: Params,
        mut model: Box<dyn Model>,
        fs: &mut FileLayer,
        host: &HostConfig,
        capacity: u64,
        nvmm: Option<&NvmmParams>,
        first_thread: u32,
        job: &str,
        group_id: u32,
        seed: u64,
    ) -> Result<AppRun, AppError> {
        let mut logs = Vec::new();
        model.setup(
            &mut SetupCx {
                fs,
                host,
                logs: &mut logs,
                capacity,
                app: info.name,
                nvmm,
            },
            seed,
        )?;
        let (fg, bg) = model.threads();
        let threads = (0..fg + bg)
            .map(|t| Th {
                steps: Vec::new(),
                pos: 0,
                fg: t < fg,
                done: false,
                op_start: 0,
                wait: Wait::None,
                wait_since: 0,
                outstanding: 0,
                joined_bd: Breakdown::default(),
            })
            .collect();
        let mut stats = JobStats::new(job, group_id);
        stats.options = params
            .values()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        stats.options.insert(0, ("app".into(), info.name.into()));
        let ops = model
            .op_names()
            .iter()
            .map(|_| LatStat::with_percentiles(true))
            .collect();
        Ok(AppRun {
            runtime_ns: params.runtime_ns()?,
            info,
            params,
            model,
            threads,
            first_thread,
            fg,
            cores: vec![0; host.cores.max(1) as usize],
            locks: Vec::new(),
            channels: Vec::new(),
            logs,
            start: 0,
            last_end: 0,
            fg_running: fg,
            ops,
            counted_ops: 0,
            layers: [0; LAYERS.len()],
            stats,
            error: None,
            commits: 0,
            flushes: 0,
        })
    }

    /// Host threads the application needs.
    pub fn host_threads(&self) -> u32 {
        self.threads.len() as u32
    }

    /// The first error a model returned while planning, if any.
    pub fn take_error(&mut self) -> Option<AppError> {
        self.error.take()
    }

    fn end_wait(&mut self, t: usize, now: Nanos, layer: usize) {
        let th = &mut self.threads[t];
        if th.fg {
            self.layers[layer] += now - th.wait_since;
        }
        th.wait = Wait::None;
    }

    /// Run thread `t` until it waits.
    fn advance(&mut self, t: usize, cx: &mut AppCx) {
        let now = cx.now();
        loop {
            let th = &mut self.threads[t];
            if th.done {
                return;
            }
            if th.pos == th.steps.len() {
                // plan the next operation
                th.steps.clear();
                th.pos = 0;
                let stop = if th.fg {
                    self.runtime_ns > 0 && now >= self.start + self.runtime_ns
                } else {
                    self.fg_running == 0
                };
                let more = !stop && self.error.is_none() && {
                    let mut steps = std::mem::take(&mut self.threads[t].steps);
                    let fs = cx.fs().expect("applications run on a file system");
                    let mut pcx = PlanCx {
                        now,
                        steps: &mut steps,
                        fs,
                        app: self.info.name,
                    };
                    let r = self.model.next_op(t as u32, &mut pcx);
                    self.threads[t].steps = steps;
                    match r {
                        Ok(more) => more && !self.threads[t].steps.is_empty(),
                        Err(e) => {
                            self.error = Some(e);
                            false
                        }
                    }
                };
                let th = &mut self.threads[t];
                if !more {
                    th.done = true;
                    if th.fg {
                        self.fg_running -= 1;
                        if self.fg_running == 0 {
                            // wake sleeping background threads so they stop
                            for (b, bt) in self.threads.iter().enumerate() {
                                if !bt.fg && !bt.done && bt.wait == Wait::Sleep {
                                    cx.timer(now, b as u64);
                                }
                            }
                        }
                    }
                    return;
                }
                continue;
            }
            let step = th.steps[th.pos];
            th.pos += 1;
            match step {
                Step::Cpu(ns) | Step::Mem(ns) => {
                    let (k, free) = self
                        .cores
                        .iter()
                        .copied()
                        .enumerate()
                        .min_by_key(|&(_, f)| f)
                        .expect("at least one core");
                    let end = free.max(now) + ns;
                    self.cores[k] = end;
                    let th = &mut self.threads[t];
                    th.wait = if matches!(step, Step::Mem(_)) {
                        Wait::Mem
                    } else {
                        Wait::Cpu
                    };
                    th.wait_since = now;
                    cx.timer(end, t as u64);
                    return;
                }
                Step::Io(io) | Step::Issue(io) => {
                    let blocking = matches!(step, Step::Io(_));
                    th.outstanding += 1;
                    if blocking {
                        th.wait = Wait::Io;
                        th.wait_since = now;
                    }
                    let req = FileReq {
                        id: t as u64,
                        thread: self.first_thread + t as u32,
                        op: io.op,
                        file: io.file,
                        offset: io.offset,
                        len: io.len,
                        direct: io.direct,
                        fua: io.fua,
                        poll: false,
                    };
                    cx.submit_file(req);
                    if blocking {
                        return;
                    }
                }
                Step::Join => {
                    if th.outstanding > 0 {
                        th.wait = Wait::Join;
                        th.wait_since = now;
                        th.joined_bd = Breakdown::default();
                        return;
                    }
                }
                Step::Raw { op, offset, len } => {
                    th.outstanding += 1;
                    th.wait = Wait::Io;
                    th.wait_since = now;
                    cx.submit_raw(HostIo {
                        id: t as u64,
                        thread: self.first_thread + t as u32,
                        op,
                        offset,
                        len,
                        fua: false,
                        poll: false,
                    });
                    return;
                }
                Step::Sleep(ns) => {
                    th.wait = Wait::Sleep;
                    th.wait_since = now;
                    cx.timer(now + ns, t as u64);
                    return;
                }
                Step::Channel { ch, busy, latency } => {
                    let ch = ch as usize;
                    if self.channels.len() <= ch {
                        self.channels.resize(ch + 1, 0);
                    }
                    let start = self.channels[ch].max(now);
                    self.channels[ch] = start + busy;
                    if latency > 0 {
                        let th = &mut self.threads[t];
                        th.wait = Wait::Channel;
                        th.wait_since = now;
                        cx.timer(start + latency.max(busy), t as u64);
                        return;
                    }
                }
                Step::Lock(n) => {
                    let n = n as usize;
                    if self.locks.len() <= n {
                        self.locks.resize(n + 1, (false, VecDeque::new()));
                    }
                    let l = &mut self.locks[n];
                    if l.0 {
                        l.1.push_back(t as u32);
                        let th = &mut self.threads[t];
                        th.wait = Wait::Lock;
                        th.wait_since = now;
                        return;
                    }
                    l.0 = true;
                }
                Step::Unlock(n) => {
                    let l = &mut self.locks[n as usize];
                    match l.1.pop_front() {
                        // handed to the next waiter, who goes on now
                        Some(w) => cx.timer(now, w as u64),
                        None => l.0 = false,
                    }
                }
                Step::Commit { log, bytes } => {
                    self.commits += 1;
                    let lg = &mut self.logs[log as usize];
                    lg.pending += bytes;
                    lg.next_seq += 1;
                    let seq = lg.next_seq;
                    if lg.flushing {
                        lg.waiters.push_back((t as u32, seq));
                        let th = &mut self.threads[t];
                        th.wait = Wait::Commit;
                        th.wait_since = now;
                        return;
                    }
                    self.lead_flush(t, log, cx);
                }
                Step::Append { log, bytes } => {
                    self.commits += 1;
                    let lg = &mut self.logs[log as usize];
                    lg.timed = true;
                    lg.pending += bytes;
                    lg.next_seq += 1;
                    let seq = lg.next_seq;
                    lg.waiters.push_back((t as u32, seq));
                    let th = &mut self.threads[t];
                    th.wait = Wait::Commit;
                    th.wait_since = now;
                    return;
                }
                Step::FlushLog(log) => {
                    let lg = &mut self.logs[log as usize];
                    lg.timed = true;
                    if !lg.flushing && lg.pending > 0 {
                        self.lead_flush(t, log, cx);
                    }
                }
                Step::FlushDone { log, upto } => {
                    let lg = &mut self.logs[log as usize];
                    lg.flushing = false;
                    while lg.waiters.front().is_some_and(|&(_, s)| s <= upto) {
                        let (w, _) = lg.waiters.pop_front().expect("a waiter");
                        cx.timer(now, w as u64);
                    }
                    if lg.timed {
                        // the log's own thread writes the rest next time
                        continue;
                    }
                    if let Some(&(w, _)) = lg.waiters.front() {
                        // the first waiter not covered leads the next flush
                        lg.waiters.pop_front();
                        self.lead_flush(w as usize, log, cx);
                        cx.timer(now, w as u64);
                    }
                }
                Step::Delete(f) => {
                    if let Some(fs) = cx.fs() {
                        fs.delete_file(f);
                    }
                }
                Step::End(k) => {
                    let th = &mut self.threads[t];
                    let lat = now - th.op_start;
                    th.op_start = now;
                    if th.fg {
                        self.ops[k as usize].record(lat);
                        if self.model.counted(k) {
                            self.counted_ops += 1;
                        }
                        self.last_end = self.last_end.max(now);
                    }
                }
            }
        }
    }

    /// Thread `t` writes everything buffered in `log` (inserted as its
    /// next steps).
    fn lead_flush(&mut self, t: usize, log: u32, cx: &mut AppCx) {
        self.flushes += 1;
        let lg = &mut self.logs[log as usize];
        lg.flushing = true;
        let len = lg.pending.max(1).div_ceil(lg.spec.block) * lg.spec.block;
        lg.pending = 0;
        let len = len.min(lg.spec.size);
        if lg.tail + len > lg.spec.size {
            lg.tail = 0;
            if lg.spec.rotate {
                let fs = cx.fs().expect("applications run on a file system");
                // no room for a new segment: reuse the last one
                if let Ok(f) = fs.create_file(lg.spec.size, Layout::Empty) {
                    lg.spec.file = f;
                }
            }
        }
        let s = lg.spec;
        let offset = lg.tail;
        lg.tail += len;
        let upto = lg.next_seq;
        let mut w = FileIo::write(s.file, offset, len).direct(s.direct);
        w.fua = s.sync == LogSync::Dsync;
        let th = &mut self.threads[t];
        let at = th.pos;
        let mut ins: [Option<Step>; 3] = [Some(Step::Io(w)), None, None];
        if s.sync == LogSync::Fsync {
            ins[1] = Some(Step::Io(FileIo::fsync(s.file)));
        }
        ins[2] = Some(Step::FlushDone { log, upto });
        th.steps.splice(at..at, ins.into_iter().flatten());
    }

    /// The `app` object of the report.
    pub fn app_object(&self, end: Nanos) -> Value {
        let elapsed = self.last_end.max(self.start) - self.start;
        let secs = elapsed as f64 / 1e9;
        let (value, _) = match self.model.metric() {
            MetricKind::Rate => (
                if secs > 0.0 {
                    self.counted_ops as f64 / secs
                } else {
                    0.0
                },
                (),
            ),
            MetricKind::Seconds => (secs, ()),
        };
        let mut ops = serde_json::Map::new();
        for (k, name) in self.model.op_names().iter().enumerate() {
            let s = &self.ops[k];
            if s.count() == 0 {
                continue;
            }
            let pct: serde_json::Map<String, Value> = [50.0, 90.0, 95.0, 99.0, 99.9]
                .iter()
                .map(|&p| (format!("{p:.6}"), json!(s.percentile(p))))
                .collect();
            ops.insert(
                name.to_string(),
                json!({"count": s.count(), "mean_ns": s.mean(), "min_ns": s.min(),
                       "max_ns": s.max(), "percentiles_ns": pct}),
            );
        }
        let total: u64 = self.layers.iter().sum();
        let nops: u64 = self.ops.iter().map(|s| s.count()).sum();
        let layers: serde_json::Map<String, Value> = LAYERS
            .iter()
            .zip(self.layers)
            .map(|(n, ns)| {
                (
                    n.to_string(),
                    json!({"ns_per_op": if nops > 0 { ns as f64 / nops as f64 } else { 0.0 },
                           "share": if total > 0 { ns as f64 / total as f64 } else { 0.0 }}),
                )
            })
            .collect();
        let params: serde_json::Map<String, Value> = self
            .params
            .values()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        json!({
            "name": self.info.name,
            "metric": value,
            "unit": self.info.unit,
            "elapsed_ns": elapsed,
            "operations_counted": self.counted_ops,
            "operations": ops,
            "time_by_layer": layers,
            "group_commit": {"commits": self.commits, "log_flushes": self.flushes},
            "parameters": params,
            "model": self.model.extra(),
            "simulated_end_ns": end,
        })
    }
}

impl AppDriver for AppRun {
    fn start(&mut self, cx: &mut AppCx) {
        self.start = cx.now();
        self.last_end = self.start;
        for t in 0..self.threads.len() {
            self.threads[t].op_start = self.start;
            self.advance(t, cx);
        }
    }

    fn done(&mut self, done: &IoDone, cx: &mut AppCx) {
        let t = done.id as usize;
        let now = cx.now();
        self.stats.record(
            done.op,
            done.slat_ns,
            done.clat_ns,
            done.len,
            &done.breakdown,
        );
        let th = &mut self.threads[t];
        th.outstanding -= 1;
        match th.wait {
            Wait::Io => {
                if th.fg {
                    for c in COMPONENTS {
                        self.layers[layer_of(c)] += done.breakdown.get(c);
                    }
                }
                th.wait = Wait::None;
                self.advance(t, cx);
            }
            Wait::Join => {
                th.joined_bd.merge(&done.breakdown);
                if th.outstanding == 0 {
                    if th.fg {
                        // the wait, in the joined requests' proportions
                        let waited = now - th.wait_since;
                        let sum = th.joined_bd.total().max(1);
                        let mut given = 0;
                        for c in COMPONENTS {
                            let part =
                                (waited as u128 * th.joined_bd.get(c) as u128 / sum as u128) as u64;
                            self.layers[layer_of(c)] += part;
                            given += part;
                        }
                        self.layers[6] += waited - given.min(waited);
                    }
                    self.threads[t].wait = Wait::None;
                    self.advance(t, cx);
                }
            }
            _ => {}
        }
    }

    fn timer(&mut self, key: u64, cx: &mut AppCx) {
        let t = key as usize;
        let now = cx.now();
        match self.threads[t].wait {
            Wait::Cpu => self.end_wait(t, now, 0),
            Wait::Mem | Wait::Channel => self.end_wait(t, now, 6),
            Wait::Lock => self.end_wait(t, now, 1),
            Wait::Commit => self.end_wait(t, now, 2),
            Wait::Sleep => {
                let th = &mut self.threads[t];
                th.wait = Wait::None;
                if !th.fg && self.fg_running == 0 {
                    // the foreground has finished: a background thread
                    // woken from its sleep stops without its next round
                    th.done = true;
                    return;
                }
            }
            // a stale wake-up (the thread moved on): nothing to do
            Wait::None | Wait::Io | Wait::Join => return,
        }
        self.advance(t, cx);
    }

    fn finished(&self) -> bool {
        self.threads.iter().all(|t| t.done && t.outstanding == 0)
    }

    fn stats(&mut self, end: Nanos) -> JobStats {
        let mut s = self.stats.clone();
        let run = self.last_end.saturating_sub(self.start);
        for d in 0..3 {
            if s.dirs[d].ios() > 0 {
                s.runtime_ns[d] = run;
            }
        }
        s.job_runtime_ns = run;
        s.members = self.fg.max(1);
        let mut app = self.app_object(end);
        if let Some(e) = &self.error {
            // the run stopped early: `run::simulate` fails with this
            let message = match e {
                AppError::Run { message, .. } => message.clone(),
                other => other.to_string(),
            };
            app["error"] = json!(message);
        }
        s.app = Some(app);
        s
    }
}

/// Bytes rounded up to whole pages.
pub fn pages(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE)
}
