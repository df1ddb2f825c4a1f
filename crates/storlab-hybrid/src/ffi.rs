//! The C API, declared in `include/storlab_hybrid.h`.
//!
//! Conventions as in storlab-pmem's: a pointer function returns NULL and an
//! `int` function -1 on error, and `storlab_hybrid_last_error()` then says
//! why (per thread). Handles are opaque numbers checked on every call (a
//! stale or foreign one is an error, not a crash), never reused, and no
//! panic crosses the boundary.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use storlab_emu::store::StoreSpec;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

use crate::{HybridConfig, HybridMemory};

/// Opaque handle type (`storlab_hybrid` in C); never dereferenced.
#[repr(C)]
pub struct StorlabHybrid {
    _private: [u8; 0],
}

/// `storlab_hybrid_stats`: the region's counters and fault times.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StorlabHybridStats {
    /// Missing-page faults resolved.
    pub faults: u64,
    /// First touches filled with zeros.
    pub zero_fills: u64,
    /// Pages read from the device.
    pub device_reads: u64,
    /// Changed pages written to the device on eviction.
    pub device_writes: u64,
    /// Unchanged pages evicted without a write.
    pub clean_evictions: u64,
    /// Most pages resident at once.
    pub resident_peak: u64,
    /// The DRAM bound in pages.
    pub dram_pages: u64,
    /// Mean time to serve a device-read fault, µs.
    pub fault_mean_us: f64,
    /// 99th percentile of the same, µs.
    pub fault_p99_us: f64,
    /// The model's mean read latency, µs.
    pub model_read_mean_us: f64,
}

static NEXT: AtomicU64 = AtomicU64::new(1);
static LIVE: Mutex<BTreeMap<u64, Arc<HybridMemory>>> = Mutex::new(BTreeMap::new());

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: String) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

fn guarded<T>(fail: T, f: impl FnOnce() -> Result<T, String>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_error(e);
            fail
        }
        Err(_) => {
            set_error("internal error: a panic was caught at the C boundary".into());
            fail
        }
    }
}

/// An error and its causes, as `context: cause: cause`.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(&format!(": {c}"));
        cur = c.source();
    }
    s
}

fn lookup(h: *const StorlabHybrid) -> Result<Arc<HybridMemory>, String> {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.get(&(h as usize as u64))
        .cloned()
        .ok_or_else(|| format!("{h:p} is not a live hybrid region (never made, or already freed)"))
}

/// # Safety
/// `s` is NULL or a NUL-terminated string.
unsafe fn text(s: *const c_char, what: &str) -> Result<Option<String>, String> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let c = unsafe { CStr::from_ptr(s) };
    c.to_str()
        .map(|t| Some(t.to_string()))
        .map_err(|_| format!("{what} is not UTF-8"))
}

/// Make a region of `size` bytes whose pages live on `device` (a preset
/// name or TOML file, NULL for fusion-io) behind `dram` bytes of DRAM.
/// `overrides`: NULL, or a NULL-terminated array of `key.path=value`.
/// `store`: NULL or "memory", or "file:PATH".
///
/// # Safety
/// String arguments are NULL or NUL-terminated; `overrides` is NULL or a
/// NULL-terminated array of such strings.
#[no_mangle]
pub unsafe extern "C" fn storlab_hybrid_new(
    size: u64,
    dram: u64,
    device: *const c_char,
    overrides: *const *const c_char,
    store: *const c_char,
) -> *mut StorlabHybrid {
    guarded(std::ptr::null_mut(), || {
        // SAFETY: per this function's contract.
        let device = unsafe { text(device, "device") }?.unwrap_or_else(|| "fusion-io".into());
        let mut set = Vec::new();
        if !overrides.is_null() {
            for i in 0.. {
                // SAFETY: a NULL-terminated array, read up to its NULL.
                let p = unsafe { *overrides.add(i) };
                if p.is_null() {
                    break;
                }
                // SAFETY: each entry is NUL-terminated.
                set.push(unsafe { text(p, "an override") }?.unwrap_or_default());
            }
        }
        // SAFETY: per this function's contract.
        let store: StoreSpec = match unsafe { text(store, "store") }? {
            None => StoreSpec::Memory,
            Some(s) => s.parse().map_err(|e| format!("store: {e}"))?,
        };
        let (_, cfg) = SystemConfig::load(&PresetStore::default(), &device, &set)
            .map_err(|e| format!("device '{device}': {e}"))?;
        let dev = cfg
            .build_device()
            .map_err(|e| format!("device '{device}': {e}"))?;
        let config = HybridConfig {
            size_bytes: size,
            dram_bytes: dram,
            store,
        };
        let m = HybridMemory::new(&config, dev).map_err(|e| with_causes(&e))?;
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, Arc::new(m));
        Ok(id as usize as *mut StorlabHybrid)
    })
}

/// The region's first byte, or NULL.
#[no_mangle]
pub extern "C" fn storlab_hybrid_base(h: *const StorlabHybrid) -> *mut c_void {
    guarded(std::ptr::null_mut(), || {
        Ok(lookup(h)?.as_mut_ptr() as *mut c_void)
    })
}

/// The region's size in bytes, or 0.
#[no_mangle]
pub extern "C" fn storlab_hybrid_size(h: *const StorlabHybrid) -> u64 {
    guarded(0, || Ok(lookup(h)?.len() as u64))
}

/// Fill `out` with the region's counters so far.
///
/// # Safety
/// `out` is NULL or points to a writable `storlab_hybrid_stats`.
#[no_mangle]
pub unsafe extern "C" fn storlab_hybrid_get_stats(
    h: *const StorlabHybrid,
    out: *mut StorlabHybridStats,
) -> c_int {
    guarded(-1, || {
        if out.is_null() {
            return Err("out is NULL".into());
        }
        let s = lookup(h)?.stats();
        let v = StorlabHybridStats {
            faults: s.faults,
            zero_fills: s.zero_fills,
            device_reads: s.device_reads,
            device_writes: s.device_writes,
            clean_evictions: s.clean_evictions,
            resident_peak: s.resident_peak,
            dram_pages: s.dram_pages,
            fault_mean_us: s.fault_us.mean,
            fault_p99_us: s.fault_us.p99,
            model_read_mean_us: s.model_read_us.mean,
        };
        // SAFETY: checked non-NULL; the caller gives a writable struct.
        unsafe { out.write(v) };
        Ok(0)
    })
}

/// Stop the region's handler and unmap it; the handle is dead afterwards.
/// No thread may be using the region.
#[no_mangle]
pub extern "C" fn storlab_hybrid_free(h: *mut StorlabHybrid) -> c_int {
    guarded(-1, || {
        let m = LIVE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(h as usize as u64))
            .ok_or_else(|| {
                format!("{h:p} is not a live hybrid region (never made, or already freed)")
            })?;
        drop(m);
        Ok(0)
    })
}

/// The last error of the calling thread ("" if none); valid until its
/// next call into this library.
#[no_mangle]
pub extern "C" fn storlab_hybrid_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}
