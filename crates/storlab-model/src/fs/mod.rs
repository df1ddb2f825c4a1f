//! File systems as mechanisms between a workload and the host stack: files
//! laid out on the device, the per-inode lock, block allocation and its
//! journal (log) writes, indirect-block metadata reads, and a page cache
//! (buffered reads with read-ahead, dirty pages written back by a flusher
//! under a dirty limit; `direct` requests bypass it).
//!
//! The layer sits in front of a [`Host`]: a file request becomes zero or
//! more host requests (its data, metadata reads, log writes, writeback),
//! and a finished file request is an [`IoDone`] in the same [`HostCx`]
//! the host reports into, so a driver treats the pair like a host. It is
//! the file-level interface application models call too: per-thread
//! reads, writes and fsyncs at file offsets ([`FileReq`]), files created
//! and deleted with [`FileLayer::create_file`] and
//! [`FileLayer::delete_file`].
//!
//! Sources for the mechanisms (Linux 2.6.2x-3.x, the kernels of the
//! studies):
//! - XFS direct IO (`xfs_file_aio_write`, fs/xfs/linux-2.6/xfs_lrw.c,
//!   later xfs_file.c): the IO lock (`XFS_IOLOCK`) is taken shared for
//!   reads and for direct writes inside the file's size with no cached
//!   pages; a write that extends the file or is not block aligned takes it
//!   exclusive. Writes into holes allocate in `xfs_iomap_write_direct`
//!   under the inode lock (`XFS_ILOCK_EXCL`) in a transaction, and the
//!   unwritten extent is converted in a second transaction at IO
//!   completion: both are CPU under the inode lock, modelled as one
//!   serialised section of `alloc_ns` per allocating request. Transactions
//!   go to the in-core log; a log buffer (`logbsize`, 32 KiB by default,
//!   Documentation/filesystems/xfs.txt) is written when it fills or on
//!   fsync, as its own IO.
//! - ext3/ext4 (`generic_file_aio_write`, mm/filemap.c): every write holds
//!   `i_mutex` for its whole duration, direct IO included, so writers to
//!   one file are serialised; buffered reads take no lock, direct reads
//!   take `i_mutex` until their bios are submitted (`DIO_LOCKING` in
//!   fs/direct-io.c, `__blockdev_direct_IO`: "All block lookups have been
//!   performed. For READ requests we can let i_mutex go"). ext3 maps blocks through
//!   indirect blocks (one 4 KiB block of 1024 pointers maps 4 MiB), read
//!   from the device when not cached; its journal (JBD, ordered mode) takes
//!   the allocation's metadata blocks.
//! - Unwritten extents (fallocate(2): `xfs_alloc_file_space` with
//!   `XFS_BMAPI_PREALLOC` in fs/xfs/xfs_bmap_util.c, earlier
//!   xfs_vnodeops.c; ext4 `ext4_fallocate` with
//!   `EXT4_GET_BLOCKS_CREATE_UNWRIT_EXT`, fs/ext4/extents.c): the blocks
//!   are allocated and mapped but flagged unwritten. A read of an
//!   unwritten block returns zeros without device IO: the mapping says
//!   unwritten, and the direct-IO path zeroes the user buffer
//!   (fs/direct-io.c treats an unwritten buffer as a hole on reads;
//!   later fs/iomap/direct-io.c `iomap_dio_hole_iter`) as the buffered
//!   path zero-fills the page. The first write to an unwritten block
//!   needs no allocation search, but at its IO completion the range is
//!   converted to written in a transaction of its own: XFS
//!   `xfs_iomap_write_unwritten` (fs/xfs/xfs_iomap.c: a transaction,
//!   `XFS_ILOCK_EXCL`, `xfs_bmapi_write` with `XFS_BMAPI_CONVERT`,
//!   commit), reached from the direct-IO end_io
//!   (`xfs_end_io_direct_write` in fs/xfs/xfs_aops.c, later
//!   `xfs_dio_write_end_io` in xfs_file.c) and from buffered writeback's
//!   ioend (`xfs_end_io`); ext4 `ext4_convert_unwritten_extents`
//!   (fs/ext4/extents.c: a journal handle, `ext4_map_blocks` with
//!   `EXT4_GET_BLOCKS_IO_CONVERT_EXT`, `ext4_journal_stop`) from its
//!   end_io work. The write completes only after the conversion. Once
//!   converted the block is plain written.
//! - Page cache (mm/readahead.c, mm/page-writeback.c): a sequential miss
//!   starts a read-ahead window of 4x the request, doubling up to
//!   `readahead_max_bytes` (128 KiB by default, `VM_MAX_READAHEAD`); a
//!   random miss reads only the request ("standalone, small random
//!   read"). Writes dirty pages; above `dirty_background_ratio` the flusher
//!   writes back (up to `MAX_WRITEBACK_PAGES`, 4 MiB, contiguous per IO);
//!   above `dirty_ratio` the writer waits (`balance_dirty_pages`).
//!
//! Simplifications (each says what it leaves out): the file system's CPU
//! outside the host's issue stage (allocation sections, page-cache copies
//! on hits) delays the request but holds no host core; metadata and log
//! IOs go through the host stack like a request of their own, on one
//! extra kernel thread; a partial write of an uncached page does not read
//! it first; ext3, ext4 and PMFS take the same
//! `[fs]` values as XFS (allocation CPU, log bytes per allocation) unless
//! set (ESTIMATE: no published figure for them), and ext3's buffered
//! writes allocate at writeback as XFS's delayed allocation does.
//! Unwritten extents: the conversion's cost is one transaction's share
//! of the allocating path (`convert_ns`, `log_bytes_per_convert`), the
//! same for every extent-map shape; the extent map's growth (a write
//! into the middle of an unwritten extent splits it into three, so
//! random first writes leave up to two more records each, and the map's
//! lookups and inserts cost more as it grows) is left out, as is ext4's
//! split of the unwritten extent before a direct write is submitted
//! (`EXT4_GET_BLOCKS_PRE_IO`, a second journal handle); a conversion at
//! writeback (buffered writes) adds its log bytes but, like writeback's
//! delayed allocation, no CPU to any request; the range is marked
//! written when the write is issued, so two writes in flight to one
//! unwritten block convert once; a block is the tracking unit (a write
//! smaller than a block converts the whole block, as the kernel zeroes
//! the rest of it); a read that covers written and unwritten blocks
//! reads its whole range from the device.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, Component};
use crate::config::{check_range, ConfigError};
use crate::host::{CompletionMode, FileSystem, Host, HostConfig, HostCx, HostIo, IoDone};
use crate::{Nanos, Op};

/// Page and file-system block size, bytes.
pub const PAGE: u64 = 4096;

