//! The links data crosses between a host and its device: point-to-point
//! host links, PCIe or SATA / SAS, full or half duplex (`duplex`), PCIe's
//! rate from its lanes (`pcie`), and the DDR memory bus a CPU's copy
//! crosses (`ddr`). The devices hold them: the PCIe array its DMA lanes,
//! an SSD its PCIe or SATA link, a disk its SATA link, a RAID controller
//! its PCIe link, a RAM disk and main memory (`fixed` with a bandwidth)
//! their memory bus.

pub mod ddr;
pub mod duplex;
pub mod pcie;
