//! The NVMM cost model: what reads, writes, persists and syncs cost on a
//! non-volatile main memory with PMEP's knobs (see `docs/spec/nvmm.md`).
//!
//! This module is pure: no clock, no IO, no global state, no hash maps, and
//! it uses nothing else from this crate (the runtime uses *it*, for the
//! [`FlushMode`] and [`SyncMode`] names and the page/line geometry). The
//! simulator's `nvmm` device class is a thin wrapper over these functions.
//!
//! # The knobs
//!
//! | knob    | field(s) |
//! |---------|----------|
//! | L_READ  | [`NvmmParams::l_read_ns`], floored by [`NvmmParams::dram_read_ns`] |
//! | Th_BW   | [`NvmmParams::th_bw`] × [`NvmmParams::dram_bw_bytes_per_s`] |
//! | L_WBAR  | [`NvmmParams::l_wbar_ns`] |
//! | M_FLUSH | [`NvmmParams::m_flush`] with the per-line costs `flush_*_ns_per_line` |
//! | M_SYNC  | [`NvmmParams::m_sync`] with `spf_scan_fixed_ns`, `spf_scan_ns_per_page` |
//!
//! # Using it from a device model
//!
//! ```
//! use storlab_pmem::model::{NvmmParams, Preset};
//!
//! let p = NvmmParams::preset(Preset::NvmmOpt);
//! p.validate().unwrap();
//! // A 4 KiB sequential read: one exposed miss, the rest is bandwidth.
//! let read = p.read_ns(4096, 1);
//! // Write one byte into page 3 of a 1 MiB region, then msync the region.
//! let dirty = [3u64];
//! let plan = p.sync_plan(0, 1 << 20, &dirty);
//! assert_eq!(plan.lines, 64); // SPF: only page 3's lines
//! let cost = p.sync_cost(&plan);
//! assert!(cost.total_ns() > 0 && read > 0);
//! ```
//!
//! Times are `f64` nanoseconds inside and rounded to whole nanoseconds
//! (`u64`) once per component on the way out, so results are identical on
//! every platform.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Bytes per CPU cache line on every x86-64 CPU storlab targets.
pub const LINE_BYTES: u64 = 64;

/// Errors of the cost model: unknown names and out-of-domain parameters.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// A name (flush mode, sync mode, preset) is not known.
    #[error("unknown {what} {name:?}; expected one of: {expected}")]
    UnknownName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        name: String,
        /// The accepted names, comma separated.
        expected: &'static str,
    },
    /// A parameter is outside its domain.
    #[error("nvmm parameter {field} = {value} is invalid: {reason}")]
    Invalid {
        /// The field's name.
        field: &'static str,
        /// Its value, formatted.
        value: String,
        /// The rule it breaks.
        reason: &'static str,
    },
}

/// M_FLUSH: how a cache line is written back from the CPU caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushMode {
    /// `clflush`: write back and invalidate; strongly ordered (slow).
    Clflush,
    /// `clflushopt`: write back and invalidate; ordered only by `sfence`.
    Clflushopt,
    /// `clwb`: write back, may keep the line cached; ordered by `sfence`.
    Clwb,
    /// Weakly ordered flush, emulated by reading the line and writing it
    /// back with non-temporal stores, then `sfence`.
    Wof,
}

impl FlushMode {
    /// Every mode, in the order the study lists them.
    pub const ALL: [FlushMode; 4] = [
        FlushMode::Clflush,
        FlushMode::Clflushopt,
        FlushMode::Clwb,
        FlushMode::Wof,
    ];

    /// The mode's name as used in flags, presets and JSON.
    pub fn name(self) -> &'static str {
        match self {
            FlushMode::Clflush => "clflush",
            FlushMode::Clflushopt => "clflushopt",
            FlushMode::Clwb => "clwb",
            FlushMode::Wof => "wof",
        }
    }
}

impl fmt::Display for FlushMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FlushMode {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        FlushMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| ModelError::UnknownName {
                what: "flush mode",
                name: s.to_string(),
                expected: "clflush, clflushopt, clwb, wof",
            })
    }
}

