//! The swap path's `[swap]` table, its page-size constants, and its
//! validation.

use serde::{Deserialize, Serialize};

use crate::config::{check_range, ConfigError};

/// Page size of the swap path (x86).
pub const PAGE: u64 = 4096;
/// `SWAP_CLUSTER_MAX`: pages reclaimed per batch (include/linux/swap.h).
pub const SWAP_CLUSTER_MAX: usize = 32;
/// `SWAPFILE_CLUSTER`: slots allocated together (mm/swapfile.c).
pub const SWAPFILE_CLUSTER: u32 = 256;

/// No page, frame or slot.
pub(super) const NONE: u32 = u32::MAX;

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
    /// The host's sustained DRAM bandwidth, bytes a second, shared by the
    /// threads that compute: an access's computation takes its CPU time
    /// or, if longer, the time its DRAM traffic (the workload's
    /// `bytes_per_access`, twice for a store: the line read for ownership
    /// is written back) takes at its share of this bandwidth among the
    /// threads computing at its start (a roofline, in time). Absent:
    /// unlimited.
    #[serde(default)]
    pub dram_bytes_per_s: Option<u64>,
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
    if let Some(bw) = c.dram_bytes_per_s {
        check_range("swap.dram_bytes_per_s", bw, 1 << 20, 1 << 50)?;
    }
    Ok(())
}
