//! The crate's error type.
//!
//! Every error that comes from input names the input (its path, or the name
//! given to [`crate::open_reader`]) and where in it the problem is: the line
//! number for text formats, the byte offset for binary blktrace files.

use crate::format::Format;
use std::str::FromStr;

/// Why reading, writing or converting a trace failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The operating system refused to open, read or write a file.
    // the OS error is the source, not repeated here
    #[error("{path}")]
    Io {
        /// The file (or stream name) involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A line of a text trace could not be used.
    #[error("{path}:{line}: {problem} (line: `{text}`)")]
    Line {
        /// The trace file.
        path: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong with it.
        problem: String,
        /// The start of the offending line, for the reader's benefit.
        text: String,
    },
    /// A record of a binary (blktrace) trace could not be used.
    #[error("{path}: byte offset {offset}: {problem}")]
    Binary {
        /// The trace file.
        path: String,
        /// Byte offset of the start of the offending record.
        offset: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// The format was not given and could not be recognised from the content.
    #[error("{path}: cannot tell the trace format: {reason}")]
    UnknownFormat {
        /// The trace file.
        path: String,
        /// What was seen.
        reason: String,
    },
    /// A format name given by the user is not one we know.
    #[error(
        "unknown trace format `{0}` (expected one of: fio2, fio3, iolog, blkparse, blktrace, msr, disksim)"
    )]
    FormatName(String),
    /// A problem with the input as a whole (for instance a missing header).
    #[error("{path}: {problem}")]
    Input {
        /// The trace file.
        path: String,
        /// What is wrong.
        problem: String,
    },
    /// A record could not be written in the requested format.
    #[error("writing a {format} trace, record {index}: {problem}")]
    Write {
        /// The output format.
        format: Format,
        /// 0-based index of the record handed to the writer.
        index: u64,
        /// What is wrong.
        problem: String,
    },
}

/// Shortens a line for inclusion in an error message.
pub(crate) fn excerpt(line: &[u8]) -> String {
    const MAX: usize = 120;
    let cut = &line[..line.len().min(MAX)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if line.len() > MAX {
        s.push('…');
    }
    s
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
