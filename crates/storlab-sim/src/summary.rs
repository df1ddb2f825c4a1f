//! What a run gives back, whatever ran (fio jobs, a trace replay, an
//! application): the [`RunResult`], and the `storlab` object every job's
//! report carries ([`RunSummary`], with the resolved configuration as
//! JSON, [`config_json`]).

use serde_json::{json, Value};
use storlab_model::config::Resolved;
use storlab_model::{Nanos, Op, SystemConfig};

use crate::engine::Engine;
use crate::stats::JobStats;

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
            "device_requests": {
                "read": host.finished(Op::Read).0,
                "write": host.finished(Op::Write).0,
                "flush": host.finished(Op::Flush).0,
                "trim": host.finished(Op::Trim).0,
                "read_bytes": host.finished(Op::Read).1,
                "write_bytes": host.finished(Op::Write).1,
            },
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
