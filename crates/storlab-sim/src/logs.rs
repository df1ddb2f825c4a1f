//! fio's log files, written from a simulation's requests: `write_lat_log`
//! (`_lat`, `_clat`, `_slat`), `write_bw_log` (`_bw`), `write_iops_log`
//! (`_iops`) and `write_iolog`, in fio 3.33's formats so the scripts that
//! plot fio's logs (`fio_generate_plots`, pandas) read them unchanged.
//!
//! A log line is `time, value, direction, block size, priority` (with
//! `log_offset=1`, the offset before the priority); time is ms since the
//! thread started, in simulated time. Every IO gets a line unless
//! `log_avg_msec` is set: then each window of that many ms gets one line
//! per direction, its mean (or, with `log_max_value=1`, its maximum)
//! latency in ns, its bandwidth in KiB/s or its IOPS, stamped with the
//! window's end, block size 0. Per IO, as fio: latencies in ns, the
//! bandwidth is the IO's bytes over its completion latency (bytes per ms),
//! the IOPS 1. Files are `<prefix>_<kind>.<thread>.log` with threads
//! numbered from 1 over the whole job file, or `<prefix>_<kind>.log`
//! shared by every thread with `per_job_logs=0`. Submission latencies
//! exist only for asynchronous engines; with a synchronous one (psync,
//! the default) the `_slat` file stays empty, as fio leaves it.
//!
//! `write_iolog` is fio's iolog version 3 (`storlab-trace`'s writer):
//! every request as issued, times in µs since the run started, each thread
//! sharing the file as a file of its own (`storlab-dev0`, `storlab-dev1`,
//! ...); a job's `read_iolog`, `storlab sim --trace` and fio replay it. Flushes
//! (`fsync=`) are `sync` lines there and left out of the other logs.
//!
//! Differences from fio: the ramp's completions are left out, as they are
//! from the statistics; a last, partial window ends with the thread and
//! its bandwidth and IOPS are over the part that elapsed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::rc::Rc;

use storlab_model::{Nanos, Op};
use storlab_trace::{writer, TraceWriter, WriteOptions};
use storlab_trace::{Format, TraceOp, TraceRecord};
use storlab_workload::fio::{engine_kind, EngineKind, JobSpec, DEFAULT_ENGINE};

use crate::engine::{IoObserver, IoReq};

