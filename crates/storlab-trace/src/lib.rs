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
mod convert;
mod detect;
pub mod disksim;
mod error;
pub mod fio;
mod format;
mod linesrc;
pub mod msr;
mod read_options;
mod reader;
mod record;
mod remap;
mod stats;
mod text;
mod writer;

pub use assemble::BlkEvent;
pub use convert::{convert, ConvertOptions, Summary};
pub use detect::detect;
pub use error::TraceError;
pub use format::Format;
pub use read_options::ReadOptions;
pub use reader::{blktrace_from_readers, open, open_blktrace, open_reader, TraceReader};
pub use record::{dev_major, dev_minor, make_dev, OpSet, TraceOp, TraceRecord, MINOR_BITS};
pub use remap::{remap, RemapMode};
pub use stats::{stats, Distribution, OpCount, SizeBucket, TraceStats};
pub use writer::{
    writer, BlkparseWriter, BlktraceWriter, DisksimWriter, FioWriter, MsrWriter, ReorderWriter,
    TraceWriter, WriteOptions, WriteStats,
};
