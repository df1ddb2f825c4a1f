//! Block-trace replay: a recorded trace (any format `storlab-trace` reads)
//! as the workload of one simulated thread.
//!
//! [`simulate_trace`] is `run::simulate` for traces: it opens the
//! trace, builds the system, runs one [`ThreadPlan`] fed by a
//! [`TraceSource`] and returns one [`JobStats`] named after the trace file
//! (group 0), with the usual `storlab` object plus two members of its own:
//!
//! ```json
//! "trace" : { "path" : "hm_1.csv", "format" : "msr", "replay" : "timed",
//!             "iodepth" : 1048576, "requests" : 1000, "remapped" : 12,
//!             "zero_length" : 0, "skipped_lines" : 0, "filtered" : 40,
//!             "capacity_bytes" : ..., "align_bytes" : 4096, "disk" : null },
//! "recorded" : { "requests" : 1000,
//!                "recorded_ns" : { "mean" : .., "p50" : .., "p99" : .., "max" : .. },
//!                "simulated_ns" : { ... the same requests, simulated ... },
//!                "simulated_over_recorded" : { "mean" : .., "p50" : .., "p99" : .., "max" : .. },
//!                "read" : { ... the same three, reads only ... }, "write" : { ... } }
//! ```
//!
//! `recorded` is there only when the trace records response times (MSR's
//! ResponseTime, blkparse/blktrace completions). Simulated latencies are the
//! engine's issue-to-completion times; they are paired with the recorded
//! ones through [`IoSource::completed`] and kept in HDR histograms, so
//! nothing per request outlives its completion.
//!
//! # Modes ([`ReplayMode`])
//!
//! * `timed`: open loop. Each request is issued at its recorded time
//!   ([`IoReq::at`]), however many are outstanding (the depth is
//!   [`OPEN_LOOP_IODEPTH`], unlimited in practice); `ReplayOptions::iodepth`
//!   is not used.
//! * `scaled:F`: `timed` with every time divided by `F` (`scaled:2.0`
//!   replays twice as fast; `scaled:0.5` half as fast).
//! * `afap`: closed loop, as fast as possible. Timestamps are ignored;
//!   `ReplayOptions::iodepth` requests (default [`DEFAULT_IODEPTH`], fio's
//!   common choice for fast devices) are kept outstanding, issued in trace
//!   order.
//!
//! * `closed` (module [`closed`]): a closed-loop trace recorded by
//!   `storlab serve --record-format closed` is replayed with each request
//!   issued after the requests it waited for plus its think time, so the
//!   application's run time follows the device ([`closed::predict`]).
//!
//! # Addresses
//!
//! A request that does not fit the device (its end is past the capacity) is
//! wrapped with [`storlab_trace::remap`] in [`RemapMode::Wrap`] mode aligned
//! to `ReplayOptions::align` (4096 by default; 512 keeps sector-aligned
//! traces exact), and counted in `remapped`. Requests that fit are issued
//! unchanged. Flushes carry no address. Reads, writes and trims of zero
//! bytes are not issued (they would move nothing) and are counted in
//! `zero_length`. Every disk of a multi-disk trace is replayed onto the one
//! simulated device unless `ReplayOptions::read.disk` picks one.
//!
//! # Streaming and errors
//!
//! The source pulls one record at a time from the reader, so a trace of any
//! length replays in bounded memory. The engine's [`IoSource::next_io`]
//! cannot fail, so the first reader error ends the source and is returned
//! by [`simulate_trace`] after the run (naming the file and line). With
//! `skip_bad_lines` the count of skipped lines is reported instead.

pub mod closed;

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::path::Path;
use std::rc::Rc;
use std::str::FromStr;

use serde_json::{json, Value};
use storlab_model::config::Resolved;
use storlab_model::host::Host;
use storlab_model::{Nanos, Op, SystemConfig};
use storlab_trace::{Format, ReadOptions, RemapMode, TraceError, TraceOp, TraceReader};

use crate::engine::{Engine, EngineError, IoReq, IoSource, Progress, ThreadPlan};
use crate::stats::{JobStats, LatStat};
use crate::summary::{RunResult, RunSummary};

/// Outstanding requests allowed in `timed` and `scaled` modes: unlimited in
/// practice, so every request issues at its time.
pub const OPEN_LOOP_IODEPTH: u32 = 1 << 20;

/// Default outstanding requests in `afap` mode.
pub const DEFAULT_IODEPTH: u32 = 32;

/// Default alignment of wrapped addresses, bytes.
pub const DEFAULT_ALIGN: u64 = 4096;

