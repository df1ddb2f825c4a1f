//! A cached mapping table: the controller keeps only part of the
//! logical-to-physical map in its DRAM, the whole map lives in flash as
//! translation pages (DFTL: Gupta, Kim and Urgaonkar, "DFTL: a flash
//! translation layer employing demand-based selective caching of
//! page-level address mappings", ASPLOS 2009).
//!
//! Bookkeeping only, like the FTL: [`MapCache::access`] says whether a
//! request's translation page had to be read from flash (`load`) and
//! whether a dirty one was evicted to make room (`writeback`); the timing
//! model ([`crate::devices::flash`]) turns those into NAND operations.
//!
//! What the cache holds. A region of the map that was written in large or
//! sequential pieces is a few extents (start, length, address) and costs
//! the controller almost no memory: it is always resident. A write shorter
//! than its own flat entries' worth of a cached entry (`units x 4 bytes <
//! entry_bytes`) that does not continue the previous write breaks its
//! translation page into per-unit entries ("fragmented"): from then on the
//! page is held, `page_entries x entry_bytes` of DRAM, in an LRU cache of
//! `bytes / (page_entries x entry_bytes)` slots, and is read from flash
//! when it is not. This is how a controller whose indirection table is a
//! tree of extents cached in DRAM behaves (Intel's controllers before the
//! S3700, AnandTech, "The Intel SSD DC S3700: Intel's 3rd Generation
//! Controller Analyzed", 2012): sequential work stays cheap, random small
//! writes spill the table to flash.
//!
//! Precondition: `full` and `fresh` leave every page compact; `aged`
//! (random overwrites in steady state) leaves every page fragmented and the
//! cache full of dirty pages.
//!
//! Cost: off (`bytes = 0`) nothing is built. On, one access is O(1): array
//! lookups and an intrusive LRU list, no allocation.

use serde::{Deserialize, Serialize};

use super::types::{Precondition, NONE};
use crate::config::{check_range, ConfigError};

/// Bytes of a mapping entry as stored in a translation page in flash (a
/// 32-bit physical unit address, as the model's own).
pub const FLASH_ENTRY_BYTES: u64 = 4;

/// `[ssd.ftl.map_cache]`: the controller's cached mapping table. Off by
/// default (`bytes = 0`): the whole map is resident, as before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MapCacheConfig {
    /// Controller DRAM given to fragmented translation pages, bytes
    /// (0: the whole map is resident; the mechanism is off).
    pub bytes: u64,
    /// Mapping entries per translation page (a translation page is
    /// `page_entries x 4` bytes in flash, read and programmed as one NAND
    /// operation).
    pub page_entries: u32,
    /// Controller DRAM per cached entry of a fragmented translation page,
    /// bytes (4 for a flat array; more for a tree node per extent).
    pub entry_bytes: u32,
}

impl Default for MapCacheConfig {
    fn default() -> Self {
        MapCacheConfig {
            bytes: 0,
            page_entries: 1024,
            entry_bytes: 4,
        }
    }
}

impl MapCacheConfig {
    /// Whether the mechanism is on.
    pub fn on(&self) -> bool {
        self.bytes > 0
    }

    /// Translation page bytes in flash.
    pub fn flash_page_bytes(&self) -> u64 {
        self.page_entries as u64 * FLASH_ENTRY_BYTES
    }

    /// Cache slots (translation pages held).
    pub fn slots(&self) -> u64 {
        self.bytes / (self.page_entries as u64 * self.entry_bytes as u64)
    }

    /// Check the fields (`nand_page_bytes`: a translation page must fit
    /// one NAND page).
    pub fn validate(&self, nand_page_bytes: u64) -> Result<(), ConfigError> {
        if !self.on() {
            return Ok(());
        }
        check_range(
            "ssd.ftl.map_cache.page_entries",
            self.page_entries,
            1,
            1 << 20,
        )?;
        check_range("ssd.ftl.map_cache.entry_bytes", self.entry_bytes, 1, 4096)?;
        if self.flash_page_bytes() > nand_page_bytes {
            return Err(ConfigError::Invalid {
                field: "ssd.ftl.map_cache.page_entries".into(),
                message: format!(
                    "a translation page of {} entries is {} bytes, more than one NAND page ({nand_page_bytes})",
                    self.page_entries,
                    self.flash_page_bytes()
                ),
            });
        }
        if self.slots() == 0 {
            return Err(ConfigError::Invalid {
                field: "ssd.ftl.map_cache.bytes".into(),
                message: format!(
                    "{} bytes hold no translation page ({} entries of {} bytes)",
                    self.bytes, self.page_entries, self.entry_bytes
                ),
            });
        }
        Ok(())
    }
}

/// What one access needs from flash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Translation page to read (a miss).
    pub load: Option<u32>,
    /// Dirty translation page evicted, to program.
    pub writeback: Option<u32>,
}