/// M_SYNC: which lines an msync-style sync flushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Every cache line of the region.
    Default,
    /// Selective persistence flushing: only lines of pages written since the
    /// last sync (see [`NvmmParams::sync_plan`] for the sub-page rule).
    Spf,
}

impl SyncMode {
    /// Both policies.
    pub const ALL: [SyncMode; 2] = [SyncMode::Default, SyncMode::Spf];

    /// The policy's name as used in flags, presets and JSON.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Default => "default",
            SyncMode::Spf => "spf",
        }
    }
}

impl fmt::Display for SyncMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SyncMode {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        SyncMode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| ModelError::UnknownName {
                what: "sync mode",
                name: s.to_string(),
                expected: "default, spf",
            })
    }
}

mod pages;
pub use pages::{covered_lines, split_pages, PageSplit, PartialPage};

/// The study's six configurations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Preset {
    /// NVMM with DRAM's performance, but paying flushes and barriers.
    Pdram,
    /// Slower reads (300 ns).
    PmLat,
    /// Slower reads and 1/8 bandwidth.
    PmBw,
    /// PM-BW plus a 1 µs write barrier.
    NvmmRaw,
    /// NVMM-Raw with WOF flushes.
    NvmmWof,
    /// NVMM-WOF with SPF.
    NvmmOpt,
}

impl Preset {
    /// All six, in the study's order.
    pub const ALL: [Preset; 6] = [
        Preset::Pdram,
        Preset::PmLat,
        Preset::PmBw,
        Preset::NvmmRaw,
        Preset::NvmmWof,
        Preset::NvmmOpt,
    ];

    /// The preset's name, which is also its file name under `presets/`
    /// (`<name>.toml`).
    pub fn name(self) -> &'static str {
        match self {
            Preset::Pdram => "pdram",
            Preset::PmLat => "pm-lat",
            Preset::PmBw => "pm-bw",
            Preset::NvmmRaw => "nvmm-raw",
            Preset::NvmmWof => "nvmm-wof",
            Preset::NvmmOpt => "nvmm-opt",
        }
    }
}

impl FromStr for Preset {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, ModelError> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| ModelError::UnknownName {
                what: "nvmm preset",
                name: s.to_string(),
                expected: "pdram, pm-lat, pm-bw, nvmm-raw, nvmm-wof, nvmm-opt",
            })
    }
}

/// Flush, fence and SPF costs of one host, for [`NvmmParams::with_calibration`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// ns per line, `clflush`.
    pub clflush_ns_per_line: f64,
    /// ns per line, `clflushopt`.
    pub clflushopt_ns_per_line: f64,
    /// ns per line, `clwb`.
    pub clwb_ns_per_line: f64,
    /// ns per line, WOF.
    pub wof_ns_per_line: f64,
    /// ns for the fence ending a batch of flushes.
    pub fence_ns: f64,
    /// Fixed ns of an SPF dirty-page lookup.
    pub spf_scan_fixed_ns: f64,
    /// ns per page looked at by SPF.
    pub spf_scan_ns_per_page: f64,
    /// ns of the write-protect fault taken by the first write to a page
    /// after an SPF sync cleaned it.
    pub spf_fault_ns_per_dirty_page: f64,
}

/// This crate's host, measured with `msync_bench` (release build, memfd
/// backing, L_WBAR 1000 ns, uffd-wp-async tracking) on an AMD EPYC KVM
/// guest with 2 vCPUs and Linux 6.18 on 2026-11-21; medians of six runs.
///
/// * per-line costs: slope of the `default` rows' sync time between 1 MiB
///   and 100 MiB (clean, mostly uncached lines, as in the study's
///   experiment);
/// * `fence_ns`: the 64-byte `default` row minus L_WBAR and one line
///   (includes reading the TSC for the counters);
/// * SPF: slope (per page) and intercept (fixed) of the `spf` rows' sync
///   time net of L_WBAR, the fence and 64 lines; the fault cost is the
///   4 KiB `spf` row's operation time minus its sync time.
///
/// On this host WOF is the *most* expensive mode (it is bound by memory
/// bandwidth: every flushed line is read and written), and `clflush` is as
/// cheap as `clflushopt`: the study's ordering (WOF and clwb cheaper than
/// clflush) does not hold here, which is why the presets do not use these
/// numbers (see [`NvmmParams::preset`]).
pub const HOST_EPYC_KVM_2026_11_21: Calibration = Calibration {
    clflush_ns_per_line: 0.675,
    clflushopt_ns_per_line: 0.660,
    clwb_ns_per_line: 0.781,
    wof_ns_per_line: 5.07,
    fence_ns: 70.0,
    spf_scan_fixed_ns: 1300.0,
    spf_scan_ns_per_page: 0.983,
    spf_fault_ns_per_dirty_page: 1040.0,
};

