//! The file-system layer's state: its files and where they lie on the
//! device, the log, requests in flight, the page cache's bookkeeping;
//! building it, and creating and deleting files.

use std::collections::VecDeque;

use crate::device::Nanos;
use crate::host::config::FileSystem;
use crate::host::io::IoDone;

use super::behaviour::{Behaviour, Layout, Prealloc};
use super::config::{FsConfig, PAGE};
use super::request::{FsCounters, FsError};
use super::state::{Child, File, Parent, RwLock, P_ABSENT};

/// The file-system layer in front of a host.
pub struct FileLayer {
    pub(super) kind: FileSystem,
    pub(super) be: Behaviour,
    pub(super) cfg: FsConfig,
    /// Host thread for the layer's own IOs (log, writeback, metadata).
    pub(super) kthread: u32,
    pub(super) capacity: u64,
    pub(super) files: Vec<File>,
    /// Device space free for files: (base, bytes), sorted by base,
    /// adjacent ranges merged (`space.rs` places files in it).
    pub(super) free: Vec<(u64, u64)>,
    /// Each directory's lock is busy until then (by directory number).
    pub(super) dir_free_at: Vec<Nanos>,
    /// Entries in each directory (by directory number): creates less
    /// unlinks through the layer.
    pub(super) dir_entries: Vec<u64>,
    pub(super) log_base: u64,
    pub(super) log_head: u64,
    pub(super) log_pending: u64,
    /// Which logged changes a log force has covered (`fsync.rs`).
    pub(super) log_seq: super::state::LogSeq,
    /// Background log buffers under IO (with their barrier's flush).
    pub(super) log_inflight: u32,
    /// Committed transactions waiting for a log buffer, with their log
    /// bytes ([`Behaviour::iclogs`]).
    pub(super) log_waiters: VecDeque<(u32, u64)>,
    pub(super) parents: Vec<Parent>,
    pub(super) free_parents: Vec<u32>,
    pub(super) children: Vec<Child>,
    pub(super) free_children: Vec<u32>,
    /// Resident pages in insertion order, for eviction (second chance
    /// for dirty pages).
    pub(super) resident: VecDeque<(u32, u64)>,
    pub(super) resident_pages: u64,
    pub(super) cache_pages: u64,
    pub(super) dirty_pages: u64,
    pub(super) wb_inflight: u32,
    pub(super) wb_file: u32,
    pub(super) throttled: VecDeque<u32>,
    pub(super) syncers: Vec<u32>,
    /// Files whose dirty data expired, written back by the flusher in
    /// this order (`cache.rs`, `kupdate`).
    pub(super) expired: VecDeque<u32>,
    /// The flusher's next periodic wake-up, when one is set.
    pub(super) kupdate_at: Option<Nanos>,
    /// A file became dirty since the last wake-up was set: the flusher
    /// sets one (it is given the event queue only in its own calls).
    pub(super) kupdate_wanted: bool,
    pub(super) counters: FsCounters,
    /// Metadata blocks of the cold tree (`cold.rs`).
    pub(super) meta_bufs: Vec<super::state::MetaBuf>,
    /// The cold tree being laid out: inodes taken in the current inode
    /// block, that block's and the current directory's buffers, and
    /// the directory's number.
    pub(super) tree: super::state::TreeCursor,
    pub(super) scratch: Vec<IoDone>,
    pub(super) out: Vec<IoDone>,
    pub(super) granted: Vec<u32>,
}

impl FileLayer {
    /// A layer for file system `kind` on a device of `capacity` bytes; its
    /// own IOs are issued as host thread `kthread`.
    pub fn new(kind: FileSystem, cfg: FsConfig, capacity: u64, kthread: u32) -> Self {
        let mut be = Behaviour::of(kind);
        if cfg.delayed_logging && kind == FileSystem::Xfs {
            // the CIL replaces the in-core log buffers' write-as-full
            // and relogging (FsConfig::delayed_logging)
            be.iclogs = false;
        }
        // the log at the start of the middle allocation group; files take
        // the space before and after it (space.rs)
        let (log_base, free) = Self::mkfs(&be, capacity, cfg.log_region_bytes);
        FileLayer {
            kind,
            be,
            // a direct-access file system caches in the CPU's caches only
            cache_pages: be.cpu_cache_bytes.unwrap_or(cfg.page_cache_bytes) / PAGE,
            cfg,
            kthread,
            capacity,
            files: Vec::new(),
            free,
            dir_free_at: Vec::new(),
            dir_entries: Vec::new(),
            log_base,
            log_head: 0,
            log_pending: 0,
            log_seq: Default::default(),
            log_inflight: 0,
            log_waiters: VecDeque::new(),
            parents: Vec::new(),
            free_parents: Vec::new(),
            children: Vec::new(),
            free_children: Vec::new(),
            resident: VecDeque::new(),
            resident_pages: 0,
            dirty_pages: 0,
            wb_inflight: 0,
            wb_file: 0,
            throttled: VecDeque::new(),
            syncers: Vec::new(),
            expired: VecDeque::new(),
            kupdate_at: None,
            kupdate_wanted: false,
            counters: FsCounters::default(),
            meta_bufs: Vec::new(),
            tree: Default::default(),
            scratch: Vec::new(),
            out: Vec::new(),
            granted: Vec::new(),
        }
    }

