//! Closed-loop replay: an application recorded by `storlab serve --record
//! FILE --record-format closed` (a `storlab-closed` trace, see
//! [`storlab_trace::closed`]) run again on another device, so that a faster
//! device finishes the application sooner, as it would for real.
//!
//! Each stream (an NBD connection of the recording) issues its requests in
//! their recorded arrival order; a request is issued once every request it
//! waited for (its stream's requests of rank below its `after`) has
//! completed on the simulated device, plus its recorded think time after
//! the latest of them, and not before the stream's previous request (a
//! connection is a FIFO). A request that waited for nothing is issued at
//! its recorded time from the start. Streams are independent.
//!
//! The device is driven bare, as the emulator drives it (no simulated host
//! stack): the recorded think time already holds the recording host's
//! real stack, the transport and the application's CPU time, and the
//! prediction is of what the emulator would measure on the other device.
//! What this assumes: the think times do not depend on the device (true of
//! CPU time; the host's own lateness and cache effects that change with
//! the timing are not modelled), and the application issues the same
//! requests on every device (a program whose requests depend on timing,
//! such as a flusher woken by a timer or a group commit whose batch size
//! follows the latency, is replayed with the recording's choices).
//!
//! Results ([`Prediction`], and in [`simulate_closed`]'s report the job's
//! `storlab.closed_loop` object beside fio's usual fields): run time (from
//! the first arrival to the last device completion, the same span the
//! recording's `recorded.runtime_s` measures), requests per second, the
//! mean device latency, each beside the recorded figure.
//!
//! ```no_run
//! use storlab_model::{config::PresetStore, SystemConfig};
//! use storlab_sim::replay::closed::{predict, ClosedOptions};
//! let (_, cfg) = SystemConfig::load(&PresetStore::default(), "moneta-spin", &[])?;
//! let p = predict("oltp.trace".as_ref(), &cfg, &ClosedOptions::default())?;
//! println!("{:.3} s ({:.0} requests/s)", p.runtime_s, p.requests_per_s);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use serde_json::{json, Value};
use storlab_model::breakdown::Breakdown;
use storlab_model::config::Resolved;
use storlab_model::{Cx, DevRequest, Device, Nanos, Op, SystemConfig};
use storlab_trace::closed::{ClosedRecord, ClosedTrace};
use storlab_trace::{RemapMode, TraceOp};

use super::{ReplayError, DEFAULT_ALIGN};
use crate::engine::{EngineError, Progress, HORIZON_NS};
use crate::stats::JobStats;
use crate::summary::{config_json, RunResult};

/// How to replay a closed-loop trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedOptions {
    /// Requests past the device's capacity are wrapped into it, aligned to
    /// this many bytes (a power of two). Default [`DEFAULT_ALIGN`].
    pub align: u64,
}

impl Default for ClosedOptions {
    fn default() -> Self {
        ClosedOptions {
            align: DEFAULT_ALIGN,
        }
    }
}

/// The application-level result of a closed-loop replay, beside the
/// recording's.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// Requests replayed.
    pub requests: u64,
    /// Streams (connections) of the recording.
    pub streams: u64,
    /// Issuing threads (slots) inferred, over every stream.
    pub threads: u64,
    /// Predicted run time: first arrival to last device completion, s.
    pub runtime_s: f64,
    /// `requests / runtime_s`.
    pub requests_per_s: f64,
    /// Mean device latency (issue to device completion), ns.
    pub mean_latency_ns: f64,
    /// The recording's run time (first arrival to last device
    /// completion), s.
    pub recorded_runtime_s: f64,
    /// The recording's requests per second.
    pub recorded_requests_per_s: f64,
    /// The recording's mean device latency, ns.
    pub recorded_mean_latency_ns: f64,
    /// Think time summed over every request, s (the part no device can
    /// shorten).
    pub think_s: f64,
    /// Requests wrapped into a device smaller than the recording's.
    pub remapped: u64,
}

