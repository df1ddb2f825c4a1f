//! The host software stack on CPU cores: system call, file system, block
//! layer and IO scheduler, driver (tag, lock, PIO, copies), completion by
//! interrupt and wake-up or by spinning (docs/spec/pcie-arrays.md, "Host" and the
//! IO-stack cost breakdown).
//!
//! Resources: a pool of cores; each issuing thread (a fio job thread); the
//! driver lock (when the driver has one); the single-threaded IO scheduler
//! (when requests go through one). A software segment occupies a core for
//! its duration; a sleeping thread frees its core, a spinning thread keeps
//! it. Resources are always taken in the order thread → scheduler → core →
//! lock, so waiting can never deadlock. Every nanosecond of a request is
//! attributed to one component of its breakdown; a wait is named by the
//! resource waited for (`ThreadWait`, `SchedulerWait`, `CoreWait`,
//! `LockWait`).
//!
//! Context switches: a thread switches out after handing a request to the
//! device only when none of its own work is waiting for it, and a
//! completion costs `wakeup_ns` only when its thread is asleep. A
//! synchronous thread (one request at a time) therefore pays a switch-out
//! and a wake-up per request, as before; an asynchronous engine's one
//! thread (libaio at depth) goes from submission to submission and reaps
//! the completions that are ready without sleeping in between, as
//! `io_submit` and `io_getevents` do. (Charging every request of such a
//! thread a full switch-out and wake-up held one libaio thread to about
//! 19 µs per IO on fusion-io, 52,645 IOPS, with the wait for the thread
//! shown as `lock_wait`.)
//!
//! Instructions: with `ghz` and `cpi` every stage's core time is also a
//! count of instructions (ns x ghz / cpi), and `driver_instructions` (a
//! driver's own work) becomes time the same way; each finished request's
//! core time is summed by operation for the report.
//!
//! Spread: with `wakeup_spread` or `interrupt_spread` above 0, each
//! wake-up and each interrupt handler takes a time drawn afresh, a floor
//! plus an exponential wait ([`Jitter`]) whose mean is the configured
//! `wakeup_ns` / `interrupt_ns`, from a `rand_pcg` generator seeded from
//! `host.seed` (or the run's seed): percentiles mean something and a run
//! is the same for a seed. Both 0 (the default): no draws, fixed costs.

use std::collections::VecDeque;

use crate::breakdown::{Breakdown, Component};
use crate::device::{Completion, DevRequest, Device, Nanos, Op};

use super::coalesce::{Coalescing, Posted};
use super::config::{CompletionMode, HostConfig, Scheduler};
use super::cost::{Stage, StageCost, Vary, CORE, LOCK, OPS, SCHED, STAGES, THREAD, WORKER};
use super::io::{status_errno, HostCx, HostIo, IoDone};
use super::jitter::Jitter;
use super::zone_order::ZoneOrder;

const HOST_BIT: u64 = 1 << 63;
/// Marks the end of a switch-out, which runs beside the device stage.
const SLEEP_BIT: u64 = 1 << 61;
/// With `SLEEP_BIT`: the switch-out of a thread that left its request to
/// the driver's worker; the token's low 32 bits are the thread, not a
/// request.
const DETACHED_BIT: u64 = 1 << 60;
/// A coalesced interrupt's aggregation time ran out (low bits: payload).
const COALESCE_BIT: u64 = 1 << 59;

#[derive(Clone, Copy, Debug)]
struct HIo {
    io: HostIo,
    stage: Stage,
    holds: u8,
    submitted: Nanos,
    issued: Nanos,
    t_mark: Nanos,
    spin: bool,
    /// Device finished at this time (set when the completion arrives).
    dev_done: bool,
    /// Switching out (the Sleep segment runs beside the device stage).
    sleeping: bool,
    /// Core time of this request's software so far (segments on a core
    /// and the switch-out), ns.
    cpu_ns: u64,
    /// The part of `cpu_ns` spent in the busy-wait loop, ns.
    spin_ns: u64,
    /// The device's completion status (0: success).
    status: u16,
    /// Handled by a coalesced interrupt another entry paid for.
    batched: bool,
}

