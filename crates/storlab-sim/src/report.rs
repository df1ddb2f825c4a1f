//! Report writers: fio's JSON layout and a terminal summary like fio's.
//!
//! # JSON
//!
//! [`write_json`] writes what `fio --output-format=json` (fio 3.33) writes,
//! key for key and in the same order, with fio's own text layout (two-space
//! indentation, `"key" : value`, doubles printed like C's `%f` with six
//! decimals), so that tools written for fio read it unchanged. Differences,
//! all deliberate:
//!
//! * `"fio version"` is `storlab-<version>`.
//! * `"timestamp"`, `"timestamp_ms"` are 0 and `"time"` is the C `ctime` of
//!   0 (`Thu Jan  1 00:00:00 1970`): the simulator's output is byte-for-byte
//!   deterministic, so it cannot contain the wall-clock time.
//! * `"eta"` is 0 and `"elapsed"` is the simulated run time in whole seconds
//!   (rounded up); `"error"` is 0 but for a job past its `max_latency`
//!   (110, ETIMEDOUT, as fio).
//! * `bw_bytes`, `bw` and `iops` divide by the runtime in nanoseconds, not
//!   by fio's whole milliseconds (so short simulated runs stay accurate);
//!   `"runtime"` is still milliseconds, rounded, and at least 1 when any
//!   time passed. The run status group figures do the same.
//! * Percentiles come from HDR histograms with 3 significant digits (error
//!   at most 0.1 %, clamped to the exact min and max) instead of fio's
//!   log-linear buckets (error up to about 1.6 %); min, max, mean and
//!   stddev are exact.
//! * Sync entries report their completion latency as `lat_ns`, as fio does.
//! * With `unified_rw_reporting=both`, the job's `mixed` entry holds the
//!   sums of read, write and trim (fio 3.33 prints zeros there, though its
//!   group line has the sums); with `mixed` it stands alone, as in fio.
//! * Strings escape control characters too (fio escapes only `"` and `\`).
//! * Each job ends with a `"storlab"` object (see below), and the top level
//!   always ends with `"disk_util"` (empty: there is no real disk).
//!
//! # The `storlab` object
//!
//! [`JobStats::storlab`] is written as the job's `"storlab"` object as it
//! is (`null` becomes `{}`); numbers in it are printed by `serde_json`
//! (shortest exact form). The agreed shape, every member optional:
//!
//! ```json
//! "storlab" : {
//!   "device" : { ... the resolved configuration, free form ... },
//!   "breakdown_ns" : { "read" : { "syscall" : 512.5, "media" : 9000.0, ... },
//!                      "write" : { ... }, "trim" : { ... }, "sync" : { ... } },
//!   "utilisation" : [ { "resource" : "link.read", "busy" : 0.42 } ],
//!   "host_software" : { "cpu_ns_per_io" : { "read" : 17470.0, "write" : null },
//!                       "instructions_per_io" : { "read" : 20780.5, "write" : null },
//!                       "ghz" : 2.26, "cpi" : 1.9 },
//!   "power" : [ { "component" : "controller", "avg_w" : 1.25, "energy_j" : 0.5 } ],
//!   "wear" : { "unit" : "line writes", "units" : 1024, "max" : 17, "mean" : 3.5 },
//!   "counters" : { "gc_runs" : 3 }
//! }
//! ```
//!
//! `breakdown_ns` is the mean ns per request by component, per direction
//! that saw requests; fill it with [`JobStats::breakdown_ns`].
//! `utilisation`, `power` and `wear` are storlab-model's `DeviceReport`
//! fields serialised as they are. `host_software` is the host stack's
//! mean core time and instructions per finished request of each direction
//! over the whole run (`null` for a direction with none, or instructions
//! when the preset gives no `host.ghz` and `host.cpi`).
//!
//! # Terminal
//!
//! [`write_terminal`] prints fio's normal output for each job (same lines,
//! units, auto-scaling and rounding as fio 3.33's `show_thread_status`,
//! except the header ends at `pid=0` with no date), the run status group
//! summaries, then a storlab section per job: the mean latency breakdown
//! table (µs and % of the total per direction, from the job's own
//! statistics) and the power and wear lines found in the `storlab` value.
//!
//! # Grouping
//!
//! With `group_reporting`, pass [`crate::stats::group`]`(jobs)` to the
//! writers. The run status groups are always formed by `group_id`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use storlab_model::breakdown::{COMPONENTS, NCOMP};

