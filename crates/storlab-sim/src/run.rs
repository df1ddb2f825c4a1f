//! One simulation run: a system configuration and a fio job file in,
//! per-job statistics (with the `storlab` object filled) out.

use serde_json::{json, Value};
use storlab_model::config::Resolved;
use storlab_model::host::Host;
use storlab_model::{Nanos, Op, SystemConfig};
use storlab_workload::fio::{Fallocate, FioError, JobFile, JobSpec};
use storlab_workload::gen::{IoOp, JobThread};

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use storlab_trace::ReadOptions;

use crate::engine::{Engine, EngineError, FileTarget, IoReq, IoSource, Progress, ThreadPlan};
use crate::replay::{ReplayMode, ReplayTally, TraceSource, DEFAULT_ALIGN};
use crate::stats::JobStats;
use storlab_model::fs::{FileLayer, Layout};
use storlab_model::host::FileSystem;

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The job cannot run on this device (a region past the end, ...).
    #[error(transparent)]
    Job(#[from] FioError),
    /// The configuration cannot be built.
    #[error(transparent)]
    Config(#[from] storlab_model::config::ConfigError),
    /// The model stalled, or the run passed the simulated-time horizon.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A log file (`write_lat_log`, ...) could not be written.
    #[error(transparent)]
    Log(#[from] crate::logs::LogError),
    /// A job cannot run through the file system (`--fs`).
    #[error("job `{job}`: {message}")]
    Fs {
        /// The job.
        job: String,
        /// Why.
        message: String,
    },
    /// An application model cannot be built or run.
    #[error(transparent)]
    App(#[from] Box<crate::apps::AppError>),
    /// A `read_iolog` trace could not be replayed.
    #[error("job `{job}`, read_iolog")]
    Replay {
        /// The job.
        job: String,
        /// What went wrong (names the file and line).
        source: crate::replay::ReplayError,
    },
}

/// A fio job thread as an IO source; `sync_writes` (fio's `sync=`) makes
/// every write force unit access.
pub struct FioSource {
    /// The generator.
    pub gen: JobThread,
    /// Writes carry FUA.
    pub sync_writes: bool,
}

impl IoSource for FioSource {
    #[inline]
    fn next_io(&mut self) -> Option<IoReq> {
        let io = self.gen.next_io()?;
        let op = match io.op {
            IoOp::Read => Op::Read,
            IoOp::Write => Op::Write,
            IoOp::Trim => Op::Trim,
            IoOp::Fsync | IoOp::Fdatasync => Op::Flush,
        };
        Some(IoReq {
            op,
            offset: io.offset,
            len: io.len,
            at: None,
            fua: self.sync_writes && op == Op::Write,
        })
    }
}

/// The source replaying `read_iolog=path` for job `j`: the trace's own
/// times unless `replay_no_stall`, at most the job's depth outstanding,
/// addresses past the device wrapped (4 KiB aligned), as `storlab sim
/// --trace` replays.
fn replay_source(
    j: &storlab_workload::fio::JobSpec,
    path: &str,
    capacity: u64,
) -> Result<(TraceSource, Rc<RefCell<ReplayTally>>), RunError> {
    let fail = |source| RunError::Replay {
        job: j.name.clone(),
        source,
    };
    let reader = storlab_trace::open(Path::new(path), None, &ReadOptions::default())
        .map_err(|e| fail(e.into()))?;
    let mode = if j.replay_no_stall {
        ReplayMode::Afap
    } else {
        ReplayMode::Timed
    };
    TraceSource::new(reader, capacity, mode, DEFAULT_ALIGN).map_err(fail)
}

/// The result of a run.
pub struct RunResult {
    /// One record per thread, or per group where `group_reporting` is set.
    pub jobs: Vec<JobStats>,
    /// Simulated time at the end, ns.
    pub sim_ns: u64,
    /// Events processed.
    pub events: u64,
}

/// The resolved configuration as JSON: `{ "key.path": {"value": v, "source": s} }`.
pub fn config_json(resolved: &Resolved) -> Value {
    let mut m = serde_json::Map::new();
    for (k, leaf) in &resolved.leaves {
        let v: Value = toml::from_str::<toml::Table>(&format!("x = {}", leaf.value))
            .ok()
            .and_then(|t| t.get("x").cloned())
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or_else(|| Value::String(leaf.value.to_string()));
        m.insert(k.clone(), json!({"value": v, "source": leaf.source}));
    }
    json!({"preset": resolved.chain.first().cloned().unwrap_or_default(), "resolved_from": resolved.chain, "parameters": m})
}

/// Simulate `jobs` on the system, with `seed` for anything the jobs leave
/// unseeded. Jobs with `stonewall` start after all earlier jobs finished.
pub fn simulate(
    cfg: &SystemConfig,
    resolved: &Resolved,
    jobs: &JobFile,
    seed: u64,
    progress: Progress,
) -> Result<RunResult, RunError> {
    // a paging program alone runs on the swap path, the system its device
    if let Some(r) = crate::apps::paging::simulate_alone(cfg, jobs, seed)? {
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
    let device = cfg.build_device()?;
    let capacity = device.capacity();
    let mut apps = build_apps(jobs, seed)?;
    let fio_threads: u32 = jobs
        .jobs
        .iter()
        .filter(|j| j.app.is_none())
        .map(|j| j.numjobs.max(1))
        .sum();
    let app_threads: u32 = apps.iter().map(|a| a.2.threads().0 + a.2.threads().1).sum();
    let threads = fio_threads + app_threads;
    let fs_kind = cfg.host.file_system;
    // with a file system, one more host thread issues its own IOs (log,
    // writeback, metadata)
    let mut layer = (fs_kind != FileSystem::None).then(|| {
        FileLayer::new(
            fs_kind,
            cfg.fs.clone().unwrap_or_default(),
            capacity,
            threads,
        )
    });
    let mut targets = Vec::new();
    if let Some(layer) = &mut layer {
        targets = lay_out_files(layer, jobs, capacity)?;
    }
    // the applications' files, after the fio jobs' (threads after theirs)
    let mut runs: Vec<Option<crate::apps::AppRun>> = Vec::new();
    let mut first_app_thread = fio_threads;
    for (info, params, model, group) in apps.drain(..) {
        let layer = layer.as_mut().expect("applications have a file system");
        let run = crate::apps::AppRun::new(
            info,
            params,
            model,
            layer,
            &cfg.host,
            capacity,
            cfg.nvmm
                .as_ref()
                .filter(|_| cfg.device.class == storlab_model::system::DeviceClass::Nvmm),
            first_app_thread,
            &group.0,
            group.1,
            seed,
        )?;
        first_app_thread += run.host_threads();
        runs.push(Some(run));
    }
    let mut runs = runs.into_iter();
    let mut host = Host::new(cfg.host.clone(), device, threads + layer.is_some() as u32);
    // the host's wake-up and interrupt spread draws from the run's seed
    host.seed_spread(seed);
    let mut engine = match layer {
        Some(layer) => Engine::with_fs(host, layer),
        None => Engine::new(host),
    };
    let mut targets = targets.into_iter();
    // phases: a stonewall job starts a new one
    let mut phases: Vec<Vec<&storlab_workload::fio::JobSpec>> = Vec::new();
    for j in &jobs.jobs {
        if j.stonewall || phases.is_empty() {
            phases.push(Vec::new());
        }
        phases.last_mut().expect("a phase exists").push(j);
    }
    let mut all = Vec::new();
    let mut next_thread = 0u32;
    let mut logs = crate::logs::LogFiles::default();
    let mut replays = Vec::new();
    for phase in phases {
        let mut plans = Vec::new();
        let mut phase_apps: Vec<Box<dyn crate::engine::AppDriver>> = Vec::new();
        let first = next_thread;
        for j in phase {
            if j.app.is_some() {
                let run = runs.next().flatten().expect("one run per application job");
                phase_apps.push(Box::new(run));
                continue;
            }
            for t in 0..j.numjobs.max(1) {
                let files: Option<(FileTarget, u64)> = targets.next().flatten();
                let space = files.map_or(capacity, |(_, span)| span);
                let source: Box<dyn IoSource> = match &j.read_iolog {
                    None => Box::new(FioSource {
                        gen: JobThread::new(j, t, space, seed)?,
                        sync_writes: j.sync_writes,
                    }),
                    Some(path) => {
                        let (source, tally) = replay_source(j, path, capacity)?;
                        replays.push((j.name.clone(), path.clone(), tally));
                        Box::new(source)
                    }
                };
                let mut stats = JobStats::new(j.name.clone(), j.group_id);
                stats.options = j.options.clone();
                stats.iodepth = j.iodepth.max(1);
                stats.unified = j.unified_rw;
                let [slat, clat, lat] = j.percentiles;
                stats.set_percentiles(slat, clat, lat);
                plans.push(ThreadPlan {
                    source,
                    iodepth: j.queue_depth(),
                    runtime_ns: j.runtime_ns.map(|r| r + j.ramp_time_ns.unwrap_or(0)),
                    time_based: j.time_based,
                    ramp_ns: j.ramp_time_ns.unwrap_or(0),
                    thinktime_ns: j.thinktime_ns,
                    start_delay_ns: j.startdelay_ns,
                    rate_bytes_per_s: j.rate_bytes_per_s,
                    rate_iops: j.rate_iops,
                    stats,
                    observer: logs.observer(j, next_thread + 1)?,
                    poll: j.hipri,
                    max_latency_ns: j.max_latency_ns,
                    files: files.map(|(f, _)| f),
                });
                next_thread += 1;
            }
        }
        let stats = engine.run_group_with(plans, phase_apps, first, &mut *progress)?;
        // an application whose model failed while planning (a file that
        // does not fit) stopped early: its figures would mislead
        if let Some((app, e)) = stats.iter().find_map(|s| {
            let a = s.app.as_ref()?;
            Some((a["name"].as_str()?, a.get("error")?.as_str()?))
        }) {
            return Err(crate::apps::AppError::Run {
                app: app.to_string(),
                message: e.to_string(),
            }
            .into());
        }
        all.extend(stats);
    }
    logs.finish()?;
    for (job, path, tally) in replays {
        tally
            .borrow_mut()
            .check(&path)
            .map_err(|source| RunError::Replay { job, source })?;
    }
    let now = engine.now();
    let grouped = jobs.jobs.iter().any(|j| j.group_reporting);
    let mut out = if grouped {
        crate::stats::group(&all)
    } else {
        all
    };
    let summary = RunSummary::new(&engine, cfg, resolved);
    for j in &mut out {
        let mut o = summary.job_object(j);
        o.insert("seed".into(), json!(seed));
        j.storlab = Value::Object(o);
    }
    Ok(RunResult {
        jobs: out,
        sim_ns: now,
        events: engine.events(),
    })
}

/// An application job's model, built: (what it is, its parameters, the
/// model, its fio group).
type BuiltApp = (
    &'static crate::apps::AppInfo,
    crate::apps::Params,
    Box<dyn crate::apps::driver::Model>,
    (String, u32),
);

/// Build every `app=` job's model, in job order, from its `app_set`
/// lines (and its `runtime=`, as the application's runtime).
fn build_apps(jobs: &JobFile, seed: u64) -> Result<Vec<BuiltApp>, RunError> {
    let _ = seed;
    let mut out = Vec::new();
    for j in &jobs.jobs {
        let Some((name, at)) = &j.app else { continue };
        let place = format!("{at}, app");
        let info = crate::apps::find(name, &place)?;
        let mut given: Vec<(String, String)> = Vec::new();
        if let Some(rt) = j.runtime_ns {
            given.push((format!("runtime={}us", rt / 1000), place.clone()));
        }
        given.extend(
            j.app_set
                .iter()
                .map(|(v, l)| (v.clone(), format!("{l}, app_set"))),
        );
        let params = crate::apps::Params::parse_at(info, &given, &place)?;
        match crate::apps::build(info, &params)? {
            crate::apps::AppKind::Closed(model) => {
                out.push((info, params, model, (j.name.clone(), j.group_id)))
            }
            crate::apps::AppKind::Memory(_) => {
                return Err(crate::apps::AppError::Run {
                    app: info.name.into(),
                    message: format!(
                    "{place}: a paging program runs alone on the swap path (storlab sim --app {})",
                    info.name
                ),
                }
                .into())
            }
        }
    }
    Ok(out)
}

/// The layout fio leaves job `j`'s files in on file system `fs` before
/// the run (fio's filesetup.c `extend_file` and `fallocate_file`):
/// - a file the job reads, or writes with `overwrite=1`, is written in
///   full (fio's layout pass), whatever `fallocate`: [`Layout::Allocated`];
/// - `fallocate=none` and `truncate`: [`Layout::Sparse`], writes allocate;
/// - `native`, `posix`, `keep`: fallocate(2) (mode 0, or
///   `FALLOC_FL_KEEP_SIZE` for `keep`), which on XFS and ext4 leaves
///   unwritten extents ([`Layout::Unwritten`]: reads of them return zeros
///   without IO, a first write converts at completion) and on tmpfs and
///   PMFS allocated blocks ([`storlab_model::fs::Behaviour::fallocate`]);
/// - on ext3, which has no fallocate(2): `native` falls back to no
///   preallocation, as fio's `native_fallocate` carries on when the call
///   fails ([`Layout::Sparse`]); `posix` is glibc's emulation, a zero byte
///   written into every block before the run ([`Layout::Allocated`], its
///   time outside the run); `keep` fails with `EOPNOTSUPP`, which fio
///   records as the job's error (`td_verror`), so the job is refused.
///
/// Simplification: with `none` fio 2.x and later leave a write-only job's
/// new file at size 0 (no ftruncate), where the model keeps its size
/// (as fio 1.x's ftruncate did): the writes allocate either way, but on
/// XFS the size decides whether a direct write takes the IO lock shared.
fn file_layout(j: &JobSpec, fs: FileSystem) -> Result<Layout, String> {
    if j.rw.directions()[0] || j.overwrite {
        return Ok(Layout::Allocated);
    }
    let prealloc = |keep_size| Layout::preallocated(fs, keep_size);
    Ok(match j.fallocate {
        Fallocate::None | Fallocate::Truncate => Layout::Sparse,
        Fallocate::Native => prealloc(false).unwrap_or(Layout::Sparse),
        Fallocate::Posix => prealloc(false).unwrap_or(Layout::Allocated),
        Fallocate::Keep => prealloc(true).ok_or_else(|| {
            "fallocate=keep: the file system has no fallocate(2) (ext3), so fio's \
             FALLOC_FL_KEEP_SIZE call fails with EOPNOTSUPP and the job stops with that \
             error; posix (glibc writes the blocks) or none runs"
                .to_string()
        })?,
    })
}

/// Create the files every job thread works in (fio's semantics: a job's
/// `filename` is one file its threads share, and any job naming it too;
/// otherwise each thread has `nrfiles` files of its own splitting the
/// job's `size`), in job and thread order, laid out as [`file_layout`]
/// says. Returns, per thread, the files and the byte span its offsets
/// run over.
fn lay_out_files(
    layer: &mut FileLayer,
    jobs: &JobFile,
    capacity: u64,
) -> Result<Vec<Option<(FileTarget, u64)>>, RunError> {
    let mut named: std::collections::BTreeMap<String, (u32, u64)> = Default::default();
    let mut out = Vec::new();
    for j in jobs.jobs.iter().filter(|j| j.app.is_none()) {
        let fail = |message: String| RunError::Fs {
            job: j.name.clone(),
            message,
        };
        if j.read_iolog.is_some() {
            return Err(fail(
                "read_iolog replays a block trace: it cannot go through a file system (drop --fs)"
                    .into(),
            ));
        }
        let dirs = j.rw.directions();
        if dirs[2] {
            return Err(fail(
                "rw: trims are not modelled through a file system (drop --fs)".into(),
            ));
        }
        if j.size.is_none() {
            return Err(fail(
                "size: a job on a file system needs size= (how large its files are)".into(),
            ));
        }
        let mut span = 0;
        for t in 0..j.numjobs.max(1) {
            let (start, len) = j
                .region(capacity, t)
                .map_err(|m| fail(format!("size: {m}")))?;
            span = span.max(start + len);
        }
        let layout = file_layout(j, layer.kind()).map_err(fail)?;
        let no_space = |e: storlab_model::fs::FsError| fail(format!("size: {e}"));
        for _ in 0..j.numjobs.max(1) {
            let target = match &j.filename {
                Some(name) => {
                    let (first, size) = match named.get(name) {
                        Some(&f) => f,
                        None => {
                            let f = layer.create_file(span, layout).map_err(no_space)?;
                            let size = layer.file_size(f);
                            named.insert(name.clone(), (f, size));
                            (f, size)
                        }
                    };
                    FileTarget {
                        first_file: first,
                        nfiles: 1,
                        file_size: size,
                        direct: j.direct,
                    }
                }
                None => {
                    let n = j.nrfiles.max(1);
                    let each = span.div_ceil(n as u64);
                    let mut first = None;
                    let mut size = 0;
                    for _ in 0..n {
                        let f = layer.create_file(each, layout).map_err(no_space)?;
                        first.get_or_insert(f);
                        size = layer.file_size(f);
                    }
                    FileTarget {
                        first_file: first.expect("at least one file"),
                        nfiles: n,
                        file_size: size,
                        direct: j.direct,
                    }
                }
            };
            out.push(Some((target, span)));
        }
    }
    Ok(out)
}

/// What every job's `storlab` object shares: the resolved device
/// configuration and the system's report at the end of the run, worked out
/// once per run rather than once per job.
pub struct RunSummary {
    device: Value,
    report: storlab_model::report::DeviceReport,
    utilisation: Value,
    fs: Option<Value>,
    software: Value,
    now: Nanos,
}

impl RunSummary {
    /// The summary of `engine`'s run so far.
    pub fn new(engine: &Engine, cfg: &SystemConfig, resolved: &Resolved) -> Self {
        let now = engine.now();
        let report = engine.host().device().report(now);
        let core_busy =
            engine.host().core_busy_ns() as f64 / (now.max(1) as f64 * cfg.host.cores as f64);
        let mut utilisation = serde_json::to_value(&report.utilisation).unwrap_or(Value::Null);
        if let Value::Array(a) = &mut utilisation {
            a.insert(
                0,
                json!({"resource": "host.cores", "busy": core_busy.min(1.0)}),
            );
        }
        let fs = engine.fs().map(|l| {
            let mut v = serde_json::to_value(l.counters()).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.insert("file_system".into(), json!(cfg.host.file_system));
            }
            v
        });
        let host = engine.host();
        let per_dir =
            |f: &dyn Fn(Op) -> Option<f64>| json!({"read": f(Op::Read), "write": f(Op::Write)});
        let software = json!({
            "cpu_ns_per_io": per_dir(&|op| host.cpu_ns_per_io(op)),
            "instructions_per_io": per_dir(&|op| host.instructions_per_io(op)),
            "ghz": cfg.host.ghz,
            "cpi": cfg.host.cpi,
        });
        RunSummary {
            fs,
            device: config_json(resolved),
            report,
            utilisation,
            software,
            now,
        }
    }

    /// The `storlab` object of a job's report: the resolved device
    /// configuration with sources, the job's mean latency breakdown, the
    /// utilisation of every resource (host cores first), the host
    /// software's core time and instructions per request by direction
    /// (over the whole run, `host_software`), power and energy
    /// per byte, wear, the device's counters and the simulated time. Shared
    /// by fio runs and trace replays.
    pub fn job_object(&self, job: &JobStats) -> serde_json::Map<String, Value> {
        let report = &self.report;
        let bytes: u64 = job.dirs.iter().map(|d| d.io_bytes()).sum();
        // energy is apportioned to directions by bytes moved, so per byte it
        // is the same for every direction that moved any
        let per_byte = |d: usize| {
            (bytes > 0 && job.dirs[d].io_bytes() > 0)
                .then(|| report.total_energy_j() / bytes as f64)
        };
        let mut m = serde_json::Map::new();
        m.insert("device".into(), self.device.clone());
        m.insert("breakdown_ns".into(), job.breakdown_ns());
        m.insert("utilisation".into(), self.utilisation.clone());
        m.insert("host_software".into(), self.software.clone());
        m.insert("power".into(), json!(report.power));
        m.insert("total_power_w".into(), json!(report.total_power_w()));
        m.insert(
            "energy_per_byte_j".into(),
            json!({"read": per_byte(0), "write": per_byte(1)}),
        );
        m.insert("wear".into(), json!(report.wear));
        m.insert(
            "counters".into(),
            report
                .counters
                .iter()
                .map(|(k, v)| json!({"name": k, "value": v}))
                .collect::<Vec<_>>()
                .into(),
        );
        if let Some(fs) = &self.fs {
            m.insert("fs".into(), fs.clone());
        }
        m.insert("simulated_ns".into(), json!(self.now));
        m
    }
}

/// Reads a run's flash devices answered from their mapping tables without
/// touching the media (never-written pages: a fresh drive), summed over
/// every device of the system (`unmapped_reads`, `member0.unmapped_reads`,
/// ...), from a job's `storlab` object.
pub fn unmapped_reads(storlab: &Value) -> u64 {
    storlab["counters"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|c| {
                    c["name"]
                        .as_str()
                        .is_some_and(|n| n == "unmapped_reads" || n.ends_with(".unmapped_reads"))
                })
                .filter_map(|c| c["value"].as_f64())
                .sum::<f64>() as u64
        })
        .unwrap_or(0)
}

/// The notice `storlab sim` prints on standard error when reads of a run
/// measured no media (see [`unmapped_reads`]); `None` when every read
/// reached it.
pub fn unmapped_note(jobs: &[JobStats]) -> Option<String> {
    let n = jobs.first().map(|j| unmapped_reads(&j.storlab))?;
    if n == 0 {
        return None;
    }
    let reads: u64 = jobs.iter().map(|j| j.dirs[0].ios()).sum();
    Some(format!(
        "storlab: note: {n} of {reads} reads were answered from the flash mapping table without \
         touching the media (never-written pages of a fresh drive), so they measure no flash; \
         write the region first (a preceding job, e.g. --name=fill --rw=write --bs=1m, then \
         --stonewall before the measured job) or precondition the drive \
         (--set ssd.ftl.precondition='\"full\"', or '\"aged\"' for the garbage-collection \
         steady state; in an array, through raid.member_set)"
    ))
}

impl From<crate::apps::AppError> for RunError {
    fn from(e: crate::apps::AppError) -> Self {
        RunError::App(Box::new(e))
    }
}
