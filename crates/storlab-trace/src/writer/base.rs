//! What every writer shares: the [`TraceWriter`] interface, its options
//! and counts, and the bookkeeping of order, counts and errors.

use crate::blktrace::Endian;
use crate::error::TraceError;
use crate::{Format, TraceRecord};
use serde::Serialize;

/// Counts kept by a writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WriteStats {
    /// Records written (exactly or not).
    pub written: u64,
    /// Records the format cannot hold (for instance trims in MSR), left out.
    pub dropped: u64,
    /// Records written with a changed time or address (rounding).
    pub inexact: u64,
}

/// A sink of trace records in some format.
///
/// The interface is one call per request so that the emulator can record
/// as it serves, plus `finish` because some formats must hold back events
/// that belong later in the file (completions) or close the file (fio).
pub trait TraceWriter {
    /// Writes one record. Times must not decrease from one call to the next
    /// (see [`ReorderWriter`](super::ReorderWriter) otherwise).
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError>;
    /// Writes what was held back and flushes the output. Call once, last.
    fn finish(&mut self) -> Result<(), TraceError>;
    /// What happened to the records so far.
    fn stats(&self) -> WriteStats;
}

/// Options of the writers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Accept records this much out of time order (nanoseconds) and sort
    /// them; 0 means they must come sorted. Default: 0.
    pub reorder_window_ns: u64,
    /// fio: file name of device N is this prefix followed by N. A relative
    /// name, so that replaying it by mistake cannot touch a real device;
    /// replay with fio's `replay_redirect=`. Default: `storlab-dev`.
    pub fio_file_prefix: String,
    /// MSR: the Hostname column. Default: `storlab`.
    pub msr_hostname: String,
    /// blkparse/blktrace: the process name shown for every pid. Default:
    /// `storlab`.
    pub process_name: String,
    /// blktrace: byte order of the records. Default: little-endian.
    pub blktrace_endian: Endian,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            reorder_window_ns: 0,
            fio_file_prefix: "storlab-dev".into(),
            msr_hostname: "storlab".into(),
            process_name: "storlab".into(),
            blktrace_endian: Endian::Little,
        }
    }
}

/// Bookkeeping shared by the writers: order check, counts, errors.
pub(super) struct Core {
    pub(super) format: Format,
    pub(super) index: u64,
    pub(super) last_time: u64,
    pub(super) stats: WriteStats,
}

impl Core {
    pub(super) fn new(format: Format) -> Core {
        Core {
            format,
            index: 0,
            last_time: 0,
            stats: WriteStats::default(),
        }
    }

    pub(super) fn error(&self, problem: impl Into<String>) -> TraceError {
        TraceError::Write {
            format: self.format,
            index: self.index,
            problem: problem.into(),
        }
    }

    /// Checks the order of a new record and counts it.
    pub(super) fn begin(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        if rec.time_ns < self.last_time {
            return Err(self.error(format!(
                "time {} ns is before the previous record's {} ns; records must be in time order (set WriteOptions::reorder_window_ns to sort them)",
                rec.time_ns, self.last_time
            )));
        }
        self.last_time = rec.time_ns;
        self.index += 1;
        Ok(())
    }

    /// Counts a record written (`exact`: without widening it).
    pub(super) fn wrote(&mut self, exact: bool) {
        self.stats.written += 1;
        if !exact {
            self.stats.inexact += 1;
        }
    }

    pub(super) fn io(&self, e: std::io::Error) -> TraceError {
        self.error(format!("output error: {e}"))
    }
}

/// Whether `v` is a multiple of `m` (`u64::is_multiple_of` needs Rust
/// 1.87; the workspace supports 1.80).
#[allow(clippy::manual_is_multiple_of)]
pub(super) fn multiple_of(v: u64, m: u64) -> bool {
    v % m == 0
}

/// A request widened to whole 512-byte sectors: `(sector, count, exact)`.
pub(super) fn sectors(offset: u64, len: u64) -> (u64, u64, bool) {
    let first = offset / 512;
    let end = offset.saturating_add(len).div_ceil(512);
    (
        first,
        end - first,
        multiple_of(offset, 512) && multiple_of(len, 512),
    )
}
