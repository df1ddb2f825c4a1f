//! One simulation run: a system configuration and a fio job file in,
//! per-job statistics (with the `storlab` object filled) out.

use serde_json::{json, Value};
use storlab_model::config::Resolved;
use storlab_model::host::Host;
use storlab_model::{Op, SystemConfig};
use storlab_workload::fio::{Fallocate, FioError, JobFile, JobSpec};
use storlab_workload::gen::{IoOp, JobThread};

use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

use storlab_trace::ReadOptions;

use crate::appjob::{AppJobError, AppProvider, AppSetup, NoApps};
use crate::engine::{
    AppDriver, Engine, EngineError, FileTarget, IoReq, IoSource, Progress, ThreadPlan,
};
use crate::replay::{ReplayMode, ReplayTally, TraceSource, DEFAULT_ALIGN};
use crate::stats::JobStats;
pub use crate::summary::{config_json, RunResult, RunSummary};
use storlab_model::host::fs::{FileLayer, Layout};
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
    /// An application job cannot be built or run (the error is its
    /// [`AppProvider`]'s).
    #[error(transparent)]
    App(AppJobError),
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
            placement: None,
            quiesce: false,
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

/// Simulate `jobs` on the system, with `seed` for anything the jobs leave
/// unseeded. Jobs with `stonewall` start after all earlier jobs finished.
/// A job naming an application (`app=`) is refused: the application
/// models are `storlab_apps::simulate`'s, which runs
/// [`simulate_with`] with them.
pub fn simulate(
    cfg: &SystemConfig,
    resolved: &Resolved,
    jobs: &JobFile,
    seed: u64,
    progress: Progress,
) -> Result<RunResult, RunError> {
    simulate_with(cfg, resolved, jobs, seed, progress, &NoApps)
}

