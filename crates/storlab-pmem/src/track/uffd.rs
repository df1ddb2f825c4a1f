//! `uffd-wp-async`: userfaultfd write protection in asynchronous mode, read
//! and re-armed with the `PAGEMAP_SCAN` ioctl.
//!
//! Set-up: open a userfaultfd (the syscall with `UFFD_USER_MODE_ONLY`, which
//! unprivileged processes may use, else `/dev/userfaultfd`), handshake with
//! `UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED` (plus
//! `WP_HUGETLBFS_SHMEM` where offered), register the region in
//! `UFFDIO_REGISTER_MODE_WP` (with async WP and WP as the only mode, the
//! kernel accepts any memory type, including shared file mappings), and
//! write-protect it all. A write then unprotects its page in the kernel, and
//! `PAGEMAP_SCAN` with `PM_SCAN_WP_MATCHING` reports the pages whose
//! `PAGE_IS_WRITTEN` category is set and protects them again, atomically
//! per page.
//!
//! The region must be populated before registration: some kernels report a
//! never-populated pte as written (a conservative extra flush, not a loss).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::runs::push_run;
use crate::error::PmemError;
use crate::sys::{self, PageRegion, PmScanArg};

/// Entries in the PAGEMAP_SCAN output buffer; a scan with more dirty runs
/// than this continues from where the kernel stopped.
const SCAN_VEC: usize = 64;

pub(crate) struct UffdTracker {
    /// Kept open for the life of the region: closing it ends the
    /// registration.
    _uffd: OwnedFd,
    pagemap: OwnedFd,
    base: u64,
    page: u64,
    buf: Vec<PageRegion>,
}

fn permission_error(e: i32) -> bool {
    e == libc::EPERM || e == libc::EACCES
}

