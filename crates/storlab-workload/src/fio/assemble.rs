//! Assembly: `[global]` sections accumulate and each job sees the globals
//! written above it; jobs get their index and reporting group (see the
//! [`crate::fio`] module documentation, stage 2).

use std::path::Path;

use super::build::build_job;
use super::entry::{as_written_merged, Entry};
use super::error::FioError;
use super::ini::{self, EnvLookup, RawOption, Section};
use super::job::{JobFile, JobSpec};

/// Turns sections into jobs, keeping the counters fio keeps across all
/// inputs (job index, reporting group).
#[derive(Default)]
pub(crate) struct Assembler {
    jobs: Vec<JobSpec>,
    group_id: u32,
    jobs_in_group: u32,
    last_globals: Vec<(String, String)>,
}

impl Assembler {
    /// Read and add a job file; `defaults` are global options in force
    /// before the file's own (fio's command-line options).
    pub(crate) fn add_file(
        &mut self,
        path: &Path,
        defaults: &[RawOption],
        env: EnvLookup<'_>,
    ) -> Result<(), FioError> {
        let text = std::fs::read(path).map_err(|source| FioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8_lossy(&text);
        let base = path.parent().map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        });
        let sections = ini::parse_sections(&path.display().to_string(), &text, base, env)?;
        self.add_sections(&sections, defaults)
    }

    /// Add sections in order. `[global]` sections update the globals that
    /// later sections see; every other section is a job.
    pub(crate) fn add_sections(
        &mut self,
        sections: &[Section],
        defaults: &[RawOption],
    ) -> Result<(), FioError> {
        // Entries are applied in the order written (globals, then the job's
        // own), exactly as fio copies the global options and then parses the
        // job's over them.
        let mut globals: Vec<Entry> = Vec::new();
        for raw in defaults {
            globals.push(Entry::new(raw.clone())?);
        }
        for section in sections {
            if section.name == "global" {
                for raw in &section.options {
                    globals.push(Entry::new(raw.clone())?);
                }
                continue;
            }
            let mut entries = globals.clone();
            for raw in &section.options {
                entries.push(Entry::new(raw.clone())?);
            }
            let mut job = build_job(&section.name, &section.location, &entries)?;
            job.job_index = u32::try_from(self.jobs.len()).unwrap_or(u32::MAX);
            if (job.stonewall || job.new_group) && self.jobs_in_group > 0 {
                self.group_id += 1;
                self.jobs_in_group = 0;
            }
            job.group_id = self.group_id;
            self.jobs_in_group += 1;
            self.jobs.push(job);
        }
        self.last_globals = as_written_merged(&globals);
        Ok(())
    }

    pub(crate) fn finish(self, source_name: &str) -> Result<JobFile, FioError> {
        if self.jobs.is_empty() {
            return Err(FioError::NoJobs {
                source_name: source_name.to_string(),
            });
        }
        Ok(JobFile {
            jobs: self.jobs,
            global_options: self.last_globals,
            frontend_options: Vec::new(),
        })
    }
}
