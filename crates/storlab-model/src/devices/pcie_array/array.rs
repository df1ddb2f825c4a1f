//! The PCIe NVM array's state and its request scheduling: admission under
//! tags, barriers (flushes), the command queues and the scheduler that
//! cuts requests into buffer-sized transfers.

use std::collections::VecDeque;

use crate::breakdown::Component;
use crate::device::{Cx, Nanos, Op};
use crate::link::duplex::Link;
use crate::media::MediaConfig;
use crate::units::{FixedDiv, RateNs, Timeline};

use super::config::{PcieArrayConfig, PowerConfig, QueuePolicy};
use super::wear::StartGap;

pub(super) const EV_DMA_DONE: u64 = 0; // write: first bytes in the buffer
pub(super) const EV_RING_W: u64 = 1; // write: first bytes in the controller's in-queue
pub(super) const EV_CTRL_FREE: u64 = 2; // controller can start its next op
pub(super) const EV_CTRL_DONE: u64 = 3; // media op finished (write: transfer done; read: data in out-queue)
pub(super) const EV_XFER_DONE: u64 = 4; // read: DMA to host finished
pub(super) const EV_CMD_READY: u64 = 5; // the firmware has decoded a command: it joins the queue
pub(super) const EV_BUF_FREE: u64 = 6; // write: last byte left the buffer over the ring

#[derive(Clone, Debug, Default)]
pub(super) struct Req {
    pub(super) id: u64,
    pub(super) op: Option<Op>,
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) seq: u64,
    pub(super) arrival: Nanos,
    pub(super) issued: u64,
    pub(super) pending: u32,
    pub(super) done_all_issued: bool,
    /// Time waiting for a tag before admission (the request's own part of
    /// its breakdown: the rest is its last transfer's, in `xpath`, joined
    /// only in the completion).
    pub(super) queued_ns: u64,
    /// The firmware's time on the command (`command_latency_ns`).
    pub(super) command_ns: u64,
    pub(super) last_done: Nanos,
}

/// A transfer's critical path by component: the only components it sets
/// (a whole [`crate::Breakdown`] per transfer was zeroed, filled and copied into
/// the completion: 160 bytes where 40 do).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct XPath {
    /// Waiting for a buffer (device queue).
    pub(super) queue: u64,
    /// The ring.
    pub(super) interconnect: u64,
    /// The link and its DMA.
    pub(super) link: u64,
    /// The controller's queue and pipeline.
    pub(super) controller: u64,
    /// The memory access.
    pub(super) media: u64,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Xfer {
    pub(super) req: u32,
    pub(super) write: bool,
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) ctrl: u32,
    pub(super) t_sched: Nanos,
    pub(super) t_mark: Nanos,
    /// When the upstream stage delivers its last byte.
    pub(super) stream_end: Nanos,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Ctrl {
    /// An EV_CTRL_FREE wake-up is scheduled.
    pub(super) free_pending: bool,
    /// Ops that have arrived (writes over the ring, read commands), FIFO.
    pub(super) queue: VecDeque<u32>,
    /// Writes in `queue` (none: the controller takes its head, no search
    /// for a write).
    pub(super) writes_queued: u32,
    /// A write occupies the in-queue from its ring transfer until its commit
    /// starts.
    pub(super) in_used: bool,
    /// A read occupies the out-queue from its start until its ring transfer.
    pub(super) out_used: bool,
    /// Read commands accepted but not started.
    pub(super) pending_reads: u32,
    /// Writes whose DMA is done, waiting for the in-queue (scoreboard).
    pub(super) ring_waiters: VecDeque<u32>,
    pub(super) tl: Timeline,
}

