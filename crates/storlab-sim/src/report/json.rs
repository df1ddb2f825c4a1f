//! fio's JSON layout: a JSON tree printed exactly as fio's json.c prints
//! it, built from the jobs' statistics ([`json_string`], [`write_json`]).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use storlab_workload::fio::UnifiedRw;

use crate::stats::{DepthStats, DirStats, JobStats, LatStat, MIXED, REPORT_DIR_NAMES};

use super::common::{
    calc_dist, calc_lat, cpu_pct, group_runs, iops_f, job_buckets, p_of_agg, rate, runtime_ms,
    GroupRun, ReportOptions, BATCH_KEYS, DEPTH_KEYS, FIXED_TIME, LAT_KEYS, LAT_MS_KEYS,
};

// ---------------------------------------------------------------------------
// A JSON tree printed exactly as fio's json.c prints.

pub(crate) enum J<'a> {
    Obj(Vec<(Cow<'a, str>, J<'a>)>),
    Arr(Vec<J<'a>>),
    U(u64),
    /// A double, printed as C's `%f`.
    F(f64),
    S(Cow<'a, str>),
    /// A pass-through value (the `storlab` object).
    V(&'a serde_json::Value),
}

pub(crate) struct Obj<'a>(Vec<(Cow<'a, str>, J<'a>)>);

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

pub(crate) fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

pub(crate) fn push_str_escaped(out: &mut String, s: &str) {
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
pub(crate) fn push_f(out: &mut String, v: f64) {
    let v = if v.is_finite() { v } else { 0.0 };
    let _ = write!(out, "{v:.6}");
}

/// Print a value whose own nesting level is `level` (fio's
/// `json_value_level`): members at `level + 1`, closing bracket at `level`.
pub(crate) fn print_j(out: &mut String, v: &J<'_>, level: usize) {
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

pub(crate) enum Val<'a, 'b> {
    J(&'b J<'a>),
    V(&'b serde_json::Value),
}

pub(crate) fn print_val(out: &mut String, v: Val<'_, '_>, level: usize) {
    match v {
        Val::J(j) => print_j(out, j, level),
        Val::V(v) => print_value(out, v, level),
    }
}

pub(crate) fn print_pairs<'a, 'b>(
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

pub(crate) fn print_items<'a, 'b>(
    out: &mut String,
    items: impl Iterator<Item = Val<'a, 'b>>,
    level: usize,
) where
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

pub(crate) fn print_value(out: &mut String, v: &serde_json::Value, level: usize) {
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

pub(crate) fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

pub(crate) fn lat_json<'a>(s: &LatStat, percentiles: Option<&[f64]>) -> J<'a> {
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

pub(crate) fn dir_json<'a>(
    job: &JobStats,
    d: usize,
    runs: &BTreeMap<u32, GroupRun>,
    plist: &[f64],
) -> J<'a> {
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

pub(crate) fn dist_json<'a>(keys: &'a [&'a str; 7], map: &[u64; 7], total: u64) -> J<'a> {
    let mut o = Obj::new();
    for (k, v) in keys.iter().zip(calc_dist(map, total)) {
        o.f(*k, v);
    }
    o.done()
}

pub(crate) fn buckets_json<'a, const N: usize>(
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

pub(crate) fn options_json<'a>(opts: &'a [(String, String)]) -> J<'a> {
    J::Obj(
        opts.iter()
            .map(|(k, v)| (Cow::Borrowed(k.as_str()), J::S(Cow::Borrowed(v.as_str()))))
            .collect(),
    )
}

pub(crate) fn job_json<'a>(
    job: &'a JobStats,
    runs: &BTreeMap<u32, GroupRun>,
    plist: &[f64],
) -> J<'a> {
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
