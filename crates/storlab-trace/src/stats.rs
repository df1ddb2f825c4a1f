//! Summary statistics of a trace, computed in one streaming pass with
//! bounded memory.

use crate::error::TraceError;
use crate::{TraceOp, TraceRecord};
use serde::Serialize;
use std::fmt;

/// Count and bytes of one operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCount {
    /// Requests.
    pub count: u64,
    /// Bytes (0 for flushes).
    pub bytes: u64,
}

/// One bucket of the request-size histogram: sizes in
/// `[min_bytes, max_bytes]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// Smallest size in the bucket (a power of two, or 0).
    pub min_bytes: u64,
    /// Largest size in the bucket.
    pub max_bytes: u64,
    /// Requests in it.
    pub count: u64,
}

/// Mean and percentiles of a set of durations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Distribution {
    /// Number of samples.
    pub samples: u64,
    /// Exact mean.
    pub mean_ns: f64,
    /// Median (within 0.05 %, rounded down; exact below 2048 ns).
    pub p50_ns: u64,
    /// 99th percentile (same precision).
    pub p99_ns: u64,
    /// Largest sample (exact).
    pub max_ns: u64,
}

/// What a trace contains.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TraceStats {
    /// Requests.
    pub count: u64,
    /// Bytes moved or trimmed, all operations.
    pub bytes: u64,
    /// Reads.
    pub read: OpCount,
    /// Writes.
    pub write: OpCount,
    /// Trims.
    pub trim: OpCount,
    /// Flushes.
    pub flush: OpCount,
    /// Sizes of reads, writes and trims, by power of two; empty buckets are
    /// left out.
    pub size_histogram: Vec<SizeBucket>,
    /// Fraction of reads, writes and trims that start where the previous
    /// request of the same operation on the same device ended.
    pub sequential_fraction: f64,
    /// Time between consecutive arrivals.
    pub interarrival: Distribution,
    /// Latencies recorded in the trace, if any record has one.
    pub recorded_latency: Option<Distribution>,
    /// Time from the first to the last arrival.
    pub duration_ns: u64,
    /// Lowest offset touched by a read, write or trim.
    pub min_offset: u64,
    /// End of the highest range touched.
    pub max_end: u64,
    /// `max_end - min_offset`.
    pub address_span_bytes: u64,
    /// Distinct devices seen (up to 4096 are tracked).
    pub devices: u64,
}

/// A log-linear histogram: 2048 sub-buckets per power of two, so any value
/// is known to within 1/2048 (0.05 %) and values below 2048 exactly, in a
/// fixed 864 KiB whatever the number of samples.
struct LogHistogram {
    counts: Vec<u64>,
    samples: u64,
    sum: u128,
    max: u64,
}

const SUB_BITS: u32 = 11;
const SUB: u64 = 1 << SUB_BITS;

impl LogHistogram {
    fn new() -> Self {
        LogHistogram {
            counts: vec![0; (64 - SUB_BITS as usize + 1) * SUB as usize],
            samples: 0,
            sum: 0,
            max: 0,
        }
    }

    fn index(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros(); // >= SUB_BITS
        let shift = exp - SUB_BITS;
        let sub = (v >> shift) - SUB; // 0..SUB
        ((shift as u64 + 1) * SUB + sub) as usize
    }

    /// Smallest value that falls into bucket `i`.
    fn lower(i: usize) -> u64 {
        let i = i as u64;
        if i < SUB {
            return i;
        }
        let shift = i / SUB - 1;
        (SUB + i % SUB) << shift
    }

    fn add(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.samples += 1;
        self.sum += v as u128;
        self.max = self.max.max(v);
    }

    /// Nearest-rank percentile: the lower bound of the bucket holding the
    /// sample of rank `ceil(q * n)` (the exact maximum for the top rank).
    fn percentile(&self, q: f64) -> u64 {
        if self.samples == 0 {
            return 0;
        }
        let rank = ((q * self.samples as f64).ceil() as u64).clamp(1, self.samples);
        if rank == self.samples {
            return self.max;
        }
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::lower(i).min(self.max);
            }
        }
        self.max
    }

    fn summary(&self) -> Distribution {
        Distribution {
            samples: self.samples,
            mean_ns: if self.samples == 0 {
                0.0
            } else {
                self.sum as f64 / self.samples as f64
            },
            p50_ns: self.percentile(0.50),
            p99_ns: self.percentile(0.99),
            max_ns: self.max,
        }
    }
}

