//! Caches in front of devices: a block cache kept on one device in front
//! of another (a tier: flash in front of disks), and a storage
//! controller's DRAM cache (a hardware RAID controller's), which share
//! one store of cached lines.

pub mod config;
pub mod controller_cache;
pub mod flash_cache;
mod lines;
mod requests;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use config::*;
pub use controller_cache::{CacheConfig, ControllerCache, DestageOrder};
pub use flash_cache::*;
