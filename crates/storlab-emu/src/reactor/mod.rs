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

mod conn;
mod data;
mod event_loop;
mod input;
mod reply;
mod state;
mod wait;
mod zero;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::assist::Assist;
use crate::clock::{set_realtime, tighten_timer_slack};
use crate::shared::{lock, Shared};

use state::{Oversleep, Reactor};

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
        buffered: 0,
        over_total: 0,
        gone_work: 0,
        trim_mark: 0,
        trimmed_at: 0,
        zero_ready: Vec::new(),
        idle_scanned: 0,
    };
    r.run();
}
