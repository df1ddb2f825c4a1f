//! A persistent-memory region: a file or memfd mapped into memory, with
//! `persist` and an msync-style `sync`.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cpu::{cpu_features, Clock};
use crate::error::PmemError;
use crate::flush::{flush_lines, sfence};
use crate::model::{covered_lines, split_pages, FlushMode, SyncMode, LINE_BYTES};
use crate::track::{Tracker, TrackingChoice, TrackingKind};

/// The largest write-barrier latency accepted: one second.
pub const MAX_WBARRIER_NS: u64 = 1_000_000_000;

/// What backs a region.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Backing {
    /// Anonymous shared memory (`memfd_create`): for experiments; the
    /// contents vanish with the region.
    #[serde(rename = "memfd")]
    Memfd,
    /// A file, created if missing and extended to the region's size if
    /// shorter; its contents survive unmapping. On a DAX file system it is
    /// mapped with `MAP_SYNC`, so a flush really makes data durable.
    #[serde(rename = "file")]
    File(PathBuf),
}

impl Backing {
    /// `memfd` or the file's path, for reports.
    pub fn describe(&self) -> String {
        match self {
            Backing::Memfd => "memfd".to_string(),
            Backing::File(p) => format!("file:{}", p.display()),
        }
    }
}

/// How to map a region. Build with [`RegionOptions::memfd`] or
/// [`RegionOptions::file`] and adjust with the setters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegionOptions {
    /// Size in bytes: a non-zero multiple of the page size, at most the
    /// machine's physical memory.
    pub size: u64,
    /// What backs it.
    pub backing: Backing,
    /// M_FLUSH (default `clflush`, the study's default).
    pub flush_mode: FlushMode,
    /// M_SYNC (default `default`).
    pub sync_mode: SyncMode,
    /// L_WBAR in ns, paid after every fence that ends a persist or a sync
    /// that flushed something (default 0, at most [`MAX_WBARRIER_NS`]).
    pub wbarrier_ns: u64,
    /// Dirty tracking for SPF (default `auto`).
    pub tracking: TrackingChoice,
    /// Fault every page in at map time (`MADV_POPULATE_WRITE`), so timings
    /// exclude first-touch faults and SPF sees exact dirty sets (default
    /// true). The contents are not changed.
    pub populate: bool,
}

impl RegionOptions {
    /// A memfd-backed region of `size` bytes with default settings.
    pub fn memfd(size: u64) -> Self {
        RegionOptions {
            size,
            backing: Backing::Memfd,
            flush_mode: FlushMode::Clflush,
            sync_mode: SyncMode::Default,
            wbarrier_ns: 0,
            tracking: TrackingChoice::Auto,
            populate: true,
        }
    }

    /// A region of `size` bytes backed by the file at `path`.
    pub fn file(path: impl Into<PathBuf>, size: u64) -> Self {
        RegionOptions {
            backing: Backing::File(path.into()),
            ..RegionOptions::memfd(size)
        }
    }

    /// Set M_FLUSH.
    pub fn flush_mode(mut self, m: FlushMode) -> Self {
        self.flush_mode = m;
        self
    }

    /// Set M_SYNC.
    pub fn sync_mode(mut self, m: SyncMode) -> Self {
        self.sync_mode = m;
        self
    }

    /// Set L_WBAR in ns.
    pub fn wbarrier_ns(mut self, ns: u64) -> Self {
        self.wbarrier_ns = ns;
        self
    }

    /// Choose the dirty-tracking mechanism.
    pub fn tracking(mut self, t: TrackingChoice) -> Self {
        self.tracking = t;
        self
    }

    /// Populate at map time or not.
    pub fn populate(mut self, p: bool) -> Self {
        self.populate = p;
        self
    }
}

/// What a region has done since it was mapped (or its counters reset).
/// The same layout as `storlab_pmem_counters` in the C header.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// `persist` calls that did something (non-empty range).
    pub persist_calls: u64,
    /// `sync` calls that did something (non-empty range).
    pub sync_calls: u64,
    /// Cache lines flushed.
    pub lines_flushed: u64,
    /// Pages whose dirty state SPF consulted.
    pub pages_scanned: u64,
    /// Pages SPF found dirty.
    pub pages_dirty: u64,
    /// Fence + write-barrier sequences issued.
    pub barriers: u64,
    /// ns in flush instructions.
    pub flush_ns: u64,
    /// ns finding dirty pages (SPF).
    pub tracking_ns: u64,
    /// ns in fences and the L_WBAR spin.
    pub barrier_ns: u64,
}