/// [`simulate`], with the jobs naming an application (`app=`) built by
/// `apps` and run beside the fio jobs of their phase, on the
/// configuration's file system (which they need), their files after the
/// fio jobs' and their host threads after theirs.
pub fn simulate_with(
    cfg: &SystemConfig,
    resolved: &Resolved,
    jobs: &JobFile,
    seed: u64,
    progress: Progress,
    apps: &dyn AppProvider,
) -> Result<RunResult, RunError> {
    let device = cfg.build_device()?;
    let capacity = device.capacity();
    let mut built = Vec::new();
    for j in jobs.jobs.iter().filter(|j| j.app.is_some()) {
        built.push((apps.build(j, seed).map_err(RunError::App)?, j));
    }
    let fio_threads: u32 = jobs
        .jobs
        .iter()
        .filter(|j| j.app.is_none())
        .map(|j| j.numjobs.max(1))
        .sum();
    let app_threads: u32 = built.iter().map(|a| a.0.threads()).sum();
    let threads = fio_threads + app_threads;
    let fs_kind = cfg.host.file_system;
    // with a file system, one more host thread issues its own IOs (log,
    // writeback, metadata)
    let fs_cfg = cfg.fs.clone().unwrap_or_default();
    // the file system's own size: the device's first `size_bytes`
    let fs_capacity = match fs_cfg.size_bytes {
        0 => capacity,
        n => n.min(capacity),
    };
    let mut layer = (fs_kind != FileSystem::None)
        .then(|| FileLayer::new(fs_kind, fs_cfg, fs_capacity, threads));
    let mut targets = Vec::new();
    if let Some(layer) = &mut layer {
        targets = lay_out_files(layer, jobs, fs_capacity)?;
    }
    // the applications' files, after the fio jobs' (threads after theirs)
    let mut runs: Vec<Option<Box<dyn AppDriver>>> = Vec::new();
    let mut first_app_thread = fio_threads;
    for (app, j) in built {
        let Some(layer) = layer.as_mut() else {
            return Err(RunError::Fs {
                job: j.name.clone(),
                message: "an application runs on a file system: the configuration names none"
                    .into(),
            });
        };
        let (run, host_threads) = app
            .set_up(AppSetup {
                fs: layer,
                host: &cfg.host,
                capacity: fs_capacity,
                nvmm: cfg
                    .nvmm
                    .as_ref()
                    .filter(|_| cfg.device.class == storlab_model::system::DeviceClass::Nvmm),
                first_thread: first_app_thread,
                job: &j.name,
                group_id: j.group_id,
                seed,
            })
            .map_err(RunError::App)?;
        first_app_thread += host_threads;
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
        let mut phase_apps: Vec<Box<dyn AppDriver>> = Vec::new();
        let first = next_thread;
        // the zone report a zoned job reads when it starts: what the
        // phases before this one wrote; the phase's zoned jobs share one
        // view of the zones, as fio's jobs on a device do
        let report = if phase.iter().any(|j| j.zbd.is_some()) {
            engine.host().device().zone_report()
        } else {
            None
        };
        let mut zone_tables = crate::zbd::Tables::new();
        for j in phase {
            if j.app.is_some() {
                let run = runs.next().flatten().expect("one run per application job");
                phase_apps.push(run);
                continue;
            }
            for t in 0..j.numjobs.max(1) {
                let files: Option<(FileTarget, u64)> = targets.next().flatten();
                let space = files.map_or(capacity, |(_, span)| span);
                let mut zbd_error = None;
                let source: Box<dyn IoSource> = match &j.read_iolog {
                    None if j.zbd.is_some() => {
                        let gen = JobThread::new(j, t, space, seed)?;
                        match crate::zbd::ZbdSource::new(
                            cfg,
                            j,
                            gen,
                            capacity,
                            report.as_deref(),
                            &mut zone_tables,
                        ) {
                            Ok(s) => Box::new(s),
                            Err(e) => {
                                zbd_error = Some(e);
                                Box::new(crate::zbd::Nothing)
                            }
                        }
                    }
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
                let (source, dp_error) = match zbd_error {
                    Some(_) => (source, None),
                    None => match crate::fdp::placed(cfg, j, t, source) {
                        Ok(s) => (s, None),
                        Err(e) => (Box::new(crate::zbd::Nothing) as Box<dyn IoSource>, Some(e)),
                    },
                };
                let mut stats = JobStats::new(j.name.clone(), j.group_id);
                if let Some(e) = zbd_error {
                    // fio refuses the job before it starts, with EINVAL
                    stats.error = e.errno();
                    stats.error_detail = Some(e.to_string());
                }
                if let Some(e) = dp_error {
                    stats.error = e.errno();
                    stats.error_detail = Some(e.to_string());
                }
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
        // an application that failed while it ran stops the run
        apps.check(&stats).map_err(RunError::App)?;
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

/// The layout fio leaves job `j`'s files in on file system `fs` before
/// the run (fio's filesetup.c `extend_file` and `fallocate_file`):
/// - a file the job reads, or writes with `overwrite=1`, is written in
///   full (fio's layout pass), whatever `fallocate`: [`Layout::Allocated`];
/// - `fallocate=none` and `truncate`: [`Layout::Sparse`], writes allocate;
/// - `native`, `posix`, `keep`: fallocate(2) (mode 0, or
///   `FALLOC_FL_KEEP_SIZE` for `keep`), which on XFS and ext4 leaves
///   unwritten extents ([`Layout::Unwritten`]: reads of them return zeros
///   without IO, a first write converts at completion) and on tmpfs and
///   PMFS allocated blocks ([`storlab_model::host::fs::Behaviour::fallocate`]);
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
        let no_space = |e: storlab_model::host::fs::FsError| fail(format!("size: {e}"));
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

/// Mapping units (4 KiB on most presets; a read of several units counts
/// each) a run's flash devices answered from their mapping tables without
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
        "storlab: note: {n} never-written flash mapping units (of the pages the run's {reads} reads \
         asked for) were answered from the mapping table without touching the media (a fresh \
         drive's pages), so those reads measure no flash; \
         write the region first (a preceding job, e.g. --name=fill --rw=write --bs=1m, then \
         --stonewall before the measured job) or precondition the drive \
         (--set ssd.ftl.precondition='\"full\"', or '\"aged\"' for the garbage-collection \
         steady state; in an array, through raid.member_set)"
    ))
}
