//! The PCIe NVM array's data path: a transfer's DMA over the PCIe link,
//! its trip over the ring, the memory controllers that read and commit
//! rows, and the scheduler buffers the transfers hold on the way.

use crate::device::{Cx, Nanos, Op};
use crate::link::duplex::Dir;

use super::array::{
    PcieArray, Xfer, EV_BUF_FREE, EV_CTRL_DONE, EV_CTRL_FREE, EV_DMA_DONE, EV_RING_W, EV_XFER_DONE,
};

impl PcieArray {
    pub(super) fn start_transfer(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let (off, len) = self.next_piece(ri);
        let ctrl = self.ctrl_of(off);
        let write = self.reqs[ri as usize].op == Some(Op::Write);
        {
            let r = &mut self.reqs[ri as usize];
            r.issued += len;
            r.pending += 1;
            if r.issued >= r.len {
                r.done_all_issued = true;
            }
        }
        let x = Xfer {
            req: ri,
            write,
            offset: off,
            len,
            ctrl,
            t_sched: now,
            t_mark: now,
            stream_end: now,
        };
        let xi = self.alloc_xfer(x);
        if write {
            // DMA host → buffer: first bytes after the DMA latency, at link rate
            self.buffers_free -= 1;
            self.last_grant_read = false;
            let (start, end) = self.link.move_to_device(now, len);
            let xm = &mut self.xfers[xi as usize];
            xm.stream_end = end;
            self.xpath[xi as usize].link += end - now;
            xm.t_mark = end;
            cx.wake(start, Self::tok(EV_DMA_DONE, xi));
        } else {
            self.ctrls[ctrl as usize].pending_reads += 1;
            self.reads_before_buffer += 1;
            let ctl = &self.ctrls[ctrl as usize];
            if self.shortcuts && ctl.queue.is_empty() && ctl.tl.free_at <= now && !ctl.out_used {
                // an idle controller with nothing queued takes it at once:
                // what `kick_ctrl` does with it as its only queued op
                #[cfg(test)]
                {
                    self.taken[2] += 1;
                }
                self.start_op(now, ctrl, xi, cx);
            } else {
                self.ctrls[ctrl as usize].queue.push_back(xi);
                self.kick_ctrl(now, ctrl, cx);
            }
        }
    }

    /// Start the controller's next op if it is idle.
    pub(super) fn kick_ctrl(&mut self, now: Nanos, c: u32, cx: &mut Cx) {
        let ci = c as usize;
        let ctl = &mut self.ctrls[ci];
        if ctl.queue.is_empty() {
            // nothing to start, and nothing to look at when it frees up
            return;
        }
        if ctl.tl.free_at > now {
            // busy: make sure it looks at its queue when it frees up (one
            // event, and only when there is work waiting)
            if !ctl.free_pending {
                ctl.free_pending = true;
                cx.wake(ctl.tl.free_at, Self::tok(EV_CTRL_FREE, c));
            }
            return;
        }
        // a write waiting in the in-queue commits first: it frees the
        // scoreboard for the next write's ring transfer (and a write never
        // waits behind a blocked read, which would deadlock buffers and
        // scoreboard); otherwise the oldest read, if the out-queue is empty
        // (with no write queued, no search: the head or nothing)
        let xi = if ctl.writes_queued > 0 {
            let xfers = &self.xfers;
            let pos = ctl
                .queue
                .iter()
                .position(|&xi| xfers[xi as usize].write)
                .expect("a write is queued");
            ctl.writes_queued -= 1;
            // (the head, most of the time: a plain pop)
            if pos == 0 {
                ctl.queue.pop_front()
            } else {
                ctl.queue.remove(pos)
            }
        } else if ctl.out_used {
            return;
        } else {
            ctl.queue.pop_front()
        }
        .expect("the queue holds it");
        self.start_op(now, c, xi, cx);
    }

