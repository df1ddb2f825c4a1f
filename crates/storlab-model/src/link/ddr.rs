//! The DDR memory bus: the memory channels a CPU's copy crosses to a RAM
//! disk (docs/spec/ddr-nvm.md: "six DDR3 channels, 63 GB/s together",
//! shared by every core) and main memory's bandwidth (`dram-mem`, Table 1
//! of the flash placement study, docs/spec/media.md).
//!
//! Unlike a host link ([`super::duplex`]) it has no direction and no fixed
//! cost: the device works out the bytes a request puts on it (a copy moves
//! more than it copies), the bus occupies one FCFS [`Timeline`] for their
//! time at its rate, and the request ends no earlier than that. Its steps
//! are capped at [`MAX_STEP_NS`] and its sums saturate, so a rate of one
//! byte per second runs to the engine's horizon instead of overflowing the
//! clock.

use crate::device::Nanos;
use crate::units::{busy_fraction, xfer_ns_capped, Timeline};

/// Longest step one request may take on the bus (or in a copy; a slower
/// one is cut to this): sums of a few thousand such steps stay within the
/// u64 clock, and a run that reaches them ends at the engine's horizon
/// (2^62 ns) with an error.
pub const MAX_STEP_NS: u64 = 1 << 50;

/// A memory bus: a rate and one FCFS timeline.
#[derive(Clone, Debug)]
pub struct MemoryBus {
    /// Bytes per second, at least 1.
    bytes_per_s: u64,
    tl: Timeline,
}

impl MemoryBus {
    /// A bus moving `bytes_per_s` (at least 1).
    pub fn new(bytes_per_s: u64) -> Self {
        debug_assert!(bytes_per_s > 0);
        MemoryBus {
            bytes_per_s,
            tl: Timeline::default(),
        }
    }

    /// The sustained rate of `used` of a host's `channels` memory channels
    /// that together peak at `bytes_per_s`, of which a share `efficiency`
    /// is sustained (rounded down, at least 1 byte per second).
    pub fn channels(bytes_per_s: u64, efficiency: f64, used: u32, channels: u32) -> Self {
        Self::new(((bytes_per_s as f64 * efficiency * used as f64 / channels as f64) as u64).max(1))
    }

    /// Time `bytes` occupy the bus, rounded up, at most [`MAX_STEP_NS`].
    #[inline]
    pub fn xfer_ns(&self, bytes: u64) -> u64 {
        xfer_ns_capped(bytes, self.bytes_per_s, MAX_STEP_NS)
    }

    /// Occupy the bus for `dur` ns from no earlier than `at`, in the order
    /// asked: `(start, end)` (sums saturating).
    #[inline]
    pub fn occupy(&mut self, at: Nanos, dur: u64) -> (Nanos, Nanos) {
        let start = at.max(self.tl.free_at);
        self.tl.free_at = start.saturating_add(dur);
        self.tl.busy_ns = self.tl.busy_ns.saturating_add(dur);
        (start, self.tl.free_at)
    }

    /// Fraction of the first `now` ns the bus was busy.
    #[inline]
    pub fn utilisation(&self, now: Nanos) -> f64 {
        busy_fraction(self.tl.busy_ns, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_queue_in_order() {
        let mut b = MemoryBus::new(1_000_000_000);
        assert_eq!(b.xfer_ns(4096), 4096);
        assert_eq!(b.occupy(100, 4096), (100, 4196));
        assert_eq!(b.occupy(0, 10), (4196, 4206));
        assert_eq!(b.utilisation(8212), 0.5);
    }

    #[test]
    fn slow_buses_saturate() {
        let mut b = MemoryBus::new(1);
        assert_eq!(b.xfer_ns(u64::MAX), MAX_STEP_NS);
        assert_eq!(b.occupy(u64::MAX - 1, 10), (u64::MAX - 1, u64::MAX));
        assert_eq!(b.occupy(0, 10).1, u64::MAX);
    }

    #[test]
    fn channels_share_the_peak() {
        let b = MemoryBus::channels(63_000_000_000, 0.7, 1, 6);
        assert_eq!(b.bytes_per_s, (63e9 * 0.7 / 6.0) as u64);
        assert_eq!(MemoryBus::channels(1, 0.5, 1, 6).bytes_per_s, 1);
    }
}
