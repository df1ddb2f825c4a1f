//! The flash translation layer: page-level mapping, over-provisioning,
//! garbage collection, wear levelling, TRIM and preconditioning.
//!
//! Bookkeeping only: the FTL never sees time. Every change it makes to the
//! mapping is immediate; the NAND work that change implies (page reads and
//! programs for garbage collection, block erases, the program of a user page
//! once it is full) is pushed as [`NandOp`]s into [`Ftl::ops`], which the
//! timing model ([`crate::flash`]) drains and schedules on its dies. Keeping
//! the two apart lets the FTL be tested alone (its invariants are property
//! tests) and lets preconditioning age a device by running the bookkeeping
//! without simulating a single IO.
//!
//! Addresses: the mapping unit (usually 4 KB) is the unit of everything. A
//! physical unit address (PPA) is `block * units_per_block + page *
//! units_per_page + slot`; blocks are numbered plane by plane (`block /
//! blocks_per_plane` is the plane), and a page may hold several units (a
//! controller that gangs chips in lock-step has large pages).
//!
//! Memory: the logical-to-physical table and the physical-to-logical
//! table (for garbage collection) hold exact entries only where the mapping
//! was written after preconditioning; a preconditioned drive's mapping is
//! otherwise a function of the address ([`layout`]: the striping of a
//! sequential fill, or a seeded permutation laid over an aged drive's
//! blocks), so it costs nothing until written. Tables up to
//! [`layout::DENSE_MAX_BYTES`] are dense `u32` arrays (zeroed memory the
//! host backs only where written), larger ones hash maps of the written
//! entries. Per erase block: about 40 bytes (its state, and with greedy
//! collection its place in the valid-count buckets).
//! `In-place` mapping (PCM) keeps no tables at all.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::Rng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

mod div;
pub mod layout;
pub mod mapcache;
mod steady;

pub(crate) use div::Div32;
pub(crate) use layout::prefetch;
use layout::{Layout, Striped, Table};
pub use steady::AGE_REPLAY_MAX_UNITS;

/// "No entry" in the mapping tables.
pub const NONE: u32 = u32::MAX;

/// How logical units map to physical ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mapping {
    /// Page-level mapping with out-of-place writes, garbage collection and
    /// wear levelling (NAND flash).
    Page,
    /// Write in place at a fixed address: no mapping table, no erase, no
    /// garbage collection (PCM, which is bit-alterable).
    InPlace,
}

/// How garbage collection picks a victim block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    /// The block with the fewest valid units.
    Greedy,
    /// The block maximising `(1 - u) / 2u * age` (Rosenblum and Ousterhout's
    /// cost-benefit), `u` its valid fraction, `age` the host units written
    /// since it was closed.
    CostBenefit,
    /// A uniformly random closed block that holds some invalid units
    /// (seeded).
    Random,
    /// The oldest closed block that holds some invalid units.
    Fifo,
}

/// Wear levelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WearLeveling {
    /// Free blocks are reused lowest number first: wear concentrates.
    None,
    /// Dynamic: the least-erased free block is opened next.
    Dynamic,
    /// Dynamic, plus static: every `static_wl_interval` erases in a plane,
    /// if the most-erased block of the plane leads the least-erased closed
    /// block by more than `static_wl_gap`, that cold block's data is moved
    /// so the block rejoins the free pool.
    Static,
}

/// State of the device when a run starts (the PSD study's "disk fullness").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precondition {
    /// Nothing written: every block erased, erase counts zero.
    Fresh,
    /// The first `fullness` of the logical space written sequentially once.
    Full,
    /// Steady state under uniform random overwrites of the `full` region:
    /// the free pool, each block's valid-unit count and its wear. A drive
    /// of at most [`AGE_REPLAY_MAX_UNITS`] raw units is aged by replay (as
    /// `aged-replay`); a larger one has its steady state derived from the
    /// replayed ageing of a drive of the same planes, block size, policy
    /// and block utilisation but fewer blocks per plane, scaled up (each
    /// block takes the valid count, erase count and age of its quantile in
    /// the small drive; which logical units a block holds is a seeded
    /// permutation). Ready in about a second at any capacity; its figures
    /// differ from a replay's by the sampling of the distribution.
    Aged,
    /// As `full`, then random overwrites of that region through the FTL's
    /// bookkeeping (no timing) until write amplification stops changing:
    /// the free pool and the valid-unit distribution are in steady state.
    /// Takes time in proportion to the capacity (about a minute for
    /// 512 GB); the exact replay the derived `aged` is checked against.
    AgedReplay,
}

/// What preconditioning did (reported apart from the measured jobs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PreconditionReport {
    /// Host units the preconditioning stands for: the fill plus the ageing
    /// overwrites (for a derived steady state, the small drive's scaled up).
    pub units_written: u64,
    /// Block erases it stands for (for a derived steady state, the sum of
    /// the derived erase counts).
    pub erases: u64,
    /// Units moved by garbage collection while ageing (scaled up likewise).
    pub units_moved: u64,
    /// Units actually written through the bookkeeping (the small drive's
    /// writes for a derived steady state; 0 for a `full` fill, which is
    /// computed, not replayed).
    pub units_replayed: u64,
    /// The steady state was derived from a smaller drive, not replayed.
    pub derived: bool,
}

/// `[ssd.ftl]`: the flash translation layer.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// Mapping scheme.
    pub mapping: Mapping,
    /// Bytes per mapping unit (logical page).
    pub map_unit_bytes: u64,
    /// Garbage-collection victim policy.
    pub gc_policy: GcPolicy,
    /// Collect garbage in a plane when its free blocks fall below this
    /// (at least 2: one block stays in reserve for garbage collection).
    pub gc_threshold_blocks: u32,
    /// Wear levelling.
    pub wear_leveling: WearLeveling,
    /// Static wear levelling: erase-count gap that triggers a move.
    pub static_wl_gap: u32,
    /// Static wear levelling: check once every this many erases per plane.
    pub static_wl_interval: u32,
    /// Device state at the start of a run.
    pub precondition: Precondition,
    /// Fraction of the logical space written by preconditioning, 0..=1.
    pub fullness: f64,
    /// Seed of every random choice of the FTL (random victims, aging).
    pub seed: u64,
    /// The controller's cached mapping table (`[ssd.ftl.map_cache]`; off
    /// by default: the whole map is resident). See [`mapcache`].
    #[serde(default)]
    pub map_cache: mapcache::MapCacheConfig,
}