/// A PCIe NVM array device.
pub struct PcieArray {
    pub(super) cfg: PcieArrayConfig,
    pub(super) media: MediaConfig,
    pub(super) power: PowerConfig,
    pub(super) capacity: u64,
    /// Transfer times over the ring and a controller's stream.
    pub(super) ring_t: RateNs,
    pub(super) ctrl_t: RateNs,
    /// Divisions by the stripe, row and buffer sizes and the controller
    /// count, done for every transfer.
    pub(super) stripe_div: FixedDiv,
    pub(super) row_div: FixedDiv,
    pub(super) buf_div: FixedDiv,
    pub(super) ctrl_div: FixedDiv,
    /// Rows per stripe (at least 1).
    pub(super) stripe_rows_div: FixedDiv,
    pub(super) reqs: Vec<Req>,
    pub(super) free_reqs: Vec<u32>,
    pub(super) xfers: Vec<Xfer>,
    /// Breakdown of each transfer's critical path (apart from `xfers`, which
    /// is copied often).
    pub(super) xpath: Vec<XPath>,
    pub(super) free_xfers: Vec<u32>,
    pub(super) queues: [VecDeque<u32>; 2],
    pub(super) rr: usize,
    pub(super) tag_wait: VecDeque<u32>,
    pub(super) in_device: u32,
    pub(super) buffers_free: u32,
    /// Reads with data in a controller out-queue, waiting for a buffer.
    pub(super) buffer_waiters: VecDeque<u32>,
    /// The PCIe link's DMA, both directions at once.
    pub(super) link: Link,
    pub(super) ring: Timeline,
    pub(super) ctrls: Vec<Ctrl>,
    pub(super) wear: Vec<StartGap>,
    pub(super) next_seq: u64,
    /// Completion flags of requests by seq, from `seq_base`.
    pub(super) done_window: VecDeque<bool>,
    pub(super) seq_base: u64,
    pub(super) barriers: VecDeque<u32>,
    /// Requests that arrived behind a pending barrier.
    pub(super) held: VecDeque<u32>,
    pub(super) pumping: bool,
    pub(super) last_grant_read: bool,
    /// Read transfers issued to a controller that have no buffer yet.
    pub(super) reads_before_buffer: u32,
    // accounting
    pub(super) busy_since: Option<Nanos>,
    pub(super) busy_ns: u64,
    pub(super) buffer_ns: u64,
    pub(super) buffer_hold: [u64; 2],
    pub(super) buffer_uses: [u64; 2],
    pub(super) rows_read: u64,
    pub(super) rows_written: u64,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
    /// The three shortcuts of the common case (`admit_direct`,
    /// `grant_now`, and an idle controller's `start_op` without its
    /// queue) are taken. They do what the general paths do, in their
    /// order; off, every request goes the general way (the unit test in
    /// `tests.rs` runs both and compares every completion).
    pub(super) shortcuts: bool,
    /// Times each shortcut was taken (admit, grant, start), for the test.
    #[cfg(test)]
    pub(super) taken: [u64; 3],
}
impl PcieArray {
    /// Build from a validated configuration.
    pub fn new(
        cfg: PcieArrayConfig,
        media: MediaConfig,
        power: PowerConfig,
        capacity: u64,
    ) -> Self {
        let nctl = cfg.controllers as usize;
        let per_ctrl = capacity.div_ceil(cfg.controllers as u64);
        let lines = per_ctrl.div_ceil(cfg.row_bytes).max(1);
        let wear = (0..nctl)
            .map(|i| StartGap::new(lines, cfg.start_gap_psi, 0x5eed + i as u64))
            .collect();
        Self {
            link: crate::link::pcie::lanes(
                cfg.lane_bytes_per_s,
                cfg.link_lanes,
                cfg.dma_latency_ns,
            ),
            ring_t: RateNs::new(cfg.ring_bytes_per_s),
            ctrl_t: RateNs::new(cfg.controller_bytes_per_s),
            stripe_div: FixedDiv::new(cfg.stripe_bytes),
            row_div: FixedDiv::new(cfg.row_bytes),
            buf_div: FixedDiv::new(cfg.buffer_bytes),
            ctrl_div: FixedDiv::new(cfg.controllers as u64),
            stripe_rows_div: FixedDiv::new((cfg.stripe_bytes / cfg.row_bytes).max(1)),
            buffers_free: cfg.buffers,
            ctrls: vec![Ctrl::default(); nctl],
            wear,
            cfg,
            media,
            power,
            capacity,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            xfers: Vec::new(),
            xpath: Vec::new(),
            free_xfers: Vec::new(),
            queues: [VecDeque::new(), VecDeque::new()],
            rr: 0,
            tag_wait: VecDeque::new(),
            in_device: 0,
            buffer_waiters: VecDeque::new(),
            ring: Timeline::default(),
            next_seq: 0,
            done_window: VecDeque::new(),
            seq_base: 0,
            barriers: VecDeque::new(),
            held: VecDeque::new(),
            pumping: false,
            last_grant_read: false,
            reads_before_buffer: 0,
            busy_since: None,
            busy_ns: 0,
            buffer_ns: 0,
            buffer_hold: [0; 2],
            buffer_uses: [0; 2],
            rows_read: 0,
            rows_written: 0,
            bytes_read: 0,
            bytes_written: 0,
            shortcuts: true,
            #[cfg(test)]
            taken: [0; 3],
        }
    }

    #[inline]
    pub(super) fn tok(kind: u64, idx: u32) -> u64 {
        ((idx as u64) << 3) | kind
    }

    pub(super) fn alloc_req(&mut self, r: Req) -> u32 {
        crate::units::slab_insert(&mut self.reqs, &mut self.free_reqs, r)
    }

