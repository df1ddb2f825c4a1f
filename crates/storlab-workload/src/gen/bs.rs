//! Block-size choice of one direction (`bs`, `bsrange`, `bssplit`),
//! prepared for speed.

use super::rng::Rng;
use crate::fio::BlockSizeSpec;

/// Block-size choice of one direction, prepared for speed.
#[derive(Clone, Debug)]
pub(super) enum BsPicker {
    Fixed(u64),
    Range {
        min: u64,
        max: u64,
        /// Round down to a multiple of `min` (a power of two).
        align_mask: u64,
    },
    /// (cumulative percent, size) in fio's order.
    Split(Vec<(u32, u64)>),
}

impl BsPicker {
    pub(super) fn new(spec: &BlockSizeSpec, unaligned: bool) -> BsPicker {
        match spec {
            BlockSizeSpec::Fixed(b) => BsPicker::Fixed(*b),
            BlockSizeSpec::Range { min, max } => BsPicker::Range {
                min: *min,
                max: *max,
                align_mask: if !unaligned && min.is_power_of_two() {
                    !(min - 1)
                } else {
                    u64::MAX
                },
            },
            BlockSizeSpec::Split(entries) => {
                let mut cum = 0u32;
                BsPicker::Split(
                    entries
                        .iter()
                        .map(|e| {
                            cum += u32::from(e.pct);
                            (cum, e.bs)
                        })
                        .collect(),
                )
            }
        }
    }

    #[inline]
    pub(super) fn pick(&self, rng: &mut Rng) -> u64 {
        match self {
            BsPicker::Fixed(b) => *b,
            BsPicker::Range {
                min,
                max,
                align_mask,
            } => ((min + rng.below(max - min + 1)) & align_mask).max(*min),
            BsPicker::Split(cum) => {
                let r = rng.below(100) as u32;
                let mut last = 0;
                for &(c, bs) in cum {
                    last = bs;
                    if r < c {
                        return bs;
                    }
                }
                last
            }
        }
    }

    pub(super) fn min(&self) -> u64 {
        match self {
            BsPicker::Fixed(b) => *b,
            BsPicker::Range { min, .. } => *min,
            BsPicker::Split(v) => v.iter().map(|e| e.1).min().unwrap_or(1),
        }
    }

    /// The largest size this picker allows that is at most `avail`
    /// (`avail >= min`).
    pub(super) fn fit(&self, len: u64, avail: u64) -> u64 {
        if len <= avail {
            return len;
        }
        match self {
            BsPicker::Fixed(b) => *b,
            BsPicker::Range {
                min, align_mask, ..
            } => (avail & align_mask).max(*min),
            BsPicker::Split(v) => v
                .iter()
                .map(|e| e.1)
                .filter(|&b| b <= avail)
                .max()
                .unwrap_or_else(|| self.min()),
        }
    }
}
