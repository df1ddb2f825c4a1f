//! fsync: writing back the file's dirty pages, then its log, then a
//! device flush.

use crate::breakdown::{Breakdown, Component};
use crate::device::{Nanos, Op};
use crate::host::io::HostCx;
use crate::host::stack::Host;

use super::layer::FileLayer;
use super::state::{ChildKind, Stage};

impl FileLayer {
    pub(super) fn start_fsync(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
        let p = &mut self.parents[i as usize];
        p.stage = Stage::SyncWb;
        self.syncers.push(i);
        self.flusher(now, host, cx);
        self.check_syncers(now, host, cx);
    }

    /// Syncers whose file has nothing dirty and no writeback in flight go
    /// on to the log force and the cache flush.
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

    pub(super) fn sync_flush(&mut self, now: Nanos, i: u32, host: &mut Host, cx: &mut HostCx) {
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
