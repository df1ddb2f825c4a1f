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

pub mod config;
mod fault;
mod frames;
pub mod machine;
mod reclaim;
pub mod workload;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use config::*;
pub use machine::*;
pub use workload::*;

#[cfg(test)]
mod tests;