/// Latency of an msync on a hard disk, as the presets take it: the
/// simulator's own 7200 rpm disk (`presets/hdd-7200.toml`) writing back one
/// dirty 4 KB page of a 10 MiB file, its mean sync latency (`storlab sim
/// --device hdd-7200 --name=m --rw=randwrite --bs=4k --fsync=1 --size=10m
/// --number_ios=2000`: 5.64 ms; a short seek, the write settle and half a
/// rotation). docs/spec/nvmm.md gives no figure, only that msync with clflush or
/// clflushopt of a region over 10 MB was slower than msync on a hard disk;
/// `storlab lab reproduce nvmm` runs both and fails if they drift apart.
/// (Until 2026-11-25 this was half a rotation alone, 4.17 ms, which put
/// the crossover at 7.4 MB on the model's own disk.)
pub const HDD_MSYNC_NS: f64 = 5.64e6;

/// DRAM bandwidth assumed by the presets, in bytes per second: two DDR3-1600
/// channels (12.8 GB/s each, the JEDEC peak of a 64-bit channel) per
/// socket, since docs/spec/nvmm.md puts NVMM on channels 2-3 of each socket of the
/// PMEP machine but does not give the DDR speed.
pub const ASSUMED_PMEP_DRAM_BW_BYTES_PER_S: f64 = 2.0 * 12.8e9;

/// The NVMM device's parameters: PMEP's five knobs plus the costs they
/// scale. Units are in the field names. Loaded from the `[nvmm]` table of a
/// preset file; unknown fields are refused.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmmParams {
    /// L_READ: the NVMM read latency to emulate, in ns.
    pub l_read_ns: f64,
    /// The real DRAM latency: PMEP cannot emulate a read latency below it
    /// (docs/spec/nvmm.md: flat at about 150 ns for L_READ below 150 ns).
    pub dram_read_ns: f64,
    /// Th_BW: bandwidth as a fraction of DRAM bandwidth, 1/16 to 1.
    pub th_bw: f64,
    /// DRAM bandwidth that Th_BW scales, in bytes per second.
    pub dram_bw_bytes_per_s: f64,
    /// L_WBAR: latency of the persistent write barrier, in ns.
    pub l_wbar_ns: f64,
    /// M_FLUSH.
    pub m_flush: FlushMode,
    /// M_SYNC.
    pub m_sync: SyncMode,
    /// Cache-line size in bytes (a power of two).
    pub line_bytes: u64,
    /// Page size in bytes (SPF's tracking granularity; a multiple of
    /// `line_bytes`).
    pub page_bytes: u64,
    /// Cost of flushing one line with `clflush`, in ns.
    pub flush_clflush_ns_per_line: f64,
    /// Cost of flushing one line with `clflushopt`, in ns.
    pub flush_clflushopt_ns_per_line: f64,
    /// Cost of flushing one line with `clwb`, in ns.
    pub flush_clwb_ns_per_line: f64,
    /// Cost of flushing one line with WOF, in ns.
    pub flush_wof_ns_per_line: f64,
    /// Cost of the fence that ends a batch of flushes, in ns.
    pub fence_ns: f64,
    /// Fixed cost of SPF's dirty-page lookup per sync, in ns.
    pub spf_scan_fixed_ns: f64,
    /// Cost of SPF's dirty-page lookup per page of the synced range, in ns.
    pub spf_scan_ns_per_page: f64,
    /// Cost of re-arming write tracking on a page SPF cleaned: the fault
    /// the first write to it takes afterwards, in ns (charged to the sync).
    pub spf_fault_ns_per_dirty_page: f64,
}

