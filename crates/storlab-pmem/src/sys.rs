//! Kernel ABI this crate uses that the `libc` crate (0.2.191) does not
//! define: the userfaultfd ioctls and structs, the `PAGEMAP_SCAN` ioctl on
//! `/proc/<pid>/pagemap` (Linux 6.7+), and a minimal `perf_event_attr`.
//!
//! Values are from the kernel UAPI headers `include/uapi/linux/userfaultfd.h`,
//! `include/uapi/linux/fs.h` and `include/uapi/linux/perf_event.h`, which
//! are stable ABI. The host's installed headers (6.1) predate
//! `UFFD_FEATURE_WP_ASYNC` and `PAGEMAP_SCAN`, which is one more reason not
//! to generate bindings from them.

#![allow(dead_code)]

use std::io;

/// `_IOC(dir, type, nr, size)` for x86-64 (generic ioctl encoding).
const fn ioc(dir: u64, ty: u64, nr: u64, size: u64) -> u64 {
    (dir << 30) | (size << 16) | (ty << 8) | nr
}
const IOC_NONE: u64 = 0;
const IOC_WRITE: u64 = 1;
const IOC_READ: u64 = 2;

// ---- userfaultfd ---------------------------------------------------------

/// `UFFD_API`: the API version of the handshake.
pub const UFFD_API: u64 = 0xAA;
/// `UFFD_USER_MODE_ONLY`: only handle faults from user mode; this makes the
/// syscall available to unprivileged processes (Linux 5.11+).
pub const UFFD_USER_MODE_ONLY: libc::c_int = 1;
/// Write-protect support on shmem and hugetlbfs.
pub const UFFD_FEATURE_WP_HUGETLBFS_SHMEM: u64 = 1 << 12;
/// Write-protect also pages not populated yet (pte markers).
pub const UFFD_FEATURE_WP_UNPOPULATED: u64 = 1 << 13;
/// Resolve write-protect faults in the kernel, clearing the protection,
/// instead of delivering them to a handler (Linux 6.7+).
pub const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
/// `UFFDIO_REGISTER_MODE_WP`.
pub const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
/// `UFFDIO_WRITEPROTECT_MODE_WP`.
pub const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1 << 0;

const UFFDIO: u64 = 0xAA;

/// `struct uffdio_api`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UffdioApi {
    /// Must be `UFFD_API`.
    pub api: u64,
    /// Features asked for (in) / supported (out).
    pub features: u64,
    /// Ioctls available (out).
    pub ioctls: u64,
}

/// `struct uffdio_range`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UffdioRange {
    /// Start address, page aligned.
    pub start: u64,
    /// Length in bytes, page aligned.
    pub len: u64,
}

/// `struct uffdio_register`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UffdioRegister {
    /// The range.
    pub range: UffdioRange,
    /// `UFFDIO_REGISTER_MODE_*`.
    pub mode: u64,
    /// Ioctls available on the range (out).
    pub ioctls: u64,
}

/// `struct uffdio_writeprotect`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct UffdioWriteprotect {
    /// The range.
    pub range: UffdioRange,
    /// `UFFDIO_WRITEPROTECT_MODE_*`.
    pub mode: u64,
}

/// `UFFDIO_API = _IOWR(0xAA, 0x3F, struct uffdio_api)`.
pub const UFFDIO_API: u64 = ioc(
    IOC_READ | IOC_WRITE,
    UFFDIO,
    0x3F,
    std::mem::size_of::<UffdioApi>() as u64,
);
/// `UFFDIO_REGISTER = _IOWR(0xAA, 0x00, struct uffdio_register)`.
pub const UFFDIO_REGISTER: u64 = ioc(
    IOC_READ | IOC_WRITE,
    UFFDIO,
    0x00,
    std::mem::size_of::<UffdioRegister>() as u64,
);
/// `UFFDIO_WRITEPROTECT = _IOWR(0xAA, 0x06, struct uffdio_writeprotect)`.
pub const UFFDIO_WRITEPROTECT: u64 = ioc(
    IOC_READ | IOC_WRITE,
    UFFDIO,
    0x06,
    std::mem::size_of::<UffdioWriteprotect>() as u64,
);
/// `UFFDIO_REGISTER_MODE_MISSING`: faults on pages not present are
/// delivered to the handler (storlab-hybrid).
pub const UFFDIO_REGISTER_MODE_MISSING: u64 = 1 << 0;
/// `UFFD_EVENT_PAGEFAULT`: the `event` of a page-fault message.
pub const UFFD_EVENT_PAGEFAULT: u8 = 0x12;
/// Size of `struct uffd_msg`.
pub const UFFD_MSG_BYTES: usize = 32;
/// Offset of `arg.pagefault.address` in `struct uffd_msg` (after the
/// 8-byte header and the 8-byte `flags`).
pub const UFFD_MSG_ADDRESS_OFFSET: usize = 16;

