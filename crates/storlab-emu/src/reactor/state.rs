//! The reactor's state ([`Reactor`]) and its oversleep estimator; its
//! methods are in the sibling modules (the event loop, waiting, input,
//! data access, replies).

use std::os::unix::io::RawFd;
use std::sync::Arc;

use storlab_model::Nanos;

use crate::assist::Assist;
use crate::driver::Released;
use crate::shared::{Job, Shared};

use super::conn::Conn;

/// The oversleep estimator: how late timed sleeps end (the last 128).
pub(super) struct Oversleep {
    pub(super) ring: [u32; 128],
    pub(super) n: usize,
}

impl Oversleep {
    /// Record one sleep; returns the new 98th percentile every 16 samples.
    pub(super) fn record(&mut self, over_ns: u64) -> Option<u64> {
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

pub(super) struct Reactor {
    pub(super) shared: Arc<Shared>,
    pub(super) epfd: RawFd,
    pub(super) conns: Vec<Option<Conn>>,
    pub(super) next_generation: u64,
    pub(super) assist: Assist,
    pub(super) released: Vec<Released<Job>>,
    /// Released by the model, waiting for the host's sync.
    pub(super) held: Vec<Released<Job>>,
    /// Connections with replies to send.
    pub(super) dirty: Vec<usize>,
    pub(super) oversleep: Oversleep,
    pub(super) window_ns: u64,
    pub(super) next_due: Option<Nanos>,
    /// When the spinning reactor last looked for input.
    pub(super) input_checked: Nanos,
    /// When the reactor last woke from a sleep.
    pub(super) awake_since: Nanos,
    /// The real-time budget: the current window's start, the time spent
    /// awake in it, and whether the thread is `SCHED_FIFO` now.
    pub(super) budget_start: Nanos,
    pub(super) budget_busy: Nanos,
    pub(super) fifo: bool,
    pub(super) rt_allowed: bool,
    /// CPUs this process may use.
    pub(super) cpus: usize,
    /// Keep real-time priority, and spin through idle-poll windows, until
    /// then (refreshed while a deadline is in the future).
    pub(super) timed_until: Nanos,
    pub(super) give_up_at: Option<Nanos>,
    /// Reply bytes buffered over every connection (the sum of their
    /// `accounted`).
    pub(super) buffered: u64,
    /// Bytes connections hold past their reserves (the shared pool's use).
    pub(super) over_total: u64,
    /// Work of clients gone (their connections closed) still in the
    /// model: the reply bytes of their reads and the length of their trim
    /// and write-zeroes pieces. A request in the model cannot be withdrawn
    /// without changing what the model says of every other request (the
    /// `Device` trait has no cancel, and a real device goes on with
    /// commands already dispatched when their process exits), so it is
    /// counted against the shared pool until it ends: a client that
    /// queues the largest reads and leaves, again and again, leaves at
    /// most the pool's worth of device work behind, where it would
    /// otherwise pile up without bound.
    pub(super) gone_work: u64,
    /// The most bytes buffered since the allocator was last told to give
    /// freed memory back, and when it was (`Reactor::give_back_memory`).
    pub(super) trim_mark: u64,
    pub(super) trimmed_at: Nanos,
    /// Connections whose trim or write-zeroes piece completed (their next
    /// pieces go to the model).
    pub(super) zero_ready: Vec<usize>,
    /// When idle connections were last looked for.
    pub(super) idle_scanned: Nanos,
}
