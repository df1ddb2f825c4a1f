//! Open blocks: allocating units for host and moved data, the page
//! programs a full page emits, and padding partly filled pages.

use std::cmp::Reverse;

use super::blocks::BState;
use super::layer::Ftl;
use super::types::{Mapping, NandKind, NandOp, NONE};

impl Ftl {
    /// Allocate a unit for host data in `plane`; `None` when the plane
    /// cannot get a free block.
    pub(super) fn alloc_user(&mut self, plane: u32) -> Option<u32> {
        if self.pacing && self.emit {
            self.gc_step(plane);
        }
        let p = (self.stream * self.geo.planes + plane) as usize;
        if self.open_user[p] == NONE {
            // keep one block in reserve for garbage collection
            self.ensure_free(plane);
            if self.free[plane as usize].len() < 2 {
                return None;
            }
            let b = self.take_free(plane);
            self.open_user[p] = b;
        }
        let b = self.open_user[p];
        let ppa = self.bump(b, false);
        // a full page moves host writes on to the next plane
        if self.upp_div.rem(self.upb_div.rem(ppa) + 1) == 0 {
            self.cursor = (self.cursor + 1) % self.order.len();
            self.skip_loaded_planes();
        }
        if self.blocks[b as usize].state == BState::Closed {
            self.open_user[p] = NONE;
        }
        Some(ppa)
    }

    /// Host writes pass over a plane whose valid units exceed the
    /// planes' mean by more than an eighth of its spare (the units it
    /// has beyond the mean; at least a block). Collection moves data only
    /// within its plane, so each plane has only its own spare: striping
    /// pages over the planes in a fixed turn, whatever they hold, lets a
    /// plane gather more than its share of long-lived data whenever the
    /// host's order repeats with the stripe's period (two jobs whose
    /// writes alternate put one job's data on the even planes and the
    /// other's on the odd ones), and that plane's spare, and with it its
    /// write amplification, has no bound. Balancing writes over the flash
    /// elements by how full they are is the FTL's remedy (Agrawal et al.,
    /// "Design tradeoffs for SSD performance", USENIX ATC 2008, section
    /// 3: load balancing, so that no element runs out of free space
    /// first). The eighth is a design choice: greedy collection's write
    /// amplification goes about as the inverse of the spare, so a plane
    /// at the limit pays at most about an eighth more, while the random
    /// drift of uniform writes (a few blocks on these planes) stays under
    /// it and keeps the stripe's order (and its parallelism).
    #[inline]
    fn skip_loaded_planes(&mut self) {
        let np = self.order.len();
        let mean = self.mapped / np as u64;
        let plane_units = self.geo.blocks_per_plane as u64 * self.upb as u64;
        let slack = (plane_units.saturating_sub(mean) / 8).max(self.upb as u64);
        let limit = mean + slack;
        for _ in 0..np {
            if (self.plane_valid[self.order[self.cursor] as usize] as u64) <= limit {
                return;
            }
            self.cursor = (self.cursor + 1) % np;
        }
    }

    /// Allocate a unit for moved data in `plane` (always succeeds: the
    /// reserve guarantees a block).
    pub(super) fn alloc_gc(&mut self, plane: u32) -> u32 {
        let p = plane as usize;
        if self.open_gc[p] == NONE {
            assert!(
                !self.free[p].is_empty(),
                "FTL: garbage collection found no free block in plane {plane}"
            );
            let b = self.take_free(plane);
            self.open_gc[p] = b;
        }
        let b = self.open_gc[p];
        let ppa = self.bump(b, true);
        if self.blocks[b as usize].state == BState::Closed {
            self.open_gc[p] = NONE;
        }
        ppa
    }

    fn take_free(&mut self, plane: u32) -> u32 {
        let Reverse((_, b)) = self.free[plane as usize]
            .pop()
            .expect("caller checked the pool");
        let blk = &mut self.blocks[b as usize];
        debug_assert_eq!(blk.state, BState::Free);
        blk.state = BState::Open;
        blk.next_unit = 0;
        b
    }

