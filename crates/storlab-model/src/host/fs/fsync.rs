//! fsync and fdatasync: writing back the file's dirty pages, then forcing
//! the log if the inode has changes in it that the call must make durable,
//! then a device flush.
//!
//! Sources (Linux 2.6.3x-6.x):
//! - XFS `xfs_file_fsync` (fs/xfs/linux-2.6/xfs_file.c, later
//!   fs/xfs/xfs_file.c): after `filemap_write_and_wait_range`, an inode
//!   pinned in the log (`xfs_ipincount`: a committed transaction logged it
//!   and the log has not been written since) has the log forced up to its
//!   last sequence, except that with `datasync` a pin whose logged fields
//!   are only `XFS_ILOG_TIMESTAMP` is skipped (`ili_fsync_fields &
//!   ~XFS_ILOG_TIMESTAMP`); when no log force wrote anything the data
//!   device's cache is flushed (`xfs_blkdev_issue_flush`: "this can only
//!   happen for fdatasync/O_DSYNC if we were overwriting an already
//!   allocated file"). A write logs the inode's timestamps in a
//!   transaction of its own (`file_update_time` -> `xfs_vn_update_time`,
//!   `XFS_ILOG_TIMESTAMP`) whenever the coarse clock has moved since the
//!   last update (`current_time`: the tick's time, so at most once per
//!   tick per file); an allocation, an unwritten-extent conversion or a
//!   size change logs the inode core.
//! - ext3/ext4 `ext3_sync_file`/`ext4_sync_file` (fs/ext4/fsync.c): with
//!   `datasync` and no `I_DIRTY_DATASYNC` (only timestamps dirty) no
//!   journal commit, else a commit; then a flush. The same rule.
//! - The log write: XFS writes its log buffer with `REQ_PREFLUSH |
//!   REQ_FUA` (2.6.3x: a barrier write), so the data written before is on
//!   the media before the log record, and the record is on the media when
//!   it completes. On a queue that does not advertise FUA the block layer
//!   runs it as a pre-flush, the write, then a post-flush
//!   (block/blk-flush.c, `blk_flush_policy`: `REQ_FSEQ_POSTFLUSH` when the
//!   queue lacks `QUEUE_FLAG_FUA`). The studies' SATA drives had FUA off
//!   (drivers/ata/libata-core.c, module parameter `fua`, "0=off
//!   [default]"), as the emulator's loop attachment has it here
//!   (/sys/block/loopN/queue/fua = 0): a forced log costs two flushes and a
//!   write, which `storlab app run sysbench-oltp` measures on the real
//!   server (1.9 flushes a commit, docs/apps.md).
//!
//! Simplifications: a log force writes everything the in-core log holds
//! and counts as covering every change logged before it started (an fsync
//! arriving while it is in flight does not wait for it); a log buffer
//! written because it filled does not unpin the files whose changes it
//! carried; atime updates are left out (relatime); the coarse clock's tick
//! is taken as 4 ms (`TICK_NS`).

use crate::breakdown::Component;
use crate::device::{Nanos, Op};
use crate::host::io::HostCx;
use crate::host::stack::Host;

use super::layer::FileLayer;
use super::request::FileOp;
use super::state::{ChildKind, Stage};

/// The coarse clock's tick, ns: `current_time` (2.6.x
/// `current_fs_time`) reads the time of the last tick, so a file's
/// timestamps change (and are logged) at most once a tick. ESTIMATE:
/// CONFIG_HZ=250, Debian's and Ubuntu's kernels' default.
pub const TICK_NS: u64 = 4_000_000;

/// Log bytes of one timestamp update's transaction. ESTIMATE: the inode
/// log item's format header (`xfs_inode_log_format`, 56 B) and the inode
/// core (`xfs_icdinode`, 96-176 B) with their log operation headers (12 B
/// each) and the transaction's: ~256 B.
pub const TIMESTAMP_LOG_BYTES: u64 = 256;

impl FileLayer {
    /// A write to `file` at `now` updates its timestamps: logged once per
    /// tick of the coarse clock.
    pub(super) fn pin_timestamps(&mut self, now: Nanos, file: u32) {
        let tick = now / TICK_NS + 1;
        let f = &mut self.files[file as usize];
        if f.pins.ts_tick == tick {
            return;
        }
        f.pins.ts_tick = tick;
        self.log_seq.last += 1;
        f.pins.ts = self.log_seq.last;
        self.log_pending += TIMESTAMP_LOG_BYTES;
    }

    /// `file`'s inode core changed in a logged transaction (its log bytes
    /// are added by the caller).
    pub(super) fn pin_core(&mut self, file: u32) {
        self.log_seq.last += 1;
        let f = &mut self.files[file as usize];
        f.pins.core = self.log_seq.last;
    }

    /// Whether a sync of `file` must force the log: with `datasync`, only
    /// for changes other than timestamps.
    fn must_force(&self, file: u32, datasync: bool) -> bool {
        let p = self.files[file as usize].pins;
        let forced = self.log_seq.forced;
        p.core > forced || !datasync && p.ts > forced
    }

    pub(super) fn start_fsync(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncWb;
        self.syncers.push(i);
        self.flusher(now, host, cx);
        self.check_syncers(now, host, cx);
    }

    /// Syncers whose file has nothing dirty and no writeback in flight go
    /// on to the log force (when their inode needs it) and the cache
    /// flush.
    pub(super) fn check_syncers(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
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
            let req = self.parents[i as usize].req;
            let datasync = req.op == FileOp::Fdatasync;
            // PMFS journals in the NVMM itself and its writes persist as
            // they are made: no log write, no flush (sync_flush)
            if self.be.block_device
                && !self.be.persist_writes
                && self.log_pending > 0
                && self.must_force(req.file, datasync)
            {
                self.force_log(now, i, host, cx);
            } else {
                self.sync_flush(now, i, host, cx);
            }
        }
    }

    /// Parent `i` forces the log: its pre-flush now, then the log's
    /// write ([`FileLayer::forced_log_write`]) and the post-flush
    /// ([`FileLayer::sync_flush`]) as each completes. The force covers
    /// every change logged so far.
    pub(super) fn force_log(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        self.log_seq.forced = self.log_seq.last;
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncPreflush;
        p.pending += 1;
        self.counters.flushes += 1;
        self.child(now, i, ChildKind::Fore, Op::Flush, 0, 0, false, host, cx);
    }

    /// The pre-flush is done: the forced log's write (the in-core log's
    /// bytes), then the post-flush ([`FileLayer::sync_flush`]).
    pub(super) fn forced_log_write(
        &mut self,
        now: Nanos,
        i: u32,
        host: &mut Host,
        cx: &mut HostCx,
    ) {
        let n = self.log_pending.max(1);
        self.log_pending = 0;
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncLog;
        p.pending += 1;
        self.log_write(now, i, ChildKind::Fore, n, host, cx);
    }

    pub(super) fn sync_flush(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        // tmpfs has nothing to flush; PMFS made every write persistent
        if !self.be.block_device || self.be.persist_writes {
            self.finish(now, i, host, cx);
            return;
        }
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncFlush;
        p.pending += 1;
        // the flush's own breakdown is merged at completion; the time
        // before it is writeback and log (beside what the request spent
        // before: a synchronous create's or unlink's system call and
        // namespace work)
        let waited = (now - p.submitted).saturating_sub(p.bd.total());
        p.bd.add(Component::Background, waited);
        self.counters.flushes += 1;
        self.child(now, i, ChildKind::Fore, Op::Flush, 0, 0, false, host, cx);
    }
}
