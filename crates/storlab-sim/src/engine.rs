//! The discrete-event run loop: drives the host + device model in virtual
//! time from per-thread IO sources.
//!
//! Every thread is a fio job thread: it keeps up to `iodepth` requests
//! outstanding, honours `thinktime`, `rate`/`rate_iops`, `runtime`,
//! `time_based` and `ramp_time`, and replays timestamps for traces (open
//! loop). Events are kept in order of (time, insertion sequence), so ties
//! break by insertion order and a run is deterministic.

use storlab_model::host::fs::state::is_flusher_timer;
use storlab_model::host::fs::{FileLayer, FileOp, FileReq, FS_TOKEN};
use storlab_model::host::{Host, HostCx, HostIo};
use storlab_model::{Nanos, Op};

pub use crate::plan::{FileTarget, IoObserver, IoReq, IoSource, ThreadPlan};
use crate::queue::EventQueue;
use crate::stats::JobStats;

/// Ids of requests an application submits carry this bit (and the
/// application's index in bits 40-55); the engine routes their completions
/// to the application, not to a fio thread.
pub const APP_ID: u64 = 1 << 63;

/// Tokens of applications' timers: the engine's thread bit and bit 61
/// (fio thread wake-ups leave bit 61 clear, device tokens stay below it,
/// host and file-system tokens set the top bit).
const APP_TIMER: u64 = THREAD_BIT | 1 << 61;

/// An application model driven by the engine beside fio threads: it owns
/// host threads `first_thread..first_thread + threads()` and submits file
/// requests (through the file-system layer) or raw device requests, and
/// sets timers; the engine calls it back when they finish or fire. The
/// application decides what its threads do (closed loops of operations:
/// the `storlab-apps` crate).
pub trait AppDriver {
    /// Start the application's threads at `cx.now()`.
    fn start(&mut self, cx: &mut AppCx);
    /// A request the application submitted finished (`done.id` as it was
    /// submitted, with [`APP_ID`] and the application's index removed).
    fn done(&mut self, done: &storlab_model::host::IoDone, cx: &mut AppCx);
    /// A timer set with [`AppCx::timer`] fired.
    fn timer(&mut self, key: u64, cx: &mut AppCx);
    /// Every thread has finished: nothing is outstanding and no timer is
    /// set.
    fn finished(&self) -> bool;
    /// The application's statistics at the end of its group.
    fn stats(&mut self, end: Nanos) -> JobStats;
}

/// What an application may do when called back: submit requests, set
/// timers, create and delete files.
pub struct AppCx<'a> {
    now: Nanos,
    app: u64,
    host: &'a mut Host,
    fs: Option<&'a mut FileLayer>,
    hcx: &'a mut HostCx,
    timers: &'a mut Vec<(Nanos, u64)>,
}

impl AppCx<'_> {
    /// Current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The host's configuration (cores, clock).
    pub fn host_config(&self) -> &storlab_model::host::HostConfig {
        self.host.config()
    }

    /// The file-system layer, if the run has one.
    pub fn fs(&mut self) -> Option<&mut FileLayer> {
        self.fs.as_deref_mut()
    }

    /// Submit a file request now; `req.id` must stay below 2^40.
    pub fn submit_file(&mut self, mut req: FileReq) {
        debug_assert!(req.id < 1 << 40);
        req.id |= APP_ID | self.app << 40;
        let fs = self
            .fs
            .as_deref_mut()
            .expect("an application's file requests need a file system");
        fs_submit(fs, self.now, req, self.host, self.hcx);
    }

    /// Submit a request to the block device (bypassing any file system);
    /// `io.id` must stay below 2^40.
    pub fn submit_raw(&mut self, mut io: HostIo) {
        debug_assert!(io.id < 1 << 40);
        io.id |= APP_ID | self.app << 40;
        self.host.submit(self.now, io, self.hcx);
    }

    /// Call [`AppDriver::timer`] with `key` (below 2^40) at `at`.
    pub fn timer(&mut self, at: Nanos, key: u64) {
        debug_assert!(key < 1 << 40);
        self.timers.push((at, APP_TIMER | self.app << 40 | key));
    }
}

