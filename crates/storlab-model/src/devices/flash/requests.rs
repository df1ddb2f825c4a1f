//! The drive's request path: admission under tags, writes into the DRAM
//! buffer and through the FTL, trims and flushes, and reads served from
//! the buffer, read-ahead or the dies, each unit's data delivered to the
//! host.

use crate::breakdown::Component;
use crate::device::{Cx, Nanos, Op};
use crate::link::duplex::Dir;

use super::ftl::types::{Mapping, NandKind, NONE};
use super::nand::{FOp, WOp};
use super::ssd::{Crit, Ssd, EV_RCMD, EV_WREADY, READY};

impl Ssd {
    pub(super) fn admit(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        self.reqs[ri as usize]
            .bd
            .add(Component::DeviceQueue, now - r.arrival);
        match r.op.expect("live request") {
            Op::Read => {
                let dur = self.cfg.command_ns.read + self.per_byte(self.cfg.unit_ns.read, r.bytes);
                let s = self.ctrl.reserve(now, dur);
                let rm = &mut self.reqs[ri as usize];
                rm.bd.add(Component::DeviceQueue, s - now);
                rm.bd.add(Component::Controller, dur);
                rm.t_cmd = s + dur;
                cx.wake(s + dur, Self::tok(EV_RCMD, ri));
            }
            Op::Write => {
                if r.durable {
                    self.start_write(now, ri, cx);
                } else if self.buf_used == 0 || self.buf_used + r.units as u64 <= self.buf_cap {
                    self.buf_used += r.units as u64;
                    self.start_write(now, ri, cx);
                } else {
                    self.stats.buffer_waits += 1;
                    self.buf_wait.push_back(ri);
                    self.unjam(now, cx);
                }
            }
            Op::Trim => {
                if self.ftl.mapping() == Mapping::Page {
                    for lpn in r.lpn0..r.lpn0 + r.units {
                        self.ftl.trim(lpn);
                        self.pf.remove(&lpn);
                    }
                }
                let dur = self.cfg.command_ns.write;
                let s = self.ctrl.reserve(now, dur);
                let lat = self.link.latency_ns(Dir::ToDevice);
                let at = s + dur + lat;
                let rm = &mut self.reqs[ri as usize];
                rm.bd.add(Component::DeviceQueue, s - now);
                rm.bd.add(Component::Controller, dur);
                rm.bd.add(Component::Link, lat);
                self.finish(at, ri, cx);
            }
            Op::Flush => {
                self.ftl.pad_open_pages();
                self.enqueue_ftl_ops(now, cx);
                let target = self.prog_seq;
                if self.done_base >= target {
                    let at = now + self.cfg.command_ns.write;
                    self.reqs[ri as usize]
                        .bd
                        .add(Component::Controller, self.cfg.command_ns.write);
                    self.finish(at, ri, cx);
                } else {
                    self.flush_wait.push_back((target, ri));
                }
            }
        }
    }

    /// The controller's data-path time for `bytes` at `per_unit` ns a
    /// mapping unit (`unit_ns`): per byte moved, so a 512 B request pays an
    /// eighth of a 4 KB unit's (the rate `unit_ns` is calibrated to is a
    /// sequential bandwidth: bytes through the controller, not mapping
    /// entries; the command and its lookups are `command_ns`).
    #[inline]
    fn per_byte(&self, per_unit: u64, bytes: u64) -> u64 {
        if per_unit == 0 {
            0
        } else {
            (bytes * per_unit).div_ceil(self.unit)
        }
    }

