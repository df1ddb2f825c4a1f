//! `storlab app compare`: one application on several devices, a table in
//! the shape of the Moneta study's Table V (raw metric per device, the
//! speedup of each over the first) as text, JSON, CSV and Markdown; with
//! `--predict`, the closed-loop cross-check: the run on the first device
//! is recorded (`storlab serve --record-format closed`), the simulator
//! predicts from that recording the run on each other device
//! (`storlab_sim::replay::closed::predict`), the application runs there
//! for real (recorded too), and the prediction's error is reported.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{json, Value};

use super::opts::RunOpts;
use super::registry::find;
use super::run::{self, Report};
use super::teardown;

/// Options of `storlab app compare`.
#[derive(clap::Args, Debug, Clone)]
pub struct CompareArgs {
    /// The application (`storlab app list`).
    pub app: String,
    /// Devices, comma separated; speedups are over the first.
    #[arg(long, value_delimiter = ',', required = true)]
    pub devices: Vec<String>,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Write the table as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the table as Markdown here.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Record every run as a closed-loop trace; predict each other
    /// device's run from the first device's recording with the simulator,
    /// and report the error against the real run there. A timed
    /// application runs for --duration on the first device and does the
    /// same work (`--work`) on the others.
    #[arg(long)]
    pub predict: bool,
    /// With --predict: keep the closed-loop traces in this directory
    /// (`DEVICE.closed`; default: a temporary directory removed at the
    /// end).
    #[arg(long, requires = "predict")]
    pub traces: Option<PathBuf>,
}

/// One device's closed-loop prediction from the first device's
/// recording, beside its real (recorded) run. Spans are the whole
/// session the server saw: first request to last completion (mkfs,
/// preparation and the measured phase).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Predicted {
    /// The device predicted.
    pub device: String,
    /// Requests of the first device's recording, replayed.
    pub requests: u64,
    /// Predicted run time on this device, s.
    pub predicted_runtime_s: f64,
    /// The real run's time on this device (its own recording), s.
    pub real_runtime_s: f64,
    /// `predicted / real - 1` of the run time.
    pub runtime_error: f64,
    /// Predicted requests per second.
    pub predicted_requests_per_s: f64,
    /// The real run's requests per second.
    pub real_requests_per_s: f64,
    /// `predicted / real - 1` of requests per second.
    pub requests_per_s_error: f64,
    /// The simulator replaying this device's own recording on this
    /// device: `predicted / recorded - 1` of the run time (the model's
    /// and the replay's own error, no device change).
    pub self_runtime_error: f64,
    /// Think time in the first device's recording, s (what no device
    /// shortens).
    pub think_s: f64,
}

/// The compared runs.
pub struct Table {
    /// The application.
    pub app: String,
    /// The metric's unit.
    pub unit: String,
    /// Lower is better (run times).
    pub lower_better: bool,
    /// Devices in column order.
    pub devices: Vec<String>,
    /// Per device its report, or why it has none.
    pub runs: Vec<Result<Report, String>>,
    /// With --predict: per other device, its prediction or why none.
    pub predictions: Vec<Result<Predicted, String>>,
}

impl Table {
    /// The metric on device `d`.
    pub fn value(&self, d: usize) -> Option<f64> {
        self.runs[d].as_ref().ok().map(|r| r.result.value)
    }

    /// Speedup of device `d` over the first (run times inverted: above 1
    /// is faster).
    pub fn speedup(&self, d: usize) -> Option<f64> {
        let (first, this) = (self.value(0)?, self.value(d)?);
        let s = if self.lower_better {
            first / this
        } else {
            this / first
        };
        s.is_finite().then_some(s)
    }

    fn cell(&self, d: usize) -> String {
        self.value(d).map_or("-".into(), |v| format!("{v:.2}"))
    }

    fn sp(&self, d: usize) -> String {
        self.speedup(d).map_or("-".into(), |x| format!("{x:.2}x"))
    }

    /// Width of the device column: the longest name, at least 6.
    fn name_width(&self) -> usize {
        self.devices
            .iter()
            .map(|d| d.len())
            .max()
            .unwrap_or(6)
            .max(6)
    }

    /// The table as text.
    pub fn text(&self) -> String {
        let w = self.name_width();
        let mut s = format!(
            "{} ({}), speedup over {}\n",
            self.app, self.unit, self.devices[0]
        );
        s.push_str(&format!(
            "{:<w$}  {:>14}  {:>8}\n",
            "device", self.unit, "speedup"
        ));
        for d in 0..self.devices.len() {
            s.push_str(&format!(
                "{:<w$}  {:>14}  {:>8}\n",
                self.devices[d],
                self.cell(d),
                self.sp(d)
            ));
        }
        s.push_str(&self.prediction_text());
        s.push_str(&self.notes());
        s
    }

