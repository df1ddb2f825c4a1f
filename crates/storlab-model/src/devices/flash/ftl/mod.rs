//! The flash translation layer: page-level mapping, over-provisioning,
//! garbage collection, wear levelling, TRIM and preconditioning.
//!
//! Bookkeeping only: the FTL never sees time. Every change it makes to the
//! mapping is immediate; the NAND work that change implies (page reads and
//! programs for garbage collection, block erases, the program of a user page
//! once it is full) is pushed as [`NandOp`]s into [`Ftl::ops`], which the
//! timing model ([`super::ssd`]) drains and schedules on its dies. Keeping
//! the two apart lets the FTL be tested alone (its invariants are property
//! tests) and lets preconditioning age a device by running the bookkeeping
//! without simulating a single IO.
//!
//! Addresses: the mapping unit (usually 4 KB) is the unit of everything. A
//! physical unit address (PPA) is `block * units_per_block + page *
//! units_per_page + slot`; blocks are numbered plane by plane (`block /
//! blocks_per_plane` is the plane), and a page may hold several units (a
//! controller that gangs chips in lock-step has large pages).
//!
//! Memory: the logical-to-physical table and the physical-to-logical
//! table (for garbage collection) hold exact entries only where the mapping
//! was written after preconditioning; a preconditioned drive's mapping is
//! otherwise a function of the address ([`layout`]: the striping of a
//! sequential fill, or a seeded permutation laid over an aged drive's
//! blocks), so it costs nothing until written. Tables up to
//! [`layout::DENSE_MAX_BYTES`] are dense `u32` arrays (zeroed memory the
//! host backs only where written), larger ones hash maps of the written
//! entries. Per erase block: about 40 bytes (its state, and with greedy
//! collection its place in the valid-count buckets).
//! `In-place` mapping (PCM) keeps no tables at all.

pub mod config;
pub(crate) mod div;
pub mod layer;
pub mod layout;
pub mod mapcache;
pub mod steady;
pub mod types;

mod alloc;
mod blocks;
mod gc;
mod mapping;
mod precondition;
mod wear;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use config::*;
pub use layer::*;
pub use steady::AGE_REPLAY_MAX_UNITS;
pub use types::*;

#[cfg(test)]
mod tests;
