//! Reclaim: taking a frame (direct reclaim under the watermarks), kswapd,
//! the clock scan with its young bits and shootdowns, and writing pages
//! out in batches.

use super::config::{NONE, SWAP_CLUSTER_MAX};
use super::machine::{Machine, KSWAPD_BIT, MY_BIT};

impl Machine<'_> {
    /// A free frame for thread `t`, or None when it reclaims or waits
    /// (the thread's access is retried later).
    pub(super) fn take_frame(&mut self, now: u64, t: u32) -> Option<u32> {
        if self.free.len() > self.min {
            let f = self.free.pop();
            if self.free.len() < self.low {
                self.wake_kswapd(now);
            }
            return f;
        }
        self.wake_kswapd(now);
        let th = &self.threads[t as usize];
        if th.reclaimed || self.writes_inflight >= self.congested_at {
            self.threads[t as usize].reclaimed = true;
            // congestion_wait: until writeback frees pages
            self.frame_waiters.push_back(t);
            self.wake_frame_waiters(now);
            return None;
        }
        // direct reclaim on this thread's time
        let mut b = std::mem::take(&mut self.threads[t as usize].batch);
        let (cost, n) = self.reclaim(now, &mut b);
        if n == 0 && self.inflight == 0 && b.is_empty() {
            // nothing reclaimable, nothing in flight to free a page
            self.stuck = Some(now);
        }
        self.threads[t as usize].batch = b;
        self.rep.direct_reclaims += 1;
        self.rep.direct_reclaimed += n;
        self.threads[t as usize].reclaimed = true;
        self.compute(t);
        self.push(now + cost.max(1), MY_BIT | t as u64);
        None
    }

    pub(super) fn wake_kswapd(&mut self, now: u64) {
        if self.free.len() >= self.low {
            return;
        }
        for k in 0..self.kswapd.len() {
            if !self.kswapd[k].running {
                self.kswapd[k].running = true;
                self.push(now, MY_BIT | KSWAPD_BIT | k as u64);
            }
        }
    }

    pub(super) fn kswapd_step(&mut self, now: u64, k: usize) {
        let b = std::mem::take(&mut self.kswapd[k].batch);
        let b = self.write_batch(now, self.w.threads + k as u32, b);
        self.kswapd[k].batch = b;
        if self.free.len() + self.writeback >= self.high {
            self.kswapd[k].running = false;
            return;
        }
        let mut b = std::mem::take(&mut self.kswapd[k].batch);
        let (cost, n) = self.reclaim(now, &mut b);
        self.kswapd[k].batch = b;
        self.rep.kswapd_reclaimed += n;
        if n == 0 {
            // nothing reclaimable now: sleep until woken again
            self.kswapd[k].running = false;
            return;
        }
        self.push(now + cost.max(1), MY_BIT | KSWAPD_BIT | k as u64);
    }

    /// Write a reclaim batch's slots, one request per contiguous run.
    pub(super) fn write_batch(&mut self, now: u64, thread: u32, mut b: Vec<u32>) -> Vec<u32> {
        if b.is_empty() {
            return b;
        }
        b.sort_unstable();
        let mut i = 0;
        while i < b.len() {
            let mut j = i + 1;
            while j < b.len() && b[j] == b[j - 1] + 1 {
                j += 1;
            }
            self.submit_run(now, thread, true, b[i], (j - i) as u32, NONE);
            i = j;
        }
        b.clear();
        b
    }

    /// One reclaim batch starting at `now`: scan with the clock, evict up
    /// to SWAP_CLUSTER_MAX pages; dirty ones get slots and go into `batch`
    /// (written when the reclaimer's CPU time is over). Each page's rmap
    /// work (`page_referenced`, `try_to_unmap` with its TLB shootdown)
    /// holds the array's one `anon_vma->lock` (a spinlock in 2.6.3x,
    /// `page_lock_anon_vma`), so reclaimers serialise there. Returns the
    /// time the batch takes and the pages reclaimed.
    fn reclaim(&mut self, now: u64, batch: &mut Vec<u32>) -> (u64, u64) {
        let c = self.cfg;
        let nf = self.frames.len();
        let mut t = now;
        let mut got = 0u64;
        let mut scanned = 0;
        while (got as usize) < SWAP_CLUSTER_MAX && scanned < 2 * nf {
            let f = self.hand;
            self.hand = (self.hand + 1) % nf;
            scanned += 1;
            let fr = self.frames[f];
            if fr.page == NONE || fr.reading || fr.writeback {
                continue;
            }
            let mut hold = c.scan_ns;
            if fr.referenced {
                // page_referenced_one: the pte was young; clearing its
                // accessed bit (ptep_clear_flush_young) flushes the TLB
                // entry on x86 when `young_flush`: a shootdown, in the lock
                self.frames[f].referenced = false;
                if c.young_flush {
                    hold += c.tlb_shootdown_ns;
                    self.rep.shootdowns += 1;
                    self.shootdowns_total += 1;
                }
                t = self.anon_lock.reserve(t, hold) + hold;
                continue;
            }
            // add_to_swap comes before try_to_unmap
            let s = if fr.slot == NONE && fr.dirty {
                t += c.swap_alloc_ns;
                let s = self.alloc_slot(fr.page);
                if s == NONE {
                    t = self.anon_lock.reserve(t, hold) + hold;
                    continue;
                }
                self.page_slot[fr.page as usize] = s;
                s
            } else {
                fr.slot
            };
            if fr.mapped {
                hold += c.unmap_ns + c.tlb_shootdown_ns;
                self.rep.shootdowns += 1;
                self.shootdowns_total += 1;
                self.frames[f].mapped = false;
            }
            t = self.anon_lock.reserve(t, hold) + hold;
            got += 1;
            if fr.dirty {
                let m = &mut self.frames[f];
                m.slot = s;
                m.dirty = false;
                m.writeback = true;
                self.writeback += 1;
                batch.push(s);
            } else {
                // clean with a valid slot (or read ahead): freed at once
                self.free_frame(f as u32);
            }
        }
        (t - now, got)
    }
}
