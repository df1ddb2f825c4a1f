//! The `[fs]` table: file-system and page-cache parameters, their
//! defaults and sources, and their validation.

use serde::{Deserialize, Serialize};

use crate::config::{check_range, ConfigError};
use crate::units::Rw;

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
    /// In-core log buffers (XFS `logbufs`): when every one is full and
    /// under IO, a committing transaction waits for one to complete
    /// (XFS before delayed logging; [`Behaviour::iclogs`]).
    ///
    /// [`Behaviour::iclogs`]: super::Behaviour::iclogs
    pub log_buffers: u32,
    /// Each background log-buffer write is a barrier (XFS's `barrier`
    /// mount option): a device flush before it and the write itself with
    /// force unit access ([`Behaviour::iclogs`] file systems).
    ///
    /// [`Behaviour::iclogs`]: super::Behaviour::iclogs
    pub log_barrier: bool,
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
    /// Age of dirty data, ms, past which the flusher writes a file's
    /// dirty pages back whatever their amount (`vm.dirty_expire_centisecs`
    /// x 10). 0: no expiry (only the background threshold and syncs
    /// write back).
    pub dirty_expire_ms: u64,
    /// The flusher's period, ms: it looks for expired files this often
    /// (`vm.dirty_writeback_centisecs` x 10).
    pub dirty_writeback_ms: u64,
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
    /// CPU of copying one KiB between a file's pages in memory and the
    /// user's buffer when the pages' lines miss the CPU caches, ns: a
    /// core keeps only so many line misses in flight (its fill buffers),
    /// so a copy moves `fill buffers x 64 B` per memory latency (Little's
    /// law) and holds the thread that long. `read`: a copy out of the
    /// pages (tmpfs's and the page cache's on a hit, PMFS's reads from
    /// NVMM that miss the CPU caches); `write`: a copy into tmpfs's and
    /// the page cache's pages, whose lines are read for ownership first
    /// (PMFS writes with non-temporal stores, which read nothing: its
    /// writes pay the device's bandwidth instead). Added to the host's
    /// `copy_ns_per_kib` (a DMA buffer's copy). 0: copies of memory-held
    /// pages cost nothing per byte (the default: no preset of a block
    /// device sets it).
    pub memory_copy_ns_per_kib: Rw,
    /// Bytes of the device the file system is made on, from its start
    /// (mkfs on a partition, or on an export of that size as `storlab
    /// app check` gives its real programs): files, the log and the
    /// allocation groups lie within them. 0 (the default): the whole
    /// device.
    #[serde(skip_serializing_if = "is_zero")]
    pub size_bytes: u64,
    /// XFS logs with delayed logging (Linux 2.6.39 and later, the
    /// default since; Documentation/filesystems/xfs-delayed-logging-
    /// design.txt): committed transactions gather in memory (the
    /// committed item list, one copy of each changed object), and the
    /// log is written only when an fsync forces it or the list passes an
    /// eighth of the log (`XLOG_CIL_SPACE_LIMIT`), not as each in-core
    /// log buffer fills, and nothing is relogged whole. `false` (the
    /// default): the studies' 2.6 XFS, before delayed logging.
    #[serde(skip_serializing_if = "is_false")]
    pub delayed_logging: bool,
}

fn is_false(v: &bool) -> bool {
    !*v
}

fn is_zero(v: &u64) -> bool {
    *v == 0
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
            // Documentation/filesystems/xfs.txt (2.6.2x-3.x): logbufs
            // defaults to 8 (xfs-delayed-logging-design: "By default there
            // are 8 log buffers available and the size of each is 32kB").
            log_buffers: 8,
            // Documentation/filesystems/xfs.txt (2.6.2x): "barrier" is the
            // default; xlog_sync (fs/xfs/xfs_log.c, 2.6.2x) marks every
            // log buffer write XFS_BUF_ORDERED when the mount has
            // barriers, which the block layer of those kernels
            // (block/blk-barrier.c) runs as a cache flush before the write
            // and the write with FUA (or a flush after it).
            log_barrier: true,
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
            // Documentation/sysctl/vm.txt (2.6.x to 6.x defaults):
            // dirty_expire_centisecs 3000 ("data which has been dirty
            // in-memory for longer than this interval will be written out
            // next time a flusher thread wakes up") and
            // dirty_writeback_centisecs 500 (the flusher's period)
            dirty_expire_ms: 30_000,
            dirty_writeback_ms: 5_000,
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
            // not modelled unless a preset sets it (the memory presets
            // derive it from their latency)
            memory_copy_ns_per_kib: Rw { read: 0, write: 0 },
            size_bytes: 0,
            delayed_logging: false,
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
    check_range("fs.log_buffers", c.log_buffers as u64, 2, 1024)?;
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
    check_range("fs.dirty_expire_ms", c.dirty_expire_ms, 0, 86_400_000)?;
    check_range("fs.dirty_writeback_ms", c.dirty_writeback_ms, 1, 86_400_000)?;
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
    check_range(
        "fs.memory_copy_ns_per_kib.read",
        c.memory_copy_ns_per_kib.read,
        0,
        1_000_000,
    )?;
    check_range(
        "fs.memory_copy_ns_per_kib.write",
        c.memory_copy_ns_per_kib.write,
        0,
        1_000_000,
    )?;
    Ok(())
}
