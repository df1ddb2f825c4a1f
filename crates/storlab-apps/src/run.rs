//! Running job files with applications: [`simulate`] (the simulator's
//! run with the application models: `storlab sim`, the lab, Python),
//! [`simulate_app`] (one application alone, its metric) and
//! [`calibrate`] (solving a parameter for a target metric).
//!
//! The simulator's run loop knows no application: [`Apps`] is the
//! [`AppProvider`] that builds a job's application from the registry
//! (its `app=` and `app_set=` lines) and runs it with the closed-loop
//! driver ([`AppRun`]); a job file that is one paging program runs on
//! the swap path instead ([`crate::paging`]).

use storlab_model::config::{PresetStore, Resolved};
use storlab_model::host::FileSystem;
use storlab_model::SystemConfig;
use storlab_sim::appjob::{AppJob, AppJobError, AppProvider, AppSetup};
use storlab_sim::engine::{AppDriver, Progress};
use storlab_sim::run::{RunError, RunResult};
use storlab_sim::stats::JobStats;
use storlab_workload::fio::{JobFile, JobSpec};

use crate::driver::AppRun;
use crate::error::AppError;
use crate::info::{AppInfo, AppKind, Params};
use crate::model::Model;
use crate::paging::{self, job_stats, SWAP_PRESET};
use crate::registry::{build, find, job_args};

/// Simulate `jobs` on the system, with `seed` for anything the jobs leave
/// unseeded, the jobs naming an application (`app=`) run by the
/// application models (the simulator's `run::simulate_with` with
/// [`Apps`]). Jobs with `stonewall` start after all earlier jobs
/// finished.
pub fn simulate(
    cfg: &SystemConfig,
    resolved: &Resolved,
    jobs: &JobFile,
    seed: u64,
    progress: Progress,
) -> Result<RunResult, RunError> {
    // a paging program alone runs on the swap path, the system its device
    if let Some(r) = simulate_alone(cfg, jobs, seed)? {
        return Ok(r);
    }
    // applications need a file system: XFS (the HASTE and Moneta studies')
    // when the configuration names none
    let has_apps = jobs.jobs.iter().any(|j| j.app.is_some());
    let app_cfg;
    let cfg = if has_apps && cfg.host.file_system == FileSystem::None {
        let mut c = cfg.clone();
        // on NVMM, PMFS (the NVMM study's file system for NVMM)
        c.host.file_system = if c.device.class == storlab_model::system::DeviceClass::Nvmm {
            FileSystem::Pmfs
        } else {
            FileSystem::Xfs
        };
        app_cfg = c;
        &app_cfg
    } else {
        cfg
    };
    // the device holds the data the application loaded before its
    // measured run: a flash device never written is written once
    let loaded_cfg;
    let cfg = if has_apps {
        match loaded_state(cfg) {
            Some(c) => {
                loaded_cfg = c;
                &loaded_cfg
            }
            None => cfg,
        }
    } else {
        cfg
    };
    // an application's IO mode as its study's rule sets it for this
    // device, unless the job sets it (files/mod.rs `device_defaults`)
    let with_rule;
    let jobs = if has_apps {
        let mut j = jobs.clone();
        for job in &mut j.jobs {
            if let Some((name, at)) = &job.app {
                let rule = crate::files::device_defaults(name, cfg.device.class);
                let at = at.clone();
                for pair in rule.into_iter().rev() {
                    job.app_set.insert(0, (pair, at.clone()));
                }
            }
        }
        with_rule = j;
        &with_rule
    } else {
        jobs
    };
    storlab_sim::run::simulate_with(cfg, resolved, jobs, seed, progress, &Apps)
}

/// The application models as the simulator's [`AppProvider`]: each
/// `app=` job's model built from the registry with its `app_set` lines
/// (and its `runtime=`, as the application's runtime), run by [`AppRun`].
pub struct Apps;

/// An application job's model, built: what it is, its parameters and the
/// model.
struct BuiltApp {
    info: &'static AppInfo,
    params: Params,
    model: Box<dyn Model>,
}

