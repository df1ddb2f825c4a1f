//! The device classes behind the host stack, each a [`crate::device::Device`]:
//! PCIe NVM arrays, DDR-attached memory (RAM disk, NVMM), solid-state drives
//! with their FTL, mechanical disks, RAID-0, tiers and caches, and a fixed
//! latency.
//!
//! The links between host and device (a PCIe array's DMA lanes, an SSD's
//! SATA or PCIe link, a disk's SATA link, a RAID controller's PCIe link,
//! the DDR bus a RAM-disk copy crosses) are not code of their own: each is
//! a [`crate::units::Timeline`] and a transfer time inside its device
//! (the PCIe array's in `pcie_array/datapath.rs`).

pub mod ddr;
pub mod disk;
pub mod fixed;
pub mod flash;
pub mod pcie_array;
pub mod raid;
pub mod tier;
