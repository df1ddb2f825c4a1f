//! storlab's simulator: the engine and run loop, trace replay, statistics
//! and fio-compatible reports. Application models are `storlab-apps`'s:
//! the run loop builds them through [`appjob::AppProvider`].
#![deny(missing_docs)]

pub mod appjob;
pub mod engine;
pub mod fdp;
mod latency;
pub mod logs;
pub mod plan;
mod queue;
pub mod replay;
pub mod report;
pub mod run;
pub mod stats;
pub mod summary;
pub mod zbd;