    /// Data in over the link, then the controller; `EV_WREADY` when done.
    pub(super) fn start_write(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        // its mapping entry is needed when the data is in (a write that
        // waited for buffer space may have lost the one fetched at submit)
        self.ftl.prefetch(r.lpn0);
        self.wpipe.push_back(r.lpn0);
        let (_, in_end) = self.link.move_to_device(now, r.bytes);
        let map_ns = if self.map.is_some() {
            self.map_write(now, r.lpn0, r.units, cx)
        } else {
            0
        };
        let rmw_ns = self.rmw(now, &r, cx);
        let map_ns = map_ns + rmw_ns;
        let work = self.cfg.command_ns.write + self.per_byte(self.cfg.unit_ns.write, r.bytes);
        // the reads' time: held on the controller by the one FTL thread, or
        // waited for by this write alone while the firmware serves others
        // (`concurrent_firmware`), the controller's work starting once both
        // the data and the reads are in
        let (hold, ready) = if self.cfg.concurrent_firmware {
            (0, in_end.max(now + map_ns))
        } else {
            (map_ns, in_end)
        };
        let dur = work + hold;
        let s = self.ctrl.reserve(ready, dur);
        let rm = &mut self.reqs[ri as usize];
        let waited = (now - rm.arrival).saturating_sub(rm.bd.total());
        if waited > 0 {
            let c = if rm.background_wait {
                Component::Background
            } else {
                Component::DeviceQueue
            };
            rm.bd.add(c, waited);
        }
        rm.bd.add(Component::Link, in_end - now);
        rm.bd.add(Component::DeviceQueue, s - ready);
        rm.bd.add(Component::Controller, work);
        // the reads' time on the critical path: all of it when held, the
        // part beyond the data's arrival when waited for alongside it
        rm.bd.add(Component::Media, hold + (ready - in_end));
        cx.wake(s + dur, Self::tok(EV_WREADY, ri));
    }

    /// A write that covers only part of a mapping unit (at either end)
    /// merges its bytes into the unit's old data, which the controller
    /// reads first unless the unit is unwritten or still in the write
    /// buffer (a read-modify-write: the mapping table names whole units,
    /// so a unit is rewritten whole). The read is queued on the old page's
    /// die like any NAND read (occupying die and channel) and counted in
    /// `rmw_reads`; the write's controller work waits for its array read
    /// and transfer, the time returned (as `map_write`'s misses).
    fn rmw(&mut self, now: Nanos, r: &super::ssd::Req, cx: &mut Cx) -> u64 {
        if r.units == 0 {
            return 0;
        }
        let unit = self.unit;
        let head = r.skip != 0 || r.bytes < unit;
        let tail = !(r.skip as u64 + r.bytes).is_multiple_of(unit);
        let last = r.lpn0 + r.units - 1;
        let mut ns = 0;
        for (partial, lpn) in [(head, r.lpn0), (tail && last != r.lpn0, last)] {
            if !partial {
                continue;
            }
            let Some(ppa) = self.ftl.lookup(lpn) else {
                continue;
            };
            if !self.inbuf.is_empty() && self.inbuf.contains_key(&self.upp_div.div(ppa)) {
                continue;
            }
            let page = self.ftl.page_of(ppa);
            let n = &self.cfg.nand;
            ns += n.op_overhead_ns
                + n.read_ns[self.types_div.rem(page) as usize]
                + self.xfer_units(1);
            self.queue_rmw_read(now, ppa, lpn, cx);
        }
        ns
    }

    /// When writes wait for buffer space that no queued program will free
    /// (every buffered unit sits in a partly filled page), program those
    /// pages now.
    pub(super) fn unjam(&mut self, now: Nanos, cx: &mut Cx) {
        if !self.buf_wait.is_empty() && self.prog_seq == self.done_base {
            self.ftl.pad_open_pages();
            self.enqueue_ftl_ops(now, cx);
        }
    }

