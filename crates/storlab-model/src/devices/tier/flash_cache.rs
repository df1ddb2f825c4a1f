//! A block cache on one device in front of another (docs/spec/hybrid.md, flash as a
//! disk cache: Fusion-io directCache over a disk array; the same layer
//! serves any pair of presets).
//!
//! The caching software keeps fixed-size blocks of the backing device on
//! the cache device; a cached block's place there is its slot in the index
//! (`lines.rs`, the line store of the controller cache, least recently used clean block evicted
//! first). Reads: if every block of the request is cached the request is
//! read from the cache device (one request per run of neighbouring slots);
//! otherwise the whole blocks it touches are read from the backing device,
//! the request completes, and the blocks missing are then written to the
//! cache device in the background (a fill; until it ends the block is not
//! read from the cache). Writes, by `mode`:
//!
//! - `write-through`: to the backing device and, for whole blocks (and for
//!   partial blocks already cached), to the cache device at once; the
//!   write completes when both have. No write is faster than the backing
//!   device (the study: no write speed-up, a read-only cache).
//! - `write-around`: to the backing device only; cached copies of the
//!   blocks are dropped.
//! - `write-back`: whole blocks to the cache device only, dirty, complete
//!   when that write is; a partial write of a block not cached goes
//!   through, or with `write_allocate` first reads the block (as memory
//!   does: a store to a page not present faults it in); a FUA write goes
//!   through. Dirty blocks are destaged (read from the cache
//!   device, written to the backing device) in address order while they
//!   exceed `destage_threshold` of the cache, while a flush or a write
//!   waits for room, or whenever no host request is outstanding. A write
//!   that needs room when every block is dirty waits. A flush completes
//!   once nothing is dirty and the backing device has flushed.
//!
//! The caching software's lookup (`lookup_ns`, and `miss_ns` more for a
//! request that missed) is charged to each request at its end, as
//! `driver` time (host software). A child's completion is acted on at
//! its time (a wake-up of the tier's own when the child reports it ahead),
//! so a fill, a destage or a waiting write moves on when the device is
//! done, not when it knew it would be. Wake-up tokens carry their owner in
//! the two low bits: the cache device, the backing device or the tier
//! (`devices/raid.rs` has the convention).

use std::collections::{BTreeSet, VecDeque};

use crate::breakdown::Breakdown;
use crate::config::ConfigError;
use crate::device::{Completion, Cx, DevRequest, Device, Nanos, Op};

use super::config::{TierConfig, WARM_CHUNK};
use super::lines::LineStore;

/// Assemble the tier from its built devices; `capacity` (the preset's)
/// must fit the backing device and `cache_bytes` the cache device.
pub fn build(
    cfg: &TierConfig,
    cache: Box<dyn Device>,
    backing: Box<dyn Device>,
    capacity: u64,
) -> Result<Box<dyn Device>, ConfigError> {
    let bad = |field: &str, message: String| ConfigError::Invalid {
        field: field.into(),
        message,
    };
    if cfg.cache_bytes > cache.capacity() {
        return Err(bad(
            "tier.cache_bytes",
            format!(
                "{} is more than the cache device's {} bytes",
                cfg.cache_bytes,
                cache.capacity()
            ),
        ));
    }
    if cfg.warm_bytes > capacity {
        return Err(bad(
            "tier.warm_bytes",
            format!(
                "{} is more than the device's {capacity} bytes",
                cfg.warm_bytes
            ),
        ));
    }
    if capacity > backing.capacity() {
        return Err(bad(
            "device.capacity_bytes",
            format!(
                "{capacity} is more than the backing device's {} bytes",
                backing.capacity()
            ),
        ));
    }
    Ok(Box::new(FlashCache::new(
        cfg.clone(),
        cache,
        backing,
        capacity,
    )))
}

/// A request to a child device (its id is set when it is sent).
pub(super) fn dev_req(op: Op, offset: u64, len: u64) -> DevRequest {
    DevRequest::new(0, op, offset, len)
}

pub(super) const CACHE: u64 = 0;
pub(super) const BACKING: u64 = 1;
pub(super) const SELF: u64 = 2;

