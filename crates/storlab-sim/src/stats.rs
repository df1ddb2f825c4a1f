//! Run statistics: what the simulator records per request, and how the
//! records of several threads are merged.
//!
//! The shapes follow fio's `thread_stat` so that [`crate::report`] can write
//! fio's JSON and terminal layouts from them without guessing:
//!
//! * [`LatStat`]: one latency series (slat, clat or lat) in nanoseconds:
//!   exact count, min, max, sum and sum of squares (mean and standard
//!   deviation come from these, never from the histogram) plus an HDR
//!   histogram with 3 significant digits for percentiles.
//! * [`DirStats`]: one direction (read, write, trim, or the syncs): the three
//!   latency series, bytes, IO count, fio's latency-bucket counts, the summed
//!   latency [`Breakdown`], and fio-style bandwidth/IOPS samples.
//! * [`JobStats`]: one fio job thread (or, after [`JobStats::merge`], a
//!   group of them), with everything the report writers need.
//!
//! Recording is on the simulator's hot path (it aims at more than 2 M IO/s
//! per core): [`DirStats::record`] does integer arithmetic, three histogram
//! increments and one breakdown addition, and allocates nothing except when
//! a histogram first sees a value larger than any before (auto-resize, at
//! most a few dozen times per run).
//!
//! Merging follows fio's `sum_thread_stats`: latency series are combined
//! exactly, per-direction runtimes take the maximum, counters add up, and
//! bandwidth/IOPS samples are "pure sums" (the group's bandwidth is the sum
//! of its members', as fio reports with `group_reporting`).

use std::borrow::Cow;
use storlab_model::breakdown::{COMPONENTS, NCOMP};
use storlab_model::{Breakdown, Op};
use storlab_workload::fio::UnifiedRw;

use crate::latency::add_arr;
pub use crate::latency::{LatBuckets, LatStat, Moments, Samples, HIST_SIGFIG};

/// Statistics of one direction (read, write, trim) or of the syncs.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    slat: LatStat,
    clat: LatStat,
    lat: LatStat,
    io_bytes: u64,
    ios: u64,
    /// IOs that transferred less than asked (fio's `short_ios`).
    pub short_ios: u64,
    /// IOs dropped (fio's `drop_ios`).
    pub drop_ios: u64,
    buckets: LatBuckets,
    breakdown: Breakdown,
    bw: Samples,
    iops: Samples,
}

impl DirStats {
    /// Empty statistics, with percentiles for every series.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty statistics keeping percentiles of the submission, completion
    /// and total latencies as asked.
    pub fn with_percentiles(slat: bool, clat: bool, lat: bool) -> Self {
        DirStats {
            slat: LatStat::with_percentiles(slat),
            clat: LatStat::with_percentiles(clat),
            lat: LatStat::with_percentiles(lat),
            ..Self::default()
        }
    }

    /// Record one completed request: submission latency `slat_ns`,
    /// completion latency `clat_ns` (total latency is their sum), `bytes`
    /// transferred, and where its time went. (Always inlined: once per
    /// simulated IO, and a call of its own cost about 2 % of the
    /// simulator's instructions per IO.)
    #[inline(always)]
    pub fn record(&mut self, slat_ns: u64, clat_ns: u64, bytes: u64, breakdown: &Breakdown) {
        self.slat.record(slat_ns);
        self.clat.record(clat_ns);
        self.lat.record(slat_ns + clat_ns);
        self.buckets.mark(clat_ns);
        self.io_bytes += bytes;
        self.ios += 1;
        self.breakdown.merge(breakdown);
    }

    /// Add one bandwidth sample (KiB/s) and one IOPS sample, taken over an
    /// interval as fio does every `bw_avg_time`/`iops_avg_time` (see
    /// [`Sampler`]).
    pub fn add_rate_sample(&mut self, kib_per_s: u64, iops: u64) {
        self.bw.add(kib_per_s);
        self.iops.add(iops);
    }

    /// Add everything recorded in `other` (fio's `sum_thread_stats`).
    pub fn merge(&mut self, other: &DirStats) {
        self.slat.merge(&other.slat);
        self.clat.merge(&other.clat);
        self.lat.merge(&other.lat);
        self.io_bytes += other.io_bytes;
        self.ios += other.ios;
        self.short_ios += other.short_ios;
        self.drop_ios += other.drop_ios;
        self.buckets.merge(&other.buckets);
        self.breakdown.merge(&other.breakdown);
        self.bw.merge_sum(&other.bw);
        self.iops.merge_sum(&other.iops);
    }