fn errstr(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

/// Open a userfaultfd (close-on-exec, non-blocking), trying the syscall
/// (user-mode-only, then plain) and then `/dev/userfaultfd`; the API
/// handshake (`UFFDIO_API`) is the caller's. Shared with storlab-hybrid.
pub fn open_uffd() -> Result<OwnedFd, PmemError> {
    let flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
    // SAFETY: userfaultfd(2) takes one integer flags argument.
    let mut fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags | sys::UFFD_USER_MODE_ONLY) };
    let mut e = if fd < 0 { sys::errno() } else { 0 };
    if fd < 0 && e == libc::EINVAL {
        // A kernel before 5.11 does not know UFFD_USER_MODE_ONLY.
        // SAFETY: as above.
        fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        e = if fd < 0 { sys::errno() } else { 0 };
    }
    if fd >= 0 {
        // SAFETY: the syscall returned a new descriptor we now own.
        return Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) });
    }
    if e == libc::ENOSYS {
        return Err(PmemError::TrackingUnavailable {
            mechanism: "uffd-wp-async",
            reason: "the kernel has no userfaultfd (ENOSYS)".into(),
        });
    }
    let syscall_err = format!("userfaultfd(2): {}", errstr(e));
    // /dev/userfaultfd (Linux 6.1+): access is governed by the node's mode.
    // SAFETY: the path is a NUL-terminated literal.
    let dev = unsafe { libc::open(c"/dev/userfaultfd".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if dev < 0 {
        let de = sys::errno();
        let detail = format!("{syscall_err}; /dev/userfaultfd: {}", errstr(de));
        return Err(if permission_error(e) || permission_error(de) {
            PmemError::UffdPermission { detail }
        } else {
            PmemError::TrackingUnavailable {
                mechanism: "uffd-wp-async",
                reason: detail,
            }
        });
    }
    // SAFETY: `dev` is a descriptor we just opened and own.
    let dev = unsafe { OwnedFd::from_raw_fd(dev) };
    // SAFETY: USERFAULTFD_IOC_NEW takes the new descriptor's flags as an
    // integer argument.
    let fd = unsafe { sys::ioctl(dev.as_raw_fd(), sys::USERFAULTFD_IOC_NEW, flags as usize) };
    if fd < 0 {
        let de = sys::errno();
        let detail = format!("{syscall_err}; USERFAULTFD_IOC_NEW: {}", errstr(de));
        return Err(if permission_error(de) {
            PmemError::UffdPermission { detail }
        } else {
            PmemError::TrackingUnavailable {
                mechanism: "uffd-wp-async",
                reason: detail,
            }
        });
    }
    // SAFETY: the ioctl returned a new descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn unavailable(reason: String) -> PmemError {
    PmemError::TrackingUnavailable {
        mechanism: "uffd-wp-async",
        reason,
    }
}

impl UffdTracker {
    pub(crate) fn new(base: usize, len: usize, page: usize) -> Result<Self, PmemError> {
        let wanted = [
            sys::UFFD_FEATURE_WP_ASYNC
                | sys::UFFD_FEATURE_WP_UNPOPULATED
                | sys::UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
            sys::UFFD_FEATURE_WP_ASYNC | sys::UFFD_FEATURE_WP_UNPOPULATED,
        ];
        let mut uffd = None;
        let mut last = 0;
        for features in wanted {
            // UFFDIO_API may be attempted once per descriptor: a fresh one
            // for each feature set.
            let fd = open_uffd()?;
            match sys::uffd_api(fd.as_raw_fd(), features) {
                Ok(()) => {
                    uffd = Some(fd);
                    break;
                }
                Err(e) => last = e.raw_os_error().unwrap_or(0),
            }
            if last != libc::EINVAL {
                break;
            }
        }
        let uffd = uffd.ok_or_else(|| {
            if last == libc::EINVAL {
                unavailable(
                    "the kernel does not offer UFFD_FEATURE_WP_ASYNC (needs Linux 6.7+)".into(),
                )
            } else {
                unavailable(format!("UFFDIO_API: {}", errstr(last)))
            }
        })?;

        let (start, bytes) = (base as u64, len as u64);
        if let Err(e) =
            sys::uffd_register(uffd.as_raw_fd(), start, bytes, sys::UFFDIO_REGISTER_MODE_WP)
        {
            let e = e.raw_os_error().unwrap_or(0);
            return Err(if permission_error(e) {
                PmemError::UffdPermission {
                    detail: format!("UFFDIO_REGISTER: {}", errstr(e)),
                }
            } else {
                unavailable(format!(
                    "UFFDIO_REGISTER(WP) refused this mapping: {}",
                    errstr(e)
                ))
            });
        }
        if let Err(e) = sys::uffd_writeprotect(uffd.as_raw_fd(), start, bytes, true) {
            return Err(unavailable(format!("UFFDIO_WRITEPROTECT: {e}")));
        }
        // SAFETY: the path is a NUL-terminated literal.
        let pm = unsafe {
            libc::open(
                c"/proc/self/pagemap".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if pm < 0 {
            return Err(unavailable(format!(
                "/proc/self/pagemap: {}",
                errstr(sys::errno())
            )));
        }
        // SAFETY: `pm` is a descriptor we just opened and own.
        let pagemap = unsafe { OwnedFd::from_raw_fd(pm) };
        let mut t = UffdTracker {
            _uffd: uffd,
            pagemap,
            base: base as u64,
            page: page as u64,
            buf: vec![PageRegion::default(); SCAN_VEC],
        };
        // Prove PAGEMAP_SCAN works here (and start from a clean state).
        let mut v = Vec::new();
        t.scan(0, (len / page) as u64, true, &mut v).map_err(|e| match e {
            PmemError::Sys { source, .. }
                if matches!(source.raw_os_error(), Some(libc::ENOTTY) | Some(libc::EINVAL)) =>
            {
                unavailable(format!(
                    "the kernel does not support the PAGEMAP_SCAN ioctl (needs Linux 6.7+): {source}"
                ))
            }
            other => other,
        })?;
        Ok(t)
    }

    /// Scan pages `[first, end)`: append written runs to `out`, and with
    /// `clear` write-protect them again.
    pub(crate) fn scan(
        &mut self,
        first: u64,
        end: u64,
        clear: bool,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<(), PmemError> {
        let end_addr = self.base + end * self.page;
        let mut cur = self.base + first * self.page;
        let mut flags = sys::PM_SCAN_CHECK_WPASYNC;
        if clear {
            flags |= sys::PM_SCAN_WP_MATCHING;
        }
        while cur < end_addr {
            let mut arg = PmScanArg {
                size: std::mem::size_of::<PmScanArg>() as u64,
                flags,
                start: cur,
                end: end_addr,
                walk_end: 0,
                vec: self.buf.as_mut_ptr() as u64,
                vec_len: self.buf.len() as u64,
                max_pages: 0,
                category_inverted: 0,
                category_mask: sys::PAGE_IS_WRITTEN,
                category_anyof_mask: 0,
                return_mask: sys::PAGE_IS_WRITTEN,
            };
            // SAFETY: PAGEMAP_SCAN reads `arg` and writes at most `vec_len`
            // entries into `self.buf`, which outlives the call; the range is
            // our own registered mapping.
            let n = unsafe {
                sys::ioctl(
                    self.pagemap.as_raw_fd(),
                    sys::PAGEMAP_SCAN,
                    &mut arg as *mut _ as usize,
                )
            };
            if n < 0 {
                if sys::errno() == libc::EINTR {
                    continue;
                }
                return Err(PmemError::last_os("ioctl(PAGEMAP_SCAN)"));
            }
            for r in &self.buf[..n as usize] {
                push_run(
                    out,
                    (r.start - self.base) / self.page,
                    (r.end - self.base) / self.page,
                );
            }
            if arg.walk_end <= cur {
                // No progress: should not happen; refuse to spin.
                return Err(PmemError::Sys {
                    call: "ioctl(PAGEMAP_SCAN)",
                    path: None,
                    source: std::io::Error::other("the scan made no progress"),
                });
            }
            cur = arg.walk_end;
        }
        Ok(())
    }
}
