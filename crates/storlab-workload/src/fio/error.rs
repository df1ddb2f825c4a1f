//! Errors of the fio front end and the generator, with the place they come from.

use std::fmt;
use std::path::PathBuf;

/// Where an option or a section was written: a job file and line, or a
/// command-line argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The job file's path as given, or `command line`.
    pub source: String,
    /// 1-based line number in the file, or 1-based argument index on the
    /// command line.
    pub line: usize,
    /// True when `line` counts command-line arguments rather than lines.
    pub is_cli: bool,
}

impl Location {
    /// A line of a job file (or of text parsed under `source` as its name).
    pub fn file(source: &str, line: usize) -> Self {
        Location {
            source: source.to_string(),
            line,
            is_cli: false,
        }
    }

    /// The `index`-th (1-based) command-line argument.
    pub fn cli(index: usize) -> Self {
        Location {
            source: "command line".to_string(),
            line: index,
            is_cli: true,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_cli {
            write!(f, "{}, argument {}", self.source, self.line)
        } else {
            write!(f, "{}:{}", self.source, self.line)
        }
    }
}

/// Everything that can go wrong reading a fio job or starting its generator.
///
/// Every variant that concerns user input names the place (file and line, or
/// command-line argument) so the message can be acted on without a debugger.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// A job file (or an `include`d file) could not be read.
    // the OS error is the source, not repeated here
    #[error("cannot read job file {path}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// A line that is neither a section header, an option, a comment nor an
    /// `include` directive, or a malformed section header.
    #[error("{location}: {message}")]
    Syntax {
        /// Where.
        location: Location,
        /// What is wrong, in words.
        message: String,
    },

    /// An option fio may know but storlab does not simulate or record.
    #[error(
        "{location}: option `{option}` is not supported by storlab{suggestion}; supported options: {supported}"
    )]
    UnsupportedOption {
        /// Where.
        location: Location,
        /// The option as written.
        option: String,
        /// ` (did you mean `x`?)` or empty.
        suggestion: String,
        /// Comma-separated list of every supported option name.
        supported: String,
    },

    /// A supported option with a value that is not valid for it.
    #[error("{location}: invalid value `{value}` for option `{option}`: {reason}")]
    InvalidValue {
        /// Where.
        location: Location,
        /// The option as written.
        option: String,
        /// The value as written (after `${VAR}` expansion).
        value: String,
        /// Why it is refused.
        reason: String,
    },

    /// Options that are each valid but do not make a runnable job together.
    #[error("{location}: job `{job}`: {reason}")]
    InvalidJob {
        /// Where the job's section starts (or its `--name`).
        location: Location,
        /// The job's name.
        job: String,
        /// Why it cannot run.
        reason: String,
    },

    /// The input defines no job at all.
    #[error("{source_name}: no job defined (a job file needs at least one [section] other than [global]; on the command line use --name=<job>)")]
    NoJobs {
        /// The file name or `command line`.
        source_name: String,
    },

    /// The job cannot be generated on this device (for example its offset is
    /// beyond the device's capacity).
    #[error("job `{job}` thread {thread}: {reason}")]
    Generator {
        /// The job's name.
        job: String,
        /// The thread (clone) index within the job.
        thread: u32,
        /// Why.
        reason: String,
    },
}
