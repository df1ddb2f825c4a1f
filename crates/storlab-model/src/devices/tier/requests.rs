//! The block cache's request path: hits read from the cache device, misses
//! from the backing device and filled in the background, writes by mode,
//! destaging of dirty blocks, and the cache as a [`Device`].

use crate::breakdown::Component;
use crate::device::{Completion, Cx, DevRequest, Device, Nanos, Op};
use crate::report::DeviceReport;

use super::config::TierMode;
use super::flash_cache::{dev_req, FlashCache, HReq, Kind, Later, Run, Sub, BACKING, CACHE, SELF};

impl FlashCache {
    fn send(&mut self, now: Nanos, to: u64, s: Sub, req: DevRequest, cx: &mut Cx) {
        let si = crate::units::slab_insert(&mut self.subs, &mut self.sfree, s);
        let req = DevRequest {
            id: si as u64,
            ..req
        };
        if to == CACHE {
            let mut c = std::mem::take(&mut self.cx_cache);
            self.cache.submit(now, req, &mut c);
            self.cx_cache = c;
        } else {
            let mut c = std::mem::take(&mut self.cx_back);
            self.back.submit(now, req, &mut c);
            self.cx_back = c;
        }
        self.drain(now, cx);
    }

    /// A part of host request `hi`.
    fn send_part(
        &mut self,
        now: Nanos,
        hi: u32,
        to: u64,
        kind: Kind,
        req: DevRequest,
        cx: &mut Cx,
    ) {
        self.hreqs[hi as usize].pending += 1;
        self.send(now, to, Sub { kind, host: hi }, req, cx);
    }

    fn drain(&mut self, now: Nanos, cx: &mut Cx) {
        loop {
            for (t, tok) in self.cx_cache.wakeups.drain(..) {
                debug_assert!(tok < 1 << 60, "tier child token {tok:#x} too large");
                cx.wake(t, tok << 2 | CACHE);
            }
            for (t, tok) in self.cx_back.wakeups.drain(..) {
                debug_assert!(tok < 1 << 60, "tier child token {tok:#x} too large");
                cx.wake(t, tok << 2 | BACKING);
            }
            if self.cx_cache.completions.is_empty() && self.cx_back.completions.is_empty() {
                return;
            }
            let mut done = std::mem::take(&mut self.cx_cache.completions);
            done.append(&mut self.cx_back.completions);
            for c in done {
                if c.at > now {
                    let t = c.at;
                    self.at(t, Later::Sub(c), cx);
                } else {
                    self.sub_done(now, c, cx);
                }
            }
        }
    }

    fn complete(&mut self, hi: u32, cx: &mut Cx) {
        let h = self.hreqs[hi as usize];
        let sw = self.lookup(h.op) + if h.missed { self.miss(h.op) } else { 0 };
        let at = h.last_at.max(h.arrival + h.waited) + sw;
        let mut bd = h.pre;
        bd.merge(&h.bd);
        bd.add(Component::Background, h.waited);
        bd.add(Component::Driver, sw);
        cx.done_since(h.id, h.arrival, at, bd);
        self.hreqs[hi as usize].op = None;
        self.hfree.push(hi);
        self.host_inflight -= 1;
        if h.fill {
            let now = h.last_at;
            self.fill(now, h.offset, h.len, cx);
        }
    }

    /// Release the hold `submit` (or a wait) keeps on host request `hi`
    /// while it sends the parts: complete it if they are all done.
    fn close(&mut self, now: Nanos, hi: u32, cx: &mut Cx) {
        let h = &mut self.hreqs[hi as usize];
        h.pending -= 1;
        if h.pending > 0 {
            return;
        }
        if h.alloc {
            // the blocks are in: now the write itself, into the cache
            h.alloc = false;
            h.pending = 1;
            let bd = std::mem::take(&mut h.bd);
            h.pre.merge(&bd);
            h.phase_start = now;
            if self.write_wait.is_empty() && self.try_write_back(now, hi, cx) {
                self.close(now, hi, cx);
            } else {
                self.stats.write_waits += 1;
                self.write_wait.push_back(hi);
            }
            return;
        }
        self.complete(hi, cx);
    }

    /// Do `what` at `t` (a wake-up of the tier's own).
    fn at(&mut self, t: Nanos, what: Later, cx: &mut Cx) {
        let i = crate::units::slab_insert(&mut self.later, &mut self.later_free, what);
        cx.wake(t, (i as u64) << 2 | SELF);
    }

    fn lookup(&self, op: Option<Op>) -> Nanos {
        match op {
            Some(Op::Read) => self.cfg.lookup_ns.read,
            _ => self.cfg.lookup_ns.write,
        }
    }