use crate::stats::{
    DepthStats, DirStats, JobStats, LatStat, DIR_NAMES, ETIMEDOUT, MIXED, REPORT_DIR_NAMES,
};
use storlab_workload::fio::UnifiedRw;

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
    fn sorted_percentiles(&self) -> Vec<f64> {
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

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_S: u128 = 1_000_000_000;

/// Runtime in whole ms: rounded, at least 1 when any time passed.
fn runtime_ms(ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        ((ns + NS_PER_MS / 2) / NS_PER_MS).max(1)
    }
}

/// Bytes per second over `ns`.
fn rate(amount: u64, ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        (u128::from(amount) * NS_PER_S / u128::from(ns)) as u64
    }
}

fn iops_f(ios: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        ios as f64 * 1e9 / ns as f64
    }
}

/// One run status group (fio's `group_run_stats`), per direction of
/// [`REPORT_DIR_NAMES`].
#[derive(Default)]
struct GroupRun {
    min_run_ns: [u64; 4],
    max_run_ns: [u64; 4],
    min_bw: [u64; 4],
    max_bw: [u64; 4],
    iobytes: [u64; 4],
}

impl GroupRun {
    /// Aggregate bandwidth, bytes/s.
    fn agg(&self, d: usize) -> u64 {
        rate(self.iobytes[d], self.max_run_ns[d])
    }
}