/// `struct uffdio_copy`.
#[repr(C)]
#[derive(Debug, Default)]
pub struct UffdioCopy {
    /// Destination (in the registered range), page aligned.
    pub dst: u64,
    /// Source buffer.
    pub src: u64,
    /// Bytes, a multiple of the page size.
    pub len: u64,
    /// `UFFDIO_COPY_MODE_*` (0: wake the faulting threads).
    pub mode: u64,
    /// Bytes copied, or a negative errno (out).
    pub copy: i64,
}

/// `struct uffdio_zeropage`.
#[repr(C)]
#[derive(Debug, Default)]
pub struct UffdioZeropage {
    /// The range.
    pub range: UffdioRange,
    /// `UFFDIO_ZEROPAGE_MODE_*` (0: wake).
    pub mode: u64,
    /// Bytes zeroed, or a negative errno (out).
    pub zeropage: i64,
}

/// `UFFDIO_WAKE = _IOR(0xAA, 0x02, struct uffdio_range)`.
pub const UFFDIO_WAKE: u64 = ioc(
    IOC_READ,
    0xAA,
    0x02,
    std::mem::size_of::<UffdioRange>() as u64,
);
/// `UFFDIO_COPY = _IOWR(0xAA, 0x03, struct uffdio_copy)`.
pub const UFFDIO_COPY: u64 = ioc(
    IOC_READ | IOC_WRITE,
    0xAA,
    0x03,
    std::mem::size_of::<UffdioCopy>() as u64,
);
/// `UFFDIO_ZEROPAGE = _IOWR(0xAA, 0x04, struct uffdio_zeropage)`.
pub const UFFDIO_ZEROPAGE: u64 = ioc(
    IOC_READ | IOC_WRITE,
    0xAA,
    0x04,
    std::mem::size_of::<UffdioZeropage>() as u64,
);

/// `USERFAULTFD_IOC_NEW = _IO(0xAA, 0x00)` on `/dev/userfaultfd`.
pub const USERFAULTFD_IOC_NEW: u64 = ioc(IOC_NONE, 0xAA, 0x00, 0);

// ---- PAGEMAP_SCAN --------------------------------------------------------

/// `PAGE_IS_WPALLOWED`: async write protection is enabled on the page.
pub const PAGE_IS_WPALLOWED: u64 = 1 << 0;
/// `PAGE_IS_WRITTEN`: written since it was last write-protected.
pub const PAGE_IS_WRITTEN: u64 = 1 << 1;
/// `PM_SCAN_WP_MATCHING`: write-protect the pages that matched.
pub const PM_SCAN_WP_MATCHING: u64 = 1 << 0;
/// `PM_SCAN_CHECK_WPASYNC`: fail if a page lacks async write protection.
pub const PM_SCAN_CHECK_WPASYNC: u64 = 1 << 1;

/// `struct page_region`: a run of pages with the same categories.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PageRegion {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `PAGE_IS_*` bits (masked by `return_mask`).
    pub categories: u64,
}

/// `struct pm_scan_arg`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PmScanArg {
    /// `sizeof(struct pm_scan_arg)`.
    pub size: u64,
    /// `PM_SCAN_*`.
    pub flags: u64,
    /// Start address of the walk.
    pub start: u64,
    /// End address of the walk.
    pub end: u64,
    /// Where the walk stopped (out).
    pub walk_end: u64,
    /// Output `page_region` array.
    pub vec: u64,
    /// Its length in entries.
    pub vec_len: u64,
    /// Stop after this many pages (0: no limit).
    pub max_pages: u64,
    /// Categories to invert before matching.
    pub category_inverted: u64,
    /// Categories that must all be set.
    pub category_mask: u64,
    /// Categories of which one must be set.
    pub category_anyof_mask: u64,
    /// Categories to report.
    pub return_mask: u64,
}

/// `PAGEMAP_SCAN = _IOWR('f', 16, struct pm_scan_arg)`.
pub const PAGEMAP_SCAN: u64 = ioc(
    IOC_READ | IOC_WRITE,
    b'f' as u64,
    16,
    std::mem::size_of::<PmScanArg>() as u64,
);

// ---- perf_event_open -----------------------------------------------------

/// `PERF_TYPE_HARDWARE`.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// `PERF_COUNT_HW_CACHE_MISSES`.
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
/// `PERF_ATTR_SIZE_VER0`: the first 64 bytes of `struct perf_event_attr`,
/// which every kernel accepts.
pub const PERF_ATTR_SIZE_VER0: u32 = 64;

/// The first 64 bytes (`PERF_ATTR_SIZE_VER0`) of `struct perf_event_attr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfEventAttrV0 {
    /// `type`.
    pub type_: u32,
    /// `size`.
    pub size: u32,
    /// `config`.
    pub config: u64,
    /// `sample_period`.
    pub sample_period: u64,
    /// `sample_type`.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// The bit-field word: bit 0 `disabled`, bit 5 `exclude_kernel`, bit 6
    /// `exclude_hv`.
    pub flags: u64,
    /// `wakeup_events`.
    pub wakeup_events: u32,
    /// `bp_type`.
    pub bp_type: u32,
    /// `config1`.
    pub config1: u64,
}

