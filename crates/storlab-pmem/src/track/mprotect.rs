//! The `mprotect` fallback: read-only pages, a SIGSEGV handler that records
//! the first write to each page, and a bitmap per region.
//!
//! # Global state and signal safety
//!
//! A signal handler is process-wide, so the regions using this fallback are
//! listed in a fixed table of [`MAX_REGIONS`] slots of atomics ([`SLOTS`]),
//! which the handler reads without locks or allocation. The handler runs on
//! whichever thread faulted, possibly while other threads map, sync or drop
//! other regions, so:
//!
//! * A slot is published by writing its fields and then storing `LIVE`
//!   (SeqCst); the handler reads the fields only after seeing `LIVE`.
//! * The handler announces itself in the slot's `active` count before
//!   checking `LIVE` again; retiring a slot stores `RETIRING` and then waits
//!   for `active` to drop to zero (both SeqCst, so one side always sees the
//!   other) before the bitmap is freed and the pages unmapped. A handler can
//!   therefore never touch a freed bitmap or `mprotect` a page that has been
//!   unmapped and reused.
//! * The handler makes the page writable *before* setting its bit; a sync
//!   clears bits *before* protecting pages again. Whatever the interleaving
//!   with a concurrent writer, a page that is writable after a sync's
//!   flush has its bit set, so no write escapes the next SPF sync.
//! * A fault outside every region is passed to the handler that was
//!   installed before ours (Rust's own stack-overflow handler, typically),
//!   or, if that was the default action, the default action is restored so
//!   the re-executed access kills the process as it would have.
//!
//! The handler is installed once, the first time a region uses this
//! fallback, and stays installed. If another component later replaces it,
//! new fallback regions are refused with a clear error rather than silently
//! losing writes.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};

use super::runs::push_run;
use crate::error::PmemError;

/// How many regions may use the fallback at once.
pub const MAX_REGIONS: usize = 256;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const LIVE: u8 = 2;
const RETIRING: u8 = 3;

struct Slot {
    state: AtomicU8,
    active: AtomicUsize,
    base: AtomicUsize,
    len: AtomicUsize,
    page_shift: AtomicU32,
    bits: AtomicPtr<AtomicU64>,
    faults: AtomicU64,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(FREE),
            active: AtomicUsize::new(0),
            base: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            page_shift: AtomicU32::new(0),
            bits: AtomicPtr::new(std::ptr::null_mut()),
            faults: AtomicU64::new(0),
        }
    }
}

static SLOTS: [Slot; MAX_REGIONS] = [const { Slot::new() }; MAX_REGIONS];

/// The action that was installed for SIGSEGV before ours.
struct PrevAction(libc::sigaction);
// SAFETY: a `sigaction` is plain data (a handler address, a mask, flags),
// written once before our handler can run and only read afterwards.
unsafe impl Sync for PrevAction {}
// SAFETY: as above.
unsafe impl Send for PrevAction {}

static PREV: OnceLock<PrevAction> = OnceLock::new();
static INSTALL: Mutex<()> = Mutex::new(());

fn handler_address() -> usize {
    on_sigsegv as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize
}

/// Install the SIGSEGV handler if it is not installed.
fn ensure_handler() -> Result<(), PmemError> {
    let _g = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: an all-zero sigaction is a valid value to be overwritten.
    let mut cur: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: querying the current action with a null new action.
    if unsafe { libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut cur) } != 0 {
        return Err(PmemError::last_os("sigaction(SIGSEGV)"));
    }
    if cur.sa_sigaction == handler_address() {
        return Ok(());
    }
    if PREV.get().is_some() {
        return Err(PmemError::TrackingUnavailable {
            mechanism: "mprotect",
            reason: "another component replaced storlab-pmem's SIGSEGV handler after it was \
                     installed; writes to fallback regions would no longer be tracked"
                .into(),
        });
    }
    // SAFETY: as above.
    let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
    new.sa_sigaction = handler_address();
    new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
    // SAFETY: `new.sa_mask` is a valid sigset to initialise.
    unsafe { libc::sigemptyset(&mut new.sa_mask) };
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: installing a handler that only uses async-signal-safe
    // operations (atomics, mprotect, sigaction).
    if unsafe { libc::sigaction(libc::SIGSEGV, &new, &mut old) } != 0 {
        return Err(PmemError::last_os("sigaction(SIGSEGV)"));
    }
    let _ = PREV.set(PrevAction(old));
    Ok(())
}

