//! Trims and write-zeroes as ordinary work: split into pieces no larger
//! than the largest write (`Limits::zero_piece`), given to the model one
//! piece's worth per connection at a time, each applied to the store when
//! it goes (issue 59: 16 write-zeroes of 4 GiB, 448 bytes from a client
//! that left at once, gave every client 0 IOPS for 35 s). A piece costs
//! the device what one largest write does, and a connection's next piece
//! waits for its last: device time is shared between connections, and a
//! client that leaves stops costing any once its piece in the model ends.

use std::sync::atomic::Ordering;

use storlab_model::{DevRequest, Op};

use crate::clock::Clock;
use crate::driver::ModelDriver;
use crate::proto::EIO;
use crate::shared::{Job, JobKind};

use super::conn::ZeroPiece;
use super::state::Reactor;

impl Reactor {
    /// Queue a trim or write-zeroes of connection `slot` as pieces (the
    /// request is in flight from now on; its reply goes out with its last
    /// piece), and give the model what it may take now.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue_zero(
        &mut self,
        core: &mut ModelDriver<Job>,
        slot: usize,
        handle: u64,
        (offset, len, fua, write): (u64, u64, bool, bool),
        epoch: u64,
    ) {
        let piece = self.shared.limits.zero_piece;
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        c.inflight += 1;
        let arrived = self.shared.clock.now();
        let mut at = offset;
        let end = offset + len;
        loop {
            let n = piece.min(end - at);
            c.zero_queue.push_back(ZeroPiece {
                handle,
                offset: at,
                len: n,
                fua,
                write,
                last: at + n == end,
                first: None,
                epoch,
                arrived,
            });
            at += n;
            if at >= end {
                break;
            }
        }
        self.submit_zero_pieces(core, slot);
    }

    /// Give the model connection `slot`'s next trim or write-zeroes
    /// pieces while it holds less than one piece's worth of them.
    pub(super) fn submit_zero_pieces(&mut self, core: &mut ModelDriver<Job>, slot: usize) {
        let shared = self.shared.clone();
        let limit = shared.limits.zero_piece;
        let epoch = shared.epoch.load(Ordering::SeqCst);
        loop {
            let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                return;
            };
            if c.dead {
                c.zero_queue.clear();
                return;
            }
            let Some(p) = c.zero_queue.front() else {
                return;
            };
            if c.zero_inflight > 0 && c.zero_inflight + p.len > limit {
                return;
            }
            let Some(p) = c.zero_queue.pop_front() else {
                return;
            };
            let failed = |c: &mut super::conn::Conn, errno: u32, why: &str| {
                c.zero_queue.retain(|q| q.handle != p.handle);
                c.inflight -= 1;
                shared.stats.protocol_error();
                let r = c.error_reply(errno, p.handle, why);
                c.out.push_slice(&r);
            };
            if p.epoch != epoch {
                // A power cut since it arrived: the rest is not applied.
                failed(c, EIO, "power cut while in flight");
                self.dirty.push(slot);
                continue;
            }
            let dev = core.device();
            let applied = shared
                .data
                .zero_part(p.offset, p.len, p.first, &|o, l| dev.volatile_holds(o, l));
            let seq = match applied {
                Ok(seq) => seq,
                Err(_) => {
                    failed(c, EIO, "store IO error");
                    self.dirty.push(slot);
                    continue;
                }
            };
            if p.first.is_none() {
                for q in c.zero_queue.iter_mut().filter(|q| q.handle == p.handle) {
                    q.first = Some(seq);
                }
            }
            c.zero_inflight += p.len;
            // A FUA request's host sync covers every piece applied before
            // its last.
            let sync = if p.fua && p.last {
                shared.data.sync_ticket()
            } else {
                0
            };
            let job = Job {
                sync,
                slot,
                generation: c.generation,
                handle: p.handle,
                kind: JobKind::ZeroPiece {
                    seq,
                    len: p.len,
                    fua: p.fua,
                    last: p.last,
                    arrived: p.arrived,
                },
                epoch: p.epoch,
                offset: p.offset,
                len: p.len,
                reserved: p.len,
            };
            let req = DevRequest {
                id: shared.next_id.fetch_add(1, Ordering::Relaxed),
                op: if p.write { Op::Write } else { Op::Trim },
                offset: p.offset,
                len: p.len,
                fua: p.fua,
                placement: None,
            };
            core.arrive(shared.clock.now(), req, job, &mut self.released);
            self.next_due = core.next_due();
        }
    }

    /// Connections whose trim or write-zeroes piece completed: give the
    /// model their next pieces.
    pub(super) fn pump_zero(&mut self) {
        if self.zero_ready.is_empty() {
            return;
        }
        let shared = self.shared.clone();
        let _gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
        let mut core = crate::shared::lock(&shared.core);
        while let Some(slot) = self.zero_ready.pop() {
            self.submit_zero_pieces(&mut core, slot);
        }
        let now = shared.clock.now();
        if self.next_due.is_some_and(|d| d <= now) {
            self.next_due = core.tick(now, &mut self.released);
        }
        drop(core);
        self.release_all();
    }
}
