//! The FTL's mapping: logical to physical and back (the tables, else the
//! layout), host writes and TRIM, and the valid counts they change.

use super::blocks::BState;
use super::layer::Ftl;
use super::layout;
use super::types::{Mapping, NandKind, NandOp, NONE};

impl Ftl {
    /// The mapping of `lpn`: the table's entry, else the layout's.
    #[inline]
    pub(super) fn l2p_get(&self, lpn: u32) -> u32 {
        match self.l2p.raw(lpn) {
            Some(p) => p,
            None => self.layout.ppa(lpn),
        }
    }

    /// The logical unit at `ppa`: the reverse table's entry if the
    /// logical unit's own entry still points here, else the layout's if
    /// the block still holds the layout's contents and that logical unit
    /// has not been written, trimmed or moved since.
    ///
    /// Reverse entries are written when a unit is programmed and never
    /// cleared: a unit that is overwritten, trimmed or moved is made
    /// invalid by its logical unit's entry alone (which then names another
    /// unit, or none), so a host write changes one random entry, not two
    /// (the reverse one was a cache miss and, in 4 KB pages, a page walk
    /// per write), and garbage collection, which reads a victim's reverse
    /// entries and the entries of the logical units they name anyway,
    /// checks each against the other.
    #[inline]
    pub(super) fn p2l_get(&self, ppa: u32) -> u32 {
        if let Some(l) = self.p2l.raw(ppa) {
            return if l != NONE && self.l2p.raw(l) == Some(ppa) {
                l
            } else {
                NONE
            };
        }
        if !self.blocks[self.upb_div.div(ppa) as usize].virt {
            return NONE;
        }
        let l = self.layout.lpn(ppa);
        if l != NONE && self.l2p.raw(l).is_none() {
            l
        } else {
            NONE
        }
    }

    /// Bring the mapping entry of `lpn` into cache ahead of a host write
    /// or read of it (a hint: changes nothing).
    #[inline]
    pub fn prefetch(&self, lpn: u32) {
        if self.mapping == Mapping::Page && lpn < self.lpns {
            self.l2p.prefetch(lpn);
            self.layout.prefetch(lpn);
        }
    }

    /// Bring into cache what a host write of `lpn` changes besides its
    /// own mapping entry: the block of the unit it holds now (a hint:
    /// changes nothing). It reads that mapping entry, so call it once an
    /// earlier [`Self::prefetch`] has brought it.
    #[inline]
    pub fn prefetch_overwrite(&self, lpn: u32) {
        if self.mapping == Mapping::Page && lpn < self.lpns {
            let old = self.l2p_get(lpn);
            if old != NONE {
                layout::prefetch(&self.blocks[self.block_of(old) as usize]);
            }
        }
    }

    #[inline]
    pub(super) fn l2p_set(&mut self, lpn: u32, ppa: u32) {
        if ppa == NONE && !self.layout.covers(lpn) {
            self.l2p.clear(lpn);
        } else {
            self.l2p.set(lpn, ppa);
        }
    }

    #[inline]
    pub(super) fn p2l_set(&mut self, ppa: u32, lpn: u32) {
        if lpn == NONE {
            self.p2l.clear(ppa);
        } else {
            self.p2l.set(ppa, lpn);
        }
    }

    /// Physical unit of logical unit `lpn`, if it holds data.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<u32> {
        match self.mapping {
            Mapping::Page => {
                let p = self.l2p_get(lpn);
                (p != NONE).then_some(p)
            }
            Mapping::InPlace => Some(self.inplace_ppa(lpn)),
        }
    }

    /// In-place address: units stripe over planes in `order`, then fill
    /// each plane's blocks in turn.
    #[inline]
    fn inplace_ppa(&self, lpn: u32) -> u32 {
        let np = self.geo.planes;
        let plane = self.order[(lpn % np) as usize];
        let idx = lpn / np;
        let block = plane * self.geo.blocks_per_plane + idx / self.upb;
        block * self.upb + idx % self.upb
    }

    /// Global block of a physical unit.
    #[inline]
    pub fn block_of(&self, ppa: u32) -> u32 {
        self.upb_div.div(ppa)
    }

    /// Page (within its block) of a physical unit.
    #[inline]
    pub fn page_of(&self, ppa: u32) -> u32 {
        self.upp_div.div(self.upb_div.rem(ppa))
    }

    /// Host write of logical unit `lpn`; returns its new physical unit.
    pub fn write(&mut self, lpn: u32) -> u32 {
        debug_assert!(lpn < self.lpns);
        self.counters.host_units += 1;
        self.clock += 1;
        if self.mapping == Mapping::InPlace {
            let ppa = self.inplace_ppa(lpn);
            let b = self.block_of(ppa);
            self.inplace_writes[b as usize] = self.inplace_writes[b as usize].saturating_add(1);
            if self.emit {
                self.ops.push(NandOp {
                    kind: NandKind::Program,
                    block: b,
                    page: self.page_of(ppa),
                    background: false,
                    units: 1,
                });
            }
            return ppa;
        }
        let np = self.order.len();
        let mut tried = 0;
        let ppa = loop {
            let plane = self.order[self.cursor];
            if let Some(ppa) = self.alloc_user(plane) {
                break ppa;
            }
            // this plane cannot make room (all its data valid): try the next
            tried += 1;
            assert!(
                tried < np,
                "FTL: no plane can make a free block (over-provisioning exhausted)"
            );
            self.cursor = (self.cursor + 1) % np;
        };
        // count the new unit first: if it closed its block, the block
        // joins the greedy buckets before the old unit (maybe in it) goes
        let b = self.block_of(ppa);
        self.plane_valid[self.bpp_div.div(b) as usize] += 1;
        self.count_valid(b);
        if !self.invalidate(lpn) {
            self.mapped += 1;
        }
        self.l2p_set(lpn, ppa);
        self.p2l_set(ppa, lpn);
        ppa
    }

    /// One more valid unit in block `b`, just programmed: if that closed
    /// it, it joins the greedy buckets.
    #[inline]
    pub(super) fn count_valid(&mut self, b: u32) {
        let blk = &mut self.blocks[b as usize];
        blk.valid += 1;
        if blk.state == BState::Closed {
            let valid = blk.valid;
            if let Some(bk) = &mut self.buckets {
                bk.insert(&mut self.blocks, self.bpp_div.div(b), b, valid);
            }
        }
    }

    /// Drop the physical unit `lpn` held (its block counts one valid unit
    /// fewer); the caller sets the new entry. Returns whether it was
    /// mapped.
    #[inline]
    fn invalidate(&mut self, lpn: u32) -> bool {
        let old = self.l2p_get(lpn);
        if old == NONE {
            return false;
        }
        // the reverse entry stays: the caller's new entry for `lpn` is
        // what makes `old` invalid (see `p2l_get`)
        let b = self.block_of(old);
        let p = self.bpp_div.div(b) as usize;
        self.plane_valid[p] -= 1;
        let blk = &mut self.blocks[b as usize];
        blk.valid -= 1;
        if blk.state == BState::Closed {
            let valid = blk.valid;
            if let Some(bk) = &mut self.buckets {
                bk.lowered(&mut self.blocks, self.bpp_div.div(b), b, valid);
            }
        }
        true
    }

    /// Discard logical unit `lpn` (TRIM).
    pub fn trim(&mut self, lpn: u32) {
        if self.mapping == Mapping::Page && self.invalidate(lpn) {
            self.l2p_set(lpn, NONE);
            self.mapped -= 1;
            self.counters.trimmed_units += 1;
        }
    }
}