impl Prediction {
    /// Predicted run time over the recorded one (1 on the recording's own
    /// device).
    pub fn runtime_ratio(&self) -> f64 {
        self.runtime_s / self.recorded_runtime_s.max(1e-12)
    }

    /// An application's own rate measured in the recording (transactions
    /// per second, say) as predicted for the replayed device: the same
    /// work over the predicted run time. Assumes the rate was measured
    /// over the span the trace covers.
    pub fn predicted_rate(&self, recorded_rate: f64) -> f64 {
        recorded_rate / self.runtime_ratio().max(1e-12)
    }
}

/// Replay the closed-loop trace at `trace_path` on the device of `cfg` and
/// return the application-level result.
pub fn predict(
    trace_path: &Path,
    cfg: &SystemConfig,
    opts: &ClosedOptions,
) -> Result<Prediction, ReplayError> {
    let trace = storlab_trace::closed::load(trace_path)?;
    let device = cfg.build_device()?;
    let name = trace_path.display().to_string();
    Ok(replay(&trace, device, opts, &name, &mut |_, _| {})?.0)
}

/// [`predict`] for a trace already loaded, on a built device; also returns
/// fio-style statistics of the replayed requests and the device.
pub fn replay(
    trace: &ClosedTrace,
    device: Box<dyn Device>,
    opts: &ClosedOptions,
    name: &str,
    progress: Progress,
) -> Result<(Prediction, JobStats, Box<dyn Device>), ReplayError> {
    if !opts.align.is_power_of_two() || opts.align > device.capacity().max(1) {
        return Err(ReplayError::Options(format!(
            "align {} must be a power of two no larger than the device ({} bytes)",
            opts.align,
            device.capacity()
        )));
    }
    if let Some((id, v)) = trace
        .streams
        .iter()
        .find(|(_, v)| v.len() > u32::MAX as usize)
    {
        return Err(ReplayError::Options(format!(
            "{name}: stream {id} has {} requests; a closed-loop replay takes at most 2^32-1 per stream",
            v.len()
        )));
    }
    if trace.streams.len() >= 1 << 29 {
        return Err(ReplayError::Options(format!(
            "{name}: {} streams; a closed-loop replay takes fewer than 2^29",
            trace.streams.len()
        )));
    }
    if trace.requests() == 0 {
        return Err(ReplayError::Empty {
            path: name.to_string(),
            filtered: 0,
            skipped: 0,
            zero_length: 0,
        });
    }
    let mut r = Replay::new(trace, device, opts, name);
    r.run(progress)?;
    let stats = r.stats;
    let span = r.end - r.origin;
    let n = trace.requests();
    let recorded_span = trace.recorded_span_ns();
    let all = || trace.streams.iter().flat_map(|(_, v)| v.iter());
    let rec_lat: f64 = all()
        .map(|x| (x.complete_ns - x.arrival_ns) as f64)
        .sum::<f64>()
        / n as f64;
    let think: u64 = all().map(|x| x.think_ns).sum();
    let ios = stats.rw_ios() + stats.sync.ios();
    let mean_lat = if ios == 0 {
        0.0
    } else {
        let sum: f64 = stats
            .dirs
            .iter()
            .chain(std::iter::once(&stats.sync))
            .map(|d| d.clat().mean() * d.clat().count() as f64)
            .sum();
        sum / ios as f64
    };
    let per_s = |k: u64, ns: u64| {
        if ns == 0 {
            0.0
        } else {
            k as f64 * 1e9 / ns as f64
        }
    };
    let p = Prediction {
        requests: n,
        streams: trace.streams.len() as u64,
        threads: trace.threads(),
        runtime_s: span as f64 / 1e9,
        requests_per_s: per_s(n, span),
        mean_latency_ns: mean_lat,
        recorded_runtime_s: recorded_span as f64 / 1e9,
        recorded_requests_per_s: per_s(n, recorded_span),
        recorded_mean_latency_ns: rec_lat,
        think_s: think as f64 / 1e9,
        remapped: r.remapped,
    };
    Ok((p, stats, r.device))
}

