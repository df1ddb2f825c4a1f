//! Garbage collection: choosing a victim block by policy, moving its
//! valid units, and erasing it, all at once (foreground collection) or
//! paced against host writes (`gc_pacing`: [`Ftl::gc_step`]).

use rand::Rng;

use super::blocks::{BState, Block};
use super::layer::Ftl;
use super::types::{GcPolicy, NandKind, NandOp, WearLeveling, NONE};

/// `gc_pacing`: a plane with fewer free blocks than this when a host block
/// opens finishes its oldest victim at once: the host's new block and the
/// collection's next one (`alloc_user` refuses a host block below two).
pub(super) const PACED_FLOOR: u64 = 2;

impl Ftl {
    /// Collect garbage in `plane` until it has `threshold` free blocks or
    /// nothing more can be reclaimed.
    ///
    /// With `gc_pacing` (and the FTL's work being timed) victims are
    /// chosen by the same policy at the same moments (a host block
    /// opening on a plane short of free blocks) but queued, not moved: a
    /// queued victim counts as the space it will free (its units less its
    /// valid ones, a fraction of a block), so the plane queues as many as
    /// bring that space and its free blocks to the threshold, and
    /// [`Self::gc_step`] moves the queue a few pages per host unit. A
    /// plane left with fewer than [`PACED_FLOOR`] free blocks finishes
    /// its oldest victim at once.
    pub(super) fn ensure_free(&mut self, plane: u32) {
        let pi = plane as usize;
        if !(self.pacing && self.emit) {
            while self.free[pi].len() < self.threshold as usize {
                let Some(v) = self.select_victim(plane) else {
                    break;
                };
                self.counters.gc_runs += 1;
                self.move_block(v);
            }
            return;
        }
        let upb = self.upb as u64;
        loop {
            let free = self.free[pi].len() as u64;
            if free < PACED_FLOOR {
                if let Some(c) = self.collecting[pi].pop_front() {
                    self.move_pages(c.block, c.next_page, self.geo.pages_per_block);
                    self.finish_victim(c.block);
                    continue;
                }
            }
            if free * upb + self.queued_frees(pi) >= self.threshold as u64 * upb
                && free >= PACED_FLOOR
            {
                break;
            }
            let Some(v) = self.select_victim(plane) else {
                break;
            };
            self.counters.gc_runs += 1;
            if self.blocks[v as usize].valid == 0 {
                self.move_block(v);
                continue;
            }
            self.take_victim(plane, v);
            self.collecting[pi].push_back(super::layer::Collect {
                block: v,
                next_page: 0,
            });
        }
    }

    /// The units `plane`'s queued victims will free: their units less
    /// the valid ones left in them.
    fn queued_frees(&self, pi: usize) -> u64 {
        let mut valid = 0u64;
        for c in &self.collecting[pi] {
            valid += self.blocks[c.block as usize].valid as u64;
        }
        self.collecting[pi].len() as u64 * self.upb as u64 - valid
    }

    /// `gc_pacing`: a host unit is about to be allocated on `plane`.
    /// Its share of the queued victims' moves is made first. Victims go
    /// front first, and each must be erased (its block free again) before
    /// the plane would open a host block with fewer than [`PACED_FLOOR`]
    /// free blocks. For the first k victims that gives a rate: their
    /// units still to move, over the host units the plane can take until
    /// then (the units of its free blocks above the floor, those left in
    /// the host's open block and in the collection's, and the k-1 blocks
    /// the victims before the k-th give back, less the moves themselves,
    /// which fill blocks too). The largest rate over the queue is this
    /// unit's share. Every host unit recomputes it, so a plane that falls
    /// behind (new victims queued) moves faster and one that gains
    /// (victims' units rewritten) moves slower: the moves come as a
    /// stream among the host's programs, not as whole victims at once. A
    /// victim about to start is swapped for a block with fewer valid
    /// units if rewrites made one, and one left with nothing valid is
    /// erased at once.
    pub(super) fn gc_step(&mut self, plane: u32) {
        let pi = plane as usize;
        if self.collecting[pi].is_empty() {
            return;
        }
        let upb = self.upb as i64;
        // the units left in the host's open block (this stream's) and in
        // the collection's are room too; a new host block needs two free
        // blocks (one stays for the collection)
        let left = |b: u32| match b {
            NONE => 0,
            b => upb - self.blocks[b as usize].next_unit as i64,
        };
        let host = self.open_user[(self.stream * self.geo.planes + plane) as usize];
        let mut room = (self.free[pi].len() as i64 - PACED_FLOOR as i64) * upb
            + left(host)
            + left(self.open_gc[pi]);
        let (mut owed, mut rate) = (0i64, 0f64);
        for c in &self.collecting[pi] {
            owed += self.blocks[c.block as usize].valid as i64;
            rate = rate.max(owed as f64 / (room - owed).max(1) as f64);
            room += upb;
        }
        self.gc_credit[pi] += rate;
        let ppb = self.geo.pages_per_block;
        while let Some(c) = self.collecting[pi].front_mut() {
            let (v, page) = (c.block, c.next_page);
            if page == ppb || self.blocks[v as usize].valid == 0 {
                self.collecting[pi].pop_front();
                self.finish_victim(v);
                continue;
            }
            if self.gc_credit[pi] < 1.0 {
                break;
            }
            if page == 0 {
                // the victim starts now: if the plane has a better one by
                // now (data rewritten since it was queued), take that
                if let Some(b) = self.select_victim(plane) {
                    if self.blocks[b as usize].valid < self.blocks[v as usize].valid {
                        self.requeue(plane, v);
                        self.take_victim(plane, b);
                        self.collecting[pi][0].block = b;
                        continue;
                    }
                }
            }
            let c = &mut self.collecting[pi][0];
            c.next_page += 1;
            let before = self.blocks[v as usize].valid;
            self.move_pages(v, page, page + 1);
            self.gc_credit[pi] -= (before - self.blocks[v as usize].valid) as f64;
        }
        if self.collecting[pi].is_empty() {
            self.gc_credit[pi] = 0.0;
        }
    }

