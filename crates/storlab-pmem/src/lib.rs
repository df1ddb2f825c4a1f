//! Emulated persistent memory (NVMM) on an ordinary Linux host, and the
//! NVMM cost model for the simulator.
//!
//! * [`Region`]: a file or memfd mapped into memory, with
//!   [`Region::persist`] (flush the lines of a range with M_FLUSH, fence,
//!   pay L_WBAR) and [`Region::sync`] (msync-style, M_SYNC `default` or
//!   SPF). SPF finds written pages with userfaultfd async write protection
//!   and `PAGEMAP_SCAN`, or with an mprotect/SIGSEGV fallback
//!   ([`TrackingKind`]).
//! * [`capabilities`]: which flush instructions the CPU has, which
//!   dirty-tracking mechanism works, whether hardware counters exist, and
//!   what is and is not emulated here.
//! * [`msync_bench`]: the study's experiment (write one byte, sync a
//!   region, repeat) for each flush mode, sync policy and size, plus
//!   write-then-fdatasync on a disk file.
//! * [`model`]: the pure cost model with PMEP's knobs and the study's six
//!   presets, for the simulator's `nvmm` device class.
//! * A C API (`include/storlab_pmem.h`, the `storlab_pmem_*` functions).
//!
//! See the crate README for the emulation's limits.
#![deny(missing_docs)]

mod bench;
mod caps;
mod cpu;
mod error;
pub mod ffi;
mod flush;
pub mod model;
mod region;
#[doc(hidden)]
pub mod sys;
mod track;

pub use bench::{
    msync_bench, BenchMode, FlagSpec, MsyncBenchOptions, MsyncBenchReport, MsyncBenchRow,
    MSYNC_BENCH_FLAGS,
};
pub use caps::{capabilities, Capabilities, ModeSupport, PerfCounters};
pub use cpu::{cpu_features, cpu_model, CpuFeatures};
pub use error::PmemError;
pub use model::{FlushMode, SyncMode};
pub use region::{page_size, Backing, Counters, Region, RegionOptions, MAX_WBARRIER_NS};
pub use track::mprotect::MAX_REGIONS as MAX_MPROTECT_REGIONS;
pub use track::uffd::open_uffd as open_userfaultfd;
pub use track::{TrackingChoice, TrackingKind};
