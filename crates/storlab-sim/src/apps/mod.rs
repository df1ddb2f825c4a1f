//! Application models: the studies' programs (databases, file workloads,
//! key-value stores, paging programs) as closed loops of operations on
//! the file system, page cache, swap path and device of the same model
//! that runs fio jobs.
//!
//! Each application is an [`AppInfo`] in [`all`]: its name (as the
//! studies name the program), what it models and simplifies, its
//! parameters with defaults, and a constructor. Two kinds:
//! - [`AppKind::Closed`]: threads run operations, each a list of
//!   [`Step`]s (CPU, file reads and writes, fsync, locks, group commit);
//!   [`driver::AppRun`] runs them inside the engine, beside fio jobs, on
//!   any preset with a file system in front of it;
//! - [`AppKind::Memory`]: a memory-access program paging through Linux's
//!   swap path to the device ([`storlab_model::swap`]), with its DRAM.
//!
//! Parameters are given as `name=value` pairs (`--app-set` on the
//! command line, `app_set=` in a job file); every model also takes the
//! common ones in [`COMMON_PARAMS`].

pub mod bdb;
pub mod driver;
pub mod filebench;
pub mod files;
pub mod innodb;
pub mod kit;
pub mod memcached;
pub mod mongo;
pub mod paging;
pub mod postgres;

pub use driver::{AppRun, Step};

use std::collections::BTreeMap;

use storlab_model::Nanos;

/// One parameter of an application: its name, default (as it would be
/// written after `=`), unit and meaning.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    /// Name, as in `--app-set name=value`.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// What it is, with its unit and source.
    pub help: &'static str,
}

/// Parameters every application takes.
pub const COMMON_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "threads",
        default: "",
        help: "application threads (clients); empty: the model's own default",
    },
    ParamDef {
        name: "runtime",
        default: "0",
        help: "stop starting operations after this much simulated time (fio time syntax: 60s, 500ms); 0: run the model's own amount of work",
    },
    ParamDef {
        name: "scale",
        default: "1",
        help: "multiply the data set's size (records, files, footprint) by this factor, 0 < scale <= 1000",
    },
];

/// What an application's metric counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Completed operations of the counted kinds per second.
    Rate,
    /// Seconds the whole run took (lower is better).
    Seconds,
}

/// An application model in the registry.
pub struct AppInfo {
    /// Name (as the studies name the program).
    pub name: &'static str,
    /// One line for `storlab apps`.
    pub summary: &'static str,
    /// The metric's unit: `transactions/s`, `queries/s`, `operations/s`,
    /// `seconds`, `instructions/s`.
    pub unit: &'static str,
    /// What the model does, paragraph by paragraph (`storlab apps show`).
    pub models: &'static [&'static str],
    /// What it leaves out or simplifies.
    pub simplifies: &'static [&'static str],
    /// Which parameter was calibrated, against which figure, and why; or
    /// where its constants come from.
    pub calibration: &'static str,
    /// The model's own parameters.
    pub params: &'static [ParamDef],
    /// Build the model from its parameters.
    pub build: fn(&Params) -> Result<AppKind, AppError>,
}

/// A built application.
pub enum AppKind {
    /// Threads running operations on files (run by [`AppRun`]).
    Closed(Box<dyn driver::Model>),
    /// A memory-access program paging to the device.
    Memory(Box<MemoryApp>),
}

/// A memory-access program (NPB, DGEMM, thrash): its access stream, the
/// DRAM it runs in, and how many instructions an access stands for (its
/// metric is instructions per second).
#[derive(Clone, Debug)]
pub struct MemoryApp {
    /// The access stream.
    pub workload: storlab_model::swap::MemWorkload,
    /// DRAM for the program's pages, bytes.
    pub dram_bytes: u64,
    /// Instructions the program retires per access of the stream.
    pub instructions_per_access: f64,
}