    pub(super) fn alloc_xfer(&mut self, x: Xfer) -> u32 {
        let i = crate::units::slab_insert(&mut self.xfers, &mut self.free_xfers, x);
        if i as usize == self.xpath.len() {
            self.xpath.push(XPath::default());
        } else {
            self.xpath[i as usize] = XPath::default();
        }
        i
    }

    fn oldest_incomplete(&self) -> u64 {
        self.seq_base
    }

    fn mark_done(&mut self, seq: u64) {
        let i = (seq - self.seq_base) as usize;
        self.done_window[i] = true;
        while self.done_window.front() == Some(&true) {
            self.done_window.pop_front();
            self.seq_base += 1;
        }
    }

    fn first_barrier_seq(&self) -> u64 {
        self.barriers
            .front()
            .map(|&b| self.reqs[b as usize].seq)
            .unwrap_or(u64::MAX)
    }

    /// Admit a request into the device queues (it holds a tag).
    pub(super) fn admit(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        self.take_tag(now, ri);
        match self.reqs[ri as usize].op {
            Some(Op::Flush) => {
                self.barriers.push_back(ri);
                self.try_barriers(now, cx);
            }
            _ if !self.barriers.is_empty() => {
                // nothing behind a barrier is queued until it completes
                // (docs/spec/pcie-arrays.md +2Q and +Balance); a request waiting here
                // cannot block the requests the barrier waits for
                self.held.push_back(ri);
            }
            _ => self.enqueue(now, ri, cx),
        }
    }

    /// A request takes a tag at `now`: the device's count and busy time,
    /// and the request's wait for it.
    #[inline]
    fn take_tag(&mut self, now: Nanos, ri: u32) {
        self.in_device += 1;
        if self.busy_since.is_none() {
            self.busy_since = Some(now);
        }
        let r = &mut self.reqs[ri as usize];
        r.queued_ns = now - r.arrival;
        r.last_done = now;
    }

    /// [`Self::admit`] then [`Self::pump`] for a read or write that arrives
    /// to empty queues, with no barrier pending and no firmware time on the
    /// command (the common case under load on an array that keeps up):
    /// what they do, in their order, without the trip through the queue
    /// (a push, a look at its head and a pop for a request the scheduler
    /// takes at once). Returns false, having done nothing, in every other
    /// case.
    pub(super) fn admit_direct(&mut self, now: Nanos, ri: u32, cx: &mut Cx) -> bool {
        let op = self.reqs[ri as usize].op;
        let fw = match op {
            Some(Op::Read) => self.cfg.command_latency_ns.read,
            Some(Op::Write) => self.cfg.command_latency_ns.write,
            _ => return false,
        };
        if fw > 0
            || self.pumping
            || !self.barriers.is_empty()
            || !self.queues[0].is_empty()
            || !self.queues[1].is_empty()
        {
            return false;
        }
        self.take_tag(now, ri);
        #[cfg(test)]
        {
            self.taken[0] += 1;
        }
        let read_write = self.cfg.queues == QueuePolicy::ReadWrite;
        let q = usize::from(read_write && op == Some(Op::Write));
        if !self.can_start(ri) {
            // the scheduler would look at it and leave it
            self.queues[q].push_back(ri);
            return true;
        }
        // the scheduler's first round: this request, the only one queued
        self.pumping = true;
        self.start_transfer(now, ri, cx);
        let nq = if read_write { 2 } else { 1 };
        self.rr = (q + 1) & (nq - 1);
        self.pumping = false;
        let r = &self.reqs[ri as usize];
        if r.issued < r.len {
            // more transfers: back into its (otherwise empty) queue, and
            // the scheduler's next rounds
            self.queues[q].push_back(ri);
            self.pump_queues(now, cx);
        }
        true
    }

    pub(super) fn enqueue(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        match self.reqs[ri as usize].op {
            Some(Op::Trim) | Some(Op::Flush) | None => {
                // the arrays have no trim: it completes once admitted
                self.finish_req(now, ri, None, cx);
            }
            Some(op) => {
                let fw = if op == Op::Write {
                    self.cfg.command_latency_ns.write
                } else {
                    self.cfg.command_latency_ns.read
                };
                if fw > 0 && self.reqs[ri as usize].command_ns == 0 {
                    // the firmware decodes the command first
                    // (`command_latency_ns`); it joins the queue after
                    self.reqs[ri as usize].command_ns = fw;
                    cx.wake(now + fw, Self::tok(EV_CMD_READY, ri));
                    return;
                }
                let q = if self.cfg.queues == QueuePolicy::ReadWrite && op == Op::Write {
                    1
                } else {
                    0
                };
                self.queues[q].push_back(ri);
            }
        }
    }

