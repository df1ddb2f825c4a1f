//! The FTL's shared vocabulary: the "no entry" marker, its policies
//! (mapping, victim choice, wear levelling, preconditioning), the geometry
//! it sees, and the NAND work it hands the timing model.

use serde::{Deserialize, Serialize};

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
    /// The whole logical space written sequentially once, then the first
    /// `fullness` of it overwritten at random (replayed, as `aged-replay`)
    /// until write amplification settles: a drive in use on a host that
    /// never trims (every unit it was ever given stays valid), whose hot
    /// region is in steady state and the rest cold, in full blocks the
    /// collector never picks. `aged` over a share leaves the rest
    /// never written instead: spare for the collector, as after a secure
    /// erase.
    AgedInFull,
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
/// `n` copies of `value`, or an error where a plain `vec!` would abort the
/// process: the tables scale with the configured capacity, which comes
/// from the user.
pub(super) fn try_filled<T: Clone>(
    n: usize,
    value: T,
) -> Result<Vec<T>, std::collections::TryReserveError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)?;
    v.resize(n, value);
    Ok(v)
}
