//! `storlab._native`: the Python package's bindings to storlab's Rust
//! crates. Every number comes from the same functions the `storlab`
//! command calls (storlab-model for presets, storlab-sim for runs and
//! fio's JSON, storlab-lab for sweeps and reproductions, storlab-trace
//! for traces, storlab-emu for the NBD server); this file only converts
//! arguments and results, and turns errors into `StorlabError`.
//!
//! Heavy calls release the GIL (`Python::detach`) and run under
//! `catch_unwind`, so a panic (a bug) becomes a `StorlabError` saying so
//! rather than crossing into Python. Progress is reported through a
//! [`Counter`] that the Python side polls from its own thread (tqdm).

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use storlab_lab::sweep::{Sweep, Vary, METRICS};
use storlab_lab::{studies, Spec};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::report::{self, ReportOptions};
use storlab_workload::fio;

create_exception!(
    storlab._native,
    StorlabError,
    PyValueError,
    "An error from storlab: the message the `storlab` command prints, with `file` and `line` when the error has a place (a job file's line, a trace's line, a sweep table's line), else None."
);

/// Progress of a call running on another thread: `done` of `total`
/// steps (IOs, points or runs). The Python side polls it for tqdm.
#[pyclass(frozen, module = "storlab._native")]
struct Counter {
    done: Arc<AtomicU64>,
    total: Arc<AtomicU64>,
}

#[pymethods]
impl Counter {
    #[new]
    fn new() -> Self {
        Counter {
            done: Arc::new(AtomicU64::new(0)),
            total: Arc::new(AtomicU64::new(0)),
        }
    }
    /// Steps done so far.
    fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
    /// Steps in all (0 while unknown).
    fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

/// The counter's two cells, cloned out before the GIL is released.
type Cells = Option<(Arc<AtomicU64>, Arc<AtomicU64>)>;

fn cells(c: &Option<Py<Counter>>) -> Cells {
    c.as_ref()
        .map(|c| (c.get().done.clone(), c.get().total.clone()))
}

/// The place (file, line) an error names, if any, looking through its
/// chain of causes for the error types that carry one.
fn place(e: &anyhow::Error) -> (Option<String>, Option<u64>) {
    use fio::FioError;
    for cause in e.chain() {
        if let Some(f) = cause.downcast_ref::<FioError>() {
            let loc = match f {
                FioError::Syntax { location, .. }
                | FioError::UnsupportedOption { location, .. }
                | FioError::InvalidValue { location, .. }
                | FioError::InvalidJob { location, .. } => location,
                _ => continue,
            };
            return (Some(loc.source.clone()), Some(loc.line as u64));
        }
        if let Some(storlab_trace::TraceError::Line { path, line, .. }) =
            cause.downcast_ref::<storlab_trace::TraceError>()
        {
            return (Some(path.clone()), Some(*line));
        }
        if let Some(storlab_lab::LabError::Merge { path, line, .. }) =
            cause.downcast_ref::<storlab_lab::LabError>()
        {
            let line = (*line > 0).then_some(*line as u64);
            return (Some(path.display().to_string()), line);
        }
    }
    (None, None)
}

/// `e` as a `StorlabError`: the message `storlab` prints after
/// `storlab: error: `, and its place.
fn to_py(py: Python<'_>, e: &anyhow::Error) -> PyErr {
    let err = StorlabError::new_err(format!("{e:#}"));
    let (file, line) = place(e);
    let v = err.value(py);
    // setting attributes on a fresh exception instance cannot fail
    let _ = v.setattr("file", file);
    let _ = v.setattr("line", line);
    err
}

/// Run `f` without the GIL and with panics caught.
fn guarded<T: Send>(py: Python<'_>, f: impl FnOnce() -> anyhow::Result<T> + Send) -> PyResult<T> {
    match py.detach(|| std::panic::catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(py, &e)),
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let err = StorlabError::new_err(format!(
                "internal error (a bug in storlab; please report it): {what}"
            ));
            let _ = err.value(py).setattr("file", py.None());
            let _ = err.value(py).setattr("line", py.None());
            Err(err)
        }
    }
}

/// The presets: (name, device class, description), sorted by name.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<(String, String, String)>> {
    guarded(py, || {
        let store = PresetStore::default();
        Ok(store
            .list()
            .into_iter()
            .map(|(name, desc)| {
                let class = store
                    .resolve(&name, &[])
                    .ok()
                    .and_then(|r| {
                        r.leaves
                            .get("device.class")
                            .and_then(|l| l.value.as_str().map(String::from))
                    })
                    .unwrap_or_default();
                (name, class, desc)
            })
            .collect())
    })
}

