//! Shared by the application models' integration tests.

use serde_json::Value;
use storlab_apps::{job_args, simulate};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

/// Run application `name` with `pairs` on `device` (seed 1): the
/// application's job of the report (its `app` and `storlab` objects).
pub fn app_job(device: &str, name: &str, pairs: &str) -> Value {
    app_job_set(device, name, pairs, &[])
}

/// [`app_job`] with configuration overrides `set` (`--set key=value`).
pub fn app_job_set(device: &str, name: &str, pairs: &str, set: &[&str]) -> Value {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &set).expect("preset loads");
    let jobs = storlab_workload::fio::parse_cli_args(&job_args(name, &[pairs.to_string()]))
        .expect("job args parse");
    let r = simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).expect("runs");
    let j = r
        .jobs
        .iter()
        .find(|j| j.app.is_some())
        .expect("the app's job");
    serde_json::json!({"app": j.app.clone().unwrap(), "storlab": j.storlab.clone()})
}
