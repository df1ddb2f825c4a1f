//! Helpers shared by the simulator's integration tests: run fio arguments
//! on a preset through the same path as `storlab sim`. (The lab's
//! `storlab_lab::Spec` does the same for reproductions; this crate's tests
//! cannot depend on the lab, which depends on this crate.)

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::run::simulate;
use storlab_sim::stats::JobStats;

/// Run fio command-line arguments on `device` with `overrides`; all jobs
/// merged into one record.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn run(device: &str, overrides: &[&str], fio: &[&str]) -> JobStats {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &ov).expect("preset loads");
    let args: Vec<String> = fio.iter().map(|s| s.to_string()).collect();
    let jobs = storlab_workload::fio::parse_cli_args(&args).expect("fio args parse");
    let r = simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).expect("simulation runs");
    let mut all = r.jobs[0].clone();
    for j in &r.jobs[1..] {
        all.merge(j);
    }
    all
}

/// Every job of a run of fio command-line arguments on `device` with
/// `overrides`, in order.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn jobs<S: AsRef<str>>(device: &str, overrides: &[String], fio: &[S]) -> Vec<JobStats> {
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, overrides).expect("preset loads");
    let args: Vec<String> = fio.iter().map(|s| s.as_ref().to_string()).collect();
    let jobs = storlab_workload::fio::parse_cli_args(&args).expect("fio args parse");
    simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})
        .expect("simulation runs")
        .jobs
}

/// The value of the device counter `name` in a job's `storlab` report.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn counter(j: &JobStats, name: &str) -> f64 {
    j.storlab["counters"]
        .as_array()
        .expect("counters")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("counter {name}"))["value"]
        .as_f64()
        .expect("a number")
}
