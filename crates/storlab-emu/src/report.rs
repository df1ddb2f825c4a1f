//! What the server measured: counters, the model's latencies, lateness of
//! replies against their deadlines, the latency breakdown, durability
//! events and the device's own report.

use std::fmt;
use std::sync::Mutex;

use hdrhistogram::Histogram;
use serde::Serialize;
use storlab_model::breakdown::{COMPONENTS, NCOMP};
use storlab_model::{Breakdown, DeviceReport, Op};

use crate::clock::ClockSource;
use crate::durability::DurabilityStats;

/// Percentiles of a latency distribution, in nanoseconds.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LatencySummary {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest.
    pub max_ns: u64,
}

impl LatencySummary {
    /// The summary of samples in ns.
    pub fn of_samples(ns: &[u64]) -> Self {
        let mut h = hist();
        for &v in ns {
            h.saturating_record(v.max(1));
        }
        Self::of(&h)
    }

    fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        LatencySummary {
            count: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// Counters and latencies of one operation type.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct OpReport {
    /// `read`, `write`, `trim` (trim and write-zeroes) or `flush`.
    pub op: String,
    /// Requests carried out (errors included).
    pub requests: u64,
    /// Bytes read or written.
    pub bytes: u64,
    /// Requests that ended in an error reply.
    pub errors: u64,
    /// Completion time minus arrival as the model gave it.
    pub model_latency: LatencySummary,
    /// Reply time minus deadline (the emulator's error).
    pub lateness: LatencySummary,
}

/// How the server kept time.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ClockReport {
    /// TSC or CLOCK_MONOTONIC.
    pub source: ClockSource,
    /// Calibrated TSC frequency (0 if unused).
    pub tsc_hz: f64,
    /// CLOCK_MONOTONIC minus the clock at the end of the run.
    pub drift_ns: i64,
    /// The adaptive spin window at the end (it widens when sleeps end
    /// late).
    pub spin_threshold_ns: u64,
    /// The reactor ran `SCHED_FIFO` (it does while replies wait for
    /// deadlines, when the process may).
    pub realtime: bool,
    /// `on`, or `off: ` and why (see `ServeOptions::wake_assist`).
    pub wake_assist: String,
    /// Times the wake assist switched idle CPUs to polling.
    pub wake_assist_switches: u64,
}

/// What the recorder wrote.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RecordReport {
    /// The trace file.
    pub path: std::path::PathBuf,
    /// Its format.
    pub format: String,
    /// Records written.
    pub written: u64,
    /// Records the format cannot hold, or later than the reorder window.
    pub dropped: u64,
    /// Records written with rounded times or widened ranges.
    pub inexact: u64,
    /// The error that stopped the writer, if any.
    pub error: Option<String>,
}

impl RecordReport {
    pub(crate) fn failed(why: &str) -> Self {
        RecordReport {
            path: Default::default(),
            format: String::new(),
            written: 0,
            dropped: 0,
            inexact: 0,
            error: Some(why.into()),
        }
    }
}

