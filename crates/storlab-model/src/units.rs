//! Small shared helpers for configuration values with units.

use serde::{Deserialize, Serialize};

/// A value that differs by direction: `{ read = .., write = .. }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rw {
    /// For reads (device to host).
    pub read: u64,
    /// For writes (host to device).
    pub write: u64,
}

impl Rw {
    /// The value for `op` (trim and flush use the write value).
    #[inline]
    pub fn get(&self, op: crate::device::Op) -> u64 {
        match op {
            crate::device::Op::Read => self.read,
            _ => self.write,
        }
    }
}

/// Time in ns to move `bytes` at `bytes_per_s`, rounded up.
#[inline]
pub fn xfer_ns(bytes: u64, bytes_per_s: u64) -> u64 {
    if bytes_per_s == 0 {
        return 0;
    }
    // 64-bit arithmetic whenever the product fits (any transfer below 18
    // GB): a 128-bit division is a library call several times slower, and
    // this runs several times per simulated IO
    match bytes.checked_mul(1_000_000_000) {
        Some(p) => p.div_ceil(bytes_per_s),
        None => ((bytes as u128 * 1_000_000_000u128).div_ceil(bytes_per_s as u128)) as u64,
    }
}

/// [`xfer_ns`] at a rate of at least 1 byte per second, capped at `max`
/// ns: exactly the 128-bit result, in 64-bit arithmetic whenever the
/// product fits (a 128-bit division is a library call several times
/// slower).
#[inline]
pub fn xfer_ns_capped(bytes: u64, bytes_per_s: u64, max: u64) -> u64 {
    debug_assert!(bytes_per_s > 0);
    match bytes.checked_mul(1_000_000_000) {
        Some(p) => p.div_ceil(bytes_per_s).min(max),
        None => (bytes as u128 * 1_000_000_000)
            .div_ceil(bytes_per_s as u128)
            .min(max as u128) as u64,
    }
}

/// [`xfer_ns`] at one rate, remembering the last length asked: a
/// device's transfers mostly share one size, and a 64-bit division costs
/// tens of cycles (several per simulated IO). Same answers as `xfer_ns`.
#[derive(Clone, Copy, Debug)]
pub struct RateNs {
    bytes_per_s: u64,
    len: u64,
    ns: u64,
}

impl RateNs {
    /// Transfer times at `bytes_per_s`.
    pub fn new(bytes_per_s: u64) -> Self {
        RateNs {
            bytes_per_s,
            len: 0,
            ns: xfer_ns(0, bytes_per_s),
        }
    }

    /// `xfer_ns(len, bytes_per_s)`.
    #[inline]
    pub fn ns(&mut self, len: u64) -> u64 {
        if len != self.len {
            self.len = len;
            self.ns = xfer_ns(len, self.bytes_per_s);
        }
        self.ns
    }
}

/// Division by a divisor fixed at configuration time: a shift and a mask
/// when it is a power of two (the usual case for stripes, rows and
/// buffers), a division otherwise. Results are exactly `x / d` and `x % d`.
#[derive(Clone, Copy, Debug)]
pub struct FixedDiv {
    d: u64,
    /// log2(d) when d is a power of two, else u32::MAX.
    shift: u32,
}

impl FixedDiv {
    /// Divide by `d` (at least 1).
    pub fn new(d: u64) -> Self {
        let d = d.max(1);
        FixedDiv {
            d,
            shift: if d.is_power_of_two() {
                d.trailing_zeros()
            } else {
                u32::MAX
            },
        }
    }

    /// The divisor.
    #[inline]
    pub fn divisor(&self) -> u64 {
        self.d
    }

    /// `x / d`.
    #[inline]
    pub fn div(&self, x: u64) -> u64 {
        if self.shift != u32::MAX {
            x >> self.shift
        } else {
            x / self.d
        }
    }

    /// How many `d`-sized units the `len` bytes from `offset` touch
    /// (`len` at least 1).
    #[inline]
    pub fn spanned(&self, offset: u64, len: u64) -> u64 {
        self.div(offset + len.max(1) - 1) - self.div(offset) + 1
    }

    /// `x % d`.
    #[inline]
    pub fn rem(&self, x: u64) -> u64 {
        if self.shift != u32::MAX {
            x & (self.d - 1)
        } else {
            x % self.d
        }
    }
}

/// Fraction of `now` ns that `busy_ns` covers, within 0..=1 (0 for an empty
/// run): the utilisation every device reports.
#[inline]
pub fn busy_fraction(busy_ns: u64, now: u64) -> f64 {
    (busy_ns as f64 / now.max(1) as f64).min(1.0)
}

/// A FCFS server as a timeline: requests that reserve it in nondecreasing
/// time order get exact first-come-first-served service.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timeline {
    /// When the server is next free.
    pub free_at: u64,
    /// Total busy time so far.
    pub busy_ns: u64,
}

impl Timeline {
    /// Fraction of the first `now` ns this server was busy.
    #[inline]
    pub fn utilisation(&self, now: u64) -> f64 {
        busy_fraction(self.busy_ns, now)
    }

