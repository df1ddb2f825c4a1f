//! Building blocks application models share: a buffer pool (an
//! application's own page cache: Berkeley DB's mpool, InnoDB's buffer
//! pool, PostgreSQL's shared buffers, MongoDB's mapped pages) and tree
//! geometry.

/// No frame.
const NONE: u32 = u32::MAX;

/// What an access to the pool found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The page was resident.
    pub hit: bool,
    /// A dirty page evicted to make room (the application writes it
    /// before reading the new one), if any.
    pub evicted_dirty: Option<u64>,
}

/// A buffer pool of `frames` pages over a space of `pages` page numbers,
/// replaced by the clock algorithm (second chance: an accessed page's
/// reference bit spares it one sweep), as Berkeley DB's mpool and
/// PostgreSQL's buffer manager do (InnoDB's LRU with a midpoint behaves
/// alike for uniform random access). Dense page numbers, so the index is
/// a vector (4 bytes per page of the data set, no hashing).
#[derive(Clone, Debug)]
pub struct BufferPool {
    frame_of: Vec<u32>,
    page: Vec<u64>,
    referenced: Vec<bool>,
    dirty: Vec<bool>,
    used: usize,
    hand: usize,
    dirty_count: u64,
    hits: u64,
    misses: u64,
}

impl BufferPool {
    /// A pool of `frames` frames for page numbers `0..pages`.
    pub fn new(frames: u64, pages: u64) -> Self {
        let frames = frames.clamp(1, pages.max(1)) as usize;
        BufferPool {
            frame_of: vec![NONE; pages.max(1) as usize],
            page: vec![0; frames],
            referenced: vec![false; frames],
            dirty: vec![false; frames],
            used: 0,
            hand: 0,
            dirty_count: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// Access `page` (dirtying it when `write`): a hit, or a miss that
    /// takes a frame (evicting a victim, whose page is returned if dirty).
    pub fn access(&mut self, page: u64, write: bool) -> Access {
        let f = self.frame_of[page as usize];
        if f != NONE {
            let f = f as usize;
            self.hits += 1;
            self.referenced[f] = true;
            if write && !self.dirty[f] {
                self.dirty[f] = true;
                self.dirty_count += 1;
            }
            return Access {
                hit: true,
                evicted_dirty: None,
            };
        }
        self.misses += 1;
        let mut evicted_dirty = None;
        let f = if self.used < self.page.len() {
            self.used += 1;
            self.used - 1
        } else {
            loop {
                let h = self.hand;
                self.hand = (self.hand + 1) % self.page.len();
                if self.referenced[h] {
                    self.referenced[h] = false;
                    continue;
                }
                let old = self.page[h];
                self.frame_of[old as usize] = NONE;
                if self.dirty[h] {
                    self.dirty_count -= 1;
                    evicted_dirty = Some(old);
                }
                break h;
            }
        };
        self.page[f] = page;
        self.frame_of[page as usize] = f as u32;
        self.referenced[f] = true;
        self.dirty[f] = write;
        if write {
            self.dirty_count += 1;
        }
        Access {
            hit: false,
            evicted_dirty,
        }
    }

    /// Whether `page` is resident (no side effect).
    pub fn resident(&self, page: u64) -> bool {
        self.frame_of[page as usize] != NONE
    }

    /// Mark up to `n` dirty pages clean, from the clock hand on (a
    /// checkpoint or page cleaner writing them); returns their pages.
    pub fn clean(&mut self, n: usize, out: &mut Vec<u64>) {
        let len = self.used;
        let mut i = 0;
        while out.len() < n && i < len && self.dirty_count > 0 {
            let f = (self.hand + i) % len;
            if self.dirty[f] {
                self.dirty[f] = false;
                self.dirty_count -= 1;
                out.push(self.page[f]);
            }
            i += 1;
        }
    }

    /// Mark clean the dirty pages among the next `depth` frames the clock
    /// hand reaches that it would evict (not referenced): the LRU tail an
    /// InnoDB page cleaner flushes so that misses find clean victims;
    /// returns their pages in `out`.
    pub fn clean_victims(&mut self, depth: usize, out: &mut Vec<u64>) {
        let len = self.used;
        for i in 0..depth.min(len) {
            if self.dirty_count == 0 {
                break;
            }
            let f = (self.hand + i) % len;
            if self.dirty[f] && !self.referenced[f] {
                self.dirty[f] = false;
                self.dirty_count -= 1;
                out.push(self.page[f]);
            }
        }
    }

    /// Forget the hit and miss counts (after warming the pool).
    pub fn reset_counts(&mut self) {
        self.hits = 0;
        self.misses = 0;
    }

    /// Dirty pages now.
    pub fn dirty_pages(&self) -> u64 {
        self.dirty_count
    }

    /// Frames.
    pub fn frames(&self) -> u64 {
        self.page.len() as u64
    }

    /// Hits so far.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Misses so far.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Hit ratio so far (0 before any access).
    pub fn hit_ratio(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

/// Warm `pool` as a database that has run a while: as many uniformly
/// chosen pages of `0..pages` as it has frames (clean), then the internal
/// levels (`(first page, pages)` each, the leaves' level excluded), which
/// every lookup touches and which therefore stay resident; the counts
/// start from zero.
pub fn warm_btree_pool(
    pool: &mut BufferPool,
    rng: &mut impl rand::Rng,
    pages: u64,
    internal: &[(u64, u64)],
) {
    warm_pool(pool, rng, pages, internal, false);
}

/// Warm `pool` as [`warm_btree_pool`] does, the leaves (pages `0..pages`
/// drawn uniformly) left dirty when `dirty_leaves`: the steady state of a
/// workload whose every transaction writes the leaf it reads, between
/// checkpoints further apart than the time the pool takes to turn over,
/// where every page evicted was dirtied when it was read (the internal
/// levels stay clean: nothing in them changes without splits).
pub fn warm_pool(
    pool: &mut BufferPool,
    rng: &mut impl rand::Rng,
    pages: u64,
    internal: &[(u64, u64)],
    dirty_leaves: bool,
) {
    let frames = pool.frames().min(pages);
    for _ in 0..frames {
        let pg = rng.gen_range(0..pages);
        pool.access(pg, dirty_leaves);
    }
    for &(base, n) in internal {
        for pg in base..base + n.min(frames / 2) {
            pool.access(pg, false);
        }
    }
    pool.reset_counts();
}

/// Levels of a B+tree of `entries` entries with `fanout` entries per
/// page (leaves included), at least 1.
pub fn btree_levels(entries: u64, fanout: u64) -> u32 {
    let fanout = fanout.max(2);
    let mut pages = entries.div_ceil(fanout).max(1);
    let mut levels = 1;
    while pages > 1 {
        pages = pages.div_ceil(fanout);
        levels += 1;
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_hits_what_it_holds_and_evicts_dirty_pages_once() {
        let mut p = BufferPool::new(2, 10);
        assert!(!p.access(1, true).hit);
        assert!(!p.access(2, false).hit);
        assert!(p.access(1, false).hit);
        // both referenced: the hand clears both, then evicts page 1 (dirty)
        let a = p.access(3, false);
        assert_eq!(a.evicted_dirty, Some(1));
        assert!(!p.resident(1) && p.resident(3));
        assert_eq!(p.dirty_pages(), 0);
        assert_eq!((p.hits(), p.misses()), (1, 3));
    }

    #[test]
    fn uniform_access_hits_in_proportion_to_the_pool() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut p = BufferPool::new(250, 1000);
        for _ in 0..200_000 {
            p.access(rng.gen_range(0..1000), false);
        }
        assert!((p.hit_ratio() - 0.25).abs() < 0.02, "{}", p.hit_ratio());
    }

    #[test]
    fn a_dirty_warm_pool_evicts_dirty_leaves_and_keeps_internal_pages_clean() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let mut p = BufferPool::new(100, 1010);
        warm_pool(&mut p, &mut rng, 1000, &[(1000, 10)], true);
        // every resident leaf is dirty, the internal pages clean
        assert!(p.dirty_pages() > 50, "{}", p.dirty_pages());
        assert!((1000..1010).all(|pg| p.resident(pg)));
        let mut dirty_victims = 0;
        for _ in 0..50 {
            let a = p.access(rng.gen_range(0..1000), false);
            dirty_victims += u32::from(a.evicted_dirty.is_some());
        }
        assert!(dirty_victims > 20, "{dirty_victims}");
        // the clean warm-up evicts none dirty
        let mut q = BufferPool::new(100, 1010);
        warm_btree_pool(&mut q, &mut rng, 1000, &[(1000, 10)]);
        assert_eq!(q.dirty_pages(), 0);
    }

    #[test]
    fn btree_levels_grow_with_the_log_of_entries() {
        assert_eq!(btree_levels(10, 100), 1);
        assert_eq!(btree_levels(1000, 100), 2);
        assert_eq!(btree_levels(1_000_000, 100), 3);
        assert_eq!(btree_levels(1_000_001, 100), 4);
    }
}
