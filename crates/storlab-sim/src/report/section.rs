//! The terminal report's storlab section of a job: the mean latency
//! breakdown table, the host software's figures, power and wear, and an
//! application job's own result.

use std::fmt::Write as _;

use storlab_model::breakdown::{COMPONENTS, NCOMP};

use crate::stats::{DirStats, JobStats, DIR_NAMES};

pub(crate) fn show_breakdown(out: &mut String, job: &JobStats) {
    let named: Vec<(&str, &DirStats)> = DIR_NAMES
        .iter()
        .copied()
        .zip(job.dirs.iter())
        .chain(std::iter::once(("sync", &job.sync)))
        .filter(|(_, d)| d.ios() > 0)
        .collect();
    if named.is_empty() {
        return;
    }
    let means: Vec<[f64; NCOMP]> = named.iter().map(|(_, d)| d.mean_breakdown_ns()).collect();
    let totals: Vec<f64> = means.iter().map(|m| m.iter().sum()).collect();
    out.push_str("  latency breakdown (mean per IO, usec and % of total):\n");
    let _ = write!(out, "    {:<14}", "component");
    for (name, _) in &named {
        let _ = write!(out, " {name:>12} {:>7}", "%");
    }
    out.push('\n');
    let pct = |v: f64, t: f64| if t > 0.0 { v * 100.0 / t } else { 0.0 };
    for (i, c) in COMPONENTS.iter().enumerate() {
        if means.iter().all(|m| m[i] == 0.0) {
            continue;
        }
        let _ = write!(out, "    {:<14}", c.name());
        for (m, t) in means.iter().zip(&totals) {
            let _ = write!(out, " {:>12.3} {:>6.1}%", m[i] / 1000.0, pct(m[i], *t));
        }
        out.push('\n');
    }
    let _ = write!(out, "    {:<14}", "total");
    for t in &totals {
        let _ = write!(
            out,
            " {:>12.3} {:>6.1}%",
            t / 1000.0,
            if *t > 0.0 { 100.0 } else { 0.0 }
        );
    }
    out.push('\n');
}

/// The host software's instructions (or core time) per request, when the
/// `storlab` value has them.
pub(crate) fn show_software(out: &mut String, v: &serde_json::Value) {
    let Some(sw) = v.get("host_software") else {
        return;
    };
    let mut parts = Vec::new();
    for dir in ["read", "write"] {
        let ns = sw["cpu_ns_per_io"][dir].as_f64();
        let ins = sw["instructions_per_io"][dir].as_f64();
        match (ns, ins) {
            (Some(ns), Some(i)) => {
                parts.push(format!("{dir}={i:.0} instructions/{:.2}us", ns / 1000.0))
            }
            (Some(ns), None) => parts.push(format!("{dir}={:.2}us", ns / 1000.0)),
            _ => {}
        }
    }
    if !parts.is_empty() {
        let _ = writeln!(out, "  host cpu/io  : {}", parts.join(", "));
    }
}

pub(crate) fn show_power_wear(out: &mut String, v: &serde_json::Value) {
    if let Some(power) = v.get("power").and_then(|p| p.as_array()) {
        if !power.is_empty() {
            let (mut tw, mut tj) = (0.0, 0.0);
            out.push_str("  power        : ");
            for (i, p) in power.iter().enumerate() {
                let name = p.get("component").and_then(|c| c.as_str()).unwrap_or("?");
                let w = p.get("avg_w").and_then(|x| x.as_f64()).unwrap_or(0.0);
                let j = p.get("energy_j").and_then(|x| x.as_f64()).unwrap_or(0.0);
                tw += w;
                tj += j;
                let _ = write!(
                    out,
                    "{}{name}={w:.3}W/{j:.6}J",
                    if i == 0 { "" } else { ", " }
                );
            }
            let _ = writeln!(out, ", total={tw:.3}W/{tj:.6}J");
        }
    }
    if let Some(w) = v.get("wear").filter(|w| w.is_object()) {
        let unit = w.get("unit").and_then(|x| x.as_str()).unwrap_or("wear");
        let units = w.get("units").and_then(|x| x.as_u64()).unwrap_or(0);
        let max = w.get("max").and_then(|x| x.as_u64()).unwrap_or(0);
        let mean = w.get("mean").and_then(|x| x.as_f64()).unwrap_or(0.0);
        let _ = writeln!(
            out,
            "  wear         : {unit}: max={max}, mean={mean:.2}, units={units}"
        );
    }
}

/// An application job's own result: its metric, each operation's latency
/// and the time by layer.
pub(crate) fn show_app(out: &mut String, app: &serde_json::Value) {
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let _ = writeln!(
        out,
        "  application  : {} {:.4} {} (over {:.3} s simulated, {} operations counted)",
        app["name"].as_str().unwrap_or(""),
        f(&app["metric"]),
        app["unit"].as_str().unwrap_or(""),
        f(&app["elapsed_ns"]) / 1e9,
        app["operations_counted"],
    );
    if let Some(ops) = app["operations"].as_object() {
        for (name, o) in ops {
            let p = &o["percentiles_ns"];
            let _ = writeln!(
                out,
                "    {name:<12} n={:<8} mean={:.2}us p50={:.2}us p99={:.2}us p99.9={:.2}us",
                o["count"],
                f(&o["mean_ns"]) / 1e3,
                f(&p["50.000000"]) / 1e3,
                f(&p["99.000000"]) / 1e3,
                f(&p["99.900000"]) / 1e3,
            );
        }
    }
    if let Some(layers) = app["time_by_layer"].as_object() {
        let parts: Vec<String> = layers
            .iter()
            .filter(|(_, v)| f(&v["share"]) > 0.0)
            .map(|(k, v)| format!("{k}={:.1}%", 100.0 * f(&v["share"])))
            .collect();
        let _ = writeln!(out, "  time by layer: {}", parts.join(", "));
    }
}
