//! Where the emulated device's bytes live: a sparse memory store or a
//! sparse host file. Data written is data read back; unwritten and
//! trimmed ranges read as zeros.
//!
//! Stores trust their callers: ranges were checked against the export size
//! at the protocol boundary ([`crate::request::check`]).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread;

use crate::pagemem::{Carver, Page, PAGE as PAGE_BYTES};

/// Which store to use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StoreSpec {
    /// Sparse memory: 4 KiB pages allocated on first non-zero write.
    #[default]
    Memory,
    /// A sparse host file (created or extended with `set_len`).
    File(PathBuf),
}

impl FromStr for StoreSpec {
    type Err = String;
    /// `memory` or `file:PATH`.
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "memory" {
            Ok(StoreSpec::Memory)
        } else if let Some(p) = s.strip_prefix("file:") {
            if p.is_empty() {
                Err("file: needs a path (file:PATH)".into())
            } else {
                Ok(StoreSpec::File(PathBuf::from(p)))
            }
        } else {
            Err(format!("unknown store {s:?}: use memory or file:PATH"))
        }
    }
}

impl std::fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Memory => write!(f, "memory"),
            StoreSpec::File(p) => write!(f, "file:{}", p.display()),
        }
    }
}

/// Byte storage behind an export. All methods take `&self`: stores do
/// their own locking so several connections can use them at once.
pub trait Store: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Fill `buf` from `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Write `data` at `offset`.
    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()>;
    /// Make `[offset, offset + len)` read as zeros (releasing space).
    fn zero(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Make everything written so far durable on the host.
    fn sync(&self) -> io::Result<()>;
    /// Whether [`Store::sync`] does anything (a memory store's does not).
    fn needs_sync(&self) -> bool {
        true
    }
    /// Sub-ranges of `[offset, offset + len)` that may hold non-zero data,
    /// in order; everything else reads as zeros.
    fn data_extents(&self, offset: u64, len: u64) -> io::Result<Vec<(u64, u64)>>;
    /// Bytes of host memory or disk holding data (approximate for files).
    fn allocated_bytes(&self) -> u64;
}

/// Open the store `spec` describes, of `size` bytes.
pub fn open_store(spec: &StoreSpec, size: u64, read_only: bool) -> io::Result<Box<dyn Store>> {
    Ok(match spec {
        StoreSpec::Memory => Box::new(MemoryStore::new(size).with_page_pool(POOL_PAGES)),
        StoreSpec::File(p) => Box::new(FileStore::open(p, size, read_only)?),
    })
}

const PAGE: u64 = PAGE_BYTES as u64;
const LEAF_PAGES: u64 = 512;
/// Pages a served memory store keeps faulted in ahead of need (16 MiB).
const POOL_PAGES: usize = 4096;

/// Zeroed pages faulted in ahead of need by a helper thread.
///
/// The first write to a new page makes the kernel find and clear a page
/// (in a VM, often the host too): 2-5 µs per 4 KiB here, inline on the
/// thread that serves every connection. A fresh export took 1 MiB writes
/// at a quarter of the speed of rewrites (680 vs 2600 MiB/s), and replies
/// due meanwhile went out milliseconds late. The helper takes that cost
/// on another CPU; the store takes ready pages (one uncontended lock) and
/// falls back to carving its own when the pool runs dry. The helper never
/// shares a lock the store waits for: its pages come from its own
/// [`Carver`], and the store only ever `try_lock`s the ready list.
///
/// The helper runs on the CPU the store last took a page on (the
/// reactor's). A first touch of guest memory may take milliseconds in a
/// VM, and a helper in such a fault on a client's CPU kept the client
/// waiting, idle priority or not (fresh 4 KiB writes, 2 fio jobs: p99.9
/// 2 ms; 150 µs on the reactor's CPU). There it runs only when the
/// reactor sleeps: the reactor spins at real-time priority while replies
/// are due.
struct PagePool {
    ready: Mutex<Vec<Page>>,
    low: Condvar,
    stop: AtomicBool,
    cap: usize,
    /// Where the helper's pages come from; locked by the helper alone (and
    /// kept here so the pages outlive the helper thread).
    carver: Mutex<Carver>,
    /// The CPU the store last took a page on (the reactor's): the helper
    /// runs there (see `fill`).
    cpu: AtomicI32,
}

impl PagePool {
    /// Start the helper that keeps up to `cap` pages ready.
    fn start(cap: usize) -> Option<Arc<PagePool>> {
        let pool = Arc::new(PagePool {
            ready: Mutex::new(Vec::with_capacity(cap)),
            low: Condvar::new(),
            stop: AtomicBool::new(false),
            cap,
            carver: Mutex::new(Carver::default()),
            cpu: AtomicI32::new(-1),
        });
        let p = pool.clone();
        thread::Builder::new()
            .name("nbd-pages".into())
            .spawn(move || p.fill())
            .ok()?;
        Some(pool)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Page>> {
        self.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A zeroed page, faulted in already, when the pool has one. Never
    /// waits for the helper: if it holds the lock (it may be preempted
    /// there, at idle priority), the caller carves its own.
    fn take(&self) -> Option<Page> {
        let mut ready = match self.ready.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        let page = ready.pop();
        if ready.len() == self.cap / 2 {
            // SAFETY: no arguments; returns -1 on failure.
            self.cpu
                .store(unsafe { libc::sched_getcpu() }, Ordering::Relaxed);
            self.low.notify_one();
        }
        page
    }

    /// The helper: refill to `cap` whenever the pool is down to half. It
    /// runs `SCHED_IDLE`, on CPU time nothing else wants: a refill takes
    /// milliseconds of CPU, which clients and the reactor need first.
    fn fill(&self) {
        const BATCH: usize = 64;
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: sets this thread's policy from a valid sched_param; on
        // failure it stays at normal priority.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) };
        let mut carver = self.carver.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let missing = {
                let mut ready = self.lock();
                while ready.len() > self.cap / 2 && !self.stop.load(Ordering::SeqCst) {
                    ready = self.low.wait(ready).unwrap_or_else(|e| e.into_inner());
                }
                self.cap - ready.len()
            };
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            run_on(self.cpu.load(Ordering::Relaxed));
            let mut left = missing;
            while left > 0 && !self.stop.load(Ordering::SeqCst) {
                let mut batch = Vec::with_capacity(left.min(BATCH));
                while batch.len() < left.min(BATCH) {
                    // Out of memory: stop filling; the store carves its
                    // own pages and reports the error if it fails too.
                    let Ok(mut page) = carver.page() else { return };
                    page.fault_in();
                    batch.push(page);
                }
                left -= batch.len();
                self.lock().extend(batch);
            }
        }
    }
}

/// Keep this thread on `cpu` (none if negative or not allowed).
fn run_on(cpu: i32) {
    let Ok(cpu) = usize::try_from(cpu) else {
        return;
    };
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET bounds-checks
    // `cpu` against the set's size; on failure the affinity is unchanged.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

struct Leaf {
    pages: Vec<Option<Page>>,
    used: u32,
}

impl Leaf {
    fn new() -> Self {
        Leaf {
            pages: (0..LEAF_PAGES).map(|_| None).collect(),
            used: 0,
        }
    }
}

#[derive(Default)]
struct Table {
    leaves: BTreeMap<u64, Leaf>,
    pages: u64,
    /// Pages zeroed whole, kept for reuse (dirty: cleared when reused).
    free: Vec<Page>,
    /// Fresh pages when neither `free` nor the pool has one.
    carver: Carver,
}

impl Table {
    /// An all-zero page for a new slot: a freed one cleared, else one from
    /// the pool (faulted in already), else a fresh one of our own.
    fn new_page(&mut self, pool: Option<&PagePool>) -> io::Result<Page> {
        if let Some(mut p) = self.free.pop() {
            p.bytes_mut().fill(0);
            return Ok(p);
        }
        match pool.and_then(PagePool::take) {
            Some(p) => Ok(p),
            None => self.carver.page(),
        }
    }
}

/// Sparse memory: a two-level table (2 MiB leaves of 4 KiB pages), pages
/// taken on the first write of non-zero data and released for reuse when
/// zeroed whole. Capacity may far exceed RAM when sparsely used. Page
/// memory comes from large mappings (`pagemem`), returned to the host
/// when the store is dropped.
pub struct MemoryStore {
    size: u64,
    table: RwLock<Table>,
    pool: Option<Arc<PagePool>>,
}

impl Drop for MemoryStore {
    fn drop(&mut self) {
        if let Some(p) = &self.pool {
            // Hold the lock so the helper is either waiting (and gets the
            // notification) or sees the flag before it waits.
            let _ready = p.lock();
            p.stop.store(true, Ordering::SeqCst);
            p.low.notify_one();
        }
    }
}

/// Split `[offset, offset + len)` into per-page pieces:
/// `(page number, offset in page, length, offset in the caller's buffer)`.
fn pages(offset: u64, len: u64) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let end = offset + len;
    let mut pos = offset;
    std::iter::from_fn(move || {
        if pos >= end {
            return None;
        }
        let page = pos / PAGE;
        let in_page = (pos % PAGE) as usize;
        let n = ((PAGE - in_page as u64).min(end - pos)) as usize;
        let item = (page, in_page, n, (pos - offset) as usize);
        pos += n as u64;
        Some(item)
    })
}