/// Physical organisation seen by the FTL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Planes in the whole device.
    pub planes: u32,
    /// Erase blocks per plane.
    pub blocks_per_plane: u32,
    /// Pages per block.
    pub pages_per_block: u32,
    /// Mapping units per page.
    pub units_per_page: u32,
}

impl Geometry {
    /// Units per block.
    #[inline]
    pub fn units_per_block(&self) -> u32 {
        self.pages_per_block * self.units_per_page
    }
    /// All physical units.
    pub fn raw_units(&self) -> u64 {
        self.planes as u64 * self.blocks_per_plane as u64 * self.units_per_block() as u64
    }
}

/// What a NAND operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NandKind {
    /// Read a page into the controller.
    Read,
    /// Program a page.
    Program,
    /// Erase a block.
    Erase,
}

/// NAND work implied by a bookkeeping change, for the timing model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandOp {
    /// Read, program or erase.
    pub kind: NandKind,
    /// Global block number (its plane is `block / blocks_per_plane`).
    pub block: u32,
    /// Page within the block (0 for an erase).
    pub page: u32,
    /// Garbage collection or wear levelling (background) rather than the
    /// host's own data.
    pub background: bool,
    /// Units that move between the controller and the die: the valid units
    /// read for garbage collection, or for a host page program the host
    /// units it carries (the rest is padding).
    pub units: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BState {
    Free,
    Open,
    Closed,
}

/// An erase block's state. The greedy buckets' links live here too, not
/// in arrays of their own: a host write's invalidation changes the valid
/// count and the bucket of a block at random, and one cache line for both
/// is one miss instead of four.
#[derive(Clone, Copy, Debug)]
struct Block {
    valid: u32,
    erases: u32,
    next_unit: u32,
    state: BState,
    /// Its contents are still the layout's (not erased since
    /// preconditioning).
    virt: bool,
    closed_at: u64,
    /// Greedy buckets: the next and previous block of its bucket, and
    /// its bucket (NONE when in none).
    bnext: u32,
    bprev: u32,
    bat: u32,
}

/// Greedy collection's index: per plane, the reclaimable closed blocks in
/// buckets by valid count (intrusive doubly linked lists through
/// [`Block`]), and the lowest bucket that may be non-empty, so a victim is
/// found without scanning the plane.
///
/// A bucket holds the blocks of `2^shift` consecutive valid counts, and
/// the victim is the least key of its plane's lowest non-empty bucket,
/// so the choice is the same at any width. Wider buckets trade the lists'
/// upkeep for that search: a host write's invalidation moves its block to
/// another bucket only when its count crosses a multiple of the width
/// (relinking touches the block's two neighbours and the new bucket's
/// head: three cache lines of a table far larger than the caches), and a
/// victim search walks a bucket that many times fuller. See
/// [`Buckets::shift_for`].
struct Buckets {
    upb: u32,
    shift: u32,
    /// Buckets per plane.
    nb: u32,
    head: Vec<u32>,
    low: Vec<u32>,
}

impl Buckets {
    /// `None` where the allocation fails (the sizes come from the user).
    fn new(planes: u32, upb: u32, bpp: u32) -> Option<Self> {
        let shift = Self::shift_for(upb, bpp);
        let nb = ((upb.max(1) - 1) >> shift) + 1;
        Some(Buckets {
            upb,
            shift,
            nb,
            head: try_filled(planes as usize * nb as usize, NONE).ok()?,
            low: try_filled(planes as usize, nb).ok()?,
        })
    }

    /// The bucket width (log2) for `bpp` blocks of `upb` units per plane:
    /// near the width `w` that costs a host write the fewest cache lines.
    /// Relinking costs three lines once per `w` invalidations. A plane
    /// collects a victim about every `upb / 6` of its host writes (the
    /// reclaimable share of a greedy victim at typical spare space), and
    /// its closed blocks spread over about the top fifth of the counts, so
    /// a bucket holds about `5 w bpp / upb` blocks, two lines each to
    /// search: `3 / w + 60 w bpp / upb^2` lines per write, least at
    /// `w^2 = upb^2 / (20 bpp)` (4 for `sata-ssd`'s 512-unit blocks up to
    /// about 120 GB, 2 up to about 480 GB, 1 above). Speed only: every width picks the same
    /// victim.
    fn shift_for(upb: u32, bpp: u32) -> u32 {
        let r =
            (upb as u128 * upb as u128 / (20 * bpp.max(1) as u128)).min(u64::MAX as u128) as u64;
        if r < 4 {
            0
        } else {
            ((63 - r.leading_zeros()) / 2).min(16)
        }
    }

    /// The bucket of a block with `valid` units (`valid < upb`).
    #[inline]
    fn bucket(&self, valid: u32) -> u32 {
        valid >> self.shift
    }

    #[inline]
    fn insert(&mut self, blocks: &mut [Block], plane: u32, b: u32, valid: u32) {
        if valid >= self.upb {
            return;
        }
        debug_assert_eq!(
            blocks[b as usize].bat, NONE,
            "block {b} twice in the buckets"
        );
        let c = self.bucket(valid);
        let h = (plane * self.nb + c) as usize;
        let old = self.head[h];
        let blk = &mut blocks[b as usize];
        blk.bnext = old;
        blk.bprev = NONE;
        blk.bat = c;
        if old != NONE {
            blocks[old as usize].bprev = b;
        }
        self.head[h] = b;
        let l = &mut self.low[plane as usize];
        *l = (*l).min(c);
    }

    #[inline]
    fn remove(&mut self, blocks: &mut [Block], plane: u32, b: u32) {
        let blk = &mut blocks[b as usize];
        let v = blk.bat;
        if v == NONE {
            return;
        }
        let (n, p) = (blk.bnext, blk.bprev);
        blk.bat = NONE;
        if p == NONE {
            self.head[(plane * self.nb + v) as usize] = n;
        } else {
            blocks[p as usize].bnext = n;
        }
        if n != NONE {
            blocks[n as usize].bprev = p;
        }
    }

