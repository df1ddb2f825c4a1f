//! The layer's interface to applications: a file request, why a file
//! cannot be created, and what the layer counts.

use serde::Serialize;

/// An operation on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// fsync(2): write back the file's dirty pages, force the log when the
    /// inode has logged changes not yet on the device (timestamps
    /// included), flush the device's volatile cache.
    Fsync,
    /// fdatasync(2): as [`FileOp::Fsync`], but the log is forced only for
    /// changes other than timestamps (size, extents): an overwrite of
    /// allocated, written blocks needs only the cache flush.
    Fdatasync,
    /// The namespace work of creating the file (made with
    /// [`FileLayer::create_file`]): the directory entry and the inode,
    /// `namespace_ns` under the directory's lock and
    /// `log_bytes_per_namespace_op` of log. `offset` is the directory's
    /// number (each directory has its own lock; numbers are taken modulo
    /// 4096); `len` is unused.
    Create,
    /// Unlink the file: the namespace work as for a create, then the file
    /// is deleted ([`FileLayer::delete_file`]: its pages dropped, its
    /// space free for later files).
    Unlink,
}

/// A request on a file from an application thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileReq {
    /// Caller's id, echoed in the [`IoDone`].
    pub id: u64,
    /// Issuing thread (a host thread index).
    pub thread: u32,
    /// Operation.
    pub op: FileOp,
    /// File, as returned by [`FileLayer::create_file`].
    pub file: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// O_DIRECT: bypass the page cache.
    pub direct: bool,
    /// Force unit access on the data (O_SYNC/O_DSYNC writes). On a
    /// [`FileOp::Create`] or [`FileOp::Unlink`]: the transaction commits
    /// synchronously (a `dirsync` or `sync` mount; XFS `wsync`): it
    /// forces the log before the call returns.
    pub fua: bool,
    /// Poll for the device's completion (fio's `hipri`).
    pub poll: bool,
}

/// Why a file could not be created.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FsError {
    /// The file does not fit in the device's free space.
    #[error(
        "a file of {size} bytes does not fit: the file system has {free} bytes free \
         (the device less its log and the other files), and the largest file that fits \
         is {largest} bytes"
    )]
    NoSpace {
        /// The file's size, bytes.
        size: u64,
        /// Free space: the device less the log and the files' space.
        free: u64,
        /// The largest file that fits (less than `free` on ext3, whose
        /// mapping blocks take space beside the data).
        largest: u64,
    },
}

/// What the layer counted (the `fs` object of a run's report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FsCounters {
    /// Log (journal) writes issued.
    pub journal_writes: u64,
    /// Device cache flushes issued: one for an fsync that forces no log,
    /// two for one that does (the log write's pre-flush and, for its
    /// force-unit-access, a post-flush: `fsync.rs`).
    pub flushes: u64,
    /// Bytes of them.
    pub journal_bytes: u64,
    /// Indirect-block (mapping metadata) reads.
    pub metadata_reads: u64,
    /// Allocations (each an allocation section under the inode lock).
    pub allocations: u64,
    /// Requests that found the inode lock taken.
    pub inode_lock_waits: u64,
    /// Time they waited for it (inode lock and allocation section), ns.
    pub inode_lock_wait_ns: u64,
    /// Buffered reads served whole from the page cache.
    pub page_cache_hits: u64,
    /// Buffered reads that went to the device.
    pub page_cache_misses: u64,
    /// Bytes read ahead beyond what the requests asked.
    pub readahead_bytes: u64,
    /// Writeback IOs.
    pub writeback_writes: u64,
    /// Bytes written back.
    pub writeback_bytes: u64,
    /// Writes that waited under the dirty limit.
    pub dirty_throttled: u64,
    /// Pages evicted from the page cache.
    pub evictions: u64,
    /// Direct writes into holes that fell back to the page cache (ext3).
    pub fallback_writes: u64,
    /// Create requests ([`FileOp::Create`]).
    pub creates: u64,
    /// Unlink requests ([`FileOp::Unlink`]).
    pub unlinks: u64,
    /// Time create and unlink requests waited for the directory lock, ns.
    pub namespace_wait_ns: u64,
    /// Unwritten-extent conversions (a write's first to preallocated
    /// blocks: a direct write's section under the inode lock at its
    /// completion, or a writeback IO's). Left out of the report when 0,
    /// as for every file without unwritten extents.
    #[serde(skip_serializing_if = "is_zero")]
    pub conversions: u64,
    /// Writeback IOs past the size the file system had recorded on
    /// disk, with nothing allocated or converted: the on-disk size moves
    /// in a logged transaction of its own (XFS's `xfs_setfilesize` at
    /// the IO's completion, ext4's `i_disksize`). Left out of the report
    /// when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub size_updates: u64,
    /// Files the flusher found dirty for longer than `dirty_expire_ms`
    /// and wrote back whole (`cache.rs`, `kupdate`). Left out of the
    /// report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub expired_files: u64,
    /// Reads answered with zeros without device IO: every block they
    /// (or their read-ahead window) covered was unwritten. Left out of
    /// the report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unwritten_reads: u64,
    /// PMFS reads served whole from the CPU caches (their lines still in
    /// the last-level cache from an earlier read: no NVMM access; see
    /// [`Behaviour::cpu_cache_bytes`](super::Behaviour::cpu_cache_bytes)).
    /// Left out of the report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub cpu_cache_hits: u64,
    /// Transactions that found every in-core log buffer under IO and
    /// waited for one ([`Behaviour::iclogs`](super::Behaviour::iclogs)).
    /// Left out of the report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_buffer_waits: u64,
    /// Time they waited, ns. Left out of the report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub log_buffer_wait_ns: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}
