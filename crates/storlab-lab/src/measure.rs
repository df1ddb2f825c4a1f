//! One simulation run and what the lab reads off it. A run is a [`Spec`]
//! (device, `--set` overrides, fio command-line arguments) taken through
//! the same path as `storlab sim`; a [`Plan`] collects the runs a study or
//! a sweep needs, drops repeats, and runs them in parallel (each run is
//! deterministic, so the order they finish in changes nothing).

use rayon::prelude::*;
use serde_json::Value;
use storlab_apps::simulate;
use storlab_model::breakdown::COMPONENTS;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::stats::JobStats;

use crate::error::{LabError, Result};

/// One simulation: a device preset with overrides, and fio arguments.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Spec {
    /// Preset name or TOML file.
    pub device: String,
    /// `key.path=value` overrides, as `storlab sim --set`.
    pub overrides: Vec<String>,
    /// fio command-line arguments (`--name=...`, `--rw=...`, a job file).
    pub fio: Vec<String>,
    /// The seed for anything the jobs leave unseeded (`storlab sim --seed`).
    pub seed: u64,
    /// Merge only the job threads with this name into the [`Run`] (a
    /// measured group after a warm-up group); all when `None`.
    pub only: Option<String>,
}

impl Spec {
    /// A run of `fio` arguments on `device` with `overrides`, seed 1 (the
    /// `storlab sim` default).
    pub fn new(device: &str, overrides: &[&str], fio: &[&str]) -> Self {
        Spec {
            device: device.to_string(),
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            fio: fio.iter().map(|s| s.to_string()).collect(),
            seed: 1,
            only: None,
        }
    }

    /// The same run, measuring only the jobs called `name`.
    pub fn only(mut self, name: &str) -> Self {
        self.only = Some(name.to_string());
        self
    }

    /// One thread, queue depth 1, random (or `rw`) accesses of `bs` over
    /// 4 GiB: the studies' latency tests (docs/spec/workloads.md).
    pub fn qd1(device: &str, overrides: &[&str], rw: &str, bs: &str, n: u32) -> Self {
        Spec::new(
            device,
            overrides,
            &[
                "--name=qd1",
                &format!("--rw={rw}"),
                &format!("--bs={bs}"),
                "--iodepth=1",
                "--numjobs=1",
                "--size=4g",
                &format!("--number_ios={n}"),
            ],
        )
    }

    /// XDD-style bandwidth (docs/spec/workloads.md): 16 threads, one request
    /// outstanding each, random locations, `ios_per_thread` each.
    pub fn xdd(device: &str, overrides: &[&str], rw: &str, bs: &str, ios_per_thread: u32) -> Self {
        Spec::new(
            device,
            overrides,
            &[
                "--name=xdd",
                &format!("--rw={rw}"),
                &format!("--bs={bs}"),
                "--iodepth=1",
                "--numjobs=16",
                "--norandommap",
                &format!("--number_ios={ios_per_thread}"),
            ],
        )
    }

    /// The same run with `extra` fio arguments appended.
    pub fn with_fio(mut self, extra: &[&str]) -> Self {
        self.fio.extend(extra.iter().map(|s| s.to_string()));
        self
    }

    /// Simulate: one record per job thread.
    pub fn run_jobs(&self) -> Result<Vec<JobStats>> {
        let (resolved, cfg) =
            SystemConfig::load(&PresetStore::default(), &self.device, &self.overrides).map_err(
                |source| LabError::Config {
                    device: self.device.clone(),
                    overrides: self.overrides.clone(),
                    source: Box::new(source),
                },
            )?;
        let jobs =
            storlab_workload::fio::parse_cli_args(&self.fio).map_err(|source| LabError::Fio {
                args: self.fio.clone(),
                source: Box::new(source),
            })?;
        let r = simulate(&cfg, &resolved, &jobs, self.seed, &mut |_, _| {}).map_err(|source| {
            LabError::Run {
                device: self.device.clone(),
                args: self.fio.clone(),
                source: Box::new(source),
            }
        })?;
        if r.jobs.is_empty() {
            return Err(LabError::NoJobs(self.fio.clone()));
        }
        Ok(r.jobs)
    }

