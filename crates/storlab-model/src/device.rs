//! The one device interface every layer of the timing model implements.
//!
//! The interface is event-driven and clock-free: the driver (the simulator's
//! virtual-time loop, or the emulator's wall-clock loop) passes the current
//! time in, and the device answers by asking for wake-ups and by reporting
//! completions, both collected in a [`Cx`]. A device never reads a clock,
//! never does IO and never iterates a hash map, so the same calls in the same
//! order give the same answers whichever face drives it.
//!
//! Why this shape: a reservation-only interface ("give me the completion time
//! now") cannot express policies where a later arrival changes an earlier
//! request's fate (round-robin at transfer granularity, barriers, garbage
//! collection). An event-driven interface can, and a device that *can*
//! compute its answer at submission simply reports the completion at once
//! with a future time.

use std::collections::BTreeMap;

use crate::breakdown::Breakdown;

/// Time in nanoseconds since the start of a run (virtual or wall-clock).
pub type Nanos = u64;

/// What a request asks the device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Move data from the device to the host.
    Read,
    /// Move data from the host to the device.
    Write,
    /// Discard a range (TRIM / UNMAP / NBD_CMD_TRIM).
    Trim,
    /// An IO barrier: completes when everything acknowledged before it is
    /// durable; ordered against other requests as the device's scheduler
    /// says (see docs/spec/pcie-arrays.md, +2Q and +Balance).
    Flush,
}

impl Op {
    /// Index into per-direction arrays: read 0, write 1, trim 2, flush 3.
    pub fn index(self) -> usize {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
            Op::Flush => 3,
        }
    }
}

/// A request as a device sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevRequest {
    /// Unique among requests outstanding at this device; echoed in the
    /// completion.
    pub id: u64,
    /// The operation.
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
    /// Force unit access: complete only once durable.
    pub fua: bool,
    /// A write's data placement directive (NVMe Flexible Data Placement:
    /// DTYPE 2h, the Placement Identifier in DSPEC), or `None` when the
    /// write carries no directive. Devices without FDP ignore it.
    pub placement: Option<u16>,
}

impl DevRequest {
    /// A request without force unit access.
    pub fn new(id: u64, op: Op, offset: u64, len: u64) -> Self {
        DevRequest {
            id,
            op,
            offset,
            len,
            fua: false,
            placement: None,
        }
    }
}

/// A finished request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The id given at submission.
    pub id: u64,
    /// When the device finished it (never earlier than its submission).
    pub at: Nanos,
    /// Where its time went, by component.
    pub breakdown: Breakdown,
    /// The command's completion status as the device reports it: 0 for
    /// success, else the NVMe status field (status code type in bits 8-10,
    /// status code in bits 0-7; NVMe base specification 2.0, Completion
    /// Queue Entry, Status Field). Only zoned drives fail requests so far
    /// (`devices/flash/zones.rs`); the host turns a status into the errno
    /// Linux returns ([`crate::host::status_errno`]).
    pub status: u16,
}

/// What a device asks of its driver during one call: wake-ups to schedule
/// and completions to deliver. The driver drains it after every call.
#[derive(Default, Debug)]
pub struct Cx {
    /// `(time, token)`: call [`Device::on_event`] with `token` at `time`.
    /// Ties are broken by the order in which they were pushed.
    pub wakeups: Vec<(Nanos, u64)>,
    /// Requests that finished, each with its completion time (which may be
    /// later than the current call's time: the device already knows it).
    pub completions: Vec<Completion>,
}

impl Cx {
    /// Ask to be called back with `token` at `at`.
    #[inline]
    pub fn wake(&mut self, at: Nanos, token: u64) {
        self.wakeups.push((at, token));
    }
    /// Report a finished request.
    #[inline]
    pub fn complete(&mut self, c: Completion) {
        self.completions.push(c);
    }
    /// Report request `id` finished at `at`, its time spent as `breakdown`.
    #[inline]
    pub fn done(&mut self, id: u64, at: Nanos, breakdown: Breakdown) {
        self.complete(Completion {
            id,
            at,
            breakdown,
            status: 0,
        });
    }
    /// Report request `id`, which arrived at `arrival`, finished at `at`:
    /// whatever of its latency `breakdown` does not account for was spent
    /// queueing in the device.
    #[inline]
    pub fn done_since(&mut self, id: u64, arrival: Nanos, at: Nanos, breakdown: Breakdown) {
        // completed where it is stored (one copy of the breakdown fewer)
        self.done(id, at, breakdown);
        if let Some(c) = self.completions.last_mut() {
            c.breakdown.queue_rest(at - arrival);
        }
    }
    /// [`Cx::done_since`] with the breakdown read where the device keeps
    /// it: copied once, straight into the completion (a breakdown passed
    /// by value goes through a copy on the stack first).
    #[inline]
    pub fn done_since_ref(&mut self, id: u64, arrival: Nanos, at: Nanos, breakdown: &Breakdown) {
        self.done(id, at, Breakdown::default());
        if let Some(c) = self.completions.last_mut() {
            c.breakdown = *breakdown;
            c.breakdown.queue_rest(at - arrival);
        }
    }
    /// Report request `id` finished at `at`, with an empty breakdown
    /// returned for the device to fill in place (a breakdown built on the
    /// stack and passed to [`Cx::done`] is copied once more on its way).
    #[inline]
    pub fn done_mut(&mut self, id: u64, at: Nanos) -> &mut Breakdown {
        self.completions.push(Completion {
            id,
            at,
            breakdown: Breakdown::default(),
            status: 0,
        });
        let last = self.completions.len() - 1;
        &mut self.completions[last].breakdown
    }
    /// Report request `id`, which arrived at `arrival`, finished at `at`,
    /// its time spent in the few components its path sets (`parts`; a
    /// component may appear more than once) and the rest of its latency
    /// queueing in the device (as [`Cx::done_since`]). The breakdown is
    /// written once, straight into the completion, and the rest is found
    /// from the parts' sum: no whole breakdown is built, copied or summed
    /// on the way (a device keeps its requests' few parts, not a
    /// 160-byte [`Breakdown`] each).
    #[inline]
    pub fn done_parts(
        &mut self,
        id: u64,
        arrival: Nanos,
        at: Nanos,
        parts: &[(crate::breakdown::Component, u64)],
    ) {
        self.done_mut(id, at).add_parts_rest(parts, at - arrival);
    }
    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.wakeups.is_empty() && self.completions.is_empty()
    }
}

