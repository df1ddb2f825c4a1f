//! Paging through Linux's swap path (docs/spec/hybrid.md, paging; the HASTE and
//! Moneta studies' thrash): threads touch pages of an anonymous memory
//! larger than DRAM, and the pages that do not fit live on a swap device,
//! which is any preset with its whole host stack.
//!
//! The mechanisms, after Linux 2.6.3x (the studies' kernels; `mm/memory.c`,
//! `mm/swap_state.c`, `mm/swapfile.c`, `mm/vmscan.c`, `mm/page_alloc.c`):
//!
//! - **Page fault** (`do_page_fault` → `handle_mm_fault`): exception entry,
//!   page-table walk and VMA lookup (`fault_ns`). A first touch gets a
//!   zeroed page (`do_anonymous_page`, `zero_page_ns`). A page still in
//!   the swap cache (read ahead, or under writeback) is a minor fault:
//!   the swap-cache lookup (`swapcache_ns`) and mapping (`map_ns`), no IO.
//!   Otherwise a major fault (`do_swap_page`): the faulting thread reads the
//!   page through the swap device's block layer and sleeps until it is in.
//!   A write fault on a page only this process maps frees its swap slot
//!   (`reuse_swap_page`): the page is dirty and needs a new slot when
//!   evicted again.
//! - **Swap-in read-ahead** (`swapin_readahead`, `valid_swaphandles`):
//!   the slots in use next to the faulting slot, within its aligned window
//!   of `2^page_cluster` slots, are read too (into the swap cache, not
//!   mapped), in ascending order, while pages can be had above the min
//!   watermark. Contiguous slots go to the device as one request (the
//!   block layer merges the bios); the faulting thread waits for the
//!   request holding its page. A swap device the CPU serves synchronously
//!   (`completion = "cpu"`: a RAM disk, whose driver takes bios directly
//!   and has no request queue) gets one request per page, reads and
//!   writes, as `swap_readpage`/`swap_writepage` submit them.
//! - **Reclaim** (`shrink_page_list`): the LRU is approximated by the clock
//!   over page frames (a referenced page gets a second chance, as
//!   `page_referenced` rotates it to the active list). A victim mapped by
//!   the process is unmapped (`try_to_unmap`: `unmap_ns`, and one TLB
//!   shootdown IPI round per page, `tlb_shootdown_ns`, 2.6 kernels flush per
//!   page, and `tlb_ipi_ns` on every thread then computing: an idle CPU
//!   leaves the process's TLB mask at its first IPI, lazy TLB mode); a
//!   dirty page (or one with no slot) gets a swap slot
//!   (`get_swap_page`, `swap_alloc_ns`) and is written out
//!   (`swap_writepage`) without waiting; a clean page with a valid slot is
//!   freed at once. With `young_flush`, the second chance to a referenced
//!   page also costs a shootdown (x86's `ptep_clear_flush_young` of 2.6
//!   kernels flushed the TLB when it cleared a set accessed bit).
//!   Up to `SWAP_CLUSTER_MAX` (32) pages per batch; the
//!   batch's writes to contiguous slots are one request.
//! - **kswapd** (`kswapd_threads` of them) wakes when free pages fall below
//!   the low watermark and reclaims in batches until free pages (counting
//!   pages whose writeback will free them) reach the high watermark.
//!   Watermarks follow `init_per_zone_wmark_min`: min =
//!   sqrt(16 × DRAM in KiB) KiB (128 KiB to 64 MiB) unless
//!   `min_free_kbytes` is set; low = 5/4 min, high = 3/2 min.
//! - **Direct reclaim**: an allocation that finds free pages at or below
//!   the min watermark reclaims a batch itself on the faulting thread's
//!   time, issues the writes and then waits until pages are free above
//!   min (`congestion_wait`: woken when writeback frees pages). While the
//!   swap device's queue is congested (`nr_requests`) a direct reclaimer
//!   may not write (`may_write_to_queue`; kswapd may, `PF_SWAPWRITE`):
//!   thrash's pages are all dirty, so it frees nothing and only waits
//!   (its fruitless scan is not simulated).
//! - **Swap slots** (`scan_swap_map`): allocated sequentially within a
//!   cluster of 256 free slots (`SWAPFILE_CLUSTER`); when no free cluster
//!   is left, the next free slot after the cursor. So swap-out is mostly
//!   sequential while swap-in is as random as the faults.
//!
//! Time: each thread has a hardware thread of its own (the 2.26 GHz host
//! runs 16 threads on 8 cores with two hardware threads each); kernel CPU
//! work is time on the thread that does it. The swap device's IO runs
//! through a [`Host`] built from the device preset's `[host]` with the
//! system-call entry and exit and the file system removed (a swap read is
//! issued by the fault handler, not by a system call); its cores, driver
//! lock, scheduler thread, spinning or sleeping all apply.
//!
//! Not modelled: contention on `zone->lru_lock` and `swap_lock`, NUMA
//! nodes (one pool of frames),
//! the active/inactive list split beyond the clock's second chance.
//!
//! The workload is a [`MemWorkload`]: threads that each touch their own
//! part of an array and then access it by a [`Pattern`] (uniform, a
//! sequential sweep, a hot set), storing with a given probability, with
//! CPU time between accesses: thrash, and the access streams of programs
//! such as the NPB kernels or DGEMM. [`run`] runs it in virtual time: deterministic, no clock, no
//! IO. Every event is O(1) apart from reclaim's scan, whose cost is also
//! simulated time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};

use crate::config::{check_range, ConfigError, PresetStore};
use crate::device::Op;
use crate::host::{CompletionMode, FileSystem, Host, HostCx, HostIo, IoDone};
use crate::system::{DeviceClass, SystemConfig};
use crate::units::{Rw, Timeline};

/// Page size of the swap path (x86).
pub const PAGE: u64 = 4096;
/// `SWAP_CLUSTER_MAX`: pages reclaimed per batch (include/linux/swap.h).
pub const SWAP_CLUSTER_MAX: usize = 32;
/// `SWAPFILE_CLUSTER`: slots allocated together (mm/swapfile.c).
pub const SWAPFILE_CLUSTER: u32 = 256;

const NONE: u32 = u32::MAX;
/// Tokens of the swap model's own events (the host's use bit 63 and the
/// device's stay below bit 61).
const MY_BIT: u64 = 1 << 62;
const KSWAPD_BIT: u64 = 1 << 40;