    /// Simulate: every job thread (or every one named [`Spec::only`])
    /// merged into one [`Run`].
    pub fn run(&self) -> Result<Run> {
        let mut jobs = self.run_jobs()?;
        if let Some(name) = &self.only {
            jobs.retain(|j| &j.name == name);
            if jobs.is_empty() {
                return Err(LabError::NoSuchJob {
                    name: name.clone(),
                    args: self.fio.clone(),
                });
            }
        }
        Ok(Run::merged(&jobs))
    }
}

/// A simulation's results: all job threads merged, and the `storlab`
/// object (counters, wear, power) of the first.
#[derive(Clone, Debug)]
pub struct Run {
    /// The merged statistics.
    pub stats: JobStats,
    /// The first job's `storlab` report object.
    pub storlab: Value,
    /// The first application job's `app` object (`Value::Null` when the
    /// run has no application).
    pub app: Value,
}

impl Run {
    /// Merge job threads into one record.
    pub fn merged(jobs: &[JobStats]) -> Run {
        let mut stats = jobs[0].clone();
        for j in &jobs[1..] {
            stats.merge(j);
        }
        Run {
            storlab: jobs[0].storlab.clone(),
            app: jobs
                .iter()
                .find_map(|j| j.app.clone())
                .unwrap_or(Value::Null),
            stats,
        }
    }

    /// The application's metric (its `app.metric`: transactions/s,
    /// seconds, ...); NaN when the run has no application.
    pub fn app_metric(&self) -> f64 {
        self.app["metric"].as_f64().unwrap_or(f64::NAN)
    }
    /// Mean total latency of direction `d` (0 read, 1 write), µs.
    pub fn lat_us(&self, d: usize) -> f64 {
        self.stats.dirs[d].lat().mean() / 1000.0
    }
    /// Mean sync (fsync/msync) latency, ns.
    pub fn sync_ns(&self) -> f64 {
        self.stats.sync.lat().mean()
    }
    /// Bandwidth of direction `d`, GB/s (10^9 bytes per second).
    pub fn gbps(&self, d: usize) -> f64 {
        self.stats.dirs[d].io_bytes() as f64 / self.stats.runtime_ns[d].max(1) as f64
    }
    /// Read + write bandwidth over the longer of the two runtimes, GB/s.
    pub fn total_gbps(&self) -> f64 {
        let t = self.stats.runtime_ns[0]
            .max(self.stats.runtime_ns[1])
            .max(1) as f64;
        (self.stats.dirs[0].io_bytes() + self.stats.dirs[1].io_bytes()) as f64 / t
    }
    /// Bandwidth of direction `d`, MB/s (10^6 bytes per second).
    pub fn mbps(&self, d: usize) -> f64 {
        self.gbps(d) * 1000.0
    }
    /// Read + write bandwidth, MB/s.
    pub fn total_mbps(&self) -> f64 {
        self.total_gbps() * 1000.0
    }
    /// IOPS of direction `d`.
    pub fn iops(&self, d: usize) -> f64 {
        self.stats.dirs[d].ios() as f64 / self.stats.runtime_ns[d].max(1) as f64 * 1e9
    }
    /// Share of direction `d`'s mean latency spent in host software.
    pub fn software_share(&self, d: usize) -> f64 {
        let total: f64 = self.stats.dirs[d].mean_breakdown_ns().iter().sum();
        self.software_us(d) * 1000.0 / total
    }
    /// Mean time of direction `d` in host software, µs.
    pub fn software_us(&self, d: usize) -> f64 {
        self.split_us(d, true)
    }
    /// Mean time of direction `d` outside host software (the device's
    /// share: link, queues, controllers, media), µs.
    pub fn device_us(&self, d: usize) -> f64 {
        self.split_us(d, false)
    }
    fn split_us(&self, d: usize, software: bool) -> f64 {
        let b = self.stats.dirs[d].mean_breakdown_ns();
        COMPONENTS
            .iter()
            .filter(|c| c.is_software() == software)
            .map(|&c| b[c as usize])
            .sum::<f64>()
            / 1000.0
    }
    /// Mean instructions of host software per request of direction `d`
    /// (0 read, 1 write) over the run (`host_software` in the `storlab`
    /// object); `None` without `host.ghz` and `host.cpi`, or with no
    /// request of that direction.
    pub fn instructions(&self, d: usize) -> Option<f64> {
        let dir = if d == 0 { "read" } else { "write" };
        self.storlab["host_software"]["instructions_per_io"][dir].as_f64()
    }
    /// Mean core time of host software per request of direction `d`, ns
    /// (see [`Run::instructions`]).
    pub fn cpu_ns(&self, d: usize) -> Option<f64> {
        let dir = if d == 0 { "read" } else { "write" };
        self.storlab["host_software"]["cpu_ns_per_io"][dir].as_f64()
    }
    /// Sum of a device counter over every member (`member0.NAME`,
    /// `member1.NAME`, ... and `NAME` itself).
    pub fn counter_sum(&self, name: &str) -> f64 {
        self.storlab["counters"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|c| {
                        c["name"].as_str().is_some_and(|n| {
                            n == name || n.strip_suffix(name).is_some_and(|p| p.ends_with('.'))
                        })
                    })
                    .filter_map(|c| c["value"].as_f64())
                    .sum()
            })
            .unwrap_or(0.0)
    }
    /// A device counter from the `storlab` object by name (0 when absent).
    pub fn counter(&self, name: &str) -> f64 {
        self.storlab["counters"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == name))
            .and_then(|c| c["value"].as_f64())
            .unwrap_or(0.0)
    }
}

