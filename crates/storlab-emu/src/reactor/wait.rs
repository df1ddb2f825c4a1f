//! Waiting for input or the next due time: sleeping in `ppoll`, spinning
//! on the TSC, the learnt spin window, and the thread's priority.

use std::sync::atomic::Ordering;

use storlab_model::Nanos;

use crate::clock::{set_realtime, Clock};

use super::state::Reactor;

/// Longest untimed sleep (the stop flag is also signalled by the eventfd).
const MAX_SLEEP_NS: u64 = 100_000_000;
/// The real-time budget's window and the time the reactor may spend awake
/// in it as `SCHED_FIFO` (90%, under the kernel's 95% of each second).
const RT_WINDOW: Nanos = 100_000_000;
const RT_BUDGET: Nanos = 90_000_000;
/// How long the reactor keeps real-time priority after its last future
/// deadline (switching costs a system call).
const RT_HOLD: Nanos = 10_000_000;

impl Reactor {
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
    pub(super) fn priority(&mut self, now: Nanos) {
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
    pub(super) fn wait(&mut self, events: &mut [libc::epoll_event]) -> usize {
        if !self.zero_ready.is_empty() || self.backlog_waits() {
            // A trim's next piece is ready for the model, or a
            // connection's input waits for its next turn: no sleeping.
            return self.epoll(events, 0);
        }
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

    /// A connection not throttled has input waiting for its next turn.
    fn backlog_waits(&self) -> bool {
        let budget = self.budget();
        self.conns
            .iter()
            .flatten()
            .any(|c| c.backlog() && !c.throttled(budget))
    }

    pub(super) fn epoll(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> usize {
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

    pub(super) fn drain_wake(&self) {
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
}
