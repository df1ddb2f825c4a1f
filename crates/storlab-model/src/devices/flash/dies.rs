//! The drive's dies at work: starting a die's next batch (reads first,
//! then programs, collection and erases; the channel transfers, the array
//! times, the program budget per channel) and finishing its operations.

use crate::breakdown::Component;
use crate::device::{Cx, Nanos};

use super::config::DieOrder;
use super::ftl::types::{NandKind, NONE};
use super::nand::{take_batch, FOp, WOp};
use super::ssd::{Ssd, EV_DIE, READY};

/// In an `EV_DIE` token's die index: the reads served during a
/// suspension are done (die counts stay far below 2^31).
const SUSPENDED: u32 = 1 << 31;

impl Ssd {
    /// The batch form of write-queue op `o` of die `die`, `done_base` the
    /// oldest outstanding host program (the op is not done, so its
    /// program order is at most 2^32 past it).
    #[inline]
    pub(super) fn wop_op(o: WOp, die: u32, done_base: u64) -> FOp {
        FOp {
            kind: o.kind(),
            id: NONE,
            die,
            plane_bit: 1 << o.plane,
            block: o.block,
            page: o.page as u32,
            units: o.units,
            lpn0: NONE,
            req: NONE,
            background: o.flags & WOp::BACKGROUND != 0,
            prefetch: false,
            seq: if o.flags & !WOp::SLC == WOp::kind_bits(NandKind::Program) {
                done_base + o.seq.wrapping_sub(done_base as u32) as u64
            } else {
                0
            },
            // only a host read's breakdown reads it; this queue has none
            behind_gc: false,
            map: o.flags & WOp::MAP != 0,
            rmw: false,
            slc: o.flags & WOp::SLC != 0,
        }
    }

    /// Start the die's next operation(s) if it is idle.
    pub(super) fn start_die(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let di = d as usize;
        if self.dies[di].busy {
            if self.cfg.nand.suspend {
                self.suspend_for_reads(now, d, cx);
            }
            return;
        }
        let from_reads = self.read_next(di);
        if !from_reads && self.program_blocked(di) {
            return;
        }
        let mut cur = std::mem::take(&mut self.dies[di].cur);
        let multiplane = self.cfg.nand.multiplane;
        let die = &mut self.dies[di];
        let taken = if from_reads {
            take_batch(
                &mut die.reads,
                None,
                &mut cur,
                multiplane,
                self.ppd,
                false,
                self.cfg.nand.multiplane_same_page,
                |o| o,
            )
        } else {
            let done_base = self.done_base;
            take_batch(
                &mut die.writes,
                Some(&mut die.writes_same),
                &mut cur,
                multiplane,
                self.ppd,
                true,
                false,
                |o| Self::wop_op(o, d, done_base),
            )
        };
        if !taken {
            self.dies[di].cur = cur;
            return;
        }
        if !from_reads {
            self.dies[di].w_taken += cur.len() as u64;
            self.writes_queued -= cur.len() as u64;
        }
        let n = &self.cfg.nand;
        let ch = self.dies[di].channel as usize;
        let t0 = now + n.op_overhead_ns;
        let kind = cur[0].kind;
        let (end, media_end) = match kind {
            NandKind::Read => {
                // the planes read together; a page that needs retries
                // re-reads (array read and transfer to the controller's
                // ECC) before its data can leave
                let (t_r, end) = self.read_batch(t0, &cur, ch);
                (end, t_r)
            }
            NandKind::Program => {
                let mut tp = 0;
                for o in &cur {
                    let typ = match (&n.slc_cache, o.slc) {
                        (Some(c), true) => c.program_ns,
                        _ => n.program_ns[self.types_div.rem(o.page) as usize],
                    };
                    tp = tp.max(self.spread.program(typ));
                }
                let mut t = t0;
                for _ in &cur {
                    let dur = self.xfer_page_ns;
                    let s = self.channels[ch].reserve(t, dur);
                    t = s + dur;
                }
                let end = t + tp;
                if self.cfg.nand.programs_per_channel > 0 {
                    self.programming[ch] += 1;
                }
                (end, end)
            }
            NandKind::Erase => {
                let end = t0 + n.erase_ns;
                (end, end)
            }
        };
        let die = &mut self.dies[di];
        die.cur = cur;
        die.start = now;
        die.media_end = media_end;
        self.busy_dies += u32::from(!die.busy);
        die.busy = true;
        die.busy_ns += end - now;
        die.end = end;
        cx.wake(end, Self::tok(EV_DIE, d));
    }

