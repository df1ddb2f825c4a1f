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
    pub fn get(&self, op: crate::Op) -> u64 {
        match op {
            crate::Op::Read => self.read,
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
    ((bytes as u128 * 1_000_000_000u128).div_ceil(bytes_per_s as u128)) as u64
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
    /// Reserve `dur` ns starting no earlier than `at`; returns the start.
    #[inline]
    pub fn reserve(&mut self, at: u64, dur: u64) -> u64 {
        let start = at.max(self.free_at);
        self.free_at = start + dur;
        self.busy_ns += dur;
        start
    }
}