/// Submit a file request while `hcx.done` may hold finished requests the
/// engine has not taken yet (a device that completes at once, an earlier
/// submission of the same batch): the file layer takes everything in
/// `hcx.done` for its own children, so those are set aside and put back
/// in front of what the submission finished.
fn fs_submit(fs: &mut FileLayer, now: Nanos, req: FileReq, host: &mut Host, hcx: &mut HostCx) {
    if hcx.done.is_empty() {
        fs.submit(now, req, host, hcx);
        return;
    }
    let mut waiting = std::mem::take(&mut hcx.done);
    fs.submit(now, req, host, hcx);
    waiting.append(&mut hcx.done);
    hcx.done = waiting;
}

/// (Laid out in declaration order, the plan with its statistics last: the
/// run state read for every request stays in the first cache lines.)
#[repr(C)]
struct ThreadState {
    start: Nanos,
    outstanding: u32,
    pending: Option<IoReq>,
    exhausted: bool,
    not_before: Nanos,
    issued_bytes: [u64; 3],
    issued_ios: [u64; 3],
    first_io: Option<Nanos>,
    last_done: Nanos,
    wake_pending: bool,
    submitted: u64,
    done: bool,
    plan: ThreadPlan,
}

impl ThreadState {
    /// `d` after the thread's start, saturating (job times past the
    /// clock's horizon end the run with an error, not a wrapped clock).
    fn after_start(&self, d: Nanos) -> Nanos {
        self.start.saturating_add(d)
    }
}

/// When `done` units at `per_s` units a second have been issued, ns after
/// the start (saturating: the horizon check ends a run that gets there).
#[inline]
fn ns_at_rate(done: u64, per_s: u64) -> Nanos {
    (done as u128 * 1_000_000_000 / per_s as u128).min(Nanos::MAX as u128) as Nanos
}

const THREAD_BIT: u64 = 1 << 62;

/// Simulated time a run may reach: 2^62 ns, about 146 years. The clock
/// is u64 nanoseconds; job times (think times, rate limits, start delays)
/// are summed saturating, and an event at or past the horizon ends the
/// run with [`EngineError::PastHorizon`] instead of wrapping round.
pub const HORIZON_NS: Nanos = 1 << 62;

/// Why a run could not finish.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Requests never completed: the model stopped making progress (a bug
    /// in a device model, reported rather than hidden).
    #[error("model stalled at {at} ns with {outstanding} requests outstanding (a device-model bug; please report it with the job file and seed). Device state: {state}")]
    Stuck {
        /// Requests that never completed.
        outstanding: u64,
        /// Simulated time when the event queue ran dry.
        at: Nanos,
        /// The device's own summary of its queues.
        state: String,
    },
    /// The job's own times (think time, rate, start delay, trace times)
    /// took the run past [`HORIZON_NS`].
    #[error("the run passed {} years of simulated time (an event at {at} ns): lower thinktime, rate limits, startdelay or number_ios", HORIZON_NS / 31_557_600_000_000_000)]
    PastHorizon {
        /// The event's time.
        at: Nanos,
    },
}

/// Progress reporting: called with (completed requests so far, simulated
/// time) every 65536 completions.
pub type Progress<'a> = &'a mut dyn FnMut(u64, Nanos);

/// The simulator: a host+device model and the event queue.
pub struct Engine {
    host: Host,
    /// The file-system layer in front of the host, if any.
    fs: Option<FileLayer>,
    heap: EventQueue,
    now: Nanos,
    hcx: HostCx,
    /// Request id → (thread, submit time, request number within thread).
    inflight: Vec<(u32, Nanos, u64, u64)>,
    free_ids: Vec<u32>,
    completed: u64,
    events: u64,
    to_pump: Vec<usize>,
    /// Applications of the running group, and their first host thread.
    apps: Vec<Box<dyn AppDriver>>,
    app_timers: Vec<(Nanos, u64)>,
}

impl Engine {
    /// An engine around a host stack (which owns its device).
    pub fn new(host: Host) -> Self {
        Self {
            host,
            fs: None,
            heap: EventQueue::default(),
            now: 0,
            hcx: HostCx::default(),
            inflight: Vec::new(),
            free_ids: Vec::new(),
            completed: 0,
            events: 0,
            to_pump: Vec::new(),
            apps: Vec::new(),
            app_timers: Vec::new(),
        }
    }

    /// Call application `a` back with its context, then queue what it
    /// asked for.
    fn with_app(&mut self, a: usize, f: impl FnOnce(&mut dyn AppDriver, &mut AppCx)) {
        let mut cx = AppCx {
            now: self.now,
            app: a as u64,
            host: &mut self.host,
            fs: self.fs.as_mut(),
            hcx: &mut self.hcx,
            timers: &mut self.app_timers,
        };
        f(self.apps[a].as_mut(), &mut cx);
        for (t, tok) in self.app_timers.drain(..) {
            self.heap.push(t, tok);
        }
        self.queue_wakeups();
    }

