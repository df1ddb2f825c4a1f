//! The disk's command queue: the host's commands in arrival order, taken
//! from anywhere in it by the scheduler, and the write cache's destages
//! indexed by cylinder, so the scheduler finds the destages near the head
//! without visiting the others (see `sched`).

use std::collections::BTreeMap;

use crate::device::Nanos;

/// The request index of a media operation that serves no host command: a
/// write cache's destage.
pub(super) const NOREQ: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
pub(super) struct MOp {
    pub(super) lba: u64,
    pub(super) n: u64,
    pub(super) write: bool,
    pub(super) req: u32,
    pub(super) arrival: Nanos,
    /// Where the first sector is, and when within a revolution it passes
    /// the head (computed once, at queueing).
    pub(super) cyl: u64,
    pub(super) head: u64,
    pub(super) phase: u64,
    /// Arrival rank over both classes (set by [`Queue::push`]): the
    /// schedulers break ties by it.
    pub(super) seq: u64,
}

/// Where a queued operation is, for [`Queue::take`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Slot {
    /// A host command at this position of the host queue.
    Host(usize),
    /// A destage under this key of the destage index.
    Destage((u64, u64)),
}

/// The drive's media queue. Host commands (at most the NCQ depth) are
/// kept in arrival order; destages (a write cache holds thousands) in a
/// B-tree keyed by (cylinder, arrival rank), or by arrival rank alone for
/// a first-come drive.
#[derive(Clone, Debug, Default)]
pub(super) struct Queue {
    pub(super) host: MQueue,
    pub(super) destages: BTreeMap<(u64, u64), MOp>,
    seq: u64,
    by_arrival: bool,
}

impl Queue {
    /// A queue whose destages are ordered by arrival (`by_arrival`, for a
    /// first-come drive) or by cylinder.
    pub(super) fn new(by_arrival: bool) -> Self {
        Self {
            by_arrival,
            ..Self::default()
        }
    }

    pub(super) fn push(&mut self, mut op: MOp) {
        op.seq = self.seq;
        self.seq += 1;
        if op.req == NOREQ {
            let k = if self.by_arrival { 0 } else { op.cyl };
            self.destages.insert((k, op.seq), op);
        } else {
            self.host.push(op);
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.host.is_empty() && self.destages.is_empty()
    }

    /// A host command waits.
    pub(super) fn host_waits(&self) -> bool {
        !self.host.is_empty()
    }

    /// Every queued operation, host commands first.
    pub(super) fn iter(&self) -> impl Iterator<Item = (Slot, &MOp)> {
        self.host
            .iter()
            .map(|(i, op)| (Slot::Host(i), op))
            .chain(self.destages.iter().map(|(&k, op)| (Slot::Destage(k), op)))
    }

    /// The earliest arrival of either class.
    pub(super) fn first(&self) -> Option<Slot> {
        let h = self
            .host
            .iter()
            .next()
            .map(|(i, op)| (op.seq, Slot::Host(i)));
        let d = if self.by_arrival {
            self.destages.iter().next()
        } else {
            self.destages.iter().min_by_key(|(_, op)| op.seq)
        }
        .map(|(&k, op)| (op.seq, Slot::Destage(k)));
        h.into_iter()
            .chain(d)
            .min_by_key(|&(s, _)| s)
            .map(|(_, i)| i)
    }

    #[cfg(test)]
    pub(super) fn get(&self, s: Slot) -> &MOp {
        match s {
            Slot::Host(i) => self.host.get(i),
            Slot::Destage(k) => self.destages.get(&k).expect("a queued destage"),
        }
    }

    pub(super) fn take(&mut self, s: Slot) -> MOp {
        match s {
            Slot::Host(i) => self.host.take(i),
            Slot::Destage(k) => self.destages.remove(&k).expect("a queued destage"),
        }
    }
}

/// The host's commands in arrival order, with O(1)
/// removal from anywhere: a taken slot is left empty, and the holes are
/// squeezed out (order kept) once they outnumber the live entries. The
/// order matters (the schedulers break ties by position), and a write
/// cache's destages queued thousands here before they had their own
/// index, so `Vec::remove`'s shift of every
/// later entry was most of a random-write run's time. Hand-written: the
/// standard collections either shift (`Vec`, `VecDeque`) or do not keep
/// positions comparable (`swap_remove`, slabs).
#[derive(Clone, Debug, Default)]
pub(super) struct MQueue {
    slots: Vec<Option<MOp>>,
    /// Slots before `head` are all empty.
    head: usize,
    live: usize,
}

impl MQueue {
    pub(super) fn push(&mut self, op: MOp) {
        self.slots.push(Some(op));
        self.live += 1;
    }

    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The live entries with their positions, in arrival order (positions
    /// grow with arrival, so ordering by them is ordering by arrival).
    pub(super) fn iter(&self) -> impl Iterator<Item = (usize, &MOp)> {
        self.slots[self.head..]
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().map(|op| (self.head + i, op)))
    }

    #[cfg(test)]
    pub(super) fn get(&self, i: usize) -> &MOp {
        self.slots[i].as_ref().expect("a live entry")
    }

    /// Take the entry at position `i` (from `iter`); positions of the
    /// others stay valid until the next `take`.
    pub(super) fn take(&mut self, i: usize) -> MOp {
        let op = self.slots[i].take().expect("a live entry");
        self.live -= 1;
        if self.live == 0 {
            self.slots.clear();
            self.head = 0;
        } else if self.slots.len() > 64 && self.slots.len() > 2 * self.live {
            self.slots.retain(Option::is_some);
            self.head = 0;
        } else {
            while self.slots[self.head].is_none() {
                self.head += 1;
            }
        }
        op
    }
}

#[cfg(test)]
mod tests {
    use super::{MOp, MQueue};

    fn op(lba: u64) -> MOp {
        MOp {
            lba,
            n: 1,
            write: true,
            req: 0,
            arrival: lba,
            cyl: 0,
            head: 0,
            phase: 0,
            seq: lba,
        }
    }

    /// Taking from anywhere keeps the others in arrival order, across the
    /// squeezes that drop the holes, exactly as `Vec::remove` would.
    #[test]
    fn the_queue_keeps_arrival_order_through_takes() {
        let mut q = MQueue::default();
        let mut model: Vec<u64> = Vec::new();
        let mut next = 0u64;
        let mut x = 12345u64;
        for step in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // grow for 2,500 steps, then mostly drain (the squeezes happen there)
            let push = if step < 2500 {
                !(x >> 33).is_multiple_of(3)
            } else {
                (x >> 33).is_multiple_of(4)
            };
            if model.is_empty() || push || step < 300 {
                q.push(op(next));
                model.push(next);
                next += 1;
            } else {
                let k = (x >> 20) as usize % model.len();
                let (pos, o) = q.iter().nth(k).expect("as many entries as the model");
                assert_eq!(o.lba, model[k]);
                assert_eq!(q.take(pos).lba, model.remove(k));
            }
            let got: Vec<u64> = q.iter().map(|(_, o)| o.lba).collect();
            assert_eq!(got, model, "step {step}");
            assert_eq!(q.is_empty(), model.is_empty());
        }
        assert!(
            q.slots.len() <= 2 * q.live.max(64),
            "holes are squeezed out"
        );
    }
}