fn group_runs(jobs: &[JobStats]) -> BTreeMap<u32, GroupRun> {
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
fn p_of_agg(mean_kib: f64, agg_bytes: u64) -> f64 {
    let agg_kib = agg_bytes / 1024;
    if agg_kib == 0 {
        return 100.0;
    }
    (mean_kib * 100.0 / agg_kib as f64).min(100.0)
}

/// fio's `stat_calc_dist`: percentages with a 0.1 floor for non-empty
/// buckets.
fn calc_dist(map: &[u64; 7], total: u64) -> [f64; 7] {
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
fn calc_lat<const N: usize>(counts: &[u64; N], total: u64) -> [f64; N] {
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
fn job_buckets(job: &JobStats) -> crate::stats::LatBuckets {
    let mut b = crate::stats::LatBuckets::default();
    for d in &job.dirs {
        b.merge(d.buckets());
    }
    b
}

fn cpu_pct(t: u64, run: u64) -> f64 {
    if run == 0 {
        0.0
    } else {
        t as f64 * 100.0 / run as f64
    }
}

const LAT_KEYS: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
const LAT_MS_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];
const DEPTH_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

// ---------------------------------------------------------------------------
// A JSON tree printed exactly as fio's json.c prints.

enum J<'a> {
    Obj(Vec<(Cow<'a, str>, J<'a>)>),
    Arr(Vec<J<'a>>),
    U(u64),
    /// A double, printed as C's `%f`.
    F(f64),
    S(Cow<'a, str>),
    /// A pass-through value (the `storlab` object).
    V(&'a serde_json::Value),
}

struct Obj<'a>(Vec<(Cow<'a, str>, J<'a>)>);

impl<'a> Obj<'a> {
    fn new() -> Self {
        Obj(Vec::new())
    }
    fn add(&mut self, k: impl Into<Cow<'a, str>>, v: J<'a>) -> &mut Self {
        self.0.push((k.into(), v));
        self
    }
    fn u(&mut self, k: impl Into<Cow<'a, str>>, v: u64) -> &mut Self {
        self.add(k, J::U(v))
    }
    fn f(&mut self, k: impl Into<Cow<'a, str>>, v: f64) -> &mut Self {
        self.add(k, J::F(v))
    }
    fn done(self) -> J<'a> {
        J::Obj(self.0)
    }
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn push_str_escaped(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `%f` of a double; non-finite values (never produced) print as 0.
fn push_f(out: &mut String, v: f64) {
    let v = if v.is_finite() { v } else { 0.0 };
    let _ = write!(out, "{v:.6}");
}

/// Print a value whose own nesting level is `level` (fio's
/// `json_value_level`): members at `level + 1`, closing bracket at `level`.
fn print_j(out: &mut String, v: &J<'_>, level: usize) {
    match v {
        J::Obj(pairs) => print_pairs(
            out,
            pairs.iter().map(|(k, v)| (k.as_ref(), Val::J(v))),
            level,
        ),
        J::Arr(items) => print_items(out, items.iter().map(Val::J), level),
        J::U(n) => {
            let _ = write!(out, "{n}");
        }
        J::F(f) => push_f(out, *f),
        J::S(s) => push_str_escaped(out, s),
        J::V(v) => print_value(out, v, level),
    }
}

enum Val<'a, 'b> {
    J(&'b J<'a>),
    V(&'b serde_json::Value),
}

fn print_val(out: &mut String, v: Val<'_, '_>, level: usize) {
    match v {
        Val::J(j) => print_j(out, j, level),
        Val::V(v) => print_value(out, v, level),
    }
}

fn print_pairs<'a, 'b>(
    out: &mut String,
    pairs: impl Iterator<Item = (&'b str, Val<'a, 'b>)>,
    level: usize,
) where
    'a: 'b,
{
    out.push_str("{\n");
    for (i, (k, v)) in pairs.enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        indent(out, level + 1);
        push_str_escaped(out, k);
        out.push_str(" : ");
        print_val(out, v, level + 1);
    }
    out.push('\n');
    indent(out, level);
    out.push('}');
}

fn print_items<'a, 'b>(out: &mut String, items: impl Iterator<Item = Val<'a, 'b>>, level: usize)
where
    'a: 'b,
{
    out.push_str("[\n");
    for (i, v) in items.enumerate() {
        if i > 0 {
            out.push_str(",\n");
        }
        indent(out, level + 1);
        print_val(out, v, level + 1);
    }
    out.push('\n');
    indent(out, level);
    out.push(']');
}

fn print_value(out: &mut String, v: &serde_json::Value, level: usize) {
    use serde_json::Value;
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => push_str_escaped(out, s),
        Value::Array(a) => print_items(out, a.iter().map(Val::V), level),
        Value::Object(o) => print_pairs(out, o.iter().map(|(k, v)| (k.as_str(), Val::V(v))), level),
    }
}

// ---------------------------------------------------------------------------
// JSON content.

fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

fn lat_json<'a>(s: &LatStat, percentiles: Option<&[f64]>) -> J<'a> {
    let mut o = Obj::new();
    o.u("min", s.min())
        .u("max", s.max())
        .f("mean", s.mean())
        .f("stddev", s.stddev())
        .u("N", s.count());
    if let Some(list) = percentiles {
        if s.count() > 0 {
            let mut p = Obj::new();
            for (&q, v) in list.iter().zip(s.percentiles(list)) {
                p.u(pct_key(q), v);
            }
            o.add("percentile", p.done());
        }
    }
    o.done()
}

fn dir_json<'a>(job: &JobStats, d: usize, runs: &BTreeMap<u32, GroupRun>, plist: &[f64]) -> J<'a> {
    let (ds, run) = job.report_dir(d);
    let ds: &DirStats = &ds;
    let bw_bytes = rate(ds.io_bytes(), run);
    let sel = |on: bool| if on { Some(plist) } else { None };
    let mut o = Obj::new();
    o.u("io_bytes", ds.io_bytes())
        .u("io_kbytes", ds.io_bytes() >> 10)
        .u("bw_bytes", bw_bytes)
        .u("bw", bw_bytes / 1024)
        .f("iops", iops_f(ds.ios(), run))
        .u("runtime", runtime_ms(run))
        .u("total_ios", ds.ios())
        .u("short_ios", ds.short_ios)
        .u("drop_ios", ds.drop_ios)
        .add(
            "slat_ns",
            lat_json(ds.slat(), sel(ds.slat().has_percentiles())),
        )
        .add(
            "clat_ns",
            lat_json(ds.clat(), sel(ds.clat().has_percentiles())),
        )
        .add(
            "lat_ns",
            lat_json(ds.lat(), sel(ds.lat().has_percentiles())),
        );
    let bw = ds.bw_samples();
    let agg = runs.get(&job.group_id).map_or(0, |g| g.agg(d));
    let per = if bw.count() > 0 {
        p_of_agg(bw.mean(), agg)
    } else {
        0.0
    };
    o.u("bw_min", bw.min())
        .u("bw_max", bw.max())
        .f("bw_agg", per)
        .f("bw_mean", bw.mean())
        .f("bw_dev", bw.stddev())
        .u("bw_samples", bw.count());
    let io = ds.iops_samples();
    o.u("iops_min", io.min())
        .u("iops_max", io.max())
        .f("iops_mean", io.mean())
        .f("iops_stddev", io.stddev())
        .u("iops_samples", io.count());
    o.done()
}

fn dist_json<'a>(keys: &'a [&'a str; 7], map: &[u64; 7], total: u64) -> J<'a> {
    let mut o = Obj::new();
    for (k, v) in keys.iter().zip(calc_dist(map, total)) {
        o.f(*k, v);
    }
    o.done()
}

fn buckets_json<'a, const N: usize>(
    keys: &'a [&'a str; N],
    counts: &[u64; N],
    total: u64,
) -> J<'a> {
    let mut o = Obj::new();
    for (k, v) in keys.iter().zip(calc_lat(counts, total)) {
        o.f(*k, v);
    }
    o.done()
}

fn options_json<'a>(opts: &'a [(String, String)]) -> J<'a> {
    J::Obj(
        opts.iter()
            .map(|(k, v)| (Cow::Borrowed(k.as_str()), J::S(Cow::Borrowed(v.as_str()))))
            .collect(),
    )
}

fn job_json<'a>(job: &'a JobStats, runs: &BTreeMap<u32, GroupRun>, plist: &[f64]) -> J<'a> {
    let mut o = Obj::new();
    let max_run = job.runtime_ns.iter().copied().max().unwrap_or(0);
    o.add("jobname", J::S(Cow::Borrowed(&job.name)))
        .u("groupid", u64::from(job.group_id))
        .u("error", job.error.unsigned_abs().into())
        .u("eta", 0)
        .u("elapsed", max_run.div_ceil(1_000_000_000));
    if !job.options.is_empty() {
        o.add("job options", options_json(&job.options));
    }
    // fio's order: read, write, trim, sync, then mixed (no sync when
    // mixed stands alone)
    for &d in job.report_dirs().iter().filter(|&&d| d < MIXED) {
        o.add(REPORT_DIR_NAMES[d], dir_json(job, d, runs, plist));
    }
    if job.unified != UnifiedRw::Mixed {
        let mut sync = Obj::new();
        let sync_p = job.sync.clat().has_percentiles().then_some(plist);
        sync.u("total_ios", job.sync.ios())
            .add("lat_ns", lat_json(job.sync.clat(), sync_p));
        o.add("sync", sync.done());
    }
    if job.report_dirs().contains(&MIXED) {
        o.add("mixed", dir_json(job, MIXED, runs, plist));
    }
    o.u("job_runtime", runtime_ms(job.job_runtime_ns))
        .f("usr_cpu", cpu_pct(job.usr_ns, job.job_runtime_ns))
        .f("sys_cpu", cpu_pct(job.sys_ns, job.job_runtime_ns))
        .u("ctx", job.ctx)
        .u("majf", job.majf)
        .u("minf", job.minf);
    let dp: &DepthStats = &job.depth;
    let rw = job.rw_ios();
    o.add("iodepth_level", dist_json(&DEPTH_KEYS, &dp.level, rw))
        .add(
            "iodepth_submit",
            dist_json(&BATCH_KEYS, &dp.submit, dp.total_submit),
        )
        .add(
            "iodepth_complete",
            dist_json(&BATCH_KEYS, &dp.complete, dp.total_complete),
        );
    let b = job_buckets(job);
    o.add("latency_ns", buckets_json(&LAT_KEYS, &b.ns, rw))
        .add("latency_us", buckets_json(&LAT_KEYS, &b.us, rw))
        .add("latency_ms", buckets_json(&LAT_MS_KEYS, &b.ms, rw))
        .u("latency_depth", u64::from(job.iodepth))
        .u("latency_target", 0)
        .f("latency_percentile", 100.0)
        .u("latency_window", 0);
    let storlab = if job.storlab.is_null() {
        J::Obj(Vec::new())
    } else {
        J::V(&job.storlab)
    };
    if let Some(app) = &job.app {
        o.add("app", J::V(app));
    }
    o.add("storlab", storlab);
    o.done()
}

