//! The reactor: one thread that serves every connection once its handshake
//! is done, and is also the timer.
//!
//! Why one thread: on a small machine the client needs the CPUs too, and a
//! wake-up costs 15-20 µs in a VM (more than the latencies emulated). With
//! one thread, requests from every connection are read, applied to the
//! store and submitted to the model in batches, replies due together go out
//! in one `send` per connection, and there is no hand-off between threads,
//! no lock contention and no election of a spinning leader. While replies
//! wait for a future deadline the thread runs `SCHED_FIFO` when allowed
//! ([`ServeOptions::realtime`]): a timer expiring while a client runs on
//! every core then preempts it at once instead of waiting for the client's
//! time slice (hundreds of µs of lateness); see `Reactor::priority`.
//!
//! A request reaches the model when the server's own work on it (parsing,
//! the store access) is done: that work is transport, in the zero-latency
//! floor too, and the model's latency comes after it.
//!
//! Waiting: when the next due time (a reply's deadline or a device wake-up)
//! is further away than the spin window, the reactor sleeps in `ppoll` on
//! its epoll set until the window starts, so a new request still wakes it.
//! Inside the window it spins on the TSC and looks for input every
//! `input_check_ns` with a zero-timeout `epoll_wait`. The window is learnt:
//! the 98th percentile of how late recent sleeps ended, plus a margin, at
//! least `spin_threshold_ns`. For `idle_poll_ns` after a connection's last
//! reply (a queue-depth-1 client sends its next request within
//! microseconds) the reactor spins too (with more than one CPU: on one,
//! the client needs it to send), unless there are as many open
//! connections as CPUs and no reply has waited for a deadline lately (a
//! zero-latency device): then the clients are CPU-bound and need every
//! CPU, and the reactor sleeps while the wake assist (`assist.rs`) keeps
//! idle CPUs polling, so the request wakes it without an interrupt. (Even
//! then a sleeping reactor wakes 10-20 µs later than a spinning one
//! notices input in this VM, so it spins whenever the CPU can be spared:
//! while replies wait for deadlines, the clients wait too.) A request
//! partly read is waited for spinning (up to `PARTIAL_SPIN_NS`): clients
//! send a write's header and payload in two system calls, microseconds
//! apart, and sleeping between them cost a second wake-up.
//!
//! [`ServeOptions::realtime`]: crate::ServeOptions::realtime

use std::io;
use std::os::unix::io::RawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use storlab_model::{DevRequest, Nanos, Op};
use storlab_trace::closed::Served;
use storlab_trace::TraceOp;

use crate::assist::Assist;
use crate::clock::{tighten_timer_slack, Clock};
use crate::driver::{ModelDriver, Released};
use crate::durability::{SyncState, WriteSeq};
use crate::outq::OutQueue;
use crate::proto::*;
use crate::report::Sample;
use crate::request::{AllocationExtents, Command, Event, Limits, RequestStream};
use crate::server::{lock, NewConn, RecorderMsg, Shared, Sock};

/// Most requests in flight on one connection before its input waits.
const MAX_INFLIGHT: u64 = 4096;
/// Most reply bytes queued for a slow client before its input waits.
const MAX_QUEUED: usize = 256 << 20;
/// Read buffer per connection.
const READ_BUF: usize = 256 << 10;
/// Most bytes taken from a socket by one `recv`.
const RECV_MAX: usize = 32 << 10;
/// The epoll token of the wake-up eventfd (connections use their slot).
const WAKE_TOKEN: u64 = u64::MAX;
/// How long the reactor spins for the rest of a request partly read
/// before it sleeps (a client stalled mid-request costs no more CPU).
const PARTIAL_SPIN_NS: Nanos = 20_000;
/// Longest untimed sleep (the stop flag is also signalled by the eventfd).
const MAX_SLEEP_NS: u64 = 100_000_000;
/// The real-time budget's window and the time the reactor may spend awake
/// in it as `SCHED_FIFO` (90%, under the kernel's 95% of each second).
const RT_WINDOW: Nanos = 100_000_000;
const RT_BUDGET: Nanos = 90_000_000;
/// How long the reactor keeps real-time priority after its last future
/// deadline (switching costs a system call).
const RT_HOLD: Nanos = 10_000_000;
/// Replies due during a batch of input are sent once they have waited
/// this long (a batch of replies costs one `send`, a reply alone one too).
const BATCH_NS: u64 = 5_000;
/// Large writes are applied to the store this much at a time, with the
/// replies that fell due sent between pieces: applying 1 MiB takes 100 µs
/// (1 ms on fresh pages), which every other connection's replies would
/// otherwise wait out.
const APPLY_CHUNK: usize = 64 << 10;
/// Block status scans the store this much of the range at a time (16384
/// pages of a memory store: tens of µs), releasing due replies between.
const STATUS_SLICE: u64 = 64 << 20;
/// How long a stopping server keeps trying to deliver queued replies.
const GIVE_UP_NS: u64 = 5_000_000_000;