    fn prediction_text(&self) -> String {
        if self.predictions.is_empty() {
            return String::new();
        }
        let w = self.name_width();
        let mut s = format!(
            "closed-loop prediction from the recording on {} (whole session, first request to last completion)\n",
            self.devices[0]
        );
        s.push_str(&format!(
            "{:<w$}  {:>11}  {:>9}  {:>8}  {:>11}  {:>11}  {:>8}  {:>10}\n",
            "device",
            "predicted s",
            "real s",
            "error",
            "pred req/s",
            "real req/s",
            "error",
            "self error"
        ));
        for p in &self.predictions {
            match p {
                Ok(p) => s.push_str(&format!(
                    "{:<w$}  {:>11.2}  {:>9.2}  {:>+7.1}%  {:>11.0}  {:>11.0}  {:>+7.1}%  {:>+9.1}%\n",
                    p.device,
                    p.predicted_runtime_s,
                    p.real_runtime_s,
                    100.0 * p.runtime_error,
                    p.predicted_requests_per_s,
                    p.real_requests_per_s,
                    100.0 * p.requests_per_s_error,
                    100.0 * p.self_runtime_error
                )),
                Err(e) => s.push_str(&format!("not predicted: {e}\n")),
            }
        }
        s
    }

    fn notes(&self) -> String {
        let mut s = String::new();
        for (d, r) in self.runs.iter().enumerate() {
            match r {
                Err(e) => s.push_str(&format!("not run on {}: {e}\n", self.devices[d])),
                Ok(rep) => {
                    for w in &rep.warnings {
                        s.push_str(&format!("warning ({}): {w}\n", self.devices[d]));
                    }
                }
            }
        }
        s
    }

    /// The table as Markdown (one row per application, as Table V: raw
    /// value and speedup per device).
    pub fn markdown(&self) -> String {
        let mut s = String::from("| benchmark | unit |");
        for d in &self.devices {
            s.push_str(&format!(" {d} | speedup |"));
        }
        s.push_str("\n|---|---|");
        for _ in &self.devices {
            s.push_str("---:|---:|");
        }
        s.push_str(&format!("\n| {} | {} |", self.app, self.unit));
        for d in 0..self.devices.len() {
            s.push_str(&format!(" {} | {} |", self.cell(d), self.sp(d)));
        }
        s.push('\n');
        if self.predictions.iter().any(|p| p.is_ok()) {
            s.push_str(&format!(
                "\nClosed-loop prediction from the recording on {}:\n\n| device | predicted s | real s | error | predicted req/s | real req/s | error | self error |\n|---|---:|---:|---:|---:|---:|---:|---:|\n",
                self.devices[0]
            ));
            for p in self.predictions.iter().flatten() {
                s.push_str(&format!(
                    "| {} | {:.2} | {:.2} | {:+.1}% | {:.0} | {:.0} | {:+.1}% | {:+.1}% |\n",
                    p.device,
                    p.predicted_runtime_s,
                    p.real_runtime_s,
                    100.0 * p.runtime_error,
                    p.predicted_requests_per_s,
                    p.real_requests_per_s,
                    100.0 * p.requests_per_s_error,
                    100.0 * p.self_runtime_error
                ));
            }
        }
        let n = self.notes();
        if !n.is_empty() {
            s.push('\n');
            for l in n.lines() {
                s.push_str(&format!("- {l}\n"));
            }
        }
        s
    }

    /// The table as JSON (each run's full report included).
    pub fn json(&self) -> Value {
        json!({
            "app": self.app,
            "unit": self.unit,
            "lower_better": self.lower_better,
            "devices": self.devices,
            "values": (0..self.devices.len()).map(|d| self.value(d)).collect::<Vec<_>>(),
            "speedups": (0..self.devices.len()).map(|d| self.speedup(d)).collect::<Vec<_>>(),
            "runs": self.runs.iter().map(|r| match r {
                Ok(rep) => serde_json::to_value(rep).unwrap_or(Value::Null),
                Err(e) => json!({"error": e}),
            }).collect::<Vec<_>>(),
            "predictions": self.predictions.iter().map(|p| match p {
                Ok(p) => serde_json::to_value(p).unwrap_or(Value::Null),
                Err(e) => json!({"error": e}),
            }).collect::<Vec<_>>(),
        })
    }

