//! The device classes behind the host stack, each a [`crate::device::Device`]:
//! PCIe NVM arrays, DDR-attached memory (RAM disk, NVMM), solid-state drives
//! with their FTL, mechanical disks, RAID-0, tiers and caches, and a fixed
//! latency.
//!
//! The links between host and device are [`crate::link`]'s, each held by
//! its device: a PCIe array's DMA lanes, an SSD's SATA or PCIe link, a
//! disk's SATA link and a RAID controller's PCIe link are a
//! [`crate::link::duplex::Link`]; the DDR bus a RAM-disk copy crosses and
//! main memory's bandwidth (`fixed` with a bandwidth) a
//! [`crate::link::ddr::MemoryBus`]. The NVMM's memory channels are its
//! own timeline: their time is PMEP's bandwidth throttle, part of the
//! `storlab_pmem` cost model. Buses inside a device (an SSD's NAND
//! channels, the PCIe array's ring) stay with it.

pub mod cxl;
pub mod ddr;
pub mod disk;
pub mod fixed;
pub mod flash;
pub mod pcie_array;
pub mod raid;
pub mod tier;