    /// Whether idle die `di` takes its next batch from its read queue:
    /// reads first, or (`ssd.nand.die_order = "arrival"`) only when every
    /// write-queue op queued before the oldest read has been taken.
    #[inline]
    fn read_next(&self, di: usize) -> bool {
        let die = &self.dies[di];
        match die.reads.front() {
            None => false,
            Some(r) => {
                self.cfg.nand.die_order == DieOrder::ReadsFirst
                    || die.writes.is_empty()
                    || r.seq <= die.w_taken
            }
        }
    }

    /// The read time of batch `cur` from `t0`: (array end with retries,
    /// end of the last transfer over channel `ch`).
    fn read_batch(&mut self, t0: Nanos, cur: &[FOp], ch: usize) -> (Nanos, Nanos) {
        let n = &self.cfg.nand;
        let mut tr = 0;
        for o in cur {
            let one = n.read_ns[self.types_div.rem(o.page) as usize];
            let k = self.spread.retries() as u64;
            let t = if k == 0 {
                one
            } else {
                self.stats.read_retries += k;
                one + k * (one + self.xfer_units(o.units))
            };
            tr = tr.max(t);
        }
        let t_r = t0 + tr;
        let mut end = t_r;
        for o in cur {
            let dur = self.xfer_units(o.units);
            let s = self.channels[ch].reserve(t_r, dur);
            end = end.max(s + dur);
        }
        (t_r, end)
    }

    /// `ssd.nand.suspend`: die `d` is busy; if with a program or an erase
    /// still in its array phase, and host reads wait and none is being
    /// served yet, suspend it: read them now and push its end out by
    /// their time and the resume cost.
    fn suspend_for_reads(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let di = d as usize;
        let die = &self.dies[di];
        if !self.read_next(di)
            || !die.sus.is_empty()
            || die.cur.first().is_none_or(|o| o.kind == NandKind::Read)
            || now >= die.media_end
        {
            return;
        }
        let mut sus = std::mem::take(&mut self.dies[di].sus);
        let multiplane = self.cfg.nand.multiplane;
        let ppd = self.ppd;
        let die = &mut self.dies[di];
        if !take_batch(
            &mut die.reads,
            None,
            &mut sus,
            multiplane,
            ppd,
            false,
            self.cfg.nand.multiplane_same_page,
            |o| o,
        ) {
            self.dies[di].sus = sus;
            return;
        }
        let ch = self.dies[di].channel as usize;
        let t0 = now + self.cfg.nand.op_overhead_ns;
        let (t_r, end) = self.read_batch(t0, &sus, ch);
        let delta = end - now + self.cfg.nand.suspend_resume_ns;
        self.stats.suspends += 1;
        let die = &mut self.dies[di];
        die.sus = sus;
        die.sus_start = now;
        die.sus_media_end = t_r;
        die.media_end += delta;
        die.end += delta;
        die.busy_ns += delta;
        cx.wake(end, Self::tok(EV_DIE, d | SUSPENDED));
        cx.wake(die.end, Self::tok(EV_DIE, d));
    }

    /// The reads served during a suspension are done.
    pub(super) fn suspended_reads_done(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let di = d as usize;
        let sus = std::mem::take(&mut self.dies[di].sus);
        // the reads' critical path is their own batch's
        let die = &mut self.dies[di];
        let saved = (die.start, die.media_end);
        (die.start, die.media_end) = (die.sus_start, die.sus_media_end);
        for &o in &sus {
            self.finish_op(now, o, cx);
        }
        let die = &mut self.dies[di];
        (die.start, die.media_end) = saved;
        let mut sus = sus;
        sus.clear();
        self.dies[di].sus = sus;
        // more reads may have queued meanwhile
        self.suspend_for_reads(now, d, cx);
    }