    /// Controller `c`, idle, starts op `xi` (taken from its queue).
    fn start_op(&mut self, now: Nanos, c: u32, xi: u32, cx: &mut Cx) {
        let ci = c as usize;
        let x = self.xfers[xi as usize];
        let rows = self.row_div.spanned(x.offset, x.len);
        let row_ns = rows
            * if x.write {
                self.media.write_ns
            } else {
                self.media.read_ns
            };
        let stream = self.ctrl_t.ns(x.len);
        let service = row_ns + stream;
        let lat = if x.write {
            self.cfg.controller_latency_ns.write
        } else {
            self.cfg.controller_latency_ns.read
        } + (x.len
            * if x.write {
                self.cfg.controller_latency_ns_per_kib.write
            } else {
                self.cfg.controller_latency_ns_per_kib.read
            })
        .div_ceil(1024);
        self.ctrls[ci].tl.reserve(now, service);
        if !self.ctrls[ci].queue.is_empty() && !self.ctrls[ci].free_pending {
            // more work waits: look again when this op ends
            self.ctrls[ci].free_pending = true;
            cx.wake(now + service, Self::tok(EV_CTRL_FREE, c));
        }
        if x.write {
            // commit: rows are written as data streams in; done when the last
            // byte has arrived and its row has been written back
            let ready = (now + service).max(x.stream_end + row_ns);
            let mem_lat = self.cfg.memory_latency_ns.write;
            let done = ready + lat + mem_lat;
            let xm = &mut self.xfers[xi as usize];
            let media_part = service.min(ready - xm.t_mark);
            let xp = &mut self.xpath[xi as usize];
            xp.media += media_part + mem_lat;
            xp.controller += ready - xm.t_mark - media_part + lat;
            xm.t_mark = done;
            cx.wake(done, Self::tok(EV_CTRL_DONE, xi));
            self.rows_written += rows;
            self.bytes_written += x.len;
            let stripe_rows = self.stripe_rows_div;
            let first_row = self.row_div.div(x.offset);
            for row in first_row..first_row + rows {
                // rows of one controller are numbered densely
                let la = self.ctrl_div.div(stripe_rows.div(row)) * stripe_rows.divisor()
                    + stripe_rows.rem(row);
                self.wear[ci].write(la);
            }
            // the in-queue empties as the commit starts
            self.ctrls[ci].in_used = false;
            if let Some(w) = self.ctrls[ci].ring_waiters.pop_front() {
                self.ring_write(now, w, cx);
            }
        } else {
            // first bytes leave the row buffer after the pipeline, the
            // memory access and the row open; the last after the stream.
            // The memory is charged the delay it adds to the first byte;
            // the stream itself overlaps the stages downstream (see
            // `charge_read_stream`)
            let mem_first = self.cfg.memory_latency_ns.read + row_ns;
            let first = now + lat + mem_first;
            let last = first + stream;
            let xm = &mut self.xfers[xi as usize];
            let xp = &mut self.xpath[xi as usize];
            xp.controller += now - xm.t_mark + lat;
            xp.media += mem_first;
            xm.t_mark = first;
            xm.stream_end = last;
            self.rows_read += rows;
            self.bytes_read += x.len;
            self.ctrls[ci].out_used = true;
            self.ctrls[ci].pending_reads -= 1;
            cx.wake(first, Self::tok(EV_CTRL_DONE, xi));
            // a read command slot freed: the scheduler may proceed
            self.pump(now, cx);
        }
    }

    /// A transfer of `len` bytes streams over the ring, cut-through behind
    /// an upstream whose last byte arrives at `upstream_end`. The stream is
    /// paced by the link, which is slower than the ring, so it needs only
    /// part of the ring's bandwidth: concurrent streams share the ring as
    /// long as its total work fits (the ring's backlog is absorbed within
    /// the stream's own duration). `dir`: the link direction pacing it.
    /// Returns (first byte out, last byte out).
    fn ring_stream(
        &mut self,
        now: Nanos,
        len: u64,
        upstream_end: Nanos,
        lat: Nanos,
        dir: Dir,
    ) -> (Nanos, Nanos) {
        let dur = self.ring_t.ns(len);
        let window = self.link.xfer_ns(dir, len).max(dur);
        let backlog = self.ring.free_at.saturating_sub(now);
        let start = self.ring.reserve(now, dur);
        let first = now + backlog.saturating_sub(window - dur) + lat;
        let last = (start + dur).max(upstream_end).max(first - lat + dur) + lat;
        (first, last)
    }

    /// Write data (arriving in its buffer) moves over the ring into the
    /// controller's in-queue.
    pub(super) fn ring_write(&mut self, now: Nanos, xi: u32, cx: &mut Cx) {
        let x = self.xfers[xi as usize];
        self.ctrls[x.ctrl as usize].in_used = true;
        let (first, last) = self.ring_stream(
            now,
            x.len,
            x.stream_end,
            self.cfg.ring_latency_ns.write,
            Dir::ToDevice,
        );
        let xm = &mut self.xfers[xi as usize];
        self.xpath[xi as usize].interconnect += last - xm.t_mark;
        xm.t_mark = last;
        xm.stream_end = last;
        cx.wake(first, Self::tok(EV_RING_W, xi));
        cx.wake(last, Self::tok(EV_BUF_FREE, xi));
    }