/// `storlab sim --trace FILE --replay closed`: [`replay`] with the report
/// of a trace replay: one job named after the file whose `storlab` object
/// holds the device configuration, the latency breakdown and
/// `closed_loop` (the [`Prediction`]'s fields, the recorded ones under
/// `recorded`).
pub fn simulate_closed(
    cfg: &SystemConfig,
    resolved: &Resolved,
    path: &Path,
    opts: &ClosedOptions,
    progress: Progress,
) -> Result<RunResult, ReplayError> {
    let trace = storlab_trace::closed::load(path)?;
    let device = cfg.build_device()?;
    let name = path.display().to_string();
    let (p, mut job, device) = replay(&trace, device, opts, &name, progress)?;
    job.options = vec![
        ("trace".into(), name.clone()),
        ("trace_format".into(), "closed".into()),
        ("replay".into(), "closed".into()),
        ("align".into(), opts.align.to_string()),
    ];
    let end = (p.runtime_s * 1e9).round() as u64;
    let report = device.report(trace.origin_ns + end);
    let mut o = serde_json::Map::new();
    o.insert("device".into(), config_json(resolved));
    o.insert("breakdown_ns".into(), job.breakdown_ns());
    o.insert(
        "utilisation".into(),
        serde_json::to_value(&report.utilisation).unwrap_or(Value::Null),
    );
    o.insert("closed_loop".into(), closed_loop_json(&name, &p));
    o.insert("simulated_ns".into(), json!(end));
    job.storlab = Value::Object(o);
    Ok(RunResult {
        jobs: vec![job],
        sim_ns: end,
        events: 0,
    })
}

/// The `closed_loop` object of the report.
pub fn closed_loop_json(path: &str, p: &Prediction) -> Value {
    json!({
        "trace": path,
        "requests": p.requests,
        "streams": p.streams,
        "threads": p.threads,
        "runtime_s": p.runtime_s,
        "requests_per_s": p.requests_per_s,
        "mean_device_latency_ns": p.mean_latency_ns,
        "think_s": p.think_s,
        "remapped": p.remapped,
        "recorded": {
            "runtime_s": p.recorded_runtime_s,
            "requests_per_s": p.recorded_requests_per_s,
            "mean_device_latency_ns": p.recorded_mean_latency_ns,
        },
        "runtime_over_recorded": p.runtime_ratio(),
    })
}

/// The terminal lines of a closed-loop replay (empty for other jobs).
pub fn terminal_summary(job: &JobStats) -> String {
    let c = &job.storlab["closed_loop"];
    if c.is_null() {
        return String::new();
    }
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    let r = &c["recorded"];
    format!(
        "closed-loop replay of {} ({} requests, {} streams, {} threads, {:.3} s of think time)\n\
         \x20 {:<10} {:>12} {:>14} {:>18}\n\
         \x20 {:<10} {:>12.6} {:>14.1} {:>18.2}\n\
         \x20 {:<10} {:>12.6} {:>14.1} {:>18.2}\n\
         \x20 run time simulated/recorded: {:.3}\n",
        c["trace"].as_str().unwrap_or(""),
        c["requests"],
        c["streams"],
        c["threads"],
        f(&c["think_s"]),
        "",
        "run time (s)",
        "requests/s",
        "device lat (us)",
        "simulated",
        f(&c["runtime_s"]),
        f(&c["requests_per_s"]),
        f(&c["mean_device_latency_ns"]) / 1e3,
        "recorded",
        f(&r["runtime_s"]),
        f(&r["requests_per_s"]),
        f(&r["mean_device_latency_ns"]) / 1e3,
        f(&c["runtime_over_recorded"]),
    )
}

