//! The SLC write cache of a TLC or QLC drive (`[ssd.nand.slc_cache]`):
//! host writes are programmed in SLC mode (one bit a cell, a fast
//! program) while the cache has room, then at the cell's native rate; the
//! cache is folded back (its data rewritten as native word lines) while
//! the drive is idle.
//!
//! The mechanism is the one consumer drives document: Samsung's
//! "Intelligent TurboWrite" (970/980/990 EVO and PRO data sheets and
//! white paper) keeps a small static SLC region plus a dynamic one made
//! of free native blocks used one bit a cell, so the dynamic part shrinks
//! as the drive fills: `capacity = static + min(dynamic_max, free /
//! bits_per_cell)`, `free` the logical space not holding data. When a
//! write finds the cache full it goes straight to native word lines (the
//! write-speed "cliff" reviews measure after some hundreds of GB). While
//! no command is outstanding the controller folds: it reads cached data
//! and programs it as native pages, at the array's native program rate
//! (every plane programming, `page_bytes` per mean `program_ns`); the
//! model credits a fold for each idle interval when the next command
//! arrives, so a fold never delays a host command (a simplification: a
//! fold in progress would hold its plane until its program ends).
//!
//! Bookkeeping simplifications: the FTL places cached data in its
//! ordinary blocks (the physical space SLC mode takes, three or four
//! times the native, is what the capacity formula charges), and reads of
//! cached data take the native read time.

use serde::{Deserialize, Serialize};

use crate::config::{check_range, ConfigError};
use crate::device::Nanos;

/// `[ssd.nand.slc_cache]`: an SLC write cache in front of native cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlcCacheConfig {
    /// Bytes of the static SLC region (always there, however full the
    /// drive).
    pub static_bytes: u64,
    /// Most bytes of the dynamic region (an empty drive's).
    pub dynamic_max_bytes: u64,
    /// Program time of a page in SLC mode.
    pub program_ns: u64,
}

impl SlcCacheConfig {
    /// Check the ranges; `bits` the native bits a cell.
    pub fn validate(&self, bits: usize) -> Result<(), ConfigError> {
        check_range(
            "ssd.nand.slc_cache.program_ns",
            self.program_ns,
            1,
            1_000_000_000,
        )?;
        if bits < 2 {
            return Err(ConfigError::Invalid {
                field: "ssd.nand.slc_cache".into(),
                message: "an SLC cache needs cells of two or more bits (mlc, tlc, qlc)".into(),
            });
        }
        Ok(())
    }
}

/// The cache's state and counters (units are mapping units).
#[derive(Clone, Debug)]
pub(super) struct SlcCache {
    pub(super) cfg: SlcCacheConfig,
    unit: u64,
    bits: u64,
    /// Units the cache holds, not yet folded.
    pub(super) held: u64,
    /// Host units programmed in SLC mode, and straight to native cells.
    pub(super) slc_units: u64,
    pub(super) native_units: u64,
    /// Units folded from SLC to native cells.
    pub(super) folded_units: u64,
    /// Units the whole array folds per ns (native program rate).
    fold_per_ns: f64,
    /// Commands outstanding, and when the drive last went quiet.
    live: u64,
    quiet_from: Nanos,
}

impl SlcCache {
    /// A cache of `cfg` on an array of `planes` planes, `upp` units a
    /// page and mean native program time `prog_ns`.
    pub(super) fn new(
        cfg: SlcCacheConfig,
        unit: u64,
        bits: usize,
        planes: u64,
        upp: u64,
        prog_ns: f64,
    ) -> Self {
        Self {
            cfg,
            unit,
            bits: bits as u64,
            held: 0,
            slc_units: 0,
            native_units: 0,
            folded_units: 0,
            fold_per_ns: (planes * upp) as f64 / prog_ns.max(1.0),
            live: 0,
            quiet_from: 0,
        }
    }

    /// The cache's size in units with `free_units` of the logical space
    /// holding no data.
    pub(super) fn capacity_units(&self, free_units: u64) -> u64 {
        let dynamic = (self.cfg.dynamic_max_bytes / self.unit).min(free_units / self.bits);
        self.cfg.static_bytes / self.unit + dynamic
    }

    /// A host program of `units`: true if it goes to the cache (SLC mode).
    pub(super) fn admit(&mut self, units: u64, free_units: u64) -> bool {
        if self.held + units <= self.capacity_units(free_units) {
            self.held += units;
            self.slc_units += units;
            true
        } else {
            self.native_units += units;
            false
        }
    }

    /// A command arrives at `now`: credit the fold of the idle interval
    /// before it.
    pub(super) fn arrive(&mut self, now: Nanos) {
        if self.live == 0 && self.held > 0 && now > self.quiet_from {
            let can = ((now - self.quiet_from) as f64 * self.fold_per_ns) as u64;
            let f = can.min(self.held);
            self.held -= f;
            self.folded_units += f;
        }
        self.live += 1;
    }

    /// Is at most one command outstanding (the next [`Self::done`] the
    /// one that makes the drive quiet)?
    pub(super) fn last_outstanding(&self) -> bool {
        self.live <= 1
    }

    /// A command completes at `at`; `quiet` is the latest time the array
    /// is busy with work already queued.
    pub(super) fn done(&mut self, at: Nanos, quiet: Nanos) {
        self.live = self.live.saturating_sub(1);
        if self.live == 0 {
            self.quiet_from = at.max(quiet);
        }
    }

    /// Counters for the report.
    pub(super) fn counters(&self, free_units: u64) -> Vec<(String, f64)> {
        vec![
            (
                "slc_cache_capacity_bytes".to_string(),
                (self.capacity_units(free_units) * self.unit) as f64,
            ),
            (
                "slc_cache_held_bytes".to_string(),
                (self.held * self.unit) as f64,
            ),
            ("slc_units_written".to_string(), self.slc_units as f64),
            ("native_units_written".to_string(), self.native_units as f64),
            ("slc_units_folded".to_string(), self.folded_units as f64),
        ]
    }
}
