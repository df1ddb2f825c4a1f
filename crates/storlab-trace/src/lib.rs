//! Block trace formats for storlab.
//!
//! This crate reads the block traces people already have, turns every one of
//! them into the same [`TraceRecord`], and writes them back out:
//!
//! | format | name | reads | writes |
//! |---|---|---|---|
//! | fio iolog version 2 | `fio2` | yes | yes |
//! | fio iolog version 3 | `fio3`, `iolog` | yes | yes |
//! | blkparse default text output | `blkparse` | yes | yes |
//! | blktrace binary per-CPU files | `blktrace` | yes (merged) | yes (one CPU) |
//! | SNIA IOTTA MSR Cambridge CSV | `msr` | yes | yes (reads, writes) |
//! | DiskSim ASCII | `disksim` | yes | yes (reads, writes) |
//!
//! Closed-loop traces (`storlab-closed`, what an application did with the
//! dependencies between its requests, recorded by `storlab serve`) have a
//! module of their own: [`closed`]. They are also read as format `closed`
//! ([`Format::Closed`], detected from their header): each request becomes
//! a record at its recorded arrival, in arrival order, with its recorded
//! latency, so `stats` and `convert` work on them (the dependencies and
//! think times are dropped; convert does not write this format).
//!
//! Each format's module documents its layout and its quirks, and how we
//! resolved them: [`fio`], [`blkparse`], [`blktrace`], [`msr`], [`disksim`].
//!
//! Reading is streaming: [`open`] returns a [`TraceReader`], an iterator of
//! `Result<TraceRecord, TraceError>` that reads through one buffer and one
//! reused line, so a multi-gigabyte trace replays in bounded memory. Times
//! are nanoseconds since the first record; formats are detected from the
//! content unless forced. Bad input stops the reader with an error naming
//! the file and the line (or byte offset), unless
//! [`ReadOptions::skip_bad_lines`] is set, in which case bad lines are
//! counted ([`TraceReader::skipped`]).
//!
//! ```no_run
//! use storlab_trace::{open, stats, ReadOptions};
//! let reader = open("hm_1.csv".as_ref(), None, &ReadOptions::default())?;
//! println!("{}", stats(reader)?);
//! # Ok::<(), storlab_trace::TraceError>(())
//! ```
//!
//! Writing goes through [`TraceWriter`] ([`writer`] picks the format);
//! [`convert`] joins the two; [`stats`] summarises a trace; [`remap`] fits
//! addresses onto a smaller or larger device for replay.
//!
//! Invariants: no reader panics on any input (fuzzed, and property-tested
//! in the normal test suite); no reader allocates per line on the good
//! path; readers never iterate a hash map, so output is deterministic.

#![deny(missing_docs)]

pub mod assemble;
pub mod blkparse;
pub mod blktrace;
pub mod closed;
mod detect;
pub mod disksim;
mod error;
pub mod fio;
mod linesrc;
pub mod msr;
mod reader;
mod record;
mod remap;
mod stats;
mod text;
mod writer;

pub use assemble::BlkEvent;
pub use detect::detect;
pub use error::TraceError;
pub use reader::{
    blktrace_from_readers, open, open_blktrace, open_reader, ReadOptions, TraceReader,
};
pub use record::{dev_major, dev_minor, make_dev, OpSet, TraceOp, TraceRecord, MINOR_BITS};
pub use remap::{remap, RemapMode};
pub use stats::{stats, Distribution, OpCount, SizeBucket, TraceStats};
pub use writer::{
    writer, BlkparseWriter, BlktraceWriter, DisksimWriter, FioWriter, MsrWriter, ReorderWriter,
    TraceWriter, WriteOptions, WriteStats,
};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::Write;
use std::path::Path;
use std::str::FromStr;

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// fio iolog version 2 (no timestamps).
    Fio2,
    /// fio iolog version 3 (microsecond timestamps).
    Fio3,
    /// blkparse's default text output.
    Blkparse,
    /// blktrace binary files.
    Blktrace,
    /// SNIA IOTTA MSR Cambridge CSV.
    Msr,
    /// DiskSim ASCII.
    Disksim,
    /// A closed-loop trace ([`closed`]), read as open-loop records (read
    /// only: [`writer`] refuses it).
    Closed,
}

impl Format {
    /// Every format this crate writes (all but [`Format::Closed`]).
    pub const ALL: [Format; 6] = [
        Format::Fio2,
        Format::Fio3,
        Format::Blkparse,
        Format::Blktrace,
        Format::Msr,
        Format::Disksim,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Fio2 => "fio2",
            Format::Fio3 => "fio3",
            Format::Blkparse => "blkparse",
            Format::Blktrace => "blktrace",
            Format::Msr => "msr",
            Format::Disksim => "disksim",
            Format::Closed => "closed",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = TraceError;
    /// Parses `fio2`, `fio3` (or `iolog`), `blkparse`, `blktrace`, `msr`,
    /// `disksim`, `closed` (or `storlab-closed`), ignoring case.
    fn from_str(s: &str) -> Result<Self, TraceError> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "fio2" => Format::Fio2,
            "fio3" | "iolog" => Format::Fio3,
            "blkparse" => Format::Blkparse,
            "blktrace" => Format::Blktrace,
            "msr" => Format::Msr,
            "disksim" => Format::Disksim,
            "closed" | "storlab-closed" => Format::Closed,
            _ => return Err(TraceError::FormatName(s.to_string())),
        })
    }
}

/// Options of [`convert`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConvertOptions {
    /// How to read the input (filters included).
    pub read: ReadOptions,
    /// How to write the output.
    pub write: WriteOptions,
}

/// What [`convert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The input's format (detected or given).
    pub input_format: Format,
    /// The output's format.
    pub output_format: Format,
    /// Records read from the input (after filters).
    pub records_read: u64,
    /// Bad input lines skipped (with `skip_bad_lines`).
    pub skipped: u64,
    /// Records the filters left out.
    pub filtered: u64,
    /// What the writer did with the records.
    pub written: WriteStats,
}

/// Reads `input` (format detected when `in_format` is `None`) and writes
/// it to `output` as `out_format`.
pub fn convert(
    input: &Path,
    in_format: Option<Format>,
    output: &mut dyn Write,
    out_format: Format,
    opts: &ConvertOptions,
) -> Result<Summary, TraceError> {
    if out_format == Format::Closed {
        return Err(TraceError::Write {
            format: Format::Closed,
            index: 0,
            problem: writer::CLOSED_NOT_WRITTEN.into(),
        });
    }
    let mut reader = open(input, in_format, &opts.read)?;
    let mut w = writer(out_format, output, &opts.write);
    let mut read = 0;
    for r in reader.by_ref() {
        w.record(&r?)?;
        read += 1;
    }
    w.finish()?;
    Ok(Summary {
        input_format: reader.format(),
        output_format: out_format,
        records_read: read,
        skipped: reader.skipped(),
        filtered: reader.filtered(),
        written: w.stats(),
    })
}
