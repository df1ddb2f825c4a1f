//! The host layer: what runs on the CPU between a workload and a device.
//! The host software stack (system call, block layer and scheduler,
//! driver, completion: [`stack`], configured by [`config`], costed by
//! stage in `cost.rs` with the spread of [`jitter`], spoken to through
//! [`io`]), the file systems and page cache in front of it ([`fs`]),
//! Linux's swap path over it ([`swap`]), and the request-size limit
//! between it and a device ([`split`]); what it reports of the requests it
//! finished is in `accounting.rs`.

mod accounting;
mod coalesce;
pub mod config;
mod cost;
pub mod fs;
pub mod io;
pub mod jitter;
pub mod split;
pub mod stack;
pub mod swap;
mod zone_order;

#[cfg(test)]
mod tests;

// the host stack's main items, so users name them by the layer
// (`storlab_model::host::HostConfig`) rather than by file
pub use config::*;
pub use io::*;
pub use jitter::Jitter;
pub use stack::Host;
