//! Writing traces: one writer per format, all behind [`TraceWriter`].
//!
//! The emulator records what it served through these (`writer.record(&r)`
//! per request), and [`crate::convert`] uses them to translate between
//! formats. What each format keeps:
//!
//! | format | time | ops | address | latency | stream |
//! |---|---|---|---|---|---|
//! | fio3 | µs | all (flush → `sync`) | bytes | – | – |
//! | fio2 | – (all at 0) | all | bytes | – | – |
//! | blkparse | ns | all | sectors | C events | pid |
//! | blktrace | ns | all (≤ 4 GiB per request) | sectors | C events | pid |
//! | msr | 100 ns | read, write | bytes | 100 ns | – |
//! | disksim | ns | read, write | sectors | – | – |
//!
//! Records a format cannot hold at all are dropped and counted
//! ([`WriteStats::dropped`]); records changed on the way (time rounded,
//! offsets widened to whole sectors) are written and counted
//! ([`WriteStats::inexact`]). Losing the latency or the stream is not
//! counted: those columns are optional.
//!
//! Writers need records in non-decreasing time order, which is what
//! readers yield. A driver that records requests when they complete (out
//! of arrival order) should set [`WriteOptions::reorder_window_ns`] to more
//! than its longest latency, or use [`ReorderWriter`] directly. Call
//! [`TraceWriter::finish`] at the end: some formats hold completions back.

mod base;
mod blk;
mod disksim;
mod fio;
mod msr;
mod reorder;

pub use base::{TraceWriter, WriteOptions, WriteStats};
pub use blk::{BlkparseWriter, BlktraceWriter};
pub use disksim::DisksimWriter;
pub use fio::FioWriter;
pub use msr::MsrWriter;
pub use reorder::ReorderWriter;

use crate::error::TraceError;
use crate::{Format, TraceRecord};
use std::io::Write;

/// A writer for `format` over `out` (buffered internally). Wrapped in a
/// [`ReorderWriter`] when `opts.reorder_window_ns` is not 0.
pub fn writer<'a, W: Write + 'a>(
    format: Format,
    out: W,
    opts: &WriteOptions,
) -> Box<dyn TraceWriter + 'a> {
    let w: Box<dyn TraceWriter + 'a> = match format {
        Format::Fio2 => Box::new(FioWriter::new(out, 2, opts)),
        Format::Fio3 => Box::new(FioWriter::new(out, 3, opts)),
        Format::Blkparse => Box::new(BlkparseWriter::new(out, opts)),
        Format::Blktrace => Box::new(BlktraceWriter::new(out, opts)),
        Format::Msr => Box::new(MsrWriter::new(out, opts)),
        Format::Disksim => Box::new(DisksimWriter::new(out)),
        Format::Closed => Box::new(RefuseClosed),
    };
    if opts.reorder_window_ns > 0 {
        Box::new(ReorderWriter::new(w, format, opts.reorder_window_ns))
    } else {
        w
    }
}

/// [`writer`] for [`Format::Closed`]: open-loop records carry no
/// dependencies, so every record is refused (closed-loop traces are
/// written by `storlab serve --record-format closed`, [`crate::closed`]).
struct RefuseClosed;

impl TraceWriter for RefuseClosed {
    fn record(&mut self, _rec: &TraceRecord) -> Result<(), TraceError> {
        Err(TraceError::Write {
            format: Format::Closed,
            index: 0,
            problem: CLOSED_NOT_WRITTEN.into(),
        })
    }
    fn finish(&mut self) -> Result<(), TraceError> {
        Ok(())
    }
    fn stats(&self) -> WriteStats {
        WriteStats::default()
    }
}

/// Why a closed-loop trace cannot be converted to.
pub(crate) const CLOSED_NOT_WRITTEN: &str = "a closed-loop trace is read only: open-loop records have no dependencies to write (record one with `storlab serve --record-format closed`)";
