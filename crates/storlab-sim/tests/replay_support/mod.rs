//! Helpers shared by the replay tests: load a preset with overrides and
//! replay a trace through `replay::simulate_trace`, as `storlab sim
//! --trace` does.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::replay::{simulate_trace, ReplayError, ReplayMode, ReplayOptions};
use storlab_sim::run::RunResult;
use storlab_sim::stats::JobStats;

/// The `null` preset as a fixed 1 µs device: every request takes exactly
/// 1000 ns, whatever its size, and any number run at once.
pub const FIXED_1US: &[&str] = &["device.latency_ns=1000"];

/// A trace under this crate's `tests/data/replay/`.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/replay")
        .join(name)
}

/// A sample trace of storlab-trace's own tests.
pub fn trace_sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../storlab-trace/tests/data")
        .join(name)
}

/// Replay `path` on `device` with `overrides`.
pub fn try_replay(
    device: &str,
    overrides: &[&str],
    path: &Path,
    opts: &ReplayOptions,
) -> Result<RunResult, ReplayError> {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &ov).expect("preset loads");
    simulate_trace(&cfg, &resolved, path, opts, &mut |_, _| {})
}

/// Replay `path` on the fixed 1 µs device in `mode`; the one job.
pub fn replay_fixed(path: &Path, mode: ReplayMode, iodepth: u32) -> (RunResult, JobStats) {
    let opts = ReplayOptions {
        mode,
        iodepth,
        ..ReplayOptions::default()
    };
    let r = try_replay("null", FIXED_1US, path, &opts).expect("replay runs");
    assert_eq!(r.jobs.len(), 1, "a replay is one job");
    let j = r.jobs[0].clone();
    (r, j)
}

/// (requests, bytes) per direction: read, write, trim, sync.
pub fn per_dir(j: &JobStats) -> [(u64, u64); 4] {
    let d = |s: &storlab_sim::stats::DirStats| (s.ios(), s.io_bytes());
    [d(&j.dirs[0]), d(&j.dirs[1]), d(&j.dirs[2]), d(&j.sync)]
}
