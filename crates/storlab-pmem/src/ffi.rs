//! The C API, declared in `include/storlab_pmem.h`.
//!
//! Conventions: functions returning `int` return 0 on success and -1 on
//! error; functions returning a pointer return NULL on error. After an
//! error, `storlab_pmem_last_error()` returns a message for the calling
//! thread. No function panics across the boundary (a panic becomes an
//! error), and a region handle is validated on every call: a handle that
//! was never returned by `storlab_pmem_map`, or was already unmapped, gives
//! an error instead of undefined behaviour. Handles are opaque numbers, not
//! addresses, and are never reused.
//!
//! Every call on a handle takes the region's lock, so one region may be used
//! from several threads; calls on different regions do not contend (beyond
//! a brief lookup in the handle table).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::PmemError;
use crate::model::{FlushMode, SyncMode};
use crate::region::{Backing, Counters, Region, RegionOptions};
use crate::track::{TrackingChoice, TrackingKind};

/// `STORLAB_PMEM_FLUSH_CLFLUSH`.
pub const STORLAB_PMEM_FLUSH_CLFLUSH: c_int = 0;
/// `STORLAB_PMEM_FLUSH_CLFLUSHOPT`.
pub const STORLAB_PMEM_FLUSH_CLFLUSHOPT: c_int = 1;
/// `STORLAB_PMEM_FLUSH_CLWB`.
pub const STORLAB_PMEM_FLUSH_CLWB: c_int = 2;
/// `STORLAB_PMEM_FLUSH_WOF`.
pub const STORLAB_PMEM_FLUSH_WOF: c_int = 3;
/// `STORLAB_PMEM_SYNC_DEFAULT`.
pub const STORLAB_PMEM_SYNC_DEFAULT: c_int = 0;
/// `STORLAB_PMEM_SYNC_SPF`.
pub const STORLAB_PMEM_SYNC_SPF: c_int = 1;
/// `STORLAB_PMEM_TRACKING_AUTO` (map option) .
pub const STORLAB_PMEM_TRACKING_AUTO: c_int = 0;
/// `STORLAB_PMEM_TRACKING_UFFD`: uffd-wp-async (map option and result).
pub const STORLAB_PMEM_TRACKING_UFFD: c_int = 1;
/// `STORLAB_PMEM_TRACKING_MPROTECT`: the fallback (map option and result).
pub const STORLAB_PMEM_TRACKING_MPROTECT: c_int = 2;
/// `STORLAB_PMEM_TRACKING_OFF` (map option and result).
pub const STORLAB_PMEM_TRACKING_OFF: c_int = 3;

/// `storlab_pmem_options`: how to map a region (see `RegionOptions`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StorlabPmemOptions {
    /// Size in bytes, a multiple of the page size.
    pub size: u64,
    /// File to map (created if missing), or NULL for a memfd.
    pub path: *const c_char,
    /// `STORLAB_PMEM_FLUSH_*`.
    pub flush_mode: c_int,
    /// `STORLAB_PMEM_SYNC_*`.
    pub sync_mode: c_int,
    /// `STORLAB_PMEM_TRACKING_*`.
    pub tracking: c_int,
    /// Non-zero: fault all pages in at map time (recommended).
    pub populate: c_int,
    /// L_WBAR in ns.
    pub wbarrier_ns: u64,
}

/// Opaque handle type (`storlab_pmem_region` in C); never dereferenced.
#[repr(C)]
pub struct StorlabPmemRegion {
    _private: [u8; 0],
}

type Shared = Arc<Mutex<Region>>;

static NEXT_HANDLE: AtomicU64 = AtomicU64::new(1);
static HANDLES: Mutex<BTreeMap<u64, Shared>> = Mutex::new(BTreeMap::new());

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: String) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Run `f`, turning an error or a panic into -1 and the last error.
fn guard<F: FnOnce() -> Result<(), PmemError>>(f: F) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            set_error(e.to_string());
            -1
        }
        Err(_) => {
            set_error("internal error: a panic was caught at the C boundary".into());
            -1
        }
    }
}

