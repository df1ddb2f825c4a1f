//! storlab's timing model of storage systems.
//!
//! One model, three faces: the simulator drives it in virtual time, the
//! emulator in wall-clock time, the lab sweeps it. The model itself never
//! reads a clock and never does IO (see ARCHITECTURE.md).
#![deny(missing_docs)]

pub mod breakdown;
pub mod config;
pub mod device;
pub mod devices;
pub mod host;
pub mod link;
pub mod media;
pub mod presets;
pub mod report;
pub mod system;
pub mod units;

pub use breakdown::{Breakdown, Component};
pub use device::{Completion, Cx, DevRequest, Device, Nanos, Op};
pub use report::DeviceReport;
pub use system::SystemConfig;

// ---- old paths, removed once the workspace uses the new ones (issue 56) ----
/// Old path of [`devices::pcie_array`] and [`media::MediaConfig`].
pub mod pcie {
    pub use crate::devices::pcie_array::array::*;
    pub use crate::devices::pcie_array::config::*;
    pub use crate::media::MediaConfig;
}
/// Old path of [`devices::pcie_array::wear`].
pub use devices::pcie_array::wear;
/// Old path of [`devices::ddr::ramdisk`].
pub mod ddr {
    pub use crate::devices::ddr::ramdisk::*;
}
/// Old path of [`devices::ddr::nvmm`].
pub use devices::ddr::nvmm;
/// Old path of [`devices::fixed`].
pub use devices::fixed;
/// Old path of [`devices::raid`].
pub use devices::raid;
/// Old path of [`devices::tier::controller_cache`].
pub mod cache {
    pub use crate::devices::tier::controller_cache::*;
}
/// Old path of [`devices::tier::config`] and [`devices::tier::flash_cache`].
pub mod tier {
    pub use crate::devices::tier::config::*;
    pub use crate::devices::tier::flash_cache::*;
}
/// Old path of [`devices::disk`].
pub mod disk {
    pub use crate::devices::disk::config::*;
    pub use crate::devices::disk::drive::*;
    pub use crate::devices::disk::geometry::*;
}
/// Old path of [`devices::flash`] (the drive).
pub mod flash {
    pub use crate::devices::flash::config::*;
    pub use crate::devices::flash::ssd::*;
}
/// Old path of [`devices::flash::ftl`].
pub mod ftl {
    pub use crate::devices::flash::ftl::config::*;
    pub use crate::devices::flash::ftl::layer::*;
    pub use crate::devices::flash::ftl::steady::AGE_REPLAY_MAX_UNITS;
    pub use crate::devices::flash::ftl::types::*;
    pub use crate::devices::flash::ftl::{layout, mapcache};
}
/// Old path of [`host::split`].
pub use host::split;
/// Old path of [`host::fs`].
pub mod fs {
    pub use crate::host::fs::behaviour::*;
    pub use crate::host::fs::config::*;
    pub use crate::host::fs::layer::*;
    pub use crate::host::fs::request::*;
    pub use crate::host::fs::state::*;
}
/// Old path of [`host::swap`].
pub mod swap {
    pub use crate::host::swap::config::*;
    pub use crate::host::swap::machine::*;
    pub use crate::host::swap::workload::*;
}
