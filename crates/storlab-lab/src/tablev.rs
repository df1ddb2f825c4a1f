//! The Moneta study's Table V for any list of devices: each benchmark's
//! raw performance per device (an application model's metric, or XDD's
//! bandwidth), the speedup of each device over the first, and the
//! harmonic mean of the speedups per device.

use serde_json::{json, Value};

use crate::measure::{Plan, RunId, Spec};
use crate::studies::filesystems;
use crate::Result;

/// What a row of the table runs.
#[derive(Clone, Copy, Debug)]
pub enum What {
    /// An application model with these parameters.
    App(&'static str),
    /// XDD, 16 threads, 50/50 mix: `rw` (`rw`: sequential 4 MB,
    /// `randrw`: random 4 KB), through XFS or on the raw device.
    Xdd {
        /// fio's rw.
        rw: &'static str,
        /// Through XFS.
        fs: bool,
    },
}

/// One benchmark of the table.
#[derive(Clone, Copy, Debug)]
pub struct Bench {
    /// As the table names it.
    pub label: &'static str,
    /// What runs.
    pub what: What,
    /// The metric's unit.
    pub unit: &'static str,
    /// The Moneta column's published value (moneta-balance).
    pub moneta: f64,
    /// The RAID-SSD column's published value (`raid-ssd`; given with
    /// issue 57 so that each application has a second point: a
    /// prediction, never fitted).
    pub raid_ssd: f64,
}

impl Bench {
    /// The row's metric off a run of [`spec`]: the application's metric
    /// (the paging programs' instructions/s as MIPS) or XDD's bandwidth.
    pub fn value(&self, run: &crate::measure::Run) -> f64 {
        match self.what {
            What::App(_) if self.unit == "MIPS" => run.app_metric() / 1e6,
            What::App(_) => run.app_metric(),
            What::Xdd { .. } => run.total_mbps(),
        }
    }

    /// Lower is better (run times).
    pub fn lower_better(&self) -> bool {
        self.unit == "seconds"
    }
}

/// Table V's row labelled `label` ("Postmark", "PTFDB", "XDD-Random-FS").
pub fn bench(label: &str) -> Option<&'static Bench> {
    BENCHES.iter().find(|b| b.label == label)
}

/// Table V's benchmarks with the Moneta column (the study's full design,
/// `moneta-balance`).
pub const BENCHES: &[Bench] = &[
    Bench {
        label: "Postmark",
        what: What::App("postmark"),
        unit: "seconds",
        moneta: 27.4,
        raid_ssd: 46.8,
    },
    Bench {
        label: "Build",
        what: What::App("build"),
        unit: "seconds",
        moneta: 36.9,
        raid_ssd: 36.9,
    },
    Bench {
        label: "XDD-Sequential-Raw",
        what: What::Xdd {
            rw: "rw",
            fs: false,
        },
        unit: "MB/s",
        moneta: 2932.0,
        raid_ssd: 569.0,
    },
    Bench {
        label: "XDD-Sequential-FS",
        what: What::Xdd { rw: "rw", fs: true },
        unit: "MB/s",
        moneta: 2773.0,
        raid_ssd: 564.0,
    },
    Bench {
        label: "XDD-Random-Raw",
        what: What::Xdd {
            rw: "randrw",
            fs: false,
        },
        unit: "MB/s",
        moneta: 1753.0,
        raid_ssd: 32.0,
    },
    Bench {
        label: "XDD-Random-FS",
        what: What::Xdd {
            rw: "randrw",
            fs: true,
        },
        unit: "MB/s",
        moneta: 261.0,
        raid_ssd: 30.0,
    },
    Bench {
        label: "PTFDB",
        what: What::App("ptfdb"),
        unit: "seconds",
        moneta: 2.1,
        raid_ssd: 5.8,
    },
    Bench {
        label: "OLTP",
        what: What::App("oltp"),
        unit: "transactions/s",
        moneta: 799.0,
        raid_ssd: 338.0,
    },
    Bench {
        label: "Berkeley-DB BTree",
        what: What::App("bdb-btree"),
        unit: "transactions/s",
        moneta: 14884.0,
        raid_ssd: 6071.0,
    },
    Bench {
        label: "Berkeley-DB HashTable",
        what: What::App("bdb-hash"),
        unit: "transactions/s",
        moneta: 10980.0,
        raid_ssd: 4355.0,
    },
    Bench {
        label: "BT",
        what: What::App("npb-bt"),
        unit: "MIPS",
        moneta: 2785.0,
        raid_ssd: 1461.0,
    },
    Bench {
        label: "IS",
        what: What::App("npb-is"),
        unit: "MIPS",
        moneta: 351.0,
        raid_ssd: 252.0,
    },
    Bench {
        label: "LU",
        what: What::App("npb-lu"),
        unit: "MIPS",
        moneta: 4298.0,
        raid_ssd: 1864.0,
    },
    Bench {
        label: "SP",
        what: What::App("npb-sp"),
        unit: "MIPS",
        moneta: 704.0,
        raid_ssd: 345.0,
    },
    Bench {
        label: "UA",
        what: What::App("npb-ua"),
        unit: "MIPS",
        moneta: 3992.0,
        raid_ssd: 3775.0,
    },
];

