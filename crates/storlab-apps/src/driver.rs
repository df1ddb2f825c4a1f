//! The closed-loop driver: an application's threads run operations, each
//! a list of [`Step`]s a [`Model`] plans, inside the engine beside fio
//! threads ([`storlab_sim::engine::AppDriver`]).
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
//!   not covered leads the next once it has woken (the host's wake-up,
//!   drawn with its spread; so do the waiters it covered), taking every
//!   record buffered by then (the leader/follower group commit of
//!   Berkeley DB's `__log_flush`, InnoDB's `log_write_up_to` and
//!   PostgreSQL's `XLogFlush`).
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
use storlab_model::host::fs::{FileLayer, FileReq};
use storlab_model::host::jitter::Jitter;
use storlab_model::host::{HostConfig, HostIo, IoDone};
use storlab_model::Nanos;
use storlab_pmem::model::NvmmParams;
use storlab_sim::engine::{AppCx, AppDriver};
use storlab_sim::stats::{JobStats, LatStat};

use crate::error::AppError;
use crate::info::{AppInfo, Params};
use crate::model::{FileIo, LogSpec, LogSync, MetricKind, Model, PlanCx, SetupCx, Step, LAYERS};

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
    /// The next flush's write of everything pending, `(offset, len,
    /// wrapped)`: a new block from the tail on, or from the start of the
    /// block the last write ended in ([`LogSpec::rewrite_last_block`]),
    /// whole blocks, at the file's start again when it would pass the
    /// end; the tail moves past the records (or the blocks).
    fn place_write(&mut self) -> (u64, u64, bool) {
        let block = self.spec.block;
        let pending = self.pending.max(1);
        self.pending = 0;
        let start = if self.spec.rewrite_last_block {
            self.tail / block * block
        } else {
            self.tail
        };
        let carried = self.tail - start;
        let len = ((carried + pending).div_ceil(block) * block).min(self.spec.size);
        let wrapped = start + len > self.spec.size;
        let offset = if wrapped { 0 } else { start };
        self.tail = if self.spec.rewrite_last_block {
            offset + carried + pending
        } else {
            offset + len
        };
        (offset, len, wrapped)
    }

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
    model: Box<dyn Model>,
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
    /// Requests of every thread in flight: the job's IO depth, as fio
    /// counts it for a job's threads.
    in_flight: u32,
    /// The host's wake-up (`host.wakeup_ns` and its spread) for a thread
    /// that slept on a group commit; `None`: no spread, `wakeup_ns` each.
    wake: Option<Jitter>,
    /// `host.wakeup_ns`.
    wakeup_ns: u64,
}