    /// Closed block `b` now holds `valid` units (fewer than before): move
    /// it to that count's bucket unless it is there already.
    #[inline]
    fn lowered(&mut self, blocks: &mut [Block], plane: u32, b: u32, valid: u32) {
        if valid < self.upb && blocks[b as usize].bat == self.bucket(valid) {
            return;
        }
        self.remove(blocks, plane, b);
        self.insert(blocks, plane, b, valid);
    }

    /// The greedy victim of `plane`: the block with the fewest valid units,
    /// ties to the earliest closed then the lowest number, except that
    /// among empty blocks the lowest number wins (as the scan it replaces).
    fn victim(&mut self, plane: u32, blocks: &[Block]) -> Option<u32> {
        let p = plane as usize;
        while self.low[p] < self.nb {
            let c = self.low[p];
            let mut b = self.head[(plane * self.nb + c) as usize];
            if b == NONE {
                self.low[p] += 1;
                continue;
            }
            let key = |b: u32| {
                let blk = &blocks[b as usize];
                (blk.valid, if blk.valid == 0 { 0 } else { blk.closed_at }, b)
            };
            let mut best = key(b);
            while b != NONE {
                best = best.min(key(b));
                b = blocks[b as usize].bnext;
            }
            return Some(best.2);
        }
        None
    }
}

/// Bookkeeping counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FtlCounters {
    /// Units written by the host.
    pub host_units: u64,
    /// Units moved by garbage collection and wear levelling.
    pub moved_units: u64,
    /// Units skipped to program a partly filled page (flush, FUA).
    pub padded_units: u64,
    /// Victim blocks collected.
    pub gc_runs: u64,
    /// Blocks moved by static wear levelling.
    pub wl_moves: u64,
    /// Block erases.
    pub erases: u64,
    /// Units trimmed that were mapped.
    pub trimmed_units: u64,
}

/// The flash translation layer.
pub struct Ftl {
    geo: Geometry,
    upb: u32,
    /// Division by units per block, units per page and blocks per plane
    /// (shifts or multiplies: see [`Div32`]).
    upb_div: Div32,
    upp_div: Div32,
    bpp_div: Div32,
    lpns: u32,
    mapping: Mapping,
    policy: GcPolicy,
    wl: WearLeveling,
    threshold: u32,
    wl_gap: u32,
    wl_interval: u32,
    l2p: Table,
    p2l: Table,
    /// The mapping of what the tables do not hold.
    layout: Layout,
    /// Logical units holding data.
    mapped: u64,
    seed: u64,
    blocks: Vec<Block>,
    buckets: Option<Buckets>,
    free: Vec<BinaryHeap<Reverse<(u32, u32)>>>,
    open_user: Vec<u32>,
    open_gc: Vec<u32>,
    /// Allocation order of planes for host writes (channel-first striping).
    order: Vec<u32>,
    cursor: usize,
    erases_since_wl: Vec<u32>,
    /// In-place mapping: program counts per block (the wear of PCM).
    inplace_writes: Vec<u32>,
    rng: rand_pcg::Pcg64Mcg,
    emit: bool,
    leveling: bool,
    /// Host units written since the FTL was built (never reset): the age
    /// of closed blocks.
    clock: u64,
    /// NAND work produced since the caller last drained it.
    pub ops: Vec<NandOp>,
    /// Counters since the end of preconditioning.
    pub counters: FtlCounters,
    /// What preconditioning did.
    pub preconditioned: PreconditionReport,
}

/// Why an FTL cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FtlError {
    /// Not enough spare space for garbage collection to make progress.
    #[error(
        "{logical} logical units need at most {max} (raw {raw} units minus {reserve} reserved for garbage collection): lower the capacity or add blocks (the raw units are [ssd.nand] channels x dies_per_channel x planes_per_die x blocks_per_plane x pages_per_block pages)"
    )]
    TooFull {
        /// Logical units asked for.
        logical: u64,
        /// The most that fits.
        max: u64,
        /// Raw units.
        raw: u64,
        /// Units reserved.
        reserve: u64,
    },
    /// More units than a `u32` address can name.
    #[error("{0} physical units do not fit a 32-bit address")]
    TooLarge(u64),
    /// The mapping tables do not fit this host's memory.
    #[error(
        "the FTL's tables need {bytes} bytes ({logical} logical and {raw} physical units), more than this host can allocate: lower the capacity or the raw geometry, or map larger units ([ssd.ftl] map_unit_bytes)"
    )]
    OutOfMemory {
        /// Bytes the tables needed.
        bytes: u64,
        /// Logical units asked for.
        logical: u64,
        /// Raw units.
        raw: u64,
    },
}

/// `n` copies of `value`, or an error where a plain `vec!` would abort the
/// process: the tables scale with the configured capacity, which comes
/// from the user.
fn try_filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>, std::collections::TryReserveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)?;
    v.resize(n, value);
    Ok(v)
}