    fn miss(&self, op: Option<Op>) -> Nanos {
        match op {
            Some(Op::Read) => self.cfg.miss_ns.read,
            _ => self.cfg.miss_ns.write,
        }
    }

    /// After a read miss: write the blocks not cached to the cache device.
    fn fill(&mut self, now: Nanos, off: u64, len: u64, cx: &mut Cx) {
        let (b0, b1) = self.block_range(off, len);
        let mut gens = Vec::new();
        for b in b0..b1 {
            if self.blocks.contains(b) {
                self.blocks.touch(b);
                continue;
            }
            if let Some(g) = self.insert_clean(b) {
                self.filling.insert(b);
                gens.push((b, g));
            }
        }
        for r in self.runs_of_blocks(&gens) {
            self.stats.fills += 1;
            let req = dev_req(Op::Write, r.offset, r.len);
            self.send(
                now,
                CACHE,
                Sub {
                    kind: Kind::Fill(r.blocks),
                    host: 0,
                },
                req,
                cx,
            );
        }
    }

    /// Whole-block runs of `gens` on the cache device.
    fn runs_of_blocks(&self, gens: &[(u64, u32)]) -> Vec<Run> {
        let bs = self.bs();
        let mut out: Vec<Run> = Vec::new();
        // blocks are in address order; each run covers whole blocks
        let mut i = 0;
        while i < gens.len() {
            let mut j = i + 1;
            while j < gens.len() && gens[j].0 == gens[j - 1].0 + 1 {
                j += 1;
            }
            let (first, last) = (gens[i].0, gens[j - 1].0);
            out.extend(self.runs(first * bs, (last + 1 - first) * bs, &gens[i..j]));
            i = j;
        }
        out
    }

    /// Fills and write-through copies that finished: readable again if
    /// still the same generation.
    fn filled(&mut self, blocks: &[(u64, u32)]) {
        for &(b, g) in blocks {
            if self.blocks.get(b).is_some_and(|l| l.gen == g) {
                self.filling.remove(&b);
            }
        }
    }

    fn sub_done(&mut self, now: Nanos, c: Completion, cx: &mut Cx) {
        let si = c.id as u32;
        let s = std::mem::replace(
            &mut self.subs[si as usize],
            Sub {
                kind: Kind::Host,
                host: 0,
            },
        );
        self.sfree.push(si);
        match s.kind {
            Kind::Host | Kind::HostFill(_) => {
                if let Kind::HostFill(blocks) = &s.kind {
                    self.filled(blocks);
                }
                let h = &mut self.hreqs[s.host as usize];
                if c.at >= h.last_at {
                    h.last_at = c.at;
                    h.bd = c.breakdown;
                }
                self.close(now, s.host, cx);
            }
            Kind::Fill(blocks) => self.filled(&blocks),
            Kind::DestageRead(b, g) => {
                let bs = self.bs();
                let req = dev_req(Op::Write, b * bs, bs.min(self.capacity - b * bs));
                let sub = Sub {
                    kind: Kind::DestageWrite(b, g),
                    host: 0,
                };
                self.send(now, BACKING, sub, req, cx);
            }
            Kind::DestageWrite(b, g) => {
                self.destaging -= 1;
                self.stats.destages += 1;
                if let Some(slot) = self.blocks.slot(b) {
                    let l = &mut self.blocks.slots[slot as usize];
                    l.destaging = false;
                    if l.dirty && l.gen == g {
                        l.dirty = false;
                        self.blocks.push_tail(slot);
                        self.dirty.remove(&b);
                    }
                }
                self.admit_writes(now, cx);
                if self.dirty.is_empty() {
                    while let Some(hi) = self.flush_wait.pop_front() {
                        let req = dev_req(Op::Flush, 0, 0);
                        let h = &mut self.hreqs[hi as usize];
                        h.waited += now - h.phase_start;
                        self.send_part(now, hi, BACKING, Kind::Host, req, cx);
                        self.close(now, hi, cx);
                    }
                }
            }
        }
        self.destage(now, cx);
    }

    fn destage(&mut self, now: Nanos, cx: &mut Cx) {
        let bs = self.bs();
        while self.destaging < self.cfg.destage_depth && !self.dirty.is_empty() {
            let pressure =
                self.dirty.len() as f64 > self.cfg.destage_threshold * self.cap_blocks as f64;
            let want = pressure
                || !self.flush_wait.is_empty()
                || !self.write_wait.is_empty()
                || self.host_inflight == 0;
            if !want {
                return;
            }
            let blocks = &self.blocks;
            let filling = &self.filling;
            let pick = self
                .dirty
                .range(self.cursor..)
                .chain(self.dirty.range(..self.cursor))
                .find(|&&b| blocks.get(b).is_some_and(|l| !l.destaging) && !filling.contains(&b))
                .copied();
            let Some(b) = pick else { return };
            let slot = self.blocks.slot(b).expect("dirty blocks are cached");
            let line = &mut self.blocks.slots[slot as usize];
            line.destaging = true;
            let g = line.gen;
            self.cursor = b + 1;
            self.destaging += 1;
            let req = dev_req(Op::Read, slot as u64 * bs, bs);
            self.send(
                now,
                CACHE,
                Sub {
                    kind: Kind::DestageRead(b, g),
                    host: 0,
                },
                req,
                cx,
            );
        }
    }