/// What a request left to do when its reply is released.
pub(crate) enum JobKind {
    /// The reply buffer, with room for the header before the data.
    Read(Vec<u8>),
    Write {
        /// The journal sequence numbers of the write's pieces (a large
        /// write is applied in pieces of `APPLY_CHUNK`): `first..=seq`.
        first: WriteSeq,
        seq: WriteSeq,
        fua: bool,
    },
    Flush {
        upto: WriteSeq,
    },
}

/// A request in the model, waiting for its deadline.
pub(crate) struct Job {
    slot: usize,
    generation: u64,
    handle: u64,
    kind: JobKind,
    epoch: u64,
    offset: u64,
    len: u64,
    /// The host-sync ticket the reply also waits for (FLUSH and FUA on a
    /// file store; 0: none).
    sync: u64,
}

/// What the statistics and the trace need of one reply queued.
struct Sent {
    op: Op,
    arrival: Nanos,
    at: Nanos,
    breakdown: storlab_model::Breakdown,
    errno: u32,
    bytes: u64,
    offset: u64,
    len: u64,
    /// A write with forced unit access (for the closed-loop recorder).
    fua: bool,
}

/// One connection in transmission phase.
struct Conn {
    id: u64,
    generation: u64,
    sock: Sock,
    structured: bool,
    stream: RequestStream,
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    /// Reply bytes not yet sent.
    out: OutQueue,
    /// Replies in `out` (from the last flush on) waiting to be accounted.
    sent: Vec<Sent>,
    inflight: u64,
    /// No more input: end of file, `NBD_CMD_DISC`, a violation or an
    /// error.
    closed_input: bool,
    /// The socket failed: replies are dropped.
    dead: bool,
    /// The epoll interest currently registered.
    interest: u32,
    /// The idle-poll window after this connection's last reply: while no
    /// request is in flight, spin for the next one until then.
    idle_until: Nanos,
    /// A request is partly read: spin for the rest until then (0: don't).
    partial_until: Nanos,
}

impl Conn {
    fn fd(&self) -> RawFd {
        self.sock.fd()
    }

    /// Input is held back (too much in flight or queued).
    fn throttled(&self) -> bool {
        self.inflight >= MAX_INFLIGHT || self.out.queued() > MAX_QUEUED
    }

    fn wanted_interest(&self) -> u32 {
        let mut ev = 0;
        if !self.closed_input && !self.throttled() {
            ev |= libc::EPOLLIN as u32;
        }
        if !self.dead && !self.out.is_empty() {
            ev |= libc::EPOLLOUT as u32;
        }
        ev
    }

    fn error_reply(&self, errno: u32, handle: u64, message: &str) -> Vec<u8> {
        if self.structured {
            structured_error(errno, handle, message)
        } else {
            simple_reply(errno, handle)
        }
    }

    /// Queue the error reply of a request the store failed.
    fn store_error(&mut self, shared: &Shared, handle: u64) {
        shared.stats.protocol_error();
        let r = self.error_reply(EIO, handle, "store IO error");
        self.out.push_slice(&r);
    }

    fn finished(&self) -> bool {
        self.closed_input && self.inflight == 0 && (self.dead || self.out.is_empty())
    }
}

/// The oversleep estimator: how late timed sleeps end (the last 128).
struct Oversleep {
    ring: [u32; 128],
    n: usize,
}

impl Oversleep {
    /// Record one sleep; returns the new 98th percentile every 16 samples.
    fn record(&mut self, over_ns: u64) -> Option<u64> {
        self.ring[self.n % self.ring.len()] = over_ns.min(u32::MAX as u64) as u32;
        self.n += 1;
        if !self.n.is_multiple_of(16) {
            return None;
        }
        let k = self.n.min(self.ring.len());
        let mut v: Vec<u32> = self.ring[..k].to_vec();
        v.sort_unstable();
        Some(v[(k * 98 / 100).min(k - 1)] as u64)
    }
}

struct Reactor {
    shared: Arc<Shared>,
    epfd: RawFd,
    conns: Vec<Option<Conn>>,
    next_generation: u64,
    assist: Assist,
    released: Vec<Released<Job>>,
    /// Released by the model, waiting for the host's sync.
    held: Vec<Released<Job>>,
    /// Connections with replies to send.
    dirty: Vec<usize>,
    oversleep: Oversleep,
    window_ns: u64,
    next_due: Option<Nanos>,
    /// When the spinning reactor last looked for input.
    input_checked: Nanos,
    /// When the reactor last woke from a sleep.
    awake_since: Nanos,
    /// The real-time budget: the current window's start, the time spent
    /// awake in it, and whether the thread is `SCHED_FIFO` now.
    budget_start: Nanos,
    budget_busy: Nanos,
    fifo: bool,
    rt_allowed: bool,
    /// CPUs this process may use.
    cpus: usize,
    /// Keep real-time priority, and spin through idle-poll windows, until
    /// then (refreshed while a deadline is in the future).
    timed_until: Nanos,
    give_up_at: Option<Nanos>,
}

fn epoll_ctl(epfd: RawFd, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: token };
    // SAFETY: `ev` is a valid epoll_event; the kernel copies it.
    if unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Run the calling thread `SCHED_FIFO` at the lowest real-time priority
