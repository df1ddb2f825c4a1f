//! Workloads for storlab: fio job files and command lines, turned into
//! deterministic per-thread IO streams.
//!
//! - [`fio`] reads fio's job-file and command-line syntax (sections,
//!   `[global]`, units, per-direction values, `stonewall`/`new_group`
//!   groups, `include`, `${VAR}`) into typed [`fio::JobSpec`]s, refusing
//!   with file and line any option storlab does not support and any value
//!   fio would misread.
//! - [`gen`] turns a job into one [`gen::JobThread`] per `numjobs` thread,
//!   whose [`gen::JobThread::next_io`] yields the job's IOs with fio's
//!   semantics (regions, sequential wrap, random map, distributions, mixes,
//!   block-size splits, syncs, stopping rules), without allocating.
//!
//! The crate does no timing: rates, think time, ramp and runtime are
//! recorded in the [`fio::JobSpec`] for the simulator to apply.
//!
//! ```
//! use storlab_workload::fio::parse_job_str;
//! use storlab_workload::gen::{IoOp, JobThread};
//!
//! let jobs = parse_job_str("example.fio", "[lat]\nrw=randread\nbs=4k\nsize=1m\n")?;
//! let job = &jobs.jobs[0];
//! let mut thread = JobThread::new(job, 0, 1 << 30, 42)?;
//! let mut n = 0;
//! while let Some(io) = thread.next_io() {
//!     assert_eq!(io.op, IoOp::Read);
//!     assert_eq!(io.len, 4096);
//!     n += 1;
//! }
//! assert_eq!(n, 256);
//! # Ok::<(), storlab_workload::fio::FioError>(())
//! ```

#![deny(missing_docs)]

pub mod fio;
pub mod gen;