/// Counters of the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapCacheCounters {
    /// Accesses to a compact (always resident) page.
    pub compact: u64,
    /// Accesses to a cached fragmented page.
    pub hits: u64,
    /// Translation pages read from flash.
    pub loads: u64,
    /// Dirty translation pages written back.
    pub writebacks: u64,
    /// Pages fragmented by a small write.
    pub fragmented: u64,
}

/// The cached mapping table's state.
pub struct MapCache {
    page_entries: u32,
    /// Units of a write at least this long keep a page compact.
    compact_units: u32,
    slots: u32,
    used: u32,
    /// Per translation page: its slot, or [`NONE`].
    slot_of: Vec<u32>,
    /// Per translation page: broken into per-unit entries.
    frag: Vec<bool>,
    /// Per slot: its translation page, dirty flag, LRU links.
    page_of: Vec<u32>,
    dirty: Vec<bool>,
    prev: Vec<u32>,
    next: Vec<u32>,
    /// Most and least recently used slots.
    head: u32,
    tail: u32,
    /// Where the last write ended (a write continuing it extends an
    /// extent).
    last_write_end: u32,
    /// Counters since construction.
    pub counters: MapCacheCounters,
}

impl MapCache {
    /// A cache over `logical_units` units, in the state `pre` leaves.
    pub fn new(cfg: &MapCacheConfig, logical_units: u32, pre: Precondition) -> Self {
        let pages = (logical_units as u64).div_ceil(cfg.page_entries as u64) as usize;
        let slots = cfg.slots().clamp(1, pages.max(1) as u64) as u32;
        let aged = matches!(
            pre,
            Precondition::Aged | Precondition::AgedReplay | Precondition::AgedInFull
        );
        let mut c = MapCache {
            page_entries: cfg.page_entries,
            compact_units: (cfg.entry_bytes as u64).div_ceil(FLASH_ENTRY_BYTES) as u32,
            slots,
            used: 0,
            slot_of: vec![NONE; pages],
            frag: vec![aged; pages],
            page_of: vec![NONE; slots as usize],
            dirty: vec![false; slots as usize],
            prev: vec![NONE; slots as usize],
            next: vec![NONE; slots as usize],
            head: NONE,
            tail: NONE,
            last_write_end: NONE,
            counters: MapCacheCounters::default(),
        };
        if aged {
            // the steady state of random overwrites: a full cache of dirty
            // pages (the lowest-numbered, a deterministic choice)
            for t in 0..slots.min(pages as u32) {
                c.insert(t, true);
            }
        }
        c
    }

    /// Translation page of unit `lpn`.
    #[inline]
    pub fn page_of_unit(&self, lpn: u32) -> u32 {
        lpn / self.page_entries
    }

    /// Slots in the cache.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Fragmented translation pages.
    pub fn fragmented_pages(&self) -> usize {
        self.frag.iter().filter(|&&f| f).count()
    }

    /// Whether translation page `t` is cached.
    pub fn cached(&self, t: u32) -> bool {
        self.slot_of[t as usize] != NONE
    }