    /// The `p`-th percentile of the completion latency (ns); see
    /// [`LatStat::percentile`].
    pub fn percentile(&self, p: f64) -> u64 {
        self.clat.percentile(p)
    }

    /// Submission latency series.
    pub fn slat(&self) -> &LatStat {
        &self.slat
    }

    /// Completion latency series.
    pub fn clat(&self) -> &LatStat {
        &self.clat
    }

    /// Total latency series (slat + clat).
    pub fn lat(&self) -> &LatStat {
        &self.lat
    }

    /// Bytes transferred.
    pub fn io_bytes(&self) -> u64 {
        self.io_bytes
    }

    /// Requests completed.
    pub fn ios(&self) -> u64 {
        self.ios
    }

    /// fio's latency buckets of the completion latency.
    pub fn buckets(&self) -> &LatBuckets {
        &self.buckets
    }

    /// Breakdown summed over all requests.
    pub fn breakdown_sum(&self) -> &Breakdown {
        &self.breakdown
    }

    /// Mean breakdown per request, ns by component (zeros when empty).
    pub fn mean_breakdown_ns(&self) -> [f64; NCOMP] {
        let mut out = [0.0; NCOMP];
        if self.ios > 0 {
            for (o, s) in out.iter_mut().zip(self.breakdown.0.iter()) {
                *o = *s as f64 / self.ios as f64;
            }
        }
        out
    }

    /// Bandwidth samples, KiB/s.
    pub fn bw_samples(&self) -> &Samples {
        &self.bw
    }

    /// IOPS samples.
    pub fn iops_samples(&self) -> &Samples {
        &self.iops
    }
}

/// fio's IO depth distributions (`io_u_map`, `io_u_submit`,
/// `io_u_complete`), 7 buckets each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DepthStats {
    /// IOs by number in flight when issued: 1, 2-3, 4-7, 8-15, 16-31,
    /// 32-63, 64+.
    pub level: [u64; 7],
    /// Submit calls by batch size: 0, 1-4, 5-8, 9-16, 17-32, 33-64, 65+.
    pub submit: [u64; 7],
    /// Reap calls by batch size, same buckets as `submit`.
    pub complete: [u64; 7],
    /// Number of submit calls.
    pub total_submit: u64,
    /// Number of reap calls.
    pub total_complete: u64,
}

fn batch_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

impl DepthStats {
    /// Count one IO issued with `in_flight` requests outstanding (itself
    /// included).
    #[inline]
    pub fn mark_depth(&mut self, in_flight: u32) {
        self.level[storlab_model::units::depth_bucket(u64::from(in_flight))] += 1;
    }

    /// Count one submit call carrying `batch` requests.
    #[inline]
    pub fn mark_submit(&mut self, batch: u32) {
        self.submit[batch_bucket(batch)] += 1;
        self.total_submit += 1;
    }

    /// Count one reap call returning `batch` completions.
    #[inline]
    pub fn mark_complete(&mut self, batch: u32) {
        self.complete[batch_bucket(batch)] += 1;
        self.total_complete += 1;
    }

    /// Add the counts of `other`.
    pub fn merge(&mut self, other: &DepthStats) {
        add_arr(&mut self.level, &other.level);
        add_arr(&mut self.submit, &other.submit);
        add_arr(&mut self.complete, &other.complete);
        self.total_submit += other.total_submit;
        self.total_complete += other.total_complete;
    }
}

/// Direction names in fio's order, indexing [`JobStats::dirs`].
pub const DIR_NAMES: [&str; 3] = ["read", "write", "trim"];

/// The directions a report shows, by index: read, write, trim as
/// [`DIR_NAMES`], then [`MIXED`].
pub const REPORT_DIR_NAMES: [&str; 4] = ["read", "write", "trim", "mixed"];

/// Index of fio's `mixed` direction (`unified_rw_reporting`) among
/// [`REPORT_DIR_NAMES`].
pub const MIXED: usize = 3;