/// A handle to a run added to a [`Plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunId(usize);

/// The runs a study or sweep needs, each once.
#[derive(Default, Debug)]
pub struct Plan {
    specs: Vec<Spec>,
}

impl Plan {
    /// An empty plan.
    pub fn new() -> Self {
        Plan::default()
    }
    /// Add a run (or find the same one added before).
    pub fn add(&mut self, spec: Spec) -> RunId {
        if let Some(i) = self.specs.iter().position(|s| *s == spec) {
            return RunId(i);
        }
        self.specs.push(spec);
        RunId(self.specs.len() - 1)
    }
    /// How many distinct runs.
    pub fn len(&self) -> usize {
        self.specs.len()
    }
    /// No runs at all.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
    /// The runs, in the order they were added (what the HTML report
    /// lists under how the figures were made).
    pub fn specs(&self) -> &[Spec] {
        &self.specs
    }
    /// The same plan with every run replaced by `f` of it, in place: each
    /// [`RunId`] handed out before still reads the run made from its
    /// spec (two specs that `f` makes equal stay two runs). The first
    /// error, in plan order, is returned. Used by the sensitivity check
    /// ([`crate::sensitivity`]) to add overrides to every run of a study.
    pub fn map_specs(self, mut f: impl FnMut(&Spec) -> Result<Spec>) -> Result<Plan> {
        Ok(Plan {
            specs: self.specs.iter().map(&mut f).collect::<Result<_>>()?,
        })
    }
    /// Run everything, in parallel; `progress` is called once per
    /// finished run (from any thread). The first error, in plan order,
    /// is returned.
    pub fn run(self, progress: &(dyn Fn() + Sync)) -> Result<Results> {
        let runs: Vec<Result<Run>> = self
            .specs
            .par_iter()
            .map(|s| {
                let r = s.run();
                progress();
                r
            })
            .collect();
        Ok(Results {
            runs: runs.into_iter().collect::<Result<Vec<_>>>()?,
        })
    }
}

/// The runs of a [`Plan`], read back by [`RunId`].
#[derive(Debug)]
pub struct Results {
    runs: Vec<Run>,
}

impl std::ops::Index<RunId> for Results {
    type Output = Run;
    fn index(&self, id: RunId) -> &Run {
        &self.runs[id.0]
    }
}

impl Run {
    /// The share of the application's time in layer `name`
    /// (`app.time_by_layer`), 0 when absent.
    pub fn app_layer_share(&self, name: &str) -> f64 {
        self.app["time_by_layer"][name]["share"]
            .as_f64()
            .unwrap_or(0.0)
    }
}