    /// An engine with a file-system layer in front of the host stack.
    pub fn with_fs(host: Host, fs: FileLayer) -> Self {
        let mut e = Engine::new(host);
        e.fs = Some(fs);
        e
    }

    /// The file-system layer, if any.
    pub fn fs(&self) -> Option<&FileLayer> {
        self.fs.as_ref()
    }

    /// Current simulated time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The host (and through it the device) for reports.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Move the wake-ups the host asked for into the event queue, in the
    /// order they were asked for (ties break by that order).
    #[inline]
    fn queue_wakeups(&mut self) {
        for &(t, tok) in &self.hcx.dev.wakeups {
            self.heap.push(t, tok);
        }
        self.hcx.dev.wakeups.clear();
    }

    /// Account the finished requests in `hcx.done` and let their threads
    /// issue again.
    fn drain_done(
        &mut self,
        threads: &mut [ThreadState],
        first_thread: u32,
        progress: &mut dyn FnMut(u64, Nanos),
    ) {
        // a thread issuing again may see some requests complete at once (a
        // device that answers at the current time): go round until none
        while !self.hcx.done.is_empty() {
            let mut app_done = Vec::new();
            for d in &self.hcx.done {
                if d.id & APP_ID != 0 {
                    app_done.push(*d);
                    continue;
                }
                let (thread, submitted, n, offset) = self.inflight[d.id as usize];
                self.free_ids.push(d.id as u32);
                let ti = (thread - first_thread) as usize;
                let th = &mut threads[ti];
                th.outstanding -= 1;
                th.last_done = d.at;
                let lat = d.at - submitted;
                th.plan.source.completed(n, lat);
                if d.error != 0 {
                    // fio stops a job at its first failed IO (no
                    // continue_on_error) and reports its errno in "error"
                    if th.plan.stats.error == 0 {
                        th.plan.stats.error = d.error;
                        th.plan.stats.error_detail = Some(format!(
                            "io_u error on file {}: {}: {} offset={offset}, buflen={}",
                            th.plan.stats.name,
                            crate::stats::errno_text(d.error),
                            ["read", "write", "trim", "sync"][d.op.index()],
                            d.len
                        ));
                    }
                    th.exhausted = true;
                    th.pending = None;
                } else if d.at >= th.after_start(th.plan.ramp_ns) {
                    th.plan
                        .stats
                        .record(d.op, d.slat_ns, d.clat_ns, d.len, &d.breakdown);
                    if let Some(o) = &mut th.plan.observer {
                        let at = d.at - th.start;
                        o.completed(at, d.op, offset, d.len, d.slat_ns, d.clat_ns);
                    }
                }
                th.plan.stats.depth.mark_complete(1);
                let over = th.plan.max_latency_ns.filter(|&m| lat > m);
                if let (Some(max), 0) = (over, th.plan.stats.error) {
                    th.plan.stats.error = crate::stats::ETIMEDOUT;
                    th.plan.stats.error_detail = Some(format!(
                        "latency of {lat} nsec exceeds specified max ({max} nsec): {} {} {offset} {}",
                        th.plan.stats.name,
                        ["read", "write", "trim", "sync"][d.op.index()],
                        d.len
                    ));
                    th.exhausted = true;
                    th.pending = None;
                }
                if th.plan.thinktime_ns > 0 {
                    th.not_before = th.not_before.max(d.at.saturating_add(th.plan.thinktime_ns));
                }
                self.completed += 1;
                if self.completed & 0xffff == 0 {
                    progress(self.completed, self.now);
                }
                if !th.wake_pending {
                    th.wake_pending = true;
                    self.to_pump.push(ti);
                }
            }
            self.hcx.done.clear();
            for mut d in app_done {
                let a = ((d.id >> 40) & 0xffff) as usize;
                d.id &= (1 << 40) - 1;
                self.with_app(a, |app, cx| app.done(&d, cx));
            }
            // the threads that had completions may issue again (issuing
            // adds none to `to_pump`: what completes at once waits in
            // `hcx.done` for the next round)
            for k in 0..self.to_pump.len() {
                self.pump_thread(threads, self.to_pump[k], first_thread);
            }
            self.to_pump.clear();
        }
    }

