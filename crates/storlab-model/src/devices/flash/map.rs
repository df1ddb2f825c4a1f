//! The drive's cached mapping table at work: the translation pages a read
//! or write needs, their loads and write-backs queued on the dies, and a
//! read waiting for them.

use crate::breakdown::Component;
use crate::device::{Cx, Nanos};

use super::ftl::types::{NandKind, NONE};
use super::nand::{FOp, WOp};
use super::ssd::Ssd;

impl Ssd {
    /// Cached mapping table, write path: the write's entries are updated
    /// by the controller's one FTL thread, which waits while it makes room
    /// (programs an evicted dirty translation page: the directory may point
    /// at the new copy only once it is durable) and reads a missing page.
    /// Returns that synchronous time (each operation's own duration; the
    /// operations also occupy their dies).
    pub(super) fn map_write(&mut self, now: Nanos, lpn0: u32, units: u32, cx: &mut Cx) -> u64 {
        let Some(m) = self.map.as_mut() else {
            return 0;
        };
        if units == 0 {
            return 0;
        }
        let (t0, t1, fragments) = m.begin(lpn0, units, true);
        let (writebacks, loads) = self.map_touch(now, t0, t1, true, fragments, NONE, cx);
        self.map_hold_ns(writebacks, loads)
    }

    /// The FTL thread's synchronous time for a miss: each evicted dirty
    /// translation page's program, each missing page's read.
    fn map_hold_ns(&self, writebacks: u32, loads: u32) -> u64 {
        let n = &self.cfg.nand;
        let wb_ns = n.op_overhead_ns + self.xfer_page_ns + n.program_ns[0];
        let load_ns = n.op_overhead_ns + n.read_ns[0] + self.xfer_units(self.map_units);
        writebacks as u64 * wb_ns + loads as u64 * load_ns
    }

    /// Touch translation pages `t0..=t1` (written or read, `fragments` as
    /// [`MapCache::touch`] takes it) and queue the programs of the dirty
    /// pages evicted and the reads of the missing ones, the reads for
    /// request `req` (`NONE`: nobody waits on them). Returns how many of
    /// each were queued.
    #[allow(clippy::too_many_arguments)]
    fn map_touch(
        &mut self,
        now: Nanos,
        t0: u32,
        t1: u32,
        write: bool,
        fragments: bool,
        req: u32,
        cx: &mut Cx,
    ) -> (u32, u32) {
        let (mut writebacks, mut loads) = (0, 0);
        for t in t0..=t1 {
            let a = match self.map.as_mut() {
                Some(m) => m.touch(t, write, fragments),
                None => break,
            };
            if let Some(v) = a.writeback {
                writebacks += 1;
                self.queue_map_op(now, NandKind::Program, v, NONE, cx);
            }
            if let Some(t) = a.load {
                loads += 1;
                self.queue_map_op(now, NandKind::Read, t, req, cx);
            }
        }
        (writebacks, loads)
    }

    /// Cached mapping table, read path: queue the reads of the request's
    /// missing translation pages (and the write-back of dirty pages
    /// evicted for them). A read's miss is handled as a write's is: in a
    /// demand-based FTL (DFTL, Gupta et al., ASPLOS 2009) the
    /// controller's translation thread evicts a victim (writing it back if
    /// dirty) and reads the missing translation page before the lookup
    /// completes, whatever the request, so the controller is held for
    /// that time ([`Ssd::map_hold_ns`]) as for a write's miss, and the
    /// operations occupy their dies; with `concurrent_firmware` the
    /// controller serves other commands meanwhile and only the read waits
    /// (for its translation pages' loads on their dies). True when the
    /// request waits for them.
    pub(super) fn map_read(&mut self, now: Nanos, ri: u32, cx: &mut Cx) -> bool {
        let r = self.reqs[ri as usize];
        let Some(m) = self.map.as_mut() else {
            return false;
        };
        if r.units == 0 {
            return false;
        }
        let (t0, t1, _) = m.begin(r.lpn0, r.units, false);
        let (writebacks, wait) = self.map_touch(now, t0, t1, false, false, ri, cx);
        let hold = self.map_hold_ns(writebacks, wait);
        if hold > 0 && !self.cfg.concurrent_firmware {
            self.ctrl.reserve(now, hold);
        }
        self.reqs[ri as usize].map_wait = wait;
        wait > 0
    }

    /// Queue translation page `t`'s read or program on its die (pages
    /// striped over the planes, in each plane's first block, page 0: the
    /// fast page type); `req` is the read waiting for it, or `NONE`.
    fn queue_map_op(&mut self, now: Nanos, kind: NandKind, t: u32, req: u32, cx: &mut Cx) {
        let plane = t % self.ftl.geometry().planes;
        let die = self.ppd_div.div(plane);
        let op = FOp {
            kind,
            id: NONE,
            die,
            plane_bit: 1 << self.ppd_div.rem(plane),
            block: plane * self.cfg.nand.blocks_per_plane,
            page: 0,
            units: self.map_units,
            lpn0: NONE,
            req,
            background: false,
            prefetch: false,
            seq: 0,
            behind_gc: self.dies[die as usize].background > 0,
            map: true,
            rmw: false,
            slc: false,
        };
        let d = &mut self.dies[die as usize];
        if kind == NandKind::Read {
            d.reads.push_back(FOp {
                seq: d.w_pushed,
                ..op
            });
        } else {
            d.w_pushed += 1;
            self.writes_queued += 1;
            d.writes.push_back(WOp {
                block: op.block,
                units: op.units,
                seq: 0,
                page: 0,
                plane: self.ppd_div.rem(plane) as u8,
                flags: WOp::kind_bits(kind) | WOp::MAP,
            });
        }
        self.start_die(now, die, cx);
    }

    /// A translation page's operation ended; a read waiting for its last
    /// page goes on (the wait counts as media time).
    pub(super) fn map_op_done(&mut self, now: Nanos, o: FOp, cx: &mut Cx) {
        if o.kind != NandKind::Read {
            self.stats.map_programs += 1;
            return;
        }
        self.stats.map_reads += 1;
        if o.req == NONE {
            return;
        }
        let rm = &mut self.reqs[o.req as usize];
        rm.map_wait -= 1;
        if rm.map_wait == 0 {
            let w = now - rm.t_cmd;
            rm.bd.add(Component::Media, w);
            rm.t_cmd = now;
            self.read_data(now, o.req, cx);
        }
    }
}
