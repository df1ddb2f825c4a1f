//! Replies: released requests built into replies, sent without blocking,
//! accounted; throttled connections resumed; finished ones closed.

use std::sync::atomic::Ordering;

use storlab_model::Op;
use storlab_trace::closed::Served;
use storlab_trace::TraceOp;

use crate::clock::Clock;
use crate::driver::Released;
use crate::durability::SyncState;
use crate::outq::{FillError, LazyRead, COALESCE};
use crate::proto::*;
use crate::report::Sample;
use crate::shared::{JobKind, RecorderMsg};

use super::conn::{epoll_ctl, Conn, Sent};
use super::state::Reactor;

impl Reactor {
    /// Build the replies of released requests into their connections'
    /// output buffers. Called with the gate held (read).
    pub(super) fn release_all(&mut self) {
        if self.released.is_empty() {
            return;
        }
        let shared = &self.shared;
        let epoch = shared.epoch.load(Ordering::SeqCst);
        for r in self.released.drain(..) {
            let synced = shared.data.sync_state(r.job.sync);
            if synced == SyncState::Pending {
                // The deadline came before the host's sync ended: the
                // reply waits for it (`recheck_held`).
                shared.data.note_held();
                self.held.push(r);
                continue;
            }
            let Released {
                op,
                arrival,
                at,
                breakdown,
                job,
                ..
            } = r;
            let arrival = match job.kind {
                JobKind::ZeroPiece { arrived, .. } => arrived.min(arrival),
                _ => arrival,
            };
            let errno = if job.epoch != epoch || synced == SyncState::Failed {
                EIO
            } else {
                0
            };
            if errno == 0 {
                match job.kind {
                    JobKind::Flush { upto } => shared.data.flush_released(upto),
                    JobKind::Write {
                        first,
                        seq,
                        fua: true,
                    } => shared.data.fua_released(first..=seq),
                    // A piece the model completed with FUA is on its media.
                    JobKind::ZeroPiece { seq, fua: true, .. } => {
                        shared.data.fua_released(seq..=seq)
                    }
                    _ => {}
                }
            }
            let Some(c) = self
                .conns
                .get_mut(job.slot)
                .and_then(Option::as_mut)
                .filter(|c| c.generation == job.generation)
            else {
                // Its client is gone and its connection closed: what the
                // request held of the budget is free now.
                self.gone_work = self.gone_work.saturating_sub(job.reserved);
                self.shared
                    .limit_counters
                    .gone_work
                    .store(self.gone_work, Ordering::Relaxed);
                continue;
            };
            if let JobKind::ZeroPiece { len, last, .. } = job.kind {
                c.zero_inflight -= len;
                if !c.zero_queue.is_empty() {
                    self.zero_ready.push(job.slot);
                }
                if !last {
                    // Not the request's last piece: no reply yet.
                    continue;
                }
            }
            c.inflight -= 1;
            if let JobKind::Read = job.kind {
                c.reads_inflight -= job.reserved;
            }
            if c.inflight == 0 {
                c.idle_until = at.max(arrival) + shared.timing.idle_poll_ns;
            }
            if c.dead {
                continue;
            }
            let handle = job.handle;
            let fua = matches!(
                job.kind,
                JobKind::Write { fua: true, .. } | JobKind::ZeroPiece { fua: true, .. }
            );
            match job.kind {
                JobKind::Read if errno == 0 => {
                    let len = job.len as usize;
                    let lazy = LazyRead::new(c.structured, handle, job.offset, len as u32, epoch);
                    if len > COALESCE {
                        // Read as the socket takes it (`OutQueue::send`).
                        c.out.push_read(lazy);
                    } else {
                        // A small read is read now, into the buffer of the
                        // replies going out with it (the epoch was checked
                        // above, under the gate).
                        let head = lazy.head();
                        let filled = c
                            .out
                            .push_filled(head, len, |b| shared.data.read(b, job.offset));
                        if filled.is_err() {
                            shared.stats.protocol_error();
                            let r = c.error_reply(EIO, handle, "store IO error");
                            c.out.push_slice(&r);
                        }
                    }
                }
                _ if errno != 0 => {
                    let r = c.error_reply(errno, handle, "power cut while in flight");
                    c.out.push_slice(&r);
                }
                _ => {
                    let mut h = [0u8; SIMPLE_REPLY_LEN];
                    write_simple_header(&mut h, 0, handle);
                    c.out.push_slice(&h);
                }
            }
            let moves_data = matches!(op, Op::Read | Op::Write) && errno == 0;
            c.sent.push(Sent {
                op,
                arrival,
                at,
                breakdown,
                errno,
                bytes: if moves_data { job.len } else { 0 },
                offset: job.offset,
                len: job.len,
                fua,
            });
            self.dirty.push(job.slot);
        }
    }