    fn admit_writes(&mut self, now: Nanos, cx: &mut Cx) {
        while let Some(&hi) = self.write_wait.front() {
            if !self.try_write_back(now, hi, cx) {
                break;
            }
            self.write_wait.pop_front();
            self.close(now, hi, cx);
        }
    }

    /// A write-back write: room for its blocks, then written to the cache
    /// device dirty. False if there is no room yet.
    fn try_write_back(&mut self, now: Nanos, hi: u32, cx: &mut Cx) -> bool {
        let h = self.hreqs[hi as usize];
        let (b0, b1) = self.block_range(h.offset, h.len);
        // a block being destaged cannot take new data until its destage ends
        if (b0..b1).any(|b| self.blocks.get(b).is_some_and(|l| l.destaging)) {
            return false;
        }
        let new = (b0..b1).filter(|&b| !self.blocks.contains(b)).count() as u64;
        if !self.make_room(new) {
            return false;
        }
        self.hreqs[hi as usize].waited += now - h.phase_start;
        self.stats.writes_cached += 1;
        let gens: Vec<(u64, u32)> = (b0..b1).map(|b| (b, self.insert_dirty(b))).collect();
        for &(b, _) in &gens {
            self.filling.insert(b);
        }
        for r in self.runs(h.offset, h.len, &gens) {
            let req = dev_req(Op::Write, r.offset, r.len);
            self.send_part(now, hi, CACHE, Kind::HostFill(r.blocks), req, cx);
        }
        true
    }

    /// Read whole blocks `b0..b1` from the backing device for host request
    /// `hi` (a read miss, or a write that allocates).
    fn read_blocks(&mut self, now: Nanos, hi: u32, b0: u64, b1: u64, cx: &mut Cx) {
        let bs = self.bs();
        let off = b0 * bs;
        let len = (b1 * bs).min(self.capacity) - off;
        let rd = dev_req(Op::Read, off, len);
        self.send_part(now, hi, BACKING, Kind::Host, rd, cx);
    }

    /// A write to the backing device, with the cache kept up to date
    /// (`through`) or its copies dropped.
    fn write_direct(&mut self, now: Nanos, hi: u32, req: DevRequest, through: bool, cx: &mut Cx) {
        let (b0, b1) = self.block_range(req.offset, req.len);
        let mut gens = Vec::new();
        for b in b0..b1 {
            let whole = self.covers(&req, b);
            if through && (whole || self.blocks.contains(b)) {
                // a dirty older copy is superseded by this write
                if self.blocks.get(b).is_some_and(|l| l.dirty && !l.destaging) {
                    self.drop_block(b);
                }
                if let Some(g) = self.insert_clean(b) {
                    self.filling.insert(b);
                    gens.push((b, g));
                    continue;
                }
            }
            self.drop_block(b);
        }
        self.send_part(now, hi, BACKING, Kind::Host, req, cx);
        for r in self.runs(req.offset, req.len, &gens) {
            let w = dev_req(Op::Write, r.offset, r.len);
            self.send_part(now, hi, CACHE, Kind::HostFill(r.blocks), w, cx);
        }
    }
}