/// Heap tokens: device wake-ups stay below 2^61; a stream's issue and a
/// request's completion set one of these bits.
const ISSUE: u64 = 1 << 62;
const DONE: u64 = 1 << 63;
const NOT_DONE: u64 = u64::MAX;

struct Stream<'a> {
    recs: &'a [ClosedRecord],
    /// Next request to issue (index in `recs`).
    next: usize,
    /// An issue event is pending for `recs[next]`.
    scheduled: bool,
    /// The latest issue time.
    last_issue: Nanos,
    /// Completion time by rank (`NOT_DONE` until then).
    done_at: Vec<Nanos>,
    /// Ranks `0..prefix` are all done.
    prefix: usize,
    /// `latest[k]`: the latest completion among ranks below `k`
    /// (valid for `k <= prefix`).
    latest: Vec<Nanos>,
    /// Issue time of each request (by index in `recs`).
    issued: Vec<Nanos>,
}

struct Replay<'a> {
    device: Box<dyn Device>,
    cx: Cx,
    streams: Vec<Stream<'a>>,
    /// `(time, class, sequence, token)`: at one time, device wake-ups
    /// (class 0) before completions (1) before issues (2), as the emulator
    /// processes the wake-ups due before it lets a request arrive.
    heap: BinaryHeap<Reverse<(Nanos, u8, u64, u64)>>,
    seq: u64,
    now: Nanos,
    end: Nanos,
    capacity: u64,
    align: u64,
    remapped: u64,
    outstanding: u64,
    completed: u64,
    stats: JobStats,
    /// The recording's clock at the first arrival: the replay's time 0 is
    /// there, so a device sees the times it saw in the recording.
    origin: Nanos,
}

