//! Completions: the layer's wake-ups and its children's completions,
//! releasing locks, and finishing a file request.

use crate::breakdown::Component;
use crate::device::{Nanos, Op};
use crate::host::io::{HostCx, IoDone};
use crate::host::stack::Host;

use super::layer::FileLayer;
use super::request::FileOp;
use super::state::{ChildKind, Stage, FS_TOKEN, KUPDATE_BIT, P_CLEAN, P_WRITEBACK, RELEASE_BIT};

impl FileLayer {
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
        if token & KUPDATE_BIT != 0 {
            self.kupdate(now, host, cx);
            self.absorb(now, host, cx);
            return;
        }
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
                    self.wait(now, i, Component::Copy, copy, Stage::FallbackCopy, cx);
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
                    let pages = self.allocated_pages(req.file);
                    self.parents[i as usize].after_ns = pages * self.be.page_free_ns;
                    self.delete_file(req.file);
                }
                self.commit_namespace(now, i, host, cx);
            }
            _ => debug_assert!(false, "no wake-up expected"),
        }
        self.absorb(now, host, cx);
    }

    fn child_done(&mut self, now: Nanos, d: IoDone, host: &mut Host, cx: &mut HostCx) {
        let c = self.children[d.id as usize];
        self.free_children.push(d.id as u32);
        match c.kind {
            ChildKind::Log => {
                if self.be.iclogs {
                    self.log_buffer_done(now, host, cx);
                }
            }
            ChildKind::LogPreflush { bytes } => self.log_after_preflush(now, bytes, host, cx),
            ChildKind::ColdMeta { buf } => self.cold_read_done(now, buf, host, cx),
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
                        } else if req.op == FileOp::Read && self.be.cpu_cache_bytes.is_some() {
                            // the lines read stay in the CPU's caches; the
                            // copy out of the memory's missed lines holds
                            // the thread at its fill buffers' rate
                            self.cpu_cache_fill(&req);
                            let copy =
                                (self.cfg.memory_copy_ns_per_kib.read * req.len).div_ceil(1024);
                            if copy > 0 {
                                self.wait(now, i, Component::Copy, copy, Stage::Copy, cx);
                            } else {
                                self.finish(now, i, host, cx);
                            }
                        } else if convert {
                            self.convert(now, i, cx);
                        } else {
                            self.finish(now, i, host, cx);
                        }
                    }
                    Stage::SyncPreflush => {
                        if p.pending == 0 {
                            self.forced_log_write(now, i, host, cx);
                        }
                    }
                    Stage::SyncLog => {
                        if p.pending == 0 {
                            self.sync_flush(now, i, host, cx);
                        }
                    }
                    Stage::SyncFlush => {
                        p.bd.merge(&d.breakdown);
                        let after = p.after_ns;
                        if after > 0 {
                            // a synchronous unlink goes on to free the
                            // file's pages
                            self.wait(now, i, Component::FileSystem, after, Stage::Copy, cx);
                        } else {
                            self.finish(now, i, host, cx);
                        }
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

    /// Parent `i` spends `ns` of its thread's time on `what` from `now`,
    /// then goes on from `stage` (a file-system wake-up).
    pub(super) fn wait(
        &mut self,
        now: Nanos,
        i: u32,
        what: Component,
        ns: Nanos,
        stage: Stage,
        cx: &mut HostCx,
    ) {
        let p = &mut self.parents[i as usize];
        p.bd.add(what, ns);
        p.stage = stage;
        cx.dev.wakeups.push((now + ns, FS_TOKEN | i as u64));
    }

    /// Parent `i` is done at `now`: release its lock, report it.
    pub(super) fn finish(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
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
                FileOp::Fsync | FileOp::Fdatasync => Op::Flush,
                FileOp::Create => Op::Write,
                FileOp::Unlink => Op::Trim,
            },
            len: p.req.len,
            slat_ns: slat,
            clat_ns: total - slat,
            at: now,
            breakdown: bd,
            // a file system on a zoned drive is not modelled: the file
            // layer's device requests do not fail
            error: 0,
        });
        if p.release_pending {
            // the release wake-up still names this slot
            self.parents[i as usize].finished = true;
        } else {
            self.free_parents.push(i);
        }
    }

    // ----- page cache -----
}
