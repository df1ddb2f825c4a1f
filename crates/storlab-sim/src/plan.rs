//! What a thread of the run loop is made of: the requests of a workload
//! source ([`IoReq`], [`IoSource`]), who logs them ([`IoObserver`]), and
//! how the thread runs ([`ThreadPlan`], with its files: [`FileTarget`]).

use storlab_model::{Nanos, Op};

use crate::stats::JobStats;

/// One request from a workload source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoReq {
    /// Operation (a flush is fio's fsync/fdatasync).
    pub op: Op,
    /// Byte offset on the device.
    pub offset: u64,
    /// Bytes (0 for a flush).
    pub len: u64,
    /// Issue no earlier than this many ns after the thread starts (traces
    /// replayed with timing); `None` issues as soon as the thread may.
    pub at: Option<Nanos>,
    /// Force unit access.
    pub fua: bool,
    /// A write's FDP placement identifier (fio's `fdp=1`); `None`: no
    /// directive.
    pub placement: Option<u16>,
    /// Issue only once none of the thread's requests is in flight (fio's
    /// `io_u_quiesce`, which zonemode=zbd calls before a zone reset and
    /// which the synchronous reset itself amounts to for the request
    /// after it).
    pub quiesce: bool,
}

/// A stream of requests for one thread: fio job threads, trace replays and
/// application models all meet the simulator here (one small interface, as
/// fio's ioengines). `next_io` returns `None` when the source is exhausted.
pub trait IoSource {
    /// The next request, or `None` at the end.
    fn next_io(&mut self) -> Option<IoReq>;
    /// Called once per completed request (sources that replay recorded
    /// latencies use it to pair them); `id` counts requests from 0.
    fn completed(&mut self, _id: u64, _latency_ns: u64) {}
}

/// What a thread did, request by request, for whoever logs it (fio's log
/// files: [`crate::logs`]). Times are ns since the thread's start; the
/// ramp's completions are not reported, as they are not counted.
pub trait IoObserver {
    /// The thread starts at `at`, ns since the run began.
    fn started(&mut self, _at: Nanos) {}
    /// `io` was issued at `at`.
    fn issued(&mut self, at: Nanos, io: &IoReq);
    /// A request finished at `at`: `op`, `len` bytes at `offset`, with
    /// these submission and completion latencies.
    fn completed(&mut self, at: Nanos, op: Op, offset: u64, len: u64, slat_ns: u64, clat_ns: u64);
    /// The thread's last request finished at `at`.
    fn finished(&mut self, at: Nanos);
}
/// How one thread runs.
#[repr(C)]
pub struct ThreadPlan {
    /// Where its requests come from.
    pub source: Box<dyn IoSource>,
    /// Outstanding requests allowed.
    pub iodepth: u32,
    /// Stop issuing after this long (ns from the thread's start).
    pub runtime_ns: Option<u64>,
    /// Keep issuing until `runtime_ns` even when the source could stop (the
    /// source must be endless for this to matter).
    pub time_based: bool,
    /// Requests finishing before this long after the start are not counted.
    pub ramp_ns: u64,
    /// Pause after each completion before the next issue.
    pub thinktime_ns: u64,
    /// Delay before the thread's first issue (fio's `startdelay`).
    pub start_delay_ns: u64,
    /// Bandwidth caps per direction (read, write, trim), bytes/s.
    pub rate_bytes_per_s: [Option<u64>; 3],
    /// IOPS caps per direction.
    pub rate_iops: [Option<u64>; 3],
    /// Told of every request (fio's log files), if anyone asked.
    pub observer: Option<Box<dyn IoObserver>>,
    /// Poll for completions (fio's `hipri`) whatever the host's
    /// completion mode.
    pub poll: bool,
    /// fio's `max_latency`: the first request slower than this ends the
    /// thread with [`crate::stats::ETIMEDOUT`] in its statistics.
    pub max_latency_ns: Option<u64>,
    /// With a file system in the path: the files the thread's offsets fall
    /// in; `None` addresses the raw device.
    pub files: Option<FileTarget>,
    /// Statistics record for this thread (name, group, options filled by
    /// the caller). Last, and the struct laid out in
    /// declaration order: the fields above are read for every request and
    /// share a cache line or two, apart from the statistics' kilobytes.
    pub stats: JobStats,
}

/// Where a thread's requests go through the file system: its offsets run
/// over `nfiles` files of `file_size` bytes each, one after another
/// (`first_file`, `first_file + 1`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileTarget {
    /// The first file (as the file layer numbers them).
    pub first_file: u32,
    /// Files.
    pub nfiles: u32,
    /// Bytes per file.
    pub file_size: u64,
    /// O_DIRECT (fio's `direct=1`).
    pub direct: bool,
}

impl ThreadPlan {
    /// A thread issuing every request of `source` with up to `iodepth`
    /// outstanding, as fast as completions allow: no runtime, ramp, think
    /// time, start delay, rate cap, observer, polling or latency limit
    /// (fio's defaults).
    pub fn new(source: Box<dyn IoSource>, iodepth: u32, stats: JobStats) -> ThreadPlan {
        ThreadPlan {
            source,
            iodepth,
            runtime_ns: None,
            time_based: false,
            ramp_ns: 0,
            thinktime_ns: 0,
            start_delay_ns: 0,
            rate_bytes_per_s: [None; 3],
            rate_iops: [None; 3],
            stats,
            observer: None,
            poll: false,
            max_latency_ns: None,
            files: None,
        }
    }
}