/// Render `jobs` in fio's JSON layout into a string (see the module doc).
pub fn json_string(jobs: &[JobStats], opts: &ReportOptions) -> String {
    let runs = group_runs(jobs);
    let plist = opts.sorted_percentiles();
    let mut top = Obj::new();
    top.add("fio version", J::S(Cow::Borrowed(&opts.version)))
        .u("timestamp", 0)
        .u("timestamp_ms", 0)
        .add("time", J::S(Cow::Borrowed(FIXED_TIME)));
    if !opts.global_options.is_empty() {
        top.add("global options", options_json(&opts.global_options));
    }
    top.add(
        "jobs",
        J::Arr(jobs.iter().map(|j| job_json(j, &runs, &plist)).collect()),
    )
    .add("disk_util", J::Arr(Vec::new()));
    let mut out = String::new();
    print_j(&mut out, &top.done(), 0);
    out.push('\n');
    out
}

/// Write `jobs` in fio's JSON layout (see the module doc).
pub fn write_json(jobs: &[JobStats], mut w: impl Write, opts: &ReportOptions) -> io::Result<()> {
    w.write_all(json_string(jobs, opts).as_bytes())
}

// ---------------------------------------------------------------------------
// Terminal.

/// fio's `num2str`: at most `maxlen` digits (counting the decimal point),
/// scaled by 1000 or 1024 with an SI or IEC prefix, then `unit`.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, unit: &str) -> String {
    const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
    const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
    let prefixes = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let digits = |n: u64| n.to_string().len();
    let mut num = num;
    let mut base = base;
    let mut post = 0usize;
    while base > 1 {
        base /= thousand;
        post += 1;
    }
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefixes.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    // Past the last prefix fio prints the number with no prefix.
    let post = if post >= prefixes.len() { 0 } else { post };
    let done = |num: u64| format!("{num}{}{unit}", prefixes[post]);
    let Some(m) = modulo else {
        return done(num);
    };
    let len = digits(num);
    if maxlen <= len + 1 {
        return done(if carry { num + 1 } else { num });
    }
    // The fraction printed with the digits left; when it rounds up to
    // "1.0…" the carry goes into the integer part, as in fio (61,996 ->
    // "62.0k", not "61.0k").
    let frac = format!("{:.*}", maxlen - len - 1, m as f64 / thousand as f64);
    let num = if frac.starts_with('1') { num + 1 } else { num };
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