/// Which lines a sync flushes and which pages it looks at; computed by
/// [`NvmmParams::sync_plan`], priced by [`NvmmParams::sync_cost`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncPlan {
    /// The policy the plan follows.
    pub mode: SyncMode,
    /// Cache lines to flush.
    pub lines: u64,
    /// Pages whose dirty state is consulted (0 for `default`).
    pub pages_scanned: u64,
    /// Pages found dirty (wholly or partly covered).
    pub dirty_pages: u64,
    /// Dirty pages made clean (wholly covered ones); each costs a fault on
    /// its next write.
    pub cleaned_pages: u64,
    /// Dirty pages in `[clear_first, clear_end)` become clean after the sync;
    /// partly covered pages stay dirty. Empty for `default`.
    pub clear_first: u64,
    /// See `clear_first`.
    pub clear_end: u64,
}

/// What an operation costs, by component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCost {
    /// Cache lines flushed.
    pub lines_flushed: u64,
    /// ns in flush instructions.
    pub flush_ns: u64,
    /// ns finding dirty pages (SPF only).
    pub scan_ns: u64,
    /// ns in the fence and the write barrier (L_WBAR).
    pub barrier_ns: u64,
}

impl OpCost {
    /// Sum of the components.
    pub fn total_ns(&self) -> u64 {
        self.flush_ns + self.scan_ns + self.barrier_ns
    }
}

fn ns(x: f64) -> u64 {
    // Parameters are validated finite and non-negative; round half up.
    (x + 0.5).floor() as u64
}

impl NvmmParams {
    /// The parameters of one of the study's configurations. The files under
    /// `presets/` hold the same values with a source for each (a test keeps
    /// them equal). Sources:
    ///
    /// * L_READ, Th_BW, L_WBAR, M_FLUSH, M_SYNC: docs/spec/nvmm.md's table;
    ///   `dram_read_ns` = 150: docs/spec/nvmm.md (PMEP's floor);
    /// * `dram_bw_bytes_per_s`: [`ASSUMED_PMEP_DRAM_BW_BYTES_PER_S`];
    /// * `clflush`, `clflushopt` per line: docs/spec/nvmm.md says msync with them of a
    ///   region over 10 MB was slower than on a hard disk, so the cost of
    ///   10 MiB of lines equals [`HDD_MSYNC_NS`]: 34.4 ns per line;
    /// * WOF per line: one 64-byte line written at the preset's NVMM
    ///   bandwidth (WOF rewrites every line it flushes; on this crate's host
    ///   WOF is likewise bandwidth-bound), 2.5 ns at Th_BW 1, 20 ns at 1/8;
    /// * `clwb` per line: docs/spec/nvmm.md only says it is cheaper than clflush, like
    ///   WOF; set equal to WOF;
    /// * fence and SPF costs: [`HOST_EPYC_KVM_2026_11_21`] (the study's
    ///   in-kernel SPF has no published cost; ours is what the runtime pays).
    pub fn preset(p: Preset) -> NvmmParams {
        let host = HOST_EPYC_KVM_2026_11_21;
        // docs/spec/nvmm.md, "Configurations of the study".
        let (l_read_ns, th_bw, l_wbar_ns, m_flush, m_sync) = match p {
            Preset::Pdram => (150.0, 1.0, 0.0, FlushMode::Clflush, SyncMode::Default),
            Preset::PmLat => (300.0, 1.0, 0.0, FlushMode::Clflush, SyncMode::Default),
            Preset::PmBw => (300.0, 0.125, 0.0, FlushMode::Clflush, SyncMode::Default),
            Preset::NvmmRaw => (300.0, 0.125, 1000.0, FlushMode::Clflush, SyncMode::Default),
            Preset::NvmmWof => (300.0, 0.125, 1000.0, FlushMode::Wof, SyncMode::Default),
            Preset::NvmmOpt => (300.0, 0.125, 1000.0, FlushMode::Wof, SyncMode::Spf),
        };
        let clflush = round1(HDD_MSYNC_NS / ((10u64 << 20) / LINE_BYTES) as f64);
        let wof = round1(LINE_BYTES as f64 * 1e9 / (th_bw * ASSUMED_PMEP_DRAM_BW_BYTES_PER_S));
        NvmmParams {
            l_read_ns,
            dram_read_ns: 150.0,
            th_bw,
            dram_bw_bytes_per_s: ASSUMED_PMEP_DRAM_BW_BYTES_PER_S,
            l_wbar_ns,
            m_flush,
            m_sync,
            line_bytes: LINE_BYTES,
            page_bytes: 4096,
            flush_clflush_ns_per_line: clflush,
            flush_clflushopt_ns_per_line: clflush,
            flush_clwb_ns_per_line: wof,
            flush_wof_ns_per_line: wof,
            fence_ns: host.fence_ns,
            spf_scan_fixed_ns: host.spf_scan_fixed_ns,
            spf_scan_ns_per_page: host.spf_scan_ns_per_page,
            spf_fault_ns_per_dirty_page: host.spf_fault_ns_per_dirty_page,
        }
    }