/// An issuing thread, as the host sees it (one record, so the hot path
/// finds all of a thread's state in one place).
#[derive(Clone, Debug, Default)]
struct ThreadState {
    /// Running one of its requests' segments.
    busy: bool,
    /// Asleep (switched out, waiting for a completion) rather than
    /// running: only waking an asleep thread costs `wakeup_ns`.
    asleep: bool,
    /// Its requests waiting for it to be free.
    waiters: VecDeque<u32>,
}

/// The host stack in front of a device.
pub struct Host {
    pub(super) cfg: HostConfig,
    /// Costs and needs by stage and operation.
    costs: [[StageCost; 4]; 8],
    device: Box<dyn Device>,
    ios: Vec<HIo>,
    /// Each request's breakdown (apart from `ios`, which is copied often).
    bds: Vec<Breakdown>,
    free: Vec<u32>,
    cores_free: u32,
    core_waiters: VecDeque<u32>,
    /// Each issuing thread's state.
    threads: Vec<ThreadState>,
    lock_busy: bool,
    lock_waiters: VecDeque<u32>,
    sched_busy: bool,
    sched_waiters: VecDeque<u32>,
    /// The driver's worker thread is running a request's stage
    /// (`driver_worker_share`), and the requests waiting for it.
    worker_busy: bool,
    worker_waiters: VecDeque<u32>,
    /// Spare completion lists for re-entrant device calls (a completion's
    /// handling can submit another request, whose completions are handled
    /// before the rest of the outer list).
    comp_pool: Vec<Vec<Completion>>,
    core_busy_ns: u64,
    /// Core time of finished requests' software by operation, ns.
    pub(super) cpu_ns_by_op: [u64; 4],
    /// The busy-wait part of `cpu_ns_by_op`, ns.
    pub(super) spin_ns_by_op: [u64; 4],
    /// The cold-path refetch part of `cpu_ns_by_op` (`cold_lines`), ns:
    /// stalls, not instructions.
    pub(super) cold_ns_by_op: [u64; 4],
    /// Finished requests by operation.
    pub(super) done_by_op: [u64; 4],
    /// Bytes of the finished requests by operation.
    pub(super) bytes_by_op: [u64; 4],
    /// Seeded spread of wake-ups and interrupts (`None`: fixed costs).
    pub(super) jitter: Option<Jitter>,
    /// `cold_lines x cold_miss_ns`: a cold wake-up's refetch, ns (0: off).
    cold_ns: u64,
    /// The device's interrupt coalescing (`None`: off).
    coalescing: Option<Coalescing>,
    /// A zoned device's writes in submission order, by zone ([`ZoneOrder`]).
    zone_order: Option<ZoneOrder>,
}

impl Host {
    /// A host with `threads` issuing threads in front of `device`.
    pub fn new(cfg: HostConfig, device: Box<dyn Device>, threads: u32) -> Self {
        let t = threads.max(1) as usize;
        let device = Self::limit_requests(&cfg, device);
        let costs = STAGES.map(|s| OPS.map(|op| StageCost::new(&cfg, s, op)));
        let jitter = Jitter::new(&cfg, cfg.seed.unwrap_or(0));
        let zone_order = device.zone_bytes().map(ZoneOrder::new);
        Self {
            zone_order,
            coalescing: Coalescing::new(&cfg, t),
            jitter,
            cold_ns: cfg.cold_lines * cfg.cold_miss_ns,
            cores_free: cfg.cores,
            costs,
            cfg,
            device,
            ios: Vec::new(),
            bds: Vec::new(),
            free: Vec::new(),
            core_waiters: VecDeque::new(),
            threads: vec![ThreadState::default(); t],
            lock_busy: false,
            lock_waiters: VecDeque::new(),
            sched_busy: false,
            sched_waiters: VecDeque::new(),
            worker_busy: false,
            worker_waiters: VecDeque::new(),
            comp_pool: Vec::new(),
            core_busy_ns: 0,
            cpu_ns_by_op: [0; 4],
            spin_ns_by_op: [0; 4],
            cold_ns_by_op: [0; 4],
            done_by_op: [0; 4],
            bytes_by_op: [0; 4],
        }
    }

