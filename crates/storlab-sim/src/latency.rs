//! Latency and rate series of the run statistics: one latency series
//! ([`LatStat`], exact [`Moments`] plus an HDR histogram), fio's latency
//! buckets ([`LatBuckets`]) and bandwidth/IOPS samples ([`Samples`]).
//! `stats` builds a direction's and a job's records from them.

use hdrhistogram::Histogram;

/// Significant decimal digits kept by the latency histograms.
pub const HIST_SIGFIG: u8 = 3;

/// Exact moments of a series of `u64` values: count, min, max, sum and sum
/// of squares, all in integers so that merging is exact and associative.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moments {
    n: u64,
    min: u64,
    max: u64,
    sum: u128,
    sumsq: u128,
}

impl Default for Moments {
    fn default() -> Self {
        Self::new()
    }
}

impl Moments {
    /// No values yet.
    pub fn new() -> Self {
        Moments {
            n: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sumsq: 0,
        }
    }

    /// Add one value.
    #[inline]
    pub fn add(&mut self, v: u64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += u128::from(v);
        self.sumsq += u128::from(v) * u128::from(v);
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &Moments) {
        self.n += other.n;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sumsq += other.sumsq;
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Smallest value, 0 when empty.
    pub fn min(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest value, 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Sum of the values.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Arithmetic mean, 0 when empty. Computed as quotient plus remainder
    /// so that it is exact to the last bit of the `f64` for any sum.
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let n = u128::from(self.n);
        let (q, r) = (self.sum / n, self.sum % n);
        q as f64 + r as f64 / n as f64
    }

    /// Sample standard deviation (divisor n - 1, as fio), 0 for fewer than
    /// two values.
    ///
    /// The sum of squared deviations `S = sumsq - sum²/n` is computed in
    /// integers up to a final fraction smaller than `n`, so equal values
    /// give exactly 0 and there is no catastrophic cancellation.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = u128::from(self.n);
        let (q, r) = (self.sum / n, self.sum % n);
        // sum²/n = q·sum + r·q + r²/n, with every term but the last exact.
        let a = self.sumsq - q * self.sum - r * q;
        let s = a as f64 - (r * r) as f64 / n as f64;
        (s.max(0.0) / (self.n - 1) as f64).sqrt()
    }
}

/// One latency series in nanoseconds: exact [`Moments`] plus, when its
/// percentiles are wanted, an auto-resizing HDR histogram (3 significant
/// digits). As in fio, only the series whose percentiles a job reports
/// (`clat_percentiles`, on by default; `slat_percentiles`,
/// `lat_percentiles`) keep a histogram.
#[derive(Clone, Debug)]
pub struct LatStat {
    m: Moments,
    hist: Histogram<u64>,
    pct: bool,
}

impl Default for LatStat {
    fn default() -> Self {
        Self::new()
    }
}

impl LatStat {
    /// An empty series with percentiles.
    pub fn new() -> Self {
        Self::with_percentiles(true)
    }

    /// An empty series, keeping a histogram for percentiles or not.
    pub fn with_percentiles(pct: bool) -> Self {
        LatStat {
            m: Moments::new(),
            hist: Histogram::new(HIST_SIGFIG).expect("3 significant digits is a valid histogram"),
            pct,
        }
    }

    /// Whether this series keeps percentiles.
    pub fn has_percentiles(&self) -> bool {
        self.pct
    }