impl<'a> Replay<'a> {
    fn new(
        trace: &'a ClosedTrace,
        device: Box<dyn Device>,
        opts: &ClosedOptions,
        name: &str,
    ) -> Self {
        let streams = trace
            .streams
            .iter()
            .map(|(_, recs)| Stream {
                recs,
                next: 0,
                scheduled: false,
                last_issue: 0,
                done_at: vec![NOT_DONE; recs.len()],
                prefix: 0,
                latest: {
                    let mut v = vec![0; recs.len() + 1];
                    v.truncate(1);
                    v
                },
                issued: vec![0; recs.len()],
            })
            .collect();
        let file = Path::new(name)
            .file_name()
            .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned());
        let mut stats = JobStats::new(file, 0);
        stats.iodepth = trace.threads().clamp(1, u32::MAX as u64) as u32;
        Replay {
            capacity: device.capacity(),
            device,
            cx: Cx::default(),
            streams,
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            end: 0,
            align: opts.align,
            remapped: 0,
            outstanding: 0,
            completed: 0,
            stats,
            origin: trace.origin_ns,
        }
    }

    fn push(&mut self, at: Nanos, tok: u64) {
        self.seq += 1;
        let class = if tok & ISSUE != 0 {
            2
        } else if tok & DONE != 0 {
            1
        } else {
            0
        };
        self.heap.push(Reverse((at, class, self.seq, tok)));
    }

    fn run(&mut self, progress: Progress) -> Result<(), ReplayError> {
        self.now = self.origin;
        self.end = self.origin;
        for s in 0..self.streams.len() {
            self.try_schedule(s);
        }
        while let Some(Reverse((t, _, _, tok))) = self.heap.pop() {
            if t >= HORIZON_NS {
                return Err(EngineError::PastHorizon { at: t }.into());
            }
            self.now = t;
            if tok & DONE != 0 {
                let (s, i) = ((tok & !DONE) >> 32, tok & 0xffff_ffff);
                self.done(s as usize, i as usize);
                if self.completed & 0xffff == 0 {
                    progress(self.completed, self.now - self.origin);
                }
            } else if tok & ISSUE != 0 {
                self.issue((tok & !ISSUE) as usize);
            } else {
                self.device.on_event(t, tok, &mut self.cx);
                self.drain_cx();
            }
        }
        let waiting: u64 = self
            .streams
            .iter()
            .map(|s| (s.recs.len() - s.next) as u64)
            .sum();
        if self.outstanding > 0 || waiting > 0 {
            return Err(EngineError::Stuck {
                outstanding: self.outstanding + waiting,
                at: self.now,
                state: self.device.debug_state(),
            }
            .into());
        }
        let run = self.end - self.origin;
        for d in 0..3 {
            if self.stats.dirs[d].ios() > 0 {
                self.stats.runtime_ns[d] = run;
            }
        }
        self.stats.job_runtime_ns = run;
        Ok(())
    }

    /// Schedule the issue of stream `s`'s next request if what it waited
    /// for has completed.
    fn try_schedule(&mut self, s: usize) {
        let st = &mut self.streams[s];
        if st.scheduled || st.next >= st.recs.len() {
            return;
        }
        let r = &st.recs[st.next];
        let after = r.after as usize;
        if st.prefix < after {
            return;
        }
        let base = if after == 0 {
            self.origin
        } else {
            st.latest[after]
        };
        let at = base
            .saturating_add(r.think_ns)
            .max(st.last_issue)
            .max(self.now);
        st.scheduled = true;
        self.push(at, ISSUE | s as u64);
    }

    fn issue(&mut self, s: usize) {
        let now = self.now;
        let st = &mut self.streams[s];
        let i = st.next;
        st.next += 1;
        st.scheduled = false;
        st.last_issue = now;
        st.issued[i] = now;
        let r = st.recs[i];
        let id = (s as u64) << 32 | i as u64;
        let op = match r.op {
            TraceOp::Read => Op::Read,
            TraceOp::Write => Op::Write,
            TraceOp::Trim => Op::Trim,
            TraceOp::Flush => Op::Flush,
        };
        self.outstanding += 1;
        self.stats
            .depth
            .mark_depth(self.outstanding.min(u64::from(u32::MAX)) as u32);
        self.stats.depth.mark_submit(1);
        if op != Op::Flush && r.len == 0 {
            // moves nothing: done at once, as the server answers it
            self.cx.done(id, now, Breakdown::default());
        } else {
            let (mut offset, mut len) = (r.offset, r.len);
            if op == Op::Flush {
                (offset, len) = (0, 0);
            } else if r.offset.saturating_add(r.len) > self.capacity {
                (offset, len) = storlab_trace::remap(
                    r.offset,
                    r.len,
                    self.capacity,
                    RemapMode::Wrap { align: self.align },
                )
                .unwrap_or((0, r.len.min(self.capacity)));
                self.remapped += 1;
            }
            self.device.submit(
                now,
                DevRequest {
                    id,
                    op,
                    offset,
                    len,
                    fua: r.fua,
                    placement: None,
                },
                &mut self.cx,
            );
        }
        self.drain_cx();
        self.try_schedule(s);
    }

    fn drain_cx(&mut self) {
        let now = self.now;
        let wakes = std::mem::take(&mut self.cx.wakeups);
        for &(w, tok) in &wakes {
            self.push(w.max(now), tok);
        }
        self.cx.wakeups = wakes;
        self.cx.wakeups.clear();
        let done = std::mem::take(&mut self.cx.completions);
        for c in &done {
            let (s, i) = ((c.id >> 32) as usize, (c.id & 0xffff_ffff) as usize);
            let Some(st) = self.streams.get(s) else {
                continue;
            };
            let Some(r) = st.recs.get(i) else { continue };
            let issued = st.issued[i];
            let at = c.at.max(issued);
            let op = match r.op {
                TraceOp::Read => Op::Read,
                TraceOp::Write => Op::Write,
                TraceOp::Trim => Op::Trim,
                TraceOp::Flush => Op::Flush,
            };
            self.stats.record(op, 0, at - issued, r.len, &c.breakdown);
            self.push(at, DONE | c.id);
        }
        self.cx.completions = done;
        self.cx.completions.clear();
    }

    fn done(&mut self, s: usize, i: usize) {
        let now = self.now;
        self.outstanding -= 1;
        self.stats.depth.mark_complete(1);
        self.completed += 1;
        self.end = self.end.max(now);
        let st = &mut self.streams[s];
        let rank = st.recs[i].rank as usize;
        st.done_at[rank] = now;
        while st.prefix < st.done_at.len() && st.done_at[st.prefix] != NOT_DONE {
            let m = st.latest[st.prefix].max(st.done_at[st.prefix]);
            st.latest.push(m);
            st.prefix += 1;
        }
        self.try_schedule(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storlab_model::devices::fixed::FixedLatency;
    use storlab_trace::closed::load_from;

    fn trace(lines: &str) -> ClosedTrace {
        let text = format!(
            "{} {}\n{}\n{lines}",
            storlab_trace::closed::MAGIC,
            storlab_trace::closed::VERSION,
            storlab_trace::closed::COLUMNS
        );
        load_from(text.as_bytes(), "t").expect("a valid trace")
    }

    fn run(t: &ClosedTrace, lat: u64) -> Prediction {
        let dev = Box::new(FixedLatency::new(lat, 1 << 30));
        replay(t, dev, &ClosedOptions::default(), "t", &mut |_, _| {})
            .unwrap()
            .0
    }

    #[test]
    fn a_chain_finishes_sooner_on_a_faster_device_by_the_device_time_only() {
        // QD1 chain recorded on a 100 us device with 20 us think time
        let mut lines = String::new();
        for i in 0..10u64 {
            let a = i * 120_000;
            let think = if i == 0 { 0 } else { 20_000 };
            lines += &format!(
                "0 0 {i} {i} read {} 4096 0 {a} {} {} {think}\n",
                i * 4096,
                a + 100_000,
                a + 100_000
            );
        }
        let t = trace(&lines);
        let same = run(&t, 100_000);
        assert_eq!(same.runtime_s, same.recorded_runtime_s, "{same:?}");
        let fast = run(&t, 10_000);
        let ratio = fast.runtime_s / same.runtime_s;
        assert!((fast.predicted_rate(100.0) - 100.0 / ratio).abs() < 1e-9);
        // 10 * 10 us of device + 9 * 20 us of think
        assert!((fast.runtime_s - 280e-6).abs() < 1e-9, "{fast:?}");
        assert!(fast.requests_per_s > same.requests_per_s * 3.0);
    }

    #[test]
    fn concurrency_is_kept_and_dependencies_wait() {
        // two requests in flight together, then one after both
        let t = trace(
            "0 0 0 0 write 0 4096 0 0 50 50 0\n\
             0 1 1 0 write 8192 4096 0 10 60 60 10\n\
             0 0 2 2 flush 0 0 0 70 80 80 10\n",
        );
        let p = run(&t, 1000);
        // both writes overlap: 10 + 1000, then the flush 10 after, 1000 more
        assert_eq!(p.runtime_s, (1010 + 10 + 1000) as f64 / 1e9, "{p:?}");
    }

    #[test]
    fn replays_are_deterministic_and_streams_independent() {
        let t = trace(
            "0 0 0 0 read 0 4096 0 0 100 100 0\n\
             0 0 1 1 read 0 4096 0 200 300 300 100\n\
             1 0 0 0 read 4096 4096 0 5 105 105 5\n\
             1 0 1 1 read 4096 4096 0 400 500 500 295\n",
        );
        let a = run(&t, 50);
        let b = run(&t, 50);
        assert_eq!(a, b);
        // stream 1: 5 + 50 + 295 + 50
        assert_eq!(a.runtime_s, 400e-9, "{a:?}");
    }
}
