//! Division of 32-bit addresses by a divisor fixed when the drive is
//! built (units per page and per block, blocks per plane, planes per die).
//! A hardware division costs 20-40 cycles and the FTL and the NAND
//! timing did several per unit they placed, moved or looked up: a
//! power-of-two divisor becomes a shift and a mask, any other a multiply
//! and a shift (Lemire, Kaser and Kurz, "Faster remainder by direct
//! computation", 2019: with `M = ceil(2^64 / d)`, `n / d` is the high 64
//! bits of `M n` and `n % d` those of `(M n mod 2^64) d`, exact for every
//! 32-bit `n` and `d`). Hand-written: the crates that do this (e.g.
//! `strength_reduce`) are not in the workspace, and these twenty lines are
//! all that is needed.

/// A fixed divisor of 32-bit numbers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Div32 {
    d: u32,
    /// log2(d) when d is a power of two, else u32::MAX.
    shift: u32,
    /// `ceil(2^64 / d)` when d is not a power of two.
    m: u64,
}

impl Div32 {
    /// Divide by `d` (at least 1).
    pub(crate) fn new(d: u32) -> Self {
        let d = d.max(1);
        if d.is_power_of_two() {
            Div32 {
                d,
                shift: d.trailing_zeros(),
                m: 0,
            }
        } else {
            Div32 {
                d,
                shift: u32::MAX,
                m: u64::MAX / d as u64 + 1,
            }
        }
    }

    /// The divisor.
    #[inline(always)]
    pub(crate) fn d(&self) -> u32 {
        self.d
    }

    /// `n / d`.
    #[inline(always)]
    pub(crate) fn div(&self, n: u32) -> u32 {
        if self.shift != u32::MAX {
            n >> self.shift
        } else {
            ((self.m as u128 * n as u128) >> 64) as u32
        }
    }

    /// `n % d`.
    #[inline(always)]
    pub(crate) fn rem(&self, n: u32) -> u32 {
        if self.shift != u32::MAX {
            n & (self.d - 1)
        } else {
            let low = self.m.wrapping_mul(n as u64);
            ((low as u128 * self.d as u128) >> 64) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Div32;

    #[test]
    fn quotients_and_remainders_match_the_hardware_division() {
        let ds = [
            1u32,
            2,
            3,
            5,
            6,
            7,
            10,
            12,
            40,
            64,
            80,
            96,
            445,
            512,
            640,
            1000,
            1792,
            2048,
            4095,
            65_537,
            1 << 31,
            (1 << 31) + 1,
            u32::MAX - 1,
            u32::MAX,
        ];
        let mut n = 0x9e37_79b9u32;
        for &d in &ds {
            let f = Div32::new(d);
            for k in 0..2000u32 {
                // edges and pseudo-random numbers
                let x = match k {
                    0 => 0,
                    1 => u32::MAX,
                    2 => d,
                    3 => d.wrapping_sub(1),
                    4 => d.wrapping_mul(7),
                    _ => {
                        n = n.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        if k % 2 == 0 {
                            n >> (k % 31)
                        } else {
                            n
                        }
                    }
                };
                assert_eq!(f.div(x), x / d, "{x} / {d}");
                assert_eq!(f.rem(x), x % d, "{x} % {d}");
            }
        }
    }
}
