//! What a region reports: [`HybridStats`] counters and [`Latency`]
//! summaries.

use serde::Serialize;

/// Counters and fault times of a region so far.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HybridStats {
    /// Missing-page faults resolved (a page faulted by several threads at
    /// once counts once).
    pub faults: u64,
    /// Pages never written to the device, filled with zeros: each page's
    /// first touch, and a touch after one of `zero_evictions`.
    pub zero_fills: u64,
    /// Pages read from the device.
    pub device_reads: u64,
    /// Evicted pages that had changed, written to the device.
    pub device_writes: u64,
    /// Evicted pages unchanged since they were read (no write).
    pub clean_evictions: u64,
    /// Of those, pages evicted while still zero-filled and never written
    /// to the device (a thread faulted one in, then lost the CPU before
    /// writing to it): the next touch fills zeros again, so `zero_fills`
    /// counts each distinct page once plus each of these.
    pub zero_evictions: u64,
    /// Most pages resident at once.
    pub resident_peak: u64,
    /// The DRAM bound, in pages.
    pub dram_pages: u64,
    /// Writers that waited for their page's eviction.
    pub write_protect_waits: u64,
    /// Device-read faults: from the handler reading the fault to the page
    /// in place, µs (mean, p50, p99).
    pub fault_us: Latency,
    /// The model's latency for the same reads, µs.
    pub model_read_us: Latency,
}

/// Mean and percentiles, µs.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Latency {
    pub(crate) fn of(h: &hdrhistogram::Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            mean: h.mean() / 1000.0,
            p50: h.value_at_quantile(0.5) as f64 / 1000.0,
            p99: h.value_at_quantile(0.99) as f64 / 1000.0,
        }
    }
}
