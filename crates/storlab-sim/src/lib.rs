//! storlab's simulator: statistics and fio-compatible reports.
#![deny(missing_docs)]

pub mod apps;
pub mod engine;
pub mod logs;
pub mod replay;
pub mod report;
pub mod run;
pub mod stats;