    /// Closed block `v` becomes a queued victim (out of the greedy
    /// buckets: not a victim again).
    fn take_victim(&mut self, plane: u32, v: u32) {
        if let Some(bk) = &mut self.buckets {
            bk.remove(&mut self.blocks, plane, v);
        }
        self.blocks[v as usize].state = BState::Collecting;
    }

    /// Queued victim `v`, none of it moved yet, is a closed block again.
    fn requeue(&mut self, plane: u32, v: u32) {
        let blk = &mut self.blocks[v as usize];
        blk.state = BState::Closed;
        let valid = blk.valid;
        if let Some(bk) = &mut self.buckets {
            bk.insert(&mut self.blocks, plane, v, valid);
        }
    }

    fn select_victim(&mut self, plane: u32) -> Option<u32> {
        if let Some(bk) = &mut self.buckets {
            let v = bk.victim(plane, &self.blocks);
            if !cfg!(debug_assertions) {
                return v;
            }
            // debug builds check the index against the scan it replaces
            let scan = self.scan_victim(plane);
            debug_assert_eq!(v, scan, "greedy buckets disagree with the scan");
            return v;
        }
        self.scan_victim(plane)
    }

    pub(super) fn scan_victim(&mut self, plane: u32) -> Option<u32> {
        let bpp = self.geo.blocks_per_plane;
        let lo = (plane * bpp) as usize;
        let hi = lo + bpp as usize;
        let upb = self.upb;
        let blocks = &self.blocks[lo..hi];
        let reclaimable = |b: &Block| b.state == BState::Closed && b.valid < upb;
        let pick = match self.policy {
            GcPolicy::Greedy => {
                let mut best: Option<(u32, u64, usize)> = None;
                for (i, b) in blocks.iter().enumerate() {
                    if reclaimable(b) {
                        let key = (b.valid, b.closed_at, i);
                        if best.is_none_or(|k| key < k) {
                            best = Some(key);
                            if b.valid == 0 {
                                break;
                            }
                        }
                    }
                }
                best.map(|k| k.2)
            }
            GcPolicy::CostBenefit => {
                let now = self.clock;
                let mut best: Option<(f64, usize)> = None;
                for (i, b) in blocks.iter().enumerate() {
                    if reclaimable(b) {
                        let score = if b.valid == 0 {
                            f64::INFINITY
                        } else {
                            let u = b.valid as f64 / upb as f64;
                            let age = (now - b.closed_at) as f64 + 1.0;
                            (1.0 - u) / (2.0 * u) * age
                        };
                        if best.is_none_or(|(s, _)| score > s) {
                            best = Some((score, i));
                        }
                    }
                }
                best.map(|k| k.1)
            }
            GcPolicy::Fifo => {
                let mut best: Option<(u64, usize)> = None;
                for (i, b) in blocks.iter().enumerate() {
                    if reclaimable(b) && best.is_none_or(|k| (b.closed_at, i) < k) {
                        best = Some((b.closed_at, i));
                    }
                }
                best.map(|k| k.1)
            }
            GcPolicy::Random => {
                let n = blocks.iter().filter(|b| reclaimable(b)).count();
                if n == 0 {
                    None
                } else {
                    let k = self.rng.gen_range(0..n);
                    blocks
                        .iter()
                        .enumerate()
                        .filter(|(_, b)| reclaimable(b))
                        .nth(k)
                        .map(|(i, _)| i)
                }
            }
        };
        pick.map(|i| (lo + i) as u32)
    }

    /// Move the valid units of closed block `v` to the plane's
    /// garbage-collection block, then erase `v`.
    pub(super) fn move_block(&mut self, v: u32) {
        let plane = self.plane_of_block(v);
        if let Some(bk) = &mut self.buckets {
            bk.remove(&mut self.blocks, plane, v);
        }
        self.move_pages(v, 0, self.geo.pages_per_block);
        self.finish_victim(v);
    }

