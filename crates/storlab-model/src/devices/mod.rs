//! The device classes behind the host stack, each a [`crate::device::Device`]:
//! PCIe NVM arrays, DDR-attached memory (RAM disk, NVMM), solid-state drives
//! with their FTL, mechanical disks, RAID-0, tiers and caches, and a fixed
//! latency.

pub mod ddr;
pub mod disk;
pub mod fixed;
pub mod flash;
pub mod pcie_array;
pub mod raid;
pub mod tier;