    /// Take the next unit of open block `b`; emit its page's program when
    /// the page is full; close the block when it is full.
    fn bump(&mut self, b: u32, background: bool) -> u32 {
        let (upb, upp_div) = (self.upb, self.upp_div);
        let blk = &mut self.blocks[b as usize];
        let u = blk.next_unit;
        blk.next_unit += 1;
        let full = blk.next_unit == upb;
        if full {
            blk.state = BState::Closed;
            blk.closed_at = self.clock;
        }
        if upp_div.rem(u + 1) == 0 && self.emit {
            self.ops.push(NandOp {
                kind: NandKind::Program,
                block: b,
                page: upp_div.div(u),
                background,
                units: if background { 0 } else { upp_div.d() },
            });
        }
        b * upb + u
    }

    /// Program every partly filled host page now, skipping its empty units
    /// (a flush or FUA write must not wait for a page to fill). Returns the
    /// number of pages padded.
    pub fn pad_open_pages(&mut self) -> u32 {
        if self.mapping == Mapping::InPlace {
            return 0;
        }
        let upp = self.geo.units_per_page;
        if upp == 1 {
            return 0;
        }
        let mut padded = 0;
        for p in 0..self.open_user.len() {
            let b = self.open_user[p];
            if b == NONE {
                continue;
            }
            let filled = self.blocks[b as usize].next_unit % upp;
            if filled == 0 {
                continue;
            }
            let skip = upp - filled;
            let blk = &mut self.blocks[b as usize];
            let page = blk.next_unit / upp;
            blk.next_unit += skip;
            self.counters.padded_units += skip as u64;
            if blk.next_unit == self.upb {
                self.close_block(b);
                self.open_user[p] = NONE;
            }
            self.program_padded(b, page, filled);
            padded += 1;
            // the stripe moves on, as after a full page
            if self.order[self.cursor] == p as u32 % self.geo.planes {
                self.cursor = (self.cursor + 1) % self.order.len();
            }
        }
        padded
    }

    /// Keep host data in `n` separate streams of open blocks (zones of a
    /// zoned drive, reclaim-unit handles of an FDP drive): a block holds
    /// one stream's data only. Called before any host write.
    pub fn set_streams(&mut self, n: u32) {
        let planes = self.geo.planes as usize;
        self.open_user.resize(planes * n.max(1) as usize, NONE);
    }

    /// Send the host writes that follow to stream `s` (below the count
    /// given to [`Ftl::set_streams`]).
    pub fn set_stream(&mut self, s: u32) {
        debug_assert!(((s + 1) * self.geo.planes) as usize <= self.open_user.len());
        self.stream = s;
    }

    /// Close stream `s`'s open blocks where they are: their partly filled
    /// page is programmed (as [`Ftl::pad_open_pages`] does) and their
    /// unwritten pages are left unused until the block is erased (a zone
    /// reset or finish: the zone's data never shares a block with another
    /// zone's). Returns the units left unused (never programmed, so not
    /// write amplification).
    pub fn close_stream(&mut self, s: u32) -> u64 {
        let planes = self.geo.planes;
        let upp = self.geo.units_per_page;
        let mut skipped = 0u64;
        for plane in 0..planes {
            let p = (s * planes + plane) as usize;
            let b = self.open_user[p];
            if b == NONE {
                continue;
            }
            self.open_user[p] = NONE;
            let blk = &mut self.blocks[b as usize];
            let filled = blk.next_unit % upp;
            let page = blk.next_unit / upp;
            skipped += (self.upb - blk.next_unit) as u64;
            blk.next_unit = self.upb;
            self.close_block(b);
            if filled > 0 {
                // the partly filled page is programmed padded
                self.counters.padded_units += (upp - filled) as u64;
                self.program_padded(b, page, filled);
            }
        }
        skipped
    }

    /// Close block `b`, which takes no more writes: it becomes a candidate
    /// for garbage collection (in its bucket of valid counts, if kept).
    fn close_block(&mut self, b: u32) {
        let blk = &mut self.blocks[b as usize];
        blk.state = BState::Closed;
        blk.closed_at = self.clock;
        let valid = blk.valid;
        if let Some(bk) = &mut self.buckets {
            bk.insert(&mut self.blocks, self.bpp_div.div(b), b, valid);
        }
    }

    /// Emit the program of host page `page` of block `b`, partly filled
    /// with `filled` units and padded.
    fn program_padded(&mut self, b: u32, page: u32, filled: u32) {
        if self.emit {
            self.ops.push(NandOp {
                kind: NandKind::Program,
                block: b,
                page,
                background: false,
                units: filled,
            });
        }
    }
}
