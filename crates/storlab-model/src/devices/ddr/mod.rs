//! Memory on the DDR bus: non-volatile memory as a RAM disk with injected
//! delay, and non-volatile main memory with PMEP's knobs, both copied by
//! the requesting CPU.

pub mod nvmm;
pub mod ramdisk;
