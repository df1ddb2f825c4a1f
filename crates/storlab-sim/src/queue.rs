//! The run loop's pending events, earliest (time, insertion order) first
//! ([`EventQueue`]): a sorted run of the earliest, and a radix heap of
//! the rest when there are many.

use storlab_model::Nanos;

/// A pending event: its time and its token. Its insertion order, which
/// breaks ties in time, is its place in either part of the queue (an
/// event goes in after every pending event of its time), so no sequence
/// number is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ev {
    pub(crate) t: Nanos,
    pub(crate) tok: u64,
}

/// The pending events, earliest (time, insertion order) first.
///
/// A run has few events pending at once (about 8 on an NVM array under 16
/// threads, about 30 on a flash drive at depth 32), and a new event most
/// often lands among the latest: while they are few they are kept sorted,
/// from `head` on (the *front*), so a pop is a read and a push an
/// insertion (found from the back while they are very few; beyond, from
/// the end of the half it falls in, the events on that side moved by one
/// as it goes), with no sifting through a heap's levels; an event goes in
/// after every pending event of its time, so ties leave in insertion
/// order.
///
/// A host-bound run (a fast drive under 16 threads at depth 32) keeps
/// about 500 events pending, one per command in the host's stages, and
/// an Optane SSD's about 50. Past [`EventQueue::TO_HEAP`] events in the
/// front an insertion would move too many of them (48: the run-loop
/// instructions of every preset were lowest there, against 32, 40, 64
/// and 128, callgrind): the later half goes into a radix heap
/// ([`Radix`]), and from then on an event at or after `limit` (the
/// front's last) goes there, an earlier one into the front. When the
/// front runs out, the radix heap's lowest buckets (its earliest events:
/// every event of a bucket is earlier than every event of the next)
/// become the front, each sorted, as many whole buckets as
/// [`EventQueue::TAKE`] events hold; a lowest bucket of more is first
/// spread over the buckets below. (Taking one bucket at a time, a
/// host-bound flash drive refilled every 4.3 events on average, 3.2 M
/// times in 3.2 M IOs; whole buckets up to 16 events refill every 10.5:
/// 1.2 M times, 2-3 % of the run's wall time.) Every event in the radix
/// heap is at or after the front's last, so the front always holds the
/// earliest.
///
/// (Written by hand: no collection in `std` keeps a small sorted run with
/// pops from the front, and the radix heap crates order ties by nothing,
/// where a run must take them in insertion order to stay deterministic.)
pub(crate) struct EventQueue {
    /// The front: `v[head..]` in increasing (time, insertion) order
    /// (`v[..head]` popped).
    v: Vec<Ev>,
    head: usize,
    /// The rest (empty while the front holds every event).
    radix: Radix,
    /// An event at or after this time goes into the radix heap, an
    /// earlier one into the front: every event in the radix heap is at
    /// or after it, every event in the front at or before it (`MAX`
    /// while the radix heap is empty, 0 while everything is in it).
    limit: Nanos,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self {
            v: Vec::new(),
            head: 0,
            radix: Radix::default(),
            limit: Nanos::MAX,
        }
    }
}

impl EventQueue {
    /// Events in the front above which its later half goes into the
    /// radix heap (see the type's notes).
    const TO_HEAP: usize = 48;
    /// Pending events up to which a push looks for its place from the
    /// back, one event at a time (from the nearer end beyond).
    const SCAN: usize = 16;
    /// The most events a refill takes from the radix heap into the front
    /// (whole buckets; a lowest bucket of more is spread first, unless
    /// its events are of one time).
    const TAKE: usize = 16;
    /// Popped slots kept at the front of the sorted form before they are
    /// dropped (one move of the pending events every this many pops).
    const COMPACT: usize = 256;

    #[inline]
    pub(crate) fn push(&mut self, t: Nanos, tok: u64) {
        let ev = Ev { t, tok };
        let len = self.v.len();
        if t >= self.limit {
            self.radix.push(ev);
        } else if len - self.head > Self::SCAN {
            self.push_among_many(ev);
        } else if self.head > 0 && t < self.v[self.head].t {
            // earlier than every pending event: into the last popped slot
            self.head -= 1;
            self.v[self.head] = ev;
        } else {
            self.insert_from_back(ev);
        }
    }

    /// Insert `ev` into the front after every event of its time, the
    /// later events moved up one as its place is found from the back.
    #[inline(always)]
    fn insert_from_back(&mut self, ev: Ev) {
        let len = self.v.len();
        self.v.push(ev);
        let mut k = len;
        while k > self.head && self.v[k - 1].t > ev.t {
            self.v[k] = self.v[k - 1];
            k -= 1;
        }
        self.v[k] = ev;
    }

