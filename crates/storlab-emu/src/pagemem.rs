//! Page memory for the memory store: 4 KiB pages carved from 2 MiB
//! anonymous mappings.
//!
//! Why not `Box<[u8]>` from the global allocator: glibc grows a thread's
//! arena one page at a time, with an `mprotect` per 4 KiB page allocated
//! (32768 calls in 3 s of fresh 4 KiB writes), each holding the process's
//! memory-map lock for writing, which every other thread's page faults and
//! allocations then wait behind. One `mmap` per 512 pages takes it 512
//! times less often (2112 calls in all in the same run, most of them the
//! table's own allocations), and a freed page is cleared and reused
//! without a trip through the allocator. No allocator crate hands out
//! page-aligned pages from large mappings without per-page bookkeeping of
//! its own, so this is written here.

use std::io;
use std::ptr::NonNull;

/// Bytes in a page.
pub(crate) const PAGE: usize = 4096;
/// Pages in a mapping (2 MiB).
const CHUNK_PAGES: usize = 512;

/// One anonymous private mapping of [`CHUNK_PAGES`] pages, unmapped on
/// drop. Its pages read as zeros until written.
struct Chunk {
    ptr: NonNull<u8>,
}

// SAFETY: a Chunk is only an owned mapping; the pages carved from it are
// handed out one owner each (see `Page`).
unsafe impl Send for Chunk {}
unsafe impl Sync for Chunk {}

impl Chunk {
    const BYTES: usize = CHUNK_PAGES * PAGE;

    fn map() -> io::Result<Chunk> {
        // SAFETY: a fresh anonymous private mapping at an address the
        // kernel picks; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(p.cast())
            .map(|ptr| Chunk { ptr })
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made; every `Page` of it
        // is dead by now (the owners of pages are dropped before the
        // carver that owns the chunk: see `Carver`).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), Self::BYTES) };
    }
}

/// A 4 KiB page inside a [`Chunk`]. It has one owner at a time and does
/// not free itself: its memory lives as long as the [`Carver`] that carved
/// it, which the owner must not outlive.
pub(crate) struct Page(NonNull<u8>);

// SAFETY: a page is plain memory with a single owner (it is not Clone or
// Copy); `&Page` only gives shared reads.
unsafe impl Send for Page {}
unsafe impl Sync for Page {}

impl Page {
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: PAGE bytes inside a live mapping (the owner does not
        // outlive the carver), readable, owned by this page alone.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr(), PAGE) }
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), PAGE) }
    }

    /// Make the kernel back the page now (a page fault here, not on the
    /// first write later). A fresh page reads as zeros either way.
    pub(crate) fn fault_in(&mut self) {
        // SAFETY: inside the page; volatile so the store of a zero over
        // zeroed memory is not optimised away.
        unsafe { self.0.as_ptr().write_volatile(0) };
    }
}

/// Hands out fresh (all-zero, never used) pages, mapping a new chunk when
/// the last one is used up. Owns its chunks: pages carved here must be
/// dropped before it (they are plain pointers and cannot check).
#[derive(Default)]
pub(crate) struct Carver {
    chunks: Vec<Chunk>,
    /// Pages of the last chunk handed out.
    used: usize,
}

impl Carver {
    /// A fresh page (not yet faulted in).
    pub(crate) fn page(&mut self) -> io::Result<Page> {
        if self.chunks.is_empty() || self.used == CHUNK_PAGES {
            self.chunks.push(Chunk::map()?);
            self.used = 0;
        }
        let chunk = self.chunks.last().expect("a chunk was just mapped");
        // SAFETY: `used < CHUNK_PAGES`, so the page lies inside the chunk;
        // each index is handed out once.
        let p = unsafe { chunk.ptr.add(self.used * PAGE) };
        self.used += 1;
        Ok(Page(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_zero_distinct_and_writable_across_chunks() {
        let mut c = Carver::default();
        let mut pages: Vec<Page> = (0..CHUNK_PAGES + 3).map(|_| c.page().unwrap()).collect();
        assert_eq!(
            c.chunks.len(),
            2,
            "a second chunk once the first is used up"
        );
        for (i, p) in pages.iter_mut().enumerate() {
            assert!(p.bytes().iter().all(|&b| b == 0), "page {i} is fresh");
            p.fault_in();
            p.bytes_mut().fill(i as u8 | 1);
        }
        for (i, p) in pages.iter().enumerate() {
            // A page overlapping another would show the other's bytes.
            assert!(p.bytes().iter().all(|&b| b == i as u8 | 1), "page {i}");
        }
        drop(pages);
    }
}