fn lookup(h: *const StorlabPmemRegion) -> Result<Shared, PmemError> {
    let id = h as usize as u64;
    let t = HANDLES.lock().unwrap_or_else(|p| p.into_inner());
    t.get(&id).cloned().ok_or_else(|| {
        PmemError::InvalidArgument(format!(
            "{h:p} is not a live region handle (never mapped, or already unmapped)"
        ))
    })
}

fn with_region<T>(
    h: *const StorlabPmemRegion,
    f: impl FnOnce(&mut Region) -> Result<T, PmemError>,
) -> Result<T, PmemError> {
    let r = lookup(h)?;
    let mut g = r.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut g)
}

fn flush_mode(m: c_int) -> Result<FlushMode, PmemError> {
    match m {
        STORLAB_PMEM_FLUSH_CLFLUSH => Ok(FlushMode::Clflush),
        STORLAB_PMEM_FLUSH_CLFLUSHOPT => Ok(FlushMode::Clflushopt),
        STORLAB_PMEM_FLUSH_CLWB => Ok(FlushMode::Clwb),
        STORLAB_PMEM_FLUSH_WOF => Ok(FlushMode::Wof),
        _ => Err(PmemError::InvalidArgument(format!(
            "unknown flush mode {m}; use STORLAB_PMEM_FLUSH_CLFLUSH (0), _CLFLUSHOPT (1), _CLWB (2) or _WOF (3)"
        ))),
    }
}

fn sync_mode(m: c_int) -> Result<SyncMode, PmemError> {
    match m {
        STORLAB_PMEM_SYNC_DEFAULT => Ok(SyncMode::Default),
        STORLAB_PMEM_SYNC_SPF => Ok(SyncMode::Spf),
        _ => Err(PmemError::InvalidArgument(format!(
            "unknown sync mode {m}; use STORLAB_PMEM_SYNC_DEFAULT (0) or STORLAB_PMEM_SYNC_SPF (1)"
        ))),
    }
}

fn tracking(t: c_int) -> Result<TrackingChoice, PmemError> {
    match t {
        STORLAB_PMEM_TRACKING_AUTO => Ok(TrackingChoice::Auto),
        STORLAB_PMEM_TRACKING_UFFD => Ok(TrackingChoice::Uffd),
        STORLAB_PMEM_TRACKING_MPROTECT => Ok(TrackingChoice::Mprotect),
        STORLAB_PMEM_TRACKING_OFF => Ok(TrackingChoice::Off),
        _ => Err(PmemError::InvalidArgument(format!(
            "unknown tracking {t}; use STORLAB_PMEM_TRACKING_AUTO (0), _UFFD (1), _MPROTECT (2) or _OFF (3)"
        ))),
    }
}

/// Fill `opts` with defaults for a memfd region of `size` bytes: clflush,
/// default sync, automatic tracking, populated, no write-barrier latency.
///
/// # Safety
///
/// `opts` must be NULL or point to writable memory for one options struct.
#[no_mangle]
pub unsafe extern "C" fn storlab_pmem_options_init(
    opts: *mut StorlabPmemOptions,
    size: u64,
) -> c_int {
    guard(|| {
        if opts.is_null() {
            return Err(PmemError::InvalidArgument("opts is NULL".into()));
        }
        let v = StorlabPmemOptions {
            size,
            path: std::ptr::null(),
            flush_mode: STORLAB_PMEM_FLUSH_CLFLUSH,
            sync_mode: STORLAB_PMEM_SYNC_DEFAULT,
            tracking: STORLAB_PMEM_TRACKING_AUTO,
            populate: 1,
            wbarrier_ns: 0,
        };
        // SAFETY: checked non-null; the caller guarantees it is writable.
        unsafe { opts.write(v) };
        Ok(())
    })
}