/// Reads every record and summarises them. Stops at the first error.
pub fn stats<I>(records: I) -> Result<TraceStats, TraceError>
where
    I: IntoIterator<Item = Result<TraceRecord, TraceError>>,
{
    let mut s = TraceStats {
        min_offset: u64::MAX,
        ..TraceStats::default()
    };
    let mut sizes = [0u64; 66];
    let mut gaps = LogHistogram::new();
    let mut lats = LogHistogram::new();
    let mut first: Option<u64> = None;
    let mut prev_time = 0u64;
    // (device, op) → end of the previous request; few entries in practice,
    // bounded to keep memory fixed.
    let mut last_end: Vec<((u32, TraceOp), u64)> = Vec::new();
    let mut devices: Vec<u32> = Vec::new();
    let mut data_requests = 0u64;
    let mut sequential = 0u64;
    for r in records {
        let r = r?;
        s.count += 1;
        s.bytes = s.bytes.saturating_add(r.len);
        let c = match r.op {
            TraceOp::Read => &mut s.read,
            TraceOp::Write => &mut s.write,
            TraceOp::Trim => &mut s.trim,
            TraceOp::Flush => &mut s.flush,
        };
        c.count += 1;
        c.bytes = c.bytes.saturating_add(r.len);
        match first {
            None => first = Some(r.time_ns),
            Some(_) => gaps.add(r.time_ns.saturating_sub(prev_time)),
        }
        prev_time = r.time_ns;
        if let Some(l) = r.recorded_latency_ns {
            lats.add(l);
        }
        if let Err(i) = devices.binary_search(&r.device) {
            if devices.len() < 4096 {
                devices.insert(i, r.device);
            }
        }
        if r.op != TraceOp::Flush {
            data_requests += 1;
            let bucket = if r.len == 0 {
                0
            } else {
                64 - r.len.leading_zeros() as usize
            };
            sizes[bucket] += 1;
            s.min_offset = s.min_offset.min(r.offset);
            s.max_end = s.max_end.max(r.end());
            let key = (r.device, r.op);
            match last_end.iter().position(|(k, _)| *k == key) {
                Some(i) => {
                    if last_end[i].1 == r.offset {
                        sequential += 1;
                    }
                    last_end[i].1 = r.end();
                }
                None if last_end.len() < 4096 * 3 => last_end.push((key, r.end())),
                None => {}
            }
        }
    }
    s.size_histogram = sizes
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .map(|(b, c)| SizeBucket {
            min_bytes: if b == 0 { 0 } else { 1u64 << (b - 1) },
            max_bytes: match b {
                0 => 0,
                64 => u64::MAX,
                _ => (1u64 << b) - 1,
            },
            count: *c,
        })
        .collect();
    s.sequential_fraction = if data_requests == 0 {
        0.0
    } else {
        sequential as f64 / data_requests as f64
    };
    s.interarrival = gaps.summary();
    s.recorded_latency = (lats.samples > 0).then(|| lats.summary());
    s.duration_ns = first.map_or(0, |f| prev_time - f);
    if s.min_offset == u64::MAX {
        s.min_offset = 0;
    }
    s.address_span_bytes = s.max_end.saturating_sub(s.min_offset);
    s.devices = devices.len() as u64;
    Ok(s)
}

/// Formats a byte count with a binary unit (`4 KiB`, `1.5 MiB`).
fn bytes(b: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 || v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}

/// Formats nanoseconds with a fitting unit.
fn time(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

impl TraceStats {
    /// The statistics as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl fmt::Display for TraceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |n: u64| {
            if self.count == 0 {
                0.0
            } else {
                100.0 * n as f64 / self.count as f64
            }
        };
        writeln!(f, "requests        {}", self.count)?;
        writeln!(f, "bytes           {}", bytes(self.bytes))?;
        writeln!(f, "duration        {}", time(self.duration_ns as f64))?;
        writeln!(f, "devices         {}", self.devices)?;
        writeln!(
            f,
            "address span    {} ({} .. {})",
            bytes(self.address_span_bytes),
            self.min_offset,
            self.max_end
        )?;
        writeln!(
            f,
            "sequential      {:.1} %",
            100.0 * self.sequential_fraction
        )?;
        writeln!(f)?;
        writeln!(f, "op         requests      share        bytes")?;
        for (name, c) in [
            ("read", self.read),
            ("write", self.write),
            ("trim", self.trim),
            ("flush", self.flush),
        ] {
            writeln!(
                f,
                "{name:<8} {:>10} {:>8.1} % {:>12}",
                c.count,
                pct(c.count),
                bytes(c.bytes)
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "{:<22} {:>9} {:>9} {:>9} {:>9}",
            "", "mean", "p50", "p99", "max"
        )?;
        let mut dist = |name: &str, d: &Distribution| {
            writeln!(
                f,
                "{name:<22} {:>9} {:>9} {:>9} {:>9}",
                time(d.mean_ns),
                time(d.p50_ns as f64),
                time(d.p99_ns as f64),
                time(d.max_ns as f64)
            )
        };
        dist("inter-arrival", &self.interarrival)?;
        if let Some(l) = &self.recorded_latency {
            dist("recorded latency", l)?;
        }
        if !self.size_histogram.is_empty() {
            writeln!(f)?;
            writeln!(f, "size                      requests      share")?;
            for b in &self.size_histogram {
                let range = if b.min_bytes == 0 {
                    "0 B".to_string()
                } else {
                    format!(
                        "{} .. < {}",
                        bytes(b.min_bytes),
                        bytes(b.max_bytes.saturating_add(1))
                    )
                };
                writeln!(f, "{range:<24} {:>10} {:>8.1} %", b.count, pct(b.count))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_round_trip() {
        for v in [
            0u64,
            1,
            255,
            2047,
            2048,
            2049,
            4097,
            20_000,
            123_456_789,
            u64::MAX,
        ] {
            let i = LogHistogram::index(v);
            let lo = LogHistogram::lower(i);
            assert!(lo <= v, "{v}: {lo}");
            assert!(v - lo <= v / 2048, "{v}: {lo}");
            if i + 1 < (64 - SUB_BITS as usize + 1) * SUB as usize {
                assert!(LogHistogram::lower(i + 1) > v, "{v}");
            }
        }
        assert_eq!(LogHistogram::lower(LogHistogram::index(20_000)), 20_000);
        assert_eq!(LogHistogram::lower(LogHistogram::index(1_000_000)), 999_936);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut h = LogHistogram::new();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.percentile(0.5), 50);
        assert_eq!(h.percentile(0.99), 99);
        assert_eq!(h.summary().max_ns, 100);
        assert_eq!(h.summary().mean_ns, 50.5);
        // The top rank is the exact maximum, not its bucket's lower bound.
        h.add(1_000_001);
        assert_eq!(h.percentile(1.0), 1_000_001);
    }

    #[test]
    fn byte_units() {
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(1536 * 1024), "1.50 MiB");
        assert_eq!(bytes(17), "17 B");
    }
}