/// How request times are honoured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReplayMode {
    /// Issue each request at its recorded time (open loop).
    Timed,
    /// Ignore times; keep `iodepth` requests outstanding (closed loop).
    Afap,
    /// Issue each request at its recorded time divided by the factor
    /// (finite, positive); 2.0 is twice as fast.
    Scaled(f64),
}

impl ReplayMode {
    /// The issue time of a request recorded at `time_ns`, or `None` for
    /// "as soon as the depth allows".
    #[inline]
    fn at(self, time_ns: u64) -> Option<Nanos> {
        match self {
            ReplayMode::Timed => Some(time_ns),
            ReplayMode::Afap => None,
            ReplayMode::Scaled(f) => Some((time_ns as f64 / f).round() as u64),
        }
    }

    /// The thread's depth for this mode given the user's `iodepth`.
    pub fn iodepth(self, iodepth: u32) -> u32 {
        match self {
            ReplayMode::Afap => iodepth,
            ReplayMode::Timed | ReplayMode::Scaled(_) => OPEN_LOOP_IODEPTH,
        }
    }
}

impl fmt::Display for ReplayMode {
    /// `timed`, `afap` or `scaled:<factor>` (parses back with `FromStr`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayMode::Timed => f.write_str("timed"),
            ReplayMode::Afap => f.write_str("afap"),
            ReplayMode::Scaled(x) => write!(f, "scaled:{x:?}"),
        }
    }
}

impl FromStr for ReplayMode {
    type Err = ReplayError;
    /// Parses `timed`, `afap` or `scaled:<factor>` (e.g. `scaled:2.0`),
    /// ignoring case and surrounding blanks.
    fn from_str(s: &str) -> Result<Self, ReplayError> {
        let bad = |problem: &str| ReplayError::Mode {
            given: s.to_string(),
            problem: problem.to_string(),
        };
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "timed" => Ok(ReplayMode::Timed),
            "afap" => Ok(ReplayMode::Afap),
            _ => match t.strip_prefix("scaled:") {
                Some(f) => match f.trim().parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 => Ok(ReplayMode::Scaled(x)),
                    _ => Err(bad(
                        "the speed-up factor must be a positive number, e.g. scaled:2.0",
                    )),
                },
                None if t == "scaled" => Err(bad("give a speed-up factor, e.g. scaled:2.0")),
                None => Err(bad(
                    "expected timed, afap or scaled:<factor> (e.g. scaled:2.0)",
                )),
            },
        }
    }
}