// ---- helpers -------------------------------------------------------------

/// The calling thread's `errno`.
pub fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `ioctl(fd, req, arg)` with the request as the kernel encodes it.
///
/// # Safety
///
/// `arg` must be what `req` expects (a valid pointer to the right struct,
/// or an integer for requests that take one).
pub unsafe fn ioctl(fd: libc::c_int, req: u64, arg: usize) -> libc::c_int {
    // SAFETY: forwarded to the caller.
    unsafe { libc::ioctl(fd, req as libc::c_ulong, arg) }
}

// ---- userfaultfd calls ----------------------------------------------------
//
// The userfaultfd ioctls as calls that build their argument structs
// themselves (shared by the SPF tracker and storlab-hybrid's fault
// handler). Each returns the OS error on failure.

fn check(r: libc::c_int) -> io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn range(start: u64, len: u64) -> UffdioRange {
    UffdioRange { start, len }
}

/// `UFFDIO_API` handshake asking for `features`.
pub fn uffd_api(fd: libc::c_int, features: u64) -> io::Result<()> {
    let mut api = UffdioApi {
        api: UFFD_API,
        features,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_API reads and writes the `struct uffdio_api` above.
    check(unsafe { ioctl(fd, UFFDIO_API, &mut api as *mut _ as usize) })
}

/// `UFFDIO_REGISTER` of `[start, start + len)` in `mode`
/// (`UFFDIO_REGISTER_MODE_*`).
pub fn uffd_register(fd: libc::c_int, start: u64, len: u64, mode: u64) -> io::Result<()> {
    let mut reg = UffdioRegister {
        range: range(start, len),
        mode,
        ioctls: 0,
    };
    // SAFETY: UFFDIO_REGISTER reads and writes the `struct uffdio_register`
    // above; the kernel checks the range is a mapping of this process.
    check(unsafe { ioctl(fd, UFFDIO_REGISTER, &mut reg as *mut _ as usize) })
}

/// `UFFDIO_WRITEPROTECT`: protect `[start, start + len)`, or remove the
/// protection (which also wakes threads waiting on it).
pub fn uffd_writeprotect(fd: libc::c_int, start: u64, len: u64, protect: bool) -> io::Result<()> {
    let mut wp = UffdioWriteprotect {
        range: range(start, len),
        mode: if protect {
            UFFDIO_WRITEPROTECT_MODE_WP
        } else {
            0
        },
    };
    // SAFETY: UFFDIO_WRITEPROTECT reads the `struct uffdio_writeprotect`
    // above; the kernel checks the range is registered.
    check(unsafe { ioctl(fd, UFFDIO_WRITEPROTECT, &mut wp as *mut _ as usize) })
}

/// `UFFDIO_WAKE`: wake the threads waiting on faults in the range.
pub fn uffd_wake(fd: libc::c_int, start: u64, len: u64) -> io::Result<()> {
    let mut r = range(start, len);
    // SAFETY: UFFDIO_WAKE reads the `struct uffdio_range` above.
    check(unsafe { ioctl(fd, UFFDIO_WAKE, &mut r as *mut _ as usize) })
}

/// `UFFDIO_COPY`: fill the missing page(s) at `dst` from `src` and wake
/// their waiters.
///
/// # Safety
/// `src` must be readable for `len` bytes.
pub unsafe fn uffd_copy(fd: libc::c_int, dst: u64, src: *const u8, len: u64) -> io::Result<()> {
    let mut c = UffdioCopy {
        dst,
        src: src as u64,
        len,
        mode: 0,
        copy: 0,
    };
    // SAFETY: UFFDIO_COPY reads the struct above and `len` bytes at `src`,
    // which the caller guarantees.
    check(unsafe { ioctl(fd, UFFDIO_COPY, &mut c as *mut _ as usize) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_kernel_encoding() {
        assert_eq!(std::mem::size_of::<PmScanArg>(), 96);
        assert_eq!(std::mem::size_of::<PageRegion>(), 24);
        assert_eq!(std::mem::size_of::<PerfEventAttrV0>(), 64);
        assert_eq!(PAGEMAP_SCAN, 0xC060_6610);
        assert_eq!(UFFDIO_API, 0xC018_AA3F);
        assert_eq!(UFFDIO_REGISTER, 0xC020_AA00);
        assert_eq!(UFFDIO_WRITEPROTECT, 0xC018_AA06);
        assert_eq!(USERFAULTFD_IOC_NEW, 0xAA00);
        // the kernel's UAPI values (include/uapi/linux/userfaultfd.h)
        assert_eq!(UFFDIO_COPY, 0xC028_AA03);
        assert_eq!(UFFDIO_ZEROPAGE, 0xC020_AA04);
        assert_eq!(UFFDIO_WAKE, 0x8010_AA02);
    }
}
