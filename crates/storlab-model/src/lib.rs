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
pub use device::{Completion, Cx, DevRequest, Device, Nanos, Op, ZoneReport};
pub use report::DeviceReport;
pub use system::SystemConfig;