impl AppProvider for Apps {
    fn build(&self, j: &JobSpec, seed: u64) -> Result<Box<dyn AppJob>, AppJobError> {
        let _ = seed;
        let Some((name, at)) = &j.app else {
            unreachable!("the run loop builds jobs naming an application");
        };
        let place = format!("{at}, app");
        let info = find(name, &place)?;
        let mut given: Vec<(String, String)> = Vec::new();
        if let Some(rt) = j.runtime_ns {
            given.push((format!("runtime={}us", rt / 1000), place.clone()));
        }
        given.extend(
            j.app_set
                .iter()
                .map(|(v, l)| (v.clone(), format!("{l}, app_set"))),
        );
        let params = Params::parse_at(info, &given, &place)?;
        match build(info, &params)? {
            AppKind::Closed(model) => Ok(Box::new(BuiltApp {
                info,
                params,
                model,
            })),
            AppKind::Memory(_) => Err(Box::new(AppError::Run {
                app: info.name.into(),
                message: format!(
                    "{place}: a paging program runs alone on the swap path (storlab sim --app {})",
                    info.name
                ),
            })),
        }
    }

    fn check(&self, stats: &[JobStats]) -> Result<(), AppJobError> {
        // an application whose model failed while planning (a file that
        // does not fit) stopped early: its figures would mislead
        if let Some((app, e)) = stats.iter().find_map(|s| {
            let a = s.app.as_ref()?;
            Some((a["name"].as_str()?, a.get("error")?.as_str()?))
        }) {
            return Err(Box::new(AppError::Run {
                app: app.to_string(),
                message: e.to_string(),
            }));
        }
        Ok(())
    }
}

impl AppJob for BuiltApp {
    fn threads(&self) -> u32 {
        self.model.threads().0 + self.model.threads().1
    }

    fn set_up(self: Box<Self>, at: AppSetup<'_>) -> Result<(Box<dyn AppDriver>, u32), AppJobError> {
        let BuiltApp {
            info,
            params,
            model,
        } = *self;
        let run = AppRun::new(
            info,
            params,
            model,
            at.fs,
            at.host,
            at.capacity,
            at.nvmm,
            at.first_thread,
            at.job,
            at.group_id,
            at.seed,
        )?;
        let host_threads = run.host_threads();
        Ok((Box::new(run), host_threads))
    }
}

/// The device an application runs on, in the state its data leaves it:
/// a flash device (or a RAID of flash devices) never written
/// (`ssd.ftl.precondition = "fresh"`, the presets' default) is put in the
/// written-once state (`"full"`, over its `ssd.ftl.fullness`). An
/// application reads data it loaded before its measured run (a
/// database's load, Build's source tree, Postmark's pool), and a fresh
/// drive would answer those reads from its mapping table without
/// reading flash, as no drive holding the data does. Any other state a
/// configuration sets (`aged`, `full` with another fullness) is kept.
/// The lab, `storlab sim --app` and Python run applications through
/// [`simulate`], so all of them apply it. `None` when nothing changes.
pub fn loaded_state(cfg: &SystemConfig) -> Option<SystemConfig> {
    use storlab_model::devices::flash::ftl::Precondition;
    use storlab_model::system::DeviceClass;
    match cfg.device.class {
        DeviceClass::Ssd => {
            if cfg.ssd.as_ref()?.ftl.precondition != Precondition::Fresh {
                return None;
            }
            let mut c = cfg.clone();
            c.ssd.as_mut()?.ftl.precondition = Precondition::Full;
            Some(c)
        }
        DeviceClass::Raid0 => {
            let r = cfg.raid.as_ref()?;
            let store = PresetStore::default();
            // every member flash (the override names an [ssd] field), and
            // at least one of them never written
            let states: Option<Vec<Precondition>> = r
                .members
                .iter()
                .map(|m| {
                    SystemConfig::load_set_by(&store, m, &r.member_set, "raid.member_set")
                        .ok()
                        .and_then(|(_, mc)| mc.ssd.map(|s| s.ftl.precondition))
                })
                .collect();
            if !states?.contains(&Precondition::Fresh) {
                return None;
            }
            let mut c = cfg.clone();
            c.raid
                .as_mut()?
                .member_set
                .push("ssd.ftl.precondition=\"full\"".to_string());
            Some(c)
        }
        _ => None,
    }
}

