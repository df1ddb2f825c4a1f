//! Memory on the DDR bus: non-volatile memory as a RAM disk with injected
//! delay, and non-volatile main memory with PMEP's knobs, both copied by
//! the requesting CPU.

pub mod dcpmm;
pub mod nvmm;
pub mod ramdisk;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use ramdisk::*;
