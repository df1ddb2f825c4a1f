//! Hybrid memory on this host: a large memory region whose pages live in a
//! bounded DRAM cache and move to and from an emulated device on page
//! faults, each move timed by the same device model the simulator and the
//! NBD emulator run (docs/spec/hybrid.md: flash behind DRAM as main memory, as
//! SSDAlloc made it transparent to programs).
//!
//! * The region is an anonymous mapping registered with userfaultfd for
//!   missing-page and write-protect faults. A handler thread resolves
//!   missing pages: a page never written to the device is filled with
//!   zeros at once (a first touch); any other is read from the device: the
//!   request enters the model at the fault's time and the page is put in
//!   place (`UFFDIO_COPY`) when the model says the read completes.
//! * At most `dram_bytes` of the region are resident. To make room the
//!   handler evicts the oldest resident page (FIFO: the runtime sees
//!   faults, not accesses, so it has no recency to go by):
//!   write-protects it (a thread writing it meanwhile waits), compares it
//!   with the device's copy, writes it back to the store and submits a
//!   device write if it changed (a dirty page) or drops it without one
//!   (clean), then discards it (`MADV_DONTNEED`), so the next access
//!   faults it back in. Writes are written back, not through: the device's
//!   write bandwidth is used by evictions only, as the study describes.
//! * Data written is data read back, always (tests fill regions several
//!   times the DRAM bound from several threads and check every byte).
//!
//! A C API (`include/storlab_hybrid.h`, the `storlab_hybrid_*` functions)
//! gives C programs the same regions.
//!
//! Costs that are real here, not modelled: the kernel's fault handling and
//! the handler's wake-up, a few microseconds per fault on this host, shown
//! apart in [`HybridStats`] (`fault_us` against `model_read_us`).
#![deny(missing_docs)]

pub mod ffi;
mod handler;
mod stats;
pub mod thrash;

pub use stats::{HybridStats, Latency};

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use storlab_emu::store::{open_store, StoreSpec};
use storlab_model::Device;
use storlab_pmem::sys;

/// What a hybrid region is made of.
#[derive(Clone, Debug)]
pub struct HybridConfig {
    /// The region's size, a multiple of the host page size.
    pub size_bytes: u64,
    /// DRAM the region may keep resident, at least two pages (rounded
    /// down to whole pages).
    pub dram_bytes: u64,
    /// Where the device's pages are kept: sparse memory, or a sparse file
    /// (so the region may exceed the host's RAM).
    pub store: StoreSpec,
}

/// Why a region could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HybridError {
    /// A configuration value out of range.
    #[error("{field}: {message}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// userfaultfd is missing or refused.
    #[error("userfaultfd: {0}")]
    Uffd(String),
    /// A system call failed.
    #[error("{what}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A hybrid memory region. Dropping it stops its handler and unmaps it.