/// Map a region; NULL on error.
///
/// # Safety
///
/// `opts` must be NULL or point to an initialised options struct whose
/// `path` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn storlab_pmem_map(
    opts: *const StorlabPmemOptions,
) -> *mut StorlabPmemRegion {
    let mut out: *mut StorlabPmemRegion = std::ptr::null_mut();
    let rc = guard(|| {
        if opts.is_null() {
            return Err(PmemError::InvalidArgument("opts is NULL".into()));
        }
        // SAFETY: checked non-null; the caller guarantees it is initialised.
        let o = unsafe { *opts };
        let backing = if o.path.is_null() {
            Backing::Memfd
        } else {
            // SAFETY: the caller guarantees a NUL-terminated string.
            let s = unsafe { CStr::from_ptr(o.path) };
            let s = s
                .to_str()
                .map_err(|_| PmemError::InvalidArgument("path is not valid UTF-8".into()))?;
            Backing::File(PathBuf::from(s))
        };
        let ro = RegionOptions {
            size: o.size,
            backing,
            flush_mode: flush_mode(o.flush_mode)?,
            sync_mode: sync_mode(o.sync_mode)?,
            wbarrier_ns: o.wbarrier_ns,
            tracking: tracking(o.tracking)?,
            populate: o.populate != 0,
        };
        let region = Region::map(&ro)?;
        let id = NEXT_HANDLE.fetch_add(1, Ordering::Relaxed);
        HANDLES
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, Arc::new(Mutex::new(region)));
        out = id as usize as *mut StorlabPmemRegion;
        Ok(())
    });
    if rc == 0 {
        out
    } else {
        std::ptr::null_mut()
    }
}

/// Unmap a region; the handle is invalid afterwards. Waits for calls on
/// other threads that hold the region to finish.
#[no_mangle]
pub extern "C" fn storlab_pmem_unmap(r: *mut StorlabPmemRegion) -> c_int {
    guard(|| {
        let id = r as usize as u64;
        let removed = HANDLES
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        match removed {
            // Dropped here or by the last thread still using it.
            Some(_) => Ok(()),
            None => Err(PmemError::InvalidArgument(format!(
                "{r:p} is not a live region handle (never mapped, or already unmapped)"
            ))),
        }
    })
}

/// First byte of the region; NULL on error.
#[no_mangle]
pub extern "C" fn storlab_pmem_base(r: *const StorlabPmemRegion) -> *mut c_void {
    let mut out = std::ptr::null_mut();
    guard(|| {
        out = with_region(r, |g| Ok(g.as_mut_ptr() as *mut c_void))?;
        Ok(())
    });
    out
}

/// Size of the region in bytes; 0 on error.
#[no_mangle]
pub extern "C" fn storlab_pmem_size(r: *const StorlabPmemRegion) -> u64 {
    let mut out = 0;
    guard(|| {
        out = with_region(r, |g| Ok(g.len()))?;
        Ok(())
    });
    out
}

/// Run `f` on the region with the offset and length of `[addr, addr+len)`,
/// which must lie inside it.
fn with_range(
    r: *mut StorlabPmemRegion,
    addr: *const c_void,
    len: usize,
    f: impl FnOnce(&mut Region, u64, u64) -> Result<(), PmemError>,
) -> c_int {
    guard(|| {
        with_region(r, |g| {
            let off = g.offset_of(addr as *const u8, len as u64)?;
            f(g, off, len as u64)
        })
    })
}

/// Flush the lines of `[addr, addr+len)` with the region's M_FLUSH, fence,
/// pay L_WBAR. The range must lie inside the region.
#[no_mangle]
pub extern "C" fn storlab_pmem_persist(
    r: *mut StorlabPmemRegion,
    addr: *const c_void,
    len: usize,
) -> c_int {
    with_range(r, addr, len, |g, off, len| g.persist(off, len))
}

/// msync-style sync of `[addr, addr+len)` with the region's M_SYNC. The
/// range must lie inside the region.
#[no_mangle]
pub extern "C" fn storlab_pmem_sync(
    r: *mut StorlabPmemRegion,
    addr: *const c_void,
    len: usize,
) -> c_int {
    with_range(r, addr, len, |g, off, len| g.sync(off, len))
}