/// Why an application cannot run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// No such application.
    #[error("{place}: no application named `{name}`; the applications are {known}")]
    Unknown {
        /// Where it was asked for.
        place: String,
        /// The name given.
        name: String,
        /// Every name.
        known: String,
    },
    /// No such parameter.
    #[error("{place}: application `{app}` has no parameter `{param}`; it takes {accepted}")]
    UnknownParam {
        /// Where.
        place: String,
        /// The application.
        app: String,
        /// The parameter given.
        param: String,
        /// What it takes.
        accepted: String,
    },
    /// A parameter's value is wrong.
    #[error("{place}: application `{app}`, parameter `{param}={value}`: {message}")]
    BadValue {
        /// Where.
        place: String,
        /// The application.
        app: String,
        /// The parameter.
        param: String,
        /// Its value.
        value: String,
        /// What is accepted.
        message: String,
    },
    /// A pair is not `name=value`.
    #[error("{place}: `{text}` is not name=value")]
    Syntax {
        /// Where.
        place: String,
        /// What was given.
        text: String,
    },
    /// The application cannot run on this system.
    #[error("application `{app}`: {message}")]
    Run {
        /// The application.
        app: String,
        /// Why.
        message: String,
    },
}

/// Every application model, in the order `storlab apps` lists them.
pub fn all() -> Vec<&'static AppInfo> {
    let mut v: Vec<&'static AppInfo> = Vec::new();
    v.extend(bdb::APPS);
    v.extend(mongo::APPS);
    v.extend(memcached::APPS);
    v.extend(innodb::APPS);
    v.extend(postgres::APPS);
    v.extend(files::APPS);
    v.extend(filebench::APPS);
    v.extend(paging::APPS);
    v
}

/// The application named `name`, or an error naming `place` and listing
/// the names.
pub fn find(name: &str, place: &str) -> Result<&'static AppInfo, AppError> {
    let apps = all();
    apps.iter()
        .find(|a| a.name == name)
        .copied()
        .ok_or_else(|| AppError::Unknown {
            place: place.to_string(),
            name: name.to_string(),
            known: apps.iter().map(|a| a.name).collect::<Vec<_>>().join(", "),
        })
}

/// An application's parameters: its defaults with the given values over
/// them, each checked against the model's list.
#[derive(Clone, Debug)]
pub struct Params {
    app: &'static str,
    place: String,
    values: BTreeMap<&'static str, String>,
    /// Where each given value was written.
    places: BTreeMap<&'static str, String>,
}

impl Params {
    /// Parse `pairs` (each `name=value`, or several joined by commas) for
    /// `app`; `place` names where they were given (for errors).
    pub fn parse(app: &'static AppInfo, pairs: &[String], place: &str) -> Result<Params, AppError> {
        let given: Vec<(String, String)> = pairs
            .iter()
            .map(|p| (p.clone(), place.to_string()))
            .collect();
        Self::parse_at(app, &given, place)
    }