/// The table's default devices: the study's columns.
pub const DEFAULT_DEVICES: &[&str] = &["raid-disk", "raid-ssd", "fusion-io", "moneta-balance"];

/// The run behind one cell.
pub fn spec(b: &Bench, device: &str, app_set: &[String]) -> Option<Spec> {
    match b.what {
        What::App(name) => {
            let info = storlab_apps::find(name, "table V").ok()?;
            // each application gets the pairs it takes (the paging
            // programs have no `transactions`)
            let takes = |pair: &&str| {
                let k = pair.split('=').next().unwrap_or("").trim();
                storlab_apps::COMMON_PARAMS
                    .iter()
                    .chain(info.params)
                    .any(|d| d.name == k)
            };
            let set: Vec<String> = app_set
                .iter()
                .map(|p| p.split(',').filter(takes).collect::<Vec<_>>().join(","))
                .filter(|p| !p.is_empty())
                .collect();
            let args = storlab_apps::job_args(name, &set);
            let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            // a paging program's swap device gets the paging study's
            // overrides: its caches scaled with the programs' DRAM (8 GB /
            // 128), so a 256 MB controller cache does not hold the scaled
            // swap area; the other applications' flash devices are put in
            // the state their data leaves them by the application runner
            // itself (storlab_apps::run::loaded_state), as on the command
            // line
            let ov = if b.unit == "MIPS" {
                crate::studies::paging::device_set(device)
            } else {
                Vec::new()
            };
            let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
            Some(Spec::new(device, &ov, &args))
        }
        What::Xdd { rw, fs } => Some(filesystems::xdd(device, fs.then_some("xfs"), rw)),
    }
}

/// A filled table.
#[derive(Clone, Debug)]
pub struct TableV {
    /// The devices, in column order (speedups are over the first).
    pub devices: Vec<String>,
    /// Per benchmark: its row, and its metric per device (`None`: the
    /// benchmark's model is not in this build, or its run failed).
    pub rows: Vec<(Bench, Vec<Option<f64>>)>,
    /// Why cells are empty: the failed runs' errors.
    pub notes: Vec<String>,
}

/// Plan the table's runs on `devices` (applications with `app_set`
/// added to each, e.g. `scale=0.01` for a quick table).
pub fn plan(devices: &[String], app_set: &[String]) -> (Plan, Vec<Vec<Option<RunId>>>) {
    let mut plan = Plan::new();
    let ids = BENCHES
        .iter()
        .map(|b| {
            devices
                .iter()
                .map(|d| spec(b, d, app_set).map(|s| plan.add(s)))
                .collect()
        })
        .collect();
    (plan, ids)
}

/// Run the table on `devices`. A cell whose run fails (an application
/// whose data set does not fit the device, say) is left empty and its
/// error kept in [`TableV::notes`]; the other cells still run.
pub fn run(devices: &[String], app_set: &[String], progress: &(dyn Fn() + Sync)) -> Result<TableV> {
    use rayon::prelude::*;
    let cells: Vec<(usize, usize, Spec)> = BENCHES
        .iter()
        .enumerate()
        .flat_map(|(r, b)| {
            devices
                .iter()
                .enumerate()
                .filter_map(move |(d, dev)| spec(b, dev, app_set).map(|s| (r, d, s)))
        })
        .collect();
    let done: Vec<(usize, usize, std::result::Result<f64, String>)> = cells
        .par_iter()
        .map(|(r, d, spec)| {
            let b = &BENCHES[*r];
            let v = spec.run().map(|run| b.value(&run)).map_err(|e| {
                // the error with its causes: the application's own
                // message is the innermost
                let mut m = format!("{} on {}: {e}", b.label, devices[*d]);
                let mut src = std::error::Error::source(&e);
                while let Some(s) = src {
                    m.push_str(&format!(": {s}"));
                    src = s.source();
                }
                m
            });
            progress();
            (*r, *d, v)
        })
        .collect();
    let mut rows: Vec<(Bench, Vec<Option<f64>>)> = BENCHES
        .iter()
        .map(|b| (*b, vec![None; devices.len()]))
        .collect();
    let mut notes = Vec::new();
    for (r, d, v) in done {
        match v {
            Ok(x) => rows[r].1[d] = Some(x),
            Err(e) => notes.push(e),
        }
    }
    Ok(TableV {
        devices: devices.to_vec(),
        rows,
        notes,
    })
}