/// What the availability limits did.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LimitsReport {
    /// Connections closed at once on arrival: every serving slot was
    /// taken (no longer happens: a newcomer evicts, see `evicted`).
    pub refused_connections: u64,
    /// Served connections closed to make room for a newcomer when every
    /// serving slot was taken (the idlest of the newcomer's own peer if
    /// that peer was served, else of the peer holding the most slots).
    pub evicted: u64,
    /// Handshakes cut to make room for a newcomer (every handshake slot
    /// was taken; the one that had lasted longest goes).
    pub handshakes_cut: u64,
    /// Connections whose handshake was refused at its end because every
    /// serving slot was taken meanwhile.
    pub refused_at_go: u64,
    /// Handshakes cut at the handshake deadline.
    pub handshake_timeouts: u64,
    /// Connections closed after the idle timeout (nothing sent, nothing
    /// in flight; or replies queued and none taken).
    pub idle_closed: u64,
    /// Connections gone (hung up or reset) with work left: the input
    /// they had sent was dropped unread.
    pub dropped_dead: u64,
    /// Times a connection's input was held because of the reply-buffer
    /// budgets.
    pub throttled: u64,
    /// Reply bytes buffered now (queued to send, or read for requests in
    /// flight), over every connection.
    pub reply_buffer_bytes: u64,
    /// The most reply bytes buffered at once.
    pub reply_buffer_peak_bytes: u64,
    /// Work of clients gone still in the model now (bytes, as below).
    pub gone_work_bytes: u64,
    /// The most work of clients gone that was still in the model at once
    /// (read reply bytes and trim or write-zeroes pieces, counted against
    /// the shared half of the memory budget until the model ends them).
    pub gone_work_peak_bytes: u64,
    /// Times the allocator was asked to give freed memory back (what
    /// clients hold fell by a sixteenth of the budget).
    pub memory_trims: u64,
    /// Times a connection's turn ended with requests left in its buffer
    /// for its next turn (at most 32 requests or 32 KiB of input per
    /// turn, so one client's flood waits between others' requests).
    pub turns_cut: u64,
}

/// The server's report, returned by `serve` and printed on exit.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ServeReport {
    /// Seconds from start to the report.
    pub elapsed_s: f64,
    /// Export size in bytes.
    pub size: u64,
    /// The store (`memory` or `file:PATH`).
    pub store: String,
    /// Host bytes holding data.
    pub allocated_bytes: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Connections that ended in the handshake (aborted or rejected).
    pub handshake_failures: u64,
    /// Requests refused at the protocol boundary (bad range, flags...).
    pub protocol_errors: u64,
    /// Connections closed for a protocol violation (bad magic...).
    pub protocol_violations: u64,
    /// `NBD_CMD_BLOCK_STATUS` queries answered (not timed by the model).
    pub block_status_queries: u64,
    /// Per operation.
    pub ops: Vec<OpReport>,
    /// Lateness over all requests.
    pub lateness: LatencySummary,
    /// Round trips of QD1 4 KiB reads from a busy-polling client to a
    /// zero-latency device served like this one, measured at start
    /// (`ServeOptions::floor_probe`; see the `probe` module).
    pub transport_floor: Option<LatencySummary>,
    /// Arrivals moved forward to keep the model's time nondecreasing.
    pub clamped_arrivals: u64,
    /// Mean time per request in each model component, ns.
    pub breakdown_mean_ns: Vec<(String, f64)>,
    /// Power cuts and what they discarded.
    pub durability: DurabilityStats,
    /// What the availability limits did ([`crate::ServeOptions`]).
    pub limits: LimitsReport,
    /// The device's report at the end.
    pub device: DeviceReport,
    /// Timekeeping.
    pub clock: ClockReport,
    /// The trace recorded (final report only).
    pub record: Option<RecordReport>,
}