    /// The table as CSV: one line per device.
    pub fn csv(&self) -> String {
        let mut s = String::from("app,unit,device,value,speedup");
        if !self.predictions.is_empty() {
            s.push_str(",predicted_runtime_s,real_runtime_s,runtime_error,predicted_requests_per_s,real_requests_per_s,requests_per_s_error");
        }
        s.push('\n');
        let o = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x}"));
        for d in 0..self.devices.len() {
            s.push_str(&format!(
                "{},{},{},{},{}",
                self.app,
                self.unit,
                self.devices[d],
                o(self.value(d)),
                o(self.speedup(d))
            ));
            if !self.predictions.is_empty() {
                let p = self
                    .predictions
                    .iter()
                    .flatten()
                    .find(|p| p.device == self.devices[d]);
                let f = |g: fn(&Predicted) -> f64| o(p.map(g));
                s.push_str(&format!(
                    ",{},{},{},{},{},{}",
                    f(|p| p.predicted_runtime_s),
                    f(|p| p.real_runtime_s),
                    f(|p| p.runtime_error),
                    f(|p| p.predicted_requests_per_s),
                    f(|p| p.real_requests_per_s),
                    f(|p| p.requests_per_s_error)
                ));
            }
            s.push('\n');
        }
        s
    }
}