fn display_lat(out: &mut String, name: &str, s: &LatStat) {
    let (mut min, mut max, mut mean, mut dev) = (s.min(), s.max(), s.mean(), s.stddev());
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        "msec"
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        "usec"
    } else {
        "nsec"
    };
    let _ = writeln!(
        out,
        "    {name} ({base}): min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, 1, false, ""),
        num2str(max, 6, 1, false, "")
    );
}

fn show_percentiles(out: &mut String, pre: &str, s: &LatStat, plist: &[f64], precision: usize) {
    if plist.is_empty() || s.count() == 0 {
        return;
    }
    let mut vals = s.percentiles(plist);
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let width = ((maxv / divisor) as f64).log10() + 1.0;
    let time_width = if width.is_finite() {
        (width as usize).max(5)
    } else {
        5
    };
    let per_line = ((80 - 7) / (precision + 10 + time_width)).max(1);
    let n = vals.len();
    for (j, (p, v)) in plist.iter().zip(vals.iter_mut()).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        for _ in 0..scale_down {
            *v = v.div_ceil(1000);
        }
        let last = j == n - 1;
        let _ = write!(
            out,
            " {p:>pw$.prec$}th=[{v:>tw$}]{sep}",
            pw = precision + 3,
            prec = precision,
            tw = time_width,
            sep = if last { '\n' } else { ',' }
        );
        if !last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

fn show_lat_line<const N: usize>(out: &mut String, vals: &[f64; N], keys: &[&str; N], unit: &str) {
    let mut line = 0;
    let mut shown = false;
    for (k, v) in keys.iter().zip(vals) {
        if *v <= 0.0 {
            continue;
        }
        if line == 0 {
            if shown {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({unit})   : ");
        } else {
            out.push_str(", ");
        }
        shown = true;
        let _ = write!(out, "{k}={v:3.2}%");
        line += 1;
        if line == 5 {
            line = 0;
        }
    }
    if shown {
        out.push('\n');
    }
}

fn show_dir(
    out: &mut String,
    job: &JobStats,
    d: usize,
    runs: &BTreeMap<u32, GroupRun>,
    opts: &ReportOptions,
    plist: &[f64],
) {
    let (ds, run) = job.report_dir(d);
    let ds: &DirStats = &ds;
    if run == 0 || ds.io_bytes() == 0 {
        return;
    }
    let sf = opts.sig_figs;
    let bw = rate(ds.io_bytes(), run);
    let iops = rate(ds.ios(), run);
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){}",
        REPORT_DIR_NAMES[d],
        num2str(iops, sf, 1, false, ""),
        num2str(bw, sf, 1, true, "B/s"),
        num2str(bw, sf, 1, false, "B/s"),
        num2str(ds.io_bytes(), sf, 1, true, "B"),
        runtime_ms(run),
        if d == 1 { "; 0 zone resets" } else { "" }
    );
    for (name, s) in [("slat", ds.slat()), ("clat", ds.clat()), (" lat", ds.lat())] {
        if s.count() > 0 {
            display_lat(out, name, s);
        }
    }
    let prec = opts.percentile_precision;
    for (name, s) in [("slat", ds.slat()), ("clat", ds.clat()), ("lat", ds.lat())] {
        if s.has_percentiles() {
            show_percentiles(out, name, s, plist, prec);
        }
    }
    let bws = ds.bw_samples();
    if bws.count() > 0 {
        let agg = runs.get(&job.group_id).map_or(0, |g| g.agg(d));
        let per = p_of_agg(bws.mean(), agg);
        let (mut min, mut max, mut mean, mut dev) =
            (bws.min(), bws.max(), bws.mean(), bws.stddev());
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            min = (min as f64 / 1024.0) as u64;
            max = (max as f64 / 1024.0) as u64;
            mean /= 1024.0;
            dev /= 1024.0;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            bws.count()
        );
    }
    let io = ds.iops_samples();
    if io.count() > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            io.min(),
            io.max(),
            io.mean(),
            io.stddev(),
            io.count()
        );
    }
}

