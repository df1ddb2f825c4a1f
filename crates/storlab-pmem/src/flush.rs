//! The flush instructions, one loop per mode.
//!
//! `clflushopt` and `clwb` have no stable intrinsic in `core::arch` (only
//! `_mm_clflush` does), so they are emitted with inline assembly. WOF reads
//! each 16-byte quarter of the line and writes it back with `movntdq`
//! (`_mm_stream_si128`): a non-temporal store evicts the line from the
//! caches on its way to memory.

use crate::model::{FlushMode, LINE_BYTES};

/// Flush `nlines` lines starting at the line containing `addr` with `mode`.
/// `alias` is the same memory mapped a second time (see `region.rs`); WOF
/// writes through it so that its rewrite does not count as a write in the
/// primary mapping's dirty tracking. No fence is issued here.
///
/// # Safety
///
/// `[addr, addr + nlines*64)` rounded out to lines must be mapped readable,
/// and for WOF `[alias, ...)` likewise mapped readable and writable, with no
/// other thread storing to those lines concurrently (WOF would overwrite a
/// concurrent store with the value it read). The CPU must support `mode`.
pub(crate) unsafe fn flush_lines(mode: FlushMode, addr: *const u8, alias: *mut u8, nlines: u64) {
    let line = LINE_BYTES as usize;
    let start = (addr as usize) & !(line - 1);
    let alias_start = (alias as usize) & !(line - 1);
    let n = nlines as usize;
    match mode {
        FlushMode::Clflush => {
            for i in 0..n {
                // SAFETY: the caller guarantees the line is mapped.
                unsafe { clflush((start + i * line) as *const u8) };
            }
        }
        FlushMode::Clflushopt => {
            for i in 0..n {
                // SAFETY: as above; the caller checked CPU support.
                unsafe { clflushopt((start + i * line) as *const u8) };
            }
        }
        FlushMode::Clwb => {
            for i in 0..n {
                // SAFETY: as above; the caller checked CPU support.
                unsafe { clwb((start + i * line) as *const u8) };
            }
        }
        FlushMode::Wof => {
            for i in 0..n {
                // SAFETY: the caller guarantees the alias line is mapped
                // read-write and not concurrently stored to; it is 64-byte
                // aligned, so each quarter is 16-byte aligned.
                unsafe { wof_line((alias_start + i * line) as *mut u8) };
            }
        }
    }
}

/// Store fence: orders (and, for the weakly ordered flushes, completes) the
/// flushes issued before it.
#[inline]
pub(crate) fn sfence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE only orders memory operations; SSE is baseline on
    // x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn clflush(p: *const u8) {
    // SAFETY: the caller guarantees `p` is mapped; CLFLUSH is in every
    // x86-64 CPU (and checked by CPUID before use).
    unsafe { std::arch::x86_64::_mm_clflush(p) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn clflushopt(p: *const u8) {
    // SAFETY: the caller guarantees `p` is mapped and the CPU has
    // CLFLUSHOPT. Not `nomem`: the flush must stay ordered after earlier
    // stores to the line in program order.
    unsafe {
        std::arch::asm!("clflushopt byte ptr [{0}]", in(reg) p, options(nostack, preserves_flags))
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn clwb(p: *const u8) {
    // SAFETY: as for clflushopt, with CLWB.
    unsafe { std::arch::asm!("clwb byte ptr [{0}]", in(reg) p, options(nostack, preserves_flags)) }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn wof_line(p: *mut u8) {
    use std::arch::x86_64::{__m128i, _mm_load_si128, _mm_stream_si128};
    let q = p as *mut __m128i;
    // SAFETY: the caller guarantees the 64-byte line at `p` is mapped
    // read-write and 64-byte aligned; reads use volatile-free aligned loads
    // of the current contents, which are then written back unchanged.
    unsafe {
        let a = _mm_load_si128(q);
        let b = _mm_load_si128(q.add(1));
        let c = _mm_load_si128(q.add(2));
        let d = _mm_load_si128(q.add(3));
        _mm_stream_si128(q, a);
        _mm_stream_si128(q.add(1), b);
        _mm_stream_si128(q.add(2), c);
        _mm_stream_si128(q.add(3), d);
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn clflush(_: *const u8) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn clflushopt(_: *const u8) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn clwb(_: *const u8) {}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn wof_line(_: *mut u8) {}
