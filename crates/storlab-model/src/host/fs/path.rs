//! A file request's path: the directory or inode lock, metadata reads,
//! block allocation and unwritten-extent conversion in the inode's
//! section, the data (direct, or through the page cache), log writes, and
//! the host requests (children) it issues.

use crate::breakdown::{Breakdown, Component};
use crate::device::{Nanos, Op};
use crate::host::config::{CompletionMode, FileSystem, HostConfig, Scheduler};
use crate::host::io::{HostCx, HostIo};
use crate::host::stack::Host;

use super::config::PAGE;
use super::layer::FileLayer;
use super::request::{FileOp, FileReq};
use super::state::{
    bit, clear_bit, set_bit, Child, ChildKind, Parent, Stage, FS_TOKEN, NONE, RELEASE_BIT,
};

/// The CPU of submitting a request of `len` bytes, `op`, on host `c`
/// before the device has it, not counting waits: the system call's entry,
/// the file system's per-request CPU, the block layer, the driver's
/// work, tag and PIO and the copy into a DMA buffer (writes). The
/// stages of the host stack's issue path (`host/cost.rs`), summed.
fn submission_ns(c: &HostConfig, op: Op, len: u64) -> u64 {
    let handoff = if c.scheduler == Scheduler::SingleQueue {
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

/// Entries an XFS directory holds in its inode (short form) before it
/// takes a block. ESTIMATE: a 256-byte inode (mkfs.xfs's default in the
/// 2.6.2x era) leaves 156 bytes after its 100-byte core; the short-form
/// header takes 6 and an entry 3 + 4 (inode number) + its name, so
/// names of about 12 characters (Postmark's, a source tree's) give 8.
const DIR_SHORTFORM_ENTRIES: u64 = 8;

/// Entries an XFS block-form directory holds in its one 4 KiB block
/// before it becomes a leaf directory. ESTIMATE: the block's 16-byte
/// header and 8-byte tail, two 16-byte entries for "." and "..", and per
/// entry a data entry (8-byte inode number, 1-byte length, the name,
/// 2-byte tag, padded to 8: 24 bytes for a 12-character name) and an
/// 8-byte hash leaf entry: (4096 - 56) / 32, about 126.
const DIR_BLOCK_ENTRIES: u64 = 126;

impl FileLayer {
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
            after_ns: 0,
        };
        let i = crate::units::slab_insert(&mut self.parents, &mut self.free_parents, p);
        if !matches!(req.op, FileOp::Create) && self.cold_wait(now, i, host, cx) {
            // a cold tree's file: its directory and inode are read first
            self.absorb(now, host, cx);
            return;
        }
        self.dispatch(now, i, host, cx);
        self.absorb(now, host, cx);
    }

    /// Parent `i` starts its own work (its lock, its namespace section,
    /// its sync), its file's inode in memory.
    pub(super) fn dispatch(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let req = self.parents[i as usize].req;
        self.parents[i as usize].stage = Stage::Lock;
        match req.op {
            FileOp::Fsync | FileOp::Fdatasync => self.start_fsync(now, i, host, cx),
            FileOp::Create | FileOp::Unlink => {
                self.pin_core(req.file);
                self.namespace(now, i, host, cx)
            }
            FileOp::Read | FileOp::Write => {
                if req.op == FileOp::Write {
                    self.pin_timestamps(now, req.file);
                }
                let excl = self.wants_exclusive(&req);
                let shared = req.op == FileOp::Read && self.be.reads_shared
                    || req.op == FileOp::Write && !excl;
                if excl || shared {
                    self.parents[i as usize].held = if excl { 2 } else { 1 };
                    let f = &mut self.files[req.file as usize];
                    if !f.lock.acquire(i, excl) {
                        self.counters.inode_lock_waits += 1;
                        return;
                    }
                }
                self.locked(now, i, host, cx);
            }
        }
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
        let ns = self.namespace_cpu(i, dir);
        let end = start + ns;
        self.dir_free_at[dir] = end;
        let p = &mut self.parents[i as usize];
        p.bd.add(Component::Syscall, sys);
        if start > at {
            p.bd.add(Component::LockWait, start - at);
            self.counters.namespace_wait_ns += start - at;
        }
        p.bd.add(Component::FileSystem, ns);
        p.stage = Stage::Namespace;
        if p.req.op == FileOp::Create {
            self.counters.creates += 1;
        } else {
            self.counters.unlinks += 1;
        }
        // its log bytes go into the in-core log when it commits, at the
        // section's end (`commit_namespace`)
        cx.dev.wakeups.push((end, FS_TOKEN | i as u64));
    }

    /// The CPU of parent `i`'s create or unlink in directory `dir` under
    /// its lock: the file system's own cost ([`Behaviour::namespace_ns`],
    /// else `fs.namespace_ns`) plus its scan of the directory's entries
    /// ([`Behaviour::dir_scan_ns_per_entry`]: a create walks them all for
    /// room, an unlink half on average for the name).
    ///
    /// [`Behaviour::namespace_ns`]: super::Behaviour::namespace_ns
    /// [`Behaviour::dir_scan_ns_per_entry`]: super::Behaviour::dir_scan_ns_per_entry
    fn namespace_cpu(&self, i: u32, dir: usize) -> u64 {
        let base = self.be.namespace_ns.unwrap_or(self.cfg.namespace_ns);
        let entries = self.dir_entries.get(dir).copied().unwrap_or(0);
        let scanned = if self.parents[i as usize].req.op == FileOp::Create {
            entries
        } else {
            entries / 2
        };
        base + scanned * self.be.dir_scan_ns_per_entry
    }

    /// A create's or unlink's transaction commits at the end of its
    /// section: its log bytes are copied into the in-core log and it
    /// finishes, or, when every log buffer is full and under IO
    /// ([`Behaviour::iclogs`](super::Behaviour::iclogs)), it waits for one.
    pub(super) fn commit_namespace(
        &mut self,
        now: Nanos,
        i: u32,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        // the entry goes in (or out) in the transaction
        let req = self.parents[i as usize].req;
        let dir = (req.offset % 4096) as usize;
        if self.dir_entries.len() <= dir {
            self.dir_entries.resize(dir + 1, 0);
        }
        if req.op == FileOp::Create {
            self.dir_entries[dir] += 1;
        } else {
            self.dir_entries[dir] = self.dir_entries[dir].saturating_sub(1);
        }
        let bytes = self.cfg.log_bytes_per_namespace_op + self.relogged_dir_bytes(dir);
        if self.log_buffers_busy() {
            self.counters.log_buffer_waits += 1;
            let p = &mut self.parents[i as usize];
            p.stage = Stage::LogWait;
            p.lock_since = now;
            self.log_waiters.push_back((i, bytes));
            return;
        }
        self.log_pending += bytes;
        if self.sync_commit(now, i, host, cx) {
            return;
        }
        let after = self.parents[i as usize].after_ns;
        if after > 0 {
            // the lock is released; the thread goes on with the work
            // left (an unlink's freeing of the file's pages)
            self.wait(now, i, Component::FileSystem, after, Stage::Copy, cx);
        } else {
            self.finish(now, i, host, cx);
        }
        // a full log buffer goes out
        self.flush_log_buffers(now, host, cx);
    }

    /// A create or unlink that commits synchronously (`req.fua`: a
    /// `dirsync` or `sync` mount) forces the log once its transaction is
    /// in it, as `fsync` does (a pre-flush, the log's write, a
    /// post-flush; `fsync.rs`), and returns when the force is done: XFS
    /// marks such transactions `xfs_trans_set_sync` (`xfs_create`,
    /// `xfs_remove`: `if (xfs_has_wsync(mp) || xfs_has_dirsync(mp))`, and
    /// a `sync` mount sets `wsync`, fs/xfs/xfs_super.c), whose commit
    /// waits for `xfs_log_force_seq(..., XFS_LOG_SYNC)`; ext4 commits the
    /// journal (`ext4_handle_sync` under `IS_DIRSYNC`). Returns false,
    /// having done nothing, for an asynchronous commit or a file system
    /// without a log on a block device.
    fn sync_commit(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) -> bool {
        if !self.parents[i as usize].req.fua || !self.be.block_device || self.be.persist_writes {
            return false;
        }
        self.force_log(now, i, host, cx);
        true
    }

    /// The directory blocks a create or unlink in directory `dir` logs
    /// again whole, bytes: with [`Behaviour::iclogs`] (no delayed
    /// logging) every transaction copies each buffer it touches with all
    /// the changes made to it since it was last written to disk
    /// ("re-logging": "repeated operations to the same objects write the
    /// same changes to the log over and over again ... objects tend to get
    /// dirtier as they get relogged",
    /// Documentation/filesystems/xfs-delayed-logging-design.txt, which
    /// puts these stale copies at "over 90% of the space used in the log
    /// buffers"), and a directory's blocks, changed by every create and
    /// unlink in it, are rewritten long after (XFS writes delayed-write
    /// metadata once it is 15 s old, `xfs_buf_age_centisecs`, or when the
    /// log's tail needs it). So each operation logs the directory blocks
    /// it changes whole. Which blocks depends on the directory's format
    /// (fs/xfs/xfs_dir2_sf.c, xfs_dir2_block.c, xfs_dir2_leaf.c,
    /// xfs_dir2_node.c): entries inside the inode (short form: logged
    /// with the inode core, already in `log_bytes_per_namespace_op`),
    /// one block holding the entries and their hash index (block form),
    /// or, past one block, a data block and a hash leaf block (leaf and
    /// node forms; the free-index block's change is a few bytes).
    ///
    /// [`Behaviour::iclogs`]: super::Behaviour::iclogs
    fn relogged_dir_bytes(&self, dir: usize) -> u64 {
        if !self.be.iclogs {
            return 0;
        }
        let n = self.dir_entries.get(dir).copied().unwrap_or(0);
        if n <= DIR_SHORTFORM_ENTRIES {
            0
        } else if n <= DIR_BLOCK_ENTRIES {
            PAGE
        } else {
            2 * PAGE
        }
    }

    /// Whether every in-core log buffer is full and under IO, so a
    /// committing transaction has none to copy into (XFS
    /// `xlog_state_get_iclog_space` sleeps).
    fn log_buffers_busy(&self) -> bool {
        self.be.iclogs && self.be.block_device && self.log_inflight >= self.cfg.log_buffers
    }

    /// A background log buffer's write completed: the buffer is free, the
    /// next full one goes out, and transactions waiting for a buffer
    /// commit in order while one is free.
    pub(super) fn log_buffer_done(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        self.log_inflight -= 1;
        self.flush_log_buffers(now, host, cx);
        while !self.log_buffers_busy() {
            let Some((i, bytes)) = self.log_waiters.pop_front() else {
                break;
            };
            let p = &self.parents[i as usize];
            self.counters.log_buffer_wait_ns += now - p.lock_since;
            self.log_pending += bytes;
            if !self.sync_commit(now, i, host, cx) {
                self.finish(now, i, host, cx);
            }
            self.flush_log_buffers(now, host, cx);
        }
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
    pub(super) fn all_unwritten(&self, file: u32, offset: u64, len: u64) -> bool {
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
    pub(super) fn take_unwritten(&mut self, file: u32, offset: u64, len: u64) -> bool {
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

    pub(super) fn mark_alloc(&mut self, file: u32, offset: u64, len: u64) {
        let f = &mut self.files[file as usize];
        let (a, b) = (
            offset / PAGE,
            (offset + len).div_ceil(PAGE).min(f.size / PAGE),
        );
        for blk in a..b {
            set_bit(&mut f.alloc, blk);
        }
        f.eof = f.eof.max((offset + len).min(f.size));
        // the allocation's transaction records the size too
        f.disk_eof = f.disk_eof.max(f.eof);
    }

    /// Parent `i` holds what lock it needs.
    pub(super) fn locked(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        let waited = now - p.lock_since;
        if waited > 0 {
            p.lock_wait += waited;
            p.bd.add(Component::LockWait, waited);
            self.counters.inode_lock_wait_ns += waited;
        }
        let req = p.req;
        let direct = req.direct || !self.be.page_cache;
        if self.be.cpu_cache_bytes.is_some() {
            // direct access: reads through the CPU caches, writes past them
            if req.op == FileOp::Read && self.cpu_cached(&req) {
                self.counters.cpu_cache_hits += 1;
                self.copy(now, i, host, cx);
                return;
            }
            if req.op == FileOp::Write {
                self.cpu_cache_drop(&req);
            }
        }
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
            let meta_at = f.size;
            let mut n = 0;
            for mb in a..b {
                if !bit(&self.files[req.file as usize].meta, mb) {
                    set_bit(&mut self.files[req.file as usize].meta, mb);
                    let off = meta_at + mb * PAGE;
                    self.counters.metadata_reads += 1;
                    let file = req.file;
                    n += self.mapped(now, i, Op::Read, file, off, PAGE, false, host, cx);
                }
            }
            if n > 0 {
                self.parents[i as usize].stage = Stage::Meta;
                return;
            }
        }
        self.after_meta(now, i, host, cx);
    }

    pub(super) fn after_meta(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
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
        self.pin_core(file);
        let ns = self.be.alloc_ns.unwrap_or(self.cfg.alloc_ns);
        self.section(now, i, file, ns, Stage::Alloc, cx);
    }

    /// A direct write's unwritten-extent conversion once its data is
    /// written (XFS `xfs_iomap_write_unwritten` from the direct-IO end_io,
    /// ext4 `ext4_convert_unwritten_extents`): a transaction in the
    /// inode's allocation section, FCFS beside allocations, and its log
    /// bytes; the write completes after it.
    pub(super) fn convert(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        self.counters.conversions += 1;
        self.log_pending += self.cfg.log_bytes_per_convert();
        let file = self.parents[i as usize].req.file;
        self.pin_core(file);
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
    pub(super) fn data(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        p.stage = Stage::Data;
        let req = p.req;
        let op = if req.op == FileOp::Read {
            Op::Read
        } else {
            Op::Write
        };
        let fua = req.fua || op == Op::Write && self.be.persist_writes;
        let (file, off, len) = (req.file, req.offset, req.len);
        self.mapped(now, i, op, file, off, len, fua, host, cx);
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
    pub(super) fn fallback_writeback(
        &mut self,
        now: Nanos,
        i: u32,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        let req = self.parents[i as usize].req;
        let chunk = self.cfg.writeback_max_bytes;
        let n = req.len.div_ceil(chunk).max(1);
        self.parents[i as usize].stage = Stage::Data;
        self.counters.fallback_writes += 1;
        for k in 0..n {
            let off = req.offset + k * chunk;
            let len = chunk.min(req.offset + req.len - off);
            self.counters.writeback_writes += 1;
            self.counters.writeback_bytes += len;
            self.mapped(now, i, Op::Write, req.file, off, len, req.fua, host, cx);
        }
        self.flush_log_buffers(now, host, cx);
    }

    /// Issue `len` bytes at `offset` of `file` for parent `i`'s path: one
    /// host request per extent the range touches (a request crossing from
    /// one extent to the next is split there, as the block layer gets one
    /// bio per contiguous run), each one more the parent waits for.
    /// Returns how many were issued.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mapped(
        &mut self,
        now: Nanos,
        i: u32,
        op: Op,
        file: u32,
        offset: u64,
        len: u64,
        fua: bool,
        host: &mut Host,
        cx: &mut HostCx,
    ) -> u32 {
        let mut n = 0;
        let (mut at, end) = (offset, offset + len);
        loop {
            let (dev, run) = self.files[file as usize].map(at);
            let piece = run.min(end - at);
            self.parents[i as usize].pending += 1;
            self.child(now, i, ChildKind::Fore, op, dev, piece, fua, host, cx);
            n += 1;
            at += piece;
            if at >= end {
                return n;
            }
        }
    }

    /// Write the full in-core log buffers. With
    /// [`Behaviour::iclogs`](super::Behaviour::iclogs) at most
    /// `fs.log_buffers` are under IO (the rest wait in memory), and with
    /// `fs.log_barrier` each is a barrier: a device flush, then the
    /// buffer written with force unit access.
    pub(super) fn flush_log_buffers(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        // with delayed logging nothing is written until the committed
        // items pass an eighth of the log (XLOG_CIL_SPACE_LIMIT); then
        // the push writes them all, a log buffer at a time
        if self.cfg.delayed_logging
            && self.kind == FileSystem::Xfs
            && self.log_pending < self.cfg.log_region_bytes / 8
        {
            return;
        }
        while self.be.block_device && self.log_pending >= self.cfg.log_buffer_bytes {
            if self.be.iclogs && self.log_inflight >= self.cfg.log_buffers {
                return;
            }
            self.log_pending -= self.cfg.log_buffer_bytes;
            let n = self.cfg.log_buffer_bytes;
            if self.be.iclogs {
                self.log_inflight += 1;
                if self.cfg.log_barrier {
                    let kind = ChildKind::LogPreflush { bytes: n };
                    self.child(now, NONE, kind, Op::Flush, 0, 0, false, host, cx);
                    continue;
                }
            }
            self.log_write(now, NONE, ChildKind::Log, n, host, cx);
        }
    }

    /// A barrier's flush before a log buffer is done: the buffer is
    /// written with force unit access.
    pub(super) fn log_after_preflush(
        &mut self,
        now: Nanos,
        bytes: u64,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        self.log_write_fua(now, NONE, ChildKind::Log, bytes, true, host, cx);
    }

    pub(super) fn log_write(
        &mut self,
        now: Nanos,
        parent: u32,
        kind: ChildKind,
        bytes: u64,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        self.log_write_fua(now, parent, kind, bytes, false, host, cx);
    }

    /// [`FileLayer::log_write`] with force unit access when `fua`.
    #[allow(clippy::too_many_arguments)]
    fn log_write_fua(
        &mut self,
        now: Nanos,
        parent: u32,
        kind: ChildKind,
        bytes: u64,
        fua: bool,
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
        let fua = fua || self.be.persist_writes;
        self.child(now, parent, kind, Op::Write, off, bytes, fua, host, cx);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn child(
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
        let on_parent = matches!(kind, ChildKind::Fore | ChildKind::ColdMeta { .. });
        let (thread, poll) = if parent == NONE || !on_parent {
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
                // a file system's writes carry no placement directive
                placement: None,
            },
            cx,
        );
    }
}
