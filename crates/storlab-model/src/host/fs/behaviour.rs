//! How each file system behaves (locks, allocation, journal, unwritten
//! extents) and how a new file is laid out.

use crate::host::config::FileSystem;

use super::config::PAGE;

/// XFS's inode cluster, bytes: `XFS_INODE_BIG_CLUSTER_SIZE` (fs/xfs/xfs_ialloc.h,
/// 8192), which `xfs_iread` reads whole for an uncached inode.
pub const XFS_INODE_CLUSTER_BYTES: u64 = 8192;

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
    /// [`CompletionMode::Cpu`]: crate::host::config::CompletionMode::Cpu
    pub dio_reads_mutex: bool,
    /// What fallocate(2) leaves: `None` when the file system has no
    /// fallocate(2) (ext3: `EOPNOTSUPP`), else whether the blocks are
    /// unwritten extents (XFS, ext4) or allocated and reading as zeros
    /// with no unwritten state (tmpfs: `shmem_fallocate` adds pages;
    /// PMFS: `pmfs_fallocate` allocates zeroed blocks).
    pub fallocate: Option<Prealloc>,
    /// Reads are loads through the CPU caches, with no page cache in
    /// between (PMFS: `pmfs_xip_file_read` copies with `__copy_to_user`
    /// from the kernel's direct mapping of the NVMM, fs/pmfs/xip.c), and
    /// writes are non-temporal stores that bypass them
    /// (`__copy_from_user_inatomic_nocache` in `pmfs_xip_file_write`, so
    /// a written line leaves the caches): a read whose every page was
    /// read since it was last written, and is still within this many
    /// bytes of recently read data, is served from the last-level cache
    /// without an NVMM access (PMEP throttles and delays only the DDR
    /// transactions that reach the NVMM channels, docs/spec/nvmm.md
    /// "PMEP's knobs"). `None`: not a direct-access file system.
    pub cpu_cache_bytes: Option<u64>,
    /// CPU of one block allocation under the inode lock when the file
    /// system's differs in kind from `fs.alloc_ns` (XFS's calibrated
    /// transaction), ns; `None`: `fs.alloc_ns`.
    pub alloc_ns: Option<u64>,
    /// Transactions are copied into a fixed set of in-core log buffers
    /// (`fs.log_buffers` of `fs.log_buffer_bytes`), written when full as
    /// barriers (`fs.log_barrier`), and a transaction that finds every
    /// buffer under IO waits for one: XFS before delayed logging (the
    /// default from 2.6.39), the kernels of the studies.
    /// Documentation/filesystems/xfs-delayed-logging-design.txt: "if all
    /// the log buffers are full and under IO, then no more transactions
    /// can be committed until the current batch completes ... the XFS
    /// journalling subsystem can be considered to be IO bound"
    /// (`xlog_state_get_iclog_space` sleeps on the log's flush wait
    /// queue, fs/xfs/xfs_log.c). ext3/ext4's JBD commits a running
    /// transaction as a whole and is not modelled this way.
    pub iclogs: bool,
    /// CPU of a create or unlink under its directory's lock when the file
    /// system's differs in kind from `fs.namespace_ns` (XFS's logged
    /// transaction), ns; `None`: `fs.namespace_ns`.
    pub namespace_ns: Option<u64>,
    /// CPU per entry already in the directory that a create or unlink
    /// scans under the directory's lock, ns (PMFS's linear directory
    /// search; 0: an indexed or in-memory directory). An unlink scans
    /// half the entries on average, a create all of them (first fit).
    pub dir_scan_ns_per_entry: u64,
    /// CPU per page a write adds to a file in memory (tmpfs: the page's
    /// allocation and insertion), ns; 0: not modelled this way.
    pub page_alloc_ns: u64,
    /// CPU per page an unlink frees (tmpfs: the truncation of the
    /// deleted file's pages), after the directory's lock, ns.
    pub page_free_ns: u64,
    /// The unit an inode is read from the device in when it is not
    /// cached, bytes, holding `inode_block_bytes / INODE_BYTES` inodes:
    /// XFS reads a whole inode cluster (`xfs_imap_to_bp` in
    /// `xfs_iread`, fs/xfs/xfs_inode.c; `XFS_INODE_BIG_CLUSTER_SIZE`,
    /// 8 KiB, fs/xfs/xfs_ialloc.h), ext3/ext4 the inode table's block
    /// (`__ext3_get_inode_loc`/`__ext4_get_inode_loc` read one
    /// `sb_bread` block). `None`: inodes live in memory (tmpfs) or are
    /// loads from the NVMM (PMFS). Only files laid out before the run
    /// as a cold tree ([`FileLayer::create_tree_file`]) start uncached.
    ///
    /// [`FileLayer::create_tree_file`]: super::FileLayer::create_tree_file
    pub inode_block_bytes: Option<u64>,
}

