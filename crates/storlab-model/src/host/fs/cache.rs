//! The page cache: buffered reads with read-ahead, copies on hits, dirty
//! pages under the dirty limits, eviction, and the flusher's writeback.

use crate::breakdown::{Breakdown, Component};
use crate::device::{Nanos, Op};
use crate::host::io::HostCx;
use crate::host::stack::Host;

use super::config::PAGE;
use super::layer::FileLayer;
use super::request::{FileOp, FileReq};
use super::state::{
    bit, ChildKind, Stage, FS_TOKEN, KUPDATE_BIT, NONE, P_ABSENT, P_CLEAN, P_DIRTY, P_WRITEBACK,
};

/// Log bytes of a transaction that logs only an inode's core (XFS: the
/// inode log format item, 56 bytes, and the logged dinode, 176 bytes, with
/// their operation headers; ext4's journal logs the inode's block, which
/// its commit block rounds up anyway): 256.
const INODE_CORE_LOG_BYTES: u64 = 256;

impl FileLayer {
    fn ensure_pages(&mut self, file: u32) {
        let f = &mut self.files[file as usize];
        if f.pages.is_empty() {
            f.pages = vec![P_ABSENT; (f.size / PAGE) as usize];
        }
    }

    /// The CPU of a request served by the page cache: system call, the
    /// file system's per-request cost, the copy.
    ///
    /// The copy of pages held in memory (tmpfs's, the page cache's) pays
    /// `fs.memory_copy_ns_per_kib` too; a direct-access file system's
    /// copy here is of lines in the CPU caches
    /// ([`Behaviour::cpu_cache_bytes`](super::Behaviour::cpu_cache_bytes)), which it does not pay.
    fn cache_cpu(&self, host: &Host, op: Op, len: u64, bd: &mut Breakdown) -> u64 {
        let c = host.config();
        let sys = c.syscall_entry_ns.get(op) + c.syscall_exit_ns.get(op);
        let fs = c.xfs_ns.get(op);
        let mem = if self.be.cpu_cache_bytes.is_some() {
            0
        } else {
            self.cfg.memory_copy_ns_per_kib.get(op)
        };
        let copy = ((c.copy_ns_per_kib.get(op) + mem) * len).div_ceil(1024);
        bd.add(Component::Syscall, sys);
        bd.add(Component::FileSystem, fs);
        bd.add(Component::Copy, copy);
        sys + fs + copy
    }