    /// [`Self::push`] into the front with more than [`Self::SCAN`]
    /// events in it. (Inlined: a call here cost a flash drive's deep
    /// queues a twentieth of the queue's instructions.)
    #[inline(always)]
    fn push_among_many(&mut self, ev: Ev) {
        let len = self.v.len();
        if len - self.head >= Self::TO_HEAP {
            self.spill(ev);
            return;
        }
        if ev.t >= self.v[len - 1].t {
            // not earlier than any event in the front
            self.v.push(ev);
            return;
        }
        let mid = self.head + (len - self.head) / 2;
        if self.head > 0 && ev.t < self.v[mid].t {
            // in the earlier half: the earlier events (those of its time
            // too) move down one, into the last popped slot, one at a time
            // as it looks for its place (a binary search and a `memmove`
            // cost more for the few events moved)
            let mut k = self.head - 1;
            while self.v[k + 1].t <= ev.t {
                self.v[k] = self.v[k + 1];
                k += 1;
            }
            self.v[k] = ev;
            self.head -= 1;
        } else {
            // in the later half: the later events move up one
            self.insert_from_back(ev);
        }
    }

    /// The front is full. With the radix heap empty, its events from its
    /// middle time on go there (in their order: a time is not split, so
    /// the radix heap holds no event of a time the front has); with events
    /// in the radix heap, all of them go there, the front's first (they
    /// were pushed first within any one time). Then `ev` is pushed again.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, ev: Ev) {
        let len = self.v.len();
        if self.radix.len == 0 {
            let mut p = self.head + (len - self.head) / 2;
            while p < len && self.v[p].t == self.v[p - 1].t {
                p += 1;
            }
            if p < len {
                // the floor: the front's last, at or before every event
                // that will go into the radix heap
                self.radix.reset(self.v[p - 1].t);
                for &e in &self.v[p..] {
                    self.radix.push(e);
                }
                self.v.truncate(p);
                self.limit = self.v[p - 1].t;
            } else {
                // one time from the middle on: nothing to split off, the
                // front takes `ev` (from the back, however many it moves)
                self.insert_from_back(ev);
                return;
            }
        } else {
            self.radix
                .lower_floor(self.v[self.head].t, &self.v[self.head..]);
            self.v.clear();
            self.head = 0;
            // everything in the radix heap until its next take
            self.limit = 0;
        }
        self.push(ev.t, ev.tok);
    }

    /// The earliest event, taken out.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Ev> {
        let Some(&ev) = self.v.get(self.head) else {
            // the front is empty (and cleared)
            return self.refill();
        };
        self.head += 1;
        if self.head == self.v.len() {
            self.v.clear();
            self.head = 0;
        } else if self.head >= Self::COMPACT {
            self.v.drain(..self.head);
            self.head = 0;
        }
        Some(ev)
    }

    /// [`Self::pop`] with the front empty: the radix heap's earliest
    /// events become it, and the first of them is popped.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) -> Option<Ev> {
        if self.radix.len == 0 {
            return None;
        }
        self.v.clear();
        self.head = 0;
        self.radix.take_lowest(Self::TAKE, &mut self.v);
        self.limit = if self.radix.len == 0 {
            Nanos::MAX
        } else {
            self.v[self.v.len() - 1].t
        };
        self.pop()
    }
}

/// A radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms
/// for the shortest path problem", JACM 1990) over event times: a
/// discrete-event run never schedules before the event it is handling,
/// so every pending time is at least a floor, `last`, and an event waits
/// in the bucket of the highest bit in which its time differs from `last`
/// (bucket 0: equal). Every event of a bucket is earlier than every event
/// of a higher bucket. A push is an append. Taking the earliest events
/// takes the lowest non-empty bucket; one holding too many has its
/// earliest time made the floor first, and its events move into the
/// (empty) buckets below.
///
/// Ties: events of one time are always in one bucket, appended in
/// insertion order, and a bucket's move keeps its order, so they leave in
/// insertion order. A push earlier than `last` (which the engine never
/// makes) lowers the floor and files every pending event again, which
/// keeps the order too.
#[derive(Default)]
struct Radix {
    /// Bucket `b` at index `b`, 0..=64 (bucket `b > 0` holds events whose
    /// time differs from `last` first in bit `b - 1`).
    buckets: Vec<Vec<Ev>>,
    /// Bit `b` set: bucket `b` holds events.
    full: u128,
    last: Nanos,
    len: usize,
    /// A bucket's events while they move down.
    moving: Vec<Ev>,
}

impl Radix {
    /// An empty heap with floor `floor`.
    fn reset(&mut self, floor: Nanos) {
        if self.buckets.is_empty() {
            self.buckets = (0..=64).map(|_| Vec::new()).collect();
        }
        debug_assert!(self.len == 0 && self.full == 0);
        self.last = floor;
    }

    #[inline]
    fn file(&mut self, ev: Ev) {
        let b = 64 - (ev.t ^ self.last).leading_zeros() as usize;
        self.buckets[b].push(ev);
        self.full |= 1 << b;
    }

    #[inline]
    fn push(&mut self, ev: Ev) {
        if ev.t < self.last {
            self.lower_floor(ev.t, &[]);
        }
        self.len += 1;
        self.file(ev);
    }

