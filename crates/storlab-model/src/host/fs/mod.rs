//! File systems as mechanisms between a workload and the host stack: files
//! laid out on the device (in extents around the log, at the start of the
//! middle allocation group: `space.rs` and its sources), the per-inode lock, block allocation and its
//! journal (log) writes, indirect-block metadata reads, and a page cache
//! (buffered reads with read-ahead, dirty pages written back by a flusher
//! under a dirty limit; `direct` requests bypass it).
//!
//! The layer sits in front of a [`Host`](crate::host::stack::Host): a file
//! request becomes zero or more host requests (its data, metadata reads,
//! log writes, writeback), and a finished file request is an
//! [`IoDone`](crate::host::io::IoDone) in the same
//! [`HostCx`](crate::host::io::HostCx) the host reports into, so a driver
//! treats the pair like a host. It is the file-level interface application
//! models call too: per-thread reads, writes and fsyncs at file offsets
//! ([`FileReq`](request::FileReq)), files created and deleted with
//! [`FileLayer::create_file`](layer::FileLayer::create_file) and
//! [`FileLayer::delete_file`](layer::FileLayer::delete_file).
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
//!   above `dirty_ratio` the writer waits (`balance_dirty_pages`). Every
//!   `dirty_writeback_ms` (5 s) the flusher also writes back whole every
//!   file dirty for `dirty_expire_ms` (30 s) or more, however little is
//!   dirty (fs/fs-writeback.c `wb_check_old_data_flush`). Its wake-ups
//!   stop once every thread and application of the run has finished
//!   ([`state::is_flusher_timer`]): what a run leaves dirty is written
//!   after it, outside its figures.
//! - Cold trees (`cold.rs`): files that were on the device before the run
//!   start with their names and inodes uncached as well as their pages;
//!   a file's first request reads its directory's block and then its
//!   inode's block (XFS's 8 KiB inode cluster, ext3/ext4's inode-table
//!   block), each once.
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

pub mod behaviour;
mod cache;
mod cold;
mod completion;
pub mod config;
pub mod fsync;
pub mod layer;
mod path;
pub mod request;
mod space;
pub mod state;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use behaviour::*;
pub use config::*;
pub use layer::*;
pub use request::*;
pub use state::*;
