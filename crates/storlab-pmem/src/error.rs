//! The crate's error type.
//!
//! Every misuse (a bad size, an out-of-range or foreign address, a flush
//! mode the CPU lacks, SPF without dirty tracking, a kernel that refuses
//! userfaultfd) is reported as a [`PmemError`] with enough context to act on;
//! nothing in this crate panics on bad input, and the C API turns these
//! errors into `-1` plus a message (see `storlab_pmem_last_error`).

use std::path::PathBuf;

use crate::model::{FlushMode, ModelError};

/// What went wrong in the persistent-memory runtime or the benchmark.
#[derive(Debug, thiserror::Error)]
pub enum PmemError {
    /// An argument is malformed (zero size, a value out of its domain).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A size or offset must be a multiple of some alignment and is not.
    #[error("{what} = {value} is not a multiple of {align} bytes")]
    Unaligned {
        /// Which argument.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The required alignment in bytes.
        align: u64,
    },

    /// A byte range does not lie inside the region.
    #[error("range [{offset}, {offset} + {len}) is outside the region of {region_len} bytes")]
    OutOfRange {
        /// Start of the range, as an offset into the region.
        offset: u64,
        /// Length of the range in bytes.
        len: u64,
        /// Size of the region in bytes.
        region_len: u64,
    },

    /// A raw address (C API) does not point into the region.
    #[error("address {addr:#x} (+{len} bytes) is not inside the region at {base:#x}..{end:#x}")]
    AddressOutside {
        /// The address given.
        addr: usize,
        /// The length given.
        len: u64,
        /// First byte of the region.
        base: usize,
        /// One past the last byte of the region.
        end: usize,
    },

    /// The region cannot be mapped because it is too large.
    #[error("a region of {size} bytes is too large: {reason} (limit {limit} bytes)")]
    RegionTooLarge {
        /// The size asked for.
        size: u64,
        /// The largest size allowed here.
        limit: u64,
        /// Why the limit exists.
        reason: String,
    },

    /// The CPU lacks the instruction a flush mode needs.
    #[error(
        "flush mode {mode} is not supported by this CPU ({cpu}): CPUID does not report \
         {instruction}; supported modes here: {supported}"
    )]
    UnsupportedMode {
        /// The mode asked for.
        mode: FlushMode,
        /// The instruction or CPUID feature that is missing.
        instruction: &'static str,
        /// The CPU model string.
        cpu: String,
        /// Comma-separated list of the modes this CPU does support.
        supported: String,
    },

    /// userfaultfd exists but this process may not use it.
    #[error(
        "userfaultfd is not permitted here ({detail}); SPF needs it for uffd-wp-async \
         dirty tracking: allow the userfaultfd syscall (seccomp), grant CAP_SYS_PTRACE, set \
         vm.unprivileged_userfaultfd=1 or give access to /dev/userfaultfd, or map the region \
         with tracking `auto` or `mprotect` to use the mprotect/SIGSEGV fallback"
    )]
    UffdPermission {
        /// What the kernel answered.
        detail: String,
    },

    /// A dirty-tracking mechanism cannot be set up on this host.
    #[error("dirty tracking `{mechanism}` is unavailable: {reason}")]
    TrackingUnavailable {
        /// The mechanism's name (`uffd-wp-async`, `mprotect`).
        mechanism: &'static str,
        /// Why.
        reason: String,
    },

    /// SPF was asked for on a region mapped without dirty tracking.
    #[error(
        "M_SYNC = spf needs dirty-page tracking, but this region was mapped with tracking \
         `off`; map it with tracking `auto`, `uffd` or `mprotect`"
    )]
    NoTracking,

    /// A system call failed.
    // The OS error is the source (printed by `{:#}` or a chain walk), not
    // repeated here: the CLI printed it twice.
    #[error("{call}{}", path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Sys {
        /// The call, e.g. `mmap` or `ioctl(PAGEMAP_SCAN)`.
        call: &'static str,
        /// The file involved, if any.
        path: Option<PathBuf>,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// A benchmark flag has a bad value.
    #[error("bad value {value:?} for --{flag}: {reason}")]
    BadFlag {
        /// The flag's name without dashes.
        flag: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A benchmark flag name is not known.
    #[error("unknown msync-bench flag --{0} (known: modes, sync, sizes, wbarrier-ns, reps, tracking, backing, disk-dir)")]
    UnknownFlag(String),

    /// The cost model rejected its parameters.
    #[error(transparent)]
    Model(#[from] ModelError),
}

impl PmemError {
    /// A failed system call, with the current `errno`.
    pub(crate) fn last_os(call: &'static str) -> Self {
        PmemError::Sys {
            call,
            path: None,
            source: std::io::Error::last_os_error(),
        }
    }

    /// A failed system call on a file, with the current `errno`.
    pub(crate) fn last_os_path(call: &'static str, path: &std::path::Path) -> Self {
        PmemError::Sys {
            call,
            path: Some(path.to_path_buf()),
            source: std::io::Error::last_os_error(),
        }
    }
}
