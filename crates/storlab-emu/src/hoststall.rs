//! How prompt can any user-space emulator be on this host?
//!
//! A thread that does nothing but read the clock still loses the CPU now
//! and then: interrupts, and in a VM the hypervisor running something
//! else on the physical core. A reply due during such a stall goes out
//! when it ends, however well the server waits. [`probe`] spins on the
//! clock for a while, records every gap between two consecutive reads
//! longer than a threshold, and [`StallProbe`] turns those gaps into the
//! lateness a perfect server would show here, so a benchmark can report
//! its own lateness next to the host's floor.

use std::time::Duration;

use crate::clock::set_realtime;
use crate::clock::{Clock, WallClock};

/// Gaps shorter than this are the clock read itself, not a stall.
pub const STALL_THRESHOLD_NS: u64 = 2_000;

/// Spin slices: short enough that a real-time spinner stays under the
/// kernel's real-time bandwidth limit (95 % of each second), whose
/// throttling would otherwise show as a 50 ms stall of our own making.
const SLICE_NS: u64 = 50_000_000;
const REST: Duration = Duration::from_millis(10);

/// Stalls seen by a thread spinning on the clock.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StallProbe {
    /// Time spent spinning (ns), stalls included.
    pub span_ns: u64,
    /// Length of every stall longer than [`STALL_THRESHOLD_NS`] (ns).
    pub stalls_ns: Vec<u64>,
    /// Whether the spinner ran `SCHED_FIFO` (as the reactor does while
    /// replies wait for deadlines).
    pub realtime: bool,
}

/// Spin on the server's clock for `duration` (in slices, resting between
/// them) and record the stalls; `SCHED_FIFO` when `realtime` is asked and
/// allowed.
pub fn probe(duration: Duration, realtime: bool) -> StallProbe {
    let clock = WallClock::new(Duration::from_millis(20));
    let rt = realtime && set_realtime(true);
    let total = duration.as_nanos() as u64;
    let mut span = 0;
    let mut stalls = Vec::new();
    while span < total {
        let start = clock.now();
        let end = start + SLICE_NS.min(total - span);
        let mut last = start;
        while last < end {
            let t = clock.now();
            if t - last > STALL_THRESHOLD_NS {
                stalls.push(t - last);
            }
            last = t;
        }
        span += last - start;
        std::thread::sleep(REST);
    }
    if rt {
        set_realtime(false);
    }
    StallProbe {
        span_ns: span,
        stalls_ns: stalls,
        realtime: rt,
    }
}

impl StallProbe {
    /// Share of the time spent stalled.
    pub fn stalled_fraction(&self) -> f64 {
        self.stalls_ns.iter().sum::<u64>() as f64 / self.span_ns.max(1) as f64
    }

    /// Stalls longer than `ns` per second of spinning.
    pub fn rate_over(&self, ns: u64) -> f64 {
        let n = self.stalls_ns.iter().filter(|&&g| g > ns).count();
        n as f64 * 1e9 / self.span_ns.max(1) as f64
    }

    /// Probability that a reply due at a random instant goes out more than
    /// `ns` late even from a server that never misses a deadline on its
    /// own: the instant falls in a stall with more than `ns` of it left.
    pub fn late_beyond(&self, ns: u64) -> f64 {
        let s: u64 = self.stalls_ns.iter().map(|&g| g.saturating_sub(ns)).sum();
        s as f64 / self.span_ns.max(1) as f64
    }

    /// The `q` quantile (0..1) of that lateness (ns), to 100 ns.
    pub fn late_quantile(&self, q: f64) -> u64 {
        let tail = 1.0 - q;
        if self.late_beyond(0) <= tail {
            return 0;
        }
        // late_beyond falls as ns grows: bisect for where it meets the tail.
        let (mut lo, mut hi) = (0u64, self.stalls_ns.iter().copied().max().unwrap_or(0));
        while hi - lo > 100 {
            let mid = lo + (hi - lo) / 2;
            if self.late_beyond(mid) > tail {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    /// One line for a report.
    pub fn summary(&self) -> String {
        format!(
            "host stalls ({} spinner, {:.1} s): {:.2} % of the time, {:.0}/s over 10 µs, {:.0}/s over 20 µs, longest {:.0} µs; a perfect server's lateness: p99 {:.1} µs, p99.9 {:.1} µs, {:.2} % of replies over 20 µs",
            if self.realtime { "SCHED_FIFO" } else { "normal-priority" },
            self.span_ns as f64 / 1e9,
            self.stalled_fraction() * 100.0,
            self.rate_over(10_000),
            self.rate_over(20_000),
            self.stalls_ns.iter().copied().max().unwrap_or(0) as f64 / 1000.0,
            self.late_quantile(0.99) as f64 / 1000.0,
            self.late_quantile(0.999) as f64 / 1000.0,
            self.late_beyond(20_000) * 100.0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic() -> StallProbe {
        // One second with 100 stalls of 50 µs (0.5 % of the time) and
        // 1000 of 5 µs (another 0.5 %).
        let mut stalls = vec![50_000; 100];
        stalls.extend(std::iter::repeat_n(5_000, 1000));
        StallProbe {
            span_ns: 1_000_000_000,
            stalls_ns: stalls,
            realtime: false,
        }
    }

    #[test]
    fn lateness_of_a_random_instant_follows_the_stalls() {
        let p = synthetic();
        assert!((p.stalled_fraction() - 0.01).abs() < 1e-12);
        assert_eq!(p.rate_over(10_000), 100.0);
        // Past 5 µs only the long stalls count: 100 x (50 - 20) µs.
        assert!((p.late_beyond(20_000) - 0.003).abs() < 1e-12);
        assert!((p.late_beyond(5_000) - 0.0045).abs() < 1e-12);
        // 1 % of the time is stalled, so p99 is the very start of it; the
        // p99.9 falls in the long stalls: 100 x (50 - x) µs = 0.1 % -> 40 µs.
        assert!(p.late_quantile(0.99) <= 100);
        let q = p.late_quantile(0.999);
        assert!((39_900..=40_100).contains(&q), "{q}");
        // p99.99: 100 x (50 - x) µs = 0.01 % -> 49 µs.
        let q = p.late_quantile(0.9999);
        assert!((48_900..=49_100).contains(&q), "{q}");
    }

    #[test]
    fn no_stalls_means_no_lateness() {
        let p = StallProbe {
            span_ns: 1_000_000,
            stalls_ns: vec![],
            realtime: false,
        };
        assert_eq!(p.late_quantile(0.99), 0);
        assert_eq!(p.late_beyond(0), 0.0);
        assert!(p.summary().contains("0.00 %"));
    }

    #[test]
    fn probe_spins_for_the_time_asked() {
        let p = probe(Duration::from_millis(120), false);
        assert!(p.span_ns >= 120_000_000, "{}", p.span_ns);
        assert!(p.span_ns < 200_000_000, "{}", p.span_ns);
        assert!(p.stalls_ns.iter().all(|&g| g > STALL_THRESHOLD_NS));
        assert!(p.stalled_fraction() < 1.0);
    }
}