pub struct HybridMemory {
    base: *mut u8,
    len: usize,
    shared: Arc<Mutex<handler::Shared>>,
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

// SAFETY: the mapping is owned by this value; access to its bytes goes
// through `&self`/`&mut self` borrows like any owned buffer, and the
// handler thread only touches pages the application cannot be using
// (write-protected before they are read for eviction).
unsafe impl Send for HybridMemory {}
// SAFETY: as above; `&self` only gives shared (read-only) access.
unsafe impl Sync for HybridMemory {}

/// The host's page size.
pub fn page_size() -> u64 {
    storlab_pmem::page_size() as u64
}

impl HybridConfig {
    /// Check the sizes: the region a positive multiple of the page size
    /// that can be mapped, DRAM at least two pages.
    pub fn validate(&self) -> Result<(), HybridError> {
        let cfg = self;
        let page = page_size();
        let bad = |field, message: String| HybridError::Config { field, message };
        if cfg.size_bytes == 0 || !cfg.size_bytes.is_multiple_of(page) {
            return Err(bad(
                "size_bytes",
                format!(
                    "{} is not a positive multiple of the page size ({page})",
                    cfg.size_bytes
                ),
            ));
        }
        if cfg.size_bytes > isize::MAX as u64 / 2 {
            return Err(bad(
                "size_bytes",
                format!("{} is too large to map", cfg.size_bytes),
            ));
        }
        let dram_pages = cfg.dram_bytes / page;
        if dram_pages < 2 {
            return Err(bad(
                "dram_bytes",
                format!(
                    "{} holds fewer than two pages of {page} bytes",
                    cfg.dram_bytes
                ),
            ));
        }
        Ok(())
    }
}

impl HybridMemory {
    /// Map a region of `cfg.size_bytes` whose pages live on `device`
    /// (whose capacity must hold them) behind `cfg.dram_bytes` of DRAM.
    pub fn new(cfg: &HybridConfig, device: Box<dyn Device>) -> Result<Self, HybridError> {
        let page = page_size();
        let bad = |field, message: String| HybridError::Config { field, message };
        cfg.validate()?;
        let dram_pages = cfg.dram_bytes / page;
        if device.capacity() < cfg.size_bytes {
            return Err(bad(
                "size_bytes",
                format!(
                    "{} exceeds the device's capacity {} (set device.capacity_bytes)",
                    cfg.size_bytes,
                    device.capacity()
                ),
            ));
        }
        let store =
            open_store(&cfg.store, cfg.size_bytes, false).map_err(|source| HybridError::Os {
                what: "opening the page store",
                source,
            })?;
        let uffd =
            storlab_pmem::open_userfaultfd().map_err(|e| HybridError::Uffd(e.to_string()))?;
        sys::uffd_api(uffd.as_raw_fd(), 0)
            .map_err(|e| HybridError::Uffd(format!("UFFDIO_API: {e}")))?;
        let len = cfg.size_bytes as usize;
        // SAFETY: a new private anonymous mapping; no existing memory is
        // touched. MAP_NORESERVE: the region may exceed RAM plus swap, as
        // only `dram_bytes` of it is ever resident.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(HybridError::Os {
                what: "mapping the region",
                source: std::io::Error::last_os_error(),
            });
        }
        let unmap = |e: HybridError| {
            // SAFETY: unmapping the mapping made above, not yet shared.
            unsafe { libc::munmap(base, len) };
            e
        };
        // Pages are moved one at a time: no transparent huge pages.
        // SAFETY: advice on our own mapping.
        unsafe { libc::madvise(base, len, libc::MADV_NOHUGEPAGE) };
        let mode = sys::UFFDIO_REGISTER_MODE_MISSING | sys::UFFDIO_REGISTER_MODE_WP;
        if let Err(e) = sys::uffd_register(uffd.as_raw_fd(), base as u64, len as u64, mode) {
            return Err(unmap(HybridError::Uffd(format!(
                "UFFDIO_REGISTER (missing + write-protect, anonymous memory): {e}"
            ))));
        }
        // SAFETY: eventfd(2) with flags; returns a new descriptor or -1.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if efd < 0 {
            return Err(unmap(HybridError::Os {
                what: "eventfd",
                source: std::io::Error::last_os_error(),
            }));
        }
        // SAFETY: a descriptor we just created and own.
        let stop = unsafe { OwnedFd::from_raw_fd(efd) };
        let stop_for_thread = stop.try_clone().map_err(|source| {
            unmap(HybridError::Os {
                what: "eventfd",
                source,
            })
        })?;
        let shared = Arc::new(Mutex::new(handler::Shared::new(dram_pages)));
        let h = handler::Handler::new(
            uffd,
            stop_for_thread,
            base as u64,
            page,
            cfg.size_bytes / page,
            dram_pages,
            store,
            device,
            shared.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("hybrid-faults".into())
            .spawn(move || h.run())
            .map_err(|source| {
                unmap(HybridError::Os {
                    what: "starting the fault handler",
                    source,
                })
            })?;
        Ok(HybridMemory {
            base: base as *mut u8,
            len,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// The region's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `base..base+len` is our mapping for as long as `self`
        // lives; faults on it are resolved by the handler.
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }

    /// The region's bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as `as_slice`, and `&mut self` makes this the only
        // borrow.
        unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
    }

    /// The region's first byte, for code that shares the region between
    /// threads or hands it to C (the caller keeps accesses in bounds and
    /// race-free, as with any raw buffer).
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.base
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never: a region has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Counters and fault times so far.
    pub fn stats(&self) -> HybridStats {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .snapshot()
    }

    /// Pages of the region resident in DRAM now, as the kernel reports
    /// them (`mincore`).
    pub fn resident_pages(&self) -> u64 {
        let page = page_size() as usize;
        let mut vec = vec![0u8; self.len.div_ceil(page)];
        // SAFETY: `vec` has one byte per page of our mapping.
        let r =
            unsafe { libc::mincore(self.base as *mut libc::c_void, self.len, vec.as_mut_ptr()) };
        if r != 0 {
            return 0;
        }
        vec.iter().filter(|b| *b & 1 == 1).count() as u64
    }
}

impl Drop for HybridMemory {
    fn drop(&mut self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes to our eventfd wakes the handler to stop.
        unsafe {
            libc::write(
                self.stop.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            )
        };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // SAFETY: the handler has stopped and no borrow of the region
        // outlives `self`.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}