/// A preset resolved with `set` overrides, as JSON: `{"preset",
/// "resolved_from", "parameters": {key: {"value", "source", "set_in"}}}`.
#[pyfunction]
#[pyo3(signature = (name, set))]
fn preset(py: Python<'_>, name: String, set: Vec<String>) -> PyResult<String> {
    guarded(py, move || {
        let store = PresetStore::default();
        let (resolved, _cfg) =
            SystemConfig::load(&store, &name, &set).with_context(|| format!("device '{name}'"))?;
        let mut doc = storlab_sim::run::config_json(&resolved);
        if let Some(params) = doc
            .get_mut("parameters")
            .and_then(serde_json::Value::as_object_mut)
        {
            for (k, leaf) in &resolved.leaves {
                if let Some(p) = params.get_mut(k).and_then(serde_json::Value::as_object_mut) {
                    p.insert("set_in".into(), leaf.place().into());
                }
            }
        }
        Ok(serde_json::to_string(&doc)?)
    })
}

/// Simulate fio arguments on `device` with `set` overrides: (fio's JSON
/// document as `storlab sim --output-format=json` writes it, notes the
/// command prints on standard error, the details of jobs that failed).
#[pyfunction]
#[pyo3(signature = (device, set, fio_args, seed, counter=None))]
fn simulate(
    py: Python<'_>,
    device: String,
    set: Vec<String>,
    fio_args: Vec<String>,
    seed: u64,
    counter: Option<Py<Counter>>,
) -> PyResult<(String, Vec<String>, Vec<String>)> {
    let cells = cells(&counter);
    guarded(py, move || {
        // as `storlab sim` (crates/storlab/src/sim.rs), step for step
        let store = PresetStore::default();
        let (resolved, cfg) = SystemConfig::load(&store, &device, &set)
            .with_context(|| format!("device '{device}'"))?;
        let jobs = fio::parse_cli_args(&fio_args)?;
        if jobs.jobs.is_empty() {
            anyhow::bail!("no jobs: give a job file or --name=<job> with its options");
        }
        let mut notes: Vec<String> = jobs.jobs.iter().filter_map(|j| j.depth_note()).collect();
        let mut progress = |done: u64, _now: u64| {
            if let Some((d, _)) = &cells {
                d.store(done, Ordering::Relaxed);
            }
        };
        let result = storlab_apps::simulate(&cfg, &resolved, &jobs, seed, &mut progress)?;
        notes.extend(storlab_sim::run::unmapped_note(&result.jobs));
        let mut opts = ReportOptions {
            global_options: jobs.global_options.clone(),
            ..ReportOptions::default()
        };
        if let Some(list) = jobs.jobs.iter().find_map(|j| j.percentile_list.clone()) {
            opts.percentiles = list;
        }
        let json = report::json_string(&result.jobs, &opts);
        let failed = result
            .jobs
            .iter()
            .filter_map(|j| j.error_detail.clone())
            .collect();
        Ok((json, notes, failed))
    })
}

/// One sweep row: point, the varied values, direction, the metrics as
/// the CSV writes them.
type SweepRow = (usize, Vec<String>, String, Vec<String>);

/// Run a sweep's points (all, or those listed): (points in the whole
/// sweep, rows by point then direction).
#[pyfunction]
#[pyo3(signature = (device, set, vary, fio_args, seed, job=None, points=None, counter=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    device: String,
    set: Vec<String>,
    vary: Vec<(String, Vec<String>)>,
    fio_args: Vec<String>,
    seed: u64,
    job: Option<String>,
    points: Option<Vec<usize>>,
    counter: Option<Py<Counter>>,
) -> PyResult<(usize, Vec<SweepRow>)> {
    let cells = cells(&counter);
    guarded(py, move || {
        let vary = vary
            .into_iter()
            .map(|(n, v)| Vary::new(&n, v))
            .collect::<Result<Vec<_>, _>>()?;
        let base = Spec {
            device,
            overrides: set,
            fio: fio_args,
            seed,
            only: job,
        };
        let sw = Sweep::new(base, vary)?;
        let points = points.unwrap_or_else(|| (0..sw.points()).collect());
        if let Some((_, total)) = &cells {
            total.store(points.len() as u64, Ordering::Relaxed);
        }
        let progress = || {
            if let Some((d, _)) = &cells {
                d.fetch_add(1, Ordering::Relaxed);
            }
        };
        let table = sw.run_points(&points, &progress)?;
        Ok((
            table.points,
            table
                .rows
                .into_iter()
                .map(|r| (r.point, r.values, r.dir, r.metrics))
                .collect(),
        ))
    })
}