    /// Issue what thread `ti` may issue now.
    fn pump_thread(&mut self, threads: &mut [ThreadState], ti: usize, first_thread: u32) {
        let now = self.now;
        let th = &mut threads[ti];
        th.wake_pending = false;
        loop {
            if th.done || th.outstanding >= th.plan.iodepth.max(1) {
                break;
            }
            if let Some(rt) = th.plan.runtime_ns {
                if now >= th.after_start(rt) {
                    th.exhausted = true;
                }
            }
            if th.pending.is_none() && !th.exhausted {
                th.pending = th.plan.source.next_io();
                if th.pending.is_none() {
                    th.exhausted = true;
                }
            }
            let Some(io) = th.pending else { break };
            if io.quiesce && th.outstanding > 0 {
                // it waits for the thread's requests in flight; the last
                // completion pumps the thread again
                break;
            }
            if th.exhausted
                && th
                    .plan
                    .runtime_ns
                    .is_some_and(|rt| now >= th.after_start(rt))
            {
                th.pending = None;
                break;
            }
            // earliest allowed issue time
            let d = match io.op {
                Op::Read => 0,
                Op::Write => 1,
                Op::Trim => 2,
                Op::Flush => 1,
            };
            let mut t = th.not_before;
            if let Some(at) = io.at {
                t = t.max(th.after_start(at));
            }
            if let Some(r) = th.plan.rate_bytes_per_s[d] {
                if r > 0 {
                    t = t.max(th.after_start(ns_at_rate(th.issued_bytes[d], r)));
                }
            }
            if let Some(r) = th.plan.rate_iops[d] {
                if r > 0 {
                    t = t.max(th.after_start(ns_at_rate(th.issued_ios[d], r)));
                }
            }
            if t > now {
                if !th.wake_pending {
                    th.wake_pending = true;
                    let thread = first_thread + ti as u32;
                    self.heap.push(t, THREAD_BIT | thread as u64);
                }
                break;
            }
            th.pending = None;
            th.issued_bytes[d] += io.len;
            th.issued_ios[d] += 1;
            th.outstanding += 1;
            th.plan.stats.depth.mark_depth(th.outstanding);
            th.plan.stats.depth.mark_submit(1);
            th.first_io.get_or_insert(now);
            let n = th.submitted;
            th.submitted += 1;
            let thread = first_thread + ti as u32;
            let id = storlab_model::units::slab_insert(
                &mut self.inflight,
                &mut self.free_ids,
                (thread, now, n, io.offset),
            ) as u64;
            if let Some(o) = &mut th.plan.observer {
                o.issued(now - th.start, &io);
            }
            match (&mut self.fs, th.plan.files) {
                (Some(fs), Some(ft)) => {
                    let k = (io.offset / ft.file_size).min(ft.nfiles as u64 - 1);
                    let req = FileReq {
                        id,
                        thread,
                        op: match io.op {
                            Op::Read => FileOp::Read,
                            Op::Flush => FileOp::Fsync,
                            _ => FileOp::Write,
                        },
                        file: ft.first_file + k as u32,
                        offset: io.offset - k * ft.file_size,
                        len: io.len,
                        direct: ft.direct,
                        fua: io.fua,
                        poll: th.plan.poll,
                    };
                    fs_submit(fs, now, req, &mut self.host, &mut self.hcx);
                }
                _ => {
                    let hio = HostIo {
                        id,
                        thread,
                        op: io.op,
                        offset: io.offset,
                        len: io.len,
                        fua: io.fua,
                        poll: th.plan.poll,
                        placement: io.placement,
                    };
                    self.host.submit(now, hio, &mut self.hcx);
                }
            }
            // queue the wake-ups; requests that completed at once stay in
            // `hcx.done` for `drain_done` (this thread's count must not drop
            // while its issue loop runs)
            self.queue_wakeups();
        }
        if th.exhausted && th.outstanding == 0 && th.pending.is_none() {
            th.done = true;
        }
    }

    /// Run a group of threads (a fio stonewall group) to completion; thread
    /// ids `first_thread..first_thread+plans.len()` must be within the host's
    /// thread count. Returns the threads' statistics with runtimes filled.
    ///
    /// Fails (instead of losing them silently) if requests are still
    /// outstanding when no event is left: that would be a model bug.
    pub fn run_group(
        &mut self,
        plans: Vec<ThreadPlan>,
        first_thread: u32,
        progress: &mut dyn FnMut(u64, Nanos),
    ) -> Result<Vec<JobStats>, EngineError> {
        self.run_group_with(plans, Vec::new(), first_thread, progress)
    }

