//! storlab's simulator: statistics and fio-compatible reports.
#![deny(missing_docs)]

pub mod report;
pub mod stats;
pub mod engine;
pub mod run;
pub mod replay;