/// Bytes of an on-disk inode: the 256-byte inodes of the studies' era
/// (mkfs.xfs's default `isize` before xfsprogs 3.2's v5 format made it
/// 512; mke2fs's `inode_size` default for ext3/ext4 since e2fsprogs
/// 1.40.5).
pub const INODE_BYTES: u64 = 256;

/// Bytes of a directory block: the file system's 4 KiB block (XFS's
/// default directory block size, `-n size`, is the block size; ext3/ext4
/// directories are made of blocks).
pub const DIR_BLOCK_BYTES: u64 = 4096;

/// ESTIMATE: PMFS's allocation for a write (fs/pmfs/xip.c
/// `pmfs_xip_file_write` -> `pmfs_alloc_blocks`, fs/pmfs/balloc.c
/// `pmfs_new_blocks`): a block range taken from the in-DRAM free list
/// under the super block's lock, the inode's B-tree updated in place, and
/// the inode's lines undo-logged in a PMFS transaction (fs/pmfs/journal.c
/// `pmfs_new_transaction`, `pmfs_add_logentry`, `pmfs_commit_transaction`:
/// a few 64-byte log entries, each flushed, and two fences). The PMFS
/// paper (Dulloor et al., EuroSys 2014, section 3.3) describes this
/// fine-grained cache-line logging as replacing block-based journaling;
/// a few hundred instructions and a few line flushes and fences (each
/// well under 100 ns on PMEP's Xeons, docs/spec/nvmm.md presets):
/// about 2 µs, against the 19.5 µs of XFS's logged transactions.
pub const PMFS_ALLOC_NS: u64 = 2_000;

/// ESTIMATE: PMFS's create or unlink under the directory's `i_mutex`
/// (fs/pmfs/namei.c `pmfs_create` -> `pmfs_new_inode`, `pmfs_add_entry`;
/// `pmfs_unlink` -> `pmfs_remove_entry`): the same kind of light PMFS
/// transaction as an allocation ([`PMFS_ALLOC_NS`]: the inode's and the
/// directory entry's lines undo-logged, flushed and fenced), plus the
/// linear directory scan ([`PMFS_DIR_SCAN_NS_PER_ENTRY`]). No journal
/// block, no on-disk B-tree: XFS's 20 µs transaction (`fs.namespace_ns`)
/// does not apply.
pub const PMFS_NAMESPACE_NS: u64 = PMFS_ALLOC_NS;

/// ESTIMATE: PMFS searches a directory linearly (fs/pmfs/dir.c and
/// namei.c: `pmfs_search_dirblock` walks every entry of every block,
/// `de = de + de_len`, comparing `name_len`, `ino` and the name; its
/// comment: "this code is executed quadratically often"; `pmfs_add_entry`
/// walks the blocks for the first entry with room, `pmfs_remove_entry`
/// for the name). An entry is a dependent load of its length and a
/// compare, a few nanoseconds on PMEP's 2.6 GHz Xeons with the block in
/// the CPU caches: 3 ns.
pub const PMFS_DIR_SCAN_NS_PER_ENTRY: u64 = 3;

/// ESTIMATE: tmpfs's create or unlink under the directory's `i_mutex`
/// (mm/shmem.c `shmem_mknod` -> `shmem_get_inode`: a new in-memory
/// inode, `shmem_reserve_inode` under the super block's `stat_lock`,
/// `d_instantiate`; `shmem_unlink`: `shmem_free_inode`, `drop_nlink`,
/// `dput`): no log, no block, no on-disk directory; the VFS's dentry
/// work dominates. About a tenth of XFS's logged 20 µs transaction
/// (`fs.namespace_ns`): 2 µs.
pub const TMPFS_NAMESPACE_NS: u64 = 2_000;

