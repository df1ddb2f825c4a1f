//! Wear: static wear levelling (moving a cold block's data so the block
//! rejoins the free pool) and the erase counts.

use super::blocks::BState;
use super::layer::Ftl;
use super::types::Mapping;

impl Ftl {
    /// Static wear levelling in one plane.
    pub(super) fn static_level(&mut self, plane: u32) {
        if self.leveling || self.free[plane as usize].len() < 2 {
            return;
        }
        let bpp = self.geo.blocks_per_plane;
        let lo = plane * bpp;
        let mut max = 0;
        let mut cold: Option<(u32, u32)> = None;
        for b in lo..lo + bpp {
            let blk = &self.blocks[b as usize];
            max = max.max(blk.erases);
            if blk.state == BState::Closed && cold.is_none_or(|(e, _)| blk.erases < e) {
                cold = Some((blk.erases, b));
            }
        }
        if let Some((e, b)) = cold {
            if max - e > self.wl_gap {
                self.counters.wl_moves += 1;
                self.leveling = true;
                self.move_block(b);
                self.leveling = false;
            }
        }
    }

    /// Erase counts: (blocks, max, mean). For in-place mapping, programs
    /// per block.
    pub fn wear(&self) -> (u64, u64, f64) {
        let (n, max, sum) = if self.mapping == Mapping::InPlace {
            let s: u64 = self.inplace_writes.iter().map(|&c| c as u64).sum();
            (
                self.inplace_writes.len(),
                self.inplace_writes.iter().copied().max().unwrap_or(0),
                s,
            )
        } else {
            // one pass over the blocks (a 7.68 TB drive has 334 k)
            let (max, s) = self.blocks.iter().fold((0, 0u64), |(m, s), b| {
                (m.max(b.erases), s + b.erases as u64)
            });
            (self.blocks.len(), max, s)
        };
        (
            n as u64,
            max as u64,
            if n > 0 { sum as f64 / n as f64 } else { 0.0 },
        )
    }

    /// Erase count of every block (for tests and wear maps).
    pub fn erase_counts(&self) -> Vec<u32> {
        self.blocks.iter().map(|b| b.erases).collect()
    }
}
