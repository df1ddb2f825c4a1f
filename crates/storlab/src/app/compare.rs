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

/// Transport floors of one comparison further apart than this factor
/// make it unusable.
pub const FLOOR_SPREAD: f64 = 2.0;

/// The order of round `r` over `n` devices: forward, then backward, and
/// so on (a,b,b,a,a,b...), so a slow stretch of the host falls on every
/// device alike.
pub fn round_order(n: usize, r: u32) -> Vec<usize> {
    if r.is_multiple_of(2) {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    }
}

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
    /// Rounds over the devices, each round in the reverse order of the
    /// one before (a,b then b,a), so host load hits every device alike;
    /// each device's value is the mean of its rounds.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
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
    /// Per device, its metric in each round that ran.
    pub rounds: Vec<Vec<f64>>,
}

impl Table {
    /// The metric on device `d`.
    pub fn value(&self, d: usize) -> Option<f64> {
        match self.rounds.get(d).filter(|r| !r.is_empty()) {
            Some(r) => Some(r.iter().sum::<f64>() / r.len() as f64),
            None => self.runs[d].as_ref().ok().map(|r| r.result.value),
        }
    }

    /// Why the comparison cannot be trusted, plainly: a device whose mean
    /// latency is below the transport floor measured in its run (the
    /// application saw the host's NBD path, not the device), and floors
    /// differing more than [`FLOOR_SPREAD`]x between the devices (host
    /// load changed between the runs). Empty: usable.
    pub fn unusable(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut floors: Vec<(&str, f64)> = Vec::new();
        for (d, r) in self.runs.iter().enumerate() {
            let Ok(rep) = r else { continue };
            let st = &rep.device_stats;
            let Some(f) = run::floor_ns(st) else {
                continue;
            };
            floors.push((&self.devices[d], f));
            let (mut n, mut sum) = (0.0, 0.0);
            for op in st["ops"].as_array().into_iter().flatten() {
                if matches!(op["op"].as_str(), Some("read" | "write")) {
                    let k = op["requests"].as_f64().unwrap_or(0.0);
                    n += k;
                    sum += k * op["model_latency"]["mean_ns"].as_f64().unwrap_or(0.0);
                }
            }
            if n > 0.0 && sum / n < f {
                v.push(format!(
                    "{}: the device's mean latency ({:.1} us) is below the transport floor ({:.1} us): the application saw this host's NBD path, not the device",
                    self.devices[d],
                    sum / n / 1000.0,
                    f / 1000.0
                ));
            }
        }
        let lo = floors.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        let hi = floors.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(lo), Some(hi)) = (lo, hi) {
            if hi.1 > FLOOR_SPREAD * lo.1 {
                v.push(format!(
                    "the transport floors differ {:.1}x between the devices ({} {:.1} us, {} {:.1} us): host load changed between the runs",
                    hi.1 / lo.1,
                    lo.0,
                    lo.1 / 1000.0,
                    hi.0,
                    hi.1 / 1000.0
                ));
            }
        }
        v
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
        for u in self.unusable() {
            s.push_str(&format!("comparison NOT USABLE: {u}\n"));
        }
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
    let mut runs: Vec<Result<Report, String>> = a
        .devices
        .iter()
        .map(|_| Err("not run".to_string()))
        .collect();
    let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); a.devices.len()];
    // with --predict, a timed application runs for --duration on the
    // first device and does the same work on the others, so every
    // session does the same work and run times compare
    let mut same_work: Vec<u64> = Vec::new();
    for round in 0..a.rounds {
        for i in round_order(a.devices.len(), round) {
            let dev = &a.devices[i];
            let mut o = a.opts.clone();
            o.device = Some(dev.clone());
            if !same_work.is_empty() {
                o.work = same_work.clone();
            }
            // the first round's runs are the recorded ones
            if let (0, Some(t)) = (round, trace_of(i)) {
                o.record = Some(t);
                o.record_format = Some("closed".into());
            }
            eprintln!(
                "storlab app compare: {} on {dev} (round {} of {})",
                app.name(),
                round + 1,
                a.rounds
            );
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
            match r {
                Ok(rep) => {
                    rounds[i].push(rep.result.value);
                    if round == 0 || runs[i].is_err() {
                        runs[i] = Ok(rep);
                    }
                }
                Err(e) if runs[i].is_err() => runs[i] = Err(format!("{e:#}")),
                Err(_) => {}
            }
        }
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
        rounds,
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
                cpu_user_s: None,
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
            rounds: vec![],
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
        // rounds: each device's value is the mean of its rounds
        let r = Table {
            rounds: vec![vec![100.0, 300.0], vec![400.0], vec![]],
            ..r
        };
        assert_eq!(r.value(0), Some(200.0));
        assert_eq!(r.speedup(1), Some(2.0));
        assert_eq!(r.value(2), Some(50.0));
    }

    fn with_floor(floor_ns: f64, model_ns: f64) -> Report {
        let mut r = rep(1.0, true);
        r.device_stats = json!({
            "transport_floor": {"mean_ns": floor_ns},
            "ops": [{"op": "read", "requests": 10, "model_latency": {"mean_ns": model_ns}}],
        });
        r
    }

    fn two(a: Report, b: Report) -> Table {
        Table {
            app: "sqlite".into(),
            unit: "ops/s".into(),
            lower_better: false,
            devices: vec!["raid-disk".into(), "moneta-spin".into()],
            runs: vec![Ok(a), Ok(b)],
            predictions: vec![],
            rounds: vec![],
        }
    }

    #[test]
    fn issue_60_a_device_below_its_floor_or_floors_apart_make_it_unusable() {
        // both well above their floors, floors alike: usable
        let t = two(with_floor(100_000.0, 5e6), with_floor(150_000.0, 1e6));
        assert!(t.unusable().is_empty(), "{:?}", t.unusable());
        assert!(!t.text().contains("NOT USABLE"));
        // the issue's case: 8 us against an 834.6 us floor
        let t = two(with_floor(120_000.0, 5e6), with_floor(834_600.0, 8_000.0));
        let u = t.unusable();
        assert_eq!(u.len(), 2, "{u:?}");
        assert!(
            u[0].starts_with("moneta-spin") && u[0].contains("below the transport floor"),
            "{u:?}"
        );
        assert!(u[1].contains("differ 7.0x"), "{u:?}");
        assert!(t.text().contains("comparison NOT USABLE"), "{}", t.text());
    }

    #[test]
    fn issue_60_rounds_alternate_the_order_of_the_devices() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![2, 1, 0]);
        assert_eq!(round_order(3, 2), vec![0, 1, 2]);
        // every device's runs sit at the same mean position over two rounds
        let mut pos = [0usize; 3];
        for r in 0..2 {
            for (k, d) in round_order(3, r).into_iter().enumerate() {
                pos[d] += k;
            }
        }
        assert!(pos.iter().all(|p| *p == pos[0]), "{pos:?}");
    }
}