    pub(super) fn buffered(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let req = self.parents[i as usize].req;
        self.ensure_pages(req.file);
        let (a, b) = self.page_range(&req);
        if req.op == FileOp::Write {
            if self.be.memory_store {
                // pages the write adds are allocated first (tmpfs)
                let new = self.unallocated_pages(req.file, a, b);
                if new > 0 {
                    self.mark_alloc(req.file, a * PAGE, (b - a) * PAGE);
                    let ns = new * self.be.page_alloc_ns;
                    let p = &mut self.parents[i as usize];
                    p.bd.add(Component::FileSystem, ns);
                    p.after_ns = ns;
                }
                self.insert_pages(req.file, a, b, P_CLEAN);
            } else {
                if self.dirty_pages + (b - a) > self.dirty_limit() && self.dirty_pages > 0 {
                    self.counters.dirty_throttled += 1;
                    self.parents[i as usize].stage = Stage::Throttle;
                    self.throttled.push_back(i);
                    self.flusher(now, host, cx);
                    return;
                }
                // a write past the end extends the file's size in memory
                let f = &mut self.files[req.file as usize];
                f.eof = f.eof.max((req.offset + req.len).min(f.size));
                self.write_pages(now, req.file, a, b);
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
        p.fill = (start / PAGE, end / PAGE);
        let file = req.file;
        self.mapped(now, i, Op::Read, file, start, end - start, false, host, cx);
    }

    /// The fill of parent `i`'s read came back: its pages are resident.
    /// The fill went through the host stack on the reader's own thread
    /// (entry, file system, copy out, return), so the read is done.
    pub(super) fn fill_done(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = self.parents[i as usize];
        let (a, b) = p.fill;
        self.insert_pages(p.req.file, a, b, P_CLEAN);
        self.finish(now, i, host, cx);
    }

    pub(super) fn copy(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = self.parents[i as usize];
        let op = if p.req.op == FileOp::Read {
            Op::Read
        } else {
            Op::Write
        };
        let mut bd = p.bd;
        // CPU the path ran before the copy (a tmpfs write's page
        // allocations), already in the breakdown
        let before = std::mem::take(&mut self.parents[i as usize].after_ns);
        let dur = self.cache_cpu(host, op, p.req.len, &mut bd);
        let p = &mut self.parents[i as usize];
        p.bd = bd;
        p.stage = Stage::Copy;
        cx.dev
            .wakeups
            .push((now + before + dur, FS_TOKEN | i as u64));
    }

    /// Pages of `a..b` of `file` with no block allocated.
    fn unallocated_pages(&self, file: u32, a: u64, b: u64) -> u64 {
        let f = &self.files[file as usize];
        (a..b).filter(|&pg| !bit(&f.alloc, pg)).count() as u64
    }

    /// Pages of `file` with a block allocated (what its deletion frees).
    pub(super) fn allocated_pages(&self, file: u32) -> u64 {
        let f = &self.files[file as usize];
        let words = (f.size / PAGE).div_ceil(64) as usize;
        f.alloc
            .iter()
            .take(words)
            .map(|w| w.count_ones() as u64)
            .sum::<u64>()
            .min(f.size / PAGE)
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

    /// Start the page cache in the steady state of a program that keeps
    /// dirtying pages of `file` with buffered writes and never syncs them
    /// (Berkeley DB's memory pool writing its victims back): Linux writes
    /// every dirty page back within `dirty_expire_centisecs` (30 s), or
    /// sooner once dirty pages pass `dirty_background_ratio`
    /// (mm/page-writeback.c, fs/fs-writeback.c `wb_over_bg_thresh`,
    /// `wb_check_old_data_flush`), so over a long run the device takes one
    /// page written back for each page dirtied. A simulated run lasts
    /// seconds, less than the expiry takes to reach a steady state: this
    /// dirties the pages `pages` yields, in order (duplicates count
    /// once), until the dirty pages reach the background threshold, so
    /// that from the run's first buffered write on the flusher writes
    /// back as much as is dirtied (dirtied at time 0, they also expire at
    /// the flusher's first wake-up after `dirty_expire_ms`).
    /// Returns the pages dirtied; nothing on a file system with no page
    /// cache (PMFS) or whose memory is the store (tmpfs).
    pub fn dirty_to_background(&mut self, file: u32, pages: impl IntoIterator<Item = u64>) -> u64 {
        if !self.be.page_cache || self.be.memory_store || !self.files[file as usize].live {
            return 0;
        }
        self.ensure_pages(file);
        let n = self.files[file as usize].pages.len() as u64;
        let before = self.dirty_pages;
        let limit = self.background_limit();
        // a bounded walk: `pages` may repeat itself
        let tries = (8 * limit + n) as usize;
        for pg in pages.into_iter().take(tries) {
            if self.dirty_pages >= limit {
                break;
            }
            if pg < n {
                self.write_pages(0, file, pg, pg + 1);
            }
        }
        self.dirty_pages - before
    }

    /// Start the page cache holding pages `a..b` of `file` clean, as a
    /// program that wrote (or read) them before the run and saw them
    /// written back leaves them (a database loaded through the page
    /// cache); the cache's size still bounds what stays (the first
    /// pages are evicted first). Nothing on a file system with no page
    /// cache (PMFS) or whose memory is the store (tmpfs).
    pub fn cache_clean(&mut self, file: u32, a: u64, b: u64) {
        if !self.be.page_cache || self.be.memory_store || !self.files[file as usize].live {
            return;
        }
        self.ensure_pages(file);
        let b = b.min(self.files[file as usize].pages.len() as u64);
        if a < b {
            self.insert_pages(file, a, b, P_CLEAN);
        }
    }

    fn dirty_limit(&self) -> u64 {
        self.cache_pages * self.cfg.dirty_ratio_pct as u64 / 100
    }

    fn background_limit(&self) -> u64 {
        self.cache_pages * self.cfg.dirty_background_ratio_pct as u64 / 100
    }

    /// Pages `a..b` of `file` are dirtied at `now`: a clean file's
    /// dirty data starts ageing (its `dirtied_when`).
    fn write_pages(&mut self, now: Nanos, file: u32, a: u64, b: u64) {
        self.insert_pages(file, a, b, P_DIRTY);
        let f = &mut self.files[file as usize];
        if f.dirty > 0 && f.dirtied_when == Nanos::MAX {
            f.dirtied_when = now;
            self.kupdate_wanted = true;
        }
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

    /// Whether every page of `req`'s range is in the CPU caches (a
    /// direct-access file system, [`Behaviour::cpu_cache_bytes`]).
    ///
    /// [`Behaviour::cpu_cache_bytes`]: super::Behaviour::cpu_cache_bytes
    pub(super) fn cpu_cached(&mut self, req: &FileReq) -> bool {
        self.ensure_pages(req.file);
        let (a, b) = self.page_range(req);
        let f = &self.files[req.file as usize];
        a < b && (a..b).all(|pg| f.pages[pg as usize] != P_ABSENT)
    }

    /// The pages `req` read are now in the CPU caches (least recently
    /// filled evicted beyond their size).
    pub(super) fn cpu_cache_fill(&mut self, req: &FileReq) {
        if !self.files[req.file as usize].live {
            return;
        }
        self.ensure_pages(req.file);
        let (a, b) = self.page_range(req);
        self.insert_pages(req.file, a, b, P_CLEAN);
    }

    /// A write's non-temporal stores leave its pages out of the CPU
    /// caches (their stale entries in the eviction queue are dropped
    /// when reached).
    pub(super) fn cpu_cache_drop(&mut self, req: &FileReq) {
        self.ensure_pages(req.file);
        let (a, b) = self.page_range(req);
        let f = &mut self.files[req.file as usize];
        for pg in a..b {
            if f.pages[pg as usize] != P_ABSENT {
                f.pages[pg as usize] = P_ABSENT;
                self.resident_pages -= 1;
            }
        }
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
            if f.pages[pg as usize] == P_ABSENT {
                // dropped by a write past the CPU caches: already uncounted
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
    pub(super) fn flusher(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        let mut s = 0;
        while s < self.syncers.len() && self.wb_inflight < self.cfg.writeback_depth {
            let file = self.parents[self.syncers[s] as usize].req.file;
            if self.files[file as usize].dirty > 0 {
                self.write_back(now, file as usize, host, cx);
            } else {
                s += 1;
            }
        }
        // files whose dirty data expired, whole, in the order found
        while self.wb_inflight < self.cfg.writeback_depth {
            let Some(&fi) = self.expired.front() else {
                break;
            };
            let f = &mut self.files[fi as usize];
            if f.live && f.dirty > 0 {
                self.write_back(now, fi as usize, host, cx);
            } else {
                f.expiring = false;
                self.expired.pop_front();
            }
        }
        self.arm_kupdate(now, cx);
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
            // one IO per contiguous run: it stops at its extent's end
            let (dev, run) = f.map(first * PAGE);
            let max_pages = max_pages.min(run / PAGE).max(1);
            let mut n = 0;
            while pg < npages && n < max_pages && f.pages[pg as usize] == P_DIRTY {
                f.pages[pg as usize] = P_WRITEBACK;
                pg += 1;
                n += 1;
            }
            f.wb_cursor = pg;
            f.dirty -= n;
            if f.dirty == 0 {
                f.dirtied_when = Nanos::MAX;
            }
            self.dirty_pages -= n;
            let needs = (first..first + n).any(|b| !bit(&f.alloc, b));
            if needs {
                // delayed allocation happens at writeback
                self.mark_alloc(fi as u32, first * PAGE, n * PAGE);
                self.counters.allocations += 1;
                self.log_pending += self.cfg.log_bytes_per_alloc;
                self.pin_core(fi as u32);
            } else if self.take_unwritten(fi as u32, first * PAGE, n * PAGE) {
                // the ioend converts the unwritten blocks it wrote
                // (xfs_end_io, ext4's end_io work)
                self.counters.conversions += 1;
                self.log_pending += self.cfg.log_bytes_per_convert();
                self.pin_core(fi as u32);
            } else if (first + n) * PAGE > self.files[fi].disk_eof
                && self.files[fi].disk_eof < self.files[fi].eof
            {
                // an IO past the on-disk size: its completion records the
                // new size in a transaction that logs the inode core
                // (XFS `xfs_end_ioend` -> `xfs_setfilesize` for an
                // append ioend; ext4 journals `i_disksize` as its
                // writeback maps the pages), so fdatasync must force it
                // (the size is not a timestamp)
                self.counters.size_updates += 1;
                self.log_pending += INODE_CORE_LOG_BYTES;
                self.pin_core(fi as u32);
            }
            {
                // whatever logged it, the on-disk size now covers the IO
                let f = &mut self.files[fi];
                f.disk_eof = f.disk_eof.max(((first + n) * PAGE).min(f.eof));
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
            self.child(now, NONE, kind, Op::Write, dev, n * PAGE, false, host, cx);
        }
    }

    /// Set the flusher's periodic wake-up if a file became dirty and
    /// none is set: at the first tick of its period (`dirty_writeback_ms`
    /// from time 0, as the flusher's timer runs from boot) at or after the
    /// oldest dirty file's expiry. No expiry configured: nothing.
    fn arm_kupdate(&mut self, now: Nanos, cx: &mut HostCx) {
        if !self.kupdate_wanted || self.kupdate_at.is_some() {
            return;
        }
        self.kupdate_wanted = false;
        if self.cfg.dirty_expire_ms == 0 || !self.be.page_cache || self.be.memory_store {
            return;
        }
        let oldest = self
            .files
            .iter()
            .filter(|f| f.live && f.dirty > 0)
            .map(|f| f.dirtied_when)
            .min();
        let Some(oldest) = oldest else {
            return;
        };
        let period = self.cfg.dirty_writeback_ms * 1_000_000;
        let due = oldest.saturating_add(self.cfg.dirty_expire_ms * 1_000_000);
        // the first tick at or after the expiry, and after now (a file
        // still being written back when its tick came waits for the next)
        let mut at = due.div_ceil(period).saturating_mul(period);
        if at <= now {
            at = (now / period + 1).saturating_mul(period);
        }
        self.kupdate_at = Some(at);
        cx.dev.wakeups.push((at, FS_TOKEN | KUPDATE_BIT));
    }

    /// The flusher's periodic wake-up at `now`: every file dirty for
    /// `dirty_expire_ms` or longer is queued to be written back whole
    /// (fs/fs-writeback.c `wb_check_old_data_flush` -> `wb_writeback`
    /// with `older_than_this`: inodes whose `dirtied_when` is older
    /// than the expiry), then the next wake-up is set for what is left.
    pub(super) fn kupdate(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        self.kupdate_at = None;
        let horizon = now.saturating_sub(self.cfg.dirty_expire_ms * 1_000_000);
        for (fi, f) in self.files.iter_mut().enumerate() {
            if f.live && f.dirty > 0 && f.dirtied_when <= horizon && !f.expiring {
                f.expiring = true;
                self.expired.push_back(fi as u32);
                self.counters.expired_files += 1;
            }
        }
        self.kupdate_wanted = true;
        self.flusher(now, host, cx);
    }

    pub(super) fn wake_throttled(&mut self, now: Nanos, host: &mut Host, cx: &mut HostCx) {
        while let Some(&i) = self.throttled.front() {
            let req = self.parents[i as usize].req;
            let (a, b) = self.page_range(&req);
            if self.dirty_pages + (b - a) > self.dirty_limit() && self.dirty_pages > 0 {
                break;
            }
            self.throttled.pop_front();
            self.write_pages(now, req.file, a, b);
            self.copy(now, i, host, cx);
        }
    }

    // ----- fsync -----
}
