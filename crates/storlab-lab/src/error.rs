//! The lab's errors: each names the run (device, overrides, fio arguments)
//! or the file and line it comes from; the cause is the error's source
//! (printed after it by `storlab`, as `context: cause`).

use std::path::PathBuf;

/// Anything that stops a reproduction, a sweep or a merge.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The device preset or an override was refused.
    #[error("device '{device}' {overrides:?}")]
    Config {
        /// Preset name or file.
        device: String,
        /// The `--set` overrides of the run.
        overrides: Vec<String>,
        /// Why.
        #[source]
        source: Box<storlab_model::config::ConfigError>,
    },
    /// The fio arguments were refused.
    #[error("fio arguments {args:?}")]
    Fio {
        /// The arguments.
        args: Vec<String>,
        /// Why.
        #[source]
        source: Box<storlab_workload::fio::FioError>,
    },
    /// The simulation stopped with an error.
    #[error("simulating {args:?} on '{device}'")]
    Run {
        /// Preset name or file.
        device: String,
        /// The fio arguments.
        args: Vec<String>,
        /// Why.
        #[source]
        source: Box<storlab_sim::run::RunError>,
    },
    /// The run produced no job.
    #[error("fio arguments {0:?} define no job")]
    NoJobs(Vec<String>),
    /// The job to measure is not among the run's jobs.
    #[error("no job called '{name}' in {args:?}")]
    NoSuchJob {
        /// The name asked for.
        name: String,
        /// The fio arguments.
        args: Vec<String>,
    },
    /// A study name that does not exist.
    #[error("unknown study '{name}' (studies: {known})")]
    UnknownStudy {
        /// The name asked for.
        name: String,
        /// The names that exist, comma separated.
        known: String,
    },
    /// A sweep specification that cannot be used.
    #[error("{0}")]
    Sweep(String),
    /// The sensitivity check cannot perturb a device or compare a study's
    /// runs (`crate::sensitivity`).
    #[error("sensitivity check: {0}")]
    Sensitivity(String),
    /// A sweep result file that cannot be merged.
    #[error("{path}:{line}: {message}")]
    Merge {
        /// The file.
        path: PathBuf,
        /// 1-based line number (0: the file as a whole).
        line: usize,
        /// What is wrong there.
        message: String,
    },
    /// Reading or writing a file.
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Drawing a figure.
    #[error("drawing {path}: {message}")]
    Plot {
        /// The figure's file.
        path: PathBuf,
        /// The plotting library's message.
        message: String,
    },
}

/// The lab's result type.
pub type Result<T> = std::result::Result<T, LabError>;