    /// These parameters with the flush, fence and SPF costs of `c` (for
    /// modelling a measured host instead of the study's machine).
    pub fn with_calibration(mut self, c: &Calibration) -> NvmmParams {
        self.flush_clflush_ns_per_line = c.clflush_ns_per_line;
        self.flush_clflushopt_ns_per_line = c.clflushopt_ns_per_line;
        self.flush_clwb_ns_per_line = c.clwb_ns_per_line;
        self.flush_wof_ns_per_line = c.wof_ns_per_line;
        self.fence_ns = c.fence_ns;
        self.spf_scan_fixed_ns = c.spf_scan_fixed_ns;
        self.spf_scan_ns_per_page = c.spf_scan_ns_per_page;
        self.spf_fault_ns_per_dirty_page = c.spf_fault_ns_per_dirty_page;
        self
    }

    /// Check every field's domain: finite non-negative times, Th_BW in
    /// [1/16, 1] (PMEP's range), positive DRAM latency and bandwidth, a
    /// power-of-two line size dividing the page size.
    pub fn validate(&self) -> Result<(), ModelError> {
        let times = [
            ("l_read_ns", self.l_read_ns),
            ("l_wbar_ns", self.l_wbar_ns),
            ("flush_clflush_ns_per_line", self.flush_clflush_ns_per_line),
            (
                "flush_clflushopt_ns_per_line",
                self.flush_clflushopt_ns_per_line,
            ),
            ("flush_clwb_ns_per_line", self.flush_clwb_ns_per_line),
            ("flush_wof_ns_per_line", self.flush_wof_ns_per_line),
            ("fence_ns", self.fence_ns),
            ("spf_scan_fixed_ns", self.spf_scan_fixed_ns),
            ("spf_scan_ns_per_page", self.spf_scan_ns_per_page),
            (
                "spf_fault_ns_per_dirty_page",
                self.spf_fault_ns_per_dirty_page,
            ),
        ];
        for (field, v) in times {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(field, v, "must be a finite number >= 0"));
            }
        }
        if !(self.dram_read_ns.is_finite() && self.dram_read_ns > 0.0) {
            return Err(invalid("dram_read_ns", self.dram_read_ns, "must be > 0"));
        }
        if !(self.dram_bw_bytes_per_s.is_finite() && self.dram_bw_bytes_per_s > 0.0) {
            return Err(invalid(
                "dram_bw_bytes_per_s",
                self.dram_bw_bytes_per_s,
                "must be > 0",
            ));
        }
        if !(self.th_bw >= 1.0 / 16.0 && self.th_bw <= 1.0) {
            return Err(invalid(
                "th_bw",
                self.th_bw,
                "must be between 1/16 and 1 (PMEP's throttle range)",
            ));
        }
        if !self.line_bytes.is_power_of_two() {
            return Err(ModelError::Invalid {
                field: "line_bytes",
                value: self.line_bytes.to_string(),
                reason: "must be a power of two",
            });
        }
        if self.page_bytes == 0 || self.page_bytes & (self.line_bytes - 1) != 0 {
            return Err(ModelError::Invalid {
                field: "page_bytes",
                value: self.page_bytes.to_string(),
                reason: "must be a non-zero multiple of line_bytes",
            });
        }
        Ok(())
    }

    /// The read latency PMEP delivers: L_READ, but never below the DRAM
    /// latency (docs/spec/nvmm.md: flat at about 150 ns below 150 ns, tracking L_READ
    /// from 150 to 600 ns).
    pub fn read_latency_ns(&self) -> f64 {
        self.l_read_ns.max(self.dram_read_ns)
    }

    /// NVMM bandwidth: Th_BW × DRAM bandwidth, in bytes per second.
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        self.th_bw * self.dram_bw_bytes_per_s
    }

    /// Time to move `bytes` at the throttled bandwidth, in ns (unrounded).
    fn transfer_ns(&self, bytes: u64) -> f64 {
        bytes as f64 * 1e9 / self.bandwidth_bytes_per_s()
    }

    /// Flush cost per line for `mode`, in ns.
    pub fn flush_ns_per_line(&self, mode: FlushMode) -> f64 {
        match mode {
            FlushMode::Clflush => self.flush_clflush_ns_per_line,
            FlushMode::Clflushopt => self.flush_clflushopt_ns_per_line,
            FlushMode::Clwb => self.flush_clwb_ns_per_line,
            FlushMode::Wof => self.flush_wof_ns_per_line,
        }
    }

    /// Cost of reading `bytes` of which `missed_lines` cache lines miss to
    /// NVMM with their stall exposed: each exposed miss stalls for
    /// [`Self::read_latency_ns`] (PMEP stretches the stall), and the bytes
    /// move at the throttled bandwidth. Pass `missed_lines = 1` for a
    /// sequential read whose later misses the prefetcher overlaps, or the
    /// number of dependent misses for pointer chasing; 0 for a cache hit.
    pub fn read_ns(&self, bytes: u64, missed_lines: u64) -> u64 {
        ns(missed_lines as f64 * self.read_latency_ns() + self.transfer_ns(bytes))
    }

    /// Cost of writing `bytes`: stores land in the write-back caches, so the
    /// cost is the bandwidth to eventually move them to NVMM (docs/spec/nvmm.md: write
    /// latency is not emulated directly, writes are modelled through
    /// bandwidth).
    pub fn write_ns(&self, bytes: u64) -> u64 {
        ns(self.transfer_ns(bytes))
    }

    /// Which lines a sync of `[offset, offset+len)` flushes, given the
    /// sorted, duplicate-free indices (byte offset / `page_bytes`) of pages
    /// written since their last SPF sync.
    ///
    /// * `default`: every line the range touches; dirty state is neither
    ///   read nor cleared.
    /// * `spf`: a wholly covered page is flushed (all its lines) if dirty
    ///   and then becomes clean; a partly covered page (a range smaller than
    ///   a page, or the ragged ends of a larger one) has only the range's
    ///   lines flushed if it is dirty, and stays dirty, because other lines
    ///   of it may still be dirty (docs/spec/nvmm.md).
    pub fn sync_plan(&self, offset: u64, len: u64, dirty_pages: &[u64]) -> SyncPlan {
        let lines = covered_lines(offset, len, self.line_bytes);
        if self.m_sync == SyncMode::Default {
            return SyncPlan {
                mode: SyncMode::Default,
                lines,
                pages_scanned: 0,
                dirty_pages: 0,
                cleaned_pages: 0,
                clear_first: 0,
                clear_end: 0,
            };
        }
        let split = split_pages(offset, len, self.page_bytes);
        let is_dirty = |p: u64| dirty_pages.binary_search(&p).is_ok();
        let mut plan = SyncPlan {
            mode: SyncMode::Spf,
            lines: 0,
            pages_scanned: split.pages(),
            dirty_pages: 0,
            cleaned_pages: 0,
            clear_first: split.full_first,
            clear_end: split.full_end,
        };
        for part in [split.head, split.tail].into_iter().flatten() {
            if is_dirty(part.page) {
                plan.dirty_pages += 1;
                plan.lines += covered_lines(part.offset, part.len, self.line_bytes);
            }
        }
        let lo = dirty_pages.partition_point(|&p| p < split.full_first);
        let hi = dirty_pages.partition_point(|&p| p < split.full_end);
        let full_dirty = (hi - lo) as u64;
        plan.dirty_pages += full_dirty;
        plan.cleaned_pages = full_dirty;
        plan.lines += full_dirty * (self.page_bytes / self.line_bytes);
        plan
    }

    /// Price a sync plan: lines × the M_FLUSH per-line cost, the SPF scan
    /// (fixed + per page + a re-arm fault per cleaned page, SPF only), and, when anything was flushed, one
    /// fence plus L_WBAR. A sync that flushes nothing issues no barrier
    /// (as the runtime does).
    pub fn sync_cost(&self, plan: &SyncPlan) -> OpCost {
        let scan_ns = if plan.mode == SyncMode::Spf && plan.pages_scanned > 0 {
            ns(self.spf_scan_fixed_ns
                + plan.pages_scanned as f64 * self.spf_scan_ns_per_page
                + plan.cleaned_pages as f64 * self.spf_fault_ns_per_dirty_page)
        } else {
            0
        };
        OpCost {
            lines_flushed: plan.lines,
            flush_ns: ns(plan.lines as f64 * self.flush_ns_per_line(self.m_flush)),
            scan_ns,
            barrier_ns: self.barrier_ns(plan.lines),
        }
    }

    /// Total cost of a sync (see [`Self::sync_plan`] and [`Self::sync_cost`]).
    pub fn sync_ns(&self, offset: u64, len: u64, dirty_pages: &[u64]) -> u64 {
        self.sync_cost(&self.sync_plan(offset, len, dirty_pages))
            .total_ns()
    }

    /// Cost of `persist(offset, len)`: flush every line the range touches
    /// with M_FLUSH, fence, pay L_WBAR.
    pub fn persist_cost(&self, offset: u64, len: u64) -> OpCost {
        let lines = covered_lines(offset, len, self.line_bytes);
        OpCost {
            lines_flushed: lines,
            flush_ns: ns(lines as f64 * self.flush_ns_per_line(self.m_flush)),
            scan_ns: 0,
            barrier_ns: self.barrier_ns(lines),
        }
    }

    /// Cost of making durable a write the kernel copied into the NVMM
    /// with non-temporal stores, as PMFS does without `clwb`
    /// (`memcpy_to_nvmm`: `__copy_from_user_inatomic_nocache`, fs/pmfs/xip.c)
    /// and Linux's pmem driver does for every block write
    /// (`memcpy_flushcache`, drivers/nvdimm/pmem.c): the stores bypass
    /// the caches, so only a line the copy reached through them is
    /// flushed (an edge not 8-byte aligned: `pmfs_flush_edge_cachelines`),
    /// then the fence and the barrier. Compare [`Self::persist_cost`],
    /// the cost of stores made through the caches (a mapped region's).
    pub fn nt_write_persist_cost(&self, offset: u64, len: u64) -> OpCost {
        if len == 0 {
            return OpCost::default();
        }
        let end = offset + len;
        let mut lines = u64::from(!offset.is_multiple_of(8));
        if !end.is_multiple_of(8)
            && (offset.is_multiple_of(8) || covered_lines(offset, len, self.line_bytes) > 1)
        {
            lines += 1;
        }
        OpCost {
            lines_flushed: lines,
            flush_ns: ns(lines as f64 * self.flush_ns_per_line(self.m_flush)),
            scan_ns: 0,
            barrier_ns: ns(self.fence_ns + self.l_wbar_ns),
        }
    }

    fn barrier_ns(&self, lines: u64) -> u64 {
        if lines == 0 {
            0
        } else {
            ns(self.fence_ns + self.l_wbar_ns)
        }
    }
}

/// Round to one decimal (preset values are written that way in the files).
fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn invalid(field: &'static str, v: f64, reason: &'static str) -> ModelError {
    ModelError::Invalid {
        field,
        value: v.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests;