    /// [`Engine::run_group`] with applications running beside the fio
    /// threads (each owning the host threads it was built with); returns
    /// the fio threads' statistics followed by each application's.
    pub fn run_group_with(
        &mut self,
        plans: Vec<ThreadPlan>,
        apps: Vec<Box<dyn AppDriver>>,
        first_thread: u32,
        progress: &mut dyn FnMut(u64, Nanos),
    ) -> Result<Vec<JobStats>, EngineError> {
        // the device is built (and preconditioned): tell the caller the
        // jobs start
        progress(self.completed, self.now);
        let start = self.now;
        self.apps = apps;
        for a in 0..self.apps.len() {
            self.with_app(a, |app, cx| app.start(cx));
        }
        let mut threads: Vec<ThreadState> = plans
            .into_iter()
            .map(|plan| ThreadState {
                start,
                outstanding: 0,
                pending: None,
                exhausted: false,
                not_before: start.saturating_add(plan.start_delay_ns),
                issued_bytes: [0; 3],
                issued_ios: [0; 3],
                first_io: None,
                last_done: start,
                wake_pending: false,
                submitted: 0,
                done: false,
                plan,
            })
            .collect();
        for th in &mut threads {
            if let Some(o) = &mut th.plan.observer {
                o.started(start);
            }
        }
        for ti in 0..threads.len() {
            self.pump_thread(&mut threads, ti, first_thread);
        }
        self.drain_done(&mut threads, first_thread, progress);
        while let Some(ev) = self.heap.pop() {
            if ev.t >= HORIZON_NS {
                return Err(EngineError::PastHorizon { at: ev.t });
            }
            // (the host's and the device's events, most of them, are told
            // apart from the engine's own by one test)
            if ev.tok & (THREAD_BIT | 1 << 63) != THREAD_BIT {
                if is_flusher_timer(ev.tok)
                    && threads.iter().all(|t| t.done)
                    && self.apps.iter().all(|a| a.finished())
                {
                    // background writeback of what the finished run left
                    // dirty: not part of the run
                    continue;
                }
                self.now = ev.t;
                self.events += 1;
                if let Some(fs) = &mut self.fs {
                    if ev.tok & FS_TOKEN == FS_TOKEN {
                        fs.on_event(self.now, ev.tok, &mut self.host, &mut self.hcx);
                    } else {
                        self.host.on_event(self.now, ev.tok, &mut self.hcx);
                        fs.absorb(self.now, &mut self.host, &mut self.hcx);
                    }
                } else {
                    self.host.on_event(self.now, ev.tok, &mut self.hcx);
                }
                self.queue_wakeups();
            } else if ev.tok & APP_TIMER == APP_TIMER {
                let a = ((ev.tok >> 40) & 0xffff) as usize;
                if self.apps[a].finished() {
                    // a finished application's stale timer: no time passes
                    continue;
                }
                self.now = ev.t;
                self.events += 1;
                let key = ev.tok & ((1 << 40) - 1);
                self.with_app(a, |app, cx| app.timer(key, cx));
            } else {
                self.now = ev.t;
                self.events += 1;
                let thread = (ev.tok & !THREAD_BIT) as u32;
                let ti = (thread - first_thread) as usize;
                self.pump_thread(&mut threads, ti, first_thread);
            }
            if !self.hcx.done.is_empty() {
                self.drain_done(&mut threads, first_thread, progress);
            }
        }
        let stuck: u64 = threads.iter().map(|t| t.outstanding as u64).sum::<u64>()
            + self.apps.iter().filter(|a| !a.finished()).count() as u64;
        if stuck > 0 {
            self.apps.clear();
            return Err(EngineError::Stuck {
                outstanding: stuck,
                at: self.now,
                state: self.host.device().debug_state(),
            });
        }
        let end = self.now;
        let apps: Vec<JobStats> = std::mem::take(&mut self.apps)
            .iter_mut()
            .map(|a| a.stats(end))
            .collect();
        Ok(threads
            .into_iter()
            .map(|mut th| {
                if let Some(o) = &mut th.plan.observer {
                    o.finished(th.last_done - th.start);
                }
                let begin = th.after_start(th.plan.ramp_ns);
                let mut s = th.plan.stats;
                let run = th.last_done.saturating_sub(begin);
                for d in 0..3 {
                    if s.dirs[d].ios() > 0 {
                        s.runtime_ns[d] = run;
                    }
                }
                s.job_runtime_ns = run;
                s
            })
            .chain(apps)
            .collect())
    }
}
