//! The run loop's pending events, earliest (time, insertion order) first
//! ([`EventQueue`]): a sorted run while they are few, a binary heap
//! beyond.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use storlab_model::Nanos;

/// A pending event: its time and its token. Its insertion sequence, which
/// breaks ties in time, is its place in the sorted form (an event goes in
/// after every pending event of its time), and is written down only in
/// the heap form ([`HeapEv`]): 16 bytes compared by one number where a
/// (time, sequence) key made 32 bytes compared by two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ev {
    pub(crate) t: Nanos,
    pub(crate) tok: u64,
}

/// An event in the heap form: (time, insertion sequence) as one number,
/// time in the high half, and the token. Ordered by the key alone (keys
/// are unique: the sequence number is), so the heap's sifts compare one
/// number, not a tuple.
#[derive(Clone, Copy, Debug)]
struct Keyed {
    key: u128,
    tok: u64,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// The heap form's element: earliest key on top.
type HeapEv = Reverse<Keyed>;

/// The pending events, earliest (time, insertion order) first.
///
/// A run has few events pending at once (about 8 on an NVM array under 16
/// threads, about 30 on a flash drive at depth 32), and a new event most
/// often lands among the latest: while they are few they are kept sorted,
/// from `head` on, so a pop is a read and a push an insertion (found from
/// the back while they are very few; beyond, from the end of the half it
/// falls in, the events on that side moved by one as it goes), with no
/// sifting through a heap's levels; an event goes in after every pending event of its time,
/// so ties leave in insertion order with no sequence number kept. Past
/// [`EventQueue::TO_HEAP`] pending events an insertion would move too many
/// of them, and they go into `std`'s binary heap, numbered in their order
/// (and every later push after them), and back once fewer than
/// [`EventQueue::TO_SORTED`] are left (each form keeps its allocation for
/// the next time). The events come out in the same order whichever form
/// holds them. (The sorted form is written by hand: no collection in `std`
/// keeps a small sorted run with pops from the front.)
#[derive(Default)]
pub(crate) struct EventQueue {
    /// Sorted form: `v[head..]` in increasing (time, insertion) order
    /// (`v[..head]` popped).
    v: Vec<Ev>,
    head: usize,
    /// The heap form (`v` empty meanwhile).
    heap: BinaryHeap<HeapEv>,
    /// The heap form's allocation while the sorted form is in use.
    heap_spare: Vec<HeapEv>,
    /// Insertion sequence of the heap form's events.
    seq: u64,
    in_heap: bool,
}

impl EventQueue {
    /// Pending events above which the sorted form becomes a heap.
    const TO_HEAP: usize = 128;
    /// Pending events up to which a push looks for its place from the
    /// back, one event at a time (from the nearer end beyond).
    const SCAN: usize = 16;
    /// Pending events below which the heap becomes sorted again.
    const TO_SORTED: usize = 64;
    /// Popped slots kept at the front of the sorted form before they are
    /// dropped (one move of the pending events every this many pops).
    const COMPACT: usize = 256;

    #[inline]
    pub(crate) fn push(&mut self, t: Nanos, tok: u64) {
        let ev = Ev { t, tok };
        let len = self.v.len();
        if self.in_heap {
            self.push_heap(ev);
        } else if len - self.head > Self::SCAN {
            self.push_among_many(ev);
        } else if self.head > 0 && t < self.v[self.head].t {
            // earlier than every pending event: into the last popped slot
            self.head -= 1;
            self.v[self.head] = ev;
        } else {
            // insertion from the back: move the later events up one
            self.v.push(ev);
            let mut k = len;
            while k > self.head && self.v[k - 1].t > t {
                self.v[k] = self.v[k - 1];
                k -= 1;
            }
            self.v[k] = ev;
        }
    }

    /// Push into the heap form, numbered after every earlier push. (Out
    /// of line, as the conversions: rare, and the common pushes keep
    /// fewer registers live without them.)
    #[cold]
    #[inline(never)]
    fn push_heap(&mut self, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse(Keyed {
            key: (ev.t as u128) << 64 | self.seq as u128,
            tok: ev.tok,
        }));
    }

    /// [`Self::push`] into the sorted form with more than [`Self::SCAN`]
    /// events pending.
    fn push_among_many(&mut self, ev: Ev) {
        let len = self.v.len();
        if len - self.head >= Self::TO_HEAP {
            self.switch_to_heap(ev);
            return;
        }
        if ev.t >= self.v[len - 1].t {
            // not earlier than any pending event
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
            self.v.push(ev);
            let mut k = len;
            while k > self.head && self.v[k - 1].t > ev.t {
                self.v[k] = self.v[k - 1];
                k -= 1;
            }
            self.v[k] = ev;
        }
    }

    /// Too many pending for the sorted form: they go into the heap,
    /// numbered in their order (events in increasing order already form a
    /// heap), and `ev` after them.
    #[cold]
    #[inline(never)]
    fn switch_to_heap(&mut self, ev: Ev) {
        let mut h = std::mem::take(&mut self.heap_spare);
        for e in &self.v[self.head..] {
            self.seq += 1;
            h.push(Reverse(Keyed {
                key: (e.t as u128) << 64 | self.seq as u128,
                tok: e.tok,
            }));
        }
        self.v.clear();
        self.head = 0;
        self.heap = BinaryHeap::from(h);
        self.in_heap = true;
        self.push_heap(ev);
    }

    /// The earliest event, taken out.
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Ev> {
        if self.in_heap {
            return self.pop_heap();
        }
        let ev = *self.v.get(self.head)?;
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

    /// [`Self::pop`] from the heap form.
    #[cold]
    #[inline(never)]
    fn pop_heap(&mut self) -> Option<Ev> {
        let Reverse(Keyed { key, tok }) = self.heap.pop()?;
        if self.heap.len() < Self::TO_SORTED {
            // (ascending in `Reverse`, that is decreasing keys: taken
            // from the back, increasing)
            let mut h = std::mem::take(&mut self.heap).into_sorted_vec();
            self.v.clear();
            self.head = 0;
            self.v
                .extend(h.iter().rev().map(|&Reverse(Keyed { key: k, tok })| Ev {
                    t: (k >> 64) as Nanos,
                    tok,
                }));
            h.clear();
            self.heap_spare = h;
            self.in_heap = false;
        }
        Some(Ev {
            t: (key >> 64) as Nanos,
            tok,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::EventQueue;
    use rand::{Rng, SeedableRng};

    /// Random pushes and pops (many ties in time, now and then a time
    /// far ahead) against a sorted reference, at push rates that keep the
    /// queue small (sorted form), grow it past the heap threshold and
    /// shrink it back; in one phase some pushes are earlier than the last
    /// pop (which the engine never asks, and both forms take).
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
                let was_heap = q.in_heap;
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
                        early_in_heap += q.in_heap as u32;
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
                back_to_sorted += (was_heap && !q.in_heap) as u32;
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
            "the heap form was used: {most}"
        );
        assert!(back_to_sorted > 0, "and left again");
        assert!(early_in_heap > 0, "early pushes reached the heap form");
    }
}
