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