/// A child's completion, handled at its time (a device may report a
/// completion ahead of time; the tier's state changes when it happens).
#[derive(Clone, Debug)]
pub(super) enum Later {
    /// Handle this child completion.
    Sub(Completion),
    /// An empty slot.
    Done,
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    /// Part of host request `host`.
    Host,
    /// Part of host request `host` that also writes `blocks` (block,
    /// generation) to the cache device.
    HostFill(Vec<(u64, u32)>),
    /// A background fill of `blocks` after a read miss.
    Fill(Vec<(u64, u32)>),
    /// Destage of a block: its read from the cache device.
    DestageRead(u64, u32),
    /// Destage of a block: its write to the backing device.
    DestageWrite(u64, u32),
}

#[derive(Clone, Debug)]
pub(super) struct Sub {
    pub(super) kind: Kind,
    pub(super) host: u32,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct HReq {
    pub(super) id: u64,
    pub(super) op: Option<Op>,
    pub(super) arrival: Nanos,
    pub(super) offset: u64,
    pub(super) len: u64,
    /// Parts outstanding.
    pub(super) pending: u32,
    /// Latest part's completion and its breakdown.
    pub(super) last_at: Nanos,
    pub(super) bd: Breakdown,
    /// Time spent waiting for room or for destaging before the parts.
    pub(super) waited: Nanos,
    /// When the current phase began (arrival, or the end of a
    /// write-allocate read).
    pub(super) phase_start: Nanos,
    /// Breakdown of an earlier phase (a write-allocate read).
    pub(super) pre: Breakdown,
    /// A read that missed: fill its blocks when it completes.
    pub(super) fill: bool,
    /// A write-allocate write: its blocks' read is under way.
    pub(super) alloc: bool,
    /// Missed (pays `miss_ns`).
    pub(super) missed: bool,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stats {
    pub(super) read_hits: u64,
    pub(super) read_misses: u64,
    pub(super) fills: u64,
    pub(super) writes_cached: u64,
    pub(super) write_allocs: u64,
    pub(super) write_waits: u64,
    pub(super) destages: u64,
}

/// A run of neighbouring blocks whose slots are neighbours too: one
/// request on the cache device.
pub(super) struct Run {
    /// Byte offset on the cache device.
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) blocks: Vec<(u64, u32)>,
}

/// The block cache.
pub struct FlashCache {
    pub(super) cfg: TierConfig,
    pub(super) cache: Box<dyn Device>,
    pub(super) back: Box<dyn Device>,
    pub(super) capacity: u64,
    pub(super) cap_blocks: u64,
    pub(super) blocks: LineStore,
    pub(super) dirty: BTreeSet<u64>,
    pub(super) cursor: u64,
    pub(super) filling: BTreeSet<u64>,
    pub(super) hreqs: Vec<HReq>,
    pub(super) hfree: Vec<u32>,
    pub(super) subs: Vec<Sub>,
    pub(super) sfree: Vec<u32>,
    pub(super) host_inflight: u32,
    pub(super) destaging: u32,
    pub(super) write_wait: VecDeque<u32>,
    pub(super) flush_wait: VecDeque<u32>,
    pub(super) cx_cache: Cx,
    pub(super) cx_back: Cx,
    pub(super) later: Vec<Later>,
    pub(super) later_free: Vec<u32>,
    pub(super) stats: Stats,
}

impl FlashCache {
    /// `cache` in front of `backing`, exposing `capacity` bytes.
    pub fn new(
        cfg: TierConfig,
        cache: Box<dyn Device>,
        back: Box<dyn Device>,
        capacity: u64,
    ) -> Self {
        let mut fc = FlashCache {
            cap_blocks: cfg.cache_bytes / cfg.block_bytes,
            cfg,
            cache,
            back,
            capacity,
            blocks: LineStore::new(),
            dirty: BTreeSet::new(),
            cursor: 0,
            filling: BTreeSet::new(),
            hreqs: Vec::new(),
            hfree: Vec::new(),
            subs: Vec::new(),
            sfree: Vec::new(),
            host_inflight: 0,
            destaging: 0,
            write_wait: VecDeque::new(),
            flush_wait: VecDeque::new(),
            cx_cache: Cx::default(),
            cx_back: Cx::default(),
            later: Vec::new(),
            later_free: Vec::new(),
            stats: Stats::default(),
        };
        fc.warm();
        fc
    }

