//! The run loop's pending events, earliest (time, insertion order) first
//! ([`EventQueue`]): a sorted run of the earliest, and a timing wheel of
//! the rest when there are many.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
/// and 128, callgrind): the later half goes into a timing wheel
/// ([`Wheel`]), and from then on an event at or after `limit` (the
/// front's last) goes there, an earlier one into the front. When the
/// front runs out, the wheel's next slots holding events (every event of
/// a slot is earlier than every event of the next) become the front,
/// each sorted, while fewer than [`EventQueue::TAKE`] events are taken.
/// Every event in the wheel is at or after the front's last, so the
/// front always holds the earliest.
///
/// (Written by hand: no collection in `std` keeps a small sorted run with
/// pops from the front, and a general priority queue needs a sequence
/// number per event to take ties in insertion order, as a run must to
/// stay deterministic; the front and the wheel's lists keep that order
/// by where an event goes.)
pub(crate) struct EventQueue {
    /// The front: `v[head..]` in increasing (time, insertion) order
    /// (`v[..head]` popped).
    v: Vec<Ev>,
    head: usize,
    /// The rest (empty while the front holds every event).
    wheel: Wheel,
    /// An event at or after this time goes into the wheel, an earlier
    /// one into the front: every event in the wheel is at or after it,
    /// every event in the front at or before it (`MAX` while the wheel
    /// is empty).
    limit: Nanos,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self {
            v: Vec::new(),
            head: 0,
            wheel: Wheel::default(),
            limit: Nanos::MAX,
        }
    }
}

impl EventQueue {
    /// Events in the front above which its later half goes into the
    /// wheel (see the type's notes).
    const TO_HEAP: usize = 48;
    /// Pending events up to which a push looks for its place from the
    /// back, one event at a time (from the nearer end beyond).
    const SCAN: usize = 16;
    /// The events a refill takes from the wheel into the front: whole
    /// slots while fewer than this are taken.
    const TAKE: usize = 16;
    /// Popped slots kept at the front of the sorted form before they are
    /// dropped (one move of the pending events every this many pops).
    const COMPACT: usize = 256;

