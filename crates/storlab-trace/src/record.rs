//! The one record type every format is read into and written from.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceOp {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Discard (trim, unmap) `len` bytes at `offset`.
    Trim,
    /// Make earlier writes durable (fsync, a flush request); `offset` and
    /// `len` are 0.
    Flush,
}

impl TraceOp {
    /// All operations, in a fixed order.
    pub const ALL: [TraceOp; 4] = [TraceOp::Read, TraceOp::Write, TraceOp::Trim, TraceOp::Flush];

    /// Lower-case name: `read`, `write`, `trim`, `flush`.
    pub fn name(self) -> &'static str {
        match self {
            TraceOp::Read => "read",
            TraceOp::Write => "write",
            TraceOp::Trim => "trim",
            TraceOp::Flush => "flush",
        }
    }

    fn bit(self) -> u8 {
        match self {
            TraceOp::Read => 1,
            TraceOp::Write => 2,
            TraceOp::Trim => 4,
            TraceOp::Flush => 8,
        }
    }
}

impl fmt::Display for TraceOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceOp {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read" | "r" => Ok(TraceOp::Read),
            "write" | "w" => Ok(TraceOp::Write),
            "trim" | "discard" | "d" => Ok(TraceOp::Trim),
            "flush" | "sync" | "f" => Ok(TraceOp::Flush),
            other => Err(format!(
                "unknown operation `{other}` (expected read, write, trim or flush)"
            )),
        }
    }
}

/// One block request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TraceRecord {
    /// Arrival time in nanoseconds, relative to the first record the reader
    /// yields (see [`crate::ReadOptions::rebase_time`]).
    pub time_ns: u64,
    /// What the request does.
    pub op: TraceOp,
    /// Byte offset on the device (0 for flushes).
    pub offset: u64,
    /// Length in bytes (0 for flushes).
    pub len: u64,
    /// Which device: the fio file index (order of first appearance), the MSR
    /// disk number, the DiskSim device number, or the Linux `dev_t` for
    /// blkparse and blktrace (`major << 20 | minor`, see [`dev_major`] and
    /// [`dev_minor`]).
    pub device: u32,
    /// The response time the trace recorded for this request, if it has one
    /// (MSR's ResponseTime; blkparse/blktrace completion minus arrival).
    pub recorded_latency_ns: Option<u64>,
    /// Who issued it: the process id for blkparse and blktrace, 0 elsewhere.
    pub stream: u32,
}

impl TraceRecord {
    /// Offset of the first byte after the request.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// Number of bits of a Linux kernel `dev_t` that hold the minor number.
pub const MINOR_BITS: u32 = 20;

/// Builds a kernel `dev_t` (as stored in blktrace files) from major and
/// minor numbers. Returns `None` if either does not fit (major: 12 bits,
/// minor: 20 bits).
pub fn make_dev(major: u32, minor: u32) -> Option<u32> {
    if major >= (1 << (32 - MINOR_BITS)) || minor >= (1 << MINOR_BITS) {
        None
    } else {
        Some(major << MINOR_BITS | minor)
    }
}

/// Major number of a kernel `dev_t`.
pub fn dev_major(dev: u32) -> u32 {
    dev >> MINOR_BITS
}

/// Minor number of a kernel `dev_t`.
pub fn dev_minor(dev: u32) -> u32 {
    dev & ((1 << MINOR_BITS) - 1)
}

/// A set of operations, used to filter what a reader yields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OpSet(u8);

impl OpSet {
    /// Every operation.
    pub const ALL: OpSet = OpSet(15);
    /// No operation.
    pub const NONE: OpSet = OpSet(0);

    /// The set holding exactly `ops`.
    pub fn of(ops: &[TraceOp]) -> OpSet {
        OpSet(ops.iter().fold(0, |m, op| m | op.bit()))
    }

    /// Whether `op` is in the set.
    #[inline]
    pub fn contains(self, op: TraceOp) -> bool {
        self.0 & op.bit() != 0
    }

    /// This set with `op` added.
    pub fn with(self, op: TraceOp) -> OpSet {
        OpSet(self.0 | op.bit())
    }
}

impl Default for OpSet {
    fn default() -> Self {
        OpSet::ALL
    }
}

impl FromStr for OpSet {
    type Err = String;
    /// Parses a comma-separated list such as `read,write` (or `all`).
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(OpSet::ALL);
        }
        s.split(',')
            .filter(|p| !p.trim().is_empty())
            .try_fold(OpSet::NONE, |set, p| Ok(set.with(p.parse()?)))
    }
}

impl fmt::Display for OpSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = TraceOp::ALL
            .iter()
            .filter(|op| self.contains(**op))
            .map(|op| op.name())
            .collect();
        f.write_str(&names.join(","))
    }
}