/// Set M_FLUSH (`STORLAB_PMEM_FLUSH_*`); refused if the CPU lacks it.
#[no_mangle]
pub extern "C" fn storlab_pmem_set_flush_mode(r: *mut StorlabPmemRegion, mode: c_int) -> c_int {
    guard(|| {
        let m = flush_mode(mode)?;
        with_region(r, |g| g.set_flush_mode(m))
    })
}

/// Set M_SYNC (`STORLAB_PMEM_SYNC_*`); SPF is refused without tracking.
#[no_mangle]
pub extern "C" fn storlab_pmem_set_sync_mode(r: *mut StorlabPmemRegion, mode: c_int) -> c_int {
    guard(|| {
        let m = sync_mode(mode)?;
        with_region(r, |g| g.set_sync_mode(m))
    })
}

/// Set L_WBAR in ns (at most 1e9).
#[no_mangle]
pub extern "C" fn storlab_pmem_set_wbarrier_ns(r: *mut StorlabPmemRegion, ns: u64) -> c_int {
    guard(|| with_region(r, |g| g.set_wbarrier_ns(ns)))
}

/// The tracking in use: `STORLAB_PMEM_TRACKING_UFFD`, `_MPROTECT` or
/// `_OFF`; -1 on error.
#[no_mangle]
pub extern "C" fn storlab_pmem_tracking(r: *const StorlabPmemRegion) -> c_int {
    let mut out = -1;
    guard(|| {
        out = with_region(r, |g| {
            Ok(match g.tracking() {
                TrackingKind::UffdWpAsync => STORLAB_PMEM_TRACKING_UFFD,
                TrackingKind::Mprotect => STORLAB_PMEM_TRACKING_MPROTECT,
                TrackingKind::Off => STORLAB_PMEM_TRACKING_OFF,
            })
        })?;
        Ok(())
    });
    out
}

/// Copy the region's counters into `*out`.
///
/// # Safety
///
/// `out` must be NULL or point to writable memory for one counters struct.
#[no_mangle]
pub unsafe extern "C" fn storlab_pmem_get_counters(
    r: *const StorlabPmemRegion,
    out: *mut Counters,
) -> c_int {
    guard(|| {
        if out.is_null() {
            return Err(PmemError::InvalidArgument("out is NULL".into()));
        }
        let c = with_region(r, |g| Ok(g.counters()))?;
        // SAFETY: checked non-null; the caller guarantees it is writable.
        unsafe { out.write(c) };
        Ok(())
    })
}

/// Zero the region's counters.
#[no_mangle]
pub extern "C" fn storlab_pmem_reset_counters(r: *mut StorlabPmemRegion) -> c_int {
    guard(|| {
        with_region(r, |g| {
            g.reset_counters();
            Ok(())
        })
    })
}

/// 1 if the CPU supports flush mode `mode`, 0 if not, -1 for an unknown
/// mode. On 0 the last error says which instruction is missing.
#[no_mangle]
pub extern "C" fn storlab_pmem_mode_supported(mode: c_int) -> c_int {
    let mut out = -1;
    let rc = guard(|| {
        let m = flush_mode(mode)?;
        out = match crate::cpu::cpu_features().check(m) {
            Ok(()) => 1,
            Err(e) => {
                set_error(e.to_string());
                0
            }
        };
        Ok(())
    });
    if rc == 0 {
        out
    } else {
        -1
    }
}

/// `sizeof(storlab_pmem_counters)` as this library sees it, so a program
/// can check it was compiled against a matching header.
#[no_mangle]
pub extern "C" fn storlab_pmem_counters_size() -> usize {
    std::mem::size_of::<Counters>()
}

/// The calling thread's last error message ("" if none). Valid until the
/// next failing call on this thread.
#[no_mangle]
pub extern "C" fn storlab_pmem_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