/// A job file that is one paging program and nothing else, run as
/// `storlab sim --app` runs it (the system is the swap device); `None`
/// for any other job file (a paging program beside other jobs is
/// refused where the jobs are built: it runs alone on the swap path).
pub fn simulate_alone(
    cfg: &SystemConfig,
    jobs: &storlab_workload::fio::JobFile,
    seed: u64,
) -> Result<Option<RunResult>, RunError> {
    let [j] = jobs.jobs.as_slice() else {
        return Ok(None);
    };
    let Some((name, at)) = &j.app else {
        return Ok(None);
    };
    let place = format!("{at}, app");
    let info = find(name, &place)?;
    let given: Vec<(String, String)> = j
        .app_set
        .iter()
        .map(|(v, l)| (v.clone(), format!("{l}, app_set")))
        .collect();
    let params = Params::parse_at(info, &given, &place)?;
    let AppKind::Memory(m) = build(info, &params)? else {
        return Ok(None);
    };
    let r = paging::run(&PresetStore::default(), SWAP_PRESET, &m, cfg, &[], seed).map_err(|e| {
        AppError::Run {
            app: info.name.into(),
            message: e.to_string(),
        }
    })?;
    let end = r.paged.touch_ns + r.paged.elapsed_ns;
    Ok(Some(RunResult {
        jobs: vec![job_stats(&j.name, j.group_id, info, &params, &m, &r)],
        sim_ns: end,
        events: 0,
    }))
}

/// Run `app` alone with `pairs` (checked first, errors naming `place`)
/// on the system and return its metric.
pub fn simulate_app(
    cfg: &storlab_model::SystemConfig,
    resolved: &storlab_model::config::Resolved,
    app: &'static AppInfo,
    pairs: &[String],
    place: &str,
    seed: u64,
) -> Result<f64, RunError> {
    let params = Params::parse(app, pairs, place)?;
    if let AppKind::Memory(m) = build(app, &params)? {
        // a paging program: the system is its swap device
        let store = storlab_model::config::PresetStore::default();
        let (r, _) =
            paging::run_paged(&store, paging::SWAP_PRESET, &m, cfg, &[], seed).map_err(|e| {
                AppError::Run {
                    app: app.name.into(),
                    message: e.to_string(),
                }
            })?;
        return Ok(r.accesses_per_s * m.instructions_per_access);
    }
    let jobs = storlab_workload::fio::parse_cli_args(&job_args(app.name, pairs))?;
    let r = simulate(cfg, resolved, &jobs, seed, &mut |_, _| {})?;
    Ok(r.jobs
        .iter()
        .find_map(|j| j.app.as_ref())
        .and_then(|a| a["metric"].as_f64())
        .unwrap_or(0.0))
}

/// Solve `metric(x) = target` for x in `lo..=hi` by bisection over
/// log x (the metric must be monotonic in x, as an application's
/// throughput or run time is in its CPU per operation); 40 steps at most,
/// ending within 0.1 % of the target.
pub fn calibrate<E: From<AppError>>(
    mut metric: impl FnMut(f64) -> Result<f64, E>,
    target: f64,
    lo: f64,
    hi: f64,
) -> Result<f64, E> {
    if !(lo > 0.0 && hi > lo && target > 0.0) {
        return Err(AppError::Run {
            app: "calibrate".into(),
            message: format!(
                "need 0 < lo < hi and a target above 0 (lo {lo}, hi {hi}, target {target})"
            ),
        }
        .into());
    }
    let (mut a, mut b) = (lo.ln(), hi.ln());
    let fa = metric(lo)? - target;
    let fb = metric(hi)? - target;
    if fa.signum() == fb.signum() {
        return Err(AppError::Run {
            app: "calibrate".into(),
            message: format!(
                "the target {target} is not between the metric at lo ({}) and at hi ({}): widen --lo/--hi",
                fa + target,
                fb + target
            ),
        }
        .into());
    }
    let up = fb > fa;
    for _ in 0..40 {
        let m = (a + b) / 2.0;
        let f = metric(m.exp())?;
        if ((f - target) / target).abs() < 1e-3 {
            return Ok(m.exp());
        }
        if (f < target) == up {
            a = m;
        } else {
            b = m;
        }
    }
    Ok(((a + b) / 2.0).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibrate_solves_a_monotonic_metric_either_way_and_refuses_an_unreachable_target() {
        let x = calibrate(|x| Ok::<f64, AppError>(1000.0 / x), 10.0, 1.0, 1000.0).unwrap();
        assert!((x - 100.0).abs() / 100.0 < 2e-3, "{x}");
        let x = calibrate(|x| Ok::<f64, AppError>(2.0 * x), 50.0, 1.0, 1000.0).unwrap();
        assert!((x - 25.0).abs() / 25.0 < 2e-3, "{x}");
        let e = calibrate(Ok::<f64, AppError>, 5000.0, 1.0, 1000.0).unwrap_err();
        assert!(e.to_string().contains("widen"), "{e}");
    }
}