/// Why a log could not be written.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be created.
    #[error("job `{job}`, {option}: cannot create {path}")]
    Create {
        /// The job asking for it.
        job: String,
        /// The option naming it (`write_lat_log`, ...).
        option: &'static str,
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Writing failed (disk full, ...).
    #[error("writing {path}: {reason}")]
    Write {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// One text log file; the first write error is kept and reported at the
/// end (a failing disk must not stop the simulation half-way silently, nor
/// lose the error).
struct Sink {
    path: String,
    out: BufWriter<File>,
    err: Option<std::io::Error>,
}

impl Sink {
    fn line(&mut self, text: &str) {
        if self.err.is_none() {
            if let Err(e) = self.out.write_all(text.as_bytes()) {
                self.err = Some(e);
            }
        }
    }
}

type Shared = Rc<RefCell<Sink>>;

/// An iolog several threads may share, each as a file of its own.
struct Iolog {
    path: String,
    writer: Box<dyn TraceWriter>,
    users: u32,
    err: Option<String>,
}

/// The log files of one run, by path: threads naming the same file share
/// it. Call [`LogFiles::finish`] after the run to flush them and learn of
/// any write error.
#[derive(Default)]
pub struct LogFiles {
    text: BTreeMap<String, Shared>,
    iologs: BTreeMap<String, Rc<RefCell<Iolog>>>,
}

/// fio's log kinds, in the order of [`ThreadLogs::text`].
const LAT: usize = 0;
const CLAT: usize = 1;
const SLAT: usize = 2;
const BW: usize = 3;
const IOPS: usize = 4;
const KINDS: [&str; 5] = ["lat", "clat", "slat", "bw", "iops"];

/// Create (truncate) the file `option` of `job` names.
fn create(job: &str, option: &'static str, path: &str) -> Result<File, LogError> {
    File::create(path).map_err(|source| LogError::Create {
        job: job.to_string(),
        option,
        path: path.to_string(),
        source,
    })
}

impl LogFiles {
    fn text(&mut self, job: &str, option: &'static str, path: String) -> Result<Shared, LogError> {
        if let Some(s) = self.text.get(&path) {
            return Ok(s.clone());
        }
        let file = create(job, option, &path)?;
        let sink = Rc::new(RefCell::new(Sink {
            path: path.clone(),
            out: BufWriter::new(file),
            err: None,
        }));
        self.text.insert(path, sink.clone());
        Ok(sink)
    }

    /// The observer writing the logs `spec` asks for, for the thread
    /// numbered `thread_number` (from 1 over the job file), or `None` when
    /// it asks for none.
    pub fn observer(
        &mut self,
        spec: &JobSpec,
        thread_number: u32,
    ) -> Result<Option<Box<dyn IoObserver>>, LogError> {
        let o = &spec.logs;
        if !o.any() {
            return Ok(None);
        }
        let name = |prefix: &str, kind: &str| {
            if o.per_job {
                format!("{prefix}_{kind}.{thread_number}.log")
            } else {
                format!("{prefix}_{kind}.log")
            }
        };
        let mut text: [Option<Shared>; 5] = Default::default();
        if let Some(p) = &o.lat {
            for k in [LAT, CLAT, SLAT] {
                text[k] = Some(self.text(&spec.name, "write_lat_log", name(p, KINDS[k]))?);
            }
        }
        if let Some(p) = &o.bw {
            text[BW] = Some(self.text(&spec.name, "write_bw_log", name(p, KINDS[BW]))?);
        }
        if let Some(p) = &o.iops {
            text[IOPS] = Some(self.text(&spec.name, "write_iops_log", name(p, KINDS[IOPS]))?);
        }
        let iolog = match &o.iolog {
            None => None,
            Some(path) => {
                let log = match self.iologs.get(path) {
                    Some(l) => l.clone(),
                    None => {
                        let file = create(&spec.name, "write_iolog", path)?;
                        let l = Rc::new(RefCell::new(Iolog {
                            path: path.clone(),
                            writer: writer(Format::Fio3, file, &WriteOptions::default()),
                            users: 0,
                            err: None,
                        }));
                        self.iologs.insert(path.clone(), l.clone());
                        l
                    }
                };
                let device = {
                    let mut l = log.borrow_mut();
                    l.users += 1;
                    l.users - 1
                };
                Some((log, device))
            }
        };
        let engine = spec.ioengine.as_deref().unwrap_or(DEFAULT_ENGINE);
        Ok(Some(Box::new(ThreadLogs {
            text,
            iolog,
            run_start: 0,
            slat: engine_kind(engine) == Some(EngineKind::Async),
            avg_ns: o.avg_msec.saturating_mul(1_000_000),
            max_value: o.max_value,
            offset: o.offset,
            dirs: spec.rw.directions(),
            window: 0,
            acc: [[Acc::default(); 3]; 5],
            line: String::new(),
        })))
    }

    /// Flush every file; the first error any of them met, if one did.
    pub fn finish(self) -> Result<(), LogError> {
        let mut first = None;
        for (_, log) in self.iologs {
            let mut l = log.borrow_mut();
            let r = l.writer.finish().map_err(|e| e.to_string());
            if let Some(reason) = l.err.take().or(r.err()) {
                first.get_or_insert(LogError::Write {
                    path: l.path.clone(),
                    reason,
                });
            }
        }
        for (_, sink) in self.text {
            let mut s = sink.borrow_mut();
            let r = s.out.flush();
            if let Some(e) = s.err.take().or(r.err()) {
                first.get_or_insert(LogError::Write {
                    path: s.path.clone(),
                    reason: e.to_string(),
                });
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// One window's samples of one kind and direction.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    sum: u128,
    n: u64,
    max: u64,
}

impl Acc {
    fn add(&mut self, v: u64) {
        self.sum += u128::from(v);
        self.n += 1;
        self.max = self.max.max(v);
    }
}

/// One thread's logs.
struct ThreadLogs {
    text: [Option<Shared>; 5],
    iolog: Option<(Rc<RefCell<Iolog>>, u32)>,
    run_start: Nanos,
    slat: bool,
    avg_ns: u64,
    max_value: bool,
    offset: bool,
    dirs: [bool; 3],
    /// The window being filled (`log_avg_msec`).
    window: u64,
    /// Latencies (ns) for the latency kinds, bytes for bw, IOs for iops.
    acc: [[Acc; 3]; 5],
    line: String,
}

fn dir_index(op: Op) -> Option<usize> {
    match op {
        Op::Read => Some(0),
        Op::Write => Some(1),
        Op::Trim => Some(2),
        Op::Flush => None,
    }
}

impl ThreadLogs {
    /// One line of log `kind`.
    fn emit(&mut self, kind: usize, ms: u64, value: u64, dir: usize, bs: u64, offset: u64) {
        let Some(sink) = &self.text[kind] else {
            return;
        };
        self.line.clear();
        // Writing to a String cannot fail.
        let _ = if self.offset {
            writeln!(self.line, "{ms}, {value}, {dir}, {bs}, {offset}, 0")
        } else {
            writeln!(self.line, "{ms}, {value}, {dir}, {bs}, 0")
        };
        sink.borrow_mut().line(&self.line);
    }

    /// Write the window being filled, ending at `end_ns` (its end, or the
    /// thread's end for the last one) after `span_ns` of it.
    fn close_window(&mut self, end_ns: u64, span_ns: u64) {
        let ms = end_ns / 1_000_000;
        for kind in [LAT, CLAT, SLAT] {
            for d in 0..3 {
                let a = self.acc[kind][d];
                if a.n > 0 {
                    let v = if self.max_value {
                        a.max
                    } else {
                        (a.sum / u128::from(a.n)) as u64
                    };
                    self.emit(kind, ms, v, d, 0, 0);
                }
            }
        }
        if span_ns > 0 {
            let dirs = self.dirs;
            for d in (0..3).filter(|&d| dirs[d]) {
                let bytes = self.acc[BW][d].sum;
                let kib_s = bytes * 1_000_000_000 / 1024 / u128::from(span_ns);
                self.emit(BW, ms, kib_s as u64, d, 0, 0);
                let ios = u128::from(self.acc[IOPS][d].n);
                let iops = ios * 1_000_000_000 / u128::from(span_ns);
                self.emit(IOPS, ms, iops as u64, d, 0, 0);
            }
        }
        self.acc = [[Acc::default(); 3]; 5];
    }

    /// Close every window that ends at or before `at`.
    fn roll(&mut self, at: Nanos) {
        let w = at / self.avg_ns;
        while self.window < w {
            let end = (self.window + 1).saturating_mul(self.avg_ns);
            self.close_window(end, self.avg_ns);
            self.window += 1;
            // A long idle gap: one empty line per window for bw and iops
            // (as fio), otherwise jump over windows with nothing to say.
            if self.text[BW].is_none() && self.text[IOPS].is_none() {
                self.window = w;
            }
        }
    }
}

impl IoObserver for ThreadLogs {
    fn started(&mut self, at: Nanos) {
        self.run_start = at;
    }

    fn issued(&mut self, at: Nanos, io: &IoReq) {
        let Some((log, device)) = &self.iolog else {
            return;
        };
        let mut l = log.borrow_mut();
        if l.err.is_some() {
            return;
        }
        let op = match io.op {
            Op::Read => TraceOp::Read,
            Op::Write => TraceOp::Write,
            Op::Trim => TraceOp::Trim,
            Op::Flush => TraceOp::Flush,
        };
        let rec = TraceRecord {
            time_ns: self.run_start + at,
            op,
            offset: io.offset,
            len: io.len,
            device: *device,
            recorded_latency_ns: None,
            stream: 0,
        };
        if let Err(e) = l.writer.record(&rec) {
            l.err = Some(e.to_string());
        }
    }

    fn completed(&mut self, at: Nanos, op: Op, offset: u64, len: u64, slat_ns: u64, clat_ns: u64) {
        let Some(d) = dir_index(op) else {
            return;
        };
        let lat = slat_ns + clat_ns;
        if self.avg_ns == 0 {
            let ms = at / 1_000_000;
            self.emit(LAT, ms, lat, d, len, offset);
            self.emit(CLAT, ms, clat_ns, d, len, offset);
            if self.slat {
                self.emit(SLAT, ms, slat_ns, d, len, offset);
            }
            let bw = u128::from(len) * 1_000_000 / u128::from(clat_ns.max(1));
            self.emit(BW, ms, bw as u64, d, len, offset);
            self.emit(IOPS, ms, 1, d, len, offset);
            return;
        }
        self.roll(at);
        self.acc[LAT][d].add(lat);
        self.acc[CLAT][d].add(clat_ns);
        if self.slat {
            self.acc[SLAT][d].add(slat_ns);
        }
        self.acc[BW][d].sum += u128::from(len);
        self.acc[IOPS][d].n += 1;
    }

    fn finished(&mut self, at: Nanos) {
        if self.avg_ns == 0 {
            return;
        }
        self.roll(at);
        let begun = self.window.saturating_mul(self.avg_ns);
        self.close_window(at, at.saturating_sub(begun));
    }
}