/// `storlab app compare`.
pub fn main(a: &CompareArgs) -> anyhow::Result<()> {
    let app = find(&a.app)?;
    // every name is checked before anything runs: a typo in the last
    // device must not cost the runs before it
    if let Some(d) = &a.opts.device {
        anyhow::bail!(
            "--device {d}: app compare runs on the devices of --devices (comma separated), e.g. --devices raid-disk,{d}"
        );
    }
    for dev in &a.devices {
        a.opts.check_device(dev)?;
    }
    run::check_privileges()?;
    if a.opts.record.is_some() {
        anyhow::bail!(
            "--record records one run: use `storlab app run --record` per device, or --predict"
        );
    }
    if a.predict && a.devices.len() < 2 {
        anyhow::bail!("--predict predicts the other devices from the first: give at least two");
    }
    // where the closed-loop traces go (a temporary directory unless kept)
    let tmp_traces = match (&a.predict, &a.traces) {
        (true, None) => Some(
            tempfile::Builder::new()
                .prefix("storlab-traces-")
                .tempdir()
                .context("a directory for the traces")?,
        ),
        _ => None,
    };
    let trace_dir = a
        .traces
        .clone()
        .or_else(|| tmp_traces.as_ref().map(|t| t.path().to_path_buf()));
    if let Some(d) = &a.traces {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let trace_of = |i: usize| {
        trace_dir
            .as_ref()
            .map(|d| d.join(format!("{}-{}.closed", i, sanitize(&a.devices[i]))))
    };
    let mut runs: Vec<Result<Report, String>> = Vec::new();
    // with --predict, a timed application runs for --duration on the
    // first device and does the same work on the others, so every
    // session does the same work and run times compare
    let mut same_work: Vec<u64> = Vec::new();
    for (i, dev) in a.devices.iter().enumerate() {
        let mut o = a.opts.clone();
        o.device = Some(dev.clone());
        if i > 0 && !same_work.is_empty() {
            o.work = same_work.clone();
        }
        if let Some(t) = trace_of(i) {
            o.record = Some(t);
            o.record_format = Some("closed".into());
        }
        eprintln!("storlab app compare: {} on {dev}", app.name());
        let r = run::run(app, &o);
        // an interrupted compare stops at once (teardown done by `run`)
        teardown::check_stop()?;
        if let (0, Ok(rep), true, true) = (i, &r, a.predict, o.work.is_empty()) {
            same_work = rep.result.work.clone();
            if !same_work.is_empty() {
                eprintln!(
                    "storlab app compare: the other devices do the same work: --work {}",
                    same_work
                        .iter()
                        .map(|w| w.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                );
            }
        }
        runs.push(r.map_err(|e| format!("{e:#}")));
    }
    let first_ok = runs.iter().find_map(|r| r.as_ref().ok());
    let (unit, lower_better) = match first_ok {
        Some(r) => (r.result.unit.to_string(), !r.result.higher_better),
        None => ("?".into(), false),
    };
    let mut predictions = Vec::new();
    if a.predict {
        let first = trace_of(0).expect("--predict has a trace directory");
        for (i, dev) in a.devices.iter().enumerate().skip(1) {
            predictions.push(if runs[0].is_err() || runs[i].is_err() {
                Err(format!("{dev}: no run to compare with"))
            } else {
                let own = trace_of(i).expect("--predict has a trace directory");
                predicted(&a.opts, dev, &first, &own).map_err(|e| format!("{dev}: {e:#}"))
            });
        }
    }
    let t = Table {
        app: app.name().into(),
        unit,
        lower_better,
        devices: a.devices.clone(),
        runs,
        predictions,
    };
    print!("{}", t.text());
    let write = |p: &Option<PathBuf>, s: String| -> anyhow::Result<()> {
        if let Some(p) = p {
            std::fs::write(p, s).with_context(|| format!("writing {}", p.display()))?;
        }
        Ok(())
    };
    write(&a.json, serde_json::to_string_pretty(&t.json())? + "\n")?;
    write(&a.csv, t.csv())?;
    write(&a.markdown, t.markdown())?;
    if t.runs.iter().all(|r| r.is_err()) {
        anyhow::bail!("{} ran on none of the devices", app.name());
    }
    Ok(())
}

/// A device name as a file name (a preset may be a path to a TOML file).
fn sanitize(dev: &str) -> String {
    dev.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Predict `dev`'s run from the recording `first`, and compare with the
/// real run there, recorded as `own`.
fn predicted(
    o: &RunOpts,
    dev: &str,
    first: &std::path::Path,
    own: &std::path::Path,
) -> anyhow::Result<Predicted> {
    use storlab_model::config::PresetStore;
    use storlab_sim::replay::closed::{predict, ClosedOptions};
    let mut store = PresetStore::default();
    if let Some(d) = &o.preset_dir {
        store = store.with_dir(d);
    }
    let (_, cfg) = storlab_model::SystemConfig::load(&store, dev, &o.set)
        .with_context(|| format!("device '{dev}'"))?;
    let opts = ClosedOptions::default();
    let p =
        predict(first, &cfg, &opts).with_context(|| format!("replaying {}", first.display()))?;
    let r = predict(own, &cfg, &opts).with_context(|| format!("replaying {}", own.display()))?;
    let err = |pred: f64, real: f64| pred / real.max(1e-12) - 1.0;
    Ok(Predicted {
        device: dev.to_string(),
        requests: p.requests,
        predicted_runtime_s: p.runtime_s,
        real_runtime_s: r.recorded_runtime_s,
        runtime_error: err(p.runtime_s, r.recorded_runtime_s),
        predicted_requests_per_s: p.requests_per_s,
        real_requests_per_s: r.recorded_requests_per_s,
        requests_per_s_error: err(p.requests_per_s, r.recorded_requests_per_s),
        self_runtime_error: err(r.runtime_s, r.recorded_runtime_s),
        think_s: p.think_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::kit::Measured;

    fn rep(v: f64, higher: bool) -> Report {
        Report {
            app: "x".into(),
            device: "d".into(),
            fs: "xfs".into(),
            size: 1,
            scale: 1.0,
            threads: 1,
            attach: "nbdfuse".into(),
            result: Measured {
                unit: if higher { "ops/s" } else { "seconds" },
                value: v,
                higher_better: higher,
                extra: vec![],
                work: vec![],
            },
            run_s: 1.0,
            prepare_s: 1.0,
            device_stats: Value::Null,
            warnings: vec![],
            record: None,
        }
    }

    #[test]
    fn speedups_invert_run_times_and_skip_failed_cells() {
        let t = Table {
            app: "postmark".into(),
            unit: "seconds".into(),
            lower_better: true,
            devices: vec!["a".into(), "b".into(), "c".into()],
            runs: vec![
                Ok(rep(10.0, false)),
                Ok(rep(5.0, false)),
                Err("boom".into()),
            ],
            predictions: vec![],
        };
        assert_eq!(t.speedup(0), Some(1.0));
        assert_eq!(t.speedup(1), Some(2.0));
        assert_eq!(t.speedup(2), None);
        assert!(
            t.markdown()
                .contains("| postmark | seconds | 10.00 | 1.00x | 5.00 | 2.00x | - | - |"),
            "{}",
            t.markdown()
        );
        assert!(t.csv().contains("postmark,seconds,b,5,2\n"), "{}", t.csv());
        assert!(t.text().contains("not run on c: boom"));
        assert_eq!(t.json()["speedups"][1], 2.0);
        let r = Table {
            lower_better: false,
            runs: vec![
                Ok(rep(100.0, true)),
                Ok(rep(300.0, true)),
                Ok(rep(50.0, true)),
            ],
            ..t
        };
        assert_eq!(r.speedup(1), Some(3.0));
        assert_eq!(r.speedup(2), Some(0.5));
    }
}