/// ESTIMATE: tmpfs allocates a page for each page a write adds
/// (mm/shmem.c, 3.x: `shmem_write_begin` -> `shmem_getpage_gfp` with
/// `SGP_WRITE`: `shmem_acct_block`, `shmem_alloc_page` from the buddy
/// allocator's per-CPU lists, `mem_cgroup_cache_charge`,
/// `shmem_add_to_page_cache` (a radix-tree insert under the mapping's
/// `tree_lock`), `lru_cache_add_anon`, the inode's `alloced` count under
/// `info->lock`; `shmem_write_end` zeroes what the write leaves of a new
/// page). A few hundred instructions and several locked operations
/// whose lines move between cores: 500 ns a page. PMFS's allocation is
/// `PMFS_ALLOC_NS` per write (a block range at once).
pub const TMPFS_PAGE_ALLOC_NS: u64 = 500;

/// ESTIMATE: tmpfs frees a deleted file's pages when its last reference
/// goes, in the unlinking thread after the directory's lock
/// (fs/namei.c `do_unlinkat`: `iput` after `mutex_unlock`; mm/shmem.c
/// `shmem_evict_inode` -> `shmem_truncate_range` ->
/// `truncate_inode_pages_range`: each page looked up, locked, removed
/// from the radix tree, uncharged, and released to the LRU's and the
/// buddy allocator's lists, `release_pages` under `zone->lru_lock`):
/// half an allocation's work, 250 ns a page.
pub const TMPFS_PAGE_FREE_NS: u64 = 250;

/// PMEP's last-level caches (docs/spec/nvmm.md, PMEP's machine: "two
/// 8-core 2.6 GHz Xeons with 40 MB of cache"): a line one socket read is
/// served to the other by a snoop, not from the NVMM, so the two
/// sockets' caches count as one. Lines are tracked by 4 KiB page.
pub const PMEP_CACHE_BYTES: u64 = 40 << 20;

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
            cpu_cache_bytes: None,
            alloc_ns: None,
            iclogs: true,
            namespace_ns: None,
            dir_scan_ns_per_entry: 0,
            page_alloc_ns: 0,
            page_free_ns: 0,
            inode_block_bytes: Some(XFS_INODE_CLUSTER_BYTES),
        };
        match fs {
            FileSystem::None | FileSystem::Xfs => base,
            FileSystem::Ext3 => Behaviour {
                iclogs: false,
                writes_exclusive: true,
                dio_hole_fallback: true,
                dio_reads_mutex: true,
                reads_shared: false,
                map_bytes_per_meta_block: Some(1024 * PAGE),
                // fs/ext3 has no fallocate file operation
                fallocate: None,
                inode_block_bytes: Some(PAGE),
                ..base
            },
            FileSystem::Ext4 => Behaviour {
                iclogs: false,
                writes_exclusive: true,
                reads_shared: false,
                // ext4_ind_direct_IO: blockdev_direct_IO, DIO_LOCKING
                dio_reads_mutex: true,
                inode_block_bytes: Some(PAGE),
                ..base
            },
            FileSystem::Tmpfs => Behaviour {
                iclogs: false,
                block_device: false,
                writes_exclusive: true,
                reads_shared: false,
                memory_store: true,
                fallocate: Some(Prealloc::Allocated),
                namespace_ns: Some(TMPFS_NAMESPACE_NS),
                page_alloc_ns: TMPFS_PAGE_ALLOC_NS,
                page_free_ns: TMPFS_PAGE_FREE_NS,
                inode_block_bytes: None,
                ..base
            },
            FileSystem::Pmfs => Behaviour {
                iclogs: false,
                writes_exclusive: true,
                reads_shared: false,
                page_cache: false,
                persist_writes: true,
                fallocate: Some(Prealloc::Allocated),
                cpu_cache_bytes: Some(PMEP_CACHE_BYTES),
                alloc_ns: Some(PMFS_ALLOC_NS),
                namespace_ns: Some(PMFS_NAMESPACE_NS),
                dir_scan_ns_per_entry: PMFS_DIR_SCAN_NS_PER_ENTRY,
                inode_block_bytes: None,
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
