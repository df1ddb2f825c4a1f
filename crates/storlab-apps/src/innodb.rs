//! MySQL/InnoDB: sysbench OLTP (`oltp`) and TPC-C (`tpcc`) on one model
//! of InnoDB's storage engine (docs/spec/workloads.md: OLTP 8 GB; TPC-C 100
//! warehouses, 100 clients, 9.4 GB in the NVMM study, 200 GB with 24 GB
//! of DRAM in the flash placement study, docs/spec/hybrid.md).
//!
//! The engine ([`Inno`]): 16 KB pages of one tablespace file held in a
//! buffer pool (clock replacement; InnoDB's LRU with a midpoint insertion
//! behaves alike for the point accesses modelled here); a page that
//! misses is read from the tablespace (buffered `pread` with
//! `innodb_flush_method=fdatasync`, the default of the studies' MySQL
//! versions, or `O_DIRECT`). A transaction's row changes dirty their leaf
//! pages and an undo page, and produce redo records; COMMIT appends them
//! to the redo log with group commit and waits for the write and its
//! fsync (`innodb_flush_log_at_trx_commit=1`). A background thread (the
//! master thread / page cleaner) wakes every second and flushes dirty
//! pages from the replacement end of the pool: `innodb_io_capacity`
//! pages, more when the dirty share passes `innodb_max_dirty_pages_pct`
//! and as many as the redo written since the last round stands for
//! (adaptive flushing), every page written twice: first a batch of up to
//! 64 pages sequentially into the doublewrite area and an fsync, then each
//! page in place and an fsync of the tablespace. When the redo not yet
//! covered by flushed pages passes 15/16 of the log's capacity, the next
//! transaction's thread flushes every dirty page itself before it goes on
//! and the other threads wait for it (`log_check_margins`: a synchronous
//! checkpoint). A user thread that needs a frame whose page is dirty
//! flushes that page itself through the doublewrite buffer (a single-page
//! flush).
//!
//! Hybrid memory (docs/spec/hybrid.md, placement 2): with `hybrid` bytes the
//! buffer pool is `buffer_pool + hybrid` bytes of flash-backed memory of
//! which only `buffer_pool` bytes are in DRAM; a touch of a buffer page
//! that is not in DRAM waits for the page to be faulted in from the flash
//! (`hybrid_fault_us`).

mod engine;
mod oltp;
mod tpcc;

use crate::info::AppInfo;

/// `oltp` and `tpcc`.
pub static APPS: &[&AppInfo] = &[&oltp::OLTP, &tpcc::TPCC];

#[cfg(test)]
mod tests;