fn show_job(
    out: &mut String,
    job: &JobStats,
    runs: &BTreeMap<u32, GroupRun>,
    opts: &ReportOptions,
    plist: &[f64],
) {
    let rw = job.rw_ios();
    let bytes: u64 = job.dirs.iter().map(DirStats::io_bytes).sum();
    if rw == 0 && bytes == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={}: pid=0",
        job.name,
        job.group_id,
        job.members,
        if job.error == ETIMEDOUT {
            format!("{ETIMEDOUT} (func=max latency exceeded, error=Connection timed out)")
        } else {
            format!("{:2}", job.error)
        }
    );
    for &d in job.report_dirs() {
        show_dir(out, job, d, runs, opts, plist);
    }
    let b = job_buckets(job);
    show_lat_line(out, &calc_lat(&b.ns, rw), &LAT_KEYS, "nsec");
    show_lat_line(out, &calc_lat(&b.us, rw), &LAT_KEYS, "usec");
    show_lat_line(out, &calc_lat(&b.ms, rw), &LAT_MS_KEYS, "msec");
    if job.sync.ios() > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(out, "sync", job.sync.clat());
        show_percentiles(
            out,
            "sync",
            job.sync.clat(),
            plist,
            opts.percentile_precision,
        );
    }
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        cpu_pct(job.usr_ns, job.job_runtime_ns),
        cpu_pct(job.sys_ns, job.job_runtime_ns),
        job.ctx,
        job.majf,
        job.minf
    );
    let dist_line = |out: &mut String, head: &str, keys: &[&str; 7], v: [f64; 7]| {
        out.push_str(head);
        for (i, (k, x)) in keys.iter().zip(v).enumerate() {
            let _ = write!(out, "{}{k}={x:3.1}%", if i == 0 { "" } else { ", " });
        }
        out.push('\n');
    };
    let dp = &job.depth;
    dist_line(
        out,
        "  IO depths    : ",
        &DEPTH_KEYS,
        calc_dist(&dp.level, rw),
    );
    dist_line(
        out,
        "     submit    : ",
        &BATCH_KEYS,
        calc_dist(&dp.submit, dp.total_submit),
    );
    dist_line(
        out,
        "     complete  : ",
        &BATCH_KEYS,
        calc_dist(&dp.complete, dp.total_complete),
    );
    // with mixed reporting alone fio counts every IO in the first column
    let column = |count: fn(&DirStats) -> u64| -> [u64; 3] {
        let c = job.dirs.each_ref().map(count);
        if job.unified == UnifiedRw::Mixed {
            [c.iter().sum(), 0, 0]
        } else {
            c
        }
    };
    let (ios, short, dropped) = (
        column(DirStats::ios),
        column(|d| d.short_ios),
        column(|d| d.drop_ios),
    );
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        ios[0],
        ios[1],
        ios[2],
        job.sync.ios(),
        short[0],
        short[1],
        short[2],
        dropped[0],
        dropped[1],
        dropped[2]
    );
    let _ = writeln!(
        out,
        "     latency   : target=0, window=0, percentile=100.00%, depth={}",
        job.iodepth
    );
}

