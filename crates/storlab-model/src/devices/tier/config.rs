//! The tier's `[tier]` table: the two devices, the block size, the cache's
//! size, the write mode and destaging.

use serde::{Deserialize, Serialize};

use crate::config::{check_range, ConfigError};
use crate::units::Rw;

/// How writes are handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TierMode {
    /// Written to both devices; complete when both are.
    WriteThrough,
    /// Written to the backing device only; cached copies dropped.
    WriteAround,
    /// Written to the cache device, destaged later.
    WriteBack,
}

/// `[tier]`: a block cache on one device over another.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierConfig {
    /// The cache device's preset (name or file).
    pub cache: String,
    /// Overrides for the cache device (`key.path=value`).
    #[serde(default)]
    pub cache_set: Vec<String>,
    /// The backing device's preset.
    pub backing: String,
    /// Overrides for the backing device.
    #[serde(default)]
    pub backing_set: Vec<String>,
    /// Bytes of the cache device used for cached blocks.
    pub cache_bytes: u64,
    /// The caching unit.
    pub block_bytes: u64,
    /// Write policy.
    pub mode: TierMode,
    /// The caching software's time per request (index lookup, mapping).
    pub lookup_ns: Rw,
    /// Further software time for a request that misses (a page fault's
    /// handling when the tier is memory; 0 for a block cache).
    #[serde(default)]
    pub miss_ns: Rw,
    /// Write-back only: a write that covers part of a block not cached
    /// first reads the block from the backing device, then writes it dirty
    /// to the cache (a store to a page not in memory faults it in);
    /// otherwise such a write goes through.
    #[serde(default)]
    pub write_allocate: bool,
    /// Destage once dirty blocks exceed this fraction of the cache.
    pub destage_threshold: f64,
    /// Destages in flight at once.
    pub destage_depth: u32,
    /// The cache starts warm, as after a long run, instead of empty: the
    /// workload's footprint, the first `warm_bytes` of the device, is
    /// cut into chunks of [`WARM_CHUNK`] bytes and an evenly spread share
    /// of them, as many as `cache_bytes` holds, is cached clean (what a
    /// cache holds at steady state when the misses reaching it spread
    /// evenly over the footprint, as a database's pool misses do), bytes;
    /// 0 (the default): the cache starts empty. Set per run from the
    /// workload (a study's warm-up), not in presets.
    #[serde(default)]
    pub warm_bytes: u64,
}

/// The unit [`TierConfig::warm_bytes`] spreads its share in: 1 MiB, large
/// against a database page, small against the footprint.
pub const WARM_CHUNK: u64 = 1 << 20;

/// Validate the `[tier]` table (the devices are checked when built).
pub fn validate(cfg: &TierConfig) -> Result<(), ConfigError> {
    check_range("tier.block_bytes", cfg.block_bytes, 512, 1 << 24)?;
    if !cfg.block_bytes.is_power_of_two() {
        return Err(ConfigError::Invalid {
            field: "tier.block_bytes".into(),
            message: format!("{} is not a power of two", cfg.block_bytes),
        });
    }
    check_range(
        "tier.cache_bytes",
        cfg.cache_bytes,
        cfg.block_bytes,
        u64::MAX / 2,
    )?;
    check_range("tier.destage_threshold", cfg.destage_threshold, 0.0, 1.0)?;
    check_range("tier.destage_depth", cfg.destage_depth, 1, 4096)?;
    check_range("tier.warm_bytes", cfg.warm_bytes, 0, u64::MAX / 2)?;
    Ok(())
}
