//! Erase blocks: their state, and greedy collection's index of the
//! reclaimable ones by valid count.

use super::types::{try_filled, NONE};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BState {
    Free,
    Open,
    Closed,
    /// A victim being collected a few pages at a time (`gc_pacing`):
    /// in no greedy bucket, not a victim again.
    Collecting,
}

/// An erase block's state. The greedy buckets' links live here too, not
/// in arrays of their own: a host write's invalidation changes the valid
/// count and the bucket of a block at random, and one cache line for both
/// is one miss instead of four.
#[derive(Clone, Copy, Debug)]
pub(super) struct Block {
    pub(super) valid: u32,
    pub(super) erases: u32,
    pub(super) next_unit: u32,
    pub(super) state: BState,
    /// Its contents are still the layout's (not erased since
    /// preconditioning).
    pub(super) virt: bool,
    pub(super) closed_at: u64,
    /// Greedy buckets: the next and previous block of its bucket, and
    /// its bucket (NONE when in none).
    pub(super) bnext: u32,
    pub(super) bprev: u32,
    pub(super) bat: u32,
}

/// Greedy collection's index: per plane, the reclaimable closed blocks in
/// buckets by valid count (intrusive doubly linked lists through
/// [`Block`]), and the lowest bucket that may be non-empty, so a victim is
/// found without scanning the plane.
///
/// A bucket holds the blocks of `2^shift` consecutive valid counts, and
/// the victim is the least key of its plane's lowest non-empty bucket,
/// so the choice is the same at any width. Wider buckets trade the lists'
/// upkeep for that search: a host write's invalidation moves its block to
/// another bucket only when its count crosses a multiple of the width
/// (relinking touches the block's two neighbours and the new bucket's
/// head: three cache lines of a table far larger than the caches), and a
/// victim search walks a bucket that many times fuller. See
/// [`Buckets::shift_for`].
pub(super) struct Buckets {
    pub(super) upb: u32,
    pub(super) shift: u32,
    /// Buckets per plane.
    pub(super) nb: u32,
    pub(super) head: Vec<u32>,
    pub(super) low: Vec<u32>,
}

impl Buckets {
    /// `None` where the allocation fails (the sizes come from the user).
    pub(super) fn new(planes: u32, upb: u32, bpp: u32) -> Option<Self> {
        let shift = Self::shift_for(upb, bpp);
        let nb = ((upb.max(1) - 1) >> shift) + 1;
        Some(Buckets {
            upb,
            shift,
            nb,
            head: try_filled(planes as usize * nb as usize, NONE).ok()?,
            low: try_filled(planes as usize, nb).ok()?,
        })
    }

    /// The bucket width (log2) for `bpp` blocks of `upb` units per plane:
    /// near the width `w` that costs a host write the fewest cache lines.
    /// Relinking costs three lines once per `w` invalidations. A plane
    /// collects a victim about every `upb / 6` of its host writes (the
    /// reclaimable share of a greedy victim at typical spare space), and
    /// its closed blocks spread over about the top fifth of the counts, so
    /// a bucket holds about `5 w bpp / upb` blocks, two lines each to
    /// search: `3 / w + 60 w bpp / upb^2` lines per write, least at
    /// `w^2 = upb^2 / (20 bpp)` (4 for `sata-ssd`'s 512-unit blocks up to
    /// about 120 GB, 2 up to about 480 GB, 1 above). Speed only: every width picks the same
    /// victim.
    pub(super) fn shift_for(upb: u32, bpp: u32) -> u32 {
        let r =
            (upb as u128 * upb as u128 / (20 * bpp.max(1) as u128)).min(u64::MAX as u128) as u64;
        if r < 4 {
            0
        } else {
            ((63 - r.leading_zeros()) / 2).min(16)
        }
    }

    /// The bucket of a block with `valid` units (`valid < upb`).
    #[inline]
    pub(super) fn bucket(&self, valid: u32) -> u32 {
        valid >> self.shift
    }

    #[inline]
    pub(super) fn insert(&mut self, blocks: &mut [Block], plane: u32, b: u32, valid: u32) {
        if valid >= self.upb {
            return;
        }
        debug_assert_eq!(
            blocks[b as usize].bat, NONE,
            "block {b} twice in the buckets"
        );
        let c = self.bucket(valid);
        let h = (plane * self.nb + c) as usize;
        let old = self.head[h];
        let blk = &mut blocks[b as usize];
        blk.bnext = old;
        blk.bprev = NONE;
        blk.bat = c;
        if old != NONE {
            blocks[old as usize].bprev = b;
        }
        self.head[h] = b;
        let l = &mut self.low[plane as usize];
        *l = (*l).min(c);
    }

    #[inline]
    pub(super) fn remove(&mut self, blocks: &mut [Block], plane: u32, b: u32) {
        let blk = &mut blocks[b as usize];
        let v = blk.bat;
        if v == NONE {
            return;
        }
        let (n, p) = (blk.bnext, blk.bprev);
        blk.bat = NONE;
        if p == NONE {
            self.head[(plane * self.nb + v) as usize] = n;
        } else {
            blocks[p as usize].bnext = n;
        }
        if n != NONE {
            blocks[n as usize].bprev = p;
        }
    }

    /// Closed block `b` now holds `valid` units (fewer than before): move
    /// it to that count's bucket unless it is there already.
    #[inline]
    pub(super) fn lowered(&mut self, blocks: &mut [Block], plane: u32, b: u32, valid: u32) {
        if valid < self.upb && blocks[b as usize].bat == self.bucket(valid) {
            return;
        }
        self.remove(blocks, plane, b);
        self.insert(blocks, plane, b, valid);
    }

    /// The greedy victim of `plane`: the block with the fewest valid units,
    /// ties to the earliest closed then the lowest number, except that
    /// among empty blocks the lowest number wins (as the scan it replaces).
    pub(super) fn victim(&mut self, plane: u32, blocks: &[Block]) -> Option<u32> {
        let p = plane as usize;
        while self.low[p] < self.nb {
            let c = self.low[p];
            let mut b = self.head[(plane * self.nb + c) as usize];
            if b == NONE {
                self.low[p] += 1;
                continue;
            }
            let key = |b: u32| {
                let blk = &blocks[b as usize];
                (blk.valid, if blk.valid == 0 { 0 } else { blk.closed_at }, b)
            };
            let mut best = key(b);
            while b != NONE {
                best = best.min(key(b));
                b = blocks[b as usize].bnext;
            }
            return Some(best.2);
        }
        None
    }
}