impl Ftl {
    /// An FTL over `geo` exposing `logical_units`. `order` lists every plane
    /// once: the order host writes stripe over them.
    pub fn new(
        cfg: &FtlConfig,
        geo: Geometry,
        logical_units: u64,
        order: Vec<u32>,
    ) -> Result<Self, FtlError> {
        Self::check_fit(cfg, geo, logical_units)?;
        let raw = geo.raw_units();
        let upb = geo.units_per_block();
        let threshold = cfg.gc_threshold_blocks.max(2);
        let page = cfg.mapping == Mapping::Page;
        debug_assert_eq!(order.len(), geo.planes as usize);
        let nblocks = (geo.planes * geo.blocks_per_plane) as usize;
        let oom = || FtlError::OutOfMemory {
            bytes: (if page {
                4 * (logical_units + raw)
            } else {
                4 * nblocks as u64
            }) + (std::mem::size_of::<Block>() * nblocks) as u64,
            logical: logical_units,
            raw,
        };
        let blocks = try_filled(
            nblocks,
            Block {
                valid: 0,
                erases: 0,
                next_unit: 0,
                state: BState::Free,
                virt: false,
                closed_at: 0,
                bnext: NONE,
                bprev: NONE,
                bat: NONE,
            },
        )
        .map_err(|_| oom())?;
        let dense = 4 * (logical_units + raw) <= layout::DENSE_MAX_BYTES;
        let (l2p, p2l, inplace_writes) = if page {
            let l2p = Table::new(logical_units as usize, dense).ok_or_else(oom)?;
            (
                l2p,
                // the reverse table in 4 KB pages: it is written a block
                // at a time as blocks are reused, so the host backs (and
                // zeroes) only the reused blocks' share of it (a third
                // after a million GC writes on an aged 64 GB drive) where
                // 2 MB pages backed all of it within the first writes
                // (the zeroing was a thirteenth of the run); its random
                // accesses, one invalidation per host write, gain less
                // from huge pages than that costs
                Table::new_paged(raw as usize, dense, false).ok_or_else(oom)?,
                Vec::new(),
            )
        } else {
            (
                Table::empty(),
                Table::empty(),
                try_filled(nblocks, 0).map_err(|_| oom())?,
            )
        };
        let buckets = if page && cfg.gc_policy == GcPolicy::Greedy {
            Some(Buckets::new(geo.planes, upb, geo.blocks_per_plane).ok_or_else(oom)?)
        } else {
            None
        };
        let mut ftl = Self {
            geo,
            upb,
            upb_div: Div32::new(upb),
            upp_div: Div32::new(geo.units_per_page),
            bpp_div: Div32::new(geo.blocks_per_plane),
            lpns: logical_units as u32,
            mapping: cfg.mapping,
            policy: cfg.gc_policy,
            wl: cfg.wear_leveling,
            threshold,
            wl_gap: cfg.static_wl_gap.max(1),
            wl_interval: cfg.static_wl_interval.max(1),
            l2p,
            p2l,
            layout: Layout::None,
            mapped: 0,
            seed: cfg.seed,
            blocks,
            buckets,
            free: (0..geo.planes).map(|_| BinaryHeap::new()).collect(),
            open_user: vec![NONE; geo.planes as usize],
            open_gc: vec![NONE; geo.planes as usize],
            order,
            cursor: 0,
            erases_since_wl: vec![0; geo.planes as usize],
            inplace_writes,
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(cfg.seed),
            emit: true,
            leveling: false,
            clock: 0,
            ops: Vec::new(),
            counters: FtlCounters::default(),
            preconditioned: PreconditionReport::default(),
        };
        if page {
            for b in 0..nblocks as u32 {
                ftl.push_free(b);
            }
        }
        Ok(ftl)
    }

    /// Check, without building anything, that `logical_units` fit `geo`
    /// with the space garbage collection needs: per plane, the collection
    /// threshold plus an open host block and an open collection block.
    pub fn check_fit(cfg: &FtlConfig, geo: Geometry, logical_units: u64) -> Result<(), FtlError> {
        let raw = geo.raw_units();
        if raw >= NONE as u64 {
            return Err(FtlError::TooLarge(raw));
        }
        let threshold = cfg.gc_threshold_blocks.max(2) as u64;
        let reserve = match cfg.mapping {
            Mapping::Page => geo.planes as u64 * (threshold + 2) * geo.units_per_block() as u64,
            Mapping::InPlace => 0,
        };
        if logical_units + reserve > raw {
            return Err(FtlError::TooFull {
                logical: logical_units,
                max: raw.saturating_sub(reserve),
                raw,
                reserve,
            });
        }
        Ok(())
    }

    /// The geometry.
    pub fn geometry(&self) -> Geometry {
        self.geo
    }

    /// Logical units exposed.
    pub fn logical_units(&self) -> u32 {
        self.lpns
    }

    /// The mapping scheme.
    pub fn mapping(&self) -> Mapping {
        self.mapping
    }

    #[inline]
    fn plane_of_block(&self, b: u32) -> u32 {
        self.bpp_div.div(b)
    }

    #[inline]
    fn free_key(&self, b: u32) -> (u32, u32) {
        match self.wl {
            WearLeveling::None => (0, b),
            _ => (self.blocks[b as usize].erases, b),
        }
    }

    fn push_free(&mut self, b: u32) {
        let key = self.free_key(b);
        let p = self.plane_of_block(b) as usize;
        self.free[p].push(Reverse(key));
    }

    /// Free blocks in plane `p`.
    pub fn free_blocks(&self, p: u32) -> usize {
        self.free[p as usize].len()
    }

    /// The mapping of `lpn`: the table's entry, else the layout's.
    #[inline]
    fn l2p_get(&self, lpn: u32) -> u32 {
        match self.l2p.raw(lpn) {
            Some(p) => p,
            None => self.layout.ppa(lpn),
        }
    }

    /// The logical unit at `ppa`: the reverse table's entry if the
    /// logical unit's own entry still points here, else the layout's if
    /// the block still holds the layout's contents and that logical unit
    /// has not been written, trimmed or moved since.
    ///
    /// Reverse entries are written when a unit is programmed and never
    /// cleared: a unit that is overwritten, trimmed or moved is made
    /// invalid by its logical unit's entry alone (which then names another
    /// unit, or none), so a host write changes one random entry, not two
    /// (the reverse one was a cache miss and, in 4 KB pages, a page walk
    /// per write), and garbage collection, which reads a victim's reverse
    /// entries and the entries of the logical units they name anyway,
    /// checks each against the other.
    #[inline]
    fn p2l_get(&self, ppa: u32) -> u32 {
        if let Some(l) = self.p2l.raw(ppa) {
            return if l != NONE && self.l2p.raw(l) == Some(ppa) {
                l
            } else {
                NONE
            };
        }
        if !self.blocks[self.upb_div.div(ppa) as usize].virt {
            return NONE;
        }
        let l = self.layout.lpn(ppa);
        if l != NONE && self.l2p.raw(l).is_none() {
            l
        } else {
            NONE
        }
    }

    /// Bring the mapping entry of `lpn` into cache ahead of a host write
    /// or read of it (a hint: changes nothing).
    #[inline]
    pub fn prefetch(&self, lpn: u32) {
        if self.mapping == Mapping::Page && lpn < self.lpns {
            self.l2p.prefetch(lpn);
            self.layout.prefetch(lpn);
        }
    }

