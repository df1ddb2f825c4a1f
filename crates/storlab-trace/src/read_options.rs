//! [`ReadOptions`]: how to read a trace (filters, clocks, blktrace
//! windows).

use crate::assemble::BlkEvent;
use crate::OpSet;

/// How to read a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Skip lines (text) or records (blktrace) that cannot be used, and
    /// count them ([`TraceReader::skipped`](crate::TraceReader::skipped)), instead of stopping with an
    /// error. Default: false.
    pub skip_bad_lines: bool,
    /// Yield only these operations. Default: all.
    pub ops: OpSet,
    /// Yield only records at or after this time (nanoseconds since the
    /// trace's first record, before [`ReadOptions::rebase_time`]).
    pub start_ns: Option<u64>,
    /// Yield only records before this time (same clock as `start_ns`).
    /// Reading stops at the first record past it.
    pub end_ns: Option<u64>,
    /// Yield only records of this device (MSR disk number, DiskSim device,
    /// fio file index, or blkparse/blktrace `dev_t`). Default: all.
    pub disk: Option<u32>,
    /// Shift times so that the first record yielded is at 0 (useful with
    /// `start_ns`). Default: true.
    pub rebase_time: bool,
    /// blkparse/blktrace: which event marks a request's arrival. Default:
    /// queue (Q).
    pub blk_event: BlkEvent,
    /// blkparse/blktrace: how long (trace time) a request waits for its
    /// completion before it is yielded without a latency. Default: 10 s.
    pub completion_window_ns: u64,
    /// blkparse/blktrace: how many requests may wait for completions at
    /// once (bounds memory). Default: 131072.
    pub max_pending: usize,
    /// blktrace: per-CPU clocks may disagree, so merged events are held
    /// this long (trace time) and sorted: disorder up to this much is always
    /// repaired. An event older than one already passed on is an error (or
    /// skipped). Default: 1 ms.
    pub reorder_window_ns: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            skip_bad_lines: false,
            ops: OpSet::ALL,
            start_ns: None,
            end_ns: None,
            disk: None,
            rebase_time: true,
            blk_event: BlkEvent::Queue,
            completion_window_ns: 10_000_000_000,
            max_pending: 131_072,
            reorder_window_ns: 1_000_000,
        }
    }
}
