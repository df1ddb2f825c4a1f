//! [`convert`]: read a trace in one format, write it in another.

use crate::error::TraceError;
use crate::format::Format;
use crate::read_options::ReadOptions;
use crate::reader::open;
use crate::writer::{self, writer, WriteOptions, WriteStats};
use serde::Serialize;
use std::io::Write;
use std::path::Path;

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
