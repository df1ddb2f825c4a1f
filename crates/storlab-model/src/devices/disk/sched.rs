//! Shortest positioning time first over the drive's queue: the host's
//! commands and the write cache's destages, each ranked by the seek and
//! rotational wait from where the head is (Jacobson and Wilkes, "Disk
//! scheduling algorithms based on rotational position", HP Labs
//! HPL-CSP-91-7, 1991; Worthington, Ganger and Patt, "Scheduling
//! algorithms for modern disk drives", SIGMETRICS 1994, whose SPTF
//! ranks every queued request by positioning time).
//!
//! A write cache queues thousands of destages, and ranking each at every
//! media decision made a random-write run's cost grow with the cache.
//! The destages are indexed by cylinder ([`Queue`]), and the search
//! walks outward from the head's cylinder on both sides in order of
//! cylinder distance: a candidate's positioning time is at least its
//! seek (the rotational wait is never negative), and the seek grows with
//! the distance, so once the seek at some distance exceeds the best
//! positioning time found, nothing farther can win and the walk stops.
//! It picks what ranking every destage picks, ties included (by arrival
//! rank); a test compares the two on random queues.

use super::geometry::Geometry;
use super::queue::{MOp, Queue, Slot};
use crate::device::Nanos;

/// Where the head is and what moving it costs.
#[derive(Clone, Copy)]
pub(super) struct Arm<'a> {
    pub(super) geo: &'a Geometry,
    pub(super) cyl: u64,
    pub(super) head: u64,
    pub(super) write_settle_ns: u64,
    pub(super) head_switch_ns: u64,
}