/// (`on`) or back at normal priority; false when not allowed (no
/// `CAP_SYS_NICE`).
pub(crate) fn set_realtime(on: bool) -> bool {
    let (policy, prio) = if on {
        (libc::SCHED_FIFO, 1)
    } else {
        (libc::SCHED_OTHER, 0)
    };
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sets the calling thread's policy; `p` is a valid pointer.
    unsafe { libc::sched_setscheduler(0, policy, &p) == 0 }
}

/// The reactor thread's body: serve until told to stop and every
/// connection is finished.
pub(crate) fn run(shared: Arc<Shared>) {
    use std::os::fd::AsRawFd;
    let epfd = shared.epoll.as_raw_fd();
    tighten_timer_slack();
    // Probe once whether real-time priority is allowed; the reactor takes
    // it only while replies wait for deadlines (see `Reactor::priority`).
    let rt_allowed = shared.timing.realtime && set_realtime(true) && set_realtime(false);
    let window_ns = shared.timing.spin_threshold_ns;
    shared.window_ns.store(window_ns, Ordering::Relaxed);
    let assist = Assist::start(
        shared.clock.clone(),
        shared.timing.wake_assist,
        rt_allowed,
        shared.assist_switches.clone(),
    );
    *lock(&shared.assist_off) = assist.why_off().map(str::to_string);
    let mut r = Reactor {
        shared,
        epfd,
        conns: Vec::new(),
        next_generation: 1,
        assist,
        released: Vec::new(),
        held: Vec::new(),
        dirty: Vec::new(),
        oversleep: Oversleep {
            ring: [0; 128],
            n: 0,
        },
        window_ns,
        next_due: None,
        input_checked: 0,
        awake_since: 0,
        budget_start: 0,
        budget_busy: 0,
        fifo: false,
        rt_allowed,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        timed_until: 0,
        give_up_at: None,
    };
    r.run();
}

impl Reactor {
    fn run(&mut self) {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        loop {
            self.service();
            if self.shared.reactor_stop.load(Ordering::Acquire) {
                self.accept_new();
                let now = self.shared.clock.now();
                if self.give_up_at.is_none() {
                    // Stop reading: every connection sees end-of-file.
                    for c in self.conns.iter().flatten() {
                        c.sock.shutdown(std::net::Shutdown::Read);
                    }
                }
                let give_up = *self.give_up_at.get_or_insert(now + GIVE_UP_NS);
                if now > give_up {
                    for c in self.conns.iter_mut().flatten() {
                        if c.inflight == 0 {
                            c.dead = true;
                        }
                    }
                    self.reap();
                }
                if self.conns.iter().all(Option::is_none) {
                    return;
                }
            }
            let n = self.wait(&mut events);
            for ev in &events[..n] {
                let (flags, token) = (ev.events, ev.u64);
                if token == WAKE_TOKEN {
                    self.drain_wake();
                    self.accept_new();
                    continue;
                }
                let slot = token as usize;
                if flags & (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                    self.read_input(slot);
                }
                if flags & libc::EPOLLOUT as u32 != 0 {
                    self.flush(slot);
                }
            }
            self.flush_dirty();
            self.reap();
        }
    }

    /// Release what is due, send it, and note the next due time.
    fn service(&mut self) {
        let now = self.shared.clock.now();
        if self.next_due.is_some_and(|d| d <= now) {
            let shared = self.shared.clone();
            let _gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
            let next = lock(&shared.core).tick(now, &mut self.released);
            self.next_due = next;
            self.release_all();
            self.flush_dirty();
        }
        self.recheck_held();
        self.resume_throttled();
        self.reap();
    }

    /// Connections still sending requests.
    fn live(&self) -> usize {
        self.conns
            .iter()
            .flatten()
            .filter(|c| !c.closed_input)
            .count()
    }

