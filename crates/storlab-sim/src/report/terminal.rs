//! fio's normal terminal output ([`terminal_string`], [`write_terminal`]):
//! each job's lines as fio 3.33's `show_thread_status` prints them, the
//! run status groups, then the storlab section (`section`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use storlab_workload::fio::UnifiedRw;

use crate::stats::{DirStats, JobStats, LatStat, ETIMEDOUT, REPORT_DIR_NAMES};

use super::common::{
    calc_dist, calc_lat, cpu_pct, group_runs, job_buckets, p_of_agg, rate, runtime_ms, GroupRun,
    ReportOptions, BATCH_KEYS, DEPTH_KEYS, LAT_KEYS, LAT_MS_KEYS,
};
use super::section::{show_app, show_breakdown, show_power_wear, show_software};

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

pub(crate) fn display_lat(out: &mut String, name: &str, s: &LatStat) {
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

pub(crate) fn show_percentiles(
    out: &mut String,
    pre: &str,
    s: &LatStat,
    plist: &[f64],
    precision: usize,
) {
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

pub(crate) fn show_lat_line<const N: usize>(
    out: &mut String,
    vals: &[f64; N],
    keys: &[&str; N],
    unit: &str,
) {
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

pub(crate) fn show_dir(
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

pub(crate) fn show_job(
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

pub(crate) fn show_groups(out: &mut String, runs: &BTreeMap<u32, GroupRun>, sf: usize) {
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

/// Write `jobs` as fio's normal terminal output plus the storlab section
/// (see the module doc).
pub fn write_terminal(
    jobs: &[JobStats],
    mut w: impl Write,
    opts: &ReportOptions,
) -> io::Result<()> {
    w.write_all(terminal_string(jobs, opts).as_bytes())
}