    pub(super) fn write_ready(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        if let Some(z) = &self.zoned {
            // a zone's data goes to its own blocks (a write keeps to one zone)
            self.ftl.set_stream(z.stream_of(r.lpn0));
        }
        if let Some(f) = &mut self.fdp {
            // a handle's data goes to its own reclaim units
            self.ftl.set_stream(u32::from(r.handle));
            f.written(r.handle, r.units);
        }
        for lpn in r.lpn0..r.lpn0 + r.units {
            let ppa = self.ftl.write(lpn);
            if !r.durable {
                *self.inbuf.entry(self.upp_div.div(ppa)).or_insert(0) += 1;
            }
            if !self.pf.is_empty() {
                self.pf.remove(&lpn);
            }
        }
        // writes are ready in the order they started (one controller
        // timeline): the next one's mapping entry has had this write's
        // work (and any collection it caused) to arrive, so fetch the
        // reverse entry and block it will invalidate (hints only; asked
        // before this write's work, the entry, fetched when the next
        // write started just before, was often still on its way)
        self.wpipe.pop_front();
        if let Some(&next) = self.wpipe.front() {
            self.ftl.prefetch_overwrite(next);
        }
        if r.durable {
            self.ftl.pad_open_pages();
            self.enqueue_ftl_ops(now, cx);
            let target = self.prog_seq;
            if self.done_base >= target {
                self.finish(now, ri, cx);
            } else {
                self.flush_wait.push_back((target, ri));
            }
        } else {
            self.enqueue_ftl_ops(now, cx);
            self.finish(now, ri, cx);
        }
    }