    /// Directory `dir` (by number, as creates and unlinks name it in
    /// their offset) holds `n` entries: files laid out in it before the
    /// run, without create requests. What a create or unlink in it logs
    /// follows its size (XFS relogs its directory blocks, by form).
    pub fn set_dir_entries(&mut self, dir: u64, n: u64) {
        let d = (dir % 4096) as usize;
        if self.dir_entries.len() <= d {
            self.dir_entries.resize(d + 1, 0);
        }
        self.dir_entries[d] = n;
    }

    /// The file system.
    pub fn kind(&self) -> FileSystem {
        self.kind
    }

    /// What the layer counted so far.
    pub fn counters(&self) -> FsCounters {
        self.counters
    }

    /// Pages dirty now.
    pub fn dirty_pages(&self) -> u64 {
        self.dirty_pages
    }

    /// Create a file with room for `size` bytes, laid out as `layout`
    /// says. A file takes the first free range of the device that holds
    /// it whole (its data followed by its ext3 mapping blocks), else the
    /// free ranges in device order, around the log (`space.rs`); the
    /// error says how much is free and the largest file that fits.
    pub fn create_file(&mut self, size: u64, layout: Layout) -> Result<u32, FsError> {
        // preallocated: unwritten extents where the file system has them,
        // else allocated blocks (tmpfs, PMFS)
        let (layout, keep_size) = match layout {
            Layout::Unwritten { keep_size } if self.be.fallocate != Some(Prealloc::Unwritten) => {
                (Layout::Allocated, keep_size)
            }
            Layout::Unwritten { keep_size } => (layout, keep_size),
            _ => (layout, false),
        };
        let unwritten = matches!(layout, Layout::Unwritten { .. });
        let laid_out = layout == Layout::Allocated;
        let size = size.max(PAGE).div_ceil(PAGE) * PAGE;
        let blocks = size / PAGE;
        let meta_blocks = self
            .be
            .map_bytes_per_meta_block
            .map_or(0, |m| size.div_ceil(m));
        // placement unit: 1 MiB for files of 1 MiB or more, a block for
        // small ones (a small file takes its own blocks only)
        let unit = if size >= 1 << 20 { 1 << 20 } else { PAGE };
        let extents = self.take_space(size + meta_blocks * PAGE, unit, size)?;
        let words = blocks.div_ceil(64) as usize;
        let fill = if laid_out || unwritten { u64::MAX } else { 0 };
        self.files.push(File {
            live: true,
            extents,
            size,
            alloc: vec![fill; words],
            unwritten: if unwritten {
                vec![u64::MAX; words]
            } else {
                Vec::new()
            },
            unwritten_left: if unwritten { blocks } else { 0 },
            eof: if layout == Layout::Empty || keep_size {
                0
            } else {
                size
            },
            disk_eof: if layout == Layout::Empty || keep_size {
                0
            } else {
                size
            },
            lock: RwLock::default(),
            alloc_free_at: 0,
            pins: Default::default(),
            cold: None,
            pages: Vec::new(),
            dirty: 0,
            dirtied_when: Nanos::MAX,
            expiring: false,
            meta: vec![
                if laid_out && meta_blocks * PAGE > self.cfg.page_cache_bytes / 2 {
                    0
                } else {
                    u64::MAX
                };
                (meta_blocks.div_ceil(64)) as usize
            ],
            ra_next: u64::MAX,
            ra_win: 0,
            wb_cursor: 0,
            wb_inflight: 0,
        });
        Ok((self.files.len() - 1) as u32)
    }

    /// Create a file with room for `size` bytes whose first `written`
    /// bytes are already written (allocated, the file's size): later
    /// writes beyond them allocate and extend it, as for a file an
    /// application wrote earlier and appends to now.
    pub fn create_file_written(&mut self, size: u64, written: u64) -> Result<u32, FsError> {
        let f = self.create_file(size, Layout::Empty)?;
        let written = written.min(self.files[f as usize].size);
        if written > 0 {
            self.mark_alloc(f, 0, written);
        }
        Ok(f)
    }

    /// Delete a file: its cached pages are dropped (dirty ones without
    /// writeback), its page and block maps released, and its device space
    /// goes to the free ranges later files are placed in. Deleting a
    /// deleted file does nothing.
    pub fn delete_file(&mut self, file: u32) {
        let f = &mut self.files[file as usize];
        if !f.live {
            return;
        }
        f.live = false;
        self.dirty_pages -= f.dirty;
        f.dirty = 0;
        f.dirtied_when = Nanos::MAX;
        let resident = f.pages.iter().filter(|&&p| p != P_ABSENT).count() as u64;
        // stale entries of the eviction queue are dropped when reached
        self.resident_pages -= resident;
        f.pages = Vec::new();
        f.alloc = Vec::new();
        f.unwritten = Vec::new();
        f.unwritten_left = 0;
        f.meta = Vec::new();
        for (base, n) in std::mem::take(&mut f.extents) {
            self.free_range(base, n);
        }
    }

    /// Whether `file` exists (created and not deleted).
    pub fn is_live(&self, file: u32) -> bool {
        self.files.get(file as usize).is_some_and(|f| f.live)
    }

    /// Size of `file`, bytes.
    pub fn file_size(&self, file: u32) -> u64 {
        self.files[file as usize].size
    }
}
