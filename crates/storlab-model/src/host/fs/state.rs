//! The layer's records: page states, an inode's lock, a file, a request
//! in flight (parent) and the host requests it is made of (children),
//! and the layer's wake-up tokens.

use std::collections::VecDeque;

use crate::breakdown::Breakdown;
use crate::device::Nanos;

use super::request::FileReq;

pub(super) const P_ABSENT: u8 = 0;
pub(super) const P_CLEAN: u8 = 1;
pub(super) const P_DIRTY: u8 = 2;
pub(super) const P_WRITEBACK: u8 = 3;

/// An inode's read/write lock: FIFO-fair (a waiting writer blocks later
/// readers), as Linux's rw_semaphore and mutex.
#[derive(Debug, Default)]
pub(super) struct RwLock {
    pub(super) readers: u32,
    pub(super) writer: bool,
    pub(super) waiters: VecDeque<(u32, bool)>,
}

impl RwLock {
    fn free_for(&self, excl: bool) -> bool {
        if excl {
            self.readers == 0 && !self.writer
        } else {
            !self.writer
        }
    }
    /// Take the lock now, or queue `who`. True when taken.
    pub(super) fn acquire(&mut self, who: u32, excl: bool) -> bool {
        if self.waiters.is_empty() && self.free_for(excl) {
            self.take(excl);
            true
        } else {
            self.waiters.push_back((who, excl));
            false
        }
    }
    fn take(&mut self, excl: bool) {
        if excl {
            self.writer = true;
        } else {
            self.readers += 1;
        }
    }
    /// Release; the waiters granted the lock are pushed to `granted`.
    pub(super) fn release(&mut self, excl: bool, granted: &mut Vec<u32>) {
        if excl {
            self.writer = false;
        } else {
            self.readers -= 1;
        }
        while let Some(&(w, x)) = self.waiters.front() {
            if !self.free_for(x) {
                break;
            }
            self.waiters.pop_front();
            self.take(x);
            granted.push(w);
            if x {
                break;
            }
        }
    }
}

#[derive(Debug)]
pub(super) struct File {
    pub(super) live: bool,
    /// The device space the file holds, (device offset, bytes) in file
    /// order: its room, then its mapping blocks, the last extent rounded
    /// to the placement unit. Most files have one; a file larger than any
    /// free range has several (around the log). Freed when it is deleted.
    pub(super) extents: Vec<(u64, u64)>,
    pub(super) size: u64,
    /// Allocated blocks (bit per block).
    pub(super) alloc: Vec<u64>,
    /// Unwritten blocks (bit per block): empty unless the file was laid
    /// out [`Layout::Unwritten`], and dropped once every block is written.
    pub(super) unwritten: Vec<u64>,
    /// Blocks still unwritten.
    pub(super) unwritten_left: u64,
    /// Largest byte written + 1 (the file's size as writes extend it).
    pub(super) eof: u64,
    /// The size recorded on disk: it follows `eof` when writeback of
    /// the pages beyond it completes.
    pub(super) disk_eof: u64,
    pub(super) lock: RwLock,
    /// The inode's allocation section is busy until then.
    pub(super) alloc_free_at: Nanos,
    /// Page states (allocated on the first buffered access).
    pub(super) pages: Vec<u8>,
    pub(super) dirty: u64,
    /// When the file went from clean to dirty (the inode's
    /// `dirtied_when`); `Nanos::MAX` while it is clean.
    pub(super) dirtied_when: Nanos,
    /// Queued in the flusher's expired files.
    pub(super) expiring: bool,
    /// Mapping metadata blocks read (ext3), bit per block.
    pub(super) meta: Vec<u64>,
    /// Read-ahead: where a sequential reader goes next, and the window.
    pub(super) ra_next: u64,
    pub(super) ra_win: u64,
    /// Writeback cursor (page index).
    pub(super) wb_cursor: u64,
    /// Writeback IOs of this file in flight.
    pub(super) wb_inflight: u32,
    /// Its changes in the log not yet forced (`fsync.rs`).
    pub(super) pins: Pins,
    /// A file of a cold tree whose inode is not cached yet: its
    /// directory's block and its inode's block, indexes into the layer's
    /// `meta_bufs` (`cold.rs`).
    pub(super) cold: Option<(u32, u32)>,
}

/// A metadata block of a cold tree (a directory block, an inode
/// cluster): where it lies, and whether it is cached (`cold.rs`).
#[derive(Debug)]
pub(super) struct MetaBuf {
    pub(super) dev: u64,
    pub(super) bytes: u64,
    pub(super) state: MetaState,
}

/// Where the cold tree being laid out is (`cold.rs`): the current
/// directory (its number and block) and inode block (its buffer and the
/// inodes already in it).
#[derive(Debug, Default)]
pub struct TreeCursor {
    pub(super) dir: Option<(u64, u32)>,
    pub(super) inode_block: Option<u32>,
    pub(super) slots: u64,
}

#[derive(Debug)]
pub(super) enum MetaState {
    /// On the device only.
    Cold,
    /// Being read; these parents wait for it.
    Reading(Vec<u32>),
    Cached,
}