    /// Release the held replies whose host sync has ended.
    fn recheck_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let data = &self.shared.data;
        let mut i = 0;
        while i < self.held.len() {
            if data.sync_state(self.held[i].job.sync) == SyncState::Pending {
                i += 1;
            } else {
                self.released.push(self.held.swap_remove(i));
            }
        }
        if !self.released.is_empty() {
            let shared = self.shared.clone();
            let _gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
            self.release_all();
            drop(_gate);
            self.flush_dirty();
        }
    }

    /// Choose the thread's priority. While a reply waits for a future
    /// deadline (and `RT_HOLD` after), the reactor runs `SCHED_FIFO`, so a
    /// timer that fires while clients use every core preempts them at
    /// once, and a client's wake-up cannot preempt the final spin. With
    /// nothing to wait for (a zero-latency device) it runs at normal
    /// priority: promptness then only costs a client its CPU.
    ///
    /// The real-time thread also stays under the kernel's real-time
    /// bandwidth limit (`sched_rt_runtime_us`, 95% of each second): past
    /// it, the kernel stops the thread for the rest of the second (a 40 ms
    /// stall seen at queue depth 32). Once `RT_BUDGET` of a `RT_WINDOW`
    /// was spent awake, the rest of that window runs at normal priority.
    fn priority(&mut self, now: Nanos) {
        if self.next_due.is_some_and(|d| d > now) {
            self.timed_until = now + RT_HOLD;
        }
        if !self.rt_allowed {
            return;
        }
        if now >= self.budget_start + RT_WINDOW {
            self.budget_start = now;
            self.budget_busy = 0;
        }
        let awake = now.saturating_sub(self.awake_since.max(self.budget_start));
        let want = now < self.timed_until && self.budget_busy + awake <= RT_BUDGET;
        if want != self.fifo && set_realtime(want) {
            self.fifo = want;
            self.shared.realtime_active.store(true, Ordering::Relaxed);
        }
    }

    /// Wait for input or the next due time; returns the number of events.
    fn wait(&mut self, events: &mut [libc::epoll_event]) -> usize {
        let now = self.shared.clock.now();
        self.priority(now);
        let clock = &self.shared.clock;
        let due = self.next_due.unwrap_or(u64::MAX);
        let open = || self.conns.iter().flatten().filter(|c| !c.closed_input);
        // The assist keeps CPUs polling through a window even once the
        // next request is in: its reply is microseconds away, and a window
        // that closed and reopened with every request woke the assist's
        // helper for nothing (a futex wake per 3-8 requests at zero
        // latency, each too late to see the window open).
        let window = open().map(|c| c.idle_until).max().unwrap_or(0);
        self.assist.publish(now, self.next_due, window);
        let idle = open()
            .filter(|c| c.inflight == 0)
            .map(|c| c.idle_until)
            .max()
            .unwrap_or(0);
        // In an idle-poll window the reactor spins for the next request
        // (catching it costs no wake-up), unless clients need every CPU:
        // with as many open connections as CPUs and replies going out as
        // soon as they are read (a zero-latency device: the clients are
        // CPU-bound), it sleeps and leaves its CPU to them; idle CPUs then
        // poll through the wake assist, so the request still wakes it
        // without an interrupt. When replies wait for deadlines the
        // clients wait too, the CPU is spare, and a sleeping reactor
        // would notice the next request 10-20 µs late (fio, 2 jobs at
        // queue depth 1, 20 µs device: mean 36 -> 32.5 µs).
        //
        // Waiting for input by spinning only helps when the client has
        // another CPU to send from: on one CPU the client's next request
        // (or the rest of a write) waits for the spin to end (a queue-depth-1
        // client then paid the whole 50 µs idle-poll window per request).
        let spare_cpu = self.cpus > 1;
        let idle_spin = now < idle
            && spare_cpu
            && (self.assist.why_off().is_some()
                || self.live() < self.cpus
                || now < self.timed_until);
        let partial = spare_cpu && self.conns.iter().flatten().any(|c| now < c.partial_until);
        let spin = due <= now.saturating_add(self.window_ns) || idle_spin || partial;
        if spin {
            // Spin on the TSC until the next input check or the due time.
            // An input check overdue (after a sleep, or work that took
            // longer) happens at once.
            let check = self.input_checked + self.shared.timing.input_check_ns;
            let until = check.min(due);
            while clock.now() < until {
                std::hint::spin_loop();
            }
            if due < check {
                // The deadline came first: its reply goes out before the
                // input check (an `epoll_wait` is a system call, which a
                // reply due now should not wait for). The check stays due
                // at its time, however many deadlines come first.
                return 0;
            }
            self.input_checked = clock.now();
            return self.epoll(events, 0);
        }
        let sleep_ns = due
            .saturating_sub(self.window_ns)
            .saturating_sub(now)
            .min(MAX_SLEEP_NS);
        // Timed sleeps go through ppoll for nanosecond timeouts (epoll_wait
        // rounds up to milliseconds).
        let mut pfd = libc::pollfd {
            fd: self.epfd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: (sleep_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (sleep_ns % 1_000_000_000) as libc::c_long,
        };
        self.budget_busy += now.saturating_sub(self.awake_since.max(self.budget_start));
        // SAFETY: one valid pollfd and a valid timespec, no signal mask.
        let r = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if r == 0 && due != u64::MAX {
            let over = clock.now().saturating_sub(now + sleep_ns);
            if let Some(p98) = self.oversleep.record(over) {
                self.window_ns =
                    (p98 + p98 / 4 + 5_000).clamp(self.shared.timing.spin_threshold_ns, 1_000_000);
                self.shared
                    .window_ns
                    .store(self.window_ns, Ordering::Relaxed);
            }
        }
        self.awake_since = clock.now();
        // The sleep looked for input too.
        self.input_checked = self.awake_since;
        if r <= 0 {
            return 0;
        }
        self.epoll(events, 0)
    }

    fn epoll(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
        // SAFETY: `events` is a valid, writable array of its length.
        let n = unsafe {
            libc::epoll_wait(
                self.epfd,
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                timeout_ms,
            )
        };
        n.max(0) as usize
    }

    fn drain_wake(&self) {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v` from the non-blocking eventfd.
        unsafe {
            libc::read(
                std::os::fd::AsRawFd::as_raw_fd(&self.shared.wake),
                (&mut v as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }

    /// Take the connections whose handshake finished.
    fn accept_new(&mut self) {
        let new: Vec<NewConn> = std::mem::take(&mut *lock(&self.shared.incoming));
        for nc in new {
            let slot = match self.conns.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.conns.len() - 1
                }
            };
            let limits = Limits {
                size: self.shared.export.size,
                min_block: self.shared.export.block.minimum,
                max_payload: self.shared.export.block.maximum,
                read_only: self.shared.export.read_only,
                structured: nc.negotiated.structured_replies,
                block_status: nc.negotiated.block_status,
            };
            let mut buf = vec![0u8; READ_BUF.max(nc.leftover.len())];
            buf[..nc.leftover.len()].copy_from_slice(&nc.leftover);
            let generation = self.next_generation;
            self.next_generation += 1;
            let interest = libc::EPOLLIN as u32;
            if epoll_ctl(
                self.epfd,
                libc::EPOLL_CTL_ADD,
                nc.sock.fd(),
                interest,
                slot as u64,
            )
            .is_err()
            {
                nc.sock.shutdown(std::net::Shutdown::Both);
                self.shared.live_conns.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let hi = nc.leftover.len();
            self.conns[slot] = Some(Conn {
                id: nc.id,
                generation,
                sock: nc.sock,
                structured: nc.negotiated.structured_replies,
                stream: RequestStream::new(limits),
                buf,
                lo: 0,
                hi,
                out: OutQueue::default(),
                sent: Vec::new(),
                inflight: 0,
                closed_input: false,
                dead: false,
                interest,
                idle_until: 0,
                partial_until: 0,
            });
            if hi > 0 {
                self.process_input(slot);
            }
        }
    }

    /// One `recv` on a readable connection, then its requests.
    fn read_input(&mut self, slot: usize) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if c.closed_input || c.throttled() {
            self.update_interest(slot);
            return;
        }
        if c.lo > 0 {
            c.buf.copy_within(c.lo..c.hi, 0);
            c.hi -= c.lo;
            c.lo = 0;
        }
        let fd = c.fd();
        // At most `RECV_MAX` per read: copying a large batch of writes out
        // of the socket takes tens of µs, during which replies fall due.
        let end = (c.hi + RECV_MAX).min(c.buf.len());
        if end == c.hi {
            // Nothing consumed yet (cannot happen: the stream takes every
            // byte unless throttled); a zero-length recv would read as EOF.
            return;
        }
        let room = &mut c.buf[c.hi..end];
        // SAFETY: `room` is valid writable memory of its length; the fd is
        // the connection's open socket.
        let n = unsafe { libc::recv(fd, room.as_mut_ptr().cast(), room.len(), libc::MSG_DONTWAIT) };
        match n {
            0 => c.closed_input = true,
            n if n > 0 => c.hi += n as usize,
            _ => {
                let e = io::Error::last_os_error();
                if !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) {
                    c.closed_input = true;
                }
            }
        }
        self.process_input(slot);
        if let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) {
            // Clients send a write's header and its payload in two system
            // calls (libnbd does): the rest of a request partly read is
            // microseconds away, too soon to sleep for.
            c.partial_until = if c.stream.mid_request() && !c.closed_input && !c.throttled() {
                self.shared.clock.now() + PARTIAL_SPIN_NS
            } else {
                0
            };
        }
    }

    /// Turn buffered bytes into requests until the buffer runs out or the
    /// connection is throttled.
    fn process_input(&mut self, slot: usize) {
        let shared = self.shared.clone();
        let gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
        let epoch = shared.epoch.load(Ordering::SeqCst);
        let mut core = lock(&shared.core);
        let mut submitted = false;
        // The input buffer is out of the connection while its requests are
        // handled: a write's payload is borrowed from it, not copied.
        let Some(input) = self
            .conns
            .get_mut(slot)
            .and_then(Option::as_mut)
            .map(|c| std::mem::take(&mut c.buf))
        else {
            return;
        };
        loop {
            // A long batch (many writes in one read) must not hold back
            // replies: release what fell due, and send replies held longer
            // than `BATCH_NS`, between requests.
            self.release_between(&mut core);
            let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                break;
            };
            if c.lo >= c.hi || c.throttled() || c.stream.is_closed() {
                break;
            }
            let (used, ev) = c.stream.feed(&input[c.lo..c.hi]);
            c.lo += used;
            match ev {
                None => {}
                Some(Event::Request {
                    command: Command::Disconnect,
                    ..
                }) => {
                    c.closed_input = true;
                    c.lo = c.hi;
                    break;
                }
                Some(Event::Request {
                    handle,
                    command:
                        Command::BlockStatus {
                            offset,
                            len,
                            req_one,
                        },
                    ..
                }) => {
                    // Answered at arrival from the store's allocation
                    // (writes land at arrival, so it covers every write
                    // received before it): it is the host's metadata, not a
                    // device command, so it costs no device time.
                    shared.stats.block_status();
                    let ext = self.allocation(&mut core, offset, len, req_one);
                    let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                        break;
                    };
                    match ext {
                        Ok(ext) => {
                            let r = block_status_reply(handle, META_BASE_ALLOCATION_ID, &ext);
                            c.out.push_vec(r);
                        }
                        Err(_) => c.store_error(&shared, handle),
                    }
                    self.dirty.push(slot);
                }
                Some(Event::Request {
                    handle,
                    command,
                    payload,
                }) => {
                    let structured = self.conns[slot].as_ref().is_some_and(|c| c.structured);
                    let lead =
                        match self.copy_leading_pieces(&mut core, command, &payload, structured) {
                            Ok(lead) => lead,
                            Err(()) => {
                                if let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) {
                                    c.store_error(&shared, handle);
                                }
                                self.dirty.push(slot);
                                continue;
                            }
                        };
                    let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                        break;
                    };
                    let job = prepare(&shared, c, slot, handle, command, lead, epoch);
                    if let std::borrow::Cow::Owned(v) = payload {
                        // A payload that came in pieces was gathered in a
                        // buffer of the stream's: give it back for the next
                        // one (a fresh 16 MiB buffer per write is 4096 page
                        // faults on the reactor's thread).
                        c.stream.recycle(v);
                    }
                    let Some(job) = job else {
                        self.dirty.push(slot);
                        continue;
                    };
                    let (op, offset, len, fua) = timing_of(command);
                    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
                    c.inflight += 1;
                    let req = DevRequest {
                        id,
                        op,
                        offset,
                        len,
                        fua,
                    };
                    // The request reaches the model when its data access is
                    // done: the server's own work is transport (it is in the
                    // zero-latency floor too), the model's latency comes
                    // after it.
                    let t = shared.clock.now();
                    core.arrive(t, req, job, &mut self.released);
                    self.next_due = core.next_due();
                    submitted = true;
                }
                Some(Event::Error {
                    handle,
                    errno,
                    message,
                    ..
                }) => {
                    shared.stats.protocol_error();
                    let r = c.error_reply(errno, handle, message);
                    c.out.push_slice(&r);
                    self.dirty.push(slot);
                }
                Some(Event::Violation(_)) => {
                    shared.stats.protocol_violation();
                    c.closed_input = true;
                    c.lo = c.hi;
                    break;
                }
            }
        }
        if let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) {
            c.buf = input;
        }
        if submitted {
            // Also release what fell due while the batch was read.
            self.next_due = core.tick(shared.clock.now(), &mut self.released);
        }
        drop(core);
        self.release_all();
        drop(gate);
        self.flush_dirty();
        self.update_interest(slot);
    }

    /// Between requests of a batch (and pieces of a large write): release
    /// what fell due, and send replies held longer than `BATCH_NS`.
    fn release_between(&mut self, core: &mut ModelDriver<Job>) {
        let now = self.shared.clock.now();
        if self.next_due.is_some_and(|d| d <= now) {
            self.next_due = core.tick(now, &mut self.released);
        }
        if self
            .released
            .first()
            .is_some_and(|r| now >= r.at + BATCH_NS)
        {
            self.release_all();
            self.flush_dirty();
        }
    }

    /// A block status reply's extents, the store scanned `STATUS_SLICE`
    /// at a time with due replies released between slices (a memory
    /// store walks every allocated page of a slice: a few GiB of data
    /// would otherwise hold every other reply for milliseconds).
    fn allocation(
        &mut self,
        core: &mut ModelDriver<Job>,
        offset: u64,
        len: u32,
        req_one: bool,
    ) -> io::Result<Vec<(u32, u32)>> {
        let shared = self.shared.clone();
        let mut a = AllocationExtents::new(offset, len, req_one);
        while let Some((pos, n)) = a.next_slice(STATUS_SLICE) {
            let data = shared.data.store().data_extents(pos, n)?;
            a.add(n, &data);
            self.release_between(core);
        }
        Ok(a.finish())
    }

    /// Copy a large request's data `APPLY_CHUNK` at a time, releasing due
    /// replies between pieces: a read whole (into its reply buffer), a
    /// write all but its last piece (`prepare` applies the rest, and
    /// learns the bytes applied and the first piece's journal sequence).
    /// `Err` when the store failed: the request gets an error reply (a
    /// write part applied, as a failed write may leave a device).
    fn copy_leading_pieces<'a>(
        &mut self,
        core: &mut ModelDriver<Job>,
        command: Command,
        payload: &'a [u8],
        structured: bool,
    ) -> Result<Lead<'a>, ()> {
        let mut lead = Lead {
            payload,
            applied: 0,
            first: None,
            read: None,
        };
        let shared = self.shared.clone();
        if let Command::Read { offset, len } = command {
            if len as usize > APPLY_CHUNK {
                // The buffer is cleared piece by piece too: zeroing 16 MiB
                // at once (a recycled allocation) took 1-2 ms.
                let hdr = reply_header_len(structured);
                let mut b = Vec::with_capacity(hdr + len as usize);
                b.resize(hdr, 0);
                let mut done = 0;
                while done < len as usize {
                    let n = APPLY_CHUNK.min(len as usize - done);
                    b.resize(hdr + done + n, 0);
                    shared
                        .data
                        .read(&mut b[hdr + done..], offset + done as u64)
                        .map_err(|_| ())?;
                    done += n;
                    self.release_between(core);
                }
                lead.read = Some(b);
            }
            return Ok(lead);
        }
        let Command::Write { offset, fua, .. } = command else {
            return Ok(lead);
        };
        while payload.len() - lead.applied > APPLY_CHUNK {
            let piece = &payload[lead.applied..lead.applied + APPLY_CHUNK];
            let seq = shared
                .data
                .write_part(piece, offset + lead.applied as u64, fua, lead.first)
                .map_err(|_| ())?;
            if lead.first.is_none() {
                lead.first = Some(seq);
            }
            lead.applied += APPLY_CHUNK;
            self.release_between(core);
        }
        Ok(lead)
    }

    /// Build the replies of released requests into their connections'
    /// output buffers. Called with the gate held (read).
    fn release_all(&mut self) {
        if self.released.is_empty() {
            return;
        }
        let shared = &self.shared;
        let epoch = shared.epoch.load(Ordering::SeqCst);
        for r in self.released.drain(..) {
            let synced = shared.data.sync_state(r.job.sync);
            if synced == SyncState::Pending {
                // The deadline came before the host's sync ended: the
                // reply waits for it (`recheck_held`).
                shared.data.note_held();
                self.held.push(r);
                continue;
            }
            let Released {
                op,
                arrival,
                at,
                breakdown,
                job,
                ..
            } = r;
            let errno = if job.epoch != epoch || synced == SyncState::Failed {
                EIO
            } else {
                0
            };
            if errno == 0 {
                match job.kind {
                    JobKind::Flush { upto } => shared.data.flush_released(upto),
                    JobKind::Write {
                        first,
                        seq,
                        fua: true,
                    } => shared.data.fua_released(first..=seq),
                    _ => {}
                }
            }
            let Some(c) = self.conns.get_mut(job.slot).and_then(Option::as_mut) else {
                continue;
            };
            if c.generation != job.generation {
                continue;
            }
            c.inflight -= 1;
            if c.inflight == 0 {
                c.idle_until = at.max(arrival) + shared.timing.idle_poll_ns;
            }
            if c.dead {
                continue;
            }
            let handle = job.handle;
            let fua = matches!(job.kind, JobKind::Write { fua: true, .. });
            match job.kind {
                JobKind::Read(mut b) if errno == 0 => {
                    if c.structured {
                        let len = (8 + job.len) as u32;
                        write_structured_header(
                            &mut b,
                            REPLY_FLAG_DONE,
                            REPLY_TYPE_OFFSET_DATA,
                            handle,
                            len,
                        );
                        b[STRUCTURED_REPLY_LEN..STRUCTURED_READ_PREFIX]
                            .copy_from_slice(&job.offset.to_be_bytes());
                    } else {
                        write_simple_header(&mut b, 0, handle);
                    }
                    c.out.push_vec(b);
                }
                _ if errno != 0 => {
                    let r = c.error_reply(errno, handle, "power cut while in flight");
                    c.out.push_slice(&r);
                }
                _ => {
                    let mut h = [0u8; SIMPLE_REPLY_LEN];
                    write_simple_header(&mut h, 0, handle);
                    c.out.push_slice(&h);
                }
            }
            let moves_data = matches!(op, Op::Read | Op::Write) && errno == 0;
            c.sent.push(Sent {
                op,
                arrival,
                at,
                breakdown,
                errno,
                bytes: if moves_data { job.len } else { 0 },
                offset: job.offset,
                len: job.len,
                fua,
            });
            self.dirty.push(job.slot);
        }
    }

    fn flush_dirty(&mut self) {
        while let Some(slot) = self.dirty.pop() {
            self.flush(slot);
        }
    }

    /// Send what a connection has queued (without blocking) and account
    /// for the replies in it.
    fn flush(&mut self, slot: usize) {
        let shared = &self.shared;
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let now = shared.clock.now();
        if !c.sent.is_empty() {
            // Lateness counts from when the reply is handed to the socket
            // (replies still queued for a slow client count as sent now).
            // Counted before the send: a client that asks for the stats
            // once it has its reply finds the reply counted.
            shared.stats.record_all(c.sent.iter().map(|s| Sample {
                op: s.op,
                bytes: s.bytes,
                error: s.errno != 0,
                model_ns: s.at - s.arrival,
                late_ns: now.saturating_sub(s.at),
                breakdown: &s.breakdown,
            }));
            if let Some(rec) = &shared.record {
                for s in &c.sent {
                    let op = [TraceOp::Read, TraceOp::Write, TraceOp::Trim, TraceOp::Flush]
                        [s.op.index()];
                    let _ = rec.send(RecorderMsg::Served(Served {
                        stream: c.id as u32,
                        op,
                        offset: s.offset,
                        len: s.len,
                        fua: s.fua,
                        arrival_ns: s.arrival,
                        complete_ns: s.at,
                        reply_ns: now,
                    }));
                }
            }
            c.sent.clear();
        }
        if !c.dead && c.out.send(c.fd()).is_err() {
            c.dead = true;
        }
        if c.dead {
            c.out.clear();
        }
        self.update_interest(slot);
    }

    fn update_interest(&mut self, slot: usize) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let want = c.wanted_interest();
        if want != c.interest
            && epoll_ctl(self.epfd, libc::EPOLL_CTL_MOD, c.fd(), want, slot as u64).is_ok()
        {
            c.interest = want;
        }
    }

    /// Connections that were throttled and no longer are: process what
    /// they have buffered.
    fn resume_throttled(&mut self) {
        for slot in 0..self.conns.len() {
            let Some(c) = self.conns[slot].as_ref() else {
                continue;
            };
            if !c.throttled() && c.lo < c.hi && !c.stream.is_closed() && !c.closed_input {
                self.process_input(slot);
            } else if c.wanted_interest() != c.interest {
                self.update_interest(slot);
            }
        }
    }

    /// Close connections that are finished.
    fn reap(&mut self) {
        for slot in 0..self.conns.len() {
            if !self.conns[slot].as_ref().is_some_and(Conn::finished) {
                continue;
            }
            if let Some(c) = self.conns[slot].take() {
                // SAFETY: removes a registered fd; a null event is allowed.
                unsafe {
                    libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_DEL, c.fd(), std::ptr::null_mut())
                };
                c.sock.shutdown(std::net::Shutdown::Both);
                self.shared.live_conns.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// Time a command as the model sees it: `(op, offset, len, fua)`.
fn timing_of(command: Command) -> (Op, u64, u64, bool) {
    match command {
        Command::Read { offset, len } => (Op::Read, offset, len as u64, false),
        Command::Write { offset, len, fua } => (Op::Write, offset, len as u64, fua),
        Command::Trim { offset, len, fua } => (Op::Trim, offset, len as u64, fua),
        // Zeroing moves no data over the link: timed as a trim, unless the
        // client forbids holes, when the device really writes.
        Command::WriteZeroes {
            offset,
            len,
            fua,
            no_hole,
        } => (
            if no_hole { Op::Write } else { Op::Trim },
            offset,
            len as u64,
            fua,
        ),
        Command::Flush | Command::Disconnect => (Op::Flush, 0, 0, false),
        // Never timed: answered at arrival (`Reactor::process_input`); a
        // read of nothing if it ever were.
        Command::BlockStatus { offset, .. } => {
            debug_assert!(false, "block status reached the model");
            (Op::Read, offset, 0, false)
        }
    }
}

/// What `Reactor::copy_leading_pieces` did of a request's data: of a
/// write's `payload`, the first `applied` bytes (the first piece's journal
/// sequence `first`); a large read's whole reply buffer, `read`.
struct Lead<'a> {
    payload: &'a [u8],
    applied: usize,
    first: Option<WriteSeq>,
    read: Option<Vec<u8>>,
}

/// Bytes before the data in a read's reply.
fn reply_header_len(structured: bool) -> usize {
    if structured {
        STRUCTURED_READ_PREFIX
    } else {
        SIMPLE_REPLY_LEN
    }
}

/// Carry out a valid request's data access at arrival (a large write's
/// leading pieces are already applied, `lead`); `None` (with an
/// error reply queued) when the store failed.
fn prepare(
    shared: &Shared,
    c: &mut Conn,
    slot: usize,
    handle: u64,
    command: Command,
    lead: Lead<'_>,
    epoch: u64,
) -> Option<Job> {
    let data = &shared.data;
    let kind = match command {
        Command::Read { offset, len } => match lead.read {
            Some(b) => Ok(JobKind::Read(b)),
            None => {
                let hdr = reply_header_len(c.structured);
                let mut b = vec![0u8; hdr + len as usize];
                data.read(&mut b[hdr..], offset).map(|_| JobKind::Read(b))
            }
        },
        Command::Write { offset, fua, .. } => data
            .write_part(
                &lead.payload[lead.applied..],
                offset + lead.applied as u64,
                fua,
                lead.first,
            )
            .map(|seq| JobKind::Write {
                first: lead.first.unwrap_or(seq),
                seq,
                fua,
            }),
        Command::Trim { offset, len, fua }
        | Command::WriteZeroes {
            offset, len, fua, ..
        } => data
            .zero(offset, len as u64, fua)
            .map(|seq| JobKind::Write {
                first: seq,
                seq,
                fua,
            }),
        _ => Ok(JobKind::Flush {
            upto: data.flush_arrived(),
        }),
    };
    let (_, offset, len, fua) = timing_of(command);
    // The data is applied: a sync started from now on covers it.
    let needs_sync = matches!(command, Command::Flush) || fua;
    let sync = if needs_sync && kind.is_ok() {
        data.sync_ticket()
    } else {
        0
    };
    match kind {
        Ok(kind) => Some(Job {
            sync,
            slot,
            generation: c.generation,
            handle,
            kind,
            epoch,
            offset,
            len,
        }),
        Err(_) => {
            c.store_error(shared, handle);
            None
        }
    }
}
