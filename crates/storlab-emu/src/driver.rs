//! The driver of the timing model: the only place the emulator touches
//! [`Device`], and the same code whether time is the wall clock or virtual.
//!
//! A [`ModelDriver`] owns the device, a min-heap of the device's wake-ups
//! and a min-heap of completions waiting for their deadline. Two entry
//! points move it, and both the NBD server and [`replay_virtual`] use
//! exactly these two:
//!
//! - [`ModelDriver::arrive`]: a request arrives at `t`. Every wake-up due at
//!   or before `t` is processed first (in time order, ties in the order they
//!   were asked for), then the request is submitted at `t`, then every
//!   completion whose deadline is at or before `t` is handed back.
//! - [`ModelDriver::tick`]: the timer woke at `now`: process the wake-ups
//!   due, hand back the completions due, and say when to wake next.
//!
//! A wake-up asked for at time `w` is delivered to the device with
//! `now = w` even when the timer runs late, so the device sees the same
//! times whatever the host's scheduling; only arrival times differ between
//! a live run and a simulation. Arrival times that go backwards (two
//! connections racing for the lock) are clamped to the driver's time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use storlab_model::{Breakdown, Cx, DevRequest, Device, Nanos, Op};

use crate::clock::{Clock, VirtualClock};

/// A request the device has finished and whose deadline has come.
#[derive(Debug)]
pub struct Released<J> {
    /// The id given at submission.
    pub id: u64,
    /// The operation.
    pub op: Op,
    /// When it was submitted to the device (after clamping).
    pub arrival: Nanos,
    /// The device's completion time: the reply's deadline.
    pub at: Nanos,
    /// Where the time went, as the device reports it.
    pub breakdown: Breakdown,
    /// What the caller attached at submission.
    pub job: J,
}

struct Pending<J> {
    op: Op,
    arrival: Nanos,
    job: J,
    done: Option<(Nanos, Breakdown)>,
}

/// Drives one [`Device`] in nondecreasing time order; generic over what the
/// caller attaches to each request (`J`: a reply to send, or nothing).
pub struct ModelDriver<J> {
    device: Box<dyn Device>,
    cx: Cx,
    seq: u64,
    now: Nanos,
    /// `(time, seq, token)`.
    wakeups: BinaryHeap<Reverse<(Nanos, u64, u64)>>,
    /// `(deadline, seq, id)`.
    ready: BinaryHeap<Reverse<(Nanos, u64, u64)>>,
    pending: HashMap<u64, Pending<J>>,
    stray_completions: u64,
    clamped: u64,
}

impl<J> ModelDriver<J> {
    /// A driver at time 0 owning `device`.
    pub fn new(device: Box<dyn Device>) -> Self {
        ModelDriver {
            device,
            cx: Cx::default(),
            seq: 0,
            now: 0,
            wakeups: BinaryHeap::new(),
            ready: BinaryHeap::new(),
            pending: HashMap::new(),
            stray_completions: 0,
            clamped: 0,
        }
    }

    /// The driven device.
    pub fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// The latest time the driver has reached.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Requests submitted and not yet handed back.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }

    /// Completions the device reported for unknown ids (a device bug).
    pub fn stray_completions(&self) -> u64 {
        self.stray_completions
    }

    /// How many arrivals were moved forward because they came in earlier
    /// than the driver's time.
    pub fn clamped_arrivals(&self) -> u64 {
        self.clamped
    }

