//! A PCIe-attached NVM array: HASTE and Moneta (docs/spec/pcie-arrays.md).
//!
//! Request path inside the device: command queue(s) and scheduler policy →
//! split into transfers of at most one buffer (by size and alignment) →
//! writes: DMA host→buffer over the host-to-device link direction, wait on a
//! scoreboard until the target controller's in-queue is free, ring transfer,
//! buffer freed, controller commits the rows; reads: command to the
//! controller, rows read into its out-queue, wait for a buffer, ring
//! transfer, DMA buffer→host over the device-to-host direction, buffer
//! freed. A request completes when all its transfers have.
//!
//! Mechanisms, each a configuration switch so variants differ only by it:
//! one FIFO or separate read/write queues served round-robin (`queues`),
//! round-robin between requests at transfer granularity (`balance`),
//! number/size of buffers, controllers, stripe, row size, media timing,
//! tags. Barriers (flushes) wait for everything before them and hold back
//! everything after them, in every policy.

pub mod array;
pub mod config;
mod datapath;
mod interface;
#[cfg(test)]
mod tests;
pub mod wear;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use array::*;
pub use config::*;
