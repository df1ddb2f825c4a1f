//! The host layer: what runs on the CPU between a workload and a device.
//! The host software stack (system call, block layer and scheduler,
//! driver, completion: [`stack`], configured by [`config`], costed by
//! stage in `cost.rs` with the spread of [`jitter`], spoken to through
//! [`io`]), the file systems and page cache in front of it ([`fs`]),
//! Linux's swap path over it ([`swap`]), and the request-size limit
//! between it and a device ([`split`]).

pub mod config;
mod cost;
pub mod fs;
pub mod io;
pub mod jitter;
pub mod split;
pub mod stack;
pub mod swap;

#[cfg(test)]
mod tests;

// ---- old paths, removed once the workspace uses the new ones (issue 56) ----
// `storlab_model::host::X` named the items of the old host.rs, whose module
// this layer's folder now is, so they are re-exported here rather than in
// lib.rs.
pub use config::*;
pub use io::*;
pub use jitter::Jitter;
pub use stack::Host;