    pub(super) fn die_done(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let di = d as usize;
        if d & SUSPENDED != 0 {
            self.suspended_reads_done(now, d & !SUSPENDED, cx);
            return;
        }
        if now < self.dies[di].end {
            // a suspended batch's first wake-up: it ends later
            return;
        }
        let cur = std::mem::take(&mut self.dies[di].cur);
        let programmed = cur[0].kind == NandKind::Program;
        for &o in &cur {
            self.finish_op(now, o, cx);
        }
        let mut cur = cur;
        cur.clear();
        let die = &mut self.dies[di];
        die.cur = cur;
        self.busy_dies -= u32::from(die.busy);
        die.busy = false;
        if programmed && self.cfg.nand.programs_per_channel > 0 {
            self.program_slot_freed(now, d, cx);
        } else {
            self.start_die(now, d, cx);
        }
    }

    /// With `programs_per_channel` set: whether die `di`'s next write-queue
    /// operation is a program its channel has no room for. Off: never.
    #[inline]
    fn program_blocked(&self, di: usize) -> bool {
        let limit = self.cfg.nand.programs_per_channel;
        limit > 0
            && self.dies[di].writes.front().map(|o| o.kind()) == Some(NandKind::Program)
            && self.programming[self.dies[di].channel as usize] >= limit
    }

    /// A program on die `d` ended: release its channel's slot and start
    /// the channel's idle dies in turn from the next one, `d` itself last
    /// (round robin, so no die starves), each of which may take the slot.
    fn program_slot_freed(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let n = self.cfg.nand.dies_per_channel;
        let ch = self.dies[d as usize].channel;
        self.programming[ch as usize] -= 1;
        let first = ch * n;
        // `d` is idle now, so it is started (last) by this loop
        for k in 1..=n {
            let e = first + (d - first + k) % n;
            if !self.dies[e as usize].busy {
                self.start_die(now, e, cx);
            }
        }
    }

    fn finish_op(&mut self, now: Nanos, o: FOp, cx: &mut Cx) {
        if o.map {
            self.map_op_done(now, o, cx);
            return;
        }
        if o.background {
            self.dies[o.die as usize].background -= 1;
        }
        match o.kind {
            NandKind::Read if o.background => self.stats.gc_reads += 1,
            NandKind::Read if o.rmw => self.stats.rmw_reads += 1,
            NandKind::Read if o.prefetch => {
                self.stats.nand_reads += 1;
                for l in o.lpn0..o.lpn0 + o.units {
                    if self.pf.get(&l) == Some(&o.id) {
                        self.pf.insert(l, READY);
                    }
                }
                let mut i = 0;
                while i < self.pf_waiters.len() {
                    if self.pf_waiters[i].0 == o.id {
                        let (_, ri) = self.pf_waiters.swap_remove(i);
                        self.deliver(now, ri, &o, 1, cx);
                    } else {
                        i += 1;
                    }
                }
            }
            NandKind::Read => {
                self.stats.nand_reads += 1;
                self.deliver(now, o.req, &o, o.units, cx);
            }
            NandKind::Program => {
                if o.background {
                    self.stats.gc_programs += 1;
                    return;
                }
                self.stats.nand_programs += 1;
                let page_g = o.block * self.ftl.geometry().pages_per_block + o.page;
                if let Some(n) = self.inbuf.remove(&page_g) {
                    self.buf_used -= n as u64;
                }
                let k = (o.seq - self.done_base) as usize;
                self.done_window[k] = true;
                while self.done_window.front() == Some(&true) {
                    self.done_window.pop_front();
                    self.done_base += 1;
                }
                while let Some(&(target, ri)) = self.flush_wait.front() {
                    if target > self.done_base {
                        break;
                    }
                    self.flush_wait.pop_front();
                    let rm = &mut self.reqs[ri as usize];
                    let waited = (now - rm.arrival).saturating_sub(rm.bd.total());
                    rm.bd.add(Component::Media, waited);
                    self.finish(now, ri, cx);
                }
                // buffer space freed: admit waiting writes
                while let Some(&ri) = self.buf_wait.front() {
                    let units = self.reqs[ri as usize].units as u64;
                    if self.buf_used != 0 && self.buf_used + units > self.buf_cap {
                        break;
                    }
                    self.buf_wait.pop_front();
                    self.buf_used += units;
                    let behind_gc = self.dies.iter().any(|d| d.background > 0);
                    self.reqs[ri as usize].background_wait = behind_gc;
                    self.start_write(now, ri, cx);
                }
                self.unjam(now, cx);
            }
            NandKind::Erase => self.stats.erases += 1,
        }
    }
}