impl MemoryStore {
    /// An all-zero store of `size` bytes.
    pub fn new(size: u64) -> Self {
        MemoryStore {
            size,
            table: RwLock::new(Table::default()),
            pool: None,
        }
    }

    /// Keep up to `pages` (at most the store's own page count) zeroed
    /// pages faulted in by a helper thread, so first writes do not pay for
    /// the page faults (see `PagePool`). Without a thread, no pool.
    pub fn with_page_pool(mut self, pages: usize) -> Self {
        let cap = (pages as u64).min(self.size.div_ceil(PAGE)) as usize;
        if cap >= 2 {
            self.pool = PagePool::start(cap);
        }
        self
    }

    fn read_table(&self) -> std::sync::RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write_table(&self) -> std::sync::RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store for MemoryStore {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let t = self.read_table();
        let mut cached: Option<(u64, &Leaf)> = None;
        for (page, at, n, b) in pages(offset, buf.len() as u64) {
            let li = page / LEAF_PAGES;
            let leaf = match cached {
                Some((i, l)) if i == li => Some(l),
                _ => {
                    let l = t.leaves.get(&li);
                    if let Some(l) = l {
                        cached = Some((li, l));
                    }
                    l
                }
            };
            let dst = &mut buf[b..b + n];
            match leaf.and_then(|l| l.pages[(page % LEAF_PAGES) as usize].as_ref()) {
                Some(p) => dst.copy_from_slice(&p.bytes()[at..at + n]),
                None => dst.fill(0),
            }
        }
        Ok(())
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        let mut t = self.write_table();
        let t = &mut *t;
        for (page, at, n, b) in pages(offset, data.len() as u64) {
            let src = &data[b..b + n];
            let li = page / LEAF_PAGES;
            let pi = (page % LEAF_PAGES) as usize;
            let present = t.leaves.get(&li).is_some_and(|l| l.pages[pi].is_some());
            if !present && src.iter().all(|&x| x == 0) {
                continue; // zeros over a hole: stay sparse
            }
            let fresh = if present {
                None
            } else {
                Some(t.new_page(self.pool.as_deref())?)
            };
            let leaf = t.leaves.entry(li).or_insert_with(Leaf::new);
            let slot = &mut leaf.pages[pi];
            if let Some(page) = fresh {
                *slot = Some(page);
                leaf.used += 1;
                t.pages += 1;
            }
            if let Some(p) = slot.as_mut() {
                p.bytes_mut()[at..at + n].copy_from_slice(src);
            }
        }
        Ok(())
    }

