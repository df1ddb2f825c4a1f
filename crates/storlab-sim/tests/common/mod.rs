//! Helpers shared by the simulator's integration tests: run fio arguments
//! on a preset through the same path as `storlab sim`.
#![allow(dead_code)]

use storlab_model::breakdown::COMPONENTS;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::run::simulate;
use storlab_sim::stats::JobStats;

/// Run fio command-line arguments on `device` with `overrides`; one record
/// per thread.
pub fn run_jobs(device: &str, overrides: &[&str], fio: &[&str]) -> Vec<JobStats> {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &ov).expect("preset loads");
    let args: Vec<String> = fio.iter().map(|s| s.to_string()).collect();
    let jobs = storlab_workload::fio::parse_cli_args(&args).expect("fio args parse");
    simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})
        .expect("simulation runs")
        .jobs
}

/// Run fio command-line arguments on `device` with `overrides`; all jobs
/// merged into one record.
pub fn run(device: &str, overrides: &[&str], fio: &[&str]) -> JobStats {
    let r = run_jobs(device, overrides, fio);
    let mut all = r[0].clone();
    for j in &r[1..] {
        all.merge(j);
    }
    all
}

/// Mean total latency in µs of direction `d` (0 read, 1 write).
pub fn lat_us(s: &JobStats, d: usize) -> f64 {
    s.dirs[d].lat().mean() / 1000.0
}

/// Bandwidth of direction `d` in GB/s (bytes per simulated ns).
pub fn gbps(s: &JobStats, d: usize) -> f64 {
    s.dirs[d].io_bytes() as f64 / s.runtime_ns[d].max(1) as f64
}

/// Read + write bandwidth, GB/s.
pub fn total_gbps(s: &JobStats) -> f64 {
    let t = s.runtime_ns[0].max(s.runtime_ns[1]).max(1) as f64;
    (s.dirs[0].io_bytes() + s.dirs[1].io_bytes()) as f64 / t
}

/// Share of direction `d`'s mean latency spent in host software.
pub fn software_share(s: &JobStats, d: usize) -> f64 {
    let b = s.dirs[d].mean_breakdown_ns();
    let total: f64 = b.iter().sum();
    let sw: f64 = COMPONENTS
        .iter()
        .filter(|c| c.is_software())
        .map(|&c| b[c as usize])
        .sum();
    sw / total
}

/// One thread, queue depth 1, random 4 KB (or `bs`) accesses.
pub fn qd1(device: &str, overrides: &[&str], rw: &str, bs: &str, n: u32) -> JobStats {
    let rw = format!("--rw={rw}");
    let bs = format!("--bs={bs}");
    let n = format!("--number_ios={n}");
    run(
        device,
        overrides,
        &[
            "--name=qd1",
            &rw,
            &bs,
            "--iodepth=1",
            "--numjobs=1",
            "--size=4g",
            &n,
        ],
    )
}

/// XDD-style bandwidth: 16 threads, one request outstanding each, random
/// locations (workloads.md).
pub fn xdd(device: &str, rw: &str, bs: &str, ios_per_thread: u32) -> JobStats {
    let rw = format!("--rw={rw}");
    let bs = format!("--bs={bs}");
    let n = format!("--number_ios={ios_per_thread}");
    run(
        device,
        &[],
        &[
            "--name=xdd",
            &rw,
            &bs,
            "--iodepth=1",
            "--numjobs=16",
            "--norandommap",
            &n,
        ],
    )
}

/// `x` within `rel` (e.g. 0.1 for ±10 %) of `target`, with a message.
pub fn within(what: &str, x: f64, target: f64, rel: f64) {
    let lo = target * (1.0 - rel);
    let hi = target * (1.0 + rel);
    assert!(
        x >= lo && x <= hi,
        "{what}: model {x:.3}, published {target} ±{:.0}% = [{lo:.3}, {hi:.3}]",
        rel * 100.0
    );
}