/// One reproduction row: what, published, model, tolerance, verdict,
/// model value, published value, relative error.
type RepRow = (
    String,
    String,
    String,
    String,
    String,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

/// One study's reproduction: (study, title, rows).
type StudyRows = (String, String, Vec<RepRow>);

/// Reproduce studies (every name checked before anything runs): each
/// study's rows, and the files written: each study's into `out` if given,
/// the HTML report (index first) into `html` if given, its pages saying
/// `command` made them.
#[pyfunction]
#[pyo3(signature = (names, out=None, html=None, command=String::new(), counter=None))]
fn reproduce(
    py: Python<'_>,
    names: Vec<String>,
    out: Option<PathBuf>,
    html: Option<PathBuf>,
    command: String,
    counter: Option<Py<Counter>>,
) -> PyResult<(Vec<StudyRows>, Vec<String>)> {
    let cells = cells(&counter);
    guarded(py, move || {
        let prepared = names
            .iter()
            .map(|n| studies::prepare(n))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some((_, total)) = &cells {
            let n: usize = prepared.iter().map(|p| p.plan.len()).sum();
            total.store(n as u64, Ordering::Relaxed);
        }
        let progress = || {
            if let Some((d, _)) = &cells {
                d.fetch_add(1, Ordering::Relaxed);
            }
        };
        let mut files = Vec::new();
        let mut reps = Vec::new();
        for p in prepared {
            let rep = p.run(&progress)?;
            if let Some(dir) = &out {
                files.extend(rep.write_files(dir)?);
            }
            reps.push(rep);
        }
        if let Some(dir) = &html {
            let meta = storlab_lab::html::SiteMeta::new(command);
            files.extend(storlab_lab::html::write_site(dir, &reps, &meta)?);
        }
        let studies = reps
            .iter()
            .map(|rep| {
                let rows = rep
                    .rows
                    .iter()
                    .map(|r| {
                        // the tolerance is the published text's part after
                        // ± (Row::within writes "VALUE ±N%"); a range is
                        // its own
                        let tolerance = match r.published.rsplit_once(" ±") {
                            Some((_, t)) => format!("±{t}"),
                            None if r.target.is_some() => r.published.clone(),
                            None => String::new(),
                        };
                        (
                            r.what.clone(),
                            r.published.clone(),
                            r.model.clone(),
                            tolerance,
                            r.verdict_text(),
                            r.value,
                            r.target,
                            r.error,
                        )
                    })
                    .collect();
                (rep.study.clone(), rep.title.clone(), rows)
            })
            .collect();
        let files = files.iter().map(|p| p.display().to_string()).collect();
        Ok((studies, files))
    })
}

/// The studies: (name, what).
#[pyfunction]
fn studies_list() -> Vec<(String, String)> {
    studies::STUDIES
        .iter()
        .map(|(n, w)| (n.to_string(), w.to_string()))
        .collect()
}

/// A block trace read in chunks of records, as columns.
#[pyclass(module = "storlab._native")]
struct TraceReader {
    inner: Mutex<storlab_trace::TraceReader>,
    path: String,
}

/// One chunk: time_ns, op, offset, len, device, recorded latency, stream.
type Chunk = (
    Vec<u64>,
    Vec<String>,
    Vec<u64>,
    Vec<u64>,
    Vec<u32>,
    Vec<Option<u64>>,
    Vec<u32>,
);

#[pymethods]
impl TraceReader {
    #[new]
    #[pyo3(signature = (path, format=None, skip_bad_lines=false, ops=None, disk=None, start_ns=None, end_ns=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        format: Option<String>,
        skip_bad_lines: bool,
        ops: Option<String>,
        disk: Option<u32>,
        start_ns: Option<u64>,
        end_ns: Option<u64>,
    ) -> PyResult<Self> {
        let shown = path.display().to_string();
        let reader = guarded(py, move || {
            // as `storlab trace`'s ReadArgs (crates/storlab/src/trace.rs)
            let format = match format {
                Some(f) => Some(
                    f.parse::<storlab_trace::Format>()
                        .with_context(|| "--trace-format".to_string())?,
                ),
                None => None,
            };
            let mut o = storlab_trace::ReadOptions {
                skip_bad_lines,
                ..storlab_trace::ReadOptions::default()
            };
            if let Some(ops) = ops {
                o.ops = ops
                    .parse::<storlab_trace::OpSet>()
                    .map_err(|e| anyhow::anyhow!("--trace-ops: {e}"))?;
            }
            o.disk = disk;
            o.start_ns = start_ns;
            o.end_ns = end_ns;
            Ok(storlab_trace::open(&path, format, &o)?)
        })?;
        Ok(TraceReader {
            inner: Mutex::new(reader),
            path: shown,
        })
    }

    /// Up to `n` more records as columns; None at the end.
    fn read(&self, py: Python<'_>, n: usize) -> PyResult<Option<Chunk>> {
        let inner = &self.inner;
        guarded(py, move || {
            let mut r = inner
                .lock()
                .map_err(|_| anyhow::anyhow!("the trace reader failed earlier"))?;
            let mut c: Chunk = Default::default();
            for rec in r.by_ref().take(n) {
                let rec = rec?;
                c.0.push(rec.time_ns);
                c.1.push(rec.op.to_string());
                c.2.push(rec.offset);
                c.3.push(rec.len);
                c.4.push(rec.device);
                c.5.push(rec.recorded_latency_ns);
                c.6.push(rec.stream);
            }
            Ok((!c.0.is_empty()).then_some(c))
        })
    }

    /// The trace's path.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }
}