/// The `[fs]` table: file-system and page-cache parameters. Every key is
/// optional (`storlab devices show` lists the defaults' sources in
/// [`FsConfig::default`]).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct FsConfig {
    /// CPU of one allocation under the inode lock (XFS: the allocation
    /// transaction plus the unwritten-extent conversion at completion;
    /// ext3/ext4: the journal handle and block allocation), ns.
    pub alloc_ns: u64,
    /// Log (journal) bytes one allocation adds: the metadata it logs.
    pub log_bytes_per_alloc: u64,
    /// CPU of one unwritten-extent conversion at a write's completion
    /// under the inode lock (XFS `xfs_iomap_write_unwritten`, ext4
    /// `ext4_convert_unwritten_extents`), ns. Absent: half of `alloc_ns`
    /// ([`FsConfig::convert_ns`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convert_ns: Option<u64>,
    /// Log (journal) bytes one conversion adds. Absent: half of
    /// `log_bytes_per_alloc` ([`FsConfig::log_bytes_per_convert`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_bytes_per_convert: Option<u64>,
    /// In-core log buffer: written to the device when full, bytes.
    pub log_buffer_bytes: u64,
    /// Size of the on-disk log (journal) region, bytes.
    pub log_region_bytes: u64,
    /// Page-cache size, bytes.
    pub page_cache_bytes: u64,
    /// Dirty pages, in percent of the page cache, above which writers wait
    /// (`vm.dirty_ratio`).
    pub dirty_ratio_pct: u32,
    /// Dirty pages, in percent of the page cache, above which the flusher
    /// writes back (`vm.dirty_background_ratio`).
    pub dirty_background_ratio_pct: u32,
    /// Largest read-ahead window, bytes.
    pub readahead_max_bytes: u64,
    /// Largest writeback IO, bytes.
    pub writeback_max_bytes: u64,
    /// Writeback IOs the flusher keeps in flight.
    pub writeback_depth: u32,
    /// CPU of one namespace operation (a file's create or unlink: the
    /// directory entry, the inode's allocation or release, the freeing of
    /// its extents) under the parent directory's lock, ns. Requests of
    /// [`FileOp::Create`] and [`FileOp::Unlink`] pay it, one at a time
    /// (one directory).
    pub namespace_ns: u64,
    /// Log (journal) bytes one create or unlink adds: the inode core, the
    /// directory block range and (unlink) the free-space records, bytes.
    pub log_bytes_per_namespace_op: u64,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            // CALIBRATED: the CPU of an XFS allocation (allocation plus
            // unwritten-conversion transactions under XFS_ILOCK_EXCL),
            // against the HASTE study's 4 KB random-write bandwidth through
            // XFS (210 MB/s = 51,300 allocating writes a second, one at a
            // time: 19.5 µs each). The DDR, SSD-RAID and disk-RAID figures
            // are predictions.
            alloc_ns: 19_500,
            // ESTIMATE: an XFS allocation logs the inode core (~176 B),
            // one bmap btree record and two free-space btree updates with
            // their log headers: ~512 B.
            log_bytes_per_alloc: 512,
            // derived from alloc_ns and log_bytes_per_alloc when absent
            // (FsConfig::convert_ns, FsConfig::log_bytes_per_convert)
            convert_ns: None,
            log_bytes_per_convert: None,
            // Documentation/filesystems/xfs.txt: logbsize defaults to 32k.
            log_buffer_bytes: 32 << 10,
            // ESTIMATE: mkfs.xfs's internal log for a 64 GB file system is
            // a few tens of MB; 64 MiB.
            log_region_bytes: 64 << 20,
            // ESTIMATE: the study hosts' page cache: a few GB free of 8-16
            // GB DRAM; 4 GiB.
            page_cache_bytes: 4 << 30,
            // Documentation/sysctl/vm.txt (2.6.3x defaults): dirty_ratio 20.
            dirty_ratio_pct: 20,
            // Documentation/sysctl/vm.txt: dirty_background_ratio 10.
            dirty_background_ratio_pct: 10,
            // mm/readahead.c, VM_MAX_READAHEAD: 128 KiB.
            readahead_max_bytes: 128 << 10,
            // fs/fs-writeback.c, MAX_WRITEBACK_PAGES: 1024 pages.
            writeback_max_bytes: 4 << 20,
            // ESTIMATE: the flusher submits asynchronously; 8 IOs cover a
            // block queue's plug.
            writeback_depth: 8,
            // ESTIMATE: an XFS create or unlink is a transaction of the
            // same order as an allocation's (xfs_create: inode allocation
            // from the inode btree, directory entry insertion, transaction
            // commit; xfs_remove plus xfs_inactive's extent freeing): about
            // 20 µs of CPU on the studies' 2.x GHz hosts, taken as the
            // allocation's 19.5 µs rounded.
            namespace_ns: 20_000,
            // ESTIMATE: a create logs the inode core (~176 B plus a 256 B
            // inode cluster buffer range), the directory block range
            // (~256 B) and log headers; an unlink the same plus two
            // free-space btree records: ~1 KiB either way.
            log_bytes_per_namespace_op: 1024,
        }
    }
}

impl FsConfig {
    /// CPU of one unwritten-extent conversion, ns: `convert_ns` when set,
    /// else half of `alloc_ns`. ESTIMATE: `alloc_ns` is calibrated as
    /// both transactions of an allocating direct write (the allocation in
    /// `xfs_iomap_write_direct`, the conversion of the unwritten extent it
    /// made at completion in `xfs_iomap_write_unwritten`); a write into a
    /// preallocated extent runs only the second. No published figure
    /// splits them, so each is taken as half (the conversion's
    /// `xfs_bmapi_write` with `XFS_BMAPI_CONVERT` edits the extent map as
    /// the allocation does, without the free-space search).
    pub fn convert_ns(&self) -> u64 {
        self.convert_ns.unwrap_or(self.alloc_ns / 2)
    }

    /// Log bytes one conversion adds: `log_bytes_per_convert` when set,
    /// else half of `log_bytes_per_alloc`. ESTIMATE: the conversion logs
    /// the inode core and the changed extent records with their log
    /// headers but none of the allocation's two free-space btree updates:
    /// ~256 B of the allocation's ~512 B.
    pub fn log_bytes_per_convert(&self) -> u64 {
        self.log_bytes_per_convert
            .unwrap_or(self.log_bytes_per_alloc / 2)
    }
}

/// Validate an `[fs]` table.
pub fn validate(c: &FsConfig) -> Result<(), ConfigError> {
    check_range("fs.log_buffer_bytes", c.log_buffer_bytes, 512, 1 << 30)?;
    check_range(
        "fs.log_region_bytes",
        c.log_region_bytes,
        c.log_buffer_bytes,
        1 << 40,
    )?;
    check_range("fs.log_bytes_per_alloc", c.log_bytes_per_alloc, 0, 1 << 20)?;
    if let Some(v) = c.convert_ns {
        check_range("fs.convert_ns", v, 0, 1_000_000_000)?;
    }
    if let Some(v) = c.log_bytes_per_convert {
        check_range("fs.log_bytes_per_convert", v, 0, 1 << 20)?;
    }
    check_range(
        "fs.page_cache_bytes",
        c.page_cache_bytes,
        PAGE * 64,
        1 << 50,
    )?;
    check_range("fs.dirty_ratio_pct", c.dirty_ratio_pct, 1, 90)?;
    check_range(
        "fs.dirty_background_ratio_pct",
        c.dirty_background_ratio_pct,
        1,
        c.dirty_ratio_pct,
    )?;
    check_range("fs.readahead_max_bytes", c.readahead_max_bytes, 0, 1 << 30)?;
    check_range(
        "fs.writeback_max_bytes",
        c.writeback_max_bytes,
        PAGE,
        1 << 30,
    )?;
    check_range("fs.writeback_depth", c.writeback_depth, 1, 1024)?;
    check_range("fs.namespace_ns", c.namespace_ns, 0, 1_000_000_000)?;
    check_range(
        "fs.log_bytes_per_namespace_op",
        c.log_bytes_per_namespace_op,
        0,
        1 << 20,
    )?;
    Ok(())
}

/// How a file system behaves, by kind (the mechanisms of the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// Requests reach a block device (not tmpfs).
    pub block_device: bool,
    /// Every write holds the inode lock exclusive for its duration
    /// (ext3/ext4 `i_mutex`).
    pub writes_exclusive: bool,
    /// Buffered and direct reads take the inode lock shared (XFS iolock).
    pub reads_shared: bool,
    /// Indirect-block mapping: bytes of file mapped by one metadata block
    /// (ext3: 1024 pointers x 4 KiB), read from the device when uncached.
    pub map_bytes_per_meta_block: Option<u64>,
    /// The page cache is used (not PMFS, whose accesses are direct).
    pub page_cache: bool,
    /// Dirty pages are never written back (tmpfs: memory is the store).
    pub memory_store: bool,
    /// A direct write into a hole inside the file's size falls back to a
    /// buffered write and a synchronous writeback of its range (ext3:
    /// `get_more_blocks` in fs/direct-io.c maps without creating for
    /// `DIO_LOCKING` file systems inside `i_size`, and
    /// `__generic_file_aio_write` writes the rest through the page cache,
    /// then `filemap_write_and_wait_range` and invalidates it).
    pub dio_hole_fallback: bool,
    /// Data and log writes are made persistent as they are written (PMFS:
    /// non-temporal stores or cache-line flushes and a fence in the write
    /// path, fs/pmfs/xip.c), so they reach the device with force unit
    /// access and fsync issues no device flush.
    pub persist_writes: bool,
    /// Direct reads hold the inode mutex (exclusive) from their block
    /// lookups until their bios are submitted (`DIO_LOCKING`: fs/direct-io.c
    /// of 2.6.2x-3.x takes `i_mutex` for reads and drops it "now that its
    /// achieved its purpose" once every block is mapped and submitted; the
    /// block device and XFS, `DIO_NO_LOCKING` and `DIO_OWN_LOCKING`, take
    /// none). A device whose submission is the transfer itself (a RAM disk:
    /// brd copies in `make_request`; [`CompletionMode::Cpu`]) holds it for
    /// the whole read.
    ///
    /// [`CompletionMode::Cpu`]: crate::host::CompletionMode::Cpu
    pub dio_reads_mutex: bool,
    /// What fallocate(2) leaves: `None` when the file system has no
    /// fallocate(2) (ext3: `EOPNOTSUPP`), else whether the blocks are
    /// unwritten extents (XFS, ext4) or allocated and reading as zeros
    /// with no unwritten state (tmpfs: `shmem_fallocate` adds pages;
    /// PMFS: `pmfs_fallocate` allocates zeroed blocks).
    pub fallocate: Option<Prealloc>,
}