impl Device for FlashCache {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let h = HReq {
            id: req.id,
            op: Some(req.op),
            arrival: now,
            offset: req.offset,
            len: req.len,
            // a hold while the parts go out (see `close`)
            pending: 1,
            phase_start: now,
            ..HReq::default()
        };
        let hi = crate::units::slab_insert(&mut self.hreqs, &mut self.hfree, h);
        self.host_inflight += 1;
        let (b0, b1) = self.block_range(req.offset, req.len);
        let mut waits = false;
        match req.op {
            Op::Read => {
                if (b0..b1).all(|b| self.readable(b)) {
                    self.stats.read_hits += 1;
                    let gens: Vec<(u64, u32)> = (b0..b1)
                        .map(|b| {
                            self.blocks.touch(b);
                            (b, 0)
                        })
                        .collect();
                    for r in self.runs(req.offset, req.len, &gens) {
                        let rd = dev_req(Op::Read, r.offset, r.len);
                        self.send_part(now, hi, CACHE, Kind::Host, rd, cx);
                    }
                } else {
                    // whole blocks from the backing device, then a fill
                    self.stats.read_misses += 1;
                    self.hreqs[hi as usize].fill = true;
                    self.hreqs[hi as usize].missed = true;
                    self.read_blocks(now, hi, b0, b1, cx);
                }
            }
            Op::Write => {
                let partial_uncached = (b0..b1).any(|b| {
                    let whole = self.covers(&req, b);
                    !whole && !self.blocks.contains(b)
                });
                let fits = b1 - b0 <= self.cap_blocks;
                let allocate = self.cfg.mode == TierMode::WriteBack
                    && self.cfg.write_allocate
                    && partial_uncached
                    && !req.fua
                    && fits;
                if allocate {
                    // read the blocks not cached, then write back (`close`)
                    self.stats.write_allocs += 1;
                    let h = &mut self.hreqs[hi as usize];
                    h.alloc = true;
                    h.missed = true;
                    self.read_blocks(now, hi, b0, b1, cx);
                } else {
                    match self.cfg.mode {
                        TierMode::WriteBack if !req.fua && !partial_uncached && fits => {
                            if !(self.write_wait.is_empty() && self.try_write_back(now, hi, cx)) {
                                self.stats.write_waits += 1;
                                self.write_wait.push_back(hi);
                                waits = true;
                            }
                        }
                        TierMode::WriteAround => self.write_direct(now, hi, req, false, cx),
                        _ => self.write_direct(now, hi, req, true, cx),
                    }
                }
            }
            Op::Trim => {
                for b in b0..b1 {
                    self.drop_block(b);
                }
                self.send_part(
                    now,
                    hi,
                    BACKING,
                    Kind::Host,
                    DevRequest { fua: false, ..req },
                    cx,
                );
            }
            Op::Flush => {
                if self.dirty.is_empty() {
                    self.send_part(now, hi, BACKING, Kind::Host, req, cx);
                } else {
                    self.flush_wait.push_back(hi);
                    waits = true;
                }
            }
        }
        if !waits {
            self.close(now, hi, cx);
        }
        self.destage(now, cx);
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let child = token >> 2;
        match token & 3 {
            CACHE => {
                let mut c = std::mem::take(&mut self.cx_cache);
                self.cache.on_event(now, child, &mut c);
                self.cx_cache = c;
            }
            BACKING => {
                let mut c = std::mem::take(&mut self.cx_back);
                self.back.on_event(now, child, &mut c);
                self.cx_back = c;
            }
            _ => {
                let i = child as usize;
                let what = std::mem::replace(&mut self.later[i], Later::Done);
                self.later_free.push(i as u32);
                if let Later::Sub(c) = what {
                    self.sub_done(now, c, cx);
                }
            }
        }
        self.drain(now, cx);
        self.destage(now, cx);
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn volatile_write_cache(&self) -> bool {
        self.cache.volatile_write_cache() || self.back.volatile_write_cache()
    }

    /// The tier's own dirty blocks live on the cache device (flash: not
    /// volatile); a block is held volatile when the cache device holds
    /// its slot so, or the backing device holds the range so.
    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        let bs = self.cfg.block_bytes;
        let (b0, b1) = (offset / bs, (offset + len.max(1)).div_ceil(bs));
        (b0..b1).any(|b| {
            self.blocks
                .slot(b)
                .is_some_and(|s| self.cache.volatile_holds(s as u64 * bs, bs))
        }) || self.back.volatile_holds(offset, len)
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        let s = &self.stats;
        let reads = (s.read_hits + s.read_misses).max(1) as f64;
        let mut r = DeviceReport {
            utilisation: Vec::new(),
            power: Vec::new(),
            wear: None,
            counters: vec![
                ("tier_read_hits".into(), s.read_hits as f64),
                ("tier_read_misses".into(), s.read_misses as f64),
                ("tier_read_hit_ratio".into(), s.read_hits as f64 / reads),
                ("tier_fills".into(), s.fills as f64),
                ("tier_writes_cached".into(), s.writes_cached as f64),
                ("tier_write_allocs".into(), s.write_allocs as f64),
                ("tier_write_waits".into(), s.write_waits as f64),
                ("tier_destages".into(), s.destages as f64),
                ("tier_blocks_cached".into(), self.blocks.len() as f64),
                ("tier_dirty_at_end".into(), self.dirty.len() as f64),
            ],
        };
        r.absorb("cache.", self.cache.report(now));
        r.absorb("backing.", self.back.report(now));
        r
    }

    fn debug_state(&self) -> String {
        format!(
            "tier: {} host requests in flight, {} dirty, {} destaging, {} writes and {} flushes waiting; cache: {}; backing: {}",
            self.host_inflight,
            self.dirty.len(),
            self.destaging,
            self.write_wait.len(),
            self.flush_wait.len(),
            self.cache.debug_state(),
            self.back.debug_state()
        )
    }
}
