//! Clocks for the emulator's driver: a calibrated TSC clock for wall-clock
//! time and a virtual clock for conformance tests.
//!
//! Both give nanoseconds since the clock was made (the server's start), the
//! unit the timing model uses ([`Nanos`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use storlab_model::Nanos;

/// A source of "now" for the driver. The model never reads it; the driver
/// reads it once per event and passes the value in.
pub trait Clock: Send + Sync {
    /// Nanoseconds since this clock's origin. Never decreases.
    fn now(&self) -> Nanos;
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC always
    // exists on Linux; clock_gettime only writes into `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no memory effects; every x86_64 CPU implements it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Whether the CPU's TSC ticks at a constant rate through frequency and
/// idle-state changes (`constant_tsc` and `nonstop_tsc` in /proc/cpuinfo).
fn tsc_is_invariant() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let Some(flags) = info.lines().find(|l| l.starts_with("flags")) else {
        return false;
    };
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// Where a [`WallClock`] reads time from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// The CPU's time-stamp counter, calibrated against CLOCK_MONOTONIC.
    Tsc,
    /// CLOCK_MONOTONIC through the vDSO (no invariant TSC).
    Monotonic,
}

/// Wall-clock time in nanoseconds since creation: the invariant TSC scaled
/// by a factor calibrated against `CLOCK_MONOTONIC` at start-up, or
/// `CLOCK_MONOTONIC` itself where the TSC is not invariant.
#[derive(Clone, Debug)]
pub struct WallClock {
    source: ClockSource,
    tsc0: u64,
    mono0: u64,
    /// Nanoseconds per tick as a 32.32 fixed-point number.
    mult: u64,
    tsc_hz: f64,
}

impl WallClock {
    /// Calibrate for about `calibration` (20-50 ms is plenty: the error is
    /// below one part per million).
    pub fn new(calibration: Duration) -> Self {
        if tsc_is_invariant() {
            Self::calibrate_tsc(calibration)
        } else {
            Self::monotonic()
        }
    }

    /// The kernel's monotonic clock, read on every call (no TSC).
    fn monotonic() -> Self {
        WallClock {
            source: ClockSource::Monotonic,
            tsc0: 0,
            mono0: monotonic_ns(),
            mult: 0,
            tsc_hz: 0.0,
        }
    }

    /// A (monotonic ns, tsc) pair read as close together as possible: the
    /// TSC read bracketed by two clock reads, best of a few tries.
    #[cfg(target_arch = "x86_64")]
    fn paired_sample() -> (u64, u64) {
        let mut best = (u64::MAX, 0u64, 0u64);
        for _ in 0..16 {
            let a = monotonic_ns();
            let t = rdtsc();
            let b = monotonic_ns();
            if b - a < best.0 {
                best = (b - a, a + (b - a) / 2, t);
            }
        }
        (best.1, best.2)
    }

    #[cfg(target_arch = "x86_64")]
    fn calibrate_tsc(calibration: Duration) -> Self {
        let (m0, t0) = Self::paired_sample();
        std::thread::sleep(calibration);
        let (m1, t1) = Self::paired_sample();
        let ticks = (t1 - t0).max(1);
        let ns = (m1 - m0).max(1);
        let mult = ((ns as u128) << 32) / ticks as u128;
        WallClock {
            source: ClockSource::Tsc,
            tsc0: t1,
            mono0: m1,
            mult: mult as u64,
            tsc_hz: ticks as f64 * 1e9 / ns as f64,
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn calibrate_tsc(_calibration: Duration) -> Self {
        Self::monotonic()
    }

    /// Which source this clock reads.
    pub fn source(&self) -> ClockSource {
        self.source
    }

    /// Calibrated TSC frequency in Hz (0 when not using the TSC).
    pub fn tsc_hz(&self) -> f64 {
        self.tsc_hz
    }

    /// `CLOCK_MONOTONIC` minus this clock, in ns, right now: the drift since
    /// calibration (a few hundred ns per second would mean a bad
    /// calibration).
    pub fn drift_ns(&self) -> i64 {
        let mono = monotonic_ns().saturating_sub(self.mono0) as i64;
        mono - self.now() as i64
    }
}

impl Clock for WallClock {
    #[inline]
    fn now(&self) -> Nanos {
        match self.source {
            #[cfg(target_arch = "x86_64")]
            ClockSource::Tsc => {
                let dt = rdtsc().saturating_sub(self.tsc0);
                ((dt as u128 * self.mult as u128) >> 32) as u64
            }
            _ => monotonic_ns().saturating_sub(self.mono0),
        }
    }
}

/// A clock that only moves when told to: the conformance tests' time.
#[derive(Debug, Default)]
pub struct VirtualClock {
    now: AtomicU64,
}

impl VirtualClock {
    /// A virtual clock at time 0.
    pub fn new() -> Self {
        Self::default()
    }
    /// Move to `t` (never backwards: an earlier `t` is ignored).
    pub fn advance_to(&self, t: Nanos) {
        self.now.fetch_max(t, Ordering::Relaxed);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Nanos {
        self.now.load(Ordering::Relaxed)
    }
}

/// Set this thread's timer slack to 1 ns so that timed sleeps end when
/// asked rather than up to 50 µs later (the Linux default slack).
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer argument and only changes
    // the calling thread's scheduling attribute.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Run the calling thread `SCHED_FIFO` at the lowest real-time priority
/// (`on`) or back at normal priority; false when not allowed (no
/// `CAP_SYS_NICE`).
pub(crate) fn set_realtime(on: bool) -> bool {
    let (policy, prio) = if on {
        (libc::SCHED_FIFO, 1)
    } else {
        (libc::SCHED_OTHER, 0)
    };
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sets the calling thread's policy; `p` is a valid pointer.
    unsafe { libc::sched_setscheduler(0, policy, &p) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_tracks_monotonic() {
        let c = WallClock::new(Duration::from_millis(20));
        let a = c.now();
        std::thread::sleep(Duration::from_millis(30));
        let b = c.now();
        let dt = b - a;
        assert!((29_000_000..60_000_000).contains(&dt), "dt = {dt}");
        assert!(c.drift_ns().abs() < 200_000, "drift {}", c.drift_ns());
    }

    #[test]
    fn virtual_clock_never_goes_back() {
        let c = VirtualClock::new();
        c.advance_to(10);
        c.advance_to(5);
        assert_eq!(c.now(), 10);
    }
}