/// One zone of a zoned device's zone report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneReport {
    /// The write pointer, in bytes from the zone's start.
    pub write_pointer: u64,
    /// Open (implicitly or explicitly): it holds one of the drive's open
    /// resources.
    pub open: bool,
}

/// One layer of a storage system: media, a controller, a link, a cache, a
/// RAID set. Wrapping layers hold their next device(s) and route wake-up
/// tokens to them (see `devices/raid.rs` for the token convention).
pub trait Device: Send {
    /// A request arrives at `now`. Requests are submitted in nondecreasing
    /// time order, interleaved with [`Device::on_event`] calls in time order.
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx);

    /// A wake-up asked for through [`Cx::wake`] is due.
    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx);

    /// Capacity in bytes.
    fn capacity(&self) -> u64;

    /// Whether acknowledged writes can be lost on power failure until a
    /// flush (a volatile write cache). The emulator uses this for power cuts.
    fn volatile_write_cache(&self) -> bool {
        false
    }

    /// Whether a volatile write cache in this device still holds bytes of
    /// `[offset, offset + len)` that are not on stable media, as of the
    /// last call the device was given: a power cut now would lose them.
    /// The emulator asks it at a power cut and when it journals a write
    /// (never the simulator: it costs nothing unless called). Every device
    /// whose [`Device::volatile_write_cache`] can be true answers it; the
    /// default (nothing volatile) suits the rest.
    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        let _ = (offset, len);
        false
    }

    /// A zoned device's zone report, a [`ZoneReport`] per zone (what fio's
    /// `zonemode=zbd` reads from the drive when a job starts). `None`: not
    /// zoned.
    fn zone_report(&self) -> Option<Vec<ZoneReport>> {
        None
    }

    /// A zoned device's zone size in bytes (`None`: not zoned). The host
    /// stack sends each zone's writes to it in the order they were
    /// submitted, as Linux's block layer does for a zoned device.
    fn zone_bytes(&self) -> Option<u64> {
        None
    }

    /// Utilisation, power, energy and wear up to `now`.
    fn report(&self, now: Nanos) -> crate::report::DeviceReport;

    /// A one-line summary of internal queues, for diagnosing a stalled run.
    fn debug_state(&self) -> String {
        String::new()
    }
}

/// Drive a device by hand (tests, fuzz targets): submit `reqs` at their
/// times and run the device until no event is left (at most
/// `max_events`). Fails, naming what went wrong, on a wake-up or
/// completion in the past, a breakdown that does not add up to the
/// latency, a request completed twice or never, or no end in sight.
pub fn drive(
    d: &mut dyn Device,
    reqs: &[(u64, DevRequest)],
    max_events: usize,
) -> Result<BTreeMap<u64, Completion>, String> {
    const SUBMIT: u64 = 1 << 62;
    let mut q: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut seq = 0;
    for (i, (t, _)) in reqs.iter().enumerate() {
        seq += 1;
        q.insert((*t, seq), i as u64 | SUBMIT);
    }
    let mut done = BTreeMap::new();
    let mut cx = Cx::default();
    let mut events = 0;
    while let Some(((t, _), tok)) = q.pop_first() {
        events += 1;
        if events > max_events {
            return Err(format!(
                "no end after {max_events} events at t={t}: {}",
                d.debug_state()
            ));
        }
        if tok & SUBMIT != 0 {
            d.submit(t, reqs[(tok & !SUBMIT) as usize].1, &mut cx);
        } else {
            d.on_event(t, tok, &mut cx);
        }
        for (wt, wtok) in cx.wakeups.drain(..) {
            if wt < t {
                return Err(format!("wake-up at {wt} before now {t}"));
            }
            seq += 1;
            q.insert((wt, seq), wtok);
        }
        for c in cx.completions.drain(..) {
            if c.at < t {
                return Err(format!(
                    "request {} completed at {} before now {t}",
                    c.id, c.at
                ));
            }
            let latency = c.at - reqs[c.id as usize].0;
            if c.breakdown.total() != latency {
                return Err(format!(
                    "request {}: breakdown {} != latency {latency}",
                    c.id,
                    c.breakdown.total()
                ));
            }
            let id = c.id;
            if done.insert(id, c).is_some() {
                return Err(format!("request {id} completed twice"));
            }
        }
    }
    if done.len() != reqs.len() {
        return Err(format!(
            "{} of {} requests completed: {}",
            done.len(),
            reqs.len(),
            d.debug_state()
        ));
    }
    Ok(done)
}