/// What a file system's fallocate(2) leaves in a file's blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prealloc {
    /// Unwritten extents: reads return zeros without IO, the first write
    /// converts ([`Layout::Unwritten`]).
    Unwritten,
    /// Allocated blocks with nothing to convert ([`Layout::Allocated`]).
    Allocated,
}

impl Behaviour {
    /// The behaviour of `fs`.
    pub fn of(fs: FileSystem) -> Behaviour {
        let base = Behaviour {
            block_device: true,
            writes_exclusive: false,
            reads_shared: true,
            map_bytes_per_meta_block: None,
            page_cache: true,
            memory_store: false,
            dio_hole_fallback: false,
            persist_writes: false,
            dio_reads_mutex: false,
            fallocate: Some(Prealloc::Unwritten),
        };
        match fs {
            FileSystem::None | FileSystem::Xfs => base,
            FileSystem::Ext3 => Behaviour {
                writes_exclusive: true,
                dio_hole_fallback: true,
                dio_reads_mutex: true,
                reads_shared: false,
                map_bytes_per_meta_block: Some(1024 * PAGE),
                // fs/ext3 has no fallocate file operation
                fallocate: None,
                ..base
            },
            FileSystem::Ext4 => Behaviour {
                writes_exclusive: true,
                reads_shared: false,
                // ext4_ind_direct_IO: blockdev_direct_IO, DIO_LOCKING
                dio_reads_mutex: true,
                ..base
            },
            FileSystem::Tmpfs => Behaviour {
                block_device: false,
                writes_exclusive: true,
                reads_shared: false,
                memory_store: true,
                fallocate: Some(Prealloc::Allocated),
                ..base
            },
            FileSystem::Pmfs => Behaviour {
                writes_exclusive: true,
                reads_shared: false,
                page_cache: false,
                persist_writes: true,
                fallocate: Some(Prealloc::Allocated),
                ..base
            },
        }
    }
}

/// How a new file starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every block allocated (written by an earlier pass, or preallocated
    /// with fallocate): writes allocate nothing. Its mapping blocks
    /// (ext3's indirect blocks) are cached when they fit in half the page
    /// cache: the pass that laid the file out touched each of them once
    /// per block it maps, which promotes them to the active list, where
    /// the data the pass streamed through the inactive list cannot evict
    /// them (mm/swap.c `mark_page_accessed`; mm/vmscan.c keeps the active
    /// file list at most as large as the inactive, `inactive_file_is_low`).
    Allocated,
    /// Its size set (ftruncate, as fio does with `fallocate=none`) but no
    /// block allocated: writes allocate, none extends the file.
    Sparse,
    /// Size 0: writes allocate and extend it (an application's new file).
    Empty,
    /// Every block preallocated as an unwritten extent (fallocate(2) on
    /// XFS or ext4, [`Prealloc::Unwritten`]): writes allocate nothing,
    /// but the first write to a block converts it to written at its
    /// completion (`convert_ns` under the inode lock,
    /// `log_bytes_per_convert` of log), and reads of blocks not yet
    /// written return zeros without device IO. With `keep_size`
    /// (`FALLOC_FL_KEEP_SIZE`) the file's size stays 0, so writes extend
    /// it (XFS takes its IO lock exclusive for them). On a file system
    /// without unwritten extents the file is [`Layout::Allocated`] (its
    /// size 0 with `keep_size`).
    Unwritten {
        /// The file's size is left at 0.
        keep_size: bool,
    },
}

impl Layout {
    /// The layout fallocate(2) leaves on `fs` (with
    /// `FALLOC_FL_KEEP_SIZE` when `keep_size`), or `None` when `fs` has
    /// no fallocate(2) ([`Behaviour::fallocate`]).
    pub fn preallocated(fs: FileSystem, keep_size: bool) -> Option<Layout> {
        Behaviour::of(fs)
            .fallocate
            .map(|_| Layout::Unwritten { keep_size })
    }
}

/// An operation on a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// fsync: write back the file's dirty pages, force the log, flush the
    /// device's volatile cache.
    Fsync,
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
    /// Force unit access on the data (O_SYNC/O_DSYNC writes).
    pub fua: bool,
    /// Poll for the device's completion (fio's `hipri`).
    pub poll: bool,
}

/// Why a file could not be created.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FsError {
    /// The files and the log do not fit on the device.
    #[error(
        "the files need {need} bytes with the file system's log but the device has {capacity}"
    )]
    NoSpace {
        /// Bytes needed.
        need: u64,
        /// Device capacity.
        capacity: u64,
    },
}

/// What the layer counted (the `fs` object of a run's report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FsCounters {
    /// Log (journal) writes issued.
    pub journal_writes: u64,
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
    /// Reads answered with zeros without device IO: every block they
    /// (or their read-ahead window) covered was unwritten. Left out of
    /// the report when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unwritten_reads: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

const P_ABSENT: u8 = 0;
const P_CLEAN: u8 = 1;
const P_DIRTY: u8 = 2;
const P_WRITEBACK: u8 = 3;