    /// Cache the evenly spread share of the footprint
    /// ([`TierConfig::warm_bytes`]) that fits, clean.
    fn warm(&mut self) {
        let foot = self.cfg.warm_bytes.min(self.capacity);
        if foot == 0 {
            return;
        }
        let chunks = foot.div_ceil(WARM_CHUNK);
        let take = (self.cfg.cache_bytes / WARM_CHUNK).min(chunks);
        let bs = self.bs();
        for c in 0..chunks {
            // chunk c is one of `take` spread evenly over `chunks`
            if (c + 1) * take / chunks == c * take / chunks {
                continue;
            }
            let end = ((c + 1) * WARM_CHUNK).min(foot);
            for b in c * WARM_CHUNK / bs..end.div_ceil(bs) {
                if self.insert_clean(b).is_none() {
                    return;
                }
            }
        }
    }

    /// Blocks cached now.
    pub fn cached_blocks(&self) -> u64 {
        self.blocks.len()
    }

    pub(super) fn bs(&self) -> u64 {
        self.cfg.block_bytes
    }

    /// Blocks `[b0, b1)` a byte range touches.
    pub(super) fn block_range(&self, off: u64, len: u64) -> (u64, u64) {
        (off / self.bs(), (off + len.max(1)).div_ceil(self.bs()))
    }

    /// `req` covers the whole of block `b`.
    pub(super) fn covers(&self, req: &DevRequest, b: u64) -> bool {
        let bs = self.bs();
        req.offset <= b * bs && (b + 1) * bs <= req.offset + req.len
    }

    /// Cached and readable from the cache device.
    pub(super) fn readable(&self, b: u64) -> bool {
        self.blocks.contains(b) && !self.filling.contains(&b)
    }

    /// Evict clean blocks until `k` more fit; false if dirty blocks leave
    /// too little room.
    pub(super) fn make_room(&mut self, k: u64) -> bool {
        while self.blocks.len() + k > self.cap_blocks {
            match self.blocks.evict() {
                Some(b) => {
                    self.filling.remove(&b);
                }
                None => return false,
            }
        }
        true
    }

    /// Drop block `b` (unless a destage holds it).
    pub(super) fn drop_block(&mut self, b: u64) {
        if let Some(l) = self.blocks.get(b) {
            if !l.destaging {
                if l.dirty {
                    self.dirty.remove(&b);
                }
                self.blocks.remove(b);
                self.filling.remove(&b);
            }
        }
    }

    /// Cache `b` clean (a new generation), evicting if needed; its
    /// generation, or None if there is no room.
    pub(super) fn insert_clean(&mut self, b: u64) -> Option<u32> {
        if let Some(l) = self.blocks.get(b) {
            if l.destaging || l.dirty {
                return None;
            }
            self.blocks.remove(b);
            let g = l.gen.wrapping_add(1);
            self.blocks.insert(b, false, g);
            return Some(g);
        }
        if !self.make_room(1) {
            return None;
        }
        self.blocks.insert(b, false, 0);
        Some(0)
    }

    /// Mark `b` dirty (allocating it); its new generation.
    pub(super) fn insert_dirty(&mut self, b: u64) -> u32 {
        match self.blocks.slot(b) {
            Some(s) => {
                let was_dirty = self.blocks.slots[s as usize].dirty;
                if !was_dirty {
                    self.blocks.unlink(s);
                    self.blocks.slots[s as usize].dirty = true;
                    self.dirty.insert(b);
                }
                let l = &mut self.blocks.slots[s as usize];
                l.gen = l.gen.wrapping_add(1);
                l.gen
            }
            None => {
                self.blocks.insert(b, true, 1);
                self.dirty.insert(b);
                1
            }
        }
    }

    /// Cache-device requests for the byte range `[off, off + len)` over
    /// cached blocks, merged where slots are neighbours.
    pub(super) fn runs(&self, off: u64, len: u64, gens: &[(u64, u32)]) -> Vec<Run> {
        let bs = self.bs();
        let mut runs: Vec<Run> = Vec::new();
        for &(b, g) in gens {
            let slot = self.blocks.slot(b).expect("cached") as u64;
            let lo = off.max(b * bs);
            let hi = (off + len).min((b + 1) * bs);
            let dev_off = slot * bs + (lo - b * bs);
            match runs.last_mut() {
                Some(r) if r.offset + r.len == dev_off => {
                    r.len += hi - lo;
                    r.blocks.push((b, g));
                }
                _ => runs.push(Run {
                    offset: dev_off,
                    len: hi - lo,
                    blocks: vec![(b, g)],
                }),
            }
        }
        runs
    }
}