/// Statistics of one fio job thread, or of a group after merging.
#[derive(Clone, Debug)]
pub struct JobStats {
    /// Job name (fio's `jobname`; the first member's after a merge).
    pub name: String,
    /// fio group id (`new_group`/`stonewall` start a new one).
    pub group_id: u32,
    /// Threads merged into this record (fio's `jobs=`), 1 for one thread.
    pub members: u32,
    /// The job section's options in file order (fio's `job options`).
    pub options: Vec<(String, String)>,
    /// Read, write and trim statistics.
    pub dirs: [DirStats; 3],
    /// Sync (fsync/fdatasync/flush) statistics; its completion latency is
    /// what fio reports as the sync latency.
    pub sync: DirStats,
    /// Time spent doing IO per direction, ns (fio's per-direction runtime;
    /// the maximum over members after a merge).
    pub runtime_ns: [u64; 3],
    /// Job run time, ns (fio's `job_runtime`; summed over members).
    pub job_runtime_ns: u64,
    /// User CPU time, ns (0 when not modelled).
    pub usr_ns: u64,
    /// System CPU time, ns (0 when not modelled).
    pub sys_ns: u64,
    /// Context switches.
    pub ctx: u64,
    /// Major page faults.
    pub majf: u64,
    /// Minor page faults.
    pub minf: u64,
    /// IO depth distributions.
    pub depth: DepthStats,
    /// The job's `iodepth` (fio's `latency_depth`).
    pub iodepth: u32,
    /// storlab's own results for this job, written as the job's `storlab`
    /// object; see [`crate::report`] for the agreed shape.
    pub storlab: serde_json::Value,
    /// An application model's results (`storlab-apps`), written as the
    /// job's `app` object; `None` for fio jobs.
    pub app: Option<serde_json::Value>,
    /// fio's `unified_rw_reporting`: which directions the report shows.
    pub unified: UnifiedRw,
    /// fio's job error number (0: none; [`ETIMEDOUT`] when `max_latency`
    /// was exceeded; the errno of the first failed IO otherwise).
    pub error: i32,
    /// What went wrong, as fio says it on standard error.
    pub error_detail: Option<String>,
}

/// Linux's ETIMEDOUT, fio's error for a job past its `max_latency`.
pub const ETIMEDOUT: i32 = 110;

/// The text `strerror` gives for the errnos a device failure can bring
/// (`storlab_model::host::status_errno`), as fio prints it.
pub fn errno_text(errno: i32) -> &'static str {
    match errno {
        5 => "Input/output error",
        75 => "Value too large for defined data type",
        95 => "Operation not supported",
        109 => "Too many references: cannot splice",
        110 => "Connection timed out",
        _ => "Unknown error",
    }
}