/// A mapped persistent-memory region.
///
/// The memory is reachable through [`Region::as_slice`],
/// [`Region::as_mut_slice`], [`Region::write_at`] or the raw pointers;
/// `persist` and `sync` take `&mut self` because WOF rewrites the lines it
/// flushes (through a second mapping of the same memory, so that the
/// rewrite does not count as a write for SPF).
pub struct Region {
    ptr: *mut u8,
    alias: *mut u8,
    len: usize,
    page: usize,
    _fd: OwnedFd,
    backing: Backing,
    dax: bool,
    flush_mode: FlushMode,
    sync_mode: SyncMode,
    wbarrier_ns: u64,
    tracker: Tracker,
    tracking_note: Option<String>,
    c: Counters,
    runs: Vec<(u64, u64)>,
}

// SAFETY: the region owns its mappings; the raw pointers are never shared
// outside methods that borrow the region, the contents are only mutated
// through `&mut self` (or by the caller through the raw pointer, under the
// caller's own synchronisation), and the tracker's shared state is atomics.
unsafe impl Send for Region {}
// SAFETY: `&self` methods only read the contents and the counters.
unsafe impl Sync for Region {}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Physical memory in bytes (the size limit of a region).
fn phys_mem() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let (pages, psz) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && psz > 0 {
        pages as u64 * psz as u64
    } else {
        u64::MAX
    }
}

struct Mapping(*mut u8, usize);

impl Drop for Mapping {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: unmapping a mapping we created and nobody else uses.
            unsafe { libc::munmap(self.0 as *mut libc::c_void, self.1) };
        }
    }
}

impl Mapping {
    fn release(mut self) -> *mut u8 {
        std::mem::replace(&mut self.0, std::ptr::null_mut())
    }
}

fn mmap_shared(fd: i32, len: usize, try_sync: bool) -> Result<(Mapping, bool), PmemError> {
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    if try_sync {
        // SAFETY: a new shared mapping of our own descriptor.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
                fd,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            return Ok((Mapping(p as *mut u8, len), true));
        }
    }
    // SAFETY: a new shared mapping of our own descriptor.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
    if p == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOMEM) {
            return Err(PmemError::RegionTooLarge {
                size: len as u64,
                limit: phys_mem(),
                reason: "mmap found no room for it (ENOMEM)".into(),
            });
        }
        return Err(PmemError::Sys {
            call: "mmap",
            path: None,
            source: e,
        });
    }
    Ok((Mapping(p as *mut u8, len), false))
}

fn populate(m: &Mapping) -> Result<(), PmemError> {
    // SAFETY: advice on our own mapping; MADV_POPULATE_WRITE faults pages
    // in writable without changing their contents.
    let r = unsafe { libc::madvise(m.0 as *mut libc::c_void, m.1, libc::MADV_POPULATE_WRITE) };
    if r == 0 {
        return Ok(());
    }
    if crate::sys::errno() != libc::EINVAL {
        return Err(PmemError::last_os("madvise(MADV_POPULATE_WRITE)"));
    }
    // Before Linux 5.14: touch each page, writing back the byte read. The
    // mapping is not yet visible to any other thread.
    let page = page_size();
    for off in (0..m.1).step_by(page) {
        // SAFETY: inside our own read-write mapping.
        unsafe {
            let p = m.0.add(off);
            std::ptr::write_volatile(p, std::ptr::read_volatile(p));
        }
    }
    Ok(())
}