    /// Record one latency.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.m.add(ns);
        if self.pct && self.hist.record(ns).is_err() {
            // Only beyond i64::MAX / 2 ns (146 years): clamp.
            self.hist.saturating_record(ns);
        }
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &LatStat) {
        self.m.merge(&other.m);
        self.hist
            .add(&other.hist)
            .expect("auto-resizing histograms of equal precision always merge");
        self.pct |= other.pct;
    }

    /// The exact moments.
    pub fn moments(&self) -> &Moments {
        &self.m
    }

    /// The histogram (for callers that want more than percentiles).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.m.count()
    }

    /// Smallest value (exact), 0 when empty.
    pub fn min(&self) -> u64 {
        self.m.min()
    }

    /// Largest value (exact), 0 when empty.
    pub fn max(&self) -> u64 {
        self.m.max()
    }

    /// Mean (exact), 0 when empty.
    pub fn mean(&self) -> f64 {
        self.m.mean()
    }

    /// Sample standard deviation (exact up to the final `f64`).
    pub fn stddev(&self) -> f64 {
        self.m.stddev()
    }

    /// The `p`-th percentile (0..=100) in ns: the middle of the first
    /// histogram bucket with at least `p`% of the values at or below it
    /// (fio's definition and, like fio, a bucket's middle), within the
    /// histogram's precision (±0.05 %), clamped to the exact min and max.
    /// 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        self.percentiles(&[p])[0]
    }

    /// [`Self::percentile`] of each of `ps`, in one pass over the recorded
    /// buckets when `ps` is ascending.
    pub fn percentiles(&self, ps: &[f64]) -> Vec<u64> {
        let n = self.m.count();
        let mut out = vec![0; ps.len()];
        if n == 0 {
            return out;
        }
        if !ps.windows(2).all(|w| w[0] <= w[1]) {
            return ps.iter().map(|&p| self.percentiles(&[p])[0]).collect();
        }
        // fio's rule: the first bucket whose cumulative count reaches p% of N.
        let target = |p: f64| (((p / 100.0).clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let (mut i, mut cum) = (0, 0u64);
        for v in self.hist.iter_recorded() {
            cum += v.count_since_last_iteration();
            while i < ps.len() && cum >= target(ps[i]) {
                out[i] = self
                    .hist
                    .median_equivalent(v.value_iterated_to())
                    .clamp(self.m.min(), self.m.max());
                i += 1;
            }
            if i == ps.len() {
                break;
            }
        }
        out
    }
}

/// fio's latency distribution buckets (`io_u_lat_n`, `io_u_lat_u`,
/// `io_u_lat_m`): counts of completion latencies by range. Bucket `i` of
/// each unit counts values below the `i`-th edge and at or above the
/// previous one (edges 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 of the
/// unit, then 2000 ms and beyond for milliseconds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatBuckets {
    /// Below 1 µs, by ns.
    pub ns: [u64; 10],
    /// 1 µs to below 1 ms, by µs.
    pub us: [u64; 10],
    /// 1 ms and above, by ms; the last bucket is 2000 ms and above.
    pub ms: [u64; 12],
}

/// Index of `v` (in one unit, below 1000) in fio's 10 bucket ranges.
#[inline]
fn bucket_1000(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        _ => 9,
    }
}

impl LatBuckets {
    /// Count one latency.
    #[inline]
    pub fn mark(&mut self, ns: u64) {
        if ns < 1_000 {
            self.ns[bucket_1000(ns)] += 1;
        } else if ns < 1_000_000 {
            self.us[bucket_1000(ns / 1_000)] += 1;
        } else {
            let ms = ns / 1_000_000;
            let i = match ms {
                0..=999 => bucket_1000(ms),
                1000..=1999 => 10,
                _ => 11,
            };
            self.ms[i] += 1;
        }
    }

    /// Add the counts of `other`.
    pub fn merge(&mut self, other: &LatBuckets) {
        add_arr(&mut self.ns, &other.ns);
        add_arr(&mut self.us, &other.us);
        add_arr(&mut self.ms, &other.ms);
    }

    /// Sum of all counts.
    pub fn total(&self) -> u64 {
        self.ns.iter().chain(&self.us).chain(&self.ms).sum()
    }
}

pub(crate) fn add_arr<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += *y;
    }
}

/// Running statistics of periodic samples (bandwidth in KiB/s, IOPS), kept
/// the way fio keeps them (Welford mean and sum of squared deviations), so
/// that group merges can add them as fio does.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    n: u64,
    min: u64,
    max: u64,
    mean: f64,
    s: f64,
}

impl Default for Samples {
    fn default() -> Self {
        Samples {
            n: 0,
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            s: 0.0,
        }
    }
}

impl Samples {
    /// Add one sample.
    pub fn add(&mut self, v: u64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        let x = v as f64;
        let delta = x - self.mean;
        self.mean += delta / self.n as f64;
        self.s += delta * (x - self.mean);
    }

    /// Merge as fio's `group_reporting` does for bandwidth and IOPS: the
    /// group's value is the sum of its members', so min, max, mean and the
    /// deviation sums add up, as do sample counts.
    pub fn merge_sum(&mut self, other: &Samples) {
        if other.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = other.clone();
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.n += other.n;
        self.mean += other.mean;
        self.s += other.s;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Smallest sample, 0 when empty.
    pub fn min(&self) -> u64 {
        if self.n == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest sample, 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean, 0 when empty.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample standard deviation (divisor n - 1), 0 for fewer than two.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.s.max(0.0) / (self.n - 1) as f64).sqrt()
        }
    }
}