    /// As [`Params::parse`], each list of pairs with the place it was
    /// written (a job file's `app_set=` lines); `place` names the
    /// application's own place (its `app=` line).
    pub fn parse_at(
        app: &'static AppInfo,
        given: &[(String, String)],
        place: &str,
    ) -> Result<Params, AppError> {
        let mut values: BTreeMap<&'static str, String> = BTreeMap::new();
        let mut places: BTreeMap<&'static str, String> = BTreeMap::new();
        for d in COMMON_PARAMS.iter().chain(app.params) {
            values.insert(d.name, d.default.to_string());
        }
        for (pair, place) in given
            .iter()
            .flat_map(|(p, at)| split_pairs(p).into_iter().map(move |x| (x, at)))
        {
            let (k, v) = pair.split_once('=').ok_or_else(|| AppError::Syntax {
                place: place.to_string(),
                text: pair.clone(),
            })?;
            let k = k.trim();
            let def = COMMON_PARAMS
                .iter()
                .chain(app.params)
                .find(|d| d.name == k)
                .ok_or_else(|| AppError::UnknownParam {
                    place: place.to_string(),
                    app: app.name.to_string(),
                    param: k.to_string(),
                    accepted: COMMON_PARAMS
                        .iter()
                        .chain(app.params)
                        .map(|d| d.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            values.insert(def.name, v.trim().to_string());
            places.insert(def.name, place.clone());
        }
        let p = Params {
            app: app.name,
            place: place.to_string(),
            values,
            places,
        };
        let s = p.f64("scale")?;
        if !(s > 0.0 && s <= 1000.0) {
            return Err(p.bad("scale", "must be above 0 and at most 1000"));
        }
        p.runtime_ns()?;
        p.opt_u64("threads", 1, 4096)?;
        Ok(p)
    }

    /// The application's name.
    pub fn app(&self) -> &'static str {
        self.app
    }

    fn raw(&self, name: &str) -> &str {
        self.values
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("parameter {name} is not declared by {}", self.app))
    }

    /// An error for parameter `name`'s value.
    pub fn bad(&self, name: &str, message: &str) -> AppError {
        AppError::BadValue {
            place: self.places.get(name).unwrap_or(&self.place).clone(),
            app: self.app.to_string(),
            param: name.to_string(),
            value: self.raw(name).to_string(),
            message: message.to_string(),
        }
    }

    /// Parameter `name` as text.
    pub fn str(&self, name: &str) -> &str {
        self.raw(name)
    }

    /// Parameter `name` as one of `choices`.
    pub fn choice(&self, name: &str, choices: &[&'static str]) -> Result<&'static str, AppError> {
        let v = self.raw(name);
        choices
            .iter()
            .find(|c| c.eq_ignore_ascii_case(v))
            .copied()
            .ok_or_else(|| self.bad(name, &format!("expected one of {}", choices.join(", "))))
    }

    /// Parameter `name` as a number (fio's size suffixes allowed: 4k,
    /// 16g) within `lo..=hi`.
    pub fn u64(&self, name: &str, lo: u64, hi: u64) -> Result<u64, AppError> {
        let v = self.raw(name);
        let n = storlab_workload::fio::parse_size(v)
            .map_err(|e| self.bad(name, &format!("not a number or size: {e}")))?;
        if n < lo || n > hi {
            return Err(self.bad(name, &format!("must be from {lo} to {hi}")));
        }
        Ok(n)
    }

    /// Parameter `name` as a number within `lo..=hi`, or `None` when empty.
    pub fn opt_u64(&self, name: &str, lo: u64, hi: u64) -> Result<Option<u64>, AppError> {
        if self.raw(name).is_empty() {
            return Ok(None);
        }
        self.u64(name, lo, hi).map(Some)
    }

    /// Parameter `name` as a real number.
    pub fn f64(&self, name: &str) -> Result<f64, AppError> {
        let v = self.raw(name);
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.bad(name, "not a number"))
    }

    /// Parameter `name` as a fraction from 0 to 1.
    pub fn fraction(&self, name: &str) -> Result<f64, AppError> {
        let x = self.f64(name)?;
        if !(0.0..=1.0).contains(&x) {
            return Err(self.bad(name, "must be from 0 to 1"));
        }
        Ok(x)
    }

    /// Parameter `name` as a time (fio's syntax; a bare number is in
    /// units of `default_unit_us` microseconds), ns.
    pub fn time_ns(&self, name: &str, default_unit_us: u64) -> Result<Nanos, AppError> {
        let v = self.raw(name);
        storlab_workload::fio::parse_time(v, default_unit_us)
            .map_err(|e| self.bad(name, &format!("not a time: {e}")))
    }

    /// The common `runtime` parameter (seconds by default), ns; 0: none.
    pub fn runtime_ns(&self) -> Result<Nanos, AppError> {
        self.time_ns("runtime", 1_000_000)
    }

    /// The common `threads` parameter, or `default`.
    pub fn threads(&self, default: u32) -> u32 {
        self.opt_u64("threads", 1, 4096)
            .ok()
            .flatten()
            .map_or(default, |t| t as u32)
    }

    /// The common `scale` parameter.
    pub fn scale(&self) -> f64 {
        self.f64("scale").unwrap_or(1.0)
    }

    /// `n` scaled by `scale`, at least `min`.
    pub fn scaled(&self, n: u64, min: u64) -> u64 {
        ((n as f64 * self.scale()).round() as u64).max(min)
    }

    /// Every parameter with its value, in name order (for reports).
    pub fn values(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values.iter().map(|(k, v)| (*k, v.as_str()))
    }
}

/// Split `a=1,b=2` into pairs, keeping commas inside a value that has no
/// `=` after them (`list=a,b`).
fn split_pairs(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if !part.contains('=') => {
                last.push(',');
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out.retain(|p| !p.trim().is_empty());
    out
}

/// Build `app` with `params`.
pub fn build(app: &'static AppInfo, params: &Params) -> Result<AppKind, AppError> {
    (app.build)(params)
}

/// `storlab apps`: one line per application with its metric's unit.
pub fn list_text() -> String {
    let mut s = String::new();
    for a in all() {
        s.push_str(&format!("{:<12} {:<16} {}\n", a.name, a.unit, a.summary));
    }
    s
}

/// `storlab apps show NAME`: what it models and simplifies, its
/// calibration and parameters.
pub fn show_text(app: &AppInfo) -> String {
    let mut s = format!(
        "{}: {}\nmetric: {}\n\nmodels:\n",
        app.name, app.summary, app.unit
    );
    for m in app.models {
        s.push_str(&format!("  - {m}\n"));
    }
    s.push_str("\nsimplifies:\n");
    for m in app.simplifies {
        s.push_str(&format!("  - {m}\n"));
    }
    s.push_str(&format!(
        "\ncalibration: {}\n\nparameters (--app-set name=value):\n",
        app.calibration
    ));
    for d in app.params.iter().chain(COMMON_PARAMS) {
        let def = if d.default.is_empty() {
            "(model's)"
        } else {
            d.default
        };
        s.push_str(&format!("  {:<18} {:<12} {}\n", d.name, def, d.help));
    }
    s
}

/// The fio-style job arguments that run `app` with `pairs` as one job
/// (what `storlab sim --app` adds to the command line).
pub fn job_args(app: &str, pairs: &[String]) -> Vec<String> {
    let mut v = vec![format!("--name={app}"), format!("--app={app}")];
    v.extend(pairs.iter().map(|p| format!("--app_set={p}")));
    v
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
) -> Result<f64, crate::run::RunError> {
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
    let r = crate::run::simulate(cfg, resolved, &jobs, seed, &mut |_, _| {})?;
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

    #[test]
    fn pairs_split_on_commas_between_pairs_only() {
        assert_eq!(split_pairs("a=1,b=2"), vec!["a=1", "b=2"]);
        assert_eq!(split_pairs("list=x,y,b=2"), vec!["list=x,y", "b=2"]);
        assert!(split_pairs(",").is_empty());
    }

    #[test]
    fn every_app_builds_with_its_defaults_and_names_are_unique() {
        let apps = all();
        let mut names: Vec<_> = apps.iter().map(|a| a.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), apps.len());
        for a in apps {
            let p = Params::parse(a, &[], "test").unwrap();
            assert!(build(a, &p).is_ok(), "{} does not build", a.name);
            for d in a.params {
                assert!(!d.help.is_empty(), "{}.{} has no help", a.name, d.name);
            }
        }
    }

    #[test]
    fn unknown_names_and_parameters_are_refused_with_the_place() {
        let e = find("nope", "job file x.fio:3").err().unwrap().to_string();
        assert!(e.contains("x.fio:3") && e.contains("bdb-btree"), "{e}");
        let a = find("bdb-btree", "cli").unwrap();
        let e = Params::parse(a, &["colour=red".into()], "--app-set")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--app-set") && e.contains("colour") && e.contains("transactions"),
            "{e}"
        );
        let e = Params::parse(a, &["scale=0".into()], "--app-set")
            .unwrap_err()
            .to_string();
        assert!(e.contains("scale=0"), "{e}");
        let e = Params::parse(a, &["runtime=soon".into()], "--app-set")
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime"), "{e}");
    }
}
