//! Application jobs as the run loop sees them. A job section naming an
//! application (`app=`) is built by the [`AppProvider`] the caller passes
//! to `run::simulate_with`; the simulator knows no application model: it
//! sizes the host with the job's [`AppJob::threads`], lets it lay out its
//! files after the fio jobs' ([`AppJob::set_up`]) and runs the
//! [`AppDriver`] it gives back beside the fio threads of its phase.
//! `storlab_apps::simulate` runs a job file with the application models.

use storlab_model::host::fs::FileLayer;
use storlab_model::host::HostConfig;
use storlab_pmem::model::NvmmParams;
use storlab_workload::fio::JobSpec;

use crate::engine::AppDriver;
use crate::stats::JobStats;

/// An application job's error, reported through the run's error as it is.
pub type AppJobError = Box<dyn std::error::Error + Send + Sync>;

/// Builds the application jobs of a job file.
pub trait AppProvider {
    /// Build job `job`'s application (the job names one: `job.app` is
    /// set), in job order, before the device's files are laid out; `seed`
    /// is the run's.
    fn build(&self, job: &JobSpec, seed: u64) -> Result<Box<dyn AppJob>, AppJobError>;
    /// After each phase (a group of jobs up to a `stonewall`) has run:
    /// the error to end the run with when the phase's statistics (fio
    /// jobs' and applications', in report order) say an application
    /// failed.
    fn check(&self, stats: &[JobStats]) -> Result<(), AppJobError>;
}

/// An application job, built but not yet set up.
pub trait AppJob {
    /// The host threads it asks for (the host is sized before any file
    /// is laid out).
    fn threads(&self) -> u32;
    /// Create its files on the file system and make it ready to run;
    /// returns it with the host threads it runs as (from
    /// `at.first_thread` on).
    fn set_up(self: Box<Self>, at: AppSetup<'_>) -> Result<(Box<dyn AppDriver>, u32), AppJobError>;
}

/// Where an application job is set up.
pub struct AppSetup<'a> {
    /// The file system, with the fio jobs' files already laid out.
    pub fs: &'a mut FileLayer,
    /// The host.
    pub host: &'a HostConfig,
    /// The device's capacity, bytes.
    pub capacity: u64,
    /// The device's parameters when it is NVMM (the `nvmm` class).
    pub nvmm: Option<&'a NvmmParams>,
    /// Its first host thread.
    pub first_thread: u32,
    /// The job's name.
    pub job: &'a str,
    /// The job's fio group.
    pub group_id: u32,
    /// The run's seed.
    pub seed: u64,
}

/// No application models: every `app=` job is refused (the simulator's
/// own `run::simulate`).
pub struct NoApps;

impl AppProvider for NoApps {
    fn build(&self, job: &JobSpec, _seed: u64) -> Result<Box<dyn AppJob>, AppJobError> {
        let app = job.app.as_ref().map_or("", |(name, _)| name.as_str());
        Err(format!(
            "job `{}`: app={app}: this run has no application models \
             (storlab_apps::simulate runs them)",
            job.name
        )
        .into())
    }

    fn check(&self, _stats: &[JobStats]) -> Result<(), AppJobError> {
        Ok(())
    }
}
