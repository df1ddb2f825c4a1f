//! Key-value applications of the NVMM study (Zhang and Swanson, MSST
//! 2015; issue 41): MongoDB under YCSB A-F in FSYNC_SAFE and JOURNALED
//! modes (`ycsb-a` .. `ycsb-f`), each on the study's configurations: hard disk and SSD
//! with ext4, DRAM with tmpfs, and the NVMM presets with PMFS.
//!
//! YCSB runs the study's setup (1,000 operations on 1,000 records of
//! 1 KB, one client thread). The NVMM study publishes no memcached
//! figure (docs/spec/nvmm.md), so memcached is not a row here.

use storlab_apps::job_args;

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, RunId, Spec};
use crate::places::NVMM_YCSB;
use crate::report::{at_all, Class, Prepared, Reproduction, Row};

/// The YCSB workloads, in the study's order.
pub const WORKLOADS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
/// Workloads with writes (all but C).
pub const WITH_WRITES: [&str; 5] = ["a", "b", "d", "e", "f"];
/// The write-intensive workloads: half their operations write (A
/// updates, F read-modify-writes).
pub const WRITE_INTENSIVE: [&str; 2] = ["a", "f"];

/// The configurations: label, preset, file system. DRAM is tmpfs on the
/// PMEP's host: the `pdram` preset's host (16 cores, its system-call
/// costs), whose device tmpfs never reaches (the files live in the page
/// cache, in DRAM), as the study ran its DRAM baseline on the same
/// machine.
pub const CONFIGS: [(&str, &str, &str); 6] = [
    ("HDD (ext4)", "hdd-7200", "ext4"),
    ("SSD (ext4)", "sata-ssd", "ext4"),
    ("DRAM (tmpfs)", "pdram", "tmpfs"),
    ("NVMM-Raw", "nvmm-raw", "pmfs"),
    ("NVMM-WOF", "nvmm-wof", "pmfs"),
    ("NVMM-Opt", "nvmm-opt", "pmfs"),
];

/// The write concerns: label, `mode=` value.
pub const MODES: [(&str, &str); 2] = [("FSYNC_SAFE", "fsync-safe"), ("JOURNALED", "journaled")];

/// A "far above" in the study's words, taken as at least this factor.
pub const FAR_ABOVE: f64 = 2.0;

/// An application run: `app` with `pairs` on `device` with `fs`.
pub fn app_spec(device: &str, fs: &str, app: &str, pairs: &[String]) -> Spec {
    Spec {
        device: device.to_string(),
        overrides: vec![format!("host.file_system=\"{fs}\"")],
        fio: job_args(app, pairs),
        seed: 1,
        only: None,
    }
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    // ycsb[mode][config][workload]
    let ycsb: Vec<Vec<Vec<RunId>>> = MODES
        .iter()
        .map(|(_, mode)| {
            CONFIGS
                .iter()
                .map(|(_, dev, fs)| {
                    WORKLOADS
                        .iter()
                        .map(|w| {
                            p.add(app_spec(
                                dev,
                                fs,
                                &format!("ycsb-{w}"),
                                &[format!("mode={mode}")],
                            ))
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let finish = move |r: &crate::measure::Results| {
        let m = |mode: usize, cfg: &str, w: &str| -> f64 {
            let c = CONFIGS.iter().position(|x| x.1 == cfg).expect("a config");
            let k = WORKLOADS.iter().position(|x| *x == w).expect("a workload");
            r[ycsb[mode][c][k]].app_metric()
        };
        let mut rows = Vec::new();
        for w in WITH_WRITES {
            let (opt, raw) = (m(0, "nvmm-opt", w), m(0, "nvmm-raw", w));
            rows.push(Row::holds(
                format!(
                    "YCSB-{} FSYNC_SAFE: NVMM-Opt against NVMM-Raw",
                    w.to_uppercase()
                ),
                &format!("far above (taken as >= {FAR_ABOVE}x)"),
                format!("{:.0}x ({opt:.0} vs {raw:.0} ops/s)", opt / raw),
                opt >= FAR_ABOVE * raw,
            ));
        }
        for w in WRITE_INTENSIVE {
            let (raw, ssd, hdd) = (
                m(0, "nvmm-raw", w),
                m(0, "sata-ssd", w),
                m(0, "hdd-7200", w),
            );
            rows.push(Row::holds(
                format!(
                    "YCSB-{} FSYNC_SAFE: NVMM-Raw against SSD and HDD",
                    w.to_uppercase()
                ),
                "below both",
                format!("{raw:.0} vs SSD {ssd:.0}, HDD {hdd:.0} ops/s"),
                raw < ssd && raw < hdd,
            ));
        }
        for w in WORKLOADS {
            let dram_cfg = CONFIGS[2].1;
            let (opt, dram) = (m(1, "nvmm-opt", w), m(1, dram_cfg, w));
            // the study's finding that journaled MongoDB runs as fast on
            // NVMM-Opt as on DRAM (0.99-1.16x): the model's journal commits
            // on a timer, off the client's path, so the ratio is 1 on any
            // device (`lab reproduce --sensitivity` lists these rows). A
            // finding, pass/fail, not in the medians: a row that cannot
            // move with the device is no evidence of agreement.
            let x = opt / dram;
            rows.push(Row::holds(
                format!("YCSB-{} JOURNALED: NVMM-Opt / DRAM", w.to_uppercase()),
                "about equal (0.99-1.16x)",
                format!("{x:.3}x"),
                (0.99..=1.16).contains(&x),
            ));
        }
        let panels = MODES
            .iter()
            .enumerate()
            .map(|(mi, (label, _))| Panel {
                title: (*label).into(),
                series: CONFIGS
                    .iter()
                    .map(|(name, dev, _)| Series {
                        label: (*name).into(),
                        kind: SeriesKind::Model,
                        points: WORKLOADS
                            .iter()
                            .enumerate()
                            .map(|(i, w)| ((i + 1) as f64, m(mi, dev, w)))
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        Reproduction {
            study: "apps-kv".into(),
            title: "Zhang and Swanson, A Study of Application Performance with Non-Volatile Main Memory, MSST 2015: MongoDB under YCSB".into(),
            setting: "ycsb-a..f (MongoDB 2.x mmapv1, 1,000 operations on 1,000 records of 1 KB, one client) on hdd-7200/sata-ssd (ext4), DRAM (tmpfs on the PMEP host: pdram's) and the NVMM presets (PMFS)".into(),
            class: Class::App,
            state_rule: "YCSB loads its 1,000 records before the measured operations (not timed); disks and flash start written once".into(),
            notes: vec![],
            rows: at_all(rows, NVMM_YCSB),
            figures: vec![Figure {
                id: "apps-kv-ycsb".into(),
                title: "MongoDB under YCSB: throughput per workload (1 = A .. 6 = F) and configuration".into(),
                x_label: "YCSB workload (1 = A, 2 = B, 3 = C, 4 = D, 5 = E, 6 = F)".into(),
                y_label: "operations/s".into(),
                x_log: false,
                x_bytes: false,
                y_log: true,
                panels,
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