/// An inode's read/write lock: FIFO-fair (a waiting writer blocks later
/// readers), as Linux's rw_semaphore and mutex.
#[derive(Debug, Default)]
struct RwLock {
    readers: u32,
    writer: bool,
    waiters: VecDeque<(u32, bool)>,
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
    fn acquire(&mut self, who: u32, excl: bool) -> bool {
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
    fn release(&mut self, excl: bool, granted: &mut Vec<u32>) {
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
struct File {
    live: bool,
    /// Device offset of byte 0.
    base: u64,
    /// Bytes of device space the file holds from `base` (its room, its
    /// mapping blocks, rounded to the 1 MiB placement unit): freed when it
    /// is deleted.
    extent: u64,
    size: u64,
    /// Allocated blocks (bit per block).
    alloc: Vec<u64>,
    /// Unwritten blocks (bit per block): empty unless the file was laid
    /// out [`Layout::Unwritten`], and dropped once every block is written.
    unwritten: Vec<u64>,
    /// Blocks still unwritten.
    unwritten_left: u64,
    /// Largest byte written + 1 (the file's size as writes extend it).
    eof: u64,
    lock: RwLock,
    /// The inode's allocation section is busy until then.
    alloc_free_at: Nanos,
    /// Page states (allocated on the first buffered access).
    pages: Vec<u8>,
    dirty: u64,
    /// Mapping metadata blocks read (ext3), bit per block.
    meta: Vec<u64>,
    /// Read-ahead: where a sequential reader goes next, and the window.
    ra_next: u64,
    ra_win: u64,
    /// Writeback cursor (page index).
    wb_cursor: u64,
    /// Writeback IOs of this file in flight.
    wb_inflight: u32,
}

fn bit(v: &[u64], i: u64) -> bool {
    v[(i / 64) as usize] >> (i % 64) & 1 == 1
}
fn set_bit(v: &mut [u64], i: u64) {
    v[(i / 64) as usize] |= 1 << (i % 64);
}
fn clear_bit(v: &mut [u64], i: u64) {
    v[(i / 64) as usize] &= !(1 << (i % 64));
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
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
    /// fsync: writeback of the file's pages, then the log, then a flush.
    SyncWb,
    SyncLog,
    SyncFlush,
}

#[derive(Clone, Copy, Debug)]
struct Parent {
    req: FileReq,
    stage: Stage,
    submitted: Nanos,
    /// Lock held: 0 none, 1 shared, 2 exclusive.
    held: u8,
    lock_since: Nanos,
    lock_wait: u64,
    /// Child latency (slat) of the data request, for the report.
    slat: u64,
    /// Outstanding children in the current stage.
    pending: u32,
    /// Pages a buffered read's fill brings in.
    fill: (u64, u64),
    bd: Breakdown,
    /// A wake-up will release the inode mutex after submission
    /// ([`Behaviour::dio_reads_mutex`]); the slot is freed only then.
    release_pending: bool,
    /// Finished while `release_pending`: the release frees the slot.
    finished: bool,
    /// A direct write that converts unwritten blocks when its data is
    /// written.
    convert: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChildKind {
    /// Part of a parent's path (data, metadata, fill, flush, forced log).
    Fore,
    /// A log buffer written in the background.
    Log,
    /// Writeback of pages `first..first+n` of `file`.
    Writeback { file: u32, first: u64, n: u64 },
}

#[derive(Clone, Copy, Debug)]
struct Child {
    parent: u32,
    kind: ChildKind,
}

const NONE: u32 = u32::MAX;
/// Tokens of the layer's own wake-ups: the top two bits set (host tokens
/// use the top bit alone, device tokens neither; see `host.rs`).
pub const FS_TOKEN: u64 = 3 << 62;
/// In a layer token: the wake-up releases the parent's inode mutex after
/// its submission (below the two [`FS_TOKEN`] bits; parent indexes are
/// 32-bit).
const RELEASE_BIT: u64 = 1 << 61;

/// The CPU of submitting a request of `len` bytes, `op`, on host `c`
/// before the device has it, not counting waits: the system call's entry,
/// the file system's per-request CPU, the block layer, the driver's
/// work, tag and PIO and the copy into a DMA buffer (writes). The
/// stages of `host.rs`'s issue path, summed.
fn submission_ns(c: &HostConfig, op: Op, len: u64) -> u64 {
    let handoff = if c.scheduler == crate::host::Scheduler::SingleQueue {
        c.scheduler_handoff_ns
    } else {
        0
    };
    let copy_in = if op == Op::Write {
        (c.copy_ns_per_kib.write * len).div_ceil(1024)
    } else {
        0
    };
    c.syscall_entry_ns.get(op)
        + c.xfs_ns.get(op)
        + c.block_queue_ns.get(op)
        + c.driver_instruction_ns(op)
        + handoff
        + c.driver_tag_ns.get(op)
        + c.pio_word_ns * c.issue_pio_words as u64
        + copy_in
}

/// The file-system layer in front of a host.
pub struct FileLayer {
    kind: FileSystem,
    be: Behaviour,
    cfg: FsConfig,
    /// Host thread for the layer's own IOs (log, writeback, metadata).
    kthread: u32,
    capacity: u64,
    files: Vec<File>,
    next_base: u64,
    /// Device space freed by deleted files: (base, bytes), sorted by base,
    /// adjacent ranges merged; new files take the first that fits.
    free: Vec<(u64, u64)>,
    /// Each directory's lock is busy until then (by directory number).
    dir_free_at: Vec<Nanos>,
    log_base: u64,
    log_head: u64,
    log_pending: u64,
    parents: Vec<Parent>,
    free_parents: Vec<u32>,
    children: Vec<Child>,
    free_children: Vec<u32>,
    /// Resident pages in insertion order, for eviction (second chance
    /// for dirty pages).
    resident: VecDeque<(u32, u64)>,
    resident_pages: u64,
    cache_pages: u64,
    dirty_pages: u64,
    wb_inflight: u32,
    wb_file: u32,
    throttled: VecDeque<u32>,
    syncers: Vec<u32>,
    counters: FsCounters,
    scratch: Vec<IoDone>,
    out: Vec<IoDone>,
    granted: Vec<u32>,
}

impl FileLayer {
    /// A layer for file system `kind` on a device of `capacity` bytes; its
    /// own IOs are issued as host thread `kthread`.
    pub fn new(kind: FileSystem, cfg: FsConfig, capacity: u64, kthread: u32) -> Self {
        // mkfs.xfs puts the internal log in the middle allocation group
        // (xfs_mkfs.c: logagno = agcount / 2); ext3's journal inode sits
        // in a middle block group too
        let log_base =
            (capacity / 2).min(capacity.saturating_sub(cfg.log_region_bytes)) / PAGE * PAGE;
        FileLayer {
            kind,
            be: Behaviour::of(kind),
            cache_pages: cfg.page_cache_bytes / PAGE,
            cfg,
            kthread,
            capacity,
            files: Vec::new(),
            next_base: 0,
            free: Vec::new(),
            dir_free_at: Vec::new(),
            log_base,
            log_head: 0,
            log_pending: 0,
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
            counters: FsCounters::default(),
            scratch: Vec::new(),
            out: Vec::new(),
            granted: Vec::new(),
        }
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
    /// says. Files are placed one after another from the start of the
    /// device (each followed by its ext3 mapping blocks), around the log
    /// in the middle of the device.
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
        let need = (size + meta_blocks * PAGE).div_ceil(unit) * unit;
        // first the space deleted files freed (the first range that fits:
        // XFS and ext3 allocate from free-space indexes; first fit is the
        // simplest rule that reuses space deterministically)
        let reuse = self.free.iter().position(|&(_, n)| n >= need);
        let (base, extent) = if let Some(k) = reuse {
            let (b, n) = self.free[k];
            if n == need {
                self.free.remove(k);
            } else {
                self.free[k] = (b + need, n - need);
            }
            (b, need)
        } else {
            // skip the log region if the file would overlap it
            let mut base = self.next_base;
            let end = |b: u64| b + size + meta_blocks * PAGE;
            if self.be.block_device && base < self.log_end() && end(base) > self.log_base {
                base = self.log_end();
            }
            if self.be.block_device && end(base) > self.capacity {
                return Err(FsError::NoSpace {
                    need: end(base),
                    capacity: self.capacity,
                });
            }
            self.next_base = end(base).div_ceil(unit) * unit;
            (base, self.next_base - base)
        };
        let words = blocks.div_ceil(64) as usize;
        let fill = if laid_out || unwritten { u64::MAX } else { 0 };
        self.files.push(File {
            live: true,
            base,
            extent,
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
            lock: RwLock::default(),
            alloc_free_at: 0,
            pages: Vec::new(),
            dirty: 0,
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

    fn log_end(&self) -> u64 {
        self.log_base + self.cfg.log_region_bytes
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
        let resident = f.pages.iter().filter(|&&p| p != P_ABSENT).count() as u64;
        // stale entries of the eviction queue are dropped when reached
        self.resident_pages -= resident;
        f.pages = Vec::new();
        f.alloc = Vec::new();
        f.unwritten = Vec::new();
        f.unwritten_left = 0;
        f.meta = Vec::new();
        let (base, n) = (f.base, f.extent);
        self.free_range(base, n);
    }

    /// Return `n` bytes at `base` to the free ranges, merged with their
    /// neighbours.
    fn free_range(&mut self, base: u64, n: u64) {
        if n == 0 {
            return;
        }
        let k = self.free.partition_point(|&(b, _)| b < base);
        self.free.insert(k, (base, n));
        if k + 1 < self.free.len() && self.free[k].0 + self.free[k].1 == self.free[k + 1].0 {
            self.free[k].1 += self.free[k + 1].1;
            self.free.remove(k + 1);
        }
        if k > 0 && self.free[k - 1].0 + self.free[k - 1].1 == self.free[k].0 {
            self.free[k - 1].1 += self.free[k].1;
            self.free.remove(k);
        }
    }

    /// Bytes of device space in the free ranges deleted files left.
    pub fn free_bytes(&self) -> u64 {
        self.free.iter().map(|r| r.1).sum()
    }

    /// Whether `file` exists (created and not deleted).
    pub fn is_live(&self, file: u32) -> bool {
        self.files.get(file as usize).is_some_and(|f| f.live)
    }

    /// Size of `file`, bytes.
    pub fn file_size(&self, file: u32) -> u64 {
        self.files[file as usize].size
    }

    /// A thread submits a file request at `now`.
    pub fn submit(&mut self, now: Nanos, req: FileReq, host: &mut Host, cx: &mut HostCx) {
        debug_assert!(
            self.files[req.file as usize].live,
            "request on a deleted file"
        );
        let p = Parent {
            req,
            stage: Stage::Lock,
            submitted: now,
            held: 0,
            lock_since: now,
            lock_wait: 0,
            slat: 0,
            pending: 0,
            fill: (0, 0),
            bd: Breakdown::default(),
            release_pending: false,
            finished: false,
            convert: false,
        };
        let i = crate::units::slab_insert(&mut self.parents, &mut self.free_parents, p);
        match req.op {
            FileOp::Fsync => self.start_fsync(now, i, host, cx),
            FileOp::Create | FileOp::Unlink => self.namespace(now, i, host, cx),
            FileOp::Read | FileOp::Write => {
                let excl = self.wants_exclusive(&req);
                let shared = req.op == FileOp::Read && self.be.reads_shared
                    || req.op == FileOp::Write && !excl;
                if excl || shared {
                    self.parents[i as usize].held = if excl { 2 } else { 1 };
                    let f = &mut self.files[req.file as usize];
                    if !f.lock.acquire(i, excl) {
                        self.counters.inode_lock_waits += 1;
                        self.absorb(now, host, cx);
                        return;
                    }
                }
                self.locked(now, i, host, cx);
            }
        }
        self.absorb(now, host, cx);
    }

    /// A create or unlink: the system call, then `namespace_ns` in its
    /// directory's section (FCFS per directory: the request's `offset`),
    /// its log bytes into the in-core log.
    fn namespace(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let c = host.config();
        let sys = c.syscall_entry_ns.write + c.syscall_exit_ns.write;
        let at = now + sys;
        let dir = (self.parents[i as usize].req.offset % 4096) as usize;
        if self.dir_free_at.len() <= dir {
            self.dir_free_at.resize(dir + 1, 0);
        }
        let start = self.dir_free_at[dir].max(at);
        let end = start + self.cfg.namespace_ns;
        self.dir_free_at[dir] = end;
        let p = &mut self.parents[i as usize];
        p.bd.add(Component::Syscall, sys);
        if start > at {
            p.bd.add(Component::LockWait, start - at);
            self.counters.namespace_wait_ns += start - at;
        }
        p.bd.add(Component::FileSystem, self.cfg.namespace_ns);
        p.stage = Stage::Namespace;
        if p.req.op == FileOp::Create {
            self.counters.creates += 1;
        } else {
            self.counters.unlinks += 1;
        }
        self.log_pending += self.cfg.log_bytes_per_namespace_op;
        cx.dev.wakeups.push((end, FS_TOKEN | i as u64));
    }

    /// Whether a read or write takes the inode lock exclusive.
    fn wants_exclusive(&self, req: &FileReq) -> bool {
        if req.op == FileOp::Read {
            // DIO_LOCKING: a direct read takes i_mutex for its lookups
            return self.dio_read_mutex(req);
        }
        if req.op != FileOp::Write {
            return false;
        }
        let buffered = !req.direct || !self.be.page_cache;
        if self.be.writes_exclusive || buffered && self.be.page_cache {
            return true;
        }
        // XFS direct IO: exclusive when extending or unaligned
        let f = &self.files[req.file as usize];
        req.offset + req.len > f.eof
            || !req.offset.is_multiple_of(PAGE)
            || !req.len.is_multiple_of(PAGE)
    }

    /// Whether `req` is a direct read that holds the inode mutex while it
    /// is submitted ([`Behaviour::dio_reads_mutex`]).
    fn dio_read_mutex(&self, req: &FileReq) -> bool {
        req.op == FileOp::Read
            && req.direct
            && self.be.dio_reads_mutex
            && self.be.page_cache
            && self.be.block_device
    }

    /// Whether `[offset, offset+len)` of `file` has a block not allocated.
    fn needs_alloc(&self, file: u32, offset: u64, len: u64) -> bool {
        let f = &self.files[file as usize];
        let (a, b) = (
            offset / PAGE,
            (offset + len).div_ceil(PAGE).min(f.size / PAGE),
        );
        (a..b).any(|blk| !bit(&f.alloc, blk))
    }

    /// Whether `[offset, offset+len)` of `file` covers at least one block
    /// and every block it covers is unwritten.
    fn all_unwritten(&self, file: u32, offset: u64, len: u64) -> bool {
        let f = &self.files[file as usize];
        if f.unwritten_left == 0 {
            return false;
        }
        let (a, b) = (
            offset / PAGE,
            (offset + len).div_ceil(PAGE).min(f.size / PAGE),
        );
        a < b && (a..b).all(|blk| bit(&f.unwritten, blk))
    }

    /// Mark the blocks of `[offset, offset+len)` of `file` written; true
    /// when any was unwritten (the write converts them). The bitmap goes
    /// once no block is left unwritten.
    fn take_unwritten(&mut self, file: u32, offset: u64, len: u64) -> bool {
        let f = &mut self.files[file as usize];
        if f.unwritten_left == 0 {
            return false;
        }
        let (a, b) = (
            offset / PAGE,
            (offset + len).div_ceil(PAGE).min(f.size / PAGE),
        );
        let mut n = 0;
        for blk in a..b {
            if bit(&f.unwritten, blk) {
                clear_bit(&mut f.unwritten, blk);
                n += 1;
            }
        }
        f.unwritten_left -= n;
        if f.unwritten_left == 0 {
            f.unwritten = Vec::new();
        }
        n > 0
    }

    fn mark_alloc(&mut self, file: u32, offset: u64, len: u64) {
        let f = &mut self.files[file as usize];
        let (a, b) = (
            offset / PAGE,
            (offset + len).div_ceil(PAGE).min(f.size / PAGE),
        );
        for blk in a..b {
            set_bit(&mut f.alloc, blk);
        }
        f.eof = f.eof.max((offset + len).min(f.size));
    }

    /// Parent `i` holds what lock it needs.
    fn locked(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        let waited = now - p.lock_since;
        if waited > 0 {
            p.lock_wait += waited;
            p.bd.add(Component::LockWait, waited);
            self.counters.inode_lock_wait_ns += waited;
        }
        let req = p.req;
        let direct = req.direct || !self.be.page_cache;
        if !self.be.block_device || !direct {
            self.buffered(now, i, host, cx);
            return;
        }
        // mapping metadata (ext3 indirect blocks) not yet read
        if let Some(m) = self.be.map_bytes_per_meta_block {
            let f = &self.files[req.file as usize];
            let (a, b) = (
                req.offset / m,
                (req.offset + req.len).div_ceil(m).min(f.size.div_ceil(m)),
            );
            // the mapping blocks sit right after the file's data (ext3
            // keeps them in the data's block group)
            let meta_at = f.base + f.size;
            let mut n = 0;
            for mb in a..b {
                if !bit(&self.files[req.file as usize].meta, mb) {
                    set_bit(&mut self.files[req.file as usize].meta, mb);
                    let off = meta_at + mb * PAGE;
                    self.counters.metadata_reads += 1;
                    self.child(
                        now,
                        i,
                        ChildKind::Fore,
                        Op::Read,
                        off,
                        PAGE,
                        false,
                        host,
                        cx,
                    );
                    n += 1;
                }
            }
            if n > 0 {
                let p = &mut self.parents[i as usize];
                p.stage = Stage::Meta;
                p.pending += n;
                return;
            }
        }
        self.after_meta(now, i, host, cx);
    }

    fn after_meta(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let req = self.parents[i as usize].req;
        if req.op == FileOp::Read && self.all_unwritten(req.file, req.offset, req.len) {
            // the mapping says unwritten: the user buffer is zeroed, the
            // device is not read
            self.counters.unwritten_reads += 1;
            self.copy(now, i, host, cx);
            return;
        }
        if req.op == FileOp::Write && self.needs_alloc(req.file, req.offset, req.len) {
            self.mark_alloc(req.file, req.offset, req.len);
            self.allocate(now, i, req.file, cx);
            return;
        }
        if req.op == FileOp::Write {
            self.mark_alloc(req.file, req.offset, req.len);
            if self.take_unwritten(req.file, req.offset, req.len) {
                self.parents[i as usize].convert = true;
            }
        }
        self.data(now, i, host, cx);
    }

    /// The allocation section under the inode lock: FCFS per inode.
    fn allocate(&mut self, now: Nanos, i: u32, file: u32, cx: &mut HostCx) {
        self.counters.allocations += 1;
        self.log_pending += self.cfg.log_bytes_per_alloc;
        self.section(now, i, file, self.cfg.alloc_ns, Stage::Alloc, cx);
    }

    /// A direct write's unwritten-extent conversion once its data is
    /// written (XFS `xfs_iomap_write_unwritten` from the direct-IO end_io,
    /// ext4 `ext4_convert_unwritten_extents`): a transaction in the
    /// inode's allocation section, FCFS beside allocations, and its log
    /// bytes; the write completes after it.
    fn convert(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        self.counters.conversions += 1;
        self.log_pending += self.cfg.log_bytes_per_convert();
        let file = self.parents[i as usize].req.file;
        self.section(now, i, file, self.cfg.convert_ns(), Stage::Convert, cx);
    }

    /// Parent `i` runs `ns` of CPU in `file`'s allocation section (the
    /// inode lock's transaction work, FCFS per inode) from `now` or when
    /// the section is free, then wakes in `stage`.
    fn section(&mut self, now: Nanos, i: u32, file: u32, ns: u64, stage: Stage, cx: &mut HostCx) {
        let f = &mut self.files[file as usize];
        let start = f.alloc_free_at.max(now);
        let end = start + ns;
        f.alloc_free_at = end;
        let p = &mut self.parents[i as usize];
        if start > now {
            self.counters.inode_lock_waits += 1;
            self.counters.inode_lock_wait_ns += start - now;
            p.lock_wait += start - now;
            p.bd.add(Component::LockWait, start - now);
        }
        p.bd.add(Component::FileSystem, ns);
        p.stage = stage;
        cx.dev.wakeups.push((end, FS_TOKEN | i as u64));
    }

    /// Issue parent `i`'s data request to the device.
    fn data(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        p.stage = Stage::Data;
        p.pending += 1;
        let req = p.req;
        let f = &self.files[req.file as usize];
        let op = if req.op == FileOp::Read {
            Op::Read
        } else {
            Op::Write
        };
        let off = f.base + req.offset;
        let fua = req.fua || op == Op::Write && self.be.persist_writes;
        self.child(now, i, ChildKind::Fore, op, off, req.len, fua, host, cx);
        if self.dio_read_mutex(&req) && host.config().completion != CompletionMode::Cpu {
            // the mutex goes once the bios are submitted: after the
            // submission's CPU (a RAM disk's, whose submission is the
            // copy, keeps it to the end)
            let at = now + submission_ns(host.config(), op, req.len);
            self.parents[i as usize].release_pending = true;
            cx.dev.wakeups.push((at, FS_TOKEN | RELEASE_BIT | i as u64));
        }
        // a full log buffer goes out beside the data
        self.flush_log_buffers(now, host, cx);
    }

    /// A fallen-back direct write: its range written back from the page
    /// cache in writeback-sized pieces, by the writer itself.
    fn fallback_writeback(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let req = self.parents[i as usize].req;
        let base = self.files[req.file as usize].base;
        let chunk = self.cfg.writeback_max_bytes;
        let n = req.len.div_ceil(chunk).max(1);
        let p = &mut self.parents[i as usize];
        p.stage = Stage::Data;
        p.pending += n as u32;
        self.counters.fallback_writes += 1;
        for k in 0..n {
            let off = req.offset + k * chunk;
            let len = chunk.min(req.offset + req.len - off);
            self.counters.writeback_writes += 1;
            self.counters.writeback_bytes += len;
            self.child(
                now,
                i,
                ChildKind::Fore,
                Op::Write,
                base + off,
                len,
                req.fua,
                host,
                cx,
            );
        }
        self.flush_log_buffers(now, host, cx);
    }

    fn flush_log_buffers(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        while self.be.block_device && self.log_pending >= self.cfg.log_buffer_bytes {
            self.log_pending -= self.cfg.log_buffer_bytes;
            let n = self.cfg.log_buffer_bytes;
            self.log_write(now, NONE, ChildKind::Log, n, host, cx);
        }
    }

    fn log_write(
        &mut self,
        now: Nanos,
        parent: u32,
        kind: ChildKind,
        bytes: u64,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        let bytes = bytes.div_ceil(512) * 512;
        let region = self.cfg.log_region_bytes;
        if self.log_head + bytes > region {
            self.log_head = 0;
        }
        let off = self.log_base + self.log_head;
        self.log_head += bytes;
        self.counters.journal_writes += 1;
        self.counters.journal_bytes += bytes;
        let fua = self.be.persist_writes;
        self.child(now, parent, kind, Op::Write, off, bytes, fua, host, cx);
    }

    #[allow(clippy::too_many_arguments)]
    fn child(
        &mut self,
        now: Nanos,
        parent: u32,
        kind: ChildKind,
        op: Op,
        offset: u64,
        len: u64,
        fua: bool,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        let c = crate::units::slab_insert(
            &mut self.children,
            &mut self.free_children,
            Child { parent, kind },
        );
        let (thread, poll) = if parent == NONE || kind != ChildKind::Fore {
            (self.kthread, false)
        } else {
            let r = self.parents[parent as usize].req;
            // the application thread issues its own data; metadata it
            // needs is read on its behalf, as the thread would sleep on it
            (r.thread, r.poll)
        };
        host.submit(
            now,
            HostIo {
                id: c as u64,
                thread,
                op,
                offset: offset.min(self.capacity.saturating_sub(len.max(1))),
                len,
                fua,
                poll,
            },
            cx,
        );
    }

    /// The host reported completions (in `cx.done`) or issued nothing:
    /// turn finished children into progress, and finished file requests
    /// into `cx.done`. Call after every host call the layer did not make.
    pub fn absorb(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        while !cx.done.is_empty() {
            let mut done = std::mem::take(&mut self.scratch);
            std::mem::swap(&mut done, &mut cx.done);
            for d in done.drain(..) {
                self.child_done(now, d, host, cx);
            }
            self.scratch = done;
        }
        cx.done.append(&mut self.out);
    }

    /// One of the layer's wake-ups (a token with [`FS_TOKEN`] set).
    pub fn on_event(&mut self, now: Nanos, token: u64, host: &mut Host, cx: &mut HostCx) {
        let i = (token & !FS_TOKEN & !RELEASE_BIT) as u32;
        if token & RELEASE_BIT != 0 {
            self.release_after_submit(now, i, host, cx);
            self.absorb(now, host, cx);
            return;
        }
        match self.parents[i as usize].stage {
            Stage::Alloc => {
                let p = self.parents[i as usize];
                if p.req.direct && self.be.dio_hole_fallback {
                    // copy into the page cache, then write the range back
                    let c = host.config();
                    let copy = (c.copy_ns_per_kib.write * p.req.len).div_ceil(1024);
                    let p = &mut self.parents[i as usize];
                    p.bd.add(Component::Copy, copy);
                    p.stage = Stage::FallbackCopy;
                    cx.dev.wakeups.push((now + copy, FS_TOKEN | i as u64));
                } else {
                    self.data(now, i, host, cx);
                }
            }
            Stage::FallbackCopy => self.fallback_writeback(now, i, host, cx),
            Stage::Convert => {
                self.finish(now, i, host, cx);
                // a full log buffer goes out
                self.flush_log_buffers(now, host, cx);
            }
            Stage::Copy => self.finish(now, i, host, cx),
            Stage::Namespace => {
                let req = self.parents[i as usize].req;
                if req.op == FileOp::Unlink {
                    self.delete_file(req.file);
                }
                self.finish(now, i, host, cx);
                // a full log buffer goes out
                self.flush_log_buffers(now, host, cx);
            }
            _ => debug_assert!(false, "no wake-up expected"),
        }
        self.absorb(now, host, cx);
    }

    fn child_done(&mut self, now: Nanos, d: IoDone, host: &mut Host, cx: &mut HostCx) {
        let c = self.children[d.id as usize];
        self.free_children.push(d.id as u32);
        match c.kind {
            ChildKind::Log => {}
            ChildKind::Writeback { file, first, n } => {
                self.wb_inflight -= 1;
                let f = &mut self.files[file as usize];
                f.wb_inflight -= 1;
                // a deleted file's pages are gone
                let last = if f.live { first + n } else { first };
                for pg in first..last {
                    if f.pages[pg as usize] == P_WRITEBACK {
                        f.pages[pg as usize] = P_CLEAN;
                    }
                }
                self.wake_throttled(now, host, cx);
                self.flusher(now, host, cx);
                self.check_syncers(now, host, cx);
            }
            ChildKind::Fore => {
                let i = c.parent;
                let p = &mut self.parents[i as usize];
                p.pending -= 1;
                match p.stage {
                    Stage::Meta => {
                        // metadata reads ran one beside another: count the
                        // time to the last of them as the file system's
                        if p.pending == 0 {
                            self.after_meta(now, i, host, cx);
                        }
                    }
                    Stage::Data => {
                        if p.pending > 0 {
                            // a fallen-back write waits for all its pieces;
                            // the last one's breakdown is merged
                            return;
                        }
                        p.slat = (d.at - p.submitted).saturating_sub(d.clat_ns);
                        p.bd.merge(&d.breakdown);
                        let req = p.req;
                        let convert = p.convert;
                        let buffered_fill =
                            req.op == FileOp::Read && self.be.page_cache && !req.direct;
                        if buffered_fill {
                            self.fill_done(now, i, host, cx);
                        } else if convert {
                            self.convert(now, i, cx);
                        } else {
                            self.finish(now, i, host, cx);
                        }
                    }
                    Stage::SyncLog => {
                        if p.pending == 0 {
                            self.sync_flush(now, i, host, cx);
                        }
                    }
                    Stage::SyncFlush => {
                        p.bd.merge(&d.breakdown);
                        self.finish(now, i, host, cx);
                    }
                    _ => debug_assert!(false, "unexpected child completion"),
                }
            }
        }
    }

    /// Release parent `i`'s inode lock; the waiters it grants go on.
    fn release_lock(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        if p.held == 0 {
            return;
        }
        let (file, excl) = (p.req.file, p.held == 2);
        p.held = 0;
        let mut granted = std::mem::take(&mut self.granted);
        self.files[file as usize].lock.release(excl, &mut granted);
        for g in granted.drain(..) {
            self.locked(now, g, host, cx);
        }
        self.granted = granted;
    }

    /// A direct read's submission is over: its mutex goes (and its slot,
    /// if it finished first).
    fn release_after_submit(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        debug_assert!(p.release_pending, "a release wake-up without a release");
        p.release_pending = false;
        let finished = p.finished;
        self.release_lock(now, i, host, cx);
        if finished {
            self.free_parents.push(i);
        }
    }

    /// Parent `i` is done at `now`: release its lock, report it.
    fn finish(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        self.release_lock(now, i, host, cx);
        let p = self.parents[i as usize];
        let total = now - p.submitted;
        let mut bd = p.bd;
        let rest = total.saturating_sub(bd.total());
        // time not in a child's breakdown: waits for writeback or the log
        bd.add(Component::Background, rest);
        debug_assert_eq!(bd.total(), total, "a file request's breakdown covers it");
        let slat = p.slat.min(total);
        self.out.push(IoDone {
            id: p.req.id,
            thread: p.req.thread,
            op: match p.req.op {
                FileOp::Read => Op::Read,
                FileOp::Write => Op::Write,
                FileOp::Fsync => Op::Flush,
                FileOp::Create => Op::Write,
                FileOp::Unlink => Op::Trim,
            },
            len: p.req.len,
            slat_ns: slat,
            clat_ns: total - slat,
            at: now,
            breakdown: bd,
        });
        if p.release_pending {
            // the release wake-up still names this slot
            self.parents[i as usize].finished = true;
        } else {
            self.free_parents.push(i);
        }
    }

    // ----- page cache -----

    fn ensure_pages(&mut self, file: u32) {
        let f = &mut self.files[file as usize];
        if f.pages.is_empty() {
            f.pages = vec![P_ABSENT; (f.size / PAGE) as usize];
        }
    }

    /// The CPU of a request served by the page cache: system call, the
    /// file system's per-request cost, the copy.
    fn cache_cpu(&self, host: &Host, op: Op, len: u64, bd: &mut Breakdown) -> u64 {
        let c = host.config();
        let sys = c.syscall_entry_ns.get(op) + c.syscall_exit_ns.get(op);
        let fs = c.xfs_ns.get(op);
        let copy = (c.copy_ns_per_kib.get(op) * len).div_ceil(1024);
        bd.add(Component::Syscall, sys);
        bd.add(Component::FileSystem, fs);
        bd.add(Component::Copy, copy);
        sys + fs + copy
    }

    fn buffered(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let req = self.parents[i as usize].req;
        self.ensure_pages(req.file);
        let (a, b) = self.page_range(&req);
        if req.op == FileOp::Write {
            if self.be.memory_store {
                self.insert_pages(req.file, a, b, P_CLEAN);
            } else {
                if self.dirty_pages + (b - a) > self.dirty_limit() && self.dirty_pages > 0 {
                    self.counters.dirty_throttled += 1;
                    self.parents[i as usize].stage = Stage::Throttle;
                    self.throttled.push_back(i);
                    self.flusher(now, host, cx);
                    return;
                }
                self.write_pages(req.file, a, b);
                self.flusher(now, host, cx);
            }
            self.copy(now, i, host, cx);
            return;
        }
        let f = &mut self.files[req.file as usize];
        let hit = self.be.memory_store || (a..b).all(|pg| f.pages[pg as usize] != P_ABSENT);
        // sequential: this read starts where the last one ended
        // (a first read at the file's start counts as sequential)
        let sequential = req.offset == f.ra_next || req.offset == 0 && f.ra_next == u64::MAX;
        f.ra_next = req.offset + req.len;
        if hit {
            self.counters.page_cache_hits += 1;
            self.copy(now, i, host, cx);
            return;
        }
        self.counters.page_cache_misses += 1;
        // read-ahead (mm/readahead.c, ondemand_readahead)
        let f = &mut self.files[req.file as usize];
        let max = self.cfg.readahead_max_bytes;
        let want = if sequential {
            f.ra_win = if f.ra_win == 0 {
                (4 * req.len).min(max)
            } else {
                (2 * f.ra_win).min(max)
            };
            f.ra_win.max(req.len)
        } else {
            f.ra_win = 0;
            req.len
        };
        let start = a * PAGE;
        let end = (req.offset + want).min(f.size).div_ceil(PAGE) * PAGE;
        let end = end.max(b * PAGE);
        let base = f.base;
        if self.all_unwritten(req.file, start, end - start) {
            // every page of the window maps to unwritten blocks: they are
            // zero-filled in the cache without device IO
            self.counters.unwritten_reads += 1;
            self.insert_pages(req.file, start / PAGE, end / PAGE, P_CLEAN);
            self.copy(now, i, host, cx);
            return;
        }
        self.counters.readahead_bytes += (end - start).saturating_sub(req.len);
        let p = &mut self.parents[i as usize];
        p.stage = Stage::Data;
        p.pending += 1;
        p.fill = (start / PAGE, end / PAGE);
        self.child(
            now,
            i,
            ChildKind::Fore,
            Op::Read,
            base + start,
            end - start,
            false,
            host,
            cx,
        );
    }

    /// The fill of parent `i`'s read came back: its pages are resident.
    /// The fill went through the host stack on the reader's own thread
    /// (entry, file system, copy out, return), so the read is done.
    fn fill_done(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = self.parents[i as usize];
        let (a, b) = p.fill;
        self.insert_pages(p.req.file, a, b, P_CLEAN);
        self.finish(now, i, host, cx);
    }

    fn copy(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = self.parents[i as usize];
        let op = if p.req.op == FileOp::Read {
            Op::Read
        } else {
            Op::Write
        };
        let mut bd = p.bd;
        let dur = self.cache_cpu(host, op, p.req.len, &mut bd);
        let p = &mut self.parents[i as usize];
        p.bd = bd;
        p.stage = Stage::Copy;
        cx.dev.wakeups.push((now + dur, FS_TOKEN | i as u64));
    }

    fn page_range(&self, req: &FileReq) -> (u64, u64) {
        let f = &self.files[req.file as usize];
        let a = req.offset / PAGE;
        let b = (req.offset + req.len.max(1))
            .div_ceil(PAGE)
            .min(f.size / PAGE)
            .max(a + 1);
        (a, b.min(f.size / PAGE))
    }

    fn dirty_limit(&self) -> u64 {
        self.cache_pages * self.cfg.dirty_ratio_pct as u64 / 100
    }

    fn background_limit(&self) -> u64 {
        self.cache_pages * self.cfg.dirty_background_ratio_pct as u64 / 100
    }

    fn write_pages(&mut self, file: u32, a: u64, b: u64) {
        self.insert_pages(file, a, b, P_DIRTY);
    }

    /// Pages `a..b` of `file` become resident in `state` (clean or dirty),
    /// evicting clean pages beyond the cache's size.
    fn insert_pages(&mut self, file: u32, a: u64, b: u64, state: u8) {
        if !self.files[file as usize].live {
            return;
        }
        for pg in a..b {
            let f = &mut self.files[file as usize];
            let old = f.pages[pg as usize];
            if old == P_ABSENT {
                self.resident.push_back((file, pg));
                self.resident_pages += 1;
            }
            if state == P_DIRTY && old != P_DIRTY {
                f.dirty += 1;
                self.dirty_pages += 1;
                f.pages[pg as usize] = P_DIRTY;
            } else if old == P_ABSENT {
                f.pages[pg as usize] = state;
            }
        }
        self.evict();
    }

    fn evict(&mut self) {
        let mut tries = self.resident.len();
        while self.resident_pages > self.cache_pages && tries > 0 {
            tries -= 1;
            let Some((file, pg)) = self.resident.pop_front() else {
                break;
            };
            let f = &mut self.files[file as usize];
            if !f.live {
                // a deleted file's page: already uncounted
                continue;
            }
            if f.pages[pg as usize] == P_CLEAN {
                f.pages[pg as usize] = P_ABSENT;
                self.resident_pages -= 1;
                self.counters.evictions += 1;
            } else {
                self.resident.push_back((file, pg));
            }
        }
    }

    /// The flusher: while dirty pages are above the background limit (or
    /// an fsync waits), write back runs of dirty pages.
    /// Write back dirty pages: first those of files an fsync waits for
    /// (`filemap_write_and_wait_range` on that inode only), then, above
    /// the background limit, any file's (the flusher's sweep over inodes).
    fn flusher(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        let mut s = 0;
        while s < self.syncers.len() && self.wb_inflight < self.cfg.writeback_depth {
            let file = self.parents[self.syncers[s] as usize].req.file;
            if self.files[file as usize].dirty > 0 {
                self.write_back(now, file as usize, host, cx);
            } else {
                s += 1;
            }
        }
        let mut scanned_files = 0;
        while self.wb_inflight < self.cfg.writeback_depth
            && self.dirty_pages > self.background_limit()
            && self.dirty_pages > 0
            && scanned_files <= self.files.len()
        {
            let fi = self.wb_file as usize % self.files.len();
            if self.files[fi].dirty == 0 {
                self.wb_file = (fi as u32 + 1) % self.files.len() as u32;
                scanned_files += 1;
                continue;
            }
            self.write_back(now, fi, host, cx);
        }
        self.flush_log_buffers(now, host, cx);
    }

    /// One writeback IO of file `fi`: the next run of dirty pages from its
    /// cursor (wrapping), at most `writeback_max_bytes`.
    fn write_back(&mut self, now: Nanos, fi: usize, host: &mut Host, cx: &mut HostCx) {
        let max_pages = self.cfg.writeback_max_bytes / PAGE;
        {
            let f = &mut self.files[fi];
            let npages = f.pages.len() as u64;
            // find the next dirty page from the cursor (wrapping)
            let mut pg = f.wb_cursor % npages;
            let mut seen = 0;
            while f.pages[pg as usize] != P_DIRTY && seen < npages {
                pg = (pg + 1) % npages;
                seen += 1;
            }
            let first = pg;
            let mut n = 0;
            while pg < npages && n < max_pages && f.pages[pg as usize] == P_DIRTY {
                f.pages[pg as usize] = P_WRITEBACK;
                pg += 1;
                n += 1;
            }
            f.wb_cursor = pg;
            f.dirty -= n;
            self.dirty_pages -= n;
            let base = f.base;
            let needs = (first..first + n).any(|b| !bit(&f.alloc, b));
            if needs {
                // delayed allocation happens at writeback
                self.mark_alloc(fi as u32, first * PAGE, n * PAGE);
                self.counters.allocations += 1;
                self.log_pending += self.cfg.log_bytes_per_alloc;
            } else if self.take_unwritten(fi as u32, first * PAGE, n * PAGE) {
                // the ioend converts the unwritten blocks it wrote
                // (xfs_end_io, ext4's end_io work)
                self.counters.conversions += 1;
                self.log_pending += self.cfg.log_bytes_per_convert();
            }
            self.wb_inflight += 1;
            self.files[fi].wb_inflight += 1;
            self.counters.writeback_writes += 1;
            self.counters.writeback_bytes += n * PAGE;
            let kind = ChildKind::Writeback {
                file: fi as u32,
                first,
                n,
            };
            self.child(
                now,
                NONE,
                kind,
                Op::Write,
                base + first * PAGE,
                n * PAGE,
                false,
                host,
                cx,
            );
        }
    }

    fn wake_throttled(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        while let Some(&i) = self.throttled.front() {
            let req = self.parents[i as usize].req;
            let (a, b) = self.page_range(&req);
            if self.dirty_pages + (b - a) > self.dirty_limit() && self.dirty_pages > 0 {
                break;
            }
            self.throttled.pop_front();
            self.write_pages(req.file, a, b);
            self.copy(now, i, host, cx);
        }
    }

    // ----- fsync -----

    fn start_fsync(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncWb;
        self.syncers.push(i);
        self.flusher(now, host, cx);
        self.check_syncers(now, host, cx);
    }

    /// Syncers whose file has nothing dirty and no writeback in flight go
    /// on to the log force and the cache flush.
    fn check_syncers(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        if self.syncers.is_empty() {
            return;
        }
        let mut ready = Vec::new();
        let files = &self.files;
        let parents = &self.parents;
        self.syncers.retain(|&i| {
            let f = &files[parents[i as usize].req.file as usize];
            let clean = f.dirty == 0 && f.wb_inflight == 0;
            if clean {
                ready.push(i);
            }
            !clean
        });
        for &i in &ready {
            if self.be.block_device && self.log_pending > 0 {
                let n = self.log_pending;
                self.log_pending = 0;
                let p = &mut self.parents[i as usize];
                p.stage = Stage::SyncLog;
                p.pending += 1;
                self.log_write(now, i, ChildKind::Fore, n, host, cx);
            } else {
                self.sync_flush(now, i, host, cx);
            }
        }
    }

    fn sync_flush(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        // tmpfs has nothing to flush; PMFS made every write persistent
        if !self.be.block_device || self.be.persist_writes {
            self.finish(now, i, host, cx);
            return;
        }
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncFlush;
        p.pending += 1;
        p.bd = Breakdown::default();
        // the flush's own breakdown is merged at completion; the time
        // before it is writeback and log
        let waited = now - p.submitted;
        p.bd.add(Component::Background, waited);
        self.child(now, i, ChildKind::Fore, Op::Flush, 0, 0, false, host, cx);
    }
}
