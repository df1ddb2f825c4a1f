//! storlab's application models: the studies' programs (databases, file
//! workloads, key-value stores, paging programs) as closed loops of
//! operations on the file system, page cache, swap path and device of
//! the same model that runs fio jobs.
//!
//! Each application is an [`AppInfo`] in the registry ([`all`]): its name
//! (as the studies name the program), what it models and simplifies, its
//! parameters with defaults, and a constructor. Two kinds:
//! - [`AppKind::Closed`]: threads run operations, each a list of
//!   [`Step`]s (CPU, file reads and writes, fsync, locks, group commit);
//!   [`AppRun`] runs them inside the engine, beside fio jobs, on any
//!   preset with a file system in front of it;
//! - [`AppKind::Memory`]: a memory-access program paging through Linux's
//!   swap path to the device (`storlab_model::host::swap`), with its DRAM.
//!
//! [`simulate`] runs a job file whose sections may name applications;
//! [`simulate_app`] runs one application alone and gives its metric.
//!
//! Modules: one per application (or family of programs); [`kit`] (shared
//! structures: buffer pool, B-tree levels); [`model`] (the interface a
//! closed-loop model implements); [`driver`] (the closed-loop driver);
//! [`host`] (the studies' machines, and how a CPU cost carries between
//! them); [`info`] and [`error`] (what an application is, its parameters and
//! errors); [`registry`] (the list); [`run`] (the runs).
#![deny(missing_docs)]

pub mod driver;
pub mod error;
pub mod host;
pub mod info;
pub mod kit;
pub mod model;
pub mod registry;
pub mod run;
pub mod studysets;

// the applications: one file each, listed in `registry::all`
pub mod bdb;
pub mod bdb_hash;
pub mod filebench;
pub mod files;
pub mod innodb;
pub mod memcached;
pub mod mongo;
pub mod paging;
pub mod pgbench;
pub mod postgres;
pub mod rocksdb;
pub mod sqlite;

pub use driver::AppRun;
pub use error::AppError;
pub use info::{AppInfo, AppKind, MemoryApp, ParamDef, Params, COMMON_PARAMS};
pub use model::{MetricKind, Step};
pub use registry::{all, build, find, job_args, list_text, show_text};
pub use run::{calibrate, simulate, simulate_app};