extern "C" fn on_sigsegv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers;
    // errno is thread-local and restored before returning.
    unsafe {
        let saved_errno = *libc::__errno_location();
        let addr = (*info).si_addr() as usize;
        let handled = record_write(addr);
        *libc::__errno_location() = saved_errno;
        if !handled {
            chain(sig, info, ctx);
        }
    }
}

/// Record a write fault at `addr` if it lies in a live region. Lock-free and
/// allocation-free (runs in the signal handler).
fn record_write(addr: usize) -> bool {
    for slot in SLOTS.iter() {
        if slot.state.load(Relaxed) != LIVE {
            continue;
        }
        slot.active.fetch_add(1, SeqCst);
        if slot.state.load(SeqCst) == LIVE {
            let base = slot.base.load(Relaxed);
            let len = slot.len.load(Relaxed);
            if addr >= base && addr - base < len {
                let shift = slot.page_shift.load(Relaxed);
                let page = (addr - base) >> shift;
                let page_addr = base + (page << shift);
                // Writable first, then marked (see the module docs).
                // SAFETY: the page lies in a live region's mapping, which
                // stays mapped while `active` is non-zero (see module docs).
                let ok = unsafe {
                    libc::mprotect(
                        page_addr as *mut libc::c_void,
                        1usize << shift,
                        libc::PROT_READ | libc::PROT_WRITE,
                    )
                } == 0;
                if ok {
                    let bits = slot.bits.load(Relaxed);
                    // SAFETY: `bits` has one bit per page of the region and
                    // is freed only after `active` drops to zero.
                    unsafe { (*bits.add(page / 64)).fetch_or(1 << (page % 64), SeqCst) };
                    slot.faults.fetch_add(1, Relaxed);
                }
                slot.active.fetch_sub(1, SeqCst);
                // If mprotect failed, returning would fault forever: let the
                // previous handler (or the default action) have it.
                return ok;
            }
        }
        slot.active.fetch_sub(1, SeqCst);
    }
    false
}

/// Pass a fault that is not ours to the previous handler.
///
/// # Safety
///
/// Only from the signal handler, with its arguments.
unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let prev = PREV.get().map(|p| p.0);
    match prev {
        Some(p) if p.sa_sigaction != libc::SIG_DFL && p.sa_sigaction != libc::SIG_IGN => {
            if p.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: an SA_SIGINFO handler has this signature.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig, info, ctx);
            } else {
                // SAFETY: a plain handler has this signature.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(p.sa_sigaction) };
                f(sig);
            }
        }
        _ => {
            // Restore the default action; the faulting access re-executes
            // and the process dies of SIGSEGV as it would have without us.
            // SAFETY: sigaction is async-signal-safe.
            unsafe {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigemptyset(&mut dfl.sa_mask);
                libc::sigaction(libc::SIGSEGV, &dfl, std::ptr::null_mut());
            }
        }
    }
}

/// A region's registration in the fallback table.
pub(crate) struct MprotectTracker {
    slot: usize,
    bits: Box<[AtomicU64]>,
    base: usize,
    page: usize,
}

