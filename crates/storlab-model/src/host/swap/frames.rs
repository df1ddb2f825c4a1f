//! Page frames and swap slots: freeing and mapping frames, waking the
//! threads that wait for one, and allocating slots in clusters.

use super::config::{NONE, SWAPFILE_CLUSTER};
use super::machine::{Frame, Machine, MY_BIT};

impl Machine<'_> {
    pub(super) fn free_frame(&mut self, f: u32) {
        let fr = &mut self.frames[f as usize];
        let p = fr.page;
        *fr = Frame {
            page: NONE,
            slot: NONE,
            ..Frame::default()
        };
        self.page_frame[p as usize] = NONE;
        self.free.push(f);
    }

    pub(super) fn wake_frame_waiters(&mut self, now: u64) {
        let mut avail = self.free.len().saturating_sub(self.min);
        while avail > 0 {
            let Some(t) = self.frame_waiters.pop_front() else {
                break;
            };
            self.push(now, MY_BIT | t as u64);
            avail -= 1;
        }
        // nothing will free a page: let one waiter reclaim again
        if self.inflight == 0 && !self.frame_waiters.is_empty() && avail == 0 {
            let t = self.frame_waiters.pop_front().expect("not empty");
            self.threads[t as usize].reclaimed = false;
            self.push(now, MY_BIT | t as u64);
        }
    }

    pub(super) fn map(&mut self, f: u32, t: u32) {
        let write = self.threads[t as usize].write;
        let fr = &mut self.frames[f as usize];
        fr.mapped = true;
        fr.referenced = true;
        if fr.ahead {
            fr.ahead = false;
            self.rep.readahead_hits += 1;
        }
        if write {
            fr.dirty = true;
            // reuse_swap_page: the only user of the slot takes the page over
            if fr.slot != NONE && !fr.writeback {
                let s = fr.slot;
                fr.slot = NONE;
                let p = fr.page;
                self.page_slot[p as usize] = NONE;
                self.free_slot(s);
            }
        }
    }

    fn free_slot(&mut self, s: u32) {
        self.slot_owner[s as usize] = NONE;
        let c = (s / SWAPFILE_CLUSTER) as usize;
        self.cluster_used[c] -= 1;
        if self.cluster_used[c] == 0 && self.whole_cluster(c) {
            self.free_clusters += 1;
        }
    }

    /// Cluster `c` has all its SWAPFILE_CLUSTER slots (the last may not).
    fn whole_cluster(&self, c: usize) -> bool {
        (c as u64 + 1) * SWAPFILE_CLUSTER as u64 <= self.slot_owner.len() as u64
    }

    /// `scan_swap_map`: the next slot of the current cluster, a new free
    /// cluster, or the next free slot after the cursor.
    pub(super) fn alloc_slot(&mut self, page: u32) -> u32 {
        let n = self.slot_owner.len() as u32;
        let mut s = NONE;
        if self.cluster_left > 0
            && self.slot_cursor < n
            && self.slot_owner[self.slot_cursor as usize] == NONE
        {
            s = self.slot_cursor;
            self.cluster_left -= 1;
        } else {
            let full = n / SWAPFILE_CLUSTER;
            let found = if self.free_clusters > 0 {
                (0..full as usize).find(|&c| self.cluster_used[c] == 0)
            } else {
                None
            };
            if let Some(c) = found {
                s = c as u32 * SWAPFILE_CLUSTER;
                self.cluster_left = SWAPFILE_CLUSTER - 1;
            } else {
                self.cluster_left = 0;
                for k in 0..n {
                    let c = (self.slot_cursor + k) % n;
                    if self.slot_owner[c as usize] == NONE {
                        s = c;
                        break;
                    }
                }
            }
        }
        if s == NONE {
            // the swap area is full: add_to_swap fails, the page stays
            return NONE;
        }
        self.slot_cursor = s + 1;
        self.slot_owner[s as usize] = page;
        let c = (s / SWAPFILE_CLUSTER) as usize;
        if self.cluster_used[c] == 0 && self.whole_cluster(c) {
            self.free_clusters -= 1;
        }
        self.cluster_used[c] += 1;
        s
    }
}
