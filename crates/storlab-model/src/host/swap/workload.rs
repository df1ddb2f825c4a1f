//! What the swap model runs and reports: a memory-access workload and its
//! access pattern, a run's errors, and its measurements.

use serde::Serialize;

use crate::config::ConfigError;

/// Which page of its part a thread accesses next (after the touch).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Any page of the part, uniformly at random (thrash).
    Uniform,
    /// The part's pages in order, over and over (a sweep, as a stencil or
    /// a blocked matrix product streams its arrays).
    Sequential,
    /// A hot set: `accesses` of the accesses go to the first `pages` of
    /// the part (fractions, 0 < x <= 1), uniformly; the rest to the others.
    Hot {
        /// Fraction of the part's pages that are hot.
        pages: f64,
        /// Fraction of the accesses that go to them.
        accesses: f64,
    },
    /// Alternating-direction sweeps (the ADI solvers BT and SP, LU's
    /// SSOR): even passes over the part go in page order; odd passes take
    /// `run` pages at every `stride` pages (one row of each plane of a
    /// 3-D array, the direction across planes), then the next row of each
    /// plane, until every page is visited. `stride` is a multiple of
    /// `run`; pages past the last whole stride are visited in order.
    Adi {
        /// Pages visited together (a row of a plane), at least 1.
        run: u64,
        /// Pages from one plane to the next, a multiple of `run`.
        stride: u64,
    },
    /// A sequential stream mixed with random accesses: with probability
    /// `random` an access goes to a page of the part's last `region`
    /// fraction chosen uniformly (a gathered vector, scattered buckets,
    /// a reused matrix) and stores with the workload's `write_fraction`;
    /// otherwise to the stream's next page, which goes round the rest of
    /// the part in order (the whole part when `region` is 1), and stores
    /// with probability `stream_store`.
    Stream {
        /// Fraction of the accesses that are random, 0 to 1.
        random: f64,
        /// Fraction of the part the random accesses go to, (0, 1].
        region: f64,
        /// Fraction of the stream's accesses that store, 0 to 1.
        stream_store: f64,
    },
    /// A sequential stream mixed with a scatter into buckets (a bucket
    /// sort's distribution pass, NPB IS's `rank`: each key read in order
    /// is stored at its bucket's next free place, `key_buff2[bucket_ptrs[k
    /// >> shift]++] = k`, and each OpenMP thread fills its own range of
    /// every bucket): with probability `random` an access goes to the next
    /// page of one of `fronts` equal buckets of the part's last `region`
    /// fraction, the bucket chosen uniformly (a bucket's pages are written
    /// in order from its start, wrapping round), and stores with the
    /// workload's `write_fraction`; otherwise to the stream's next page, as
    /// `Stream`'s, read only. So at most `fronts` pages of the region are
    /// being filled at a time, where `Stream` goes anywhere in it.
    Scatter {
        /// Fraction of the accesses that go to the buckets, 0 to 1.
        random: f64,
        /// Fraction of the part the buckets cover, (0, 1].
        region: f64,
        /// Buckets (write fronts), at least 1.
        fronts: u32,
    },
    /// Sweeps that go forward and back: even passes over the part in page
    /// order, odd passes in reverse (LU's SSOR: the lower-triangular
    /// sweep, then the upper one from the far corner back).
    Zigzag,
}

impl Pattern {
    /// The index within a part of `n` pages of the `k`-th access of a
    /// pass-structured pattern (`Sequential`, `Adi`); for the others the
    /// index in page order.
    pub(super) fn sweep_index(self, k: u64, n: u64) -> u64 {
        let p = k % n;
        match self {
            Pattern::Zigzag if (k / n) % 2 == 1 => n - 1 - p,
            Pattern::Adi { run, stride } if (k / n) % 2 == 1 && stride <= n => {
                let planes = n / stride;
                let whole = planes * stride;
                if p >= whole {
                    return p;
                }
                // block b of `run` pages: plane b % planes, row b / planes
                let (b, within) = (p / run, p % run);
                (b % planes) * stride + (b / planes) * run + within
            }
            _ => p,
        }
    }