fn show_groups(out: &mut String, runs: &BTreeMap<u32, GroupRun>, sf: usize) {
    const LABELS: [&str; 4] = ["   READ", "  WRITE", "   TRIM", "  MIXED"];
    for (gid, g) in runs {
        let _ = write!(out, "\nRun status group {gid} (all jobs):\n");
        for (d, label) in LABELS.iter().enumerate() {
            if g.max_run_ns[d] == 0 {
                continue;
            }
            let agg = g.agg(d);
            let _ = writeln!(
                out,
                "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                label,
                num2str(agg, sf, 1, true, "B/s"),
                num2str(agg, sf, 1, false, "B/s"),
                num2str(g.min_bw[d], sf, 1, true, "B/s"),
                num2str(g.max_bw[d], sf, 1, true, "B/s"),
                num2str(g.min_bw[d], sf, 1, false, "B/s"),
                num2str(g.max_bw[d], sf, 1, false, "B/s"),
                num2str(g.iobytes[d], sf, 1, true, "B"),
                num2str(g.iobytes[d], sf, 1, false, "B"),
                runtime_ms(g.min_run_ns[d]),
                runtime_ms(g.max_run_ns[d])
            );
        }
    }
}

fn show_breakdown(out: &mut String, job: &JobStats) {
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
fn show_software(out: &mut String, v: &serde_json::Value) {
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

fn show_power_wear(out: &mut String, v: &serde_json::Value) {
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

/// Render `jobs` as fio's normal terminal output plus the storlab section
/// (see the module doc).
pub fn terminal_string(jobs: &[JobStats], opts: &ReportOptions) -> String {
    let runs = group_runs(jobs);
    let plist = opts.sorted_percentiles();
    let mut out = String::new();
    for j in jobs {
        show_job(&mut out, j, &runs, opts, &plist);
    }
    show_groups(&mut out, &runs, opts.sig_figs);
    if !jobs.is_empty() {
        out.push_str("\nstorlab (simulated):\n");
    }
    for j in jobs {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={})",
            j.name, j.group_id, j.members
        );
        if let Some(app) = &j.app {
            show_app(&mut out, app);
        }
        show_breakdown(&mut out, j);
        show_software(&mut out, &j.storlab);
        show_power_wear(&mut out, &j.storlab);
    }
    out
}

/// An application job's own result: its metric, each operation's latency
/// and the time by layer.
fn show_app(out: &mut String, app: &serde_json::Value) {
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

/// Write `jobs` as fio's normal terminal output plus the storlab section
/// (see the module doc).
pub fn write_terminal(
    jobs: &[JobStats],
    mut w: impl Write,
    opts: &ReportOptions,
) -> io::Result<()> {
    w.write_all(terminal_string(jobs, opts).as_bytes())
}