/// `[swap]`: Linux's swap path, with the preset it sits on as the DRAM
/// (a `fixed` device: its `latency_ns` is one memory access, its
/// `capacity_bytes` the page frames) and `device` as the swap device.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapConfig {
    /// The swap device's preset (name or file); its `[host]` is the stack
    /// swap IO goes through.
    pub device: String,
    /// Overrides for the swap device (`key.path=value`).
    #[serde(default)]
    pub device_set: Vec<String>,
    /// Size of the swap area on the device, bytes (at most the device's
    /// capacity).
    pub swap_bytes: u64,
    /// `vm.page-cluster`: swap-in reads up to 2^this slots around the
    /// faulting one (0: no read-ahead).
    pub page_cluster: u32,
    /// `vm.min_free_kbytes`, KiB; 0: the kernel's formula from DRAM.
    #[serde(default)]
    pub min_free_kbytes: u64,
    /// kswapd threads (one per NUMA node).
    pub kswapd_threads: u32,
    /// Page fault entry, page-table walk, VMA lookup and return, ns.
    pub fault_ns: u64,
    /// Swap-cache lookup and page lock of a swapped page, ns.
    pub swapcache_ns: u64,
    /// Clearing a new anonymous page (first touch), ns.
    pub zero_page_ns: u64,
    /// Installing the page-table entry, reverse map and LRU insertion, ns.
    pub map_ns: u64,
    /// Reclaim's look at one page (`page_referenced`, isolation), ns.
    pub scan_ns: u64,
    /// Unmapping one page (`try_to_unmap_one`), ns, without the shootdown.
    pub unmap_ns: u64,
    /// The unmapping CPU's wait for one TLB shootdown (IPIs to the other
    /// CPUs running the process, and their acknowledgements), ns.
    pub tlb_shootdown_ns: u64,
    /// Allocating one swap slot and adding the page to the swap cache, ns.
    pub swap_alloc_ns: u64,
    /// A shootdown's cost on each interrupted CPU (interrupt entry, the
    /// flush, acknowledgement, return), ns: paid by every thread that is
    /// computing when another CPU unmaps a page.
    pub tlb_ipi_ns: u64,
    /// The swap device's request queue depth (`nr_requests`); the queue is
    /// congested for writes from `nr_requests - nr_requests/8 + 1` write
    /// requests in flight (`blk_queue_congestion_threshold`).
    pub nr_requests: u32,
    /// Reclaim's second chance to a referenced (mapped, young) page costs
    /// a TLB shootdown (`tlb_shootdown_ns`, and `tlb_ipi_ns` on every
    /// computing thread) as well as the scan: x86's
    /// `ptep_clear_flush_young` flushed the page's TLB entries whenever it
    /// cleared a set accessed bit (Linux 2.6 to 3.13; since then the bit is
    /// only cleared). Boolean, default false.
    #[serde(default)]
    pub young_flush: bool,
}

/// Validate `[swap]` (the device is checked when built).
pub fn validate(c: &SwapConfig) -> Result<(), ConfigError> {
    check_range(
        "swap.swap_bytes",
        c.swap_bytes,
        PAGE,
        (NONE as u64 - 1) * PAGE,
    )?;
    check_range("swap.page_cluster", c.page_cluster, 0, 10)?;
    check_range("swap.min_free_kbytes", c.min_free_kbytes, 0, 1 << 30)?;
    check_range("swap.kswapd_threads", c.kswapd_threads, 1, 64)?;
    check_range("swap.nr_requests", c.nr_requests, 4, 1 << 20)?;
    Ok(())
}

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
    /// Sweeps that go forward and back: even passes over the part in page
    /// order, odd passes in reverse (LU's SSOR: the lower-triangular
    /// sweep, then the upper one from the far corner back).
    Zigzag,
}