    /// Bring into cache what a host write of `lpn` changes besides its
    /// own mapping entry: the block of the unit it holds now (a hint:
    /// changes nothing). It reads that mapping entry, so call it once an
    /// earlier [`Self::prefetch`] has brought it.
    #[inline]
    pub fn prefetch_overwrite(&self, lpn: u32) {
        if self.mapping == Mapping::Page && lpn < self.lpns {
            let old = self.l2p_get(lpn);
            if old != NONE {
                layout::prefetch(&self.blocks[self.block_of(old) as usize]);
            }
        }
    }

    #[inline]
    fn l2p_set(&mut self, lpn: u32, ppa: u32) {
        if ppa == NONE && !self.layout.covers(lpn) {
            self.l2p.clear(lpn);
        } else {
            self.l2p.set(lpn, ppa);
        }
    }

    #[inline]
    fn p2l_set(&mut self, ppa: u32, lpn: u32) {
        if lpn == NONE {
            self.p2l.clear(ppa);
        } else {
            self.p2l.set(ppa, lpn);
        }
    }

    /// Physical unit of logical unit `lpn`, if it holds data.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<u32> {
        match self.mapping {
            Mapping::Page => {
                let p = self.l2p_get(lpn);
                (p != NONE).then_some(p)
            }
            Mapping::InPlace => Some(self.inplace_ppa(lpn)),
        }
    }

    /// In-place address: units stripe over planes in `order`, then fill
    /// each plane's blocks in turn.
    #[inline]
    fn inplace_ppa(&self, lpn: u32) -> u32 {
        let np = self.geo.planes;
        let plane = self.order[(lpn % np) as usize];
        let idx = lpn / np;
        let block = plane * self.geo.blocks_per_plane + idx / self.upb;
        block * self.upb + idx % self.upb
    }

    /// Global block of a physical unit.
    #[inline]
    pub fn block_of(&self, ppa: u32) -> u32 {
        self.upb_div.div(ppa)
    }

    /// Page (within its block) of a physical unit.
    #[inline]
    pub fn page_of(&self, ppa: u32) -> u32 {
        self.upp_div.div(self.upb_div.rem(ppa))
    }

    /// Host write of logical unit `lpn`; returns its new physical unit.
    pub fn write(&mut self, lpn: u32) -> u32 {
        debug_assert!(lpn < self.lpns);
        self.counters.host_units += 1;
        self.clock += 1;
        if self.mapping == Mapping::InPlace {
            let ppa = self.inplace_ppa(lpn);
            let b = self.block_of(ppa);
            self.inplace_writes[b as usize] = self.inplace_writes[b as usize].saturating_add(1);
            if self.emit {
                self.ops.push(NandOp {
                    kind: NandKind::Program,
                    block: b,
                    page: self.page_of(ppa),
                    background: false,
                    units: 1,
                });
            }
            return ppa;
        }
        let np = self.order.len();
        let mut tried = 0;
        let ppa = loop {
            let plane = self.order[self.cursor];
            if let Some(ppa) = self.alloc_user(plane) {
                break ppa;
            }
            // this plane cannot make room (all its data valid): try the next
            tried += 1;
            assert!(
                tried < np,
                "FTL: no plane can make a free block (over-provisioning exhausted)"
            );
            self.cursor = (self.cursor + 1) % np;
        };
        // count the new unit first: if it closed its block, the block
        // joins the greedy buckets before the old unit (maybe in it) goes
        let b = self.block_of(ppa);
        self.count_valid(b);
        if !self.invalidate(lpn) {
            self.mapped += 1;
        }
        self.l2p_set(lpn, ppa);
        self.p2l_set(ppa, lpn);
        ppa
    }

    /// One more valid unit in block `b`, just programmed: if that closed
    /// it, it joins the greedy buckets.
    #[inline]
    fn count_valid(&mut self, b: u32) {
        let blk = &mut self.blocks[b as usize];
        blk.valid += 1;
        if blk.state == BState::Closed {
            let valid = blk.valid;
            if let Some(bk) = &mut self.buckets {
                bk.insert(&mut self.blocks, self.bpp_div.div(b), b, valid);
            }
        }
    }

    /// Allocate a unit for host data in `plane`; `None` when the plane
    /// cannot get a free block.
    fn alloc_user(&mut self, plane: u32) -> Option<u32> {
        let p = plane as usize;
        if self.open_user[p] == NONE {
            // keep one block in reserve for garbage collection
            self.ensure_free(plane);
            if self.free[p].len() < 2 {
                return None;
            }
            let b = self.take_free(plane);
            self.open_user[p] = b;
        }
        let b = self.open_user[p];
        let ppa = self.bump(b, false);
        // a full page moves host writes on to the next plane
        if self.upp_div.rem(self.upb_div.rem(ppa) + 1) == 0 {
            self.cursor = (self.cursor + 1) % self.order.len();
        }
        if self.blocks[b as usize].state == BState::Closed {
            self.open_user[p] = NONE;
        }
        Some(ppa)
    }

    /// Allocate a unit for moved data in `plane` (always succeeds: the
    /// reserve guarantees a block).
    fn alloc_gc(&mut self, plane: u32) -> u32 {
        let p = plane as usize;
        if self.open_gc[p] == NONE {
            assert!(
                !self.free[p].is_empty(),
                "FTL: garbage collection found no free block in plane {plane}"
            );
            let b = self.take_free(plane);
            self.open_gc[p] = b;
        }
        let b = self.open_gc[p];
        let ppa = self.bump(b, true);
        if self.blocks[b as usize].state == BState::Closed {
            self.open_gc[p] = NONE;
        }
        ppa
    }

    fn take_free(&mut self, plane: u32) -> u32 {
        let Reverse((_, b)) = self.free[plane as usize]
            .pop()
            .expect("caller checked the pool");
        let blk = &mut self.blocks[b as usize];
        debug_assert_eq!(blk.state, BState::Free);
        blk.state = BState::Open;
        blk.next_unit = 0;
        b
    }

    /// Take the next unit of open block `b`; emit its page's program when
    /// the page is full; close the block when it is full.
    fn bump(&mut self, b: u32, background: bool) -> u32 {
        let (upb, upp_div) = (self.upb, self.upp_div);
        let blk = &mut self.blocks[b as usize];
        let u = blk.next_unit;
        blk.next_unit += 1;
        let full = blk.next_unit == upb;
        if full {
            blk.state = BState::Closed;
            blk.closed_at = self.clock;
        }
        if upp_div.rem(u + 1) == 0 && self.emit {
            self.ops.push(NandOp {
                kind: NandKind::Program,
                block: b,
                page: upp_div.div(u),
                background,
                units: if background { 0 } else { upp_div.d() },
            });
        }
        b * upb + u
    }

    /// Drop the physical unit `lpn` held (its block counts one valid unit
    /// fewer); the caller sets the new entry. Returns whether it was
    /// mapped.
    #[inline]
    fn invalidate(&mut self, lpn: u32) -> bool {
        let old = self.l2p_get(lpn);
        if old == NONE {
            return false;
        }
        // the reverse entry stays: the caller's new entry for `lpn` is
        // what makes `old` invalid (see `p2l_get`)
        let b = self.block_of(old);
        let blk = &mut self.blocks[b as usize];
        blk.valid -= 1;
        if blk.state == BState::Closed {
            let valid = blk.valid;
            if let Some(bk) = &mut self.buckets {
                bk.lowered(&mut self.blocks, self.bpp_div.div(b), b, valid);
            }
        }
        true
    }

    /// Discard logical unit `lpn` (TRIM).
    pub fn trim(&mut self, lpn: u32) {
        if self.mapping == Mapping::Page && self.invalidate(lpn) {
            self.l2p_set(lpn, NONE);
            self.mapped -= 1;
            self.counters.trimmed_units += 1;
        }
    }

    /// Program every partly filled host page now, skipping its empty units
    /// (a flush or FUA write must not wait for a page to fill). Returns the
    /// number of pages padded.
    pub fn pad_open_pages(&mut self) -> u32 {
        if self.mapping == Mapping::InPlace {
            return 0;
        }
        let upp = self.geo.units_per_page;
        if upp == 1 {
            return 0;
        }
        let mut padded = 0;
        for p in 0..self.open_user.len() {
            let b = self.open_user[p];
            if b == NONE {
                continue;
            }
            let filled = self.blocks[b as usize].next_unit % upp;
            if filled == 0 {
                continue;
            }
            let skip = upp - filled;
            let blk = &mut self.blocks[b as usize];
            let page = blk.next_unit / upp;
            blk.next_unit += skip;
            self.counters.padded_units += skip as u64;
            if blk.next_unit == self.upb {
                blk.state = BState::Closed;
                blk.closed_at = self.clock;
                let valid = blk.valid;
                if let Some(bk) = &mut self.buckets {
                    bk.insert(&mut self.blocks, self.bpp_div.div(b), b, valid);
                }
                self.open_user[p] = NONE;
            }
            if self.emit {
                self.ops.push(NandOp {
                    kind: NandKind::Program,
                    block: b,
                    page,
                    background: false,
                    units: filled,
                });
            }
            padded += 1;
            // the stripe moves on, as after a full page
            if self.order[self.cursor] == p as u32 {
                self.cursor = (self.cursor + 1) % self.order.len();
            }
        }
        padded
    }

    /// Collect garbage in `plane` until it has `threshold` free blocks or
    /// nothing more can be reclaimed.
    fn ensure_free(&mut self, plane: u32) {
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

    fn scan_victim(&mut self, plane: u32) -> Option<u32> {
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
    fn move_block(&mut self, v: u32) {
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

    /// Static wear levelling in one plane.
    fn static_level(&mut self, plane: u32) {
        if self.leveling || self.free[plane as usize].len() < 2 {
            return;
        }
        let bpp = self.geo.blocks_per_plane;
        let lo = plane * bpp;
        let mut max = 0;
        let mut cold: Option<(u32, u32)> = None;
        for b in lo..lo + bpp {
            let blk = &self.blocks[b as usize];
            max = max.max(blk.erases);
            if blk.state == BState::Closed && cold.is_none_or(|(e, _)| blk.erases < e) {
                cold = Some((blk.erases, b));
            }
        }
        if let Some((e, b)) = cold {
            if max - e > self.wl_gap {
                self.counters.wl_moves += 1;
                self.leveling = true;
                self.move_block(b);
                self.leveling = false;
            }
        }
    }

    /// Bring the device to the configured starting state without timing:
    /// no NAND work is emitted and the counters restart at zero (erase
    /// counts per block are kept: an aged device is worn). What it did is
    /// in [`Ftl::preconditioned`].
    pub fn precondition(&mut self, kind: Precondition, fullness: f64) {
        self.precondition_with(kind, fullness, AGE_REPLAY_MAX_UNITS);
    }

    /// As [`Ftl::precondition`], with `aged` replayed on drives of at most
    /// `replay_max_units` raw units and derived above (tests compare the
    /// two on one drive by lowering it).
    pub fn precondition_with(&mut self, kind: Precondition, fullness: f64, replay_max_units: u64) {
        let n = ((fullness.clamp(0.0, 1.0) * self.lpns as f64) as u64).min(self.lpns as u64) as u32;
        if kind == Precondition::Fresh || n == 0 {
            return;
        }
        self.emit = false;
        let page = self.mapping == Mapping::Page;
        let derived =
            (page && kind == Precondition::Aged && self.geo.raw_units() > replay_max_units)
                .then(|| steady::derive(self, n, replay_max_units))
                .flatten();
        let report = match derived {
            Some(r) => r,
            None => self.fill_and_age(n, page && kind != Precondition::Full),
        };
        self.emit = true;
        self.ops.clear();
        self.counters = FtlCounters::default();
        self.preconditioned = report;
    }

    /// Write `0..n` sequentially, then (if `age`) overwrite that region at
    /// random until write amplification settles.
    fn fill_and_age(&mut self, n: u32, age: bool) -> PreconditionReport {
        let computed = self.fill_striped(n);
        if !computed {
            for lpn in 0..n {
                self.write(lpn);
            }
        }
        let filled = self.counters;
        if age {
            let chunk = (n / 8).max(1) as u64;
            let mut prev = f64::NAN;
            let mut total = 0u64;
            loop {
                let (h0, m0) = (self.counters.host_units, self.counters.moved_units);
                for _ in 0..chunk {
                    let lpn = self.rng.gen_range(0..n);
                    self.write(lpn);
                }
                total += chunk;
                let wa = (chunk + self.counters.moved_units - m0) as f64
                    / (self.counters.host_units - h0) as f64;
                let settled = total >= n as u64 && (wa - prev).abs() <= 0.01 * wa;
                if settled || total >= 6 * n as u64 {
                    break;
                }
                prev = wa;
            }
        }
        let c = self.counters;
        PreconditionReport {
            units_written: n as u64 + c.host_units - filled.host_units,
            erases: c.erases,
            units_moved: c.moved_units,
            units_replayed: c.host_units - if computed { n as u64 } else { 0 },
            derived: false,
        }
    }

    /// The state sequential writes of `0..n` leave on a fresh page-mapped
    /// drive, computed instead of replayed: the mapping is the
    /// [`Striped`] layout, each plane's first blocks are full (closed
    /// when their last unit was written) and the next one open. Returns
    /// false (nothing done) if the drive is not fresh or a plane would
    /// run short of free blocks (then the caller replays the writes).
    fn fill_striped(&mut self, n: u32) -> bool {
        if self.mapping != Mapping::Page || self.clock != 0 || n == 0 {
            return false;
        }
        let np = self.order.len() as u64;
        let (upp, upb, bpp) = (
            self.geo.units_per_page as u64,
            self.upb as u64,
            self.geo.blocks_per_plane as u64,
        );
        let full_pages = n as u64 / upp;
        let rem = n as u64 % upp;
        let units_of = |k: u64| {
            let pages = full_pages / np + u64::from(k < full_pages % np);
            pages * upp
                + if rem > 0 && k == full_pages % np {
                    rem
                } else {
                    0
                }
        };
        for k in 0..np {
            if units_of(k).div_ceil(upb) + self.threshold as u64 > bpp {
                return false;
            }
        }
        for k in 0..np {
            let plane = self.order[k as usize];
            let units = units_of(k);
            let used = units.div_ceil(upb);
            for j in 0..used {
                let b = (plane as u64 * bpp + j) as u32;
                let filled = (units - j * upb).min(upb);
                let blk = &mut self.blocks[b as usize];
                blk.valid = filled as u32;
                blk.next_unit = filled as u32;
                blk.virt = true;
                if filled == upb {
                    // the clock when its last unit was written
                    let u = j * upb + upb - 1;
                    let lpn = ((u / upp) * np + k) * upp + u % upp;
                    blk.state = BState::Closed;
                    blk.closed_at = lpn + 1;
                } else {
                    blk.state = BState::Open;
                    self.open_user[plane as usize] = b;
                }
            }
            self.rebuild_free(plane);
        }
        self.cursor = (full_pages % np) as usize;
        self.clock = n as u64;
        self.mapped = n as u64;
        self.counters.host_units = n as u64;
        self.layout = Layout::Striped(Striped::new(
            n,
            upp as u32,
            upb as u32,
            bpp as u32,
            self.order.clone(),
        ));
        true
    }

    /// Rebuild `plane`'s free pool and greedy buckets from its blocks'
    /// states.
    fn rebuild_free(&mut self, plane: u32) {
        let bpp = self.geo.blocks_per_plane;
        let lo = plane * bpp;
        let mut keys = Vec::new();
        for b in lo..lo + bpp {
            if self.blocks[b as usize].state == BState::Free {
                keys.push(Reverse(self.free_key(b)));
            }
        }
        self.free[plane as usize] = BinaryHeap::from(keys);
        if let Some(bk) = &mut self.buckets {
            for b in lo..lo + bpp {
                bk.remove(&mut self.blocks, plane, b);
                let blk = self.blocks[b as usize];
                if blk.state == BState::Closed {
                    bk.insert(&mut self.blocks, plane, b, blk.valid);
                }
            }
        }
    }

    /// Erase counts: (blocks, max, mean). For in-place mapping, programs
    /// per block.
    pub fn wear(&self) -> (u64, u64, f64) {
        let (n, max, sum) = if self.mapping == Mapping::InPlace {
            let s: u64 = self.inplace_writes.iter().map(|&c| c as u64).sum();
            (
                self.inplace_writes.len(),
                self.inplace_writes.iter().copied().max().unwrap_or(0),
                s,
            )
        } else {
            let s: u64 = self.blocks.iter().map(|b| b.erases as u64).sum();
            (
                self.blocks.len(),
                self.blocks.iter().map(|b| b.erases).max().unwrap_or(0),
                s,
            )
        };
        (
            n as u64,
            max as u64,
            if n > 0 { sum as f64 / n as f64 } else { 0.0 },
        )
    }

    /// Erase count of every block (for tests and wear maps).
    pub fn erase_counts(&self) -> Vec<u32> {
        self.blocks.iter().map(|b| b.erases).collect()
    }

    /// Units programmed per host unit since preconditioning (1 when
    /// nothing was written).
    pub fn write_amplification(&self) -> f64 {
        let c = &self.counters;
        if c.host_units == 0 {
            return 1.0;
        }
        (c.host_units + c.moved_units + c.padded_units) as f64 / c.host_units as f64
    }

    /// Logical units currently holding data.
    pub fn mapped_units(&self) -> u64 {
        match self.mapping {
            Mapping::Page => self.mapped,
            Mapping::InPlace => self.lpns as u64,
        }
    }

    /// Check every invariant, returning the first violation: the mapping
    /// is a bijection between mapped logical units and valid physical
    /// units; every block's valid count matches; free blocks hold nothing
    /// and sit in their plane's pool exactly once; open blocks are the
    /// ones recorded as open.
    pub fn check(&self) -> Result<(), String> {
        if self.mapping == Mapping::InPlace {
            return Ok(());
        }
        let mut mapped = 0;
        for lpn in 0..self.lpns {
            let ppa = self.l2p_get(lpn);
            if ppa != NONE {
                mapped += 1;
                if self.p2l_get(ppa) != lpn {
                    return Err(format!(
                        "lpn {lpn} maps to {ppa} whose reverse entry is {}",
                        self.p2l_get(ppa)
                    ));
                }
            }
        }
        if mapped != self.mapped {
            return Err(format!("{mapped} units mapped, {} counted", self.mapped));
        }
        let mut valid = vec![0u32; self.blocks.len()];
        for ppa in 0..self.geo.raw_units() as u32 {
            let lpn = self.p2l_get(ppa);
            if lpn != NONE {
                if lpn >= self.lpns || self.l2p_get(lpn) != ppa {
                    return Err(format!("ppa {ppa} claims lpn {lpn}, which maps elsewhere"));
                }
                valid[(ppa / self.upb) as usize] += 1;
            }
        }
        let mut in_pool = vec![false; self.blocks.len()];
        for (p, heap) in self.free.iter().enumerate() {
            for Reverse((_, b)) in heap.iter() {
                let b = *b as usize;
                if in_pool[b] {
                    return Err(format!("block {b} twice in the free pool"));
                }
                if self.plane_of_block(b as u32) as usize != p {
                    return Err(format!("block {b} in the pool of plane {p}"));
                }
                in_pool[b] = true;
            }
        }
        for (i, b) in self.blocks.iter().enumerate() {
            if b.valid != valid[i] {
                return Err(format!(
                    "block {i} counts {} valid units, holds {}",
                    b.valid, valid[i]
                ));
            }
            if (b.state == BState::Free) != in_pool[i] {
                return Err(format!(
                    "block {i} is {:?} but in_pool={}",
                    b.state, in_pool[i]
                ));
            }
            if b.state == BState::Free && b.valid != 0 {
                return Err(format!("free block {i} holds data"));
            }
            if let Some(bk) = &self.buckets {
                let want = b.state == BState::Closed && b.valid < self.upb;
                let at = b.bat;
                if want != (at != NONE) || (want && at != bk.bucket(b.valid)) {
                    return Err(format!(
                        "block {i} ({:?}, {} valid) in greedy bucket {at}",
                        b.state, b.valid
                    ));
                }
            }
            let open = self.open_user.contains(&(i as u32)) || self.open_gc.contains(&(i as u32));
            if (b.state == BState::Open) != open {
                return Err(format!(
                    "block {i} is {:?}, open-list membership {open}",
                    b.state
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page-mapped FTL with greedy collection at 2 free blocks, no wear
    /// levelling, fresh: the small drives of these tests.
    fn greedy_page_config() -> FtlConfig {
        FtlConfig {
            mapping: Mapping::Page,
            map_unit_bytes: 4096,
            gc_policy: GcPolicy::Greedy,
            gc_threshold_blocks: 2,
            wear_leveling: WearLeveling::None,
            static_wl_gap: 4,
            static_wl_interval: 8,
            precondition: Precondition::Fresh,
            fullness: 0.0,
            seed: 3,
            map_cache: Default::default(),
        }
    }

    #[test]
    fn wide_greedy_buckets_pick_the_scans_victim() {
        // the width follows the geometry: one count per bucket on a large
        // plane, several on a small one
        assert_eq!(Buckets::shift_for(512, 28_000), 0);
        assert_eq!(Buckets::shift_for(512, 445), 2);
        assert!(Buckets::shift_for(256, 16) >= 3);
        for (bpp, ppb, upp) in [(24, 8, 1), (16, 32, 2), (12, 64, 4), (40, 16, 2)] {
            let geo = Geometry {
                planes: 2,
                blocks_per_plane: bpp,
                pages_per_block: ppb,
                units_per_page: upp,
            };
            let cfg = greedy_page_config();
            let logical = geo.raw_units() * 5 / 8;
            let mut f = Ftl::new(&cfg, geo, logical, vec![0, 1]).expect("fits");
            let shift = f.buckets.as_ref().expect("greedy").shift;
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
            for i in 0..logical * 6 {
                f.write(rng.gen_range(0..logical as u32));
                f.ops.clear();
                if i % 97 == 0 {
                    for plane in 0..2 {
                        let scan = f.scan_victim(plane);
                        let from_buckets =
                            f.buckets.as_mut().expect("greedy").victim(plane, &f.blocks);
                        assert_eq!(from_buckets, scan, "shift {shift}, write {i}");
                    }
                }
            }
            assert!(f.counters.gc_runs > 0);
            f.check().expect("consistent");
        }
    }

    #[test]
    fn a_reverse_entry_left_behind_is_invalid_and_never_moved() {
        // overwrites and trims leave the old units' reverse entries in
        // place: only the logical unit's own entry says where it is, and
        // collection must move exactly the units it names (fresh blocks,
        // a sequential fill's layout blocks, and a fill's open block that
        // took later writes: the three kinds of victim)
        let geo = Geometry {
            planes: 2,
            blocks_per_plane: 16,
            pages_per_block: 8,
            units_per_page: 2,
        };
        let cfg = greedy_page_config();
        let logical = geo.raw_units() * 5 / 8;
        for fill in [None, Some(0.9)] {
            let mut f = Ftl::new(&cfg, geo, logical, vec![0, 1]).expect("fits");
            if let Some(x) = fill {
                f.precondition(Precondition::Full, x);
            }
            let a = f.write(3);
            let b = f.write(3);
            assert_ne!(a, b);
            // the stale entry is still in the table, and says nothing
            assert_eq!(f.p2l.raw(a), Some(3));
            assert_eq!(f.p2l_get(a), NONE);
            assert_eq!(f.p2l_get(b), 3);
            f.trim(3);
            assert_eq!(f.p2l_get(b), NONE);
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
            for i in 0..logical * 8 {
                let l = rng.gen_range(0..logical as u32);
                if i % 13 == 0 {
                    f.trim(l);
                } else {
                    f.write(l);
                }
                f.ops.clear();
            }
            assert!(f.counters.gc_runs > 0);
            // every mapped unit's reverse entry names it, every other
            // unit holds nothing, and the valid counts agree
            f.check().expect("consistent");
        }
    }

    #[test]
    fn tables_too_large_to_allocate_are_an_error_not_an_abort() {
        assert!(try_filled(usize::MAX / 2, 0u32).is_err());
        let v = try_filled(5, 7u32).expect("small");
        assert_eq!(v, vec![7; 5]);
    }
}
