//! Caches in front of devices: a block cache kept on one device in front
//! of another (a tier: flash in front of disks), and a storage
//! controller's DRAM cache (a hardware RAID controller's), which share
//! one store of cached lines.

pub mod config;
pub mod controller_cache;
pub mod flash_cache;
mod lines;
mod requests;
