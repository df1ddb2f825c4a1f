//! Non-uniform block pickers: zipf, pareto, normal, zoned.
//!
//! zipf, pareto and normal follow fio's construction: draw a *rank* with
//! the distribution's shape, then scatter the rank over the block space with
//! a 64-bit hash and rotate it by an offset (fio's `center`, or a value drawn
//! from the seed), modulo the block count. The hottest blocks are therefore
//! spread over the device, as in fio; what the distribution controls is how
//! concentrated the accesses are. The hash is storlab's own (SplitMix64's
//! finaliser), so the hot blocks are not the same block numbers as fio's.

use super::rng::{mix64, Rng};
use crate::fio::{Zone, ZoneAbs};

/// fio sums at most this many terms of zeta(n, θ) and uses the partial sum
/// as the normalisation for larger n; storlab computes the same partial sum
/// (in closed form) so its zipf has the same shape as fio's.
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// zeta(n, θ) = Σ_{i=1..n} i^-θ: the first terms summed, the tail by
/// Euler–Maclaurin (error far below 1e-12 relative for n > 1000).
pub(crate) fn zeta(n: u64, theta: f64) -> f64 {
    const DIRECT: u64 = 1000;
    if n <= DIRECT {
        return (1..=n).map(|i| (i as f64).powf(-theta)).sum();
    }
    let head: f64 = (1..DIRECT).map(|i| (i as f64).powf(-theta)).sum();
    let a = DIRECT as f64;
    let b = n as f64;
    let f = |x: f64| x.powf(-theta);
    let integral = if (theta - 1.0).abs() < 1e-12 {
        (b / a).ln()
    } else {
        (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
    };
    let d1 = |x: f64| -theta * x.powf(-theta - 1.0);
    let d3 = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    head + integral + (f(a) + f(b)) / 2.0 + (d1(b) - d1(a)) / 12.0 - (d3(b) - d3(a)) / 720.0
}

/// Picks a block in `0..n` by one of the skewed distributions.
#[derive(Clone, Debug)]
pub(crate) enum Skewed {
    Zipf {
        n: u64,
        zetan: f64,
        alpha: f64,
        eta: f64,
        two_cut: f64,
        off: u64,
    },
    Pareto {
        n: u64,
        power: f64,
        off: u64,
    },
    Normal {
        n: u64,
        width: u64,
        off: u64,
    },
    Zoned {
        /// (cumulative access percent, first block, end block)
        zones: Vec<(u8, u64, u64)>,
    },
}

/// Offset of the rotation: the center's position, or one drawn from the
/// seed when there is no center (fio's behaviour for zipf and pareto).
fn rotation(n: u64, center: Option<f64>, rng: &mut Rng) -> u64 {
    match center {
        Some(c) => ((c * n as f64) as u64) % n,
        None => rng.below(n),
    }
}

impl Skewed {
    pub(crate) fn zipf(n: u64, theta: f64, center: Option<f64>, rng: &mut Rng) -> Skewed {
        let n = n.max(1);
        let zetan = zeta(n.min(ZIPF_MAX_GEN), theta);
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Skewed::Zipf {
            n,
            zetan,
            alpha,
            eta,
            two_cut: zeta2,
            off: rotation(n, center, rng),
        }
    }

    pub(crate) fn pareto(n: u64, h: f64, center: Option<f64>, rng: &mut Rng) -> Skewed {
        let n = n.max(1);
        Skewed::Pareto {
            n,
            power: h.ln() / (1.0 - h).ln(),
            off: rotation(n, center, rng),
        }
    }

    pub(crate) fn normal(n: u64, dev_pct: f64, center: Option<f64>) -> Skewed {
        let n = n.max(1);
        let width = if dev_pct > 0.0 {
            ((n as f64 * dev_pct / 100.0).ceil() as u64).min(n / 2)
        } else {
            0
        };
        // fio: no center keeps the rank space as is; a center c rotates it by
        // (c - 0.5) of the range.
        let off = match center {
            Some(c) => (((c - 0.5) * n as f64) as i128).rem_euclid(i128::from(n)) as u64,
            None => 0,
        };
        Skewed::Normal { n, width, off }
    }

    /// Zones of `zoned:` over `n` blocks, by size percentages.
    pub(crate) fn zoned(n: u64, zones: &[Zone]) -> Skewed {
        let mut out = Vec::with_capacity(zones.len());
        let (mut acc, mut size) = (0u32, 0u64);
        for z in zones {
            let lo = (u128::from(n) * u128::from(size) / 100) as u64;
            size += u64::from(z.size_pct);
            let hi = ((u128::from(n) * u128::from(size) / 100) as u64).min(n);
            acc += u32::from(z.access_pct);
            out.push((acc.min(100) as u8, lo.min(n), hi));
        }
        Skewed::Zoned { zones: out }
    }

    /// Zones of `zoned_abs:` over `n` blocks of `block` bytes.
    pub(crate) fn zoned_abs(n: u64, block: u64, zones: &[ZoneAbs]) -> Skewed {
        let mut out = Vec::with_capacity(zones.len());
        let (mut acc, mut bytes) = (0u32, 0u64);
        for z in zones {
            let lo = (bytes / block).min(n);
            bytes = bytes.saturating_add(z.size_bytes);
            let hi = (bytes / block).min(n);
            acc += u32::from(z.access_pct);
            out.push((acc.min(100) as u8, lo, hi));
        }
        Skewed::Zoned { zones: out }
    }

    /// The next block.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            Skewed::Zipf {
                n,
                zetan,
                alpha,
                eta,
                two_cut,
                off,
            } => {
                // Gray et al., "Quickly generating billion-record synthetic
                // databases" (SIGMOD 1994), as fio uses it.
                let u = rng.unit();
                let uz = u * zetan;
                let rank = if uz < 1.0 {
                    1
                } else if uz < two_cut {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                scatter(rank.clamp(1, n) - 1, off, n)
            }
            Skewed::Pareto { n, power, off } => {
                let rank = ((n - 1) as f64 * rng.unit().powf(power)) as u64;
                scatter(rank.min(n - 1), off, n)
            }
            Skewed::Normal { n, width, off } => {
                // fio: the mean of 12 uniform draws over the range (a
                // bell curve by the central limit theorem), widened by a
                // uniform deviation of `width` blocks.
                let mut sum: u128 = 0;
                for _ in 0..12 {
                    sum += u128::from(rng.below(n.saturating_add(1)));
                }
                let mut v = sum.div_ceil(12) as i128;
                if width > 0 {
                    v += i128::from(rng.below(width)) - i128::from(width / 2);
                }
                let rank = v.clamp(0, i128::from(n) - 1) as u64;
                scatter(rank, off, n)
            }
            Skewed::Zoned { ref zones } => {
                let r = rng.below(100) as u8;
                let &(_, lo, hi) = zones
                    .iter()
                    .find(|(cum, _, _)| r < *cum)
                    .or(zones.last())
                    .unwrap_or(&(100, 0, 1));
                if hi > lo {
                    lo + rng.below(hi - lo)
                } else {
                    lo.min(hi.saturating_sub(1))
                }
            }
        }
    }
}

#[inline]
fn scatter(rank: u64, off: u64, n: u64) -> u64 {
    ((u128::from(mix64(rank)) + u128::from(off)) % u128::from(n)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeta_tail_matches_direct_sum() {
        for theta in [0.5, 0.9, 1.2, 2.0] {
            let n = 50_000;
            let direct: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
            let fast = zeta(n, theta);
            assert!(
                ((direct - fast) / direct).abs() < 1e-10,
                "theta {theta}: {direct} vs {fast}"
            );
        }
    }
}
