//! Shared by the application models' integration tests.

use serde_json::Value;
use storlab_apps::{job_args, simulate};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

/// Run application `name` with `pairs` on `device` (seed 1): the
/// application's job of the report (its `app` and `storlab` objects).
pub fn app_job(device: &str, name: &str, pairs: &str) -> Value {
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &[]).expect("preset loads");
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