    /// Queue the NAND work the FTL produced.
    fn enqueue_ftl_ops(&mut self, now: Nanos, cx: &mut Cx) {
        if self.ftl.ops.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.ftl.ops);
        let mut touched: u64 = 0;
        let mut touched_many = false;
        // a collection's ops come in runs on one plane (its victim's
        // reads, its destination's programs, the erase): divide once per
        // run (`lo` the plane's first block)
        let bpp = self.bpp_div.d();
        let (mut lo, mut die, mut pid) = (NONE, 0, 0);
        for o in &ops {
            if o.block < lo || o.block - lo >= bpp {
                let plane = self.bpp_div.div(o.block);
                lo = plane * bpp;
                die = self.ppd_div.div(plane);
                pid = self.ppd_div.rem(plane) as u8;
            }
            let mut slc = 0;
            let seq = if o.kind == NandKind::Program && !o.background {
                if let Some(c) = &mut self.slc {
                    let free =
                        (self.ftl.logical_units() as u64).saturating_sub(self.ftl.mapped_units());
                    if c.admit(o.units as u64, free) {
                        slc = WOp::SLC;
                    }
                }
                let s = self.prog_seq;
                self.prog_seq += 1;
                self.done_window.push_back(false);
                s
            } else {
                0
            };
            debug_assert!(o.page <= u16::MAX as u32);
            let op = WOp {
                block: o.block,
                units: o.units,
                seq: seq as u32,
                page: o.page as u16,
                plane: pid,
                flags: WOp::kind_bits(o.kind)
                    | if o.background { WOp::BACKGROUND } else { 0 }
                    | slc,
            };
            let d = &mut self.dies[die as usize];
            if o.background {
                d.background += 1;
            }
            d.w_pushed += 1;
            d.writes.push_back(op);
            self.writes_queued += 1;
            if die < 64 {
                touched |= 1 << die;
            } else {
                touched_many = true;
            }
        }
        let mut ops = ops;
        ops.clear();
        self.ftl.ops = ops;
        if touched_many {
            for d in 0..self.dies.len() as u32 {
                self.start_die(now, d, cx);
            }
        } else {
            while touched != 0 {
                let d = touched.trailing_zeros();
                touched &= touched - 1;
                self.start_die(now, d, cx);
            }
        }
    }

    /// A read's command is parsed: serve each unit from the buffer,
    /// read-ahead or its die.
    pub(super) fn read_cmd(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        if self.map.is_some() && self.map_read(now, ri, cx) {
            return;
        }
        self.read_data(now, ri, cx);
    }

    /// The read's mapping entries are at hand: serve each unit.
    pub(super) fn read_data(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        let last = r.lpn0 + r.units;
        // bytes served from the buffer, read-ahead or unmapped units; and a
        // zoned read's bytes past its zone's capacity, which hold nothing
        // but still cross the link: the drive returns zeros for them, as
        // for any unwritten block (see zones.rs), so a 4 KB read there
        // moves 4 KB like any other
        let mut hit_bytes = if self.zoned.is_some() {
            r.bytes - self.bytes_in(&r, r.lpn0, r.units)
        } else {
            0
        };
        let mut pending = 0u32;
        let mut lpn = r.lpn0;
        self.stats.host_read_units += r.units as u64;
        while lpn < last {
            let Some(ppa) = self.ftl.lookup(lpn) else {
                self.stats.unmapped_reads += 1;
                hit_bytes += self.bytes_in(&r, lpn, 1);
                lpn += 1;
                continue;
            };
            let page_g = self.upp_div.div(ppa);
            if !self.inbuf.is_empty() && self.inbuf.contains_key(&page_g) {
                self.stats.buffer_hits += 1;
                hit_bytes += self.bytes_in(&r, lpn, 1);
                lpn += 1;
                continue;
            }
            if !self.pf.is_empty() {
                if let Some(&st) = self.pf.get(&lpn) {
                    self.stats.prefetch_hits += 1;
                    if st == READY {
                        self.pf.remove(&lpn);
                        hit_bytes += self.bytes_in(&r, lpn, 1);
                    } else {
                        self.pf_waiters.push((st, ri));
                        pending += 1;
                    }
                    lpn += 1;
                    continue;
                }
            }
            // consecutive units in the same physical page form one read
            let mut n = 1;
            while lpn + n < last
                && self.upp_div.rem(ppa + n) != 0
                && self.ftl.lookup(lpn + n) == Some(ppa + n)
                && (self.pf.is_empty() || !self.pf.contains_key(&(lpn + n)))
            {
                n += 1;
            }
            self.queue_read(now, ppa, n, lpn, ri, false, cx);
            pending += 1;
            lpn += n;
        }
        let rm = &mut self.reqs[ri as usize];
        rm.pending = pending;
        rm.data_done = now;
        if hit_bytes > 0 {
            let (_, e) = self.link.move_to_host(now, hit_bytes);
            let rm = &mut self.reqs[ri as usize];
            rm.data_done = e;
            rm.crit = Crit {
                link: e - now,
                ..Crit::default()
            };
        }
        // read-ahead when this read continues the previous one
        let ra = self.cfg.read_ahead_units;
        if ra > 0 && r.lpn0 == self.last_read_end {
            self.prefetch(now, last, ra, cx);
        }
        self.last_read_end = last;
        if pending == 0 {
            self.finish_read(ri, cx);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_read(
        &mut self,
        now: Nanos,
        ppa: u32,
        units: u32,
        lpn0: u32,
        req: u32,
        prefetch: bool,
        cx: &mut Cx,
    ) -> u32 {
        let block = self.ftl.block_of(ppa);
        let plane = self.bpp_div.div(block);
        let die = self.ppd_div.div(plane);
        let id = if prefetch {
            let id = self.next_pf_id;
            // READY (u32::MAX) names no op
            self.next_pf_id = if id + 1 == READY { 0 } else { id + 1 };
            id
        } else {
            NONE
        };
        let op = FOp {
            kind: NandKind::Read,
            id,
            die,
            plane_bit: 1 << self.ppd_div.rem(plane),
            block,
            page: self.ftl.page_of(ppa),
            units,
            lpn0,
            req,
            background: false,
            prefetch,
            seq: 0,
            behind_gc: self.dies[die as usize].background > 0,
            map: false,
            rmw: false,
            slc: false,
        };
        let d = &mut self.dies[die as usize];
        d.reads.push_back(FOp {
            seq: d.w_pushed,
            ..op
        });
        self.start_die(now, die, cx);
        id
    }

    /// Queue the read of a read-modify-write's old unit at `ppa`.
    fn queue_rmw_read(&mut self, now: Nanos, ppa: u32, lpn: u32, cx: &mut Cx) {
        let block = self.ftl.block_of(ppa);
        let plane = self.bpp_div.div(block);
        let die = self.ppd_div.div(plane);
        let op = FOp {
            kind: NandKind::Read,
            id: NONE,
            die,
            plane_bit: 1 << self.ppd_div.rem(plane),
            block,
            page: self.ftl.page_of(ppa),
            units: 1,
            lpn0: lpn,
            req: NONE,
            background: false,
            prefetch: false,
            seq: 0,
            behind_gc: false,
            map: false,
            rmw: true,
            slc: false,
        };
        let d = &mut self.dies[die as usize];
        d.reads.push_back(FOp {
            seq: d.w_pushed,
            ..op
        });
        self.start_die(now, die, cx);
    }

    /// Read `n` units after `from` into the buffer ahead of demand.
    fn prefetch(&mut self, now: Nanos, from: u32, n: u32, cx: &mut Cx) {
        let lpns = self.ftl.logical_units();
        let mut lpn = from.max(self.pf_end);
        let end = from.saturating_add(n).min(lpns);
        while lpn < end {
            let Some(ppa) = self.ftl.lookup(lpn) else {
                lpn += 1;
                continue;
            };
            if self.pf.contains_key(&lpn) || self.inbuf.contains_key(&(ppa / self.upp)) {
                lpn += 1;
                continue;
            }
            let mut k = 1;
            while lpn + k < end
                && (ppa + k) % self.upp != 0
                && self.ftl.lookup(lpn + k) == Some(ppa + k)
            {
                k += 1;
            }
            let oi = self.queue_read(now, ppa, k, lpn, NONE, true, cx);
            for l in lpn..lpn + k {
                self.pf.insert(l, oi);
            }
            self.stats.prefetched += k as u64;
            lpn += k;
        }
        self.pf_end = end;
        // bound the read-ahead buffer: forget the oldest entries
        while self.pf.len() > 4 * n as usize {
            self.pf.pop_first();
        }
    }

    /// Data of `units` units of op `o` reached the controller for request
    /// `ri`: move it to the host.
    pub(super) fn deliver(&mut self, now: Nanos, ri: u32, o: &FOp, units: u32, cx: &mut Cx) {
        // the request's own bytes of those units cross the link (a
        // read-ahead op's unit: at most one unit of the request)
        let r = &self.reqs[ri as usize];
        let bytes = if o.prefetch {
            (units as u64 * self.unit).min(r.bytes)
        } else {
            self.bytes_in(r, o.lpn0, o.units)
        };
        let (_, e) = self.link.move_to_host(now, bytes);
        let rm = &mut self.reqs[ri as usize];
        if e >= rm.data_done {
            rm.data_done = e;
            // the critical path from the command's end: die queue, array,
            // channel, link (clamped: read-ahead ops may predate the command)
            let t = rm.t_cmd;
            // `o` is in the batch its die is finishing
            let die = &self.dies[o.die as usize];
            let start = die.start.max(t);
            let media_end = die.media_end.max(start);
            let end = now.max(media_end);
            rm.crit = Crit {
                queue: start - t,
                behind_gc: o.behind_gc,
                media: media_end - start,
                interconnect: end - media_end,
                link: e - end,
            };
        }
        rm.pending -= 1;
        if rm.pending == 0 {
            self.finish_read(ri, cx);
        }
    }
}

impl Ssd {
    /// A request to a zoned drive: its logical units, or `None` when the
    /// drive refused it (completed at once with its status after the
    /// controller's command time). A reset closes its zones' streams.
    pub(super) fn zoned_request(
        &mut self,
        now: crate::Nanos,
        req: &crate::DevRequest,
        cx: &mut crate::Cx,
    ) -> Option<(u32, u32)> {
        let zn = self.zoned.as_mut().expect("a zoned drive");
        match zn.request(req) {
            Ok(r) => {
                for z in r.reset {
                    self.ftl.close_stream(z as u32);
                }
                Some((r.lpn0, r.units))
            }
            Err(e) => {
                let cmd = self.cfg.command_ns.write;
                let parts = [(crate::breakdown::Component::Controller, cmd)];
                cx.done_parts(req.id, now, now + cmd, &parts);
                if let Some(c) = cx.completions.last_mut() {
                    c.status = e.status();
                }
                None
            }
        }
    }
}