impl JobStats {
    /// The directions the report shows, as indices into
    /// [`REPORT_DIR_NAMES`] (fio's `unified_rw_reporting`).
    pub fn report_dirs(&self) -> &'static [usize] {
        match self.unified {
            UnifiedRw::None => &[0, 1, 2],
            UnifiedRw::Mixed => &[MIXED],
            UnifiedRw::Both => &[0, 1, 2, MIXED],
        }
    }

    /// Direction `k` of [`REPORT_DIR_NAMES`] and its runtime: [`MIXED`]
    /// sums read, write and trim (fio: "statistics are summed per data
    /// direction and reported together") over the longest of their
    /// runtimes.
    pub fn report_dir(&self, k: usize) -> (Cow<'_, DirStats>, u64) {
        if k < 3 {
            return (Cow::Borrowed(&self.dirs[k]), self.runtime_ns[k]);
        }
        let mut m = self.dirs[0].clone();
        m.merge(&self.dirs[1]);
        m.merge(&self.dirs[2]);
        let run = self.runtime_ns.iter().copied().max().unwrap_or(0);
        (Cow::Owned(m), run)
    }

    /// Empty statistics for one thread of job `name` in group `group_id`,
    /// with fio's default percentiles (completion latency only; see
    /// [`Self::set_percentiles`]).
    pub fn new(name: impl Into<String>, group_id: u32) -> Self {
        let mut j = JobStats {
            name: name.into(),
            group_id,
            members: 1,
            options: Vec::new(),
            dirs: Default::default(),
            sync: DirStats::new(),
            runtime_ns: [0; 3],
            job_runtime_ns: 0,
            usr_ns: 0,
            sys_ns: 0,
            ctx: 0,
            majf: 0,
            minf: 0,
            depth: DepthStats::default(),
            iodepth: 1,
            storlab: serde_json::Value::Null,
            app: None,
            unified: UnifiedRw::None,
            error: 0,
            error_detail: None,
        };
        j.set_percentiles(false, true, false);
        j
    }

    /// Which latency series keep percentiles (fio's `slat_percentiles`,
    /// `clat_percentiles` and `lat_percentiles`); call before recording.
    /// The syncs' latency keeps them when either of the last two is set.
    pub fn set_percentiles(&mut self, slat: bool, clat: bool, lat: bool) {
        self.dirs = std::array::from_fn(|_| DirStats::with_percentiles(slat, clat, lat));
        self.sync = DirStats::with_percentiles(false, clat || lat, false);
    }

    /// The statistics `op` is recorded in (flushes go to [`Self::sync`]).
    #[inline]
    pub fn dir_mut(&mut self, op: Op) -> &mut DirStats {
        match op {
            Op::Read => &mut self.dirs[0],
            Op::Write => &mut self.dirs[1],
            Op::Trim => &mut self.dirs[2],
            Op::Flush => &mut self.sync,
        }
    }

    /// The statistics `op` is recorded in (flushes: [`Self::sync`]).
    pub fn dir(&self, op: Op) -> &DirStats {
        match op {
            Op::Read => &self.dirs[0],
            Op::Write => &self.dirs[1],
            Op::Trim => &self.dirs[2],
            Op::Flush => &self.sync,
        }
    }

    /// Record one completed request of kind `op`; see [`DirStats::record`].
    #[inline(always)]
    pub fn record(
        &mut self,
        op: Op,
        slat_ns: u64,
        clat_ns: u64,
        bytes: u64,
        breakdown: &Breakdown,
    ) {
        self.dir_mut(op).record(slat_ns, clat_ns, bytes, breakdown);
    }

    /// Requests completed in read, write and trim together.
    pub fn rw_ios(&self) -> u64 {
        self.dirs.iter().map(DirStats::ios).sum()
    }

    /// Merge another thread's statistics into this one, as fio does with
    /// `group_reporting`: this record keeps its name, group, options,
    /// iodepth and `storlab` value.
    pub fn merge(&mut self, other: &JobStats) {
        for (a, b) in self.dirs.iter_mut().zip(other.dirs.iter()) {
            a.merge(b);
        }
        self.sync.merge(&other.sync);
        if self.error == 0 {
            self.error = other.error;
            self.error_detail.clone_from(&other.error_detail);
        }
        for (a, b) in self.runtime_ns.iter_mut().zip(other.runtime_ns) {
            *a = (*a).max(b);
        }
        self.members += other.members;
        self.job_runtime_ns += other.job_runtime_ns;
        self.usr_ns += other.usr_ns;
        self.sys_ns += other.sys_ns;
        self.ctx += other.ctx;
        self.majf += other.majf;
        self.minf += other.minf;
        self.depth.merge(&other.depth);
    }

    /// Mean latency breakdown per request in the agreed `breakdown_ns`
    /// shape: `{"read": {"syscall": ns, ...}, "write": ..., "trim": ...,
    /// "sync": ...}`, only directions with requests, every component in
    /// table order, mean ns as numbers. Put it in
    /// `storlab["breakdown_ns"]`.
    pub fn breakdown_ns(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        let named = DIR_NAMES
            .iter()
            .zip(self.dirs.iter())
            .chain(std::iter::once((&"sync", &self.sync)));
        for (name, d) in named {
            if d.ios() == 0 {
                continue;
            }
            let mut comps = serde_json::Map::new();
            for (c, v) in COMPONENTS.iter().zip(d.mean_breakdown_ns()) {
                let n = serde_json::Number::from_f64(v).unwrap_or_else(|| 0.into());
                comps.insert(c.name().to_string(), serde_json::Value::Number(n));
            }
            out.insert((*name).to_string(), serde_json::Value::Object(comps));
        }
        serde_json::Value::Object(out)
    }
}

/// Merge jobs by `group_id`, as fio does when `group_reporting` is set: one
/// record per group, in order of first appearance, named after its first
/// member. Callers apply it when the job file asks for group reporting.
pub fn group(jobs: &[JobStats]) -> Vec<JobStats> {
    let mut out: Vec<JobStats> = Vec::new();
    for j in jobs {
        match out.iter_mut().find(|g| g.group_id == j.group_id) {
            Some(g) => g.merge(j),
            None => out.push(j.clone()),
        }
    }
    out
}

/// Takes fio-style bandwidth and IOPS samples from a running job: call
/// [`Sampler::observe`] with the current (virtual) time after recording
/// completions; once at least `interval_ns` has passed since the last
/// sample, every direction that moved data gets one sample of the rate over
/// the elapsed time (fio skips idle directions, and so does this).
#[derive(Clone, Debug)]
pub struct Sampler {
    interval_ns: u64,
    last_ns: u64,
    last_bytes: [u64; 3],
    last_ios: [u64; 3],
}