    /// Check the pattern's parameters.
    pub(super) fn check(self) -> Result<(), SwapError> {
        let frac = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        match self {
            Pattern::Hot { pages, accesses } => {
                if !frac(pages) || pages == 0.0 || !frac(accesses) {
                    return Err(SwapError::Workload(format!(
                        "hot set: pages {pages} must be in (0, 1] and accesses {accesses} in [0, 1]"
                    )));
                }
            }
            Pattern::Adi { run, stride } => {
                if run == 0 || stride < run || stride % run != 0 {
                    return Err(SwapError::Workload(format!(
                        "adi: run {run} must be at least 1 and stride {stride} a multiple of it"
                    )));
                }
            }
            Pattern::Stream {
                random,
                region,
                stream_store,
            } => {
                if !frac(random) || !frac(region) || region == 0.0 || !frac(stream_store) {
                    return Err(SwapError::Workload(format!(
                        "stream: random {random} and stream_store {stream_store} must be in [0, 1] and region {region} in (0, 1]"
                    )));
                }
            }
            Pattern::Scatter {
                random,
                region,
                fronts,
            } => {
                if !frac(random) || !frac(region) || region == 0.0 || fronts == 0 {
                    return Err(SwapError::Workload(format!(
                        "scatter: random {random} must be in [0, 1], region {region} in (0, 1] and fronts {fronts} at least 1"
                    )));
                }
            }
            Pattern::Uniform | Pattern::Sequential | Pattern::Zigzag => {}
        }
        Ok(())
    }
}

/// A memory-access workload: `threads` threads, each with its own part of
/// an array of `pages_per_thread` pages; each first touches (writes) every
/// page of its part in order, then, after all have, makes `accesses`
/// accesses to pages of its part chosen by `pattern`, each a store with
/// probability `write_fraction`. `cpu_ns` of computation follow each
/// access.
#[derive(Clone, Debug)]
pub struct MemWorkload {
    /// Threads.
    pub threads: u32,
    /// Pages of each thread's part.
    pub pages_per_thread: u64,
    /// Accesses per thread after the touch.
    pub accesses: u64,
    /// Which pages they access.
    pub pattern: Pattern,
    /// Fraction of the accesses that store (dirty the page), 0 to 1.
    pub write_fraction: f64,
    /// Computation after each access, ns.
    pub cpu_ns: u64,
    /// DRAM bytes the computation after an access reads (a store writes
    /// as many back): a page visit that streams its page, 4,096; an
    /// update of one integer, a cache line (64). With the swap
    /// configuration's `dram_bytes_per_s` it bounds the computation's
    /// time from below; 0: no DRAM traffic counted.
    pub bytes_per_access: u64,
    /// Seed of the access pattern.
    pub seed: u64,
}

/// Errors of a swap run.
#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    /// The configuration cannot run.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The workload does not fit.
    #[error("workload: {0}")]
    Workload(String),
    /// Nothing can make progress (no page reclaimable, no IO in flight).
    #[error("swap run stuck at {0} ns: threads wait for memory, nothing is reclaimable (swap area full?) and no IO is in flight")]
    Stuck(u64),
}

/// What a run measured (the random-access phase only, apart from
/// `touch_ns`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct MemReport {
    /// Random accesses made.
    pub accesses: u64,
    /// Duration of the random-access phase, ns.
    pub elapsed_ns: u64,
    /// Duration of the touch phase, ns.
    pub touch_ns: u64,
    /// Accesses per second over all threads.
    pub accesses_per_s: f64,
    /// Faults that read from the swap device.
    pub major_faults: u64,
    /// Faults served from the swap cache (read ahead or under writeback).
    pub minor_faults: u64,
    /// Mean time of a major fault, entry to mapped, ns.
    pub major_fault_ns: f64,
    /// Read requests to the swap device.
    pub swap_reads: u64,
    /// Pages read (faulting and read ahead).
    pub pages_read: u64,
    /// Pages read ahead that were then faulted (before eviction).
    pub readahead_hits: u64,
    /// Write requests to the swap device.
    pub swap_writes: u64,
    /// Pages written out.
    pub pages_written: u64,
    /// Pages reclaimed by kswapd.
    pub kswapd_reclaimed: u64,
    /// Pages reclaimed by faulting threads (direct reclaim).
    pub direct_reclaimed: u64,
    /// Direct reclaim batches.
    pub direct_reclaims: u64,
    /// TLB shootdowns.
    pub shootdowns: u64,
    /// Time threads lost to other CPUs' shootdown IPIs, ns (summed).
    pub ipi_ns: u64,
    /// Mean pages per write request.
    pub pages_per_write: f64,
    /// Swap requests by the requests in flight when each was issued
    /// (itself included), in fio's IO-depth buckets
    /// ([`crate::units::depth_bucket`]).
    pub io_depths: [u64; 7],
    /// Accesses whose computation took its DRAM traffic's time at its
    /// share of the host's bandwidth rather than its CPU time.
    pub bandwidth_bound: u64,
}