    /// The victim `v`'s pages `from..to` moved (their valid units to the
    /// plane's garbage-collection block; `v` counts them no longer).
    fn move_pages(&mut self, v: u32, from: u32, to: u32) {
        let plane = self.plane_of_block(v);
        let upp = self.geo.units_per_page;
        let base = v * self.upb;
        if self.blocks[v as usize].valid > 0 && from < to {
            // The logical units of a run of pages are looked up first
            // (their reverse entries, or the layout's, in order), then
            // each is checked against its own mapping entry (is it still
            // here?) and moved, page by page. The mapping entries are
            // scattered over the table, a cache miss each: they are asked
            // for DIST units ahead of their check, so that many misses
            // overlap without flooding the processor's miss buffers (all
            // of a victim's at once left every access after it waiting).
            // Moving a unit never changes whether another unit of the
            // victim is valid (one unit per logical unit is), so checking
            // ahead of the moves is exact.
            const RUN: u32 = 512;
            const DIST: u32 = 16;
            let mut moved = 0u32;
            let mut lpns = [NONE; RUN as usize];
            // 1: the layout's unit, valid while its logical unit has no
            // entry; 2: the table's, valid while that entry names it
            let mut check = [0u8; RUN as usize];
            let virt = self.blocks[v as usize].virt;
            let pages_per_run = (RUN / upp).max(1);
            let mut page0 = from;
            while page0 < to {
                let page1 = (page0 + pages_per_run).min(to);
                let first = base + page0 * upp;
                let held = ((page1 - page0) * upp).min(RUN);
                if virt {
                    // the layout's logical units of the whole run in one
                    // pass (stepped, not looked up unit by unit)
                    self.layout.lpns_of_run(first, &mut lpns[..held as usize]);
                }
                for i in 0..held {
                    let (l, c) = match self.p2l.raw(first + i) {
                        Some(l) => (l, 2),
                        None if virt => (lpns[i as usize], 1),
                        None => (NONE, 0),
                    };
                    lpns[i as usize] = l;
                    check[i as usize] = if l == NONE { 0 } else { c };
                }
                for i in 0..DIST.min(held) {
                    if check[i as usize] != 0 {
                        self.l2p.prefetch(lpns[i as usize]);
                    }
                }
                let mut checked = 0;
                for page in page0..page1 {
                    let pfirst = base + page * upp;
                    // check the page's units of this run
                    let pend = (pfirst + upp - first).min(held);
                    while checked < pend {
                        let i = checked as usize;
                        let ahead = i + DIST as usize;
                        if ahead < held as usize && check[ahead] != 0 {
                            self.l2p.prefetch(lpns[ahead]);
                        }
                        let valid = match check[i] {
                            0 => true,
                            1 => self.l2p.raw(lpns[i]).is_none(),
                            _ => self.l2p.raw(lpns[i]) == Some(first + checked),
                        };
                        if !valid {
                            lpns[i] = NONE;
                        }
                        checked += 1;
                    }
                    // units past `held` (pages larger than a run) are
                    // looked up one by one
                    let lpn_at = |ftl: &Self, ppa: u32| {
                        if ppa - first < held {
                            lpns[(ppa - first) as usize]
                        } else {
                            ftl.p2l_get(ppa)
                        }
                    };
                    let n = (pfirst..pfirst + upp)
                        .filter(|&ppa| lpn_at(self, ppa) != NONE)
                        .count() as u32;
                    if n == 0 {
                        continue;
                    }
                    if self.emit {
                        self.ops.push(NandOp {
                            kind: NandKind::Read,
                            block: v,
                            page,
                            background: true,
                            units: n,
                        });
                    }
                    for ppa in pfirst..pfirst + upp {
                        let lpn = lpn_at(self, ppa);
                        if lpn == NONE {
                            continue;
                        }
                        let new = self.alloc_gc(plane);
                        // the victim's reverse entry stays (see `p2l_get`)
                        self.p2l_set(new, lpn);
                        self.l2p_set(lpn, new);
                        let nb = self.block_of(new);
                        self.count_valid(nb);
                        self.counters.moved_units += 1;
                        moved += 1;
                    }
                }
                page0 = page1;
            }
            self.blocks[v as usize].valid -= moved;
        }
    }

    /// Every valid unit of victim `v` moved: erase it.
    fn finish_victim(&mut self, v: u32) {
        debug_assert_eq!(
            self.blocks[v as usize].valid, 0,
            "victim {v} still holds data"
        );
        self.blocks[v as usize].valid = 0;
        self.erase(v);
    }

    fn erase(&mut self, v: u32) {
        let plane = self.plane_of_block(v);
        let blk = &mut self.blocks[v as usize];
        debug_assert_eq!(blk.valid, 0);
        blk.erases = blk.erases.saturating_add(1);
        blk.state = BState::Free;
        blk.virt = false;
        blk.next_unit = 0;
        self.counters.erases += 1;
        if self.emit {
            self.ops.push(NandOp {
                kind: NandKind::Erase,
                block: v,
                page: 0,
                background: true,
                units: 0,
            });
        }
        self.push_free(v);
        if self.wl == WearLeveling::Static {
            let p = plane as usize;
            self.erases_since_wl[p] += 1;
            if self.erases_since_wl[p] >= self.wl_interval {
                self.erases_since_wl[p] = 0;
                self.static_level(plane);
            }
        }
    }
}