/// An emulated device served over NBD on a unix socket, on a thread of
/// this process, until `stop` (or until the object is dropped).
#[pyclass(module = "storlab._native")]
struct Server {
    handle: Mutex<Option<storlab_emu::ServerHandle>>,
    uri: String,
}

fn parse_size(s: &str) -> anyhow::Result<u64> {
    // as `storlab serve --size` (crates/storlab/src/serve.rs)
    match parse_size::Config::new().with_binary().parse_size(s.trim()) {
        Ok(0) => anyhow::bail!(
            "size {s}: an export needs at least one byte (leave size out for the device's capacity)"
        ),
        Ok(n) => Ok(n),
        Err(e) => anyhow::bail!("size {s}: {e} (a size is a number with an optional K, M, G or T)"),
    }
}

#[pymethods]
impl Server {
    #[new]
    #[pyo3(signature = (device, socket, size=None, set=Vec::new(), read_only=false))]
    fn new(
        py: Python<'_>,
        device: String,
        socket: PathBuf,
        size: Option<String>,
        set: Vec<String>,
        read_only: bool,
    ) -> PyResult<Self> {
        let handle = guarded(py, move || {
            let store = PresetStore::default();
            let (_resolved, cfg) = SystemConfig::load(&store, &device, &set)
                .with_context(|| format!("device '{device}'"))?;
            let dev = cfg.build_device_in(&store)?;
            let opts = storlab_emu::ServeOptions {
                socket: Some(socket),
                size: size.as_deref().map(parse_size).transpose()?.unwrap_or(0),
                read_only,
                description: format!("storlab {device}: {}", cfg.description),
                // not the process's signals: they are Python's
                handle_signals: false,
                // a guest of the Python process: no real-time priority
                realtime: false,
                ..storlab_emu::ServeOptions::default()
            };
            Ok(storlab_emu::spawn(opts, dev)?)
        })?;
        let uri = handle.uri().to_string();
        Ok(Server {
            handle: Mutex::new(Some(handle)),
            uri,
        })
    }

    /// The NBD URI (`nbd+unix:///?socket=...`).
    #[getter]
    fn uri(&self) -> &str {
        &self.uri
    }

    /// Emulate a power cut now (acknowledged writes the device would lose
    /// are gone; the server keeps serving the post-crash image).
    fn power_cut(&self, py: Python<'_>) -> PyResult<()> {
        let h = &self.handle;
        guarded(py, move || {
            let g = h.lock().map_err(|_| anyhow::anyhow!("server poisoned"))?;
            let s = g
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("the server has stopped"))?;
            Ok(s.control().power_cut()?)
        })
    }

    /// The server's report so far, as JSON.
    fn stats(&self, py: Python<'_>) -> PyResult<String> {
        let h = &self.handle;
        guarded(py, move || {
            let g = h.lock().map_err(|_| anyhow::anyhow!("server poisoned"))?;
            let s = g
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("the server has stopped"))?;
            Ok(serde_json::to_string(&s.control().report())?)
        })
    }

    /// Stop serving; the final report as JSON (None if already stopped).
    fn stop(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let h = &self.handle;
        guarded(py, move || {
            let taken = h
                .lock()
                .map_err(|_| anyhow::anyhow!("server poisoned"))?
                .take();
            match taken {
                Some(s) => Ok(Some(serde_json::to_string(&s.stop()?)?)),
                None => Ok(None),
            }
        })
    }
}

/// Panics inside [`guarded`], for the test that no panic crosses into
/// Python (it must come back as a `StorlabError`).
#[pyfunction]
fn _panic_inside_guard(py: Python<'_>) -> PyResult<()> {
    guarded(py, || -> anyhow::Result<()> {
        panic!("a deliberate panic (storlab's own test)")
    })
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("StorlabError", m.py().get_type::<StorlabError>())?;
    m.add("METRICS", METRICS.to_vec())?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Counter>()?;
    m.add_class::<TraceReader>()?;
    m.add_class::<Server>()?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(preset, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(studies_list, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_inside_guard, m)?)?;
    Ok(())
}