impl MprotectTracker {
    pub(crate) fn new(base: usize, len: usize, page: usize) -> Result<Self, PmemError> {
        ensure_handler()?;
        let pages = len / page;
        let bits: Box<[AtomicU64]> = (0..pages.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
        let slot = SLOTS
            .iter()
            .position(|s| {
                s.state
                    .compare_exchange(FREE, CLAIMED, SeqCst, Relaxed)
                    .is_ok()
            })
            .ok_or_else(|| PmemError::TrackingUnavailable {
                mechanism: "mprotect",
                reason: format!("{MAX_REGIONS} regions already use the mprotect fallback"),
            })?;
        let s = &SLOTS[slot];
        s.base.store(base, Relaxed);
        s.len.store(len, Relaxed);
        s.page_shift.store(page.trailing_zeros(), Relaxed);
        s.bits.store(bits.as_ptr() as *mut AtomicU64, Relaxed);
        s.faults.store(0, Relaxed);
        s.state.store(LIVE, SeqCst);
        let t = MprotectTracker {
            slot,
            bits,
            base,
            page,
        };
        // SAFETY: `[base, base+len)` is the caller's own mapping.
        if unsafe { libc::mprotect(base as *mut libc::c_void, len, libc::PROT_READ) } != 0 {
            return Err(PmemError::last_os("mprotect(PROT_READ)"));
        }
        Ok(t)
    }

    /// Take the written pages of `[first, end)`: clear their bits, then
    /// write-protect them again.
    pub(crate) fn take(
        &mut self,
        first: u64,
        end: u64,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<(), PmemError> {
        let mut run: Option<(u64, u64)> = None;
        let mut p = first;
        while p < end {
            let word_base = p - p % 64;
            let lo = p - word_base;
            let hi = (end - word_base).min(64); // exclusive bit bound in this word
            let mask = if hi - lo == 64 {
                u64::MAX
            } else {
                ((1u64 << (hi - lo)) - 1) << lo
            };
            let mut taken = self.bits[(word_base / 64) as usize].fetch_and(!mask, SeqCst) & mask;
            while taken != 0 {
                let page = word_base + u64::from(taken.trailing_zeros());
                taken &= taken - 1;
                match run {
                    Some((a, b)) if b == page => run = Some((a, page + 1)),
                    Some(r) => {
                        self.protect(r, out)?;
                        run = Some((page, page + 1));
                    }
                    None => run = Some((page, page + 1)),
                }
            }
            p = word_base + hi;
        }
        if let Some(r) = run {
            self.protect(r, out)?;
        }
        Ok(())
    }

    /// Write-protect the pages `[a, b)` again (their bits are already
    /// clear) and report them.
    fn protect(&self, (a, b): (u64, u64), out: &mut Vec<(u64, u64)>) -> Result<(), PmemError> {
        let addr = self.base + a as usize * self.page;
        let len = (b - a) as usize * self.page;
        // SAFETY: a sub-range of this region's own mapping.
        if unsafe { libc::mprotect(addr as *mut libc::c_void, len, libc::PROT_READ) } != 0 {
            return Err(PmemError::last_os("mprotect(PROT_READ)"));
        }
        push_run(out, a, b);
        Ok(())
    }

    pub(crate) fn is_dirty(&self, page: u64) -> bool {
        (self.bits[(page / 64) as usize].load(SeqCst) >> (page % 64)) & 1 == 1
    }

    /// Write faults recorded for this region.
    #[allow(dead_code)]
    pub(crate) fn faults(&self) -> u64 {
        SLOTS[self.slot].faults.load(Relaxed)
    }
}

impl Drop for MprotectTracker {
    fn drop(&mut self) {
        let s = &SLOTS[self.slot];
        s.state.store(RETIRING, SeqCst);
        while s.active.load(SeqCst) != 0 {
            std::hint::spin_loop();
        }
        s.bits.store(std::ptr::null_mut(), Relaxed);
        s.base.store(0, Relaxed);
        s.len.store(0, Relaxed);
        s.state.store(FREE, SeqCst);
        // `self.bits` is freed after this, when no handler can reach it.
    }
}