    fn unlink(&mut self, s: u32) {
        let (p, n) = (self.prev[s as usize], self.next[s as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
    }

    fn push_front(&mut self, s: u32) {
        self.prev[s as usize] = NONE;
        self.next[s as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }

    /// Put page `t` in the cache at the front; the dirty page evicted for
    /// it, if any.
    fn insert(&mut self, t: u32, dirty: bool) -> Option<u32> {
        let mut wb = None;
        let s = if self.used < self.slots {
            self.used += 1;
            self.used - 1
        } else {
            let s = self.tail;
            let v = self.page_of[s as usize];
            self.slot_of[v as usize] = NONE;
            if self.dirty[s as usize] {
                wb = Some(v);
                self.counters.writebacks += 1;
            }
            self.unlink(s);
            s
        };
        self.page_of[s as usize] = t;
        self.slot_of[t as usize] = s;
        self.dirty[s as usize] = dirty;
        self.push_front(s);
        wb
    }

    /// The map entries of units `lpn0..lpn0 + units` (`units` > 0) are
    /// needed by a read (`write` false) or updated by a write: the first
    /// and last translation pages touched, and whether the write breaks
    /// them into per-unit entries. Then [`MapCache::touch`] each.
    #[inline]
    pub fn begin(&mut self, lpn0: u32, units: u32, write: bool) -> (u32, u32, bool) {
        let units = units.max(1);
        let fragments = write && units < self.compact_units && lpn0 != self.last_write_end;
        if write {
            self.last_write_end = lpn0 + units;
        }
        (
            self.page_of_unit(lpn0),
            self.page_of_unit(lpn0 + units - 1),
            fragments,
        )
    }

    /// Every access of [`MapCache::begin`] and [`MapCache::touch`] for
    /// units `lpn0..lpn0 + units`, `f` called with those that need flash.
    pub fn access(&mut self, lpn0: u32, units: u32, write: bool, mut f: impl FnMut(Access)) {
        if units == 0 {
            return;
        }
        let (t0, t1, fragments) = self.begin(lpn0, units, write);
        for t in t0..=t1 {
            let a = self.touch(t, write, fragments);
            if a != Access::default() {
                f(a);
            }
        }
    }

    /// Translation page `t` is needed (`write`: updated; `fragments`: by a
    /// write that breaks it into per-unit entries): what it needs from
    /// flash.
    pub fn touch(&mut self, t: u32, write: bool, fragments: bool) -> Access {
        let ti = t as usize;
        if !self.frag[ti] {
            if !fragments {
                self.counters.compact += 1;
                return Access::default();
            }
            // the compact extents are resident: split them in DRAM, no load
            self.frag[ti] = true;
            self.counters.fragmented += 1;
            return Access {
                load: None,
                writeback: self.insert(t, true),
            };
        }
        let s = self.slot_of[ti];
        if s != NONE {
            self.counters.hits += 1;
            if write {
                self.dirty[s as usize] = true;
            }
            if self.head != s {
                self.unlink(s);
                self.push_front(s);
            }
            return Access::default();
        }
        self.counters.loads += 1;
        Access {
            load: Some(t),
            writeback: self.insert(t, write),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(slots: u64) -> MapCacheConfig {
        MapCacheConfig {
            bytes: slots * 16 * 32,
            page_entries: 16,
            entry_bytes: 32,
        }
    }

    fn all(c: &mut MapCache, lpn: u32, units: u32, write: bool) -> Vec<Access> {
        let mut v = Vec::new();
        c.access(lpn, units, write, |a| v.push(a));
        v
    }

    #[test]
    fn compact_pages_cost_nothing_and_small_random_writes_fragment_them() {
        let mut c = MapCache::new(&cfg(2), 16 * 8, Precondition::Full);
        // a read of a sequentially written page: resident
        assert!(all(&mut c, 3, 1, false).is_empty());
        // a large write keeps the page compact (8 units x 4 B >= 32 B)
        assert!(all(&mut c, 16, 8, true).is_empty());
        assert_eq!(c.fragmented_pages(), 0);
        // a 4 KB write fragments its page: no load, no victim yet
        assert!(all(&mut c, 40, 1, true).is_empty());
        assert_eq!(c.fragmented_pages(), 1);
        assert!(c.cached(2));
        // continuing that write extends its extent: no new fragment
        assert!(all(&mut c, 41, 1, true).is_empty());
        assert_eq!(c.fragmented_pages(), 1);
    }

    #[test]
    fn misses_load_and_evict_the_least_recent_dirty_page() {
        let mut c = MapCache::new(&cfg(2), 16 * 8, Precondition::Aged);
        // aged: pages 0 and 1 cached dirty, page 0 least recent
        assert!(c.cached(0) && c.cached(1));
        assert!(all(&mut c, 17, 1, false).is_empty(), "page 1 hits");
        let a = all(&mut c, 5 * 16, 1, false);
        assert_eq!(
            a,
            vec![Access {
                load: Some(5),
                writeback: Some(0)
            }]
        );
        // page 5 came in clean for a read: evicting it writes nothing back
        let a = all(&mut c, 6 * 16, 1, true);
        assert_eq!(a[0].writeback, Some(1));
        let a = all(&mut c, 7 * 16 + 3, 1, true);
        assert_eq!(
            a,
            vec![Access {
                load: Some(7),
                writeback: None
            }]
        );
        assert_eq!(c.counters.loads, 3);
        assert_eq!(c.counters.writebacks, 2);
    }

    #[test]
    fn a_request_across_two_pages_touches_both() {
        let mut c = MapCache::new(&cfg(1), 16 * 8, Precondition::Aged);
        let a = all(&mut c, 30, 4, false);
        // page 1 misses (evicting dirty page 0), then page 2 evicts page 1
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].load, Some(1));
        assert_eq!(a[1].load, Some(2));
    }

    #[test]
    fn validation_names_the_field() {
        let mut m = cfg(1);
        assert!(m.validate(4096).is_ok());
        m.bytes = 100;
        let e = m.validate(4096).unwrap_err().to_string();
        assert!(e.contains("ssd.ftl.map_cache.bytes"), "{e}");
        let m = MapCacheConfig {
            bytes: 1 << 20,
            page_entries: 2048,
            entry_bytes: 4,
        };
        let e = m.validate(4096).unwrap_err().to_string();
        assert!(e.contains("page_entries"), "{e}");
        assert!(MapCacheConfig::default().validate(4096).is_ok());
    }
}
