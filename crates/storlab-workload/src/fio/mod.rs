//! fio job files and command lines, parsed into typed job descriptions.
//!
//! # Design
//!
//! Parsing runs in three stages, each testable alone:
//!
//! 1. `ini`: text to `[sections]` of raw `key[=value]` entries, with fio's
//!    line rules (a `;` or `#` anywhere starts a comment, `include file`,
//!    `${VAR}` expansion). The command line produces the same entries from
//!    `--key=value` arguments (`cli`).
//! 2. Assembly (`assemble`): `[global]` sections accumulate and each job
//!    sees the globals written above it; a job's own options replace a
//!    global's in place. Group ids follow fio: a job with `stonewall` or
//!    `new_group` starts a new reporting group unless it is the first job of
//!    the current one.
//! 3. `options`: every option is looked up in one table (name, aliases,
//!    value kind, whether the simulator uses it or only records it) and its
//!    value parsed into [`JobSpec`] fields whose names carry their units.
//!
//! An option not in the table is an error that names it, the place it was
//! written, a close match if there is one, and every supported option: a
//! silently ignored option would make a simulation disagree with the job
//! the user wrote. Where fio itself silently reads garbage (`bs=1.5k` is 1
//! byte in fio 3.33, `runtime=1x` is 1 µs) storlab refuses the value.
//!
//! Sizes given as percentages stay [`SizeSpec::Percent`] until the device
//! capacity is known; [`JobSpec::region`] resolves them.

mod assemble;
mod build;
mod cli;
pub mod dp;
mod engine;
mod entry;
mod error;
mod ini;
mod job;
mod options;
mod optparse;
mod types;
mod value;
pub mod zbd;

use std::path::Path;

pub use cli::{parse_cli_args, parse_cli_args_with_env};
pub use engine::{engine_kind, engine_names, EngineKind, DEFAULT_ENGINE};
pub use error::{FioError, Location};
pub use ini::EnvLookup;
pub use job::{JobFile, JobSpec, FIO_DEFAULT_SEED};
pub use options::{canonical_option, option_names, supported_options, OptionEffect};
pub use types::{
    BlockSizeSpec, BsSplitEntry, Distribution, Fallocate, LogOptions, RateProcess, RwMode,
    RwSequencer, SizeSpec, ThinktimeBlocksType, UnifiedRw, Zone, ZoneAbs, Zones,
};

use assemble::Assembler;

/// A size as fio reads it with its default `kb_base=1024` (`4k` is 4096,
/// `1m` 1048576, `0x1000` 4096); the message says what is wrong.
pub fn parse_size(text: &str) -> Result<u64, String> {
    value::parse_size(text, 1024)
}

/// A time as fio reads it (`60s`, `500ms`, `10us`), ns; a bare number is
/// in units of `default_unit_us` microseconds (fio's `runtime` takes
/// seconds: 1,000,000).
pub fn parse_time(text: &str, default_unit_us: u64) -> Result<u64, String> {
    value::parse_time_ns(text, default_unit_us)
}

/// Parse a job file from disk. `include` directives are resolved relative
/// to the including file; `${VAR}` uses the process environment.
pub fn parse_job_file(path: &Path) -> Result<JobFile, FioError> {
    let env = |k: &str| std::env::var(k).ok();
    parse_job_file_with_env(path, &env)
}

/// [`parse_job_file`] with an explicit environment for `${VAR}`.
pub fn parse_job_file_with_env(path: &Path, env: EnvLookup<'_>) -> Result<JobFile, FioError> {
    let mut asm = Assembler::default();
    asm.add_file(path, &[], env)?;
    asm.finish(&path.display().to_string())
}

/// Parse job-file text; `source_name` is used in messages. `${VAR}` uses the
/// process environment; `include` is refused (there is no directory to
/// resolve it against).
pub fn parse_job_str(source_name: &str, text: &str) -> Result<JobFile, FioError> {
    let env = |k: &str| std::env::var(k).ok();
    parse_job_str_with_env(source_name, text, &env)
}

/// [`parse_job_str`] with an explicit environment for `${VAR}`.
pub fn parse_job_str_with_env(
    source_name: &str,
    text: &str,
    env: EnvLookup<'_>,
) -> Result<JobFile, FioError> {
    let sections = ini::parse_sections(source_name, text, None, env)?;
    let mut asm = Assembler::default();
    asm.add_sections(&sections, &[])?;
    asm.finish(source_name)
}