    fn zero(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let end = offset + len;
        let mut t = self.write_table();
        let t = &mut *t;
        let first_leaf = offset / PAGE / LEAF_PAGES;
        let last_leaf = (end - 1) / PAGE / LEAF_PAGES;
        let ids: Vec<u64> = t
            .leaves
            .range(first_leaf..=last_leaf)
            .map(|(k, _)| *k)
            .collect();
        for li in ids {
            let Some(leaf) = t.leaves.get_mut(&li) else {
                continue;
            };
            let lstart = li * LEAF_PAGES * PAGE;
            let lend = lstart + LEAF_PAGES * PAGE;
            let (s, e) = (offset.max(lstart), end.min(lend));
            for (page, at, n, _) in pages(s, e - s) {
                let slot = &mut leaf.pages[(page % LEAF_PAGES) as usize];
                if n as u64 == PAGE {
                    if let Some(p) = slot.take() {
                        t.free.push(p);
                        leaf.used -= 1;
                        t.pages -= 1;
                    }
                } else if let Some(p) = slot.as_mut() {
                    p.bytes_mut()[at..at + n].fill(0);
                }
            }
            if leaf.used == 0 {
                t.leaves.remove(&li);
            }
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn needs_sync(&self) -> bool {
        false
    }

    fn data_extents(&self, offset: u64, len: u64) -> io::Result<Vec<(u64, u64)>> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        if len == 0 {
            return Ok(out);
        }
        let end = offset + len;
        let t = self.read_table();
        let first_leaf = offset / PAGE / LEAF_PAGES;
        let last_leaf = (end - 1) / PAGE / LEAF_PAGES;
        for (li, leaf) in t.leaves.range(first_leaf..=last_leaf) {
            for (pi, p) in leaf.pages.iter().enumerate() {
                if p.is_none() {
                    continue;
                }
                let ps = (li * LEAF_PAGES + pi as u64) * PAGE;
                let (s, e) = (ps.max(offset), (ps + PAGE).min(end));
                if s >= e {
                    continue;
                }
                match out.last_mut() {
                    Some((os, ol)) if *os + *ol == s => *ol += e - s,
                    _ => out.push((s, e - s)),
                }
            }
        }
        Ok(out)
    }

    fn allocated_bytes(&self) -> u64 {
        self.read_table().pages * PAGE
    }
}

/// A sparse host file: `pread`/`pwrite`, holes punched for zeroing,
/// `fdatasync` for durability.
pub struct FileStore {
    file: File,
    size: u64,
    path: PathBuf,
}

impl FileStore {
    /// Open (creating if needed) `path` and make it at least `size` bytes
    /// (a sparse extension). A read-only store must already be that big.
    pub fn open(path: &Path, size: u64, read_only: bool) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(!read_only)
            .truncate(false)
            .open(path)?;
        let len = file.metadata()?.len();
        if len < size {
            if read_only {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} is {len} bytes, smaller than the export ({size} bytes)",
                        path.display()
                    ),
                ));
            }
            file.set_len(size)?;
        }
        Ok(FileStore {
            file,
            size,
            path: path.to_path_buf(),
        })
    }

    /// The host file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Store for FileStore {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => {
                    // Shorter than the export (someone truncated it): zeros.
                    buf[done..].fill(0);
                    break;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn zero(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        let fd = self.file.as_raw_fd();
        for mode in [
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            libc::FALLOC_FL_ZERO_RANGE,
        ] {
            // SAFETY: fallocate on an open descriptor with in-range values;
            // it touches no user memory.
            let r = unsafe { libc::fallocate(fd, mode, offset as libc::off_t, len as libc::off_t) };
            if r == 0 {
                return Ok(());
            }
        }
        let zeros = vec![0u8; (1 << 20).min(len) as usize];
        let mut pos = offset;
        while pos < offset + len {
            let n = (zeros.len() as u64).min(offset + len - pos) as usize;
            self.file.write_all_at(&zeros[..n], pos)?;
            pos += n as u64;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn data_extents(&self, offset: u64, len: u64) -> io::Result<Vec<(u64, u64)>> {
        let fd = self.file.as_raw_fd();
        let end = offset + len;
        let mut out = Vec::new();
        let mut pos = offset;
        while pos < end {
            // SAFETY: lseek on an open descriptor; we only use pread/pwrite
            // elsewhere, so moving the file position is harmless.
            let data = unsafe { libc::lseek(fd, pos as libc::off_t, libc::SEEK_DATA) };
            if data < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::ENXIO) => Ok(out), // no data after pos
                    _ => Ok(vec![(offset, len)]), // SEEK_DATA unsupported: assume data
                };
            }
            let data = data as u64;
            if data >= end {
                break;
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd, data as libc::off_t, libc::SEEK_HOLE) };
            let hole = if hole < 0 {
                end
            } else {
                (hole as u64).min(end)
            };
            out.push((data, hole - data));
            pos = hole;
        }
        Ok(out)
    }

    fn allocated_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map(|m| m.blocks() * 512).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(s: &dyn Store) {
        let mut buf = vec![1u8; 10_000];
        s.read_at(&mut buf, 5_000).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8 + 1).collect();
        s.write_at(&data, 5_000).unwrap();
        s.read_at(&mut buf, 5_000).unwrap();
        assert_eq!(buf, data);
        s.zero(6_000, 4_096 * 2).unwrap();
        s.read_at(&mut buf, 5_000).unwrap();
        assert!(buf[1_000..1_000 + 8_192].iter().all(|&b| b == 0));
        assert_eq!(&buf[..1_000], &data[..1_000]);
        assert_eq!(&buf[9_192..], &data[9_192..]);
        let ext = s.data_extents(0, s.size()).unwrap();
        assert!(!ext.is_empty());
        for (o, l) in &ext {
            assert!(*o + *l <= s.size());
        }
    }

    #[test]
    fn memory_store_roundtrip_and_sparse() {
        let s = MemoryStore::new(1 << 40);
        roundtrip(&s);
        s.write_at(&[0u8; 8192], 1 << 39).unwrap();
        assert_eq!(s.data_extents(1 << 39, 8192).unwrap(), vec![]);
        s.zero(0, 1 << 40).unwrap();
        assert_eq!(s.allocated_bytes(), 0);
    }

    #[test]
    fn pages_zeroed_whole_are_reused_cleared() {
        let s = MemoryStore::new(1 << 30);
        s.write_at(&[0xaa; PAGE as usize * 3], 0).unwrap();
        s.zero(0, PAGE * 3).unwrap();
        assert_eq!(s.allocated_bytes(), 0);
        assert_eq!(s.read_table().free.len(), 3, "released for reuse");
        // New pages elsewhere take the freed ones: none of the old bytes
        // may show through.
        s.write_at(&[7], 1 << 29).unwrap();
        s.write_at(&[9; 10], (1 << 29) + 5 * PAGE + 4000).unwrap();
        assert_eq!(s.read_table().free.len(), 1);
        let mut buf = vec![0xffu8; PAGE as usize * 6];
        s.read_at(&mut buf, 1 << 29).unwrap();
        assert_eq!(buf[0], 7);
        assert!(buf[1..5 * PAGE as usize + 4000].iter().all(|&b| b == 0));
        assert!(buf[5 * PAGE as usize + 4000..][..10]
            .iter()
            .all(|&b| b == 9));
        assert!(buf[5 * PAGE as usize + 4010..].iter().all(|&b| b == 0));
        assert_eq!(s.allocated_bytes(), 2 * PAGE);
    }

    #[test]
    fn page_pool_pages_are_zeroed_and_refilled() {
        // A pool far smaller than the pages written (past `roundtrip`'s
        // range): the helper refills it, and the store falls back to
        // allocating when it runs dry.
        let s = MemoryStore::new(16 << 20).with_page_pool(8);
        assert!(s.pool.is_some(), "the helper thread started");
        roundtrip(&s);
        for i in 0..512u64 {
            // One byte per page: the rest of each page must read as zero.
            s.write_at(&[i as u8 | 1], (1 << 20) + i * PAGE + 100)
                .unwrap();
        }
        let mut page = vec![0xffu8; PAGE as usize];
        for i in 0..512u64 {
            s.read_at(&mut page, (1 << 20) + i * PAGE).unwrap();
            assert_eq!(page[100], i as u8 | 1, "page {i}");
            assert!(page[..100].iter().chain(&page[101..]).all(|&b| b == 0));
        }
        // Dropping the store stops the helper (no hang, no leak of the
        // store's pages).
        drop(s);
        // A store too small for a pool has none.
        assert!(MemoryStore::new(4096).with_page_pool(8).pool.is_none());
    }

    #[test]
    fn file_store_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let s = FileStore::open(&dir.path().join("img"), 1 << 30, false).unwrap();
        roundtrip(&s);
        s.sync().unwrap();
    }

    #[test]
    fn store_spec_parses() {
        assert_eq!("memory".parse::<StoreSpec>(), Ok(StoreSpec::Memory));
        assert_eq!(
            "file:/x".parse::<StoreSpec>(),
            Ok(StoreSpec::File("/x".into()))
        );
        assert!("file:".parse::<StoreSpec>().is_err());
        assert!("disk".parse::<StoreSpec>().is_err());
    }
}