    fn try_barriers(&mut self, now: Nanos, cx: &mut Cx) {
        while let Some(&b) = self.barriers.front() {
            if self.oldest_incomplete() != self.reqs[b as usize].seq {
                break;
            }
            self.barriers.pop_front();
            self.finish_req(now, b, None, cx);
            // release what was held behind it, up to the next barrier
            let next = self.first_barrier_seq();
            while let Some(&h) = self.held.front() {
                if self.reqs[h as usize].seq > next {
                    break;
                }
                self.held.pop_front();
                self.enqueue(now, h, cx);
            }
        }
    }

    /// Request `ri` finished at `now`; `last`, its transfer that finished
    /// last (none for a trim or a flush), holds the critical path's
    /// breakdown.
    pub(super) fn finish_req(&mut self, now: Nanos, ri: u32, last: Option<u32>, cx: &mut Cx) {
        let r = &mut self.reqs[ri as usize];
        let seq = r.seq;
        // the breakdown written once, in the completion: the last
        // transfer's critical path, the wait for a tag, and (in
        // `queue_rest`) time not on the critical path as queueing
        let p = last.map_or_else(XPath::default, |xi| self.xpath[xi as usize]);
        cx.done_parts(
            r.id,
            r.arrival,
            now,
            &[
                (Component::DeviceQueue, p.queue + r.queued_ns),
                (Component::Interconnect, p.interconnect),
                (Component::Link, p.link),
                (Component::Controller, p.controller + r.command_ns),
                (Component::Media, p.media),
            ],
        );
        self.free_reqs.push(ri);
        self.in_device -= 1;
        if self.in_device == 0 {
            if let Some(s) = self.busy_since.take() {
                self.busy_ns += now - s;
            }
        }
        self.mark_done(seq);
        if let Some(next) = self.tag_wait.pop_front() {
            self.admit(now, next, cx);
        }
        if !self.barriers.is_empty() {
            self.try_barriers(now, cx);
        }
        // a finished barrier or a freed tag may let the scheduler go on
        self.pump(now, cx);
    }

    /// Next transfer of request `ri`, as (offset, len).
    #[inline]
    pub(super) fn next_piece(&self, ri: u32) -> (u64, u64) {
        let r = &self.reqs[ri as usize];
        let off = r.offset + r.issued;
        let bb = self.cfg.buffer_bytes;
        let end_of_buf = (self.buf_div.div(off) + 1) * bb;
        let len = (r.offset + r.len).min(end_of_buf) - off;
        (off, len)
    }

    #[inline]
    pub(super) fn ctrl_of(&self, off: u64) -> u32 {
        self.ctrl_div.rem(self.stripe_div.div(off)) as u32
    }

    /// Can the head transfer of `ri` start now?
    pub(super) fn can_start(&self, ri: u32) -> bool {
        let r = &self.reqs[ri as usize];
        match r.op {
            // one queue is processed in order: a write gets a buffer only
            // after every read issued before it has one; +2Q alternates the
            // grants between the directions instead
            Some(Op::Write) => {
                self.buffers_free > 0
                    && (self.reads_before_buffer == 0
                        || (self.cfg.queues == QueuePolicy::ReadWrite && self.last_grant_read))
            }
            _ => {
                let (off, _) = self.next_piece(ri);
                self.ctrls[self.ctrl_of(off) as usize].pending_reads == 0
            }
        }
    }

    /// The scheduler: start transfers while the policy allows. Re-entrant
    /// calls (a resource freed while starting a transfer) only note that
    /// the outer loop should look again.
    ///
    /// (The idle case, nothing queued or a pump already running, is
    /// decided inline: the scheduler is called four or five times per
    /// request, most of them with nothing to start.)
    #[inline]
    pub(super) fn pump(&mut self, now: Nanos, cx: &mut Cx) {
        if self.pumping || (self.queues[0].is_empty() && self.queues[1].is_empty()) {
            return;
        }
        self.pump_queues(now, cx);
    }

    /// [`Self::pump`]'s loop, with work queued.
    fn pump_queues(&mut self, now: Nanos, cx: &mut Cx) {
        self.pumping = true;
        let nq = if self.cfg.queues == QueuePolicy::ReadWrite {
            2
        } else {
            1
        };
        loop {
            let mut started = false;
            for k in 0..nq {
                // (nq is 1 or 2: a mask, not a division)
                let q = (self.rr + k) & (nq - 1);
                let Some(&ri) = self.queues[q].front() else {
                    continue;
                };
                if !self.can_start(ri) {
                    continue;
                }
                self.queues[q].pop_front();
                self.start_transfer(now, ri, cx);
                let r = &self.reqs[ri as usize];
                if r.issued < r.len {
                    if self.cfg.balance {
                        self.queues[q].push_back(ri);
                    } else {
                        self.queues[q].push_front(ri);
                    }
                }
                self.rr = (q + 1) & (nq - 1);
                started = true;
                break;
            }
            if !started {
                break;
            }
        }
        self.pumping = false;
    }
}
