//! `storlab app compare`: one application on several devices, a table in
//! the shape of the Moneta study's Table V (raw metric per device, the
//! speedup of each over the first) as text, JSON, CSV and Markdown.

use std::path::PathBuf;

use anyhow::Context;
use serde_json::{json, Value};

use super::run::{self, Report, RunOpts};
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

    /// The table as text.
    pub fn text(&self) -> String {
        let w = self
            .devices
            .iter()
            .map(|d| d.len())
            .max()
            .unwrap_or(6)
            .max(6);
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
        s.push_str(&self.notes());
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
        })
    }

    /// The table as CSV: one line per device.
    pub fn csv(&self) -> String {
        let mut s = String::from("app,unit,device,value,speedup\n");
        let o = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x}"));
        for d in 0..self.devices.len() {
            s.push_str(&format!(
                "{},{},{},{},{}\n",
                self.app,
                self.unit,
                self.devices[d],
                o(self.value(d)),
                o(self.speedup(d))
            ));
        }
        s
    }
}

/// `storlab app compare`.
pub fn main(a: &CompareArgs) -> anyhow::Result<()> {
    let app = super::find(&a.app)?;
    run::check_privileges()?;
    if a.opts.record.is_some() {
        anyhow::bail!("--record records one run: use `storlab app run --record` per device");
    }
    let mut runs = Vec::new();
    for dev in &a.devices {
        let mut o = a.opts.clone();
        o.device = dev.clone();
        eprintln!("storlab app compare: {} on {dev}", app.name());
        let r = run::run(app, &o);
        // an interrupted compare stops at once (teardown done by `run`)
        teardown::check_stop()?;
        runs.push(r.map_err(|e| format!("{e:#}")));
    }
    let first_ok = runs.iter().find_map(|r| r.as_ref().ok());
    let (unit, lower_better) = match first_ok {
        Some(r) => (r.result.unit.to_string(), !r.result.higher_better),
        None => ("?".into(), false),
    };
    let t = Table {
        app: app.name().into(),
        unit,
        lower_better,
        devices: a.devices.clone(),
        runs,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Measured;

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
