//! fio's command line: `--name=job --rw=randread --bs=4k ... [jobfile...]`.
//!
//! As in fio, job options given before the first `--name` form the global
//! section of the command-line jobs, each `--name` starts a job (or, with
//! `--name=global`, another global section), `--option value` is accepted
//! for options that need a value, and arguments that are not options are job
//! files. Command-line global options are *defaults* for the job files:
//! a file's own `[global]` and job sections override them (checked against
//! fio 3.33: `fio --bs=8k file.fio` with `bs=4k` in the file's `[global]`
//! runs 4k).

use std::path::Path;

use super::assemble::Assembler;
use super::error::{FioError, Location};
use super::ini::{EnvLookup, RawOption, Section};
use super::job::JobFile;
use super::options::{lookup, Kind};

/// fio front-end options (not job options) that storlab records for its
/// caller: name and whether a value is required.
const FRONTEND_OPTIONS: &[(&str, bool)] = &[
    ("output", true),
    ("output-format", true),
    ("parse-only", false),
    ("minimal", false),
    ("append-terse", false),
    ("terse-version", true),
    ("eta", true),
    ("eta-interval", true),
    ("eta-newline", true),
    ("status-interval", true),
    ("section", true),
    ("warnings-fatal", false),
    ("max-jobs", true),
    ("readonly", false),
    ("showcmd", false),
    ("debug", true),
];

/// Parse fio command-line arguments (without the program name). Job files
/// named among them are read with the process environment for `${VAR}`.
pub fn parse_cli_args(args: &[String]) -> Result<JobFile, FioError> {
    let env = |k: &str| std::env::var(k).ok();
    parse_cli_args_with_env(args, &env)
}

/// [`parse_cli_args`] with an explicit environment for job files.
pub fn parse_cli_args_with_env(args: &[String], env: EnvLookup<'_>) -> Result<JobFile, FioError> {
    let mut sections: Vec<Section> = vec![Section {
        name: "global".to_string(),
        location: Location::cli(0),
        options: Vec::new(),
    }];
    let mut files: Vec<&str> = Vec::new();
    let mut frontend: Vec<(String, String)> = Vec::new();
    let mut only_positional = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let location = Location::cli(i + 1);
        i += 1;
        if only_positional || !arg.starts_with('-') || arg == "-" {
            files.push(arg);
            continue;
        }
        if arg == "--" {
            only_positional = true;
            continue;
        }
        let Some(body) = arg.strip_prefix("--") else {
            return Err(FioError::Syntax {
                location,
                message: format!(
                    "`{arg}`: short options are not supported; use the --long=value form"
                ),
            });
        };
        let (key, inline_value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        let needs_value = if let Some((_, needs)) = FRONTEND_OPTIONS.iter().find(|(n, _)| *n == key)
        {
            *needs
        } else {
            lookup(key).is_some_and(|d| d.kind != Kind::Flag)
        };
        let value = match inline_value {
            Some(v) => Some(v),
            None if needs_value => {
                let Some(next) = args.get(i) else {
                    return Err(FioError::InvalidValue {
                        location,
                        option: key.to_string(),
                        value: String::new(),
                        reason: "this option needs a value (`--option=value`)".into(),
                    });
                };
                i += 1;
                Some(next.clone())
            }
            None => None,
        };
        if FRONTEND_OPTIONS.iter().any(|(n, _)| *n == key) {
            frontend.push((key.to_string(), value.unwrap_or_default()));
            continue;
        }
        if key == "name" {
            let name = value.unwrap_or_default();
            if name.is_empty() {
                return Err(FioError::InvalidValue {
                    location,
                    option: "name".into(),
                    value: String::new(),
                    reason: "the job name may not be empty".into(),
                });
            }
            sections.push(Section {
                name,
                location,
                options: Vec::new(),
            });
            continue;
        }
        let raw = RawOption {
            key: key.to_string(),
            value,
            location,
        };
        if let Some(current) = sections.last_mut() {
            current.options.push(raw);
        }
    }

    // Command-line globals (before the first --name, and --name=global
    // sections) are the defaults every job file starts from.
    let defaults: Vec<RawOption> = sections
        .iter()
        .filter(|s| s.name == "global")
        .flat_map(|s| s.options.iter().cloned())
        .collect();
    let mut asm = Assembler::default();
    asm.add_sections(&sections, &[])?;
    for f in &files {
        asm.add_file(Path::new(f), &defaults, env)?;
    }
    // no job at all: blame the job file(s) given, if any (an empty file is
    // the likelier mistake than a missing --name)
    let source = if files.is_empty() {
        "command line".to_string()
    } else {
        files.join(", ")
    };
    let mut job_file = asm.finish(&source)?;
    job_file.frontend_options = frontend;
    Ok(job_file)
}