impl Region {
    /// Map a region.
    ///
    /// Errors: a zero or page-unaligned size, a size above physical
    /// memory, a write-barrier latency above one second, a flush mode the
    /// CPU lacks, SPF with tracking `off`, or a tracking mechanism that
    /// cannot be set up (see [`TrackingChoice`]); file and mapping errors
    /// with the failing call and path.
    pub fn map(opts: &RegionOptions) -> Result<Region, PmemError> {
        let page = page_size();
        if opts.size == 0 {
            return Err(PmemError::InvalidArgument("region size must be > 0".into()));
        }
        if opts.size & (page as u64 - 1) != 0 {
            return Err(PmemError::Unaligned {
                what: "region size",
                value: opts.size,
                align: page as u64,
            });
        }
        let limit = phys_mem().min(isize::MAX as u64);
        if opts.size > limit {
            return Err(PmemError::RegionTooLarge {
                size: opts.size,
                limit,
                reason: "a region is populated in memory and must fit in physical memory".into(),
            });
        }
        check_wbarrier(opts.wbarrier_ns)?;
        cpu_features().check(opts.flush_mode)?;
        if opts.sync_mode == SyncMode::Spf && opts.tracking == TrackingChoice::Off {
            return Err(PmemError::NoTracking);
        }
        let len = opts.size as usize;

        let fd = match &opts.backing {
            Backing::Memfd => {
                // SAFETY: the name is a NUL-terminated literal.
                let fd = unsafe { libc::memfd_create(c"storlab-pmem".as_ptr(), libc::MFD_CLOEXEC) };
                if fd < 0 {
                    return Err(PmemError::last_os("memfd_create"));
                }
                // SAFETY: a descriptor we just created and own.
                let fd = unsafe { OwnedFd::from_raw_fd(fd) };
                // SAFETY: resizing our own memfd.
                if unsafe { libc::ftruncate(fd.as_raw_fd(), opts.size as libc::off_t) } != 0 {
                    return Err(PmemError::last_os("ftruncate(memfd)"));
                }
                fd
            }
            Backing::File(path) => open_file(path, opts.size)?,
        };
        let try_sync = matches!(opts.backing, Backing::File(_));
        let (main, dax) = mmap_shared(fd.as_raw_fd(), len, try_sync)?;
        let (alias, _) = mmap_shared(fd.as_raw_fd(), len, dax)?;
        for m in [&main, &alias] {
            // Huge pages would make SPF's granularity 2 MiB; keep 4 KiB.
            // Failure (a kernel without THP) is harmless.
            // SAFETY: advice on our own mapping.
            unsafe { libc::madvise(m.0 as *mut libc::c_void, m.1, libc::MADV_NOHUGEPAGE) };
        }
        if opts.populate {
            populate(&main)?;
            populate(&alias)?;
        }
        let (tracker, tracking_note) = Tracker::setup(opts.tracking, main.0 as usize, len, page)?;
        Ok(Region {
            ptr: main.release(),
            alias: alias.release(),
            len,
            page,
            _fd: fd,
            backing: opts.backing.clone(),
            dax,
            flush_mode: opts.flush_mode,
            sync_mode: opts.sync_mode,
            wbarrier_ns: opts.wbarrier_ns,
            tracker,
            tracking_note,
            c: Counters::default(),
            runs: Vec::new(),
        })
    }

    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.len as u64
    }

    /// Always false: a region has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The page size dirty tracking works with.
    pub fn page_bytes(&self) -> u64 {
        self.page as u64
    }

    /// First byte of the region.
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// First byte of the region, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// The region's contents.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is readable for `len` bytes while `self`
        // lives, and is mutated only through `&mut self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The region's contents, for writing.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Copy `data` into the region at `offset`.
    pub fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), PmemError> {
        self.check_range(offset, data.len() as u64)?;
        let o = offset as usize;
        self.as_mut_slice()[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Copy from the region at `offset` into `buf`.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), PmemError> {
        self.check_range(offset, buf.len() as u64)?;
        let o = offset as usize;
        buf.copy_from_slice(&self.as_slice()[o..o + buf.len()]);
        Ok(())
    }

    /// What backs the region.
    pub fn backing(&self) -> &Backing {
        &self.backing
    }

    /// Whether the file is mapped with `MAP_SYNC` on a DAX file system, so
    /// that a flushed line is durable. Otherwise durability is emulated:
    /// flushed lines reach DRAM (the page cache), and [`Region::writeback`]
    /// makes a file region durable on its disk.
    pub fn is_dax(&self) -> bool {
        self.dax
    }

    /// Current M_FLUSH.
    pub fn flush_mode(&self) -> FlushMode {
        self.flush_mode
    }

    /// Change M_FLUSH; refused if the CPU lacks the instruction.
    pub fn set_flush_mode(&mut self, m: FlushMode) -> Result<(), PmemError> {
        cpu_features().check(m)?;
        self.flush_mode = m;
        Ok(())
    }

    /// Current M_SYNC.
    pub fn sync_mode(&self) -> SyncMode {
        self.sync_mode
    }

    /// Change M_SYNC; SPF is refused on a region mapped without tracking.
    /// Pages written while M_SYNC was `default` are still tracked, so the
    /// first SPF sync after a switch flushes them.
    pub fn set_sync_mode(&mut self, m: SyncMode) -> Result<(), PmemError> {
        if m == SyncMode::Spf && self.tracker.kind() == TrackingKind::Off {
            return Err(PmemError::NoTracking);
        }
        self.sync_mode = m;
        Ok(())
    }

    /// Current L_WBAR in ns.
    pub fn wbarrier_ns(&self) -> u64 {
        self.wbarrier_ns
    }

    /// Change L_WBAR (at most [`MAX_WBARRIER_NS`]).
    pub fn set_wbarrier_ns(&mut self, ns: u64) -> Result<(), PmemError> {
        check_wbarrier(ns)?;
        self.wbarrier_ns = ns;
        Ok(())
    }

    /// The dirty-tracking mechanism in use.
    pub fn tracking(&self) -> TrackingKind {
        self.tracker.kind()
    }

    /// Why `auto` tracking fell back to `mprotect`, if it did.
    pub fn tracking_note(&self) -> Option<&str> {
        self.tracking_note.as_deref()
    }

    /// Counters since the map or the last reset.
    pub fn counters(&self) -> Counters {
        let clock = Clock::get();
        Counters {
            flush_ns: clock.ticks_to_ns(self.c.flush_ns),
            tracking_ns: clock.ticks_to_ns(self.c.tracking_ns),
            barrier_ns: clock.ticks_to_ns(self.c.barrier_ns),
            ..self.c
        }
    }

    /// Zero the counters.
    pub fn reset_counters(&mut self) {
        self.c = Counters::default();
    }

    /// The offset of `addr` in the region, if `[addr, addr+len)` lies in it.
    pub fn offset_of(&self, addr: *const u8, len: u64) -> Result<u64, PmemError> {
        let base = self.ptr as usize;
        let a = addr as usize;
        let end = base + self.len;
        let inside = a >= base && a <= end && (len <= (end - a) as u64);
        if !inside {
            return Err(PmemError::AddressOutside {
                addr: a,
                len,
                base,
                end,
            });
        }
        Ok((a - base) as u64)
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<(), PmemError> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len as u64 => Ok(()),
            _ => Err(PmemError::OutOfRange {
                offset,
                len,
                region_len: self.len as u64,
            }),
        }
    }

    /// Flush `lines` lines from the line containing `offset`.
    fn flush(&mut self, offset: u64, lines: u64) {
        // SAFETY: the callers pass ranges checked to lie in the region (both
        // mappings are `len` bytes), the mode was checked against CPUID, and
        // `&mut self` excludes concurrent stores from safe code.
        unsafe {
            flush_lines(
                self.flush_mode,
                self.ptr.add(offset as usize),
                self.alias.add(offset as usize),
                lines,
            )
        };
    }

    /// Fence, then spin for L_WBAR.
    fn barrier(&mut self, clock: &Clock) {
        let t = clock.now();
        sfence();
        clock.spin(self.wbarrier_ns);
        self.c.barrier_ns += clock.now().wrapping_sub(t);
        self.c.barriers += 1;
    }

    /// Make `[offset, offset+len)` durable: flush every cache line it
    /// touches with M_FLUSH, fence, then pay L_WBAR. An empty range does
    /// nothing. Dirty tracking is not changed.
    pub fn persist(&mut self, offset: u64, len: u64) -> Result<(), PmemError> {
        self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let clock = Clock::get();
        let lines = covered_lines(offset, len, LINE_BYTES);
        let t0 = clock.now();
        self.flush(offset, lines);
        self.c.flush_ns += clock.now().wrapping_sub(t0);
        self.c.lines_flushed += lines;
        self.c.persist_calls += 1;
        self.barrier(clock);
        Ok(())
    }

    /// msync-style sync of `[offset, offset+len)` with M_SYNC:
    ///
    /// * `default`: flush every line of the range (like [`Region::persist`]).
    /// * `spf`: flush only lines of pages written since their last SPF sync.
    ///   A page wholly inside the range is flushed whole if dirty and
    ///   becomes clean; a page only partly inside it (a range smaller than
    ///   a page, or the range's ragged ends) has just the range's lines
    ///   flushed if dirty, and stays dirty.
    ///
    /// Then one fence and L_WBAR, if anything was flushed.
    pub fn sync(&mut self, offset: u64, len: u64) -> Result<(), PmemError> {
        self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.c.sync_calls += 1;
        match self.sync_mode {
            SyncMode::Default => {
                let clock = Clock::get();
                let lines = covered_lines(offset, len, LINE_BYTES);
                let t0 = clock.now();
                self.flush(offset, lines);
                self.c.flush_ns += clock.now().wrapping_sub(t0);
                self.c.lines_flushed += lines;
                self.barrier(clock);
                Ok(())
            }
            SyncMode::Spf => self.sync_spf(offset, len),
        }
    }

    fn sync_spf(&mut self, offset: u64, len: u64) -> Result<(), PmemError> {
        let clock = Clock::get();
        let page = self.page as u64;
        let lines_per_page = page / LINE_BYTES;
        let split = split_pages(offset, len, page);
        let t0 = clock.now();
        // Partial pages first: querying them changes nothing, so an error
        // here loses no dirty state.
        let head = match split.head {
            Some(h) if self.tracker.is_dirty(h.page)? => Some(h),
            _ => None,
        };
        let tail = match split.tail {
            Some(t) if self.tracker.is_dirty(t.page)? => Some(t),
            _ => None,
        };
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        let taken = if split.full_first < split.full_end {
            self.tracker
                .take_dirty(split.full_first, split.full_end, &mut runs)
        } else {
            Ok(())
        };
        let t1 = clock.now();
        self.c.tracking_ns += t1.wrapping_sub(t0);
        self.c.pages_scanned += split.pages();

        let mut lines = 0;
        let mut dirty = 0;
        if taken.is_err() {
            // The scan may have cleared pages it did not report: flush the
            // whole wholly-covered part so nothing written is left behind.
            runs.clear();
            runs.push((split.full_first, split.full_end));
        }
        for &(a, b) in &runs {
            self.flush(a * page, (b - a) * lines_per_page);
            lines += (b - a) * lines_per_page;
            dirty += b - a;
        }
        for part in [head, tail].into_iter().flatten() {
            let n = covered_lines(part.offset, part.len, LINE_BYTES);
            self.flush(part.offset, n);
            lines += n;
            dirty += 1;
        }
        self.c.flush_ns += clock.now().wrapping_sub(t1);
        self.c.lines_flushed += lines;
        self.c.pages_dirty += dirty;
        self.runs = runs;
        if lines > 0 {
            self.barrier(clock);
        }
        taken
    }

    /// Make a file region durable on its backing store with
    /// `msync(MS_SYNC)` (the kernel writes back dirty page-cache pages).
    /// Needed for real durability unless the region [`is_dax`](Self::is_dax).
    pub fn writeback(&mut self) -> Result<(), PmemError> {
        // SAFETY: msync on our own mapping.
        if unsafe { libc::msync(self.ptr as *mut libc::c_void, self.len, libc::MS_SYNC) } != 0 {
            return Err(PmemError::last_os("msync"));
        }
        Ok(())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // Stop tracking first (the mprotect fallback must forget the range
        // before it is unmapped), then unmap both views.
        self.tracker = Tracker::Off;
        drop(Mapping(self.alias, self.len));
        drop(Mapping(self.ptr, self.len));
    }
}

fn check_wbarrier(ns: u64) -> Result<(), PmemError> {
    if ns > MAX_WBARRIER_NS {
        return Err(PmemError::InvalidArgument(format!(
            "write-barrier latency {ns} ns is above the limit of {MAX_WBARRIER_NS} ns"
        )));
    }
    Ok(())
}

fn open_file(path: &Path, size: u64) -> Result<OwnedFd, PmemError> {
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        PmemError::InvalidArgument(format!("path {} contains a NUL byte", path.display()))
    })?;
    // SAFETY: `c` is NUL-terminated and outlives the call.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o644,
        )
    };
    if fd < 0 {
        return Err(PmemError::last_os_path("open", path));
    }
    // SAFETY: a descriptor we just opened and own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero stat is a valid buffer for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat fills `st` for our own descriptor.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(PmemError::last_os_path("fstat", path));
    }
    if (st.st_mode & libc::S_IFMT) != libc::S_IFREG {
        return Err(PmemError::InvalidArgument(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    if (st.st_size as u64) < size {
        // SAFETY: extending our own file.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) } != 0 {
            return Err(PmemError::last_os_path("ftruncate", path));
        }
    }
    Ok(fd)
}
