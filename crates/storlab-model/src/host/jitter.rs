//! The seeded spread of the host's wake-up and interrupt costs.

use rand::{Rng, SeedableRng};

use super::config::HostConfig;

/// Bins of the exponential's inverse CDF in [`Jitter`]'s table.
const EXP_BINS: usize = 256;

/// The host's seeded variation of its wake-up and interrupt costs.
///
/// A cost of mean `m` and spread `c` takes `m (1 - c) + m c E`, `E` drawn
/// from the unit exponential: a floor (the work itself: the context
/// switch, the handler's code) plus a wait for the core that is
/// exponential, as the wait of a queue with random arrivals is (the other
/// runnable threads, softirqs and timer ticks ahead of it). Mean `m`,
/// standard deviation `c m`, p99 `m (1 + 3.6 c)`.
///
/// Written by hand because no crate in the workspace samples an
/// exponential (`rand` 0.8 alone has no distributions): by inversion,
/// `E = -ln(1 - u)`, read from a table of the inverse CDF at 256 even
/// steps of `u` with linear interpolation (one logarithm per draw cost
/// the simulator about 10 % of its speed); the last bin, where the
/// inverse CDF goes to infinity, is computed exactly, so the tail is the
/// exponential's. Interpolating the convex inverse CDF raises the mean
/// by about 1/(12 x 256) of the exponential part: 0.03 %.
#[derive(Clone, Debug)]
pub struct Jitter {
    rng: rand_pcg::Pcg32,
    /// `-ln(1 - k / EXP_BINS)` for k in 0..EXP_BINS (the last bin is
    /// computed exactly).
    inv_cdf: Box<[f64; EXP_BINS]>,
    /// Floor and exponential mean of a wake-up, ns.
    wake: (f64, f64),
    /// Floor and exponential mean of an interrupt handler, ns.
    irq: (f64, f64),
}

impl Jitter {
    /// The variation `cfg` asks for, drawn from `seed`; `None` when both
    /// spreads are 0.
    pub fn new(cfg: &HostConfig, seed: u64) -> Option<Self> {
        if cfg.wakeup_spread <= 0.0 && cfg.interrupt_spread <= 0.0 {
            return None;
        }
        let split = |m: u64, c: f64| (m as f64 * (1.0 - c), m as f64 * c);
        let mut inv_cdf = Box::new([0.0; EXP_BINS]);
        for (k, v) in inv_cdf.iter_mut().enumerate() {
            *v = -(1.0 - k as f64 / EXP_BINS as f64).ln();
        }
        Some(Self {
            // a sub-seed of its own, apart from the other generators
            rng: rand_pcg::Pcg32::seed_from_u64(seed ^ 0x686f_7374_5f6a_6974),
            inv_cdf,
            wake: split(cfg.wakeup_ns, cfg.wakeup_spread),
            irq: split(cfg.interrupt_ns, cfg.interrupt_spread),
        })
    }

    /// One draw of the unit exponential.
    #[inline]
    pub(super) fn exp1(&mut self) -> f64 {
        let r: u32 = self.rng.gen();
        // the top 8 bits pick the bin of u, the low 24 place u in it
        let k = (r >> 24) as usize;
        let f = (r & 0x00ff_ffff) as f64 * (1.0 / 16_777_216.0);
        if k + 1 < EXP_BINS {
            let (a, b) = (self.inv_cdf[k], self.inv_cdf[k + 1]);
            a + (b - a) * f
        } else {
            // u = (255 + f) / 256: -ln(1 - u) = ln 256 - ln(1 - f), finite
            // as 1 - f >= 2^-24
            (EXP_BINS as f64).ln() - (1.0 - f).ln()
        }
    }

    /// One draw of a cost with `(floor, exponential mean)`, ns.
    #[inline]
    fn draw(&mut self, (floor, exp): (f64, f64)) -> u64 {
        // to the nearest ns; adding 0.5 and truncating (the values are not
        // negative) spares a call to `round` on CPUs without `roundsd`
        if exp <= 0.0 {
            return (floor + 0.5) as u64;
        }
        (floor + exp * self.exp1() + 0.5) as u64
    }

    /// One wake-up's time, ns.
    #[inline]
    pub fn wakeup(&mut self) -> u64 {
        self.draw(self.wake)
    }

    /// One interrupt handler's time (without its PIO accesses), ns.
    #[inline]
    pub fn interrupt(&mut self) -> u64 {
        self.draw(self.irq)
    }
}
