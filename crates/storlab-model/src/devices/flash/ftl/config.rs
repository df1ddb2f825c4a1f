//! The FTL's `[ssd.ftl]` table.

use serde::{Deserialize, Serialize};

use super::mapcache;
use super::types::{GcPolicy, Mapping, Precondition, WearLeveling};

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
    /// Collection paced against host writes: a plane short of free
    /// blocks queues victims (the blocks greedy collection would take,
    /// until the free blocks and the space the queued victims will free
    /// reach the threshold), and each host unit on the plane first moves
    /// its share of their pages, at the rate that has each victim erased
    /// before the plane would open a host block with fewer than two free
    /// blocks; a victim about to
    /// start is swapped for a better block if rewrites made one. False
    /// (the default): a plane collects whole victims when it runs short
    /// (foreground collection). See `gc.rs`, `Ftl::gc_step`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gc_pacing: bool,
    /// The controller's cached mapping table (`[ssd.ftl.map_cache]`; off
    /// by default: the whole map is resident). See [`mapcache`].
    #[serde(default)]
    pub map_cache: mapcache::MapCacheConfig,
}
