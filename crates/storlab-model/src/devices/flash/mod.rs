//! A solid-state drive: host link, controller, DRAM write buffer, NAND (or
//! PCM) chips on channels, and a flash translation layer ([`ftl`]).
//!
//! Request path. Reads: the controller parses the command and looks up the
//! mapping (it is one resource: `command_ns` plus `unit_ns` per mapping
//! unit, serialised, which is what limits a SATA SSD's IOPS); each unit is
//! served from the write buffer, from read-ahead, or by a page read on its
//! die; data crosses the channel to the controller and the link to the
//! host. Writes: the data crosses the link into the write buffer (waiting
//! for space), the controller processes it, the FTL places every unit and
//! the write is acknowledged; the page program happens later, when the page
//! is full, and frees the buffer space. A FUA write, or any write on a
//! device with no buffer, is acknowledged once its pages are programmed; a
//! flush waits for every page programmed before it.
//!
//! The NAND array. Channels are buses shared by their dies; each die has
//! its planes and two queues: host reads, and programs, garbage
//! collection and erases in order; an idle die takes reads first or
//! (`die_order = "arrival"`) whichever was queued first. A die serves one operation at a time,
//! or with `multiplane` one per plane if they are of the same kind (the
//! later planes' ops are taken from the queue only if nothing before them
//! on the same plane is skipped). Read: command, array read (`read_ns` by
//! page type), transfer out over the channel. Program: transfer in over the
//! channel, array program (`program_ns` by page type). Erase: `erase_ns`.
//! Page types: SLC and PCM have one; MLC alternates LSB/MSB pages, TLC
//! LSB/CSB/MSB, QLC lower/upper/extra/top, so the slow pages are every
//! second, third or fourth.
//!
//! Spread (physical variation, drawn from a `rand_pcg` generator seeded
//! from `ssd.ftl.seed`, so a run is the same for a seed): a page read
//! fails its ECC decode with `read_retry_probability` and is read again
//! (array read and channel transfer) up to `read_retry_max` times; a
//! program takes `program_ns` spread uniformly by `program_spread` (the
//! ISPP loop count). Both default to 0, which draws nothing.
//!
//! Chips in lock-step (a controller that drives several chips as one, such
//! as the Fusion-io FPGA) are expressed through the parameters: one channel
//! whose bus is as wide as the ganged chips together and pages as large as
//! their pages together.
//!
//! The FTL changes its mapping at once; the NAND work those changes imply

pub mod config;
mod dies;
pub mod fdp;
pub mod ftl;
mod map;
mod nand;
mod requests;
pub mod slc;
mod spread;
pub mod ssd;
pub mod zones;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use config::*;
pub use ssd::*;

#[cfg(test)]
mod tests;
