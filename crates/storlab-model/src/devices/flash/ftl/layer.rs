//! The flash translation layer's state: its tables, blocks, free pools and
//! open blocks; building it, checking it fits, its counters and its
//! invariants. The mapping, allocation, garbage collection, wear levelling
//! and preconditioning are in the files beside this one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::SeedableRng;

use super::blocks::{BState, Block, Buckets};
use super::config::FtlConfig;
use super::div::Div32;
use super::layout::{self, Layout, Table};
use super::types::{
    try_filled, GcPolicy, Geometry, Mapping, NandOp, PreconditionReport, WearLeveling, NONE,
};

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
    pub(super) geo: Geometry,
    pub(super) upb: u32,
    /// Division by units per block, units per page and blocks per plane
    /// (shifts or multiplies: see [`Div32`]).
    pub(super) upb_div: Div32,
    pub(super) upp_div: Div32,
    pub(super) bpp_div: Div32,
    pub(super) lpns: u32,
    pub(super) mapping: Mapping,
    pub(super) policy: GcPolicy,
    pub(super) wl: WearLeveling,
    pub(super) threshold: u32,
    /// `gc_pacing`: collection paced against host writes.
    pub(super) pacing: bool,
    /// `gc_pacing`: per plane, the victims being collected a few pages
    /// at a time, oldest (the one being moved) first.
    pub(super) collecting: Vec<std::collections::VecDeque<Collect>>,
    /// `gc_pacing`: per plane, the moves owed (units, fractional) to the
    /// host units taken so far.
    pub(super) gc_credit: Vec<f64>,
    pub(super) wl_gap: u32,
    pub(super) wl_interval: u32,
    pub(super) l2p: Table,
    pub(super) p2l: Table,
    /// The mapping of what the tables do not hold.
    pub(super) layout: Layout,
    /// Logical units holding data.
    pub(super) mapped: u64,
    pub(super) seed: u64,
    pub(super) blocks: Vec<Block>,
    pub(super) buckets: Option<Buckets>,
    pub(super) free: Vec<BinaryHeap<Reverse<(u32, u32)>>>,
    /// Open host blocks by stream and plane (`stream * planes + plane`;
    /// one stream unless [`Ftl::set_streams`] asked for more).
    pub(super) open_user: Vec<u32>,
    /// The stream host writes go to now ([`Ftl::set_stream`]).
    pub(super) stream: u32,
    pub(super) open_gc: Vec<u32>,
    /// Allocation order of planes for host writes (channel-first striping).
    pub(super) order: Vec<u32>,
    pub(super) cursor: usize,
    /// Valid units by plane (page mapping). Garbage collection and wear
    /// levelling move data within its plane, so only host writes, trims
    /// and preconditioning change these.
    pub(super) plane_valid: Vec<u32>,
    pub(super) erases_since_wl: Vec<u32>,
    /// In-place mapping: program counts per block (the wear of PCM).
    pub(super) inplace_writes: Vec<u32>,
    pub(super) rng: rand_pcg::Pcg64Mcg,
    pub(super) emit: bool,
    pub(super) leveling: bool,
    /// Host units written since the FTL was built (never reset): the age
    /// of closed blocks.
    pub(super) clock: u64,
    /// NAND work produced since the caller last drained it.
    pub ops: Vec<NandOp>,
    /// Counters since the end of preconditioning.
    pub counters: FtlCounters,
    /// What preconditioning did.
    pub preconditioned: PreconditionReport,
}

/// A victim collected a few pages at a time (`gc_pacing`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Collect {
    /// The victim block.
    pub(super) block: u32,
    /// Its pages before this one are moved.
    pub(super) next_page: u32,
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
            pacing: cfg.gc_pacing,
            collecting: vec![std::collections::VecDeque::new(); geo.planes as usize],
            gc_credit: vec![0.0; geo.planes as usize],
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
            stream: 0,
            open_gc: vec![NONE; geo.planes as usize],
            order,
            cursor: 0,
            plane_valid: vec![0; geo.planes as usize],
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
            // every block free, each plane's pool built at once: its keys
            // rise with the block, so the list is already a heap in the
            // order pushing them one by one would leave it (a push a block
            // was a third of building a 7.68 TB drive)
            let bpp = geo.blocks_per_plane;
            ftl.free = (0..geo.planes)
                .map(|p| {
                    let first = p * bpp;
                    let keys: Vec<_> = (first..first + bpp)
                        .map(|b| Reverse(ftl.free_key(b)))
                        .collect();
                    BinaryHeap::from(keys)
                })
                .collect();
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
    pub(super) fn plane_of_block(&self, b: u32) -> u32 {
        self.bpp_div.div(b)
    }

    #[inline]
    pub(super) fn free_key(&self, b: u32) -> (u32, u32) {
        match self.wl {
            WearLeveling::None => (0, b),
            _ => (self.blocks[b as usize].erases, b),
        }
    }

    pub(super) fn push_free(&mut self, b: u32) {
        let key = self.free_key(b);
        let p = self.plane_of_block(b) as usize;
        self.free[p].push(Reverse(key));
    }

    /// Free blocks in plane `p`.
    pub fn free_blocks(&self, p: u32) -> usize {
        self.free[p as usize].len()
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
        let bpp = self.geo.blocks_per_plane as usize;
        for (p, &counted) in self.plane_valid.iter().enumerate() {
            let holds: u32 = valid[p * bpp..(p + 1) * bpp].iter().sum();
            if counted != holds {
                return Err(format!(
                    "plane {p} counts {counted} valid units, holds {holds}"
                ));
            }
        }
        let total: u64 = self.plane_valid.iter().map(|&v| v as u64).sum();
        if total != self.mapped {
            return Err(format!(
                "planes count {total} valid units, {} mapped",
                self.mapped
            ));
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