impl File {
    /// The device offset of the file's byte `off` (its data, then its
    /// mapping blocks) and the bytes from there to the end of its extent.
    /// An offset past the file's space maps beyond its last extent.
    pub(super) fn map(&self, off: u64) -> (u64, u64) {
        let mut at = off;
        for &(b, n) in &self.extents {
            if at < n {
                return (b + at, n - at);
            }
            at -= n;
        }
        let (b, n) = self.extents.last().copied().unwrap_or((0, 0));
        (b + n + at, u64::MAX)
    }
}

pub(super) fn bit(v: &[u64], i: u64) -> bool {
    v[(i / 64) as usize] >> (i % 64) & 1 == 1
}
pub(super) fn set_bit(v: &mut [u64], i: u64) {
    v[(i / 64) as usize] |= 1 << (i % 64);
}
pub(super) fn clear_bit(v: &mut [u64], i: u64) {
    v[(i / 64) as usize] &= !(1 << (i % 64));
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting for a cold file's directory block or inode to be read
    /// (`cold.rs`), before anything else of the request.
    ColdMeta,
    Lock,
    Meta,
    Alloc,
    Data,
    /// Copying to or from the page cache (a hit, or after the fill).
    Copy,
    /// A direct write fallen back to the page cache: the copy in.
    FallbackCopy,
    /// Waiting under the dirty limit.
    Throttle,
    /// A write's unwritten-extent conversion at its completion, in the
    /// inode's allocation section.
    Convert,
    /// A create or unlink in the directory's section.
    Namespace,
    /// fsync: writeback of the file's pages, then the log (its pre-flush,
    /// its write), then a flush.
    SyncWb,
    SyncPreflush,
    SyncLog,
    SyncFlush,
    /// A committed transaction waiting for an in-core log buffer (every
    /// one full and under IO: [`Behaviour::iclogs`]).
    ///
    /// [`Behaviour::iclogs`]: super::Behaviour::iclogs
    LogWait,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Parent {
    pub(super) req: FileReq,
    pub(super) stage: Stage,
    pub(super) submitted: Nanos,
    /// Lock held: 0 none, 1 shared, 2 exclusive.
    pub(super) held: u8,
    pub(super) lock_since: Nanos,
    pub(super) lock_wait: u64,
    /// Child latency (slat) of the data request, for the report.
    pub(super) slat: u64,
    /// Outstanding children in the current stage.
    pub(super) pending: u32,
    /// Pages a buffered read's fill brings in.
    pub(super) fill: (u64, u64),
    pub(super) bd: Breakdown,
    /// A wake-up will release the inode mutex after submission
    /// ([`Behaviour::dio_reads_mutex`]); the slot is freed only then.
    pub(super) release_pending: bool,
    /// Finished while `release_pending`: the release frees the slot.
    pub(super) finished: bool,
    /// A direct write that converts unwritten blocks when its data is
    /// written.
    pub(super) convert: bool,
    /// CPU after its directory's lock: an unlink's freeing of the file's
    /// pages ([`Behaviour::page_free_ns`](super::Behaviour::page_free_ns)), ns.
    pub(super) after_ns: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ChildKind {
    /// Part of a parent's path (data, metadata, fill, flush, forced log).
    Fore,
    /// A log buffer written in the background.
    Log,
    /// The cache flush before a background log buffer of `bytes` (a
    /// barrier, `fs.log_barrier`); the buffer is written when it is done.
    LogPreflush { bytes: u64 },
    /// Writeback of pages `first..first+n` of `file`.
    Writeback { file: u32, first: u64, n: u64 },
    /// The read of a cold tree's metadata block `buf` (`cold.rs`).
    ColdMeta { buf: u32 },
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Child {
    pub(super) parent: u32,
    pub(super) kind: ChildKind,
}

pub(super) const NONE: u32 = u32::MAX;
/// Tokens of the layer's own wake-ups: the top two bits set (host tokens
/// use the top bit alone, device tokens neither; see `host/stack.rs`).
pub const FS_TOKEN: u64 = 3 << 62;
/// In a layer token: the wake-up releases the parent's inode mutex after
/// its submission (below the two [`FS_TOKEN`] bits; parent indexes are
/// 32-bit).
pub(super) const RELEASE_BIT: u64 = 1 << 61;
/// In a layer token: the flusher's periodic wake-up, which writes back
/// the files dirty for longer than `dirty_expire_ms` (`cache.rs`).
pub(super) const KUPDATE_BIT: u64 = 1 << 60;

/// Whether `token` is the flusher's periodic wake-up: background work
/// the run loop drops once every thread and application has finished,
/// so what a run leaves dirty does not keep it going (as the kernel
/// writes it back after the program has exited, outside its run).
pub fn is_flusher_timer(token: u64) -> bool {
    token & FS_TOKEN == FS_TOKEN && token & KUPDATE_BIT != 0
}

/// A file's changes in the log (fsync.rs), by the sequence number of the last of
/// each kind (0: none).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pins {
    /// Timestamps only (a write's `XFS_ILOG_TIMESTAMP`).
    pub(super) ts: u64,
    /// The inode core: size, extents (allocation, conversion), the
    /// inode's creation or unlink.
    pub(super) core: u64,
    /// The tick (+ 1) of the last timestamp update.
    pub(super) ts_tick: u64,
}

/// Logged changes numbered in order, and how far a log force has covered
/// them.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LogSeq {
    pub(super) last: u64,
    pub(super) forced: u64,
}