    /// Reserve `dur` ns starting no earlier than `at`; returns the start.
    #[inline]
    pub fn reserve(&mut self, at: u64, dur: u64) -> u64 {
        let start = at.max(self.free_at);
        self.free_at = start + dur;
        self.busy_ns += dur;
        start
    }
}

/// Put `value` in a free slot of `slots` (reusing an index from `free`)
/// and return its index: the slab in which devices keep in-flight work, so
/// indices fit in wake-up tokens and memory is bounded by the peak number
/// of requests in flight.
#[inline]
pub fn slab_insert<T>(slots: &mut Vec<T>, free: &mut Vec<u32>, value: T) -> u32 {
    match free.pop() {
        Some(i) => {
            slots[i as usize] = value;
            i
        }
        None => {
            slots.push(value);
            (slots.len() - 1) as u32
        }
    }
}

/// Command tags (a device's queue depth). A request holds one from
/// admission to completion; arrivals beyond the limit wait in order. A tag
/// freed at a completion time that may lie ahead of the current event is
/// promised to the oldest waiter, which the device admits with a wake-up at
/// that time, so none of the waiter's steps runs before it is admitted.
#[derive(Clone, Debug, Default)]
pub struct Tags {
    limit: u32,
    in_use: u32,
    promised: u32,
    waiting: std::collections::VecDeque<u32>,
}

impl Tags {
    /// `limit` tags.
    pub fn new(limit: u32) -> Self {
        Self {
            limit,
            ..Self::default()
        }
    }
    /// Request `ri` arrives: true if it takes a tag now (admit it), false
    /// if it waits (a tag promised to a waiter is not free).
    #[inline]
    pub fn arrive(&mut self, ri: u32) -> bool {
        if self.in_use + self.promised < self.limit && self.waiting.is_empty() {
            self.in_use += 1;
            true
        } else {
            self.waiting.push_back(ri);
            false
        }
    }
    /// A request finished: its tag goes to the oldest waiter, returned so
    /// the device can admit it (by a wake-up at the completion time).
    #[inline]
    pub fn release(&mut self) -> Option<u32> {
        self.in_use -= 1;
        let w = self.waiting.pop_front()?;
        self.promised += 1;
        Some(w)
    }
    /// A waiter returned by [`Tags::release`] is being admitted.
    #[inline]
    pub fn admitted(&mut self) {
        self.promised -= 1;
        self.in_use += 1;
    }
}

/// fio's IO-depth bucket of a request issued with `in_flight` requests
/// outstanding (itself included): 1, 2, 4, 8, 16, 32, >=64, as fio's
/// "IO depths" line shows them (`io_u_map` in fio's stat.c).
pub fn depth_bucket(in_flight: u64) -> usize {
    match in_flight {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// A set of numbers below a bound, a bit each (pages resident, keys
/// stored). (Written here, not a crate: three operations over a
/// `Vec<u64>` that two crates share.)
#[derive(Clone, Debug)]
pub struct Bits(Vec<u64>);

impl Bits {
    /// The empty set of numbers below `n`.
    pub fn new(n: u64) -> Self {
        Bits(vec![0; n.div_ceil(64) as usize])
    }
    /// Whether `i` is in the set.
    pub fn get(&self, i: u64) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
    /// Put `i` in the set (`on`) or take it out.
    pub fn set(&mut self, i: u64, on: bool) {
        let w = &mut self.0[(i / 64) as usize];
        if on {
            *w |= 1 << (i % 64);
        } else {
            *w &= !(1 << (i % 64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fixed_div_is_division(x: u64, d in 1u64..u64::MAX) {
            let f = FixedDiv::new(d);
            prop_assert_eq!(f.div(x), x / d);
            prop_assert_eq!(f.rem(x), x % d);
        }

        #[test]
        fn fixed_div_powers_of_two(x: u64, k in 0u32..64) {
            let d = 1u64 << k;
            let f = FixedDiv::new(d);
            prop_assert_eq!(f.div(x), x / d);
            prop_assert_eq!(f.rem(x), x % d);
        }

        #[test]
        fn xfer_ns_matches_wide_arithmetic(bytes: u64, bps in 1u64..u64::MAX) {
            let wide = (bytes as u128 * 1_000_000_000u128).div_ceil(bps as u128) as u64;
            prop_assert_eq!(xfer_ns(bytes, bps), wide);
        }

        #[test]
        fn xfer_ns_capped_matches_wide_arithmetic(
            bytes: u64,
            bps in 1u64..u64::MAX,
            max: u64,
        ) {
            let wide = (bytes as u128 * 1_000_000_000u128)
                .div_ceil(bps as u128)
                .min(max as u128) as u64;
            prop_assert_eq!(xfer_ns_capped(bytes, bps, max), wide);
            // small rates: the product overflows 64 bits, the quotient too
            let slow = (bytes as u128 * 1_000_000_000u128).min(max as u128) as u64;
            prop_assert_eq!(xfer_ns_capped(bytes, 1, max), slow);
        }
    }
}