    /// The earliest time something is due: a wake-up or a deadline.
    pub fn next_due(&self) -> Option<Nanos> {
        let w = self.wakeups.peek().map(|Reverse((t, _, _))| *t);
        let r = self.ready.peek().map(|Reverse((t, _, _))| *t);
        match (w, r) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A request arrives at `t`: process wake-ups due by `t`, submit it at
    /// `t` (or at the driver's time if that is later), and append every
    /// completion due by then to `out`. Returns the submission time used.
    pub fn arrive(
        &mut self,
        t: Nanos,
        req: DevRequest,
        job: J,
        out: &mut Vec<Released<J>>,
    ) -> Nanos {
        if t < self.now {
            self.clamped += 1;
        }
        let t = t.max(self.now);
        self.advance_to(t);
        self.pending.insert(
            req.id,
            Pending {
                op: req.op,
                arrival: t,
                job,
                done: None,
            },
        );
        self.device.submit(t, req, &mut self.cx);
        self.drain_cx(t);
        self.collect_ready(t, out);
        t
    }

    /// The timer woke at `now`: process wake-ups due, append every
    /// completion due to `out`, and return the next time something is due.
    pub fn tick(&mut self, now: Nanos, out: &mut Vec<Released<J>>) -> Option<Nanos> {
        self.advance_to(now);
        self.collect_ready(now, out);
        self.next_due()
    }

    /// Every job still waiting (submitted, not handed back), in id order;
    /// the driver forgets them (completions for them are then ignored).
    pub fn take_all(&mut self) -> Vec<(u64, J)> {
        let mut ids: Vec<u64> = self.pending.keys().copied().collect();
        ids.sort_unstable();
        ids.into_iter()
            .filter_map(|id| self.pending.remove(&id).map(|p| (id, p.job)))
            .collect()
    }

    fn advance_to(&mut self, t: Nanos) {
        while let Some(&Reverse((w, _, token))) = self.wakeups.peek() {
            if w > t {
                break;
            }
            self.wakeups.pop();
            let at = w.max(self.now);
            self.now = at;
            self.device.on_event(at, token, &mut self.cx);
            self.drain_cx(at);
        }
        self.now = self.now.max(t);
    }

    fn drain_cx(&mut self, now: Nanos) {
        for (w, token) in self.cx.wakeups.drain(..) {
            self.seq += 1;
            self.wakeups.push(Reverse((w.max(now), self.seq, token)));
        }
        for c in self.cx.completions.drain(..) {
            match self.pending.get_mut(&c.id) {
                Some(p) if p.done.is_none() => {
                    let at = c.at.max(p.arrival);
                    p.done = Some((at, c.breakdown));
                    self.seq += 1;
                    self.ready.push(Reverse((at, self.seq, c.id)));
                }
                _ => self.stray_completions += 1,
            }
        }
    }

    fn collect_ready(&mut self, now: Nanos, out: &mut Vec<Released<J>>) {
        while let Some(&Reverse((at, _, id))) = self.ready.peek() {
            if at > now {
                break;
            }
            self.ready.pop();
            // A job taken by `take_all` has no entry any more: skip it.
            if let Some(p) = self.pending.remove(&id) {
                let (at, breakdown) = p.done.unwrap_or((at, Breakdown::default()));
                out.push(Released {
                    id,
                    op: p.op,
                    arrival: p.arrival,
                    at,
                    breakdown,
                    job: p.job,
                });
            }
        }
    }
}

/// The emulator's driver with a virtual clock: requests arrive at given
/// times and the timer is perfectly punctual. Used to check that the
/// emulator and the simulator agree on completion times.
pub struct VirtualClockDriver {
    driver: ModelDriver<()>,
    clock: VirtualClock,
    released: Vec<Released<()>>,
    out: Vec<(u64, Nanos)>,
}

impl VirtualClockDriver {
    /// A driver at virtual time 0 owning `device`.
    pub fn new(device: Box<dyn Device>) -> Self {
        VirtualClockDriver {
            driver: ModelDriver::new(device),
            clock: VirtualClock::new(),
            released: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Run the timer up to `t` (releasing what is due before it), then let
    /// `req` arrive at `t`.
    pub fn arrive(&mut self, t: Nanos, req: DevRequest) {
        self.run_timer(Some(t));
        self.clock.advance_to(t);
        let now = self.clock.now();
        self.driver.arrive(now, req, (), &mut self.released);
        self.flush_released();
    }

    /// Run the timer until nothing is due and return `(id, completion
    /// time)` in release order.
    pub fn finish(mut self) -> Vec<(u64, Nanos)> {
        self.run_timer(None);
        self.out
    }

    /// The driven device.
    pub fn device(&self) -> &dyn Device {
        self.driver.device()
    }

    fn run_timer(&mut self, until: Option<Nanos>) {
        while let Some(due) = self.driver.next_due() {
            if until.is_some_and(|t| due > t) {
                break;
            }
            self.clock.advance_to(due);
            let now = self.clock.now();
            self.driver.tick(now, &mut self.released);
            self.flush_released();
        }
    }

    fn flush_released(&mut self) {
        for r in self.released.drain(..) {
            self.out.push((r.id, r.at));
        }
    }
}

/// Run `arrivals` (in order; times should not decrease, and an earlier one
/// is clamped like on the wire) through the emulator's driver with a
/// virtual clock and return `(id, completion_ns)` in release order.
/// Request ids must be unique among outstanding requests (the [`Device`]
/// contract).
pub fn replay_virtual(
    device: Box<dyn Device>,
    arrivals: &[(Nanos, DevRequest)],
) -> Vec<(u64, Nanos)> {
    let mut d = VirtualClockDriver::new(device);
    for (t, req) in arrivals {
        d.arrive(*t, *req);
    }
    d.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::devices::fixed::FixedLatency;
    use storlab_model::{Completion, DeviceReport};

    fn req(id: u64) -> DevRequest {
        DevRequest::new(id, Op::Read, 0, 4096)
    }

    #[test]
    fn fixed_latency_completes_after_latency() {
        let dev = Box::new(FixedLatency::new(1_000, 1 << 30));
        let out = replay_virtual(dev, &[(0, req(1)), (10, req(2)), (5_000, req(3))]);
        assert_eq!(out, vec![(1, 1_000), (2, 1_010), (3, 6_000)]);
    }

    /// One server at a time, FIFO, using a wake-up at each service end:
    /// exercises the wake-up heap.
    struct Fifo {
        service: Nanos,
        queue: std::collections::VecDeque<u64>,
        busy: bool,
    }
    impl Device for Fifo {
        fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
            self.queue.push_back(req.id);
            if !self.busy {
                self.busy = true;
                cx.wake(now + self.service, 0);
            }
        }
        fn on_event(&mut self, now: Nanos, _token: u64, cx: &mut Cx) {
            if let Some(id) = self.queue.pop_front() {
                cx.complete(Completion {
                    id,
                    at: now,
                    breakdown: Breakdown::default(),
                    status: 0,
                });
            }
            if self.queue.is_empty() {
                self.busy = false;
            } else {
                cx.wake(now + self.service, 0);
            }
        }
        fn capacity(&self) -> u64 {
            1 << 30
        }
        fn report(&self, _now: Nanos) -> DeviceReport {
            DeviceReport::default()
        }
    }

    #[test]
    fn wakeups_drive_a_queue() {
        let dev = Box::new(Fifo {
            service: 100,
            queue: Default::default(),
            busy: false,
        });
        let out = replay_virtual(
            dev,
            &[(0, req(1)), (0, req(2)), (50, req(3)), (1_000, req(4))],
        );
        assert_eq!(out, vec![(1, 100), (2, 200), (3, 300), (4, 1_100)]);
    }

    #[test]
    fn backwards_arrivals_are_clamped() {
        let mut d: ModelDriver<()> = ModelDriver::new(Box::new(FixedLatency::new(10, 1 << 20)));
        let mut out = Vec::new();
        assert_eq!(d.arrive(100, req(1), (), &mut out), 100);
        assert_eq!(d.arrive(50, req(2), (), &mut out), 100);
        assert_eq!(d.clamped_arrivals(), 1);
        assert_eq!(d.tick(110, &mut out), None);
        assert_eq!(
            out.iter().map(|r| (r.id, r.at)).collect::<Vec<_>>(),
            vec![(1, 110), (2, 110)]
        );
    }
}
