//! Preconditioning: bringing a drive to its starting state without timing,
//! by a computed sequential fill, by replayed random overwrites, or by
//! the derived steady state of [`super::steady`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;

use super::blocks::BState;
use super::layer::{Ftl, FtlCounters};
use super::layout::{Layout, Striped};
use super::steady::{self, AGE_REPLAY_MAX_UNITS};
use super::types::{Mapping, Precondition, PreconditionReport};

impl Ftl {
    /// Bring the device to the configured starting state without timing:
    /// no NAND work is emitted and the counters restart at zero (erase
    /// counts per block are kept: an aged device is worn). What it did is
    /// in [`Ftl::preconditioned`].
    pub fn precondition(&mut self, kind: Precondition, fullness: f64) {
        self.precondition_with(kind, fullness, AGE_REPLAY_MAX_UNITS);
    }

    /// As [`Ftl::precondition`], with `aged` replayed on drives of at most
    /// `replay_max_units` raw units and derived above (tests compare the
    /// two on one drive by lowering it).
    pub fn precondition_with(&mut self, kind: Precondition, fullness: f64, replay_max_units: u64) {
        let n = ((fullness.clamp(0.0, 1.0) * self.lpns as f64) as u64).min(self.lpns as u64) as u32;
        if kind == Precondition::Fresh || (n == 0 && kind != Precondition::AgedInFull) {
            return;
        }
        self.emit = false;
        let page = self.mapping == Mapping::Page;
        let derived =
            (page && kind == Precondition::Aged && self.geo.raw_units() > replay_max_units)
                .then(|| steady::derive(self, n, replay_max_units))
                .flatten();
        let report = match derived {
            Some(r) => r,
            None if kind == Precondition::AgedInFull => {
                self.fill_then_age(self.lpns, if page { n } else { 0 })
            }
            None => self.fill_and_age(n, page && kind != Precondition::Full),
        };
        // (a derived state sets blocks' valid counts directly)
        self.recount_plane_valid();
        self.emit = true;
        self.ops.clear();
        self.counters = FtlCounters::default();
        self.preconditioned = report;
    }

    /// Write `0..n` sequentially, then (if `age`) overwrite that region at
    /// random until write amplification settles.
    pub(super) fn fill_and_age(&mut self, n: u32, age: bool) -> PreconditionReport {
        self.fill_then_age(n, if age { n } else { 0 })
    }

    /// Write `0..fill` sequentially, then (if `n` > 0) overwrite `0..n`
    /// at random until write amplification settles.
    fn fill_then_age(&mut self, fill: u32, n: u32) -> PreconditionReport {
        let computed = self.fill_striped(fill);
        if !computed {
            for lpn in 0..fill {
                self.write(lpn);
            }
        }
        let filled = self.counters;
        if n > 0 {
            let chunk = (n / 8).max(1) as u64;
            let mut prev = f64::NAN;
            let mut total = 0u64;
            loop {
                let (h0, m0) = (self.counters.host_units, self.counters.moved_units);
                for _ in 0..chunk {
                    let lpn = self.rng.gen_range(0..n);
                    self.write(lpn);
                }
                total += chunk;
                let wa = (chunk + self.counters.moved_units - m0) as f64
                    / (self.counters.host_units - h0) as f64;
                let settled = total >= n as u64 && (wa - prev).abs() <= 0.01 * wa;
                if settled || total >= 6 * n as u64 {
                    break;
                }
                prev = wa;
            }
        }
        let c = self.counters;
        PreconditionReport {
            units_written: fill as u64 + c.host_units - filled.host_units,
            erases: c.erases,
            units_moved: c.moved_units,
            units_replayed: c.host_units - if computed { fill as u64 } else { 0 },
            derived: false,
        }
    }

    /// The state sequential writes of `0..n` leave on a fresh page-mapped
    /// drive, computed instead of replayed: the mapping is the
    /// [`Striped`] layout, each plane's first blocks are full (closed
    /// when their last unit was written) and the next one open. Returns
    /// false (nothing done) if the drive is not fresh or a plane would
    /// run short of free blocks (then the caller replays the writes).
    fn fill_striped(&mut self, n: u32) -> bool {
        if self.mapping != Mapping::Page || self.clock != 0 || n == 0 {
            return false;
        }
        let np = self.order.len() as u64;
        let (upp, upb, bpp) = (
            self.geo.units_per_page as u64,
            self.upb as u64,
            self.geo.blocks_per_plane as u64,
        );
        let full_pages = n as u64 / upp;
        let rem = n as u64 % upp;
        let units_of = |k: u64| {
            let pages = full_pages / np + u64::from(k < full_pages % np);
            pages * upp
                + if rem > 0 && k == full_pages % np {
                    rem
                } else {
                    0
                }
        };
        for k in 0..np {
            if units_of(k).div_ceil(upb) + self.threshold as u64 > bpp {
                return false;
            }
        }
        for k in 0..np {
            let plane = self.order[k as usize];
            let units = units_of(k);
            let used = units.div_ceil(upb);
            for j in 0..used {
                let b = (plane as u64 * bpp + j) as u32;
                let filled = (units - j * upb).min(upb);
                let blk = &mut self.blocks[b as usize];
                blk.valid = filled as u32;
                blk.next_unit = filled as u32;
                blk.virt = true;
                if filled == upb {
                    // the clock when its last unit was written
                    let u = j * upb + upb - 1;
                    let lpn = ((u / upp) * np + k) * upp + u % upp;
                    blk.state = BState::Closed;
                    blk.closed_at = lpn + 1;
                } else {
                    blk.state = BState::Open;
                    self.open_user[plane as usize] = b;
                }
            }
            self.rebuild_free(plane);
        }
        self.cursor = (full_pages % np) as usize;
        self.recount_plane_valid();
        self.clock = n as u64;
        self.mapped = n as u64;
        self.counters.host_units = n as u64;
        self.layout = Layout::Striped(Striped::new(
            n,
            upp as u32,
            upb as u32,
            bpp as u32,
            self.order.clone(),
        ));
        true
    }

    /// Count each plane's valid units from its blocks (after a
    /// precondition that set them directly).
    pub(super) fn recount_plane_valid(&mut self) {
        let bpp = self.geo.blocks_per_plane as usize;
        for (p, v) in self.plane_valid.iter_mut().enumerate() {
            *v = self.blocks[p * bpp..(p + 1) * bpp]
                .iter()
                .map(|b| b.valid)
                .sum();
        }
    }

    /// Rebuild `plane`'s free pool and greedy buckets from its blocks'
    /// states.
    pub(super) fn rebuild_free(&mut self, plane: u32) {
        let bpp = self.geo.blocks_per_plane;
        let lo = plane * bpp;
        let mut keys = Vec::new();
        for b in lo..lo + bpp {
            if self.blocks[b as usize].state == BState::Free {
                keys.push(Reverse(self.free_key(b)));
            }
        }
        self.free[plane as usize] = BinaryHeap::from(keys);
        if let Some(bk) = &mut self.buckets {
            for b in lo..lo + bpp {
                bk.remove(&mut self.blocks, plane, b);
                let blk = self.blocks[b as usize];
                if blk.state == BState::Closed {
                    bk.insert(&mut self.blocks, plane, b, blk.valid);
                }
            }
        }
    }
}