/// How to replay a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    /// Timing of issues. Default: [`ReplayMode::Timed`].
    pub mode: ReplayMode,
    /// Outstanding requests in [`ReplayMode::Afap`] (ignored otherwise).
    /// Default: [`DEFAULT_IODEPTH`].
    pub iodepth: u32,
    /// The trace's format; `None` detects it from the content.
    pub format: Option<Format>,
    /// Reading options: filters by operation, time window and disk, and
    /// `skip_bad_lines`.
    pub read: ReadOptions,
    /// Alignment of wrapped addresses in bytes (a power of two, e.g. 512 or
    /// 4096). Default: [`DEFAULT_ALIGN`].
    pub align: u64,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            mode: ReplayMode::Timed,
            iodepth: DEFAULT_IODEPTH,
            format: None,
            read: ReadOptions::default(),
            align: DEFAULT_ALIGN,
        }
    }
}

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The trace cannot be opened or read (names the file and line).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A replay mode string that does not parse.
    #[error("replay mode `{given}`: {problem}")]
    Mode {
        /// What was given.
        given: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Options that cannot work (alignment, depth, factor).
    #[error("replay options: {0}")]
    Options(String),
    /// Nothing to replay once filters and zero-length requests are left out.
    #[error("{path}: no requests to replay ({filtered} left out by the filters, {skipped} bad lines skipped, {zero_length} of zero length)")]
    Empty {
        /// The trace file.
        path: String,
        /// Records left out by the filters.
        filtered: u64,
        /// Bad lines skipped.
        skipped: u64,
        /// Zero-length reads, writes and trims not issued.
        zero_length: u64,
    },
    /// The configuration cannot be built.
    #[error(transparent)]
    Config(#[from] storlab_model::config::ConfigError),
    /// The model stalled, or the run passed the simulated-time horizon.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Recorded and simulated latencies of the same requests.
#[derive(Clone, Debug, Default)]
pub struct LatencyPair {
    /// The trace's recorded response times, ns.
    pub recorded: LatStat,
    /// The simulated issue-to-completion times of the same requests, ns.
    pub simulated: LatStat,
}

impl LatencyPair {
    fn merge(&mut self, other: &LatencyPair) {
        self.recorded.merge(&other.recorded);
        self.simulated.merge(&other.simulated);
    }

    /// `{ requests, recorded_ns, simulated_ns, simulated_over_recorded }`.
    fn to_json(&self) -> Value {
        let summary = |l: &LatStat| {
            let p = l.percentiles(&[50.0, 99.0]);
            [l.mean(), p[0] as f64, p[1] as f64, l.max() as f64]
        };
        let r = summary(&self.recorded);
        let s = summary(&self.simulated);
        let ratio: Vec<Option<f64>> = r
            .iter()
            .zip(s)
            .map(|(r, s)| (*r > 0.0).then(|| s / r))
            .collect();
        json!({
            "requests": self.recorded.count(),
            "recorded_ns": {"mean": r[0], "p50": r[1], "p99": r[2], "max": r[3]},
            "simulated_ns": {"mean": s[0], "p50": s[1], "p99": s[2], "max": s[3]},
            "simulated_over_recorded": {"mean": ratio[0], "p50": ratio[1], "p99": ratio[2], "max": ratio[3]},
        })
    }
}

/// What a [`TraceSource`] did, shared with whoever made it (the engine owns
/// the source itself).
#[derive(Debug, Default)]
pub struct ReplayTally {
    /// Requests handed to the engine.
    pub requests: u64,
    /// Requests whose address was wrapped to fit the device.
    pub remapped: u64,
    /// Zero-length reads, writes and trims not issued.
    pub zero_length: u64,
    /// Bad lines the reader skipped (with `skip_bad_lines`), known once the
    /// source is exhausted.
    pub skipped: u64,
    /// Records the reader's filters left out, known once the source is
    /// exhausted.
    pub filtered: u64,
    /// The reader's error, which ended the source early.
    pub error: Option<TraceError>,
    /// Recorded vs simulated latency, by operation in [`TraceOp::ALL`]'s
    /// order (read, write, trim, flush); only requests with a recorded
    /// response time.
    pub by_op: [LatencyPair; 4],
}

impl ReplayTally {
    /// After the run: the reader's error (taken out), or
    /// [`ReplayError::Empty`] when nothing of the trace at `path` was
    /// replayed.
    pub fn check(&mut self, path: &str) -> Result<(), ReplayError> {
        if let Some(e) = self.error.take() {
            return Err(e.into());
        }
        if self.requests == 0 {
            return Err(ReplayError::Empty {
                path: path.to_string(),
                filtered: self.filtered,
                skipped: self.skipped,
                zero_length: self.zero_length,
            });
        }
        Ok(())
    }

    /// All operations' pairs together.
    pub fn all(&self) -> LatencyPair {
        let mut all = LatencyPair::default();
        for p in &self.by_op {
            all.merge(p);
        }
        all
    }

    /// The `recorded` object (see the module documentation), or `None`
    /// when no request had a recorded response time.
    pub fn recorded_json(&self) -> Option<Value> {
        let all = self.all();
        if all.recorded.count() == 0 {
            return None;
        }
        let mut v = all.to_json();
        for (op, p) in TraceOp::ALL.iter().zip(&self.by_op) {
            if p.recorded.count() > 0 {
                v[op.name()] = p.to_json();
            }
        }
        Some(v)
    }
}

/// A request issued and not yet completed (or completed behind an older
/// one still outstanding).
#[derive(Clone, Copy)]
struct Slot {
    /// Recorded response time, or [`NOT_RECORDED`].
    recorded_ns: u64,
    /// Index in [`TraceOp::ALL`].
    op: u8,
    done: bool,
}

const NOT_RECORDED: u64 = u64::MAX;

/// A trace reader as the IO source of one simulated thread: records are
/// pulled one at a time, remapped to the device, timed by the mode, and
/// paired with their simulated latencies on completion.
///
/// Memory: the reader's buffers plus one 16-byte slot per request between
/// the oldest outstanding one and the newest issued (the source never holds
/// the records).
pub struct TraceSource {
    reader: TraceReader,
    mode: ReplayMode,
    capacity: u64,
    wrap: RemapMode,
    tally: Rc<RefCell<ReplayTally>>,
    /// Request number of `window[0]`.
    base: u64,
    window: VecDeque<Slot>,
}

impl TraceSource {
    /// A source replaying `reader` onto a device of `capacity` bytes,
    /// wrapping addresses aligned to `align` bytes; the returned handle
    /// holds what it did.
    pub fn new(
        reader: TraceReader,
        capacity: u64,
        mode: ReplayMode,
        align: u64,
    ) -> Result<(TraceSource, Rc<RefCell<ReplayTally>>), ReplayError> {
        if align == 0 || !align.is_power_of_two() {
            return Err(ReplayError::Options(format!(
                "alignment {align} is not a power of two (use 512 or 4096)"
            )));
        }
        if align > capacity {
            return Err(ReplayError::Options(format!(
                "alignment {align} is larger than the device ({capacity} bytes)"
            )));
        }
        if let ReplayMode::Scaled(f) = mode {
            if !(f.is_finite() && f > 0.0) {
                return Err(ReplayError::Options(format!(
                    "scaled:{f}: the factor must be a positive number"
                )));
            }
        }
        let tally = Rc::new(RefCell::new(ReplayTally::default()));
        let source = TraceSource {
            reader,
            mode,
            capacity,
            wrap: RemapMode::Wrap { align },
            tally: Rc::clone(&tally),
            base: 0,
            window: VecDeque::new(),
        };
        Ok((source, tally))
    }

    /// The reader ended (or failed): keep its counts and its error.
    #[cold]
    fn finish(&mut self, error: Option<TraceError>) {
        let mut t = self.tally.borrow_mut();
        t.skipped = self.reader.skipped();
        t.filtered = self.reader.filtered();
        if t.error.is_none() {
            t.error = error;
        }
    }
}

impl IoSource for TraceSource {
    #[inline]
    fn next_io(&mut self) -> Option<IoReq> {
        loop {
            let r = match self.reader.next() {
                None => {
                    self.finish(None);
                    return None;
                }
                Some(Err(e)) => {
                    self.finish(Some(e));
                    return None;
                }
                Some(Ok(r)) => r,
            };
            let (op, opi) = match r.op {
                TraceOp::Read => (Op::Read, 0),
                TraceOp::Write => (Op::Write, 1),
                TraceOp::Trim => (Op::Trim, 2),
                TraceOp::Flush => (Op::Flush, 3),
            };
            let mut t = self.tally.borrow_mut();
            let (mut offset, mut len) = (r.offset, r.len);
            if op != Op::Flush {
                if len == 0 {
                    t.zero_length += 1;
                    continue;
                }
                if r.end() > self.capacity {
                    // `new` checked that the alignment is a power of two no
                    // larger than the capacity, so wrapping always succeeds
                    (offset, len) = storlab_trace::remap(offset, len, self.capacity, self.wrap)
                        .expect("TraceSource::new checked the alignment against the capacity");
                    t.remapped += 1;
                }
            } else {
                (offset, len) = (0, 0);
            }
            t.requests += 1;
            self.window.push_back(Slot {
                recorded_ns: r.recorded_latency_ns.unwrap_or(NOT_RECORDED),
                op: opi,
                done: false,
            });
            return Some(IoReq {
                op,
                offset,
                len,
                at: self.mode.at(r.time_ns),
                fua: false,
                placement: None,
                quiesce: false,
            });
        }
    }

    #[inline]
    fn completed(&mut self, id: u64, latency_ns: u64) {
        let Some(slot) = id
            .checked_sub(self.base)
            .and_then(|i| self.window.get_mut(i as usize))
        else {
            debug_assert!(
                false,
                "completion of request {id} never issued or completed twice"
            );
            return;
        };
        if slot.recorded_ns != NOT_RECORDED {
            let mut t = self.tally.borrow_mut();
            let pair = &mut t.by_op[slot.op as usize];
            pair.recorded.record(slot.recorded_ns);
            pair.simulated.record(latency_ns);
        }
        slot.done = true;
        while self.window.front().is_some_and(|s| s.done) {
            self.window.pop_front();
            self.base += 1;
        }
    }
}

/// Replay the trace at `path` on the system: one thread, one [`JobStats`]
/// named after the file (group 0) whose `options` hold the trace, format,
/// replay mode, depth and filters, and whose `storlab` object has the
/// `trace` and (when the trace records response times) `recorded` members
/// described in the module documentation.
///
/// A reader error (bad line, unreadable file) is returned after the run
/// with the file and line; so is a trace with nothing to replay.
pub fn simulate_trace(
    cfg: &SystemConfig,
    resolved: &Resolved,
    path: &Path,
    opts: &ReplayOptions,
    progress: Progress,
) -> Result<RunResult, ReplayError> {
    let iodepth = opts.mode.iodepth(opts.iodepth);
    if iodepth == 0 {
        return Err(ReplayError::Options("iodepth must be at least 1".into()));
    }
    let device = cfg.build_device()?;
    let capacity = device.capacity();
    let reader = storlab_trace::open(path, opts.format, &opts.read)?;
    let format = reader.format();
    let (source, tally) = TraceSource::new(reader, capacity, opts.mode, opts.align)?;
    let mut engine = Engine::new(Host::new(cfg.host.clone(), device, 1));

    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut stats = JobStats::new(name, 0);
    stats.options = job_options(path, format, opts, iodepth);
    stats.iodepth = iodepth;
    let plan = ThreadPlan::new(Box::new(source), iodepth, stats);
    let mut jobs = engine.run_group(vec![plan], 0, &mut *progress)?;
    let mut tally = std::mem::take(&mut *tally.borrow_mut());
    tally.check(&path.display().to_string())?;
    let now = engine.now();
    let summary = RunSummary::new(&engine, cfg, resolved);
    for j in &mut jobs {
        let mut o = summary.job_object(j);
        o.insert(
            "trace".into(),
            json!({
                "path": path.display().to_string(),
                "format": format.name(),
                "replay": opts.mode.to_string(),
                "iodepth": iodepth,
                "requests": tally.requests,
                "remapped": tally.remapped,
                "zero_length": tally.zero_length,
                "skipped_lines": tally.skipped,
                "filtered": tally.filtered,
                "capacity_bytes": capacity,
                "align_bytes": opts.align,
                "disk": opts.read.disk,
            }),
        );
        if let Some(r) = tally.recorded_json() {
            o.insert("recorded".into(), r);
        }
        j.storlab = Value::Object(o);
    }
    Ok(RunResult {
        jobs,
        sim_ns: now,
        events: engine.events(),
    })
}

/// The job's `options` (fio's "job options"): what was replayed and how.
fn job_options(
    path: &Path,
    format: Format,
    opts: &ReplayOptions,
    iodepth: u32,
) -> Vec<(String, String)> {
    let mut o = vec![
        ("trace".to_string(), path.display().to_string()),
        ("trace_format".to_string(), format.name().to_string()),
        ("replay".to_string(), opts.mode.to_string()),
        ("iodepth".to_string(), iodepth.to_string()),
        ("align".to_string(), opts.align.to_string()),
    ];
    let r = &opts.read;
    if let Some(d) = r.disk {
        o.push(("trace_disk".into(), d.to_string()));
    }
    if r.ops != storlab_trace::OpSet::ALL {
        o.push(("trace_ops".into(), r.ops.to_string()));
    }
    if let Some(s) = r.start_ns {
        o.push(("trace_start_ns".into(), s.to_string()));
    }
    if let Some(e) = r.end_ns {
        o.push(("trace_end_ns".into(), e.to_string()));
    }
    if r.skip_bad_lines {
        o.push(("skip_bad_lines".into(), "1".into()));
    }
    o
}

/// A few lines for the terminal report, after fio's summary: what was
/// replayed and, when the trace records response times, recorded vs
/// simulated latency. Empty for a job that is not a replay.
pub fn terminal_summary(job: &JobStats) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let t = &job.storlab["trace"];
    if t.is_null() {
        return out;
    }
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    let _ = writeln!(
        out,
        "trace {} ({}), replay {}: {} requests, {} remapped, {} zero-length, {} bad lines skipped, {} filtered",
        t["path"].as_str().unwrap_or(""),
        t["format"].as_str().unwrap_or(""),
        t["replay"].as_str().unwrap_or(""),
        n(&t["requests"]),
        n(&t["remapped"]),
        n(&t["zero_length"]),
        n(&t["skipped_lines"]),
        n(&t["filtered"]),
    );
    let r = &job.storlab["recorded"];
    if r.is_null() {
        return out;
    }
    let us = |v: &Value| v.as_f64().unwrap_or(0.0) / 1000.0;
    let _ = writeln!(
        out,
        "  latency (us)   {:>12} {:>12} {:>12} {:>12}",
        "mean", "p50", "p99", "max"
    );
    for (label, key) in [("recorded", "recorded_ns"), ("simulated", "simulated_ns")] {
        let s = &r[key];
        let _ = writeln!(
            out,
            "  {label:<14} {:>12.2} {:>12.2} {:>12.2} {:>12.2}",
            us(&s["mean"]),
            us(&s["p50"]),
            us(&s["p99"]),
            us(&s["max"])
        );
    }
    let q = &r["simulated_over_recorded"];
    let ratio = |v: &Value| {
        v.as_f64()
            .map_or_else(|| "-".to_string(), |x| format!("{x:.3}"))
    };
    let _ = writeln!(
        out,
        "  sim/recorded   {:>12} {:>12} {:>12} {:>12}   ({} requests with a recorded time)",
        ratio(&q["mean"]),
        ratio(&q["p50"]),
        ratio(&q["p99"]),
        ratio(&q["max"]),
        n(&r["requests"]),
    );
    out
}