    /// A new floor `t`, at or before every pending event and `first`:
    /// `first` (in its order), then every pending event (bucket by bucket,
    /// each in its order) filed against it.
    #[cold]
    fn lower_floor(&mut self, t: Nanos, first: &[Ev]) {
        if self.buckets.is_empty() {
            self.reset(t);
        }
        let mut all = std::mem::take(&mut self.moving);
        all.clear();
        all.extend_from_slice(first);
        for b in 0..=64 {
            all.append(&mut self.buckets[b]);
        }
        self.full = 0;
        self.last = t;
        self.len = all.len();
        for &e in &all {
            self.file(e);
        }
        all.clear();
        self.moving = all;
    }

    /// The earliest events into `out` in (time, insertion) order: the
    /// lowest buckets, whole, while they fit in `most` events (the
    /// first of them spread until it fits, unless its events are of one
    /// time). The heap holds an event.
    fn take_lowest(&mut self, most: usize, out: &mut Vec<Ev>) {
        debug_assert!(self.len > 0 && out.is_empty());
        loop {
            let b = self.full.trailing_zeros() as usize;
            if b == 0 || self.buckets[b].len() <= most - out.len() {
                // bucket 0's events are of one time; a small bucket's are
                // sorted, stably (one time's keep their insertion order)
                self.full &= !(1 << b);
                let start = out.len();
                out.append(&mut self.buckets[b]);
                if b > 0 {
                    out[start..].sort_by_key(|e| e.t);
                }
                self.len -= out.len() - start;
                if out.len() < most && self.full != 0 {
                    continue;
                }
                return;
            }
            if !out.is_empty() {
                return;
            }
            // spread: its earliest time the floor, its events into the
            // buckets below (all empty)
            let mut moving =
                std::mem::replace(&mut self.buckets[b], std::mem::take(&mut self.moving));
            self.full &= !(1 << b);
            self.last = moving.iter().map(|e| e.t).min().expect("a full bucket");
            for &e in &moving {
                self.file(e);
            }
            moving.clear();
            self.moving = moving;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventQueue;
    use rand::{Rng, SeedableRng};

    /// Random pushes and pops (many ties in time, now and then a time
    /// far ahead) against a sorted reference, at push rates that keep the
    /// queue small (the front alone), grow it past the radix heap's
    /// threshold and shrink it back; in one phase some pushes are earlier
    /// than the last pop (which the engine never asks, and both parts
    /// take).
    #[test]
    fn the_event_queue_pops_in_time_then_insertion_order() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
        let mut q = EventQueue::default();
        let mut reference: Vec<(u64, u64, u64)> = Vec::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let (mut popped, mut most, mut back_to_sorted) = (0u32, 0usize, 0u32);
        let mut early_in_heap = 0u32;
        // (steps, chance of a pop per step, chance of a push before the
        // last pop): balanced, growing, draining, growing with early
        // pushes, draining, balanced
        let phases = [
            (20_000, 0.55, 0.0),
            (4_000, 0.2, 0.0),
            (6_000, 0.9, 0.0),
            (4_000, 0.2, 0.01),
            (6_000, 0.9, 0.0),
            (20_000, 0.5, 0.0),
        ];
        for (phase, &(steps, p_pop, p_early)) in phases.iter().enumerate() {
            for step in 0..steps {
                let was_heap = q.radix.len > 0;
                if rng.gen_bool(p_pop) {
                    reference.sort_unstable();
                    let want = (!reference.is_empty()).then(|| reference.remove(0));
                    let got = q.pop().map(|e| (e.t, e.tok));
                    assert_eq!(got, want.map(|w| (w.0, w.2)), "phase {phase} step {step}");
                    if let Some(g) = got {
                        now = g.0;
                        popped += 1;
                    }
                } else {
                    // as the engine's: never earlier than the last popped
                    // (but in `p_early` of the pushes)
                    seq += 1;
                    let t = if rng.gen_bool(p_early) {
                        early_in_heap += (q.radix.len > 0) as u32;
                        now.saturating_sub(rng.gen_range(1..40u64))
                    } else if rng.gen_bool(0.02) {
                        now + rng.gen_range(0..1u64 << 40)
                    } else {
                        now + rng.gen_range(0..40u64)
                    };
                    q.push(t, step);
                    reference.push((t, seq, step));
                }
                most = most.max(reference.len());
                back_to_sorted += (was_heap && q.radix.len == 0) as u32;
            }
        }
        reference.sort_unstable();
        for want in reference {
            let e = q.pop().expect("as many events as pushed");
            assert_eq!((e.t, e.tok), (want.0, want.2));
        }
        assert!(q.pop().is_none());
        assert!(q.pop().is_none(), "an empty queue stays empty");
        assert!(popped > 10_000, "{popped} pops");
        assert!(
            most > 4 * EventQueue::TO_HEAP,
            "the radix heap was used: {most}"
        );
        assert!(back_to_sorted > 0, "and left again");
        assert!(
            early_in_heap > 0,
            "early pushes were made while the radix heap held events"
        );
    }
}