    /// Read data leaves the controller's out-queue over the ring into a
    /// buffer and on over the device-to-host link: the ring drains the
    /// out-queue from now, and the DMA follows the first bytes into the
    /// buffer (cut-through).
    fn ring_read(&mut self, now: Nanos, xi: u32, cx: &mut Cx) {
        self.buffers_free -= 1;
        self.reads_before_buffer -= 1;
        let x = self.xfers[xi as usize];
        let (first, last_r) = self.ring_stream(
            now,
            x.len,
            x.stream_end,
            self.cfg.ring_latency_ns.read,
            Dir::ToHost,
        );
        // the out-queue empties as the ring drains it
        self.ctrls[x.ctrl as usize].out_used = false;
        let (_, end) = self.link.move_to_host(first, x.len);
        let last = end.max(last_r) + self.link.latency_ns(Dir::ToHost);
        self.charge_read_stream(now, xi, first, end, last_r);
        let xm = &mut self.xfers[xi as usize];
        xm.t_mark = last;
        xm.t_sched = now; // buffer held from now
        cx.wake(last, Self::tok(EV_XFER_DONE, xi));
        self.kick_ctrl(now, x.ctrl, cx);
    }

    /// The critical path of a read transfer from its first byte out of the
    /// memory (`t_mark`) to its last byte in the host, cut-through: each
    /// stage is charged the delay it adds to the first byte (the wait for
    /// a buffer to the device queue, the ring's latency and backlog to the
    /// interconnect) and the link its own transfer, its queue and the
    /// DMA's fixed latency; what the stream waits beyond that for a slower
    /// stage upstream goes to that stage (the memory's stream or the
    /// ring's). `ring_first`: first byte off the ring; `end`: the link's
    /// transfer's last byte; `last_r`: last byte off the ring.
    fn charge_read_stream(
        &mut self,
        now: Nanos,
        xi: u32,
        ring_first: Nanos,
        end: Nanos,
        last_r: Nanos,
    ) {
        let x = self.xfers[xi as usize];
        let lat_r = self.cfg.ring_latency_ns.read;
        let xp = &mut self.xpath[xi as usize];
        xp.queue += now.saturating_sub(x.t_mark);
        xp.interconnect += ring_first - now;
        // the link's queue and transfer, and the DMA's fixed part
        xp.link += end - ring_first + self.link.latency_ns(Dir::ToHost);
        let behind = last_r.saturating_sub(end);
        if behind > 0 {
            if x.stream_end + lat_r >= last_r {
                xp.media += behind;
            } else {
                xp.interconnect += behind;
            }
        }
    }

    pub(super) fn release_buffer(
        &mut self,
        now: Nanos,
        held_since: Nanos,
        write: bool,
        cx: &mut Cx,
    ) {
        self.buffers_free += 1;
        self.buffer_ns += now - held_since;
        self.buffer_hold[write as usize] += now - held_since;
        self.buffer_uses[write as usize] += 1;
        self.grant_buffers(now, cx);
    }

    /// Give free buffers out. With one queue, transfers get buffers in the
    /// order the scheduler issued them, so reads already at a controller
    /// (issued earlier) come before the queue's next write. With read and
    /// write queues (+2Q) the grants alternate between the directions, which
    /// is what keeps both link directions busy.
    pub(super) fn grant_buffers(&mut self, now: Nanos, cx: &mut Cx) {
        while self.buffers_free > 0 {
            // a waiting read gets the buffer unless a write is ready and
            // the last grant went to a read (whether a write is ready is
            // looked at only then)
            let to_read = !self.buffer_waiters.is_empty()
                && (!self.last_grant_read
                    || !self.queues[1].front().is_some_and(|&ri| self.can_start(ri)));
            if to_read {
                let xi = self.buffer_waiters.pop_front().expect("checked non-empty");
                self.last_grant_read = true;
                self.ring_read(now, xi, cx);
            } else {
                break;
            }
        }
        self.pump(now, cx);
    }

    /// [`Self::grant_buffers`] for read `xi` arriving with no other read
    /// waiting: if it would take a free buffer at once, it takes it here
    /// (no trip through the waiters' queue) and the scheduler runs, as
    /// there; false, having done nothing, otherwise.
    pub(super) fn grant_now(&mut self, now: Nanos, xi: u32, cx: &mut Cx) -> bool {
        if self.buffers_free == 0
            || !self.buffer_waiters.is_empty()
            || (self.last_grant_read
                && self.queues[1].front().is_some_and(|&ri| self.can_start(ri)))
        {
            return false;
        }
        #[cfg(test)]
        {
            self.taken[1] += 1;
        }
        self.last_grant_read = true;
        self.ring_read(now, xi, cx);
        // (no read waits now: the grant loop would end here)
        self.pump(now, cx);
        true
    }

    pub(super) fn xfer_done(&mut self, now: Nanos, xi: u32, cx: &mut Cx) {
        let x = self.xfers[xi as usize];
        self.free_xfers.push(xi);
        let r = &mut self.reqs[x.req as usize];
        r.pending -= 1;
        if r.pending == 0 && r.done_all_issued {
            // the last transfer to finish defines the critical path
            self.finish_req(now, x.req, Some(xi), cx);
        }
    }
}