impl Pattern {
    /// The index within a part of `n` pages of the `k`-th access of a
    /// pass-structured pattern (`Sequential`, `Adi`); for the others the
    /// index in page order.
    fn sweep_index(self, k: u64, n: u64) -> u64 {
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
    fn check(self) -> Result<(), SwapError> {
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
}

#[derive(Clone, Copy, Default)]
struct Frame {
    page: u32,
    slot: u32,
    mapped: bool,
    referenced: bool,
    dirty: bool,
    reading: bool,
    writeback: bool,
    /// Read ahead and not yet faulted.
    ahead: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Touch,
    Random,
    Done,
}

struct Thread {
    rng: Pcg64,
    phase: Phase,
    /// Accesses done in this phase.
    n: u64,
    page: u32,
    /// Fault entry already paid for the current access.
    entered: bool,
    /// Direct reclaim done for the current fault.
    reclaimed: bool,
    fault_start: u64,
    /// The thread's pending event ends a stretch of computation (it is on
    /// a CPU and receives shootdown IPIs), not a wait.
    on_cpu: bool,
    /// Shootdowns counted up to the start of the computation.
    ipi_seen: u64,
    /// The current access stores.
    write: bool,
    /// Slots of this thread's direct-reclaim batch, written on resume.
    batch: Vec<u32>,
    /// Next page of a `Stream` pattern's sequential stream.
    stream: u64,
}

struct Kswapd {
    running: bool,
    batch: Vec<u32>,
}

#[derive(Clone, Copy)]
struct Req {
    write: bool,
    start: u32,
    n: u32,
    waiter: u32,
}

/// The machine: DRAM frames, page tables, swap map, reclaimers, the swap
/// device behind its host stack, and the event queue.
struct Machine<'a> {
    cfg: &'a SwapConfig,
    w: &'a MemWorkload,
    access_ns: u64,
    min: usize,
    low: usize,
    high: usize,
    frames: Vec<Frame>,
    free: Vec<u32>,
    hand: usize,
    page_frame: Vec<u32>,
    page_slot: Vec<u32>,
    slot_owner: Vec<u32>,
    cluster_used: Vec<u16>,
    /// Whole clusters with no slot in use (skips the search when none).
    free_clusters: usize,
    slot_cursor: u32,
    cluster_left: u32,
    threads: Vec<Thread>,
    kswapd: Vec<Kswapd>,
    /// (frame, thread) waiting for a read in flight.
    read_waiters: Vec<(u32, u32)>,
    frame_waiters: VecDeque<u32>,
    writeback: usize,
    inflight: usize,
    writes_inflight: usize,
    congested_at: usize,
    reqs: Vec<Req>,
    reqs_free: Vec<u32>,
    host: Host,
    cx: HostCx,
    dones: Vec<IoDone>,
    heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    seq: u64,
    rep: MemReport,
    fault_ns_sum: u64,
    touched_done: u32,
    random_done: u32,
    t0: u64,
    anon_lock: Timeline,
    /// The swap device's driver takes bios directly, without a request
    /// queue (a device the CPU serves synchronously, `completion = "cpu"`:
    /// the RAM disk's `make_request`), so nothing merges the one-page bios
    /// of `swap_readpage` and `swap_writepage`: each page is a request.
    bio_per_page: bool,
    stuck: Option<u64>,
    /// Shootdowns since the start (not reset with the report).
    shootdowns_total: u64,
}

/// The `[swap]` table of `sys`, validated, with DRAM as its fixed device.
fn swap_config(sys: &SystemConfig) -> Result<&SwapConfig, SwapError> {
    let cfg = sys.swap.as_ref().ok_or_else(|| ConfigError::Invalid {
        field: "swap".into(),
        message: "the preset has no [swap] table".into(),
    })?;
    validate(cfg)?;
    if sys.device.class != DeviceClass::Fixed {
        return Err(ConfigError::Invalid {
            field: "device.class".into(),
            message: "the swap model's memory is a fixed device (its latency_ns is a DRAM access)"
                .into(),
        }
        .into());
    }
    Ok(cfg)
}

/// Run `w` on the system `sys` (a preset with a `[swap]` table), looking
/// the swap device up in `store`.
pub fn run(
    sys: &SystemConfig,
    store: &PresetStore,
    w: &MemWorkload,
) -> Result<MemReport, SwapError> {
    let cfg = swap_config(sys)?;
    let (_, dc) = SystemConfig::load(store, &cfg.device, &cfg.device_set)?;
    run_with_device(sys, store, &dc, w)
}

/// As [`run`], with the swap device's configuration given (a preset
/// already loaded with its overrides) instead of `swap.device`.
pub fn run_with_device(
    sys: &SystemConfig,
    store: &PresetStore,
    dc: &SystemConfig,
    w: &MemWorkload,
) -> Result<MemReport, SwapError> {
    let cfg = swap_config(sys)?;
    let device = dc.build_device_in(store)?;
    if cfg.swap_bytes > device.capacity() {
        return Err(ConfigError::Invalid {
            field: "swap.swap_bytes".into(),
            message: format!(
                "{} is more than the swap device's {} bytes",
                cfg.swap_bytes,
                device.capacity()
            ),
        }
        .into());
    }
    if w.threads == 0 || w.pages_per_thread == 0 {
        return Err(SwapError::Workload("no threads or no pages".into()));
    }
    let frac = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
    if !frac(w.write_fraction) {
        return Err(SwapError::Workload(format!(
            "write_fraction {} is not between 0 and 1",
            w.write_fraction
        )));
    }
    w.pattern.check()?;
    let pages = w.threads as u64 * w.pages_per_thread;
    let nframes = sys.device.capacity_bytes / PAGE;
    let nslots = cfg.swap_bytes / PAGE;
    if pages >= NONE as u64 || nframes >= NONE as u64 {
        return Err(SwapError::Workload("more than 2^32 pages".into()));
    }
    let min_kib = if cfg.min_free_kbytes > 0 {
        cfg.min_free_kbytes
    } else {
        // init_per_zone_wmark_min: int_sqrt(lowmem_kbytes * 16), clamped
        (((nframes * 4 * 16) as f64).sqrt() as u64).clamp(128, 65536)
    };
    let min = (min_kib / 4) as usize;
    let low = min + min / 4;
    let high = min + min / 2;
    if nframes as usize <= high + SWAP_CLUSTER_MAX * 2 {
        return Err(SwapError::Workload(format!(
            "{nframes} page frames: not above the high watermark ({high}) and a reclaim batch"
        )));
    }
    if pages > nframes + nslots - (high as u64) {
        return Err(SwapError::Workload(format!(
            "{pages} pages do not fit in {nframes} frames and {nslots} swap slots"
        )));
    }
    // swap IO enters the block layer from the kernel, not by a system call
    let mut hc = dc.host.clone();
    hc.syscall_entry_ns = Rw { read: 0, write: 0 };
    hc.syscall_exit_ns = Rw { read: 0, write: 0 };
    hc.file_system = FileSystem::None;
    let host = Host::new(hc, device, w.threads + cfg.kswapd_threads);
    let threads = (0..w.threads)
        .map(|t| Thread {
            rng: Pcg64::seed_from_u64(w.seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            phase: Phase::Touch,
            n: 0,
            page: NONE,
            entered: false,
            reclaimed: false,
            fault_start: 0,
            on_cpu: false,
            ipi_seen: 0,
            write: true,
            batch: Vec::with_capacity(SWAP_CLUSTER_MAX),
            stream: 0,
        })
        .collect();
    let mut m = Machine {
        cfg,
        w,
        access_ns: sys.device.latency_ns,
        min,
        low,
        high,
        frames: vec![
            Frame {
                page: NONE,
                slot: NONE,
                ..Frame::default()
            };
            nframes as usize
        ],
        free: (0..nframes as u32).rev().collect(),
        hand: 0,
        page_frame: vec![NONE; pages as usize],
        page_slot: vec![NONE; pages as usize],
        slot_owner: vec![NONE; nslots as usize],
        cluster_used: vec![0; nslots.div_ceil(SWAPFILE_CLUSTER as u64) as usize],
        free_clusters: (nslots / SWAPFILE_CLUSTER as u64) as usize,
        slot_cursor: 0,
        cluster_left: 0,
        threads,
        kswapd: (0..cfg.kswapd_threads)
            .map(|_| Kswapd {
                running: false,
                batch: Vec::with_capacity(SWAP_CLUSTER_MAX),
            })
            .collect(),
        read_waiters: Vec::new(),
        frame_waiters: VecDeque::new(),
        writeback: 0,
        inflight: 0,
        writes_inflight: 0,
        congested_at: (cfg.nr_requests - cfg.nr_requests / 8 + 1) as usize,
        reqs: Vec::new(),
        reqs_free: Vec::new(),
        host,
        cx: HostCx::default(),
        dones: Vec::new(),
        heap: BinaryHeap::new(),
        seq: 0,
        rep: MemReport::default(),
        fault_ns_sum: 0,
        touched_done: 0,
        random_done: 0,
        t0: 0,
        anon_lock: Timeline::default(),
        bio_per_page: dc.host.completion == CompletionMode::Cpu,
        stuck: None,
        shootdowns_total: 0,
    };
    for t in 0..w.threads {
        m.next_access(0, t);
    }
    m.run_loop()?;
    Ok(m.report())
}

impl Machine<'_> {
    fn push(&mut self, at: u64, token: u64) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, token)));
    }

    fn run_loop(&mut self) -> Result<(), SwapError> {
        while self.random_done < self.w.threads {
            if let Some(at) = self.stuck {
                return Err(SwapError::Stuck(at));
            }
            let Some(Reverse((now, _, token))) = self.heap.pop() else {
                return Err(SwapError::Stuck(self.t0));
            };
            if token & MY_BIT != 0 {
                let idx = token & !MY_BIT;
                if idx & KSWAPD_BIT != 0 {
                    self.kswapd_step(now, (idx & !KSWAPD_BIT) as usize);
                } else {
                    self.thread_event(now, idx as u32);
                }
            } else {
                self.host.on_event(now, token, &mut self.cx);
                self.drain(now);
            }
        }
        Ok(())
    }

    /// Move the host's wake-ups to the queue and act on finished IO.
    fn drain(&mut self, now: u64) {
        loop {
            for i in 0..self.cx.dev.wakeups.len() {
                let (at, tok) = self.cx.dev.wakeups[i];
                self.push(at, tok);
            }
            self.cx.dev.wakeups.clear();
            if self.cx.done.is_empty() {
                return;
            }
            std::mem::swap(&mut self.dones, &mut self.cx.done);
            let mut d = std::mem::take(&mut self.dones);
            for io in d.drain(..) {
                self.io_done(now, io.id as u32);
            }
            self.dones = d;
        }
    }

    fn submit(&mut self, now: u64, thread: u32, write: bool, start: u32, n: u32, waiter: u32) {
        let r = Req {
            write,
            start,
            n,
            waiter,
        };
        let i = if let Some(i) = self.reqs_free.pop() {
            self.reqs[i as usize] = r;
            i
        } else {
            self.reqs.push(r);
            (self.reqs.len() - 1) as u32
        };
        self.inflight += 1;
        if write {
            self.writes_inflight += 1;
            self.rep.swap_writes += 1;
            self.rep.pages_written += n as u64;
        } else {
            self.rep.swap_reads += 1;
            self.rep.pages_read += n as u64;
        }
        let io = HostIo {
            id: i as u64,
            thread,
            op: if write { Op::Write } else { Op::Read },
            offset: start as u64 * PAGE,
            len: n as u64 * PAGE,
            fua: false,
            poll: false,
        };
        self.host.submit(now, io, &mut self.cx);
        self.drain(now);
    }

    /// Submit `n` contiguous slots from `start`: one request when the
    /// block layer merges the pages' bios (a request queue), one request
    /// per page when the driver takes bios directly (`bio_per_page`).
    /// `fault` is the faulting thread's slot (its request wakes `thread`),
    /// or NONE.
    fn submit_run(&mut self, now: u64, thread: u32, write: bool, start: u32, n: u32, fault: u32) {
        let waiter = |s: u32, k: u32| {
            if (s..s + k).contains(&fault) {
                thread
            } else {
                NONE
            }
        };
        if self.bio_per_page {
            for s in start..start + n {
                self.submit(now, thread, write, s, 1, waiter(s, 1));
            }
        } else {
            self.submit(now, thread, write, start, n, waiter(start, n));
        }
    }

    fn io_done(&mut self, now: u64, i: u32) {
        let r = self.reqs[i as usize];
        self.reqs_free.push(i);
        self.inflight -= 1;
        if r.write {
            self.writes_inflight -= 1;
        }
        for s in r.start..r.start + r.n {
            let p = self.slot_owner[s as usize];
            let f = self.page_frame[p as usize];
            let fr = &mut self.frames[f as usize];
            if r.write {
                fr.writeback = false;
                self.writeback -= 1;
                if !fr.mapped && !fr.dirty && !fr.reading {
                    self.free_frame(f);
                }
            } else {
                fr.reading = false;
                // threads waiting for this page retry their access
                let mut k = 0;
                while k < self.read_waiters.len() {
                    if self.read_waiters[k].0 == f {
                        let (_, t) = self.read_waiters.swap_remove(k);
                        self.push(now, MY_BIT | t as u64);
                    } else {
                        k += 1;
                    }
                }
            }
        }
        if !r.write && r.waiter != NONE {
            // the faulting thread's page is in: map it and go on
            let t = r.waiter;
            let p = self.threads[t as usize].page;
            let f = self.page_frame[p as usize];
            self.rep.major_faults += 1;
            self.fault_ns_sum += now + self.cfg.map_ns - self.threads[t as usize].fault_start;
            self.map(f, t);
            let done = now + self.cfg.map_ns + self.access_ns + self.w.cpu_ns;
            self.finish_access(done, t);
        }
        self.wake_frame_waiters(now);
    }

    fn free_frame(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        let p = fr.page;
        *fr = Frame {
            page: NONE,
            slot: NONE,
            ..Frame::default()
        };
        self.page_frame[p as usize] = NONE;
        self.free.push(f);
    }

    fn wake_frame_waiters(&mut self, now: u64) {
        let mut avail = self.free.len().saturating_sub(self.min);
        while avail > 0 {
            let Some(t) = self.frame_waiters.pop_front() else {
                break;
            };
            self.push(now, MY_BIT | t as u64);
            avail -= 1;
        }
        // nothing will free a page: let one waiter reclaim again
        if self.inflight == 0 && !self.frame_waiters.is_empty() && avail == 0 {
            let t = self.frame_waiters.pop_front().expect("not empty");
            self.threads[t as usize].reclaimed = false;
            self.push(now, MY_BIT | t as u64);
        }
    }

    fn map(&mut self, f: u32, t: u32) {
        let write = self.threads[t as usize].write;
        let fr = &mut self.frames[f as usize];
        fr.mapped = true;
        fr.referenced = true;
        if fr.ahead {
            fr.ahead = false;
            self.rep.readahead_hits += 1;
        }
        if write {
            fr.dirty = true;
            // reuse_swap_page: the only user of the slot takes the page over
            if fr.slot != NONE && !fr.writeback {
                let s = fr.slot;
                fr.slot = NONE;
                let p = fr.page;
                self.page_slot[p as usize] = NONE;
                self.free_slot(s);
            }
        }
    }

    fn free_slot(&mut self, s: u32) {
        self.slot_owner[s as usize] = NONE;
        let c = (s / SWAPFILE_CLUSTER) as usize;
        self.cluster_used[c] -= 1;
        if self.cluster_used[c] == 0 && self.whole_cluster(c) {
            self.free_clusters += 1;
        }
    }

    /// Cluster `c` has all its SWAPFILE_CLUSTER slots (the last may not).
    fn whole_cluster(&self, c: usize) -> bool {
        (c as u64 + 1) * SWAPFILE_CLUSTER as u64 <= self.slot_owner.len() as u64
    }

    /// `scan_swap_map`: the next slot of the current cluster, a new free
    /// cluster, or the next free slot after the cursor.
    fn alloc_slot(&mut self, page: u32) -> u32 {
        let n = self.slot_owner.len() as u32;
        let mut s = NONE;
        if self.cluster_left > 0
            && self.slot_cursor < n
            && self.slot_owner[self.slot_cursor as usize] == NONE
        {
            s = self.slot_cursor;
            self.cluster_left -= 1;
        } else {
            let full = n / SWAPFILE_CLUSTER;
            let found = if self.free_clusters > 0 {
                (0..full as usize).find(|&c| self.cluster_used[c] == 0)
            } else {
                None
            };
            if let Some(c) = found {
                s = c as u32 * SWAPFILE_CLUSTER;
                self.cluster_left = SWAPFILE_CLUSTER - 1;
            } else {
                self.cluster_left = 0;
                for k in 0..n {
                    let c = (self.slot_cursor + k) % n;
                    if self.slot_owner[c as usize] == NONE {
                        s = c;
                        break;
                    }
                }
            }
        }
        if s == NONE {
            // the swap area is full: add_to_swap fails, the page stays
            return NONE;
        }
        self.slot_cursor = s + 1;
        self.slot_owner[s as usize] = page;
        let c = (s / SWAPFILE_CLUSTER) as usize;
        if self.cluster_used[c] == 0 && self.whole_cluster(c) {
            self.free_clusters -= 1;
        }
        self.cluster_used[c] += 1;
        s
    }

    fn next_access(&mut self, now: u64, t: u32) {
        let w = self.w;
        let th = &mut self.threads[t as usize];
        th.entered = false;
        th.reclaimed = false;
        if th.phase == Phase::Touch && th.n == w.pages_per_thread {
            th.phase = Phase::Random;
            th.n = 0;
            self.touched_done += 1;
            if self.touched_done == w.threads {
                // every thread has touched its part: the random phase starts
                self.rep.touch_ns = now;
                self.t0 = now;
                let keep_touch = self.rep.touch_ns;
                self.rep = MemReport {
                    touch_ns: keep_touch,
                    ..MemReport::default()
                };
                self.fault_ns_sum = 0;
                for u in 0..w.threads {
                    self.push(now, MY_BIT | u as u64);
                }
            }
            return;
        }
        let th = &mut self.threads[t as usize];
        if th.phase == Phase::Random && th.n == w.accesses {
            th.phase = Phase::Done;
            self.random_done += 1;
            self.rep.elapsed_ns = self.rep.elapsed_ns.max(now - self.t0);
            return;
        }
        if th.phase == Phase::Done {
            return;
        }
        let n = w.pages_per_thread;
        let mut store = w.write_fraction;
        let i = match (th.phase, w.pattern) {
            (Phase::Touch, _) | (_, Pattern::Sequential) => th.n % n,
            (_, p @ (Pattern::Adi { .. } | Pattern::Zigzag)) => p.sweep_index(th.n, n),
            (
                _,
                Pattern::Stream {
                    random,
                    region,
                    stream_store,
                },
            ) => {
                let r = ((region * n as f64).round() as u64).clamp(1, n);
                // the stream covers the rest, or the whole part
                let len = if r == n { n } else { n - r };
                if random > 0.0 && th.rng.gen::<f64>() < random {
                    th.rng.gen_range(n - r..n)
                } else {
                    store = stream_store;
                    th.stream += 1;
                    (th.stream - 1) % len
                }
            }
            (_, Pattern::Uniform) => th.rng.gen_range(0..n),
            (_, Pattern::Hot { pages, accesses }) => {
                let hot = ((pages * n as f64) as u64).clamp(1, n);
                if hot == n || th.rng.gen::<f64>() < accesses {
                    th.rng.gen_range(0..hot)
                } else {
                    th.rng.gen_range(hot..n)
                }
            }
        };
        th.write = th.phase == Phase::Touch
            || store >= 1.0
            || (store > 0.0 && th.rng.gen::<f64>() < store);
        th.page = (t as u64 * w.pages_per_thread + i) as u32;
        self.access(now, t);
    }

    /// The thread computes until its next event.
    fn compute(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        if !th.on_cpu {
            th.on_cpu = true;
            th.ipi_seen = self.shootdowns_total;
        }
    }

    /// A thread's event: after computing, first the IPIs it took meanwhile.
    fn thread_event(&mut self, now: u64, t: u32) {
        let total = self.shootdowns_total;
        let ipi = self.cfg.tlb_ipi_ns;
        let th = &mut self.threads[t as usize];
        if th.on_cpu {
            let d = total - th.ipi_seen;
            th.ipi_seen = total;
            if d > 0 && ipi > 0 {
                let lost = d.saturating_mul(ipi);
                self.rep.ipi_ns = self.rep.ipi_ns.saturating_add(lost);
                self.push(now.saturating_add(lost), MY_BIT | t as u64);
                return;
            }
        }
        th.on_cpu = false;
        self.access(now, t);
    }

    fn finish_access(&mut self, at: u64, t: u32) {
        self.compute(t);
        let th = &mut self.threads[t as usize];
        th.n += 1;
        if th.phase == Phase::Random {
            self.rep.accesses += 1;
        }
        th.page = NONE;
        self.push(at, MY_BIT | t as u64);
    }

    /// The thread's current access (or its retry after a wait).
    fn access(&mut self, now: u64, t: u32) {
        let th = &self.threads[t as usize];
        if th.phase == Phase::Done {
            return;
        }
        if th.page == NONE {
            self.next_access(now, t);
            return;
        }
        if th.phase == Phase::Random && self.touched_done < self.w.threads {
            // the random phase waits for every thread's touch
            return;
        }
        let p = th.page;
        let entered = th.entered;
        if !th.batch.is_empty() {
            // after a direct reclaim's CPU time: its writes go out
            let b = std::mem::take(&mut self.threads[t as usize].batch);
            let b = self.write_batch(now, t, b);
            self.threads[t as usize].batch = b;
        }
        let cost_extra = self.access_ns + self.w.cpu_ns;
        let f = self.page_frame[p as usize];
        if f != NONE {
            let fr = self.frames[f as usize];
            if fr.reading {
                self.read_waiters.push((f, t));
                return;
            }
            if fr.mapped {
                self.map(f, t);
                self.finish_access(now + cost_extra, t);
                return;
            }
            // minor fault: the page is in the swap cache
            if !entered {
                self.enter(now, t);
                return;
            }
            self.rep.minor_faults += 1;
            self.map(f, t);
            let c = self.cfg.swapcache_ns + self.cfg.map_ns + cost_extra;
            self.finish_access(now + c, t);
            return;
        }
        if !entered {
            self.enter(now, t);
            return;
        }
        let Some(nf) = self.take_frame(now, t) else {
            return;
        };
        let slot = self.page_slot[p as usize];
        if slot == NONE {
            // first touch: a zeroed page
            self.frames[nf as usize] = Frame {
                page: p,
                slot: NONE,
                ..Frame::default()
            };
            self.page_frame[p as usize] = nf;
            self.map(nf, t);
            let c = self.cfg.zero_page_ns + self.cfg.map_ns + cost_extra;
            self.finish_access(now + c, t);
            return;
        }
        // major fault: swap-in with read-ahead (the swap-cache lookup was
        // paid with the entry)
        self.install_reading(nf, p, slot, false);
        let (lo, hi) = self.readahead_window(slot);
        // read_swap_cache_async in ascending order; pages only above min
        let mut run_start = NONE;
        for s in lo..=hi {
            let need = if s == slot {
                true
            } else {
                let q = self.slot_owner[s as usize];
                if self.page_frame[q as usize] == NONE && self.free.len() > self.min {
                    let f = self.free.pop().expect("above min");
                    self.install_reading(f, q, s, true);
                    true
                } else {
                    false
                }
            };
            if need && run_start == NONE {
                run_start = s;
            }
            if (!need || s == hi) && run_start != NONE {
                let end = if need { s + 1 } else { s };
                self.submit_run(now, t, false, run_start, end - run_start, slot);
                run_start = NONE;
            }
        }
        self.wake_kswapd(now);
    }

    /// Fault entry; a page on swap is also looked up in the swap cache.
    fn enter(&mut self, now: u64, t: u32) {
        self.compute(t);
        let th = &mut self.threads[t as usize];
        th.entered = true;
        th.fault_start = now;
        let p = th.page as usize;
        let mut c = self.cfg.fault_ns;
        if self.page_frame[p] == NONE && self.page_slot[p] != NONE {
            c += self.cfg.swapcache_ns;
        }
        self.push(now + c, MY_BIT | t as u64);
    }

    fn install_reading(&mut self, f: u32, p: u32, s: u32, ahead: bool) {
        self.frames[f as usize] = Frame {
            page: p,
            slot: s,
            reading: true,
            ahead,
            ..Frame::default()
        };
        self.page_frame[p as usize] = f;
    }

    /// `valid_swaphandles`: the contiguous slots in use around `slot`
    /// within its aligned window of 2^page_cluster.
    fn readahead_window(&self, slot: u32) -> (u32, u32) {
        let size = 1u32 << self.cfg.page_cluster;
        let base = slot & !(size - 1);
        let end = (base + size).min(self.slot_owner.len() as u32);
        let mut hi = slot;
        while hi + 1 < end && self.slot_owner[(hi + 1) as usize] != NONE {
            hi += 1;
        }
        let mut lo = slot;
        while lo > base && self.slot_owner[(lo - 1) as usize] != NONE {
            lo -= 1;
        }
        (lo, hi)
    }

    /// A free frame for thread `t`, or None when it reclaims or waits
    /// (the thread's access is retried later).
    fn take_frame(&mut self, now: u64, t: u32) -> Option<u32> {
        if self.free.len() > self.min {
            let f = self.free.pop();
            if self.free.len() < self.low {
                self.wake_kswapd(now);
            }
            return f;
        }
        self.wake_kswapd(now);
        let th = &self.threads[t as usize];
        if th.reclaimed || self.writes_inflight >= self.congested_at {
            self.threads[t as usize].reclaimed = true;
            // congestion_wait: until writeback frees pages
            self.frame_waiters.push_back(t);
            self.wake_frame_waiters(now);
            return None;
        }
        // direct reclaim on this thread's time
        let mut b = std::mem::take(&mut self.threads[t as usize].batch);
        let (cost, n) = self.reclaim(now, &mut b);
        if n == 0 && self.inflight == 0 && b.is_empty() {
            // nothing reclaimable, nothing in flight to free a page
            self.stuck = Some(now);
        }
        self.threads[t as usize].batch = b;
        self.rep.direct_reclaims += 1;
        self.rep.direct_reclaimed += n;
        self.threads[t as usize].reclaimed = true;
        self.compute(t);
        self.push(now + cost.max(1), MY_BIT | t as u64);
        None
    }

    fn wake_kswapd(&mut self, now: u64) {
        if self.free.len() >= self.low {
            return;
        }
        for k in 0..self.kswapd.len() {
            if !self.kswapd[k].running {
                self.kswapd[k].running = true;
                self.push(now, MY_BIT | KSWAPD_BIT | k as u64);
            }
        }
    }

    fn kswapd_step(&mut self, now: u64, k: usize) {
        let b = std::mem::take(&mut self.kswapd[k].batch);
        let b = self.write_batch(now, self.w.threads + k as u32, b);
        self.kswapd[k].batch = b;
        if self.free.len() + self.writeback >= self.high {
            self.kswapd[k].running = false;
            return;
        }
        let mut b = std::mem::take(&mut self.kswapd[k].batch);
        let (cost, n) = self.reclaim(now, &mut b);
        self.kswapd[k].batch = b;
        self.rep.kswapd_reclaimed += n;
        if n == 0 {
            // nothing reclaimable now: sleep until woken again
            self.kswapd[k].running = false;
            return;
        }
        self.push(now + cost.max(1), MY_BIT | KSWAPD_BIT | k as u64);
    }

    /// Write a reclaim batch's slots, one request per contiguous run.
    fn write_batch(&mut self, now: u64, thread: u32, mut b: Vec<u32>) -> Vec<u32> {
        if b.is_empty() {
            return b;
        }
        b.sort_unstable();
        let mut i = 0;
        while i < b.len() {
            let mut j = i + 1;
            while j < b.len() && b[j] == b[j - 1] + 1 {
                j += 1;
            }
            self.submit_run(now, thread, true, b[i], (j - i) as u32, NONE);
            i = j;
        }
        b.clear();
        b
    }

    /// One reclaim batch starting at `now`: scan with the clock, evict up
    /// to SWAP_CLUSTER_MAX pages; dirty ones get slots and go into `batch`
    /// (written when the reclaimer's CPU time is over). Each page's rmap
    /// work (`page_referenced`, `try_to_unmap` with its TLB shootdown)
    /// holds the array's one `anon_vma->lock` (a spinlock in 2.6.3x,
    /// `page_lock_anon_vma`), so reclaimers serialise there. Returns the
    /// time the batch takes and the pages reclaimed.
    fn reclaim(&mut self, now: u64, batch: &mut Vec<u32>) -> (u64, u64) {
        let c = self.cfg;
        let nf = self.frames.len();
        let mut t = now;
        let mut got = 0u64;
        let mut scanned = 0;
        while (got as usize) < SWAP_CLUSTER_MAX && scanned < 2 * nf {
            let f = self.hand;
            self.hand = (self.hand + 1) % nf;
            scanned += 1;
            let fr = self.frames[f];
            if fr.page == NONE || fr.reading || fr.writeback {
                continue;
            }
            let mut hold = c.scan_ns;
            if fr.referenced {
                // page_referenced_one: the pte was young; clearing its
                // accessed bit (ptep_clear_flush_young) flushes the TLB
                // entry on x86 when `young_flush`: a shootdown, in the lock
                self.frames[f].referenced = false;
                if c.young_flush {
                    hold += c.tlb_shootdown_ns;
                    self.rep.shootdowns += 1;
                    self.shootdowns_total += 1;
                }
                t = self.anon_lock.reserve(t, hold) + hold;
                continue;
            }
            // add_to_swap comes before try_to_unmap
            let s = if fr.slot == NONE && fr.dirty {
                t += c.swap_alloc_ns;
                let s = self.alloc_slot(fr.page);
                if s == NONE {
                    t = self.anon_lock.reserve(t, hold) + hold;
                    continue;
                }
                self.page_slot[fr.page as usize] = s;
                s
            } else {
                fr.slot
            };
            if fr.mapped {
                hold += c.unmap_ns + c.tlb_shootdown_ns;
                self.rep.shootdowns += 1;
                self.shootdowns_total += 1;
                self.frames[f].mapped = false;
            }
            t = self.anon_lock.reserve(t, hold) + hold;
            got += 1;
            if fr.dirty {
                let m = &mut self.frames[f];
                m.slot = s;
                m.dirty = false;
                m.writeback = true;
                self.writeback += 1;
                batch.push(s);
            } else {
                // clean with a valid slot (or read ahead): freed at once
                self.free_frame(f as u32);
            }
        }
        (t - now, got)
    }

    fn report(&self) -> MemReport {
        let mut r = self.rep.clone();
        r.accesses_per_s = if r.elapsed_ns > 0 {
            r.accesses as f64 * 1e9 / r.elapsed_ns as f64
        } else {
            0.0
        };
        r.major_fault_ns = if r.major_faults > 0 {
            self.fault_ns_sum as f64 / r.major_faults as f64
        } else {
            0.0
        };
        r.pages_per_write = if r.swap_writes > 0 {
            r.pages_written as f64 / r.swap_writes as f64
        } else {
            0.0
        };
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The swap-linux preset with `dram` bytes of DRAM, swapping to
    /// `device` with a swap area of `swap` bytes.
    fn sys(dram: u64, device: &str, swap: u64, extra: &[&str]) -> SystemConfig {
        let mut o = vec![
            format!("device.capacity_bytes={dram}"),
            format!("swap.device=\"{device}\""),
            format!("swap.swap_bytes={swap}"),
        ];
        o.extend(extra.iter().map(|s| s.to_string()));
        SystemConfig::load(&PresetStore::default(), "swap-linux", &o)
            .expect("loads")
            .1
    }

    fn thrash(pages_per_thread: u64, accesses: u64) -> MemWorkload {
        MemWorkload {
            threads: 16,
            pages_per_thread,
            accesses,
            pattern: Pattern::Uniform,
            write_fraction: 1.0,
            cpu_ns: 100,
            seed: 1,
        }
    }

    const MIB: u64 = 1 << 20;

    /// Scaled down: 4 MiB of DRAM (1,024 frames) is enough for every
    /// mechanism (watermarks at 64/80/96 pages, 32-page batches).
    fn go(device: &str, ratio: u64, extra: &[&str]) -> MemReport {
        let dram = 4 * MIB;
        let s = sys(dram, device, 16 * dram, extra);
        let w = thrash(ratio * dram / PAGE / 16 / 2, 400);
        run(&s, &PresetStore::default(), &w).expect("runs")
    }

    #[test]
    fn with_enough_dram_nothing_pages_and_each_update_costs_access_plus_cpu() {
        let r = go("haste-pcm", 1, &[]);
        assert_eq!(r.major_faults + r.minor_faults + r.pages_written, 0);
        // 16 threads, 150 ns access + 100 ns computation each
        let want = 16.0 / 250e-9;
        assert!((r.accesses_per_s / want - 1.0).abs() < 1e-3, "{r:?}");
    }

    #[test]
    fn an_array_beyond_dram_faults_reads_ahead_and_writes_out_in_clusters() {
        let r = go("haste-pcm", 4, &[]);
        assert!(r.major_faults > 1000, "{r:?}");
        assert!(r.kswapd_reclaimed > 0 && r.pages_written > 0, "{r:?}");
        assert!(r.shootdowns > 0, "{r:?}");
        // read-ahead: more pages than requests
        assert!(r.pages_read > r.swap_reads, "{r:?}");
        // swap-out in clusters: several pages per write request
        assert!(r.pages_per_write > 2.0, "{r:?}");
        assert!(r.accesses_per_s < 16.0 / 250e-9 / 10.0, "{r:?}");
    }

    #[test]
    fn clearing_young_bits_costs_shootdowns_and_time() {
        let on = go("haste-pcm", 4, &["swap.young_flush=true"]);
        let off = go("haste-pcm", 4, &["swap.young_flush=false"]);
        // every second chance to a young page is one more shootdown
        assert!(
            on.shootdowns as f64 > 1.3 * off.shootdowns as f64,
            "{on:?} {off:?}"
        );
        assert!(on.accesses_per_s < off.accesses_per_s, "{on:?} {off:?}");
    }

    #[test]
    fn a_ram_disk_takes_one_request_per_page_a_queued_device_merges() {
        // ddr-pcm: completion on the CPU, no request queue
        let r = go("ddr-pcm", 4, &[]);
        assert!(r.pages_read > 0 && r.pages_written > 0, "{r:?}");
        assert_eq!(r.pages_read, r.swap_reads, "{r:?}");
        assert_eq!(r.pages_written, r.swap_writes, "{r:?}");
        // the same RAM disk behind a request queue (interrupt completion)
        // merges contiguous slots again
        let s = sys(4 * MIB, "ddr-pcm", 64 * MIB, &[]);
        let (_, mut dc) =
            SystemConfig::load(&PresetStore::default(), "ddr-pcm", &[]).expect("loads");
        dc.host.completion = CompletionMode::Interrupt;
        let w = thrash(4 * 4 * MIB / PAGE / 16 / 2, 400);
        let q = run_with_device(&s, &PresetStore::default(), &dc, &w).expect("runs");
        assert!(q.pages_read > q.swap_reads, "{q:?}");
        assert!(q.pages_per_write > 2.0, "{q:?}");
    }

    #[test]
    fn page_cluster_zero_reads_only_the_faulting_page() {
        let r = go("haste-pcm", 4, &["swap.page_cluster=0"]);
        assert_eq!(r.pages_read, r.swap_reads, "{r:?}");
        assert_eq!(r.readahead_hits, 0);
    }

    #[test]
    fn without_kswapd_headroom_threads_reclaim_directly() {
        // a high min watermark and one kswapd: faulting threads reclaim too
        let r = go("ddr-pcm", 4, &["swap.min_free_kbytes=1024"]);
        assert!(r.direct_reclaims > 0 && r.direct_reclaimed > 0, "{r:?}");
    }

    #[test]
    fn a_slower_swap_device_pages_slower() {
        let fast = go("ddr-pcm", 4, &[]);
        let slow = go("raid-ssd", 4, &[]);
        assert!(
            fast.accesses_per_s > 2.0 * slow.accesses_per_s,
            "{fast:?} {slow:?}"
        );
        assert!(slow.major_fault_ns > fast.major_fault_ns);
    }

    #[test]
    fn shootdown_ipis_cost_the_computing_threads() {
        // the IPIs of unmapping alone (young_flush off: fewer shootdowns,
        // the run not bound by the anon_vma lock)
        let none = go(
            "ddr-pcm",
            4,
            &["swap.tlb_ipi_ns=0", "swap.young_flush=false"],
        );
        let some = go(
            "ddr-pcm",
            4,
            &["swap.tlb_ipi_ns=5000", "swap.young_flush=false"],
        );
        assert_eq!(none.ipi_ns, 0);
        assert!(some.ipi_ns > 0 && some.shootdowns > 0, "{some:?}");
        assert!(
            some.accesses_per_s < none.accesses_per_s,
            "{none:?} {some:?}"
        );
    }

    #[test]
    fn read_ahead_serves_a_sweep_and_clean_pages_are_not_written_again() {
        // one thread sweeping 4x DRAM, loads only: its pages went out in
        // order, so each fault's read-ahead brings the next pages
        let dram = 4 * MIB;
        let s = sys(dram, "haste-pcm", 16 * dram, &[]);
        let w = MemWorkload {
            threads: 1,
            pages_per_thread: 4 * dram / PAGE,
            accesses: 8192,
            pattern: Pattern::Sequential,
            write_fraction: 0.0,
            cpu_ns: 100,
            seed: 1,
        };
        let r = run(&s, &PresetStore::default(), &w).expect("runs");
        assert!(r.major_faults > 100, "{r:?}");
        assert!(r.readahead_hits > 4 * r.major_faults, "{r:?}");
        // loads leave the swap copies valid: only the pages still dirty
        // from the touch are written in this phase
        assert!(r.pages_written <= dram / PAGE, "{r:?}");
    }

    #[test]
    fn a_hot_set_that_fits_in_dram_pages_little() {
        let dram = 4 * MIB;
        let s = sys(dram, "raid-ssd", 16 * dram, &[]);
        let mut w = thrash(4 * dram / PAGE / 16, 400);
        let uniform = run(&s, &PresetStore::default(), &w).expect("runs");
        w.pattern = Pattern::Hot {
            pages: 0.1,
            accesses: 0.95,
        };
        let hot = run(&s, &PresetStore::default(), &w).expect("runs");
        assert!(
            hot.accesses_per_s > 3.0 * uniform.accesses_per_s,
            "{hot:?} {uniform:?}"
        );
        w.pattern = Pattern::Hot {
            pages: 0.0,
            accesses: 0.5,
        };
        let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
        assert!(e.to_string().contains("hot set"), "{e}");
        w.pattern = Pattern::Uniform;
        w.write_fraction = 1.5;
        let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
        assert!(e.to_string().contains("write_fraction"), "{e}");
    }

    #[test]
    fn adi_odd_passes_visit_every_page_across_the_planes() {
        let p = Pattern::Adi { run: 2, stride: 8 };
        let n = 20; // two planes of 8 pages, 4 pages past them
        let even: Vec<u64> = (0..n).map(|k| p.sweep_index(k, n)).collect();
        assert_eq!(even, (0..n).collect::<Vec<_>>());
        let odd: Vec<u64> = (n..2 * n).map(|k| p.sweep_index(k, n)).collect();
        assert_eq!(
            odd,
            vec![0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15, 16, 17, 18, 19]
        );
        let mut sorted = odd.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, even);
        // a stride beyond the part is a plain sweep
        let q = Pattern::Adi { run: 1, stride: 64 };
        assert_eq!(q.sweep_index(n + 3, n), 3);
    }

    /// One thread, loads only, over 4x DRAM: a sweep's pages go out and
    /// come back in order; the strided passes of an ADI sweep read them
    /// back in another order, and when a row across the planes reads
    /// ahead more pages than DRAM holds (256 planes x 8 pages over 1,024
    /// frames), read-ahead serves fewer of them.
    #[test]
    fn strided_passes_defeat_read_ahead_that_serves_a_sweep() {
        let dram = 4 * MIB;
        let s = sys(dram, "haste-pcm", 16 * dram, &[]);
        let mut w = MemWorkload {
            threads: 1,
            pages_per_thread: 4 * dram / PAGE,
            accesses: 8 * dram / PAGE,
            pattern: Pattern::Sequential,
            write_fraction: 0.0,
            cpu_ns: 100,
            seed: 1,
        };
        let seq = run(&s, &PresetStore::default(), &w).expect("runs");
        w.pattern = Pattern::Adi { run: 1, stride: 16 };
        let adi = run(&s, &PresetStore::default(), &w).expect("runs");
        let hits = |r: &MemReport| r.readahead_hits as f64 / r.accesses as f64;
        assert!(hits(&adi) < 0.75 * hits(&seq), "{seq:?} {adi:?}");
        assert!(adi.accesses_per_s < seq.accesses_per_s, "{seq:?} {adi:?}");
        w.pattern = Pattern::Adi { run: 3, stride: 64 };
        let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
        assert!(e.to_string().contains("adi"), "{e}");
    }

    /// A stream over 3x DRAM with a resident random region beside it
    /// faults about once per read-ahead window of the stream; uniform
    /// accesses over the same part fault on most accesses.
    #[test]
    fn a_stream_with_a_resident_random_region_pages_like_a_sweep() {
        let dram = 4 * MIB;
        let s = sys(dram, "raid-ssd", 16 * dram, &[]);
        let mut w = thrash(3 * dram / PAGE / 16, 1200);
        w.write_fraction = 0.0;
        let uniform = run(&s, &PresetStore::default(), &w).expect("runs");
        w.pattern = Pattern::Stream {
            random: 0.5,
            region: 0.05,
            stream_store: 0.0,
        };
        let stream = run(&s, &PresetStore::default(), &w).expect("runs");
        let per = |r: &MemReport| r.major_faults as f64 / r.accesses as f64;
        assert!(per(&stream) < 0.3 * per(&uniform), "{stream:?} {uniform:?}");
        assert!(stream.accesses_per_s > 2.0 * uniform.accesses_per_s);
        w.pattern = Pattern::Stream {
            random: 0.5,
            region: 0.0,
            stream_store: 0.0,
        };
        let e = run(&s, &PresetStore::default(), &w).expect_err("refused");
        assert!(e.to_string().contains("stream"), "{e}");
    }

    /// A sweep over 1.5x DRAM that turns back (LU's SSOR) finds the pages
    /// it touched last still resident; one that starts over in page order
    /// finds none (the clock evicted each page before the sweep came back).
    #[test]
    fn a_zigzag_reuses_what_a_restarting_sweep_evicts() {
        let dram = 4 * MIB;
        // the clock's order alone (young_flush off: its shootdowns change
        // reclaim's timing, not which pages the clock passes over)
        let s = sys(dram, "raid-ssd", 16 * dram, &["swap.young_flush=false"]);
        let mut w = thrash(3 * dram / PAGE / 2 / 16, 0);
        w.accesses = 4 * w.pages_per_thread;
        w.write_fraction = 0.3;
        w.pattern = Pattern::Sequential;
        let seq = run(&s, &PresetStore::default(), &w).expect("runs");
        w.pattern = Pattern::Zigzag;
        let zig = run(&s, &PresetStore::default(), &w).expect("runs");
        assert!(
            (zig.major_faults as f64) < 0.75 * seq.major_faults as f64,
            "{zig:?} {seq:?}"
        );
        assert!(zig.accesses_per_s > seq.accesses_per_s);
        assert_eq!(Pattern::Zigzag.sweep_index(12, 10), 7);
    }

    #[test]
    fn runs_are_deterministic() {
        let a = serde_json::to_string(&go("fusion-io", 3, &[])).expect("json");
        let b = serde_json::to_string(&go("fusion-io", 3, &[])).expect("json");
        assert_eq!(a, b);
    }

    #[test]
    fn bad_configurations_are_refused_by_name() {
        let s = sys(4 * MIB, "haste-pcm", 1 << 40, &[]);
        let e = run(&s, &PresetStore::default(), &thrash(64, 1)).expect_err("too big");
        assert!(e.to_string().contains("swap.swap_bytes"), "{e}");
        let e = SystemConfig::load(
            &PresetStore::default(),
            "swap-linux",
            &["swap.page_cluster=11".to_string()],
        )
        .expect_err("refused");
        assert!(e.to_string().contains("swap.page_cluster"), "{e}");
        // more pages than frames and slots
        let s = sys(4 * MIB, "haste-pcm", 4 * MIB, &[]);
        let e = run(&s, &PresetStore::default(), &thrash(4096, 1)).expect_err("does not fit");
        assert!(e.to_string().contains("do not fit"), "{e}");
    }
}