    /// The device as the stack issues to it: behind the request-size
    /// limit (`host.max_request_bytes`) when there is one, else itself (no
    /// layer: nothing on the request path).
    fn limit_requests(cfg: &HostConfig, device: Box<dyn Device>) -> Box<dyn Device> {
        super::split::SplitRequests::wrap(device, cfg.max_request_bytes)
    }

    /// The device behind the host.
    pub fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// Core-seconds of software so far (for utilisation), in ns.
    pub fn core_busy_ns(&self) -> u64 {
        self.core_busy_ns
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    /// Draw the spread of wake-ups and interrupts from `seed` (the run's)
    /// unless `host.seed` names one; call before the first request.
    pub fn seed_spread(&mut self, seed: u64) {
        if self.cfg.seed.is_none() {
            self.jitter = Jitter::new(&self.cfg, seed);
        }
    }

    /// A thread submits a request at `now`. (Always inlined into its few
    /// callers: once per simulated IO.)
    #[inline(always)]
    pub fn submit(&mut self, now: Nanos, io: HostIo, cx: &mut HostCx) {
        let spin = io.poll
            || match self.cfg.completion {
                CompletionMode::Spin => io.len <= self.cfg.spin_max_bytes,
                CompletionMode::Cpu => true,
                CompletionMode::Interrupt => false,
            };
        let h = HIo {
            io,
            stage: Stage::Issue,
            holds: 0,
            submitted: now,
            issued: now,
            t_mark: now,
            spin,
            dev_done: false,
            sleeping: false,
            cpu_ns: 0,
            spin_ns: 0,
            status: 0,
            batched: false,
        };
        let i = if let Some(i) = self.free.pop() {
            self.ios[i as usize] = h;
            self.bds[i as usize] = Breakdown::default();
            i
        } else {
            self.ios.push(h);
            self.bds.push(Breakdown::default());
            (self.ios.len() - 1) as u32
        };
        if let Some(zo) = &mut self.zone_order {
            if io.op == Op::Write {
                zo.submitted(i, io.offset);
            }
        }
        self.advance(now, i, cx);
    }

    /// A wake-up is due.
    #[inline]
    pub fn on_event(&mut self, now: Nanos, token: u64, cx: &mut HostCx) {
        if token & HOST_BIT == 0 {
            let n0 = cx.dev.wakeups.len();
            self.device.on_event(now, token, &mut cx.dev);
            debug_assert!(
                cx.dev.wakeups[n0..].iter().all(|&(_, t)| t & HOST_BIT == 0),
                "device tokens must leave the top bit clear"
            );
            self.drain_device(now, cx);
            return;
        }
        if token & COALESCE_BIT != 0 {
            let fire = match &mut self.coalescing {
                Some(c) => c.expire(token & !(HOST_BIT | COALESCE_BIT)),
                None => Vec::new(),
            };
            self.interrupt(now, fire, cx);
            return;
        }
        if token & SLEEP_BIT != 0 {
            if token & DETACHED_BIT != 0 {
                self.detached_sleep_done(now, (token & 0xffff_ffff) as usize, cx);
                return;
            }
            let i = (token & !(HOST_BIT | SLEEP_BIT)) as u32;
            // the thread is now asleep: it frees its core and itself
            self.ios[i as usize].sleeping = false;
            self.threads[self.ios[i as usize].io.thread as usize].asleep = true;
            self.release(now, i, THREAD | CORE, cx);
            return;
        }
        let i = (token & !HOST_BIT) as u32;
        let h = &mut self.ios[i as usize];
        if h.stage == Stage::Device {
            // the device's completion time has come
            h.dev_done = true;
            if h.spin && h.holds & CORE != 0 {
                // the busy-wait ran on its core
                h.cpu_ns += now - h.issued;
                h.spin_ns = now - h.issued;
            }
            h.stage = if h.spin { Stage::Finish } else { Stage::Irq };
            h.t_mark = now;
            self.completion_posted(now, i, cx);
        } else {
            self.segment_done(now, i, cx);
        }
    }

    /// Handle the completions the device just reported.
    fn drain_device(&mut self, now: Nanos, cx: &mut HostCx) {
        if cx.dev.completions.is_empty() {
            return;
        }
        // handling a completion can re-enter the device through other
        // requests; their completions land in a fresh list and are handled
        // by the nested call, before the rest of this one
        let mut comps = self.comp_pool.pop().unwrap_or_default();
        std::mem::swap(&mut comps, &mut cx.dev.completions);
        // (read in place, not moved out: a completion carries a
        // 152-byte breakdown)
        for c in &comps {
            let i = c.id as u32;
            self.bds[i as usize].merge(&c.breakdown);
            let h = &mut self.ios[i as usize];
            h.status = c.status;
            if h.spin && h.holds & (THREAD | CORE) == THREAD | CORE {
                // a spinning thread holds everything its finish needs: the
                // finish segment starts when the device completes, with no
                // event in between
                h.dev_done = true;
                h.cpu_ns += c.at - h.issued;
                h.spin_ns = c.at - h.issued;
                h.stage = Stage::Finish;
                h.t_mark = c.at;
                let dur = self.segment(c.at, i);
                cx.dev.wakeups.push((c.at + dur, HOST_BIT | i as u64));
            } else if c.at == now {
                // completed at this very moment: go on without an event
                h.dev_done = true;
                if h.spin && h.holds & CORE != 0 {
                    h.cpu_ns += now - h.issued;
                    h.spin_ns = now - h.issued;
                }
                h.stage = if h.spin { Stage::Finish } else { Stage::Irq };
                h.t_mark = now;
                self.completion_posted(now, i, cx);
            } else {
                cx.dev.wakeups.push((c.at, HOST_BIT | i as u64));
            }
        }
        comps.clear();
        self.comp_pool.push(comps);
    }

    /// Request `i`'s completion entry is posted at `now`: its interrupt (or
    /// poll) runs, unless the device holds the interrupt back (coalescing).
    fn completion_posted(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &self.ios[i as usize];
        let Some(c) = self.coalescing.as_mut().filter(|_| h.stage == Stage::Irq) else {
            self.advance(now, i, cx);
            return;
        };
        match c.post(now, h.io.thread as usize, i) {
            Posted::Held => {}
            Posted::Timer(at, payload) => {
                cx.dev.wakeups.push((at, HOST_BIT | COALESCE_BIT | payload));
            }
            Posted::Fire(list) => self.interrupt(now, list, cx),
        }
    }

    /// One (coalesced) interrupt at `now` for `list`; the holds are its time.
    fn interrupt(&mut self, now: Nanos, list: Vec<u32>, cx: &mut HostCx) {
        for (k, &i) in list.iter().enumerate() {
            let h = &mut self.ios[i as usize];
            h.batched = k > 0;
            self.bds[i as usize].add(Component::Interrupt, now - h.t_mark);
            h.t_mark = now;
        }
        for i in list {
            self.advance(now, i, cx);
        }
    }

    /// The component a wait for resource `bit` is charged to.
    #[inline]
    fn wait_component(bit: u8) -> Component {
        match bit {
            THREAD => Component::ThreadWait,
            SCHED => Component::SchedulerWait,
            CORE => Component::CoreWait,
            WORKER => Component::WorkerWait,
            _ => Component::LockWait,
        }
    }

    /// Try to take the stage's resources in order (thread → scheduler →
    /// core → lock, which is the order of their bits); park on the first
    /// busy one. Returns true when all are held.
    #[inline]
    fn acquire(&mut self, now: Nanos, i: u32) -> bool {
        let h = &self.ios[i as usize];
        let want = self.costs[h.stage as usize][h.io.op as usize].needs & !h.holds;
        let thread = h.io.thread as usize;
        if want == 0 {
            return true;
        }
        // the resources are distinct, so which are busy is known at once:
        // those wanted below the first busy one are taken (as a loop over
        // them in order would, the wait charged to the first), and the
        // request parks on that one
        let ts = &mut self.threads[thread];
        let busy = (ts.busy as u8 * THREAD)
            | (self.sched_busy as u8 * SCHED)
            | (self.worker_busy as u8 * WORKER)
            | ((self.cores_free == 0) as u8 * CORE)
            | (self.lock_busy as u8 * LOCK);
        let blocked = want & busy;
        let first_blocked = blocked & blocked.wrapping_neg();
        let take = if blocked == 0 {
            want
        } else {
            want & first_blocked.wrapping_sub(1)
        };
        if take != 0 {
            if take & THREAD != 0 {
                ts.busy = true;
            }
            if take & SCHED != 0 {
                self.sched_busy = true;
            }
            if take & WORKER != 0 {
                self.worker_busy = true;
            }
            if take & CORE != 0 {
                self.cores_free -= 1;
            }
            if take & LOCK != 0 {
                self.lock_busy = true;
            }
            let h = &mut self.ios[i as usize];
            let waited = now - h.t_mark;
            if waited > 0 {
                self.bds[i as usize].add(Self::wait_component(take & take.wrapping_neg()), waited);
            }
            h.t_mark = now;
            h.holds |= take;
        }
        if blocked == 0 {
            return true;
        }
        match first_blocked {
            THREAD => self.threads[thread].waiters.push_back(i),
            SCHED => self.sched_waiters.push_back(i),
            WORKER => self.worker_waiters.push_back(i),
            CORE => self.core_waiters.push_back(i),
            _ => self.lock_waiters.push_back(i),
        }
        false
    }

    fn release(&mut self, now: Nanos, i: u32, bits: u8, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        let thread = h.io.thread as usize;
        let held = h.holds & bits;
        if held == 0 {
            return;
        }
        h.holds &= !bits;
        // at most one waiter per released resource: no allocation; the
        // woken are counted, so the loop below runs only over them (most
        // releases wake none or one)
        let mut woken = [0u32; 5];
        let mut n = 0;
        if held & LOCK != 0 {
            self.lock_busy = false;
            if let Some(w) = self.lock_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & CORE != 0 {
            self.cores_free += 1;
            if let Some(w) = self.core_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & SCHED != 0 {
            self.sched_busy = false;
            if let Some(w) = self.sched_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & THREAD != 0 {
            self.threads[thread].busy = false;
            if let Some(w) = self.threads[thread].waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & WORKER != 0 {
            self.worker_busy = false;
            if let Some(w) = self.worker_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        for &w in &woken[..n] {
            self.advance(now, w, cx);
        }
    }

    /// Run the current stage of request `i` if its resources are free.
    fn advance(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        if !self.acquire(now, i) {
            return;
        }
        let dur = self.segment(now, i);
        if dur == 0 {
            // nothing to wait for: no event
            self.segment_done(now, i, cx);
        } else {
            cx.dev.wakeups.push((now + dur, HOST_BIT | i as u64));
        }
    }

    /// Account the current stage's software segment of request `i`, which
    /// holds its resources, starting at `now`; returns its duration.
    /// (Inlined where it is called: a call per segment cost about 5 % of
    /// the null device's instructions per simulated IO.)
    #[inline(always)]
    fn segment(&mut self, now: Nanos, i: u32) -> u64 {
        let h = &mut self.ios[i as usize];
        debug_assert!(
            h.stage != Stage::Device,
            "the device stage is never advanced"
        );
        let sc = &self.costs[h.stage as usize][h.io.op as usize];
        let bd = &mut self.bds[i as usize];
        let t = h.io.thread as usize;
        let mut dur = 0;
        let parts = &sc.parts[..sc.n as usize];
        if sc.per_kib {
            let len = h.io.len;
            for p in parts {
                let ns = p.fixed + (p.per_kib * len).div_ceil(1024);
                bd.add(p.comp, ns);
                dur += ns;
            }
        } else {
            for p in parts {
                bd.add(p.comp, p.fixed);
                dur += p.fixed;
            }
        }
        // the part that varies: one draw from the spread per wake-up or
        // interrupt handler when the host has one, its fixed time otherwise
        let varied = match sc.vary {
            Vary::None => None,
            // a thread that is already running (reaping another completion,
            // submitting) takes this completion without a context switch
            Vary::Wakeup if !self.threads[t].asleep => None,
            Vary::Wakeup => Some((
                Component::Wakeup,
                match &mut self.jitter {
                    Some(j) => j.wakeup(),
                    None => sc.vary_ns,
                } + if self.cold_ns > 0 && now - h.submitted >= self.cfg.cold_after_ns {
                    // off its core long enough for the path's lines to be gone
                    self.cold_ns_by_op[h.io.op as usize] += self.cold_ns;
                    self.cold_ns
                } else {
                    0
                },
            )),
            // coalesced: another entry paid the interrupt's entry and exit
            Vary::Interrupt if h.batched => Some((
                Component::Interrupt,
                self.cfg.interrupt_cqe_ns.min(sc.vary_ns),
            )),
            Vary::Interrupt => Some((
                Component::Interrupt,
                match &mut self.jitter {
                    Some(j) => j.interrupt(),
                    None => sc.vary_ns,
                },
            )),
        };
        if let Some((c, ns)) = varied {
            bd.add(c, ns);
            dur += ns;
        }
        if sc.needs & THREAD != 0 {
            self.threads[t].asleep = false;
        }
        h.t_mark = now + dur;
        if h.holds & CORE != 0 {
            self.core_busy_ns += dur;
            h.cpu_ns += dur;
        }
        dur
    }

    /// The running segment of request `i` ended at `now`.
    fn segment_done(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        let data = matches!(h.io.op, Op::Read | Op::Write);
        match h.stage {
            Stage::Issue => {
                if self.cfg.scheduler == Scheduler::SingleQueue {
                    h.stage = Stage::SchedIssue;
                    let t = h.io.thread as usize;
                    // the thread waits for the scheduler's completion asleep
                    // unless more of its own work is waiting for it
                    if self.threads[t].waiters.is_empty() {
                        self.threads[t].asleep = true;
                    }
                    self.release(now, i, THREAD | CORE, cx);
                    self.advance(now, i, cx);
                } else if data && self.cfg.driver_worker() {
                    // queued for the driver's worker
                    h.stage = Stage::Worker;
                    self.leave_for_worker(now, i, cx);
                    self.advance(now, i, cx);
                } else if self.cfg.driver_lock && data {
                    h.stage = Stage::IssueLocked;
                    self.advance(now, i, cx);
                } else {
                    self.hand_to_device(now, i, cx);
                }
            }
            Stage::Worker => {
                // the worker posts the command and is free for the next
                // request (a polling thread spins on the worker's core)
                self.release(now, i, WORKER, cx);
                self.hand_to_device(now, i, cx);
            }
            Stage::IssueLocked => {
                self.release(now, i, LOCK, cx);
                self.hand_to_device(now, i, cx);
            }
            Stage::SchedIssue => {
                // the scheduler thread keeps serving this request until its
                // completion is handled; it sleeps meanwhile (frees its core)
                self.release(now, i, CORE | LOCK, cx);
                self.hand_to_device(now, i, cx);
            }
            Stage::Irq => {
                h.stage = Stage::Wake;
                self.release(now, i, CORE | LOCK | SCHED, cx);
                self.advance(now, i, cx);
            }
            Stage::Wake | Stage::Finish => {
                let t = h.io.thread as usize;
                let op = h.io.op as usize;
                self.cpu_ns_by_op[op] += h.cpu_ns;
                self.spin_ns_by_op[op] += h.spin_ns;
                self.done_by_op[op] += 1;
                self.bytes_by_op[op] += h.io.len;
                if self.threads[t].waiters.is_empty() {
                    // back to user space: it submits again at once, or
                    // blocks (a synchronous thread, thinktime)
                    self.threads[t].asleep = true;
                }
                self.release(now, i, THREAD | CORE | LOCK | SCHED, cx);
                let h = &self.ios[i as usize];
                let total = now - h.submitted;
                debug_assert_eq!(
                    self.bds[i as usize].total(),
                    total,
                    "breakdown must cover the whole latency"
                );
                let slat = h.issued - h.submitted;
                cx.done.push(IoDone {
                    id: h.io.id,
                    thread: h.io.thread,
                    op: h.io.op,
                    len: h.io.len,
                    slat_ns: slat,
                    clat_ns: total - slat,
                    at: now,
                    breakdown: Breakdown::default(),
                    error: status_errno(h.status),
                });
                // the breakdown copied once, straight into place (built
                // inside the record above it went through a copy on the
                // stack first)
                let d = cx.done.last_mut().expect("just pushed");
                d.breakdown = self.bds[i as usize];
                self.free.push(i);
            }
            Stage::Device => {}
        }
    }

    /// Request `i`, which holds its thread and a core, has been queued for
    /// the driver's worker. Its thread goes on without it: it switches out
    /// on its core (`sleep_ns`, the core and the thread then free) unless
    /// more of its own work waits for it, as when it hands a request to
    /// the device. A polling thread keeps itself and waits for the worker
    /// without a core (the worker's core is then the one it polls on), so
    /// no request holds a core while it waits for the worker.
    fn leave_for_worker(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        if h.spin {
            self.release(now, i, CORE, cx);
            return;
        }
        let t = h.io.thread as usize;
        let busy = !self.threads[t].waiters.is_empty();
        if !busy && self.cfg.sleep_ns > 0 && h.holds & (THREAD | CORE) == THREAD | CORE {
            // the switch-out keeps the thread and its core for sleep_ns;
            // they are the thread's now, not the request's
            h.holds &= !(THREAD | CORE);
            h.cpu_ns += self.cfg.sleep_ns;
            self.core_busy_ns += self.cfg.sleep_ns;
            cx.dev.wakeups.push((
                now + self.cfg.sleep_ns,
                HOST_BIT | SLEEP_BIT | DETACHED_BIT | t as u64,
            ));
        } else {
            if !busy {
                self.threads[t].asleep = true;
            }
            self.release(now, i, THREAD | CORE, cx);
        }
    }

    /// Thread `t`'s switch-out after leaving a request to the worker ended:
    /// it is asleep, its core and itself are free.
    fn detached_sleep_done(&mut self, now: Nanos, t: usize, cx: &mut HostCx) {
        self.threads[t].asleep = true;
        self.threads[t].busy = false;
        self.cores_free += 1;
        let wc = self.core_waiters.pop_front();
        let wt = self.threads[t].waiters.pop_front();
        for w in [wc, wt].into_iter().flatten() {
            self.advance(now, w, cx);
        }
    }

    fn hand_to_device(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        h.stage = Stage::Device;
        h.issued = now;
        h.t_mark = now;
        let spin = h.spin;
        let req = DevRequest {
            id: i as u64,
            op: h.io.op,
            offset: h.io.offset,
            len: h.io.len,
            fua: h.io.fua,
            placement: h.io.placement,
        };
        let t = h.io.thread as usize;
        // more of the thread's own work waits for it (an asynchronous
        // engine's next submission, or a completion to reap): it goes on
        // with that instead of sleeping
        let busy = !self.threads[t].waiters.is_empty();
        let holds_thread = h.holds & (THREAD | CORE) == THREAD | CORE;
        let switch_out = !spin && !busy && self.cfg.sleep_ns > 0 && holds_thread;
        if switch_out {
            // the issuing thread switches out on its core while the device works
            h.sleeping = true;
            h.cpu_ns += self.cfg.sleep_ns;
            self.core_busy_ns += self.cfg.sleep_ns;
            cx.dev
                .wakeups
                .push((now + self.cfg.sleep_ns, HOST_BIT | SLEEP_BIT | i as u64));
        } else if !spin {
            // the issuing thread sleeps (or goes on with its waiting work):
            // it frees its core and itself
            if !busy && holds_thread {
                self.threads[t].asleep = true;
            }
            self.release(now, i, THREAD | CORE, cx);
        }
        if self.zone_order.is_some() && req.op == Op::Write {
            self.write_in_zone_order(now, i, req, cx);
        } else {
            self.device.submit(now, req, &mut cx.dev);
        }
        self.drain_device(now, cx);
    }

    /// Write `i` of a zoned device is ready for it ([`ZoneOrder`]); the
    /// writes that waited for it are charged their wait.
    fn write_in_zone_order(&mut self, now: Nanos, i: u32, req: DevRequest, cx: &mut HostCx) {
        let zo = self.zone_order.as_mut().expect("a zoned device");
        zo.ready(now, i, req, |n, r, since| {
            self.bds[n as usize].add(Component::SchedulerWait, now - since);
            self.device.submit(now, r, &mut cx.dev);
        });
    }
}