impl Arm<'_> {
    /// The seek to cylinder distance `d` for an operation that writes or
    /// not (a write settles longer after a seek).
    #[inline]
    fn seek(&self, d: u64, write: bool) -> u64 {
        if d == 0 {
            return 0;
        }
        self.geo.seek_ns(d) + if write { self.write_settle_ns } else { 0 }
    }

    /// Positioning time for `op` starting at `t`: (seek, rotational wait).
    #[inline]
    pub(super) fn positioning(&self, t: Nanos, op: &MOp) -> (u64, u64) {
        let d = op.cyl.abs_diff(self.cyl);
        let seek = if d > 0 {
            self.seek(d, op.write)
        } else if op.head != self.head {
            self.head_switch_ns
        } else {
            0
        };
        let rev = self.geo.rev_ns;
        let rot = (op.phase + rev - (t + seek) % rev) % rev;
        (seek, rot)
    }

    /// (positioning time, arrival rank): the order SPTF takes them in.
    #[inline]
    fn rank(&self, t: Nanos, op: &MOp) -> (u64, u64) {
        let (s, r) = self.positioning(t, op);
        (s + r, op.seq)
    }

    /// The host command, or unless `host_only` the destage, with the
    /// shortest positioning time at `t` (the earlier arrival on a tie).
    pub(super) fn pick(&self, q: &Queue, t: Nanos, host_only: bool) -> Option<Slot> {
        let mut best: Option<((u64, u64), Slot)> = None;
        for (i, op) in q.host.iter() {
            let k = self.rank(t, op);
            if best.is_none_or(|(b, _)| k < b) {
                best = Some((k, Slot::Host(i)));
            }
        }
        if host_only {
            return best.map(|(_, s)| s);
        }
        let key = (self.cyl, 0);
        let mut up = q.destages.range(key..).peekable();
        let mut down = q.destages.range(..key).rev().peekable();
        // the seek of the last distance seen (destages on one cylinder
        // share it)
        let mut last: Option<(u64, u64)> = None;
        loop {
            let du = up.peek().map(|(_, op)| op.cyl - self.cyl);
            let dd = down.peek().map(|(_, op)| self.cyl - op.cyl);
            let (d, (&k, op)) = match (du, dd) {
                (Some(u), Some(d)) if d < u => (d, down.next().expect("peeked")),
                (Some(u), _) => (u, up.next().expect("peeked")),
                (None, Some(d)) => (d, down.next().expect("peeked")),
                (None, None) => break,
            };
            let seek = match last {
                Some((ld, s)) if ld == d => s,
                _ => {
                    let s = self.seek(d, true);
                    last = Some((d, s));
                    s
                }
            };
            // everything from here on lies at least this far away
            if best.is_some_and(|((c, _), _)| seek > c) {
                break;
            }
            let r = self.rank(t, op);
            if best.is_none_or(|(b, _)| r < b) {
                best = Some((r, Slot::Destage(k)));
            }
        }
        best.map(|(_, s)| s)
    }

    /// [`Self::pick`] by ranking every queued operation: the reference the
    /// index is tested against.
    #[cfg(test)]
    pub(super) fn pick_by_full_scan(&self, q: &Queue, t: Nanos, host_only: bool) -> Option<Slot> {
        q.iter()
            .filter(|(s, _)| !host_only || matches!(s, Slot::Host(_)))
            .min_by_key(|(_, op)| self.rank(t, op))
            .map(|(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::queue::NOREQ;
    use super::*;
    use crate::config::PresetStore;
    use crate::system::SystemConfig;

    /// A small random number generator (Knuth's MMIX LCG), deterministic.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 17) % n.max(1)
        }
    }

    /// Random queues on `preset`'s disk: destages and host commands over
    /// `span` sectors from `base`, taken one at a time in SPTF order while
    /// more arrive; at every decision the indexed search picks what
    /// ranking every operation picks.
    fn agree(preset: &str, span_bytes: u64, base_bytes: u64, seed: u64) -> u64 {
        let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &[]).expect("preset");
        let dc = cfg.disk.clone().expect("a disk");
        let geo = Geometry::new(&dc, cfg.device.capacity_bytes).expect("geometry");
        let sector = dc.sector_bytes;
        let (span, base) = (span_bytes / sector, base_bytes / sector);
        let mut rng = Lcg(seed);
        let mut q = Queue::new(false);
        let mut t: Nanos = rng.next(1 << 40);
        let mut pos = (0u64, 0u64);
        let mut hosts = 0u32;
        let mut checked = 0;
        for step in 0..6000u64 {
            // fill to a few thousand destages, then drain with arrivals
            let arrivals = if step < 1500 { 3 } else { rng.next(2) };
            for _ in 0..arrivals {
                let n = 1 + rng.next(64);
                let lba = base + rng.next(span.saturating_sub(n).max(1));
                let host = rng.next(8) == 0 && hosts < 32;
                let loc = geo.locate(lba);
                q.push(MOp {
                    lba,
                    n,
                    write: !host || rng.next(2) == 0,
                    req: if host { hosts } else { NOREQ },
                    arrival: t,
                    cyl: loc.cyl,
                    head: loc.head,
                    phase: geo.phase(&loc),
                    seq: 0,
                });
                hosts += host as u32;
            }
            if q.is_empty() {
                continue;
            }
            let arm = Arm {
                geo: &geo,
                cyl: pos.0,
                head: pos.1,
                write_settle_ns: dc.write_settle_ns,
                head_switch_ns: dc.head_switch_ns,
            };
            let host_only = q.host_waits() && rng.next(4) == 0;
            let got = arm.pick(&q, t, host_only).expect("non-empty");
            let want = arm.pick_by_full_scan(&q, t, host_only).expect("non-empty");
            assert_eq!(
                got,
                want,
                "{preset} step {step}: the index picked {:?}, the full scan {:?}",
                q.get(got),
                q.get(want)
            );
            checked += 1;
            let op = q.take(got);
            if op.req != NOREQ {
                hosts -= 1;
            }
            let (s, r) = arm.positioning(t, &op);
            let (x, end) = geo.stream(op.lba, op.n);
            t += s + r + x + rng.next(3) * rng.next(2_000_000);
            pos = (end.cyl, end.head);
        }
        checked
    }

    #[test]
    fn the_cylinder_index_picks_what_a_full_scan_picks() {
        let g = 1u64 << 30;
        // a random-write footprint (the XDD studies' 55 GB), the whole
        // disk, and a small range where many share a cylinder (ties)
        for (span, base, seed) in [(55 * g, 0, 1), (900 * g, 0, 2), (8 << 20, 300 * g, 3)] {
            assert!(agree("hdd-7200", span, base, seed) > 5000);
        }
    }
}