    pub(super) fn flush_dirty(&mut self) {
        while let Some(slot) = self.dirty.pop() {
            self.flush(slot);
        }
    }

    /// Send what a connection has queued (without blocking) and account
    /// for the replies in it.
    pub(super) fn flush(&mut self, slot: usize) {
        let shared = &self.shared;
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let now = shared.clock.now();
        if !c.sent.is_empty() {
            // Lateness counts from when the reply is handed to the socket
            // (replies still queued for a slow client count as sent now).
            // Counted before the send: a client that asks for the stats
            // once it has its reply finds the reply counted.
            shared.stats.record_all(c.sent.iter().map(|s| Sample {
                op: s.op,
                bytes: s.bytes,
                error: s.errno != 0,
                model_ns: s.at - s.arrival,
                late_ns: now.saturating_sub(s.at),
                breakdown: &s.breakdown,
            }));
            if let Some(rec) = &shared.record {
                for s in &c.sent {
                    let op = [TraceOp::Read, TraceOp::Write, TraceOp::Trim, TraceOp::Flush]
                        [s.op.index()];
                    let _ = rec.send(RecorderMsg::Served(Served {
                        stream: c.id as u32,
                        op,
                        offset: s.offset,
                        len: s.len,
                        fua: s.fua,
                        arrival_ns: s.arrival,
                        complete_ns: s.at,
                        reply_ns: now,
                    }));
                }
            }
            c.sent.clear();
        }
        let before = c.out.queued();
        // A read's data, read as its reply goes: from the store as the
        // power epoch it completed in left it (a power cut since, which
        // increments the epoch before it changes the store, fails it).
        let mut fill = |epoch: u64, offset: u64, buf: &mut [u8]| -> Result<(), FillError> {
            let cut = || shared.epoch.load(Ordering::SeqCst) != epoch;
            let r = if cut() {
                Err((EIO, "power cut while in flight"))
            } else if shared.data.read(buf, offset).is_err() {
                Err((EIO, "store IO error"))
            } else if cut() {
                Err((EIO, "power cut while in flight"))
            } else {
                Ok(())
            };
            if r.is_err() {
                // (Counted as served when it was released.)
                shared.stats.protocol_error();
            }
            r
        };
        if !c.dead && c.out.send(c.fd(), &mut fill).is_err() {
            // The client is gone.
            self.kill(slot);
            self.update_interest(slot);
            return;
        }
        if c.dead {
            c.out.clear();
        } else if c.out.queued() < before {
            c.last_progress = now;
        }
        self.update_interest(slot);
    }

    pub(super) fn update_interest(&mut self, slot: usize) {
        self.account(slot);
        let budget = self.budget();
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let want = c.wanted_interest(budget);
        if want != c.interest
            && epoll_ctl(self.epfd, libc::EPOLL_CTL_MOD, c.fd(), want, slot as u64).is_ok()
        {
            c.interest = want;
        }
    }

    /// Connections with a backlog (throttled and no longer, or whose last
    /// turn ended before their input did): one turn each of what they
    /// have buffered, in slot order.
    pub(super) fn resume_throttled(&mut self) {
        for slot in 0..self.conns.len() {
            let budget = self.budget();
            let Some(c) = self.conns[slot].as_ref() else {
                continue;
            };
            if !c.throttled(budget) && c.backlog() {
                self.process_input(slot);
            } else if c.wanted_interest(budget) != c.interest {
                self.update_interest(slot);
            }
        }
    }

    /// Close connections that are finished.
    pub(super) fn reap(&mut self) {
        for slot in 0..self.conns.len() {
            if !self.conns[slot].as_ref().is_some_and(Conn::finished) {
                continue;
            }
            if let Some(c) = self.conns[slot].take() {
                // Its reads and trim pieces still in the model keep their
                // device time (see `Reactor::gone_work`): they go on
                // holding the budget's shared pool until they end.
                self.gone_work += c.reads_inflight + c.zero_inflight;
                let lc = &self.shared.limit_counters;
                lc.gone_work.store(self.gone_work, Ordering::Relaxed);
                lc.gone_work_peak
                    .fetch_max(self.gone_work, Ordering::Relaxed);
                self.buffered -= c.accounted;
                self.over_total -= c.accounted.saturating_sub(self.shared.limits.reserve);
                self.shared
                    .limit_counters
                    .buffered
                    .store(self.buffered, Ordering::Relaxed);
                // SAFETY: removes a registered fd; a null event is allowed.
                unsafe {
                    libc::epoll_ctl(self.epfd, libc::EPOLL_CTL_DEL, c.fd(), std::ptr::null_mut())
                };
                c.sock.shutdown(std::net::Shutdown::Both);
                self.shared.live_conns.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}