impl fmt::Display for ServeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = |ns: u64| ns as f64 / 1000.0;
        writeln!(
            f,
            "storlab serve: {:.1} s, {} connection(s), size {} B, store {} ({} B allocated)",
            self.elapsed_s, self.connections, self.size, self.store, self.allocated_bytes
        )?;
        for o in self.ops.iter().filter(|o| o.requests > 0) {
            writeln!(
                f,
                "  {:<5} n={:<9} bytes={:<12} errors={:<5} model mean={:.1}us p99={:.1}us  late p50={:.2}us p99={:.2}us max={:.1}us",
                o.op,
                o.requests,
                o.bytes,
                o.errors,
                o.model_latency.mean_ns / 1000.0,
                us(o.model_latency.p99_ns),
                us(o.lateness.p50_ns),
                us(o.lateness.p99_ns),
                us(o.lateness.max_ns)
            )?;
        }
        writeln!(
            f,
            "  lateness (reply - deadline): p50={:.2}us p90={:.2}us p99={:.2}us p99.9={:.2}us max={:.1}us over {} replies",
            us(self.lateness.p50_ns),
            us(self.lateness.p90_ns),
            us(self.lateness.p99_ns),
            us(self.lateness.p999_ns),
            us(self.lateness.max_ns),
            self.lateness.count
        )?;
        if let Some(fl) = &self.transport_floor {
            writeln!(
                f,
                "  transport floor (zero-latency device, busy-polling QD1 4 KiB reads, {} round trips): mean={:.2}us p50={:.2}us p99={:.2}us; a client that sleeps adds its wake-up",
                fl.count,
                fl.mean_ns / 1000.0,
                us(fl.p50_ns),
                us(fl.p99_ns)
            )?;
        }
        let bd: Vec<String> = self
            .breakdown_mean_ns
            .iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(k, v)| format!("{k}={:.2}us", v / 1000.0))
            .collect();
        if !bd.is_empty() {
            writeln!(f, "  breakdown (mean): {}", bd.join(" "))?;
        }
        if let Some(r) = &self.record {
            writeln!(
                f,
                "  recorded {} requests to {} ({}), {} dropped, {} inexact{}",
                r.written,
                r.path.display(),
                r.format,
                r.dropped,
                r.inexact,
                r.error
                    .as_deref()
                    .map(|e| format!(", error: {e}"))
                    .unwrap_or_default()
            )?;
        }
        writeln!(
            f,
            "  clock {:?} {:.3} GHz, drift {} ns, spin window {:.0} us, reactor {}, wake assist {} ({} switches)",
            self.clock.source,
            self.clock.tsc_hz / 1e9,
            self.clock.drift_ns,
            self.clock.spin_threshold_ns as f64 / 1000.0,
            if self.clock.realtime {
                "SCHED_FIFO while waiting"
            } else {
                "normal priority"
            },
            self.clock.wake_assist,
            self.clock.wake_assist_switches
        )?;
        writeln!(
            f,
            "  protocol errors={} violations={} handshake failures={} block status queries={} power cuts={} lost writes={} destaged={} host syncs={} (replies held for them: {})",
            self.protocol_errors,
            self.protocol_violations,
            self.handshake_failures,
            self.block_status_queries,
            self.durability.power_cuts,
            self.durability.lost_writes,
            self.durability.destaged_writes,
            self.durability.host_syncs,
            self.durability.held_for_host_sync
        )?;
        let l = &self.limits;
        writeln!(
            f,
            "  limits: refused={} (at go: {}) evicted={} handshakes cut={} handshake timeouts={} idle closed={} dropped dead={} throttled={} reply buffer peak={} MiB",
            l.refused_connections,
            l.refused_at_go,
            l.evicted,
            l.handshakes_cut,
            l.handshake_timeouts,
            l.idle_closed,
            l.dropped_dead,
            l.throttled,
            l.reply_buffer_peak_bytes >> 20
        )
    }
}

fn hist() -> Histogram<u64> {
    // 1 ns to 1000 s at 3 significant digits: constant, valid bounds.
    Histogram::new_with_bounds(1, 1_000_000_000_000, 3).expect("valid histogram bounds")
}

struct OpAcc {
    requests: u64,
    bytes: u64,
    errors: u64,
    model: Histogram<u64>,
    late: Histogram<u64>,
}

struct Inner {
    ops: Vec<OpAcc>,
    late: Histogram<u64>,
    breakdown: [u128; NCOMP],
    breakdown_n: u64,
    connections: u64,
    handshake_failures: u64,
    protocol_errors: u64,
    protocol_violations: u64,
    block_status: u64,
}

/// The server's running counters (one mutex; taken once per reply).
pub(crate) struct Stats {
    inner: Mutex<Inner>,
}

