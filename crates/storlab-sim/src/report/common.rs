//! What the JSON and terminal writers share: the report options, fio's
//! percentile list and fixed time, the run status groups and fio's rates,
//! distributions and bucket keys.

use std::collections::BTreeMap;

use crate::stats::JobStats;

/// fio's default percentile list.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// The `"time"` string: `ctime` of timestamp 0, fixed for determinism.
pub const FIXED_TIME: &str = "Thu Jan  1 00:00:00 1970";

/// Options of the report writers, named after the fio options they mirror.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Value of `"fio version"`.
    pub version: String,
    /// The job file's `[global]` options in file order (`"global options"`,
    /// left out when empty, as fio does).
    pub global_options: Vec<(String, String)>,
    /// `percentile_list`.
    pub percentiles: Vec<f64>,
    /// `percentile_precision` (decimals in terminal percentile labels).
    pub percentile_precision: usize,
    /// `significant_figures` of terminal numbers (fio's default 4).
    pub sig_figs: usize,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            version: format!("storlab-{}", env!("CARGO_PKG_VERSION")),
            global_options: Vec::new(),
            percentiles: FIO_PERCENTILES.to_vec(),
            percentile_precision: 2,
            sig_figs: 4,
        }
    }
}

impl ReportOptions {
    pub(crate) fn sorted_percentiles(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self
            .percentiles
            .iter()
            .copied()
            .filter(|p| p.is_finite() && *p > 0.0 && *p <= 100.0)
            .collect();
        p.sort_by(f64::total_cmp);
        p
    }
}

// ---------------------------------------------------------------------------
// Derived figures shared by both writers.

pub(crate) const NS_PER_MS: u64 = 1_000_000;
pub(crate) const NS_PER_S: u128 = 1_000_000_000;

/// Runtime in whole ms: rounded, at least 1 when any time passed.
pub(crate) fn runtime_ms(ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        ((ns + NS_PER_MS / 2) / NS_PER_MS).max(1)
    }
}

/// Bytes per second over `ns`.
pub(crate) fn rate(amount: u64, ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        (u128::from(amount) * NS_PER_S / u128::from(ns)) as u64
    }
}

pub(crate) fn iops_f(ios: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        ios as f64 * 1e9 / ns as f64
    }
}

/// One run status group (fio's `group_run_stats`), per direction of
/// [`REPORT_DIR_NAMES`].
#[derive(Default)]
pub(crate) struct GroupRun {
    pub(crate) min_run_ns: [u64; 4],
    pub(crate) max_run_ns: [u64; 4],
    pub(crate) min_bw: [u64; 4],
    pub(crate) max_bw: [u64; 4],
    pub(crate) iobytes: [u64; 4],
}

impl GroupRun {
    /// Aggregate bandwidth, bytes/s.
    pub(crate) fn agg(&self, d: usize) -> u64 {
        rate(self.iobytes[d], self.max_run_ns[d])
    }
}

pub(crate) fn group_runs(jobs: &[JobStats]) -> BTreeMap<u32, GroupRun> {
    let mut out: BTreeMap<u32, GroupRun> = BTreeMap::new();
    for j in jobs {
        let g = out.entry(j.group_id).or_insert_with(|| GroupRun {
            min_bw: [u64::MAX; 4],
            ..GroupRun::default()
        });
        for &d in j.report_dirs() {
            let (ds, run) = j.report_dir(d);
            if run == 0 {
                continue;
            }
            if g.min_run_ns[d] == 0 || run < g.min_run_ns[d] {
                g.min_run_ns[d] = run;
            }
            g.max_run_ns[d] = g.max_run_ns[d].max(run);
            let bw = rate(ds.io_bytes(), run);
            g.min_bw[d] = g.min_bw[d].min(bw);
            g.max_bw[d] = g.max_bw[d].max(bw);
            g.iobytes[d] += ds.io_bytes();
        }
    }
    out
}

/// fio's `bw_agg`/`per=`: this job's mean sampled bandwidth as a percentage
/// of the group's aggregate, at most 100.
pub(crate) fn p_of_agg(mean_kib: f64, agg_bytes: u64) -> f64 {
    let agg_kib = agg_bytes / 1024;
    if agg_kib == 0 {
        return 100.0;
    }
    (mean_kib * 100.0 / agg_kib as f64).min(100.0)
}

/// fio's `stat_calc_dist`: percentages with a 0.1 floor for non-empty
/// buckets.
pub(crate) fn calc_dist(map: &[u64; 7], total: u64) -> [f64; 7] {
    let mut out = [0.0; 7];
    if total == 0 {
        return out;
    }
    for (o, &m) in out.iter_mut().zip(map) {
        *o = m as f64 / total as f64 * 100.0;
        if *o < 0.1 && m > 0 {
            *o = 0.1;
        }
    }
    out
}

/// fio's `stat_calc_lat`: percentages of all read/write/trim IOs, with a
/// 0.01 floor for non-empty buckets.
pub(crate) fn calc_lat<const N: usize>(counts: &[u64; N], total: u64) -> [f64; N] {
    let mut out = [0.0; N];
    if total == 0 {
        return out;
    }
    for (o, &c) in out.iter_mut().zip(counts) {
        *o = c as f64 / total as f64 * 100.0;
        if *o < 0.01 && c > 0 {
            *o = 0.01;
        }
    }
    out
}

/// Latency buckets of a job: read, write and trim together.
pub(crate) fn job_buckets(job: &JobStats) -> crate::stats::LatBuckets {
    let mut b = crate::stats::LatBuckets::default();
    for d in &job.dirs {
        b.merge(d.buckets());
    }
    b
}

pub(crate) fn cpu_pct(t: u64, run: u64) -> f64 {
    if run == 0 {
        0.0
    } else {
        t as f64 * 100.0 / run as f64
    }
}

pub(crate) const LAT_KEYS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
pub(crate) const LAT_MS_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];
pub(crate) const DEPTH_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
pub(crate) const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];