impl AppRun {
    /// Count a request the application submits: one more in flight, at
    /// the depth it issues at (fio's "IO depths" and "submit" lines).
    fn mark_issue(&mut self) {
        self.in_flight += 1;
        self.stats.depth.mark_depth(self.in_flight);
        self.stats.depth.mark_submit(1);
    }

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
            logs: logs.into_iter().map(Log::new).collect(),
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
            in_flight: 0,
            // a sub-seed of its own, apart from the host's draws
            wake: Jitter::new(host, seed ^ 0x6170_705f_7761_6b65),
            wakeup_ns: host.wakeup_ns,
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
                    self.mark_issue();
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
                    self.mark_issue();
                    cx.submit_raw(HostIo {
                        id: t as u64,
                        thread: self.first_thread + t as u32,
                        op,
                        offset,
                        len,
                        fua: false,
                        poll: false,
                        placement: None,
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
                    // a waiting committer sleeps on its own mutex or
                    // condition variable, so it runs again a host's
                    // wake-up (drawn with its spread: the switch, then
                    // the wait for a core) after the flush that covers
                    // it, or makes it leader, ended
                    let lg = &mut self.logs[log as usize];
                    lg.flushing = false;
                    while lg.waiters.front().is_some_and(|&(_, s)| s <= upto) {
                        let (w, _) = lg.waiters.pop_front().expect("a waiter");
                        let d = self.wake.as_mut().map_or(self.wakeup_ns, Jitter::wakeup);
                        cx.timer(now + d, w as u64);
                    }
                    if lg.timed {
                        // the log's own thread writes the rest next time
                        continue;
                    }
                    if let Some((w, _)) = lg.waiters.pop_front() {
                        // the first waiter not covered leads the next
                        // flush once it runs, writing what is buffered
                        // then: commits arriving while it wakes join it
                        // (Berkeley DB's __log_flush_int gives the woken
                        // leader DB_COMMIT_FLUSH and it flushes up to the
                        // log's end; InnoDB's and RocksDB's next group
                        // leader likewise takes what its wait gathered)
                        lg.flushing = true;
                        let th = &mut self.threads[w as usize];
                        th.steps.insert(th.pos, Step::LeadFlush(log));
                        let d = self.wake.as_mut().map_or(self.wakeup_ns, Jitter::wakeup);
                        cx.timer(now + d, w as u64);
                    }
                }
                Step::LeadFlush(log) => self.lead_flush(t, log, cx),
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
        let (offset, len, wrapped) = lg.place_write();
        if wrapped {
            if let Some(layout) = lg.spec.rotate {
                let fs = cx.fs().expect("applications run on a file system");
                // no room for a new segment: reuse the last one
                if let Ok(f) = fs.create_file(lg.spec.size, layout) {
                    lg.spec.file = f;
                }
            }
        }
        let s = lg.spec;
        let upto = lg.next_seq;
        let mut w = FileIo::write(s.file, offset, len).direct(s.direct);
        w.fua = s.sync == LogSync::Dsync;
        let th = &mut self.threads[t];
        let at = th.pos;
        let mut ins: [Option<Step>; 3] = [Some(Step::Io(w)), None, None];
        match s.sync {
            LogSync::Fsync => ins[1] = Some(Step::Io(FileIo::fsync(s.file))),
            LogSync::Fdatasync => ins[1] = Some(Step::Io(FileIo::fdatasync(s.file))),
            LogSync::Dsync | LogSync::None => {}
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
        self.in_flight -= 1;
        self.stats.depth.mark_complete(1);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LogSync;

    fn log(rewrite: bool) -> Log {
        Log::new(LogSpec {
            file: 0,
            size: 64 << 10,
            block: 8192,
            direct: false,
            sync: LogSync::Fdatasync,
            rotate: None,
            rewrite_last_block: rewrite,
        })
    }

    #[test]
    fn a_log_that_rewrites_its_last_block_writes_it_again_until_full() {
        // PostgreSQL: 500-byte commits rewrite the WAL page they end in
        let mut l = log(true);
        let mut writes = Vec::new();
        for _ in 0..20 {
            l.pending = 500;
            writes.push(l.place_write());
        }
        // the first 16 commits (8,000 bytes) stay in page 0
        assert!(
            writes[..16].iter().all(|w| *w == (0, 8192, false)),
            "{writes:?}"
        );
        // the 17th crosses into page 1: pages 0 and 1 in one write
        assert_eq!(writes[16], (0, 16384, false));
        assert_eq!(writes[17], (8192, 8192, false));
        // a log that does not rewrite moves on by whole blocks
        let mut l = log(false);
        l.pending = 500;
        assert_eq!(l.place_write(), (0, 8192, false));
        l.pending = 500;
        assert_eq!(l.place_write(), (8192, 8192, false));
    }

    #[test]
    fn a_log_starts_its_file_again_at_the_end() {
        let mut l = log(true);
        l.tail = (64 << 10) - 100;
        l.pending = 500;
        // the last page's 8,092 bytes and the 500 new ones, two pages
        // that would pass the end: written at the start instead
        assert_eq!(l.place_write(), (0, 16384, true));
        assert_eq!(l.tail, 8092 + 500);
    }
}