/// One finished request, as the statistics see it.
pub(crate) struct Sample<'a> {
    pub op: Op,
    pub bytes: u64,
    pub error: bool,
    pub model_ns: u64,
    pub late_ns: u64,
    pub breakdown: &'a Breakdown,
}

impl Stats {
    pub fn new() -> Self {
        let acc = || OpAcc {
            requests: 0,
            bytes: 0,
            errors: 0,
            model: hist(),
            late: hist(),
        };
        Stats {
            inner: Mutex::new(Inner {
                ops: (0..4).map(|_| acc()).collect(),
                late: hist(),
                breakdown: [0; NCOMP],
                breakdown_n: 0,
                connections: 0,
                handshake_failures: 0,
                protocol_errors: 0,
                protocol_violations: 0,
                block_status: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Account for replies sent (one lock for the lot).
    pub fn record_all<'a>(&self, samples: impl Iterator<Item = Sample<'a>>) {
        let mut g = self.lock();
        for s in samples {
            let o = &mut g.ops[s.op.index()];
            o.requests += 1;
            o.bytes += s.bytes;
            o.errors += s.error as u64;
            o.model.saturating_record(s.model_ns.max(1));
            o.late.saturating_record(s.late_ns.max(1));
            g.late.saturating_record(s.late_ns.max(1));
            for (acc, v) in g.breakdown.iter_mut().zip(s.breakdown.0.iter()) {
                *acc += *v as u128;
            }
            g.breakdown_n += 1;
        }
    }

    /// Forget the requests served so far (counts, model latency,
    /// lateness, breakdown), so the next report covers only what follows:
    /// a benchmark's measured phase after its preparation.
    pub fn reset_requests(&self) {
        let mut g = self.lock();
        for o in &mut g.ops {
            o.requests = 0;
            o.bytes = 0;
            o.errors = 0;
            o.model.reset();
            o.late.reset();
        }
        g.late.reset();
        g.breakdown = [0; NCOMP];
        g.breakdown_n = 0;
        g.block_status = 0;
    }

    pub fn connection(&self) {
        self.lock().connections += 1;
    }
    pub fn handshake_failure(&self) {
        self.lock().handshake_failures += 1;
    }
    pub fn protocol_error(&self) {
        self.lock().protocol_errors += 1;
    }
    pub fn protocol_violation(&self) {
        self.lock().protocol_violations += 1;
    }
    pub fn block_status(&self) {
        self.lock().block_status += 1;
    }

    /// Fill the counters part of a report.
    #[allow(clippy::too_many_arguments)]
    pub fn report(
        &self,
        elapsed_s: f64,
        size: u64,
        store: String,
        allocated_bytes: u64,
        clamped_arrivals: u64,
        durability: DurabilityStats,
        device: DeviceReport,
        clock: ClockReport,
    ) -> ServeReport {
        let g = self.lock();
        let names = ["read", "write", "trim", "flush"];
        let ops = g
            .ops
            .iter()
            .zip(names)
            .map(|(o, name)| OpReport {
                op: name.to_string(),
                requests: o.requests,
                bytes: o.bytes,
                errors: o.errors,
                model_latency: LatencySummary::of(&o.model),
                lateness: LatencySummary::of(&o.late),
            })
            .collect();
        let n = g.breakdown_n.max(1) as f64;
        let breakdown_mean_ns = COMPONENTS
            .iter()
            .map(|c| (c.name().to_string(), g.breakdown[*c as usize] as f64 / n))
            .collect();
        ServeReport {
            elapsed_s,
            size,
            store,
            allocated_bytes,
            connections: g.connections,
            handshake_failures: g.handshake_failures,
            protocol_errors: g.protocol_errors,
            protocol_violations: g.protocol_violations,
            block_status_queries: g.block_status,
            ops,
            lateness: LatencySummary::of(&g.late),
            transport_floor: None,
            clamped_arrivals,
            breakdown_mean_ns,
            durability,
            limits: LimitsReport::default(),
            device,
            clock,
            record: None,
        }
    }
}