impl TableV {
    /// Speedup of device `d` over the first device on row `r` (run times
    /// inverted, so above 1 is faster).
    pub fn speedup(&self, r: usize, d: usize) -> Option<f64> {
        let (b, vals) = &self.rows[r];
        let (first, this) = (vals[0]?, vals[d]?);
        let s = if b.lower_better() {
            first / this
        } else {
            this / first
        };
        s.is_finite().then_some(s)
    }

    /// Harmonic mean of device `d`'s speedups over the rows that have one.
    pub fn harmonic_mean(&self, d: usize) -> Option<f64> {
        let s: Vec<f64> = (0..self.rows.len())
            .filter_map(|r| self.speedup(r, d))
            .collect();
        (!s.is_empty()).then(|| s.len() as f64 / s.iter().map(|x| 1.0 / x).sum::<f64>())
    }

    /// The table as Markdown (raw performance and speedup per device, the
    /// Moneta column's published value last).
    pub fn markdown(&self) -> String {
        let mut s = String::from("| benchmark | unit |");
        for d in &self.devices {
            s.push_str(&format!(" {d} | speedup |"));
        }
        s.push_str(" published (Moneta) |\n|---|---|");
        for _ in &self.devices {
            s.push_str("---:|---:|");
        }
        s.push_str("---:|\n");
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| crate::report::with_unit(v, ""));
        for (r, (b, vals)) in self.rows.iter().enumerate() {
            s.push_str(&format!("| {} | {} |", b.label, b.unit));
            for (d, v) in vals.iter().enumerate() {
                let sp = self
                    .speedup(r, d)
                    .map_or("-".into(), |x| format!("{x:.2}x"));
                s.push_str(&format!(" {} | {} |", fmt(*v), sp));
            }
            s.push_str(&format!(" {} |\n", crate::report::with_unit(b.moneta, "")));
        }
        s.push_str("| harmonic mean | |");
        for d in 0..self.devices.len() {
            let h = self
                .harmonic_mean(d)
                .map_or("-".into(), |x| format!("{x:.2}x"));
            s.push_str(&format!(" | {h} |"));
        }
        s.push_str(" |\n");
        for n in &self.notes {
            s.push_str(&format!("\nnot run: {n}\n"));
        }
        s
    }

    /// The table as JSON.
    pub fn json(&self) -> Value {
        json!({
            "devices": self.devices,
            "rows": self.rows.iter().enumerate().map(|(r, (b, vals))| json!({
                "benchmark": b.label,
                "unit": b.unit,
                "values": vals,
                "speedups": (0..self.devices.len()).map(|d| self.speedup(r, d)).collect::<Vec<_>>(),
                "published_moneta": b.moneta,
            })).collect::<Vec<_>>(),
            "harmonic_means": (0..self.devices.len()).map(|d| self.harmonic_mean(d)).collect::<Vec<_>>(),
            "not_run": self.notes,
        })
    }

    /// The table as CSV: one line per benchmark and device.
    pub fn csv(&self) -> String {
        let mut s = String::from("benchmark,unit,device,value,speedup\n");
        for (r, (b, vals)) in self.rows.iter().enumerate() {
            for (d, v) in vals.iter().enumerate() {
                let o = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x}"));
                s.push_str(&format!(
                    "{},{},{},{},{}\n",
                    b.label,
                    b.unit,
                    self.devices[d],
                    o(*v),
                    o(self.speedup(r, d))
                ));
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(vals: &[&[f64]]) -> TableV {
        TableV {
            devices: vec!["a".into(), "b".into()],
            rows: vals
                .iter()
                .zip([BENCHES[0], BENCHES[8]])
                .map(|(v, b)| (b, v.iter().map(|x| Some(*x)).collect()))
                .collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn speedups_invert_run_times_and_the_mean_is_harmonic() {
        // Postmark (seconds): 10 s then 5 s is 2x; BTree (tx/s): 100 then 400 is 4x
        let t = table(&[&[10.0, 5.0], &[100.0, 400.0]]);
        assert_eq!(t.speedup(0, 0), Some(1.0));
        assert_eq!(t.speedup(0, 1), Some(2.0));
        assert_eq!(t.speedup(1, 1), Some(4.0));
        let h = t.harmonic_mean(1).unwrap();
        assert!((h - 2.0 / (0.5 + 0.25)).abs() < 1e-12, "{h}");
        assert!(t.markdown().contains("| Postmark | seconds |"));
        assert_eq!(t.csv().lines().count(), 1 + 4);
    }
}