impl Sampler {
    /// fio's default `bw_avg_time` and `iops_avg_time`: 500 ms.
    pub const FIO_DEFAULT_INTERVAL_NS: u64 = 500_000_000;

    /// A sampler whose first interval starts at `start_ns`.
    pub fn new(interval_ns: u64, start_ns: u64) -> Self {
        Sampler {
            interval_ns: interval_ns.max(1),
            last_ns: start_ns,
            last_bytes: [0; 3],
            last_ios: [0; 3],
        }
    }

    /// Take samples into `job` if an interval has passed by `now_ns`.
    #[inline]
    pub fn observe(&mut self, now_ns: u64, job: &mut JobStats) {
        let spent = now_ns.saturating_sub(self.last_ns);
        if spent < self.interval_ns {
            return;
        }
        for (i, d) in job.dirs.iter_mut().enumerate() {
            let db = d.io_bytes() - self.last_bytes[i];
            let di = d.ios() - self.last_ios[i];
            self.last_bytes[i] = d.io_bytes();
            self.last_ios[i] = d.ios();
            if db == 0 {
                continue;
            }
            let kib = u128::from(db) * 1_000_000_000 / u128::from(spent) / 1024;
            let iops = u128::from(di) * 1_000_000_000 / u128::from(spent);
            d.add_rate_sample(kib as u64, iops as u64);
        }
        self.last_ns = now_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_exact() {
        let mut m = Moments::new();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            m.add(v);
        }
        assert_eq!(m.count(), 8);
        assert_eq!((m.min(), m.max()), (2, 9));
        assert_eq!(m.mean(), 5.0);
        // Sample variance of that classic set: 32 / 7.
        assert!((m.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        let mut e = Moments::new();
        for _ in 0..1000 {
            e.add(123_456_789);
        }
        assert_eq!(e.stddev(), 0.0);
        assert_eq!(Moments::new().min(), 0);
    }

    #[test]
    fn one_pass_percentiles_match_the_histograms_quantiles() {
        let mut s = LatStat::new();
        let mut x = 7u64;
        for _ in 0..10_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s.record((x >> 40) % 3_000_000);
        }
        let ps = [0.5, 1.0, 25.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0];
        let one = s.percentiles(&ps);
        for (p, got) in ps.iter().zip(&one) {
            let q = s.histogram().value_at_quantile(p / 100.0);
            let want = s.histogram().median_equivalent(q).clamp(s.min(), s.max());
            assert_eq!(*got, want, "p{p}");
        }
        let rev: Vec<f64> = ps.iter().rev().copied().collect();
        let back: Vec<u64> = s.percentiles(&rev).into_iter().rev().collect();
        assert_eq!(back, one);
        assert_eq!(LatStat::new().percentile(50.0), 0);
    }

    #[test]
    fn buckets_follow_fio_edges() {
        let mut b = LatBuckets::default();
        for ns in [
            0,
            1,
            2,
            999,
            1_000,
            1_999,
            2_000,
            999_999,
            1_000_000,
            1_999_999_999,
            2_000_000_000,
        ] {
            b.mark(ns);
        }
        assert_eq!(b.ns[0], 2);
        assert_eq!(b.ns[1], 1);
        assert_eq!(b.ns[9], 1);
        assert_eq!(b.us[0], 2);
        assert_eq!(b.us[1], 1);
        assert_eq!(b.us[9], 1);
        assert_eq!(b.ms[0], 1);
        assert_eq!(b.ms[10], 1);
        assert_eq!(b.ms[11], 1);
        assert_eq!(b.total(), 11);
    }

    #[test]
    fn sampler_skips_idle_directions() {
        let mut j = JobStats::new("s", 0);
        let mut s = Sampler::new(1_000_000_000, 0);
        let bd = Breakdown::default();
        for _ in 0..10 {
            j.record(Op::Read, 0, 100, 4096, &bd);
        }
        s.observe(999_999_999, &mut j);
        assert_eq!(j.dirs[0].bw_samples().count(), 0);
        s.observe(1_000_000_000, &mut j);
        assert_eq!(j.dirs[0].bw_samples().count(), 1);
        assert_eq!(j.dirs[0].bw_samples().max(), 40);
        assert_eq!(j.dirs[0].iops_samples().max(), 10);
        assert_eq!(j.dirs[1].bw_samples().count(), 0);
    }
}
