//! Garbage collection: choosing a victim block by policy, moving its
//! valid units, and erasing it.

use rand::Rng;

use super::blocks::{BState, Block};
use super::layer::Ftl;
use super::types::{GcPolicy, NandKind, NandOp, WearLeveling, NONE};

impl Ftl {
    /// Collect garbage in `plane` until it has `threshold` free blocks or
    /// nothing more can be reclaimed.
    pub(super) fn ensure_free(&mut self, plane: u32) {
        while self.free[plane as usize].len() < self.threshold as usize {
            let Some(v) = self.select_victim(plane) else {
                break;
            };
            self.counters.gc_runs += 1;
            self.move_block(v);
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
        let upp = self.geo.units_per_page;
        let base = v * self.upb;
        if let Some(bk) = &mut self.buckets {
            bk.remove(&mut self.blocks, plane, v);
        }
        if self.blocks[v as usize].valid > 0 {
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
            let mut lpns = [NONE; RUN as usize];
            // 1: the layout's unit, valid while its logical unit has no
            // entry; 2: the table's, valid while that entry names it
            let mut check = [0u8; RUN as usize];
            let virt = self.blocks[v as usize].virt;
            let ppb = self.geo.pages_per_block;
            let pages_per_run = (RUN / upp).max(1);
            let mut page0 = 0;
            while page0 < ppb {
                let page1 = (page0 + pages_per_run).min(ppb);
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
                    }
                }
                page0 = page1;
            }
            self.blocks[v as usize].valid = 0;
        }
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