    #[inline]
    pub(crate) fn push(&mut self, t: Nanos, tok: u64) {
        let ev = Ev { t, tok };
        let len = self.v.len();
        if t >= self.limit {
            self.wheel.push(ev);
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

    /// The front is full: its events from its middle time on go into the
    /// wheel (a time is not split, so the wheel holds no event of a time
    /// the front keeps), before any there of their times, and the front's
    /// last is the new `limit`. Then `ev` is pushed again.
    #[cold]
    #[inline(never)]
    fn spill(&mut self, ev: Ev) {
        let len = self.v.len();
        let mut p = self.head + (len - self.head) / 2;
        while p < len && self.v[p].t == self.v[p - 1].t {
            p += 1;
        }
        if p == len {
            // one time from the middle on: nothing to split off, the
            // front takes `ev` (from the back, however many it moves)
            self.insert_from_back(ev);
            return;
        }
        if self.wheel.len() == 0 {
            self.wheel.reset(self.v[p - 1].t);
        }
        for k in (p..len).rev() {
            self.wheel.prepend(self.v[k]);
        }
        self.v.truncate(p);
        self.limit = self.v[p - 1].t;
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

    /// [`Self::pop`] with the front empty: the wheel's earliest events
    /// become it, and the first of them is popped.
    #[cold]
    #[inline(never)]
    fn refill(&mut self) -> Option<Ev> {
        if self.wheel.len() == 0 {
            return None;
        }
        self.v.clear();
        self.head = 0;
        self.wheel.take_lowest(Self::TAKE, &mut self.v);
        self.limit = if self.wheel.len() == 0 {
            Nanos::MAX
        } else {
            self.v[self.v.len() - 1].t
        };
        self.pop()
    }
}

/// A timing wheel (Varghese and Lauck, "Hashed and hierarchical timing
/// wheels", SOSP 1987) over event times: [`Wheel::SLOTS`] slots of
/// [`Wheel::WIDTH`] ns from `base` (a slot boundary at or before every
/// event it holds), each a list of its events in the order they came;
/// an event past the wheel's horizon waits in `far`, a binary heap
/// ordered by (time, order), and moves into its slot when `base` comes
/// within a horizon of it. A push is a link at a slot's tail; taking the
/// earliest events finds the next slot holding any (two levels of
/// bitmaps) and sorts that slot's few events by time, stably.
///
/// Ties: events of one time are in one slot (or all in `far`: an event
/// reaches `far` only while its time is beyond the horizon, and then
/// every later push of that time goes there too, after it), in the order
/// they came, and a slot's sort is stable. The front's later half, when
/// it spills back, goes before the events of its times already here
/// (they came after it): into the head of its slot, or into `far` with
/// an order before every event there.
///
/// (A radix heap did this before: each event was filed again on every
/// level it went down, 2-3 times, and a host-bound flash drive's 500
/// pending events spent a fifth of the run there; here an event is
/// linked and unlinked once.)
struct Wheel {
    /// Per slot, the first and last node of its list (`NIL`: empty).
    ends: Vec<[u32; 2]>,
    /// Bit `s % 64` of word `s / 64` set: slot `s` holds events.
    bits: Vec<u64>,
    /// Bit `w` set: word `w` of `bits` is not zero.
    words: u64,
    nodes: Vec<Node>,
    /// The first free node (a list through `next`).
    free: u32,
    /// A slot boundary at or before every event in the slots; the slots
    /// hold times `[base, base + HORIZON)`, `far` later ones.
    base: Nanos,
    /// Events in the slots.
    in_slots: usize,
    /// Events beyond the horizon, earliest (time, order) first; the
    /// order of an event spilled back is below every other's.
    far: BinaryHeap<Reverse<(Nanos, i64, u64)>>,
    /// The next order for a push into `far`, and the last given to a
    /// spilled-back event (counting down).
    far_next: i64,
    far_first: i64,
}

#[derive(Clone, Copy)]
struct Node {
    ev: Ev,
    next: u32,
}

const NIL: u32 = u32::MAX;

impl Default for Wheel {
    fn default() -> Self {
        Self {
            ends: Vec::new(),
            bits: Vec::new(),
            words: 0,
            nodes: Vec::new(),
            free: NIL,
            base: 0,
            in_slots: 0,
            far: BinaryHeap::new(),
            far_next: 0,
            far_first: 0,
        }
    }
}

impl Wheel {
    /// log2 of a slot's width in ns: 512 ns, about one event a slot when
    /// a host-bound flash drive keeps 500 over its 45 us reads.
    const SHIFT: u32 = 9;
    const WIDTH: Nanos = 1 << Self::SHIFT;
    /// Slots (a power of two, at most 64 x 64 for the two bitmap levels).
    const SLOTS: usize = 2048;
    /// The times the slots cover from `base`, 1.05 ms: a flash program
    /// (0.2-2 ms) or a disk's seek lands beyond it, in `far`.
    const HORIZON: Nanos = (Self::SLOTS as Nanos) << Self::SHIFT;

    fn len(&self) -> usize {
        self.in_slots + self.far.len()
    }

    fn slot(t: Nanos) -> usize {
        (t >> Self::SHIFT) as usize & (Self::SLOTS - 1)
    }

    /// An empty wheel from the slot of `t` on.
    fn reset(&mut self, t: Nanos) {
        debug_assert_eq!(self.len(), 0);
        if self.ends.is_empty() {
            self.ends = vec![[NIL; 2]; Self::SLOTS];
            self.bits = vec![0; Self::SLOTS / 64];
        }
        self.base = t & !(Self::WIDTH - 1);
    }

    fn node(&mut self, ev: Ev, next: u32) -> u32 {
        if self.free == NIL {
            self.nodes.push(Node { ev, next });
            (self.nodes.len() - 1) as u32
        } else {
            let k = self.free;
            self.free = self.nodes[k as usize].next;
            self.nodes[k as usize] = Node { ev, next };
            k
        }
    }

    fn mark(&mut self, s: usize) {
        self.bits[s / 64] |= 1 << (s % 64);
        self.words |= 1 << (s / 64);
    }

    /// `ev` after every event here of its time.
    #[inline]
    fn push(&mut self, ev: Ev) {
        if ev.t < self.base {
            self.lower(ev.t);
        }
        if ev.t - self.base >= Self::HORIZON {
            self.far.push(Reverse((ev.t, self.far_next, ev.tok)));
            self.far_next += 1;
            return;
        }
        self.append(ev);
    }

    /// `ev` at the tail of its slot (within the horizon).
    #[inline]
    fn append(&mut self, ev: Ev) {
        let s = Self::slot(ev.t);
        let k = self.node(ev, NIL);
        let [head, tail] = self.ends[s];
        if head == NIL {
            self.ends[s] = [k, k];
            self.mark(s);
        } else {
            self.nodes[tail as usize].next = k;
            self.ends[s][1] = k;
        }
        self.in_slots += 1;
    }

    /// `ev` before every event here of its time (the front's later half
    /// spilled back, last first).
    fn prepend(&mut self, ev: Ev) {
        if ev.t < self.base {
            self.lower(ev.t);
        }
        if ev.t - self.base >= Self::HORIZON {
            self.far_first -= 1;
            self.far.push(Reverse((ev.t, self.far_first, ev.tok)));
            return;
        }
        let s = Self::slot(ev.t);
        let head = self.ends[s][0];
        let k = self.node(ev, head);
        if head == NIL {
            self.ends[s] = [k, k];
            self.mark(s);
        } else {
            self.ends[s][0] = k;
        }
        self.in_slots += 1;
    }

    /// The first slot at or after `from` (wrapping) holding events; there
    /// is one.
    fn next_slot(&self, from: usize) -> usize {
        let w = from / 64;
        let here = self.bits[w] & (!0u64 << (from % 64));
        if here != 0 {
            return w * 64 + here.trailing_zeros() as usize;
        }
        let later = self.words & (!1u64).checked_shl(w as u32).unwrap_or(0);
        let w = if later != 0 {
            later.trailing_zeros()
        } else {
            self.words.trailing_zeros()
        } as usize;
        w * 64 + self.bits[w].trailing_zeros() as usize
    }

    /// The slots' events, slot `s` (starting at `base`) into `out` in
    /// (time, order) order, the slot emptied.
    fn take_slot(&mut self, s: usize, out: &mut Vec<Ev>) {
        let start = out.len();
        let mut k = self.ends[s][0];
        while k != NIL {
            let n = self.nodes[k as usize];
            out.push(n.ev);
            self.nodes[k as usize].next = self.free;
            self.free = k;
            k = n.next;
        }
        self.ends[s] = [NIL; 2];
        self.bits[s / 64] &= !(1 << (s % 64));
        if self.bits[s / 64] == 0 {
            self.words &= !(1 << (s / 64));
        }
        self.in_slots -= out.len() - start;
        if out.len() - start > 1 {
            out[start..].sort_by_key(|e| e.t);
        }
    }

    /// Move to `base` every event of `far` now within the horizon (into
    /// slots that are empty: the ones `base` passed).
    fn arrive(&mut self) {
        while let Some(&Reverse((t, _, tok))) = self.far.peek() {
            if t - self.base >= Self::HORIZON {
                break;
            }
            self.far.pop();
            self.append(Ev { t, tok });
        }
    }

    /// The earliest events into `out` in (time, order) order: whole
    /// slots, while fewer than `most` are taken. The wheel holds an event.
    fn take_lowest(&mut self, most: usize, out: &mut Vec<Ev>) {
        debug_assert!(self.len() > 0 && out.is_empty());
        loop {
            if self.in_slots == 0 {
                if !out.is_empty() {
                    return;
                }
                let Some(&Reverse((t, _, _))) = self.far.peek() else {
                    return;
                };
                self.base = t & !(Self::WIDTH - 1);
                self.arrive();
            }
            let from = Self::slot(self.base);
            let s = self.next_slot(from);
            let ahead = (s.wrapping_sub(from) & (Self::SLOTS - 1)) as Nanos;
            if ahead > 0 {
                self.base += ahead << Self::SHIFT;
                if !self.far.is_empty() {
                    self.arrive();
                }
            }
            self.take_slot(s, out);
            if out.len() >= most || self.in_slots == 0 {
                return;
            }
        }
    }

    /// A new `base` at the slot of `t`, before every pending event: every
    /// event taken out in (time, order) order and pushed again.
    #[cold]
    fn lower(&mut self, t: Nanos) {
        let mut all = Vec::with_capacity(self.len());
        while self.in_slots > 0 {
            let from = Self::slot(self.base);
            let s = self.next_slot(from);
            let ahead = (s.wrapping_sub(from) & (Self::SLOTS - 1)) as Nanos;
            self.base += ahead << Self::SHIFT;
            self.take_slot(s, &mut all);
        }
        // every event in `far` is later than every event in the slots
        while let Some(Reverse((t, _, tok))) = self.far.pop() {
            all.push(Ev { t, tok });
        }
        self.reset(t.min(all.first().map_or(t, |e| e.t)));
        for e in all {
            self.push(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventQueue;
    use rand::{Rng, SeedableRng};

    /// Random pushes and pops (many ties in time, now and then a time
    /// far ahead) against a sorted reference, at push rates that keep the
    /// queue small (the front alone), grow it past the wheel's threshold
    /// and shrink it back; in one phase some pushes are earlier than the
    /// last pop (which the engine never asks, and both parts take). Three
    /// time scales: every push within one slot of the wheel and the far
    /// ones beyond any horizon; pushes over some slots and far ones a few
    /// horizons ahead (they come back into the slots); pushes over most
    /// of the wheel (its slots wrap) with the far ones just beyond it.
    #[test]
    fn the_event_queue_pops_in_time_then_insertion_order() {
        let h = super::Wheel::HORIZON;
        for (spread, ties, p_far, far) in [
            (40, 1, 0.02, 1u64 << 40),
            (5_000, 125, 0.05, 3 * h),
            (h * 3 / 4, h / 100, 0.02, h + h / 10),
        ] {
            pops_in_order(spread, ties, p_far, far);
        }
    }

    /// One scale of the test above: pushes `now + [0, spread)` in steps
    /// of `ties` ns, or with chance `p_far` `now + [0, far)`.
    fn pops_in_order(spread: u64, ties: u64, p_far: f64, far: u64) {
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
                let was_heap = q.wheel.len() > 0;
                if rng.gen_bool(p_pop) {
                    reference.sort_unstable();
                    let want = (!reference.is_empty()).then(|| reference.remove(0));
                    let got = q.pop().map(|e| (e.t, e.tok));
                    assert_eq!(
                        got,
                        want.map(|w| (w.0, w.2)),
                        "spread {spread}: phase {phase} step {step}"
                    );
                    if let Some(g) = got {
                        now = g.0;
                        popped += 1;
                    }
                } else {
                    // as the engine's: never earlier than the last popped
                    // (but in `p_early` of the pushes)
                    seq += 1;
                    let t = if rng.gen_bool(p_early) {
                        early_in_heap += (q.wheel.len() > 0) as u32;
                        now.saturating_sub(rng.gen_range(1..40u64))
                    } else if rng.gen_bool(p_far) {
                        now + rng.gen_range(0..far)
                    } else {
                        now + rng.gen_range(0..spread) / ties * ties
                    };
                    q.push(t, step);
                    reference.push((t, seq, step));
                }
                most = most.max(reference.len());
                back_to_sorted += (was_heap && q.wheel.len() == 0) as u32;
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
        assert!(most > 4 * EventQueue::TO_HEAP, "the wheel was used: {most}");
        assert!(back_to_sorted > 0, "and left again");
        assert!(
            early_in_heap > 0,
            "early pushes were made while the wheel held events"
        );
    }
}
