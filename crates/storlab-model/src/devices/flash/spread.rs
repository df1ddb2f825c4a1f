//! The NAND array's physical variation: read retries and the spread of
//! program times, drawn from a seeded generator.

use rand::distributions::Distribution;
use rand::{Rng, SeedableRng};

use super::config::NandConfig;

/// The NAND array's physical variations (read retries, program time),
/// drawn from a generator seeded from `ssd.ftl.seed`, so a run is the same
/// for a seed. Off (both zero) it draws nothing.
pub(super) struct Spread {
    pub(super) rng: rand_pcg::Pcg64Mcg,
    pub(super) retry_p: f64,
    pub(super) retry_max: u32,
    pub(super) program: f64,
    /// `u` of [`Spread::program`], uniform in -1..=1: built once (what
    /// `gen_range(-1.0..=1.0)` builds on every call, so the draws are the
    /// same).
    pub(super) unit: rand::distributions::Uniform<f64>,
}

impl Spread {
    pub(super) fn new(n: &NandConfig, seed: u64) -> Self {
        Spread {
            // a sub-seed of its own, so the FTL's draws stay as they were
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x6e61_6e64_5f73_7072),
            retry_p: if n.read_retry_max == 0 {
                0.0
            } else {
                n.read_retry_probability
            },
            retry_max: n.read_retry_max,
            program: n.program_spread,
            unit: rand::distributions::Uniform::new_inclusive(-1.0, 1.0),
        }
    }

    /// Retries of one page read (geometric, capped).
    #[inline]
    pub(super) fn retries(&mut self) -> u32 {
        if self.retry_p <= 0.0 {
            return 0;
        }
        let mut k = 0;
        while k < self.retry_max && self.rng.gen::<f64>() < self.retry_p {
            k += 1;
        }
        k
    }

    /// One program's time, `typ` spread by the ISPP variation.
    #[inline]
    pub(super) fn program(&mut self, typ: u64) -> u64 {
        if self.program <= 0.0 {
            return typ;
        }
        let u = self.unit.sample(&mut self.rng);
        round_non_negative(typ as f64 * (1.0 + self.program * u))
    }
}

/// `x.round() as u64` for `x >= 0` (half away from zero), without the
/// library call `f64::round` is on x86-64's baseline (no SSE4.1 rounding
/// instruction): below 2^52 the fraction `x - trunc(x)` is exact, and from
/// 2^52 up every `f64` is an integer.
#[inline]
pub(super) fn round_non_negative(x: f64) -> u64 {
    debug_assert!(x >= 0.0);
    // below 2^63 through the signed conversions, one instruction each way
    // on x86-64's baseline (the unsigned ones are sequences of about ten:
    // a fifth of starting a die's program); the same numbers
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x < TWO_63 {
        let i = x as i64;
        return if x - i as f64 >= 0.5 {
            i as u64 + 1
        } else {
            i as u64
        };
    }
    let i = x as u64;
    if x - i as f64 >= 0.5 {
        i + 1
    } else {
        i
    }
}
