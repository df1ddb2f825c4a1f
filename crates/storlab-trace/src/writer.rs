//! Writing traces: one writer per format, all behind [`TraceWriter`].
//!
//! The emulator records what it served through these (`writer.record(&r)`
//! per request), and [`crate::convert`] uses them to translate between
//! formats. What each format keeps:
//!
//! | format | time | ops | address | latency | stream |
//! |---|---|---|---|---|---|
//! | fio3 | µs | all (flush → `sync`) | bytes | – | – |
//! | fio2 | – (all at 0) | all | bytes | – | – |
//! | blkparse | ns | all | sectors | C events | pid |
//! | blktrace | ns | all (≤ 4 GiB per request) | sectors | C events | pid |
//! | msr | 100 ns | read, write | bytes | 100 ns | – |
//! | disksim | ns | read, write | sectors | – | – |
//!
//! Records a format cannot hold at all are dropped and counted
//! ([`WriteStats::dropped`]); records changed on the way (time rounded,
//! offsets widened to whole sectors) are written and counted
//! ([`WriteStats::inexact`]). Losing the latency or the stream is not
//! counted: those columns are optional.
//!
//! Writers need records in non-decreasing time order, which is what
//! readers yield. A driver that records requests when they complete (out
//! of arrival order) should set [`WriteOptions::reorder_window_ns`] to more
//! than its longest latency, or use [`ReorderWriter`] directly. Call
//! [`TraceWriter::finish`] at the end: some formats hold completions back.

use crate::blktrace::{
    action, category, Endian, RawTrace, BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION,
};
use crate::error::TraceError;
use crate::msr::{NS_PER_TICK, UNIX_EPOCH_FILETIME};
use crate::{dev_major, dev_minor, Format, TraceOp, TraceRecord};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::{BufWriter, Write};

/// Counts kept by a writer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WriteStats {
    /// Records written (exactly or not).
    pub written: u64,
    /// Records the format cannot hold (for instance trims in MSR), left out.
    pub dropped: u64,
    /// Records written with a changed time or address (rounding).
    pub inexact: u64,
}

/// A sink of trace records in some format.
///
/// The interface is one call per request so that the emulator can record
/// as it serves, plus `finish` because some formats must hold back events
/// that belong later in the file (completions) or close the file (fio).
pub trait TraceWriter {
    /// Writes one record. Times must not decrease from one call to the next
    /// (see [`ReorderWriter`] otherwise).
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError>;
    /// Writes what was held back and flushes the output. Call once, last.
    fn finish(&mut self) -> Result<(), TraceError>;
    /// What happened to the records so far.
    fn stats(&self) -> WriteStats;
}

/// Options of the writers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Accept records this much out of time order (nanoseconds) and sort
    /// them; 0 means they must come sorted. Default: 0.
    pub reorder_window_ns: u64,
    /// fio: file name of device N is this prefix followed by N. A relative
    /// name, so that replaying it by mistake cannot touch a real device;
    /// replay with fio's `replay_redirect=`. Default: `storlab-dev`.
    pub fio_file_prefix: String,
    /// MSR: the Hostname column. Default: `storlab`.
    pub msr_hostname: String,
    /// blkparse/blktrace: the process name shown for every pid. Default:
    /// `storlab`.
    pub process_name: String,
    /// blktrace: byte order of the records. Default: little-endian.
    pub blktrace_endian: Endian,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            reorder_window_ns: 0,
            fio_file_prefix: "storlab-dev".into(),
            msr_hostname: "storlab".into(),
            process_name: "storlab".into(),
            blktrace_endian: Endian::Little,
        }
    }
}

/// A writer for `format` over `out` (buffered internally). Wrapped in a
/// [`ReorderWriter`] when `opts.reorder_window_ns` is not 0.
pub fn writer<'a, W: Write + 'a>(
    format: Format,
    out: W,
    opts: &WriteOptions,
) -> Box<dyn TraceWriter + 'a> {
    let w: Box<dyn TraceWriter + 'a> = match format {
        Format::Fio2 => Box::new(FioWriter::new(out, 2, opts)),
        Format::Fio3 => Box::new(FioWriter::new(out, 3, opts)),
        Format::Blkparse => Box::new(BlkparseWriter::new(out, opts)),
        Format::Blktrace => Box::new(BlktraceWriter::new(out, opts)),
        Format::Msr => Box::new(MsrWriter::new(out, opts)),
        Format::Disksim => Box::new(DisksimWriter::new(out)),
        Format::Closed => Box::new(RefuseClosed),
    };
    if opts.reorder_window_ns > 0 {
        Box::new(ReorderWriter::new(w, format, opts.reorder_window_ns))
    } else {
        w
    }
}

/// [`writer`] for [`Format::Closed`]: open-loop records carry no
/// dependencies, so every record is refused (closed-loop traces are
/// written by `storlab serve --record-format closed`, [`crate::closed`]).
struct RefuseClosed;

impl TraceWriter for RefuseClosed {
    fn record(&mut self, _rec: &TraceRecord) -> Result<(), TraceError> {
        Err(TraceError::Write {
            format: Format::Closed,
            index: 0,
            problem: CLOSED_NOT_WRITTEN.into(),
        })
    }
    fn finish(&mut self) -> Result<(), TraceError> {
        Ok(())
    }
    fn stats(&self) -> WriteStats {
        WriteStats::default()
    }
}

/// Why a closed-loop trace cannot be converted to.
pub(crate) const CLOSED_NOT_WRITTEN: &str = "a closed-loop trace is read only: open-loop records have no dependencies to write (record one with `storlab serve --record-format closed`)";

/// Bookkeeping shared by the writers: order check, counts, errors.
struct Core {
    format: Format,
    index: u64,
    last_time: u64,
    stats: WriteStats,
}

impl Core {
    fn new(format: Format) -> Core {
        Core {
            format,
            index: 0,
            last_time: 0,
            stats: WriteStats::default(),
        }
    }

    fn error(&self, problem: impl Into<String>) -> TraceError {
        TraceError::Write {
            format: self.format,
            index: self.index,
            problem: problem.into(),
        }
    }

    /// Checks the order of a new record and counts it.
    fn begin(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        if rec.time_ns < self.last_time {
            return Err(self.error(format!(
                "time {} ns is before the previous record's {} ns; records must be in time order (set WriteOptions::reorder_window_ns to sort them)",
                rec.time_ns, self.last_time
            )));
        }
        self.last_time = rec.time_ns;
        self.index += 1;
        Ok(())
    }

    /// Counts a record written (`exact`: without widening it).
    fn wrote(&mut self, exact: bool) {
        self.stats.written += 1;
        if !exact {
            self.stats.inexact += 1;
        }
    }

    fn io(&self, e: std::io::Error) -> TraceError {
        self.error(format!("output error: {e}"))
    }
}

/// Whether `v` is a multiple of `m` (`u64::is_multiple_of` needs Rust
/// 1.87; the workspace supports 1.80).
#[allow(clippy::manual_is_multiple_of)]
fn multiple_of(v: u64, m: u64) -> bool {
    v % m == 0
}

/// A request widened to whole 512-byte sectors: `(sector, count, exact)`.
fn sectors(offset: u64, len: u64) -> (u64, u64, bool) {
    let first = offset / 512;
    let end = offset.saturating_add(len).div_ceil(512);
    (
        first,
        end - first,
        multiple_of(offset, 512) && multiple_of(len, 512),
    )
}

/// The blkparse and blktrace writers: a queue event per request as it
/// comes, and a complete event (for a request with a latency) once the
/// stream's time has passed it.
trait QueueThenComplete {
    /// The longest request, in sectors, the format can carry; longer ones
    /// are dropped and counted.
    const MAX_SECTORS: u64;
    fn core(&mut self) -> &mut Core;
    fn stats(&self) -> WriteStats;
    /// Writes the completions due by `rec`'s time, then `rec`'s queue event.
    fn write_queued(&mut self, rec: &TraceRecord, sector: u64, count: u64) -> std::io::Result<()>;
    /// Writes the completions still held and flushes.
    fn finish_output(&mut self) -> std::io::Result<()>;
}

impl<T: QueueThenComplete> TraceWriter for T {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core().begin(rec)?;
        let (sector, count, exact) = if rec.op == TraceOp::Flush {
            (0, 0, true)
        } else {
            sectors(rec.offset, rec.len)
        };
        if count > T::MAX_SECTORS {
            self.core().stats.dropped += 1;
            return Ok(());
        }
        let r = self.write_queued(rec, sector, count);
        r.map_err(|e| self.core().io(e))?;
        self.core().wrote(exact);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        let r = self.finish_output();
        r.map_err(|e| self.core().io(e))
    }

    fn stats(&self) -> WriteStats {
        QueueThenComplete::stats(self)
    }
}

/// fio iolog writer (version 2 or 3).
pub struct FioWriter<W: Write> {
    out: BufWriter<W>,
    version: u8,
    prefix: String,
    files: Vec<u32>,
    header_done: bool,
    core: Core,
}

impl<W: Write> FioWriter<W> {
    /// A writer of version `version` (2 or 3; anything else means 3).
    pub fn new(out: W, version: u8, opts: &WriteOptions) -> Self {
        let version = if version == 2 { 2 } else { 3 };
        FioWriter {
            out: BufWriter::new(out),
            version,
            prefix: opts.fio_file_prefix.clone(),
            files: Vec::new(),
            header_done: false,
            core: Core::new(if version == 2 {
                Format::Fio2
            } else {
                Format::Fio3
            }),
        }
    }

    fn stamp(&mut self, us: u64) -> std::io::Result<()> {
        if self.version == 3 {
            write!(self.out, "{us} ")?;
        }
        Ok(())
    }

    fn header(&mut self) -> std::io::Result<()> {
        if !self.header_done {
            self.header_done = true;
            let h = if self.version == 2 {
                crate::fio::FIO2_HEADER
            } else {
                crate::fio::FIO3_HEADER
            };
            writeln!(self.out, "{h}")?;
        }
        Ok(())
    }

    fn write_record(&mut self, rec: &TraceRecord) -> std::io::Result<()> {
        self.header()?;
        let us = rec.time_ns / 1000;
        if !self.files.contains(&rec.device) {
            self.files.push(rec.device);
            for act in ["add", "open"] {
                self.stamp(us)?;
                writeln!(self.out, "{}{} {act}", self.prefix, rec.device)?;
            }
        }
        self.stamp(us)?;
        let (name, offset, len) = match rec.op {
            TraceOp::Read => ("read", rec.offset, rec.len),
            TraceOp::Write => ("write", rec.offset, rec.len),
            TraceOp::Trim => ("trim", rec.offset, rec.len),
            TraceOp::Flush => ("sync", 0, 0),
        };
        writeln!(
            self.out,
            "{}{} {name} {offset} {len}",
            self.prefix, rec.device
        )
    }
}

impl<W: Write> TraceWriter for FioWriter<W> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core.begin(rec)?;
        let exact = if self.version == 2 {
            rec.time_ns == 0
        } else {
            multiple_of(rec.time_ns, 1000)
        };
        self.write_record(rec).map_err(|e| self.core.io(e))?;
        self.core.wrote(exact);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        let us = self.core.last_time / 1000;
        let r = (|| {
            self.header()?;
            for dev in std::mem::take(&mut self.files) {
                self.stamp(us)?;
                writeln!(self.out, "{}{dev} close", self.prefix)?;
            }
            self.out.flush()
        })();
        r.map_err(|e| self.core.io(e))
    }

    fn stats(&self) -> WriteStats {
        self.core.stats
    }
}

/// A completion waiting for its place in the output.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Completion {
    time: u64,
    order: u64,
    dev: u32,
    pid: u32,
    op: TraceOp,
    sector: u64,
    count: u64,
}

/// Completions in time order (then submission order).
#[derive(Default)]
struct CompletionQueue {
    heap: BinaryHeap<Reverse<Completion>>,
    order: u64,
}

impl CompletionQueue {
    fn push(&mut self, mut c: Completion) {
        self.order += 1;
        c.order = self.order;
        self.heap.push(Reverse(c));
    }

    /// The next completion due at or before `time`.
    fn pop_due(&mut self, time: u64) -> Option<Completion> {
        if self.heap.peek()?.0.time <= time {
            self.heap.pop().map(|r| r.0)
        } else {
            None
        }
    }
}

/// blkparse default-format text writer: a Q line per request and, when the
/// record has a latency, a C line at arrival + latency.
pub struct BlkparseWriter<W: Write> {
    out: BufWriter<W>,
    process: String,
    seq: u64,
    done: CompletionQueue,
    core: Core,
}

fn rwbs(op: TraceOp) -> &'static str {
    match op {
        TraceOp::Read => "R",
        TraceOp::Write => "W",
        TraceOp::Trim => "D",
        TraceOp::Flush => "FN",
    }
}

impl<W: Write> BlkparseWriter<W> {
    /// A blkparse-text writer.
    pub fn new(out: W, opts: &WriteOptions) -> Self {
        BlkparseWriter {
            out: BufWriter::new(out),
            process: opts.process_name.clone(),
            seq: 0,
            done: CompletionQueue::default(),
            core: Core::new(Format::Blkparse),
        }
    }

    fn head(
        &mut self,
        dev: u32,
        time: u64,
        pid: u32,
        act: &str,
        op: TraceOp,
    ) -> std::io::Result<()> {
        self.seq += 1;
        write!(
            self.out,
            "{:>3},{:<3} {:>2} {:>8} {:>5}.{:09} {:>5} {:>2} {:>3} ",
            dev_major(dev),
            dev_minor(dev),
            0,
            self.seq,
            time / 1_000_000_000,
            time % 1_000_000_000,
            pid,
            act,
            rwbs(op)
        )
    }

    fn completions_until(&mut self, time: u64) -> std::io::Result<()> {
        while let Some(c) = self.done.pop_due(time) {
            self.head(c.dev, c.time, c.pid, "C", c.op)?;
            if c.op == TraceOp::Flush {
                writeln!(self.out, "0 [0]")?;
            } else {
                writeln!(self.out, "{} + {} [0]", c.sector, c.count)?;
            }
        }
        Ok(())
    }

    fn write_record(&mut self, rec: &TraceRecord, sector: u64, count: u64) -> std::io::Result<()> {
        self.completions_until(rec.time_ns)?;
        self.head(rec.device, rec.time_ns, rec.stream, "Q", rec.op)?;
        if rec.op == TraceOp::Flush {
            writeln!(self.out, "[{}]", self.process)?;
        } else {
            writeln!(self.out, "{sector} + {count} [{}]", self.process)?;
        }
        if let Some(lat) = rec.recorded_latency_ns {
            self.done.push(Completion {
                time: rec.time_ns.saturating_add(lat),
                order: 0,
                dev: rec.device,
                pid: rec.stream,
                op: rec.op,
                sector,
                count,
            });
        }
        Ok(())
    }
}

impl<W: Write> QueueThenComplete for BlkparseWriter<W> {
    const MAX_SECTORS: u64 = u64::MAX;
    fn core(&mut self) -> &mut Core {
        &mut self.core
    }
    fn stats(&self) -> WriteStats {
        self.core.stats
    }
    fn write_queued(&mut self, rec: &TraceRecord, sector: u64, count: u64) -> std::io::Result<()> {
        self.write_record(rec, sector, count)
    }
    fn finish_output(&mut self) -> std::io::Result<()> {
        self.completions_until(u64::MAX)?;
        self.out.flush()
    }
}

/// blktrace binary writer: one per-CPU file (CPU 0), with a process-name
/// notify record per pid, a queue record per request and a complete record
/// when the request has a latency. Name the output `NAME.blktrace.0` for
/// blkparse (`blkparse -i NAME`).
pub struct BlktraceWriter<W: Write> {
    out: BufWriter<W>,
    endian: Endian,
    process: Vec<u8>,
    named: BTreeSet<(u32, u32)>,
    seq: u32,
    done: CompletionQueue,
    core: Core,
}

fn categories(op: TraceOp) -> u32 {
    match op {
        TraceOp::Read => category::READ,
        TraceOp::Write => category::WRITE,
        TraceOp::Trim => category::DISCARD | category::WRITE,
        TraceOp::Flush => category::FLUSH | category::WRITE,
    }
}

impl<W: Write> BlktraceWriter<W> {
    /// A blktrace writer.
    pub fn new(out: W, opts: &WriteOptions) -> Self {
        let mut process = opts.process_name.clone().into_bytes();
        process.truncate(15);
        process.push(0);
        BlktraceWriter {
            out: BufWriter::new(out),
            endian: opts.blktrace_endian,
            process,
            named: BTreeSet::new(),
            seq: 0,
            done: CompletionQueue::default(),
            core: Core::new(Format::Blktrace),
        }
    }

    fn emit(&mut self, mut t: RawTrace, pdu: &[u8]) -> std::io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        t.magic = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION;
        t.sequence = self.seq;
        t.pdu_len = pdu.len() as u16;
        self.out.write_all(&t.encode(self.endian))?;
        self.out.write_all(pdu)
    }

    fn completions_until(&mut self, time: u64) -> std::io::Result<()> {
        while let Some(c) = self.done.pop_due(time) {
            self.emit(
                RawTrace {
                    time: c.time,
                    sector: c.sector,
                    bytes: (c.count * 512) as u32,
                    action: action::COMPLETE | (category::COMPLETE | categories(c.op)) << 16,
                    pid: c.pid,
                    device: c.dev,
                    ..RawTrace::default()
                },
                &[],
            )?;
        }
        Ok(())
    }

    fn write_record(&mut self, rec: &TraceRecord, sector: u64, count: u64) -> std::io::Result<()> {
        self.completions_until(rec.time_ns)?;
        if self.named.insert((rec.device, rec.stream)) {
            let name = self.process.clone();
            self.emit(
                RawTrace {
                    time: rec.time_ns,
                    action: action::NOTIFY_PROCESS | category::NOTIFY << 16,
                    pid: rec.stream,
                    device: rec.device,
                    ..RawTrace::default()
                },
                &name,
            )?;
        }
        self.emit(
            RawTrace {
                time: rec.time_ns,
                sector,
                bytes: (count * 512) as u32,
                action: action::QUEUE | (category::QUEUE | categories(rec.op)) << 16,
                pid: rec.stream,
                device: rec.device,
                ..RawTrace::default()
            },
            &[],
        )?;
        if let Some(lat) = rec.recorded_latency_ns {
            self.done.push(Completion {
                time: rec.time_ns.saturating_add(lat),
                order: 0,
                dev: rec.device,
                pid: rec.stream,
                op: rec.op,
                sector,
                count,
            });
        }
        Ok(())
    }
}

impl<W: Write> QueueThenComplete for BlktraceWriter<W> {
    // the binary record carries the length in bytes in 32 bits
    const MAX_SECTORS: u64 = (u32::MAX / 512) as u64;
    fn core(&mut self) -> &mut Core {
        &mut self.core
    }
    fn stats(&self) -> WriteStats {
        self.core.stats
    }
    fn write_queued(&mut self, rec: &TraceRecord, sector: u64, count: u64) -> std::io::Result<()> {
        self.write_record(rec, sector, count)
    }
    fn finish_output(&mut self) -> std::io::Result<()> {
        self.completions_until(u64::MAX)?;
        self.out.flush()
    }
}

/// MSR Cambridge CSV writer. Times count from the Unix epoch as a Windows
/// filetime; a record without a latency gets a ResponseTime of 0.
pub struct MsrWriter<W: Write> {
    out: BufWriter<W>,
    host: String,
    core: Core,
}

impl<W: Write> MsrWriter<W> {
    /// An MSR writer.
    pub fn new(out: W, opts: &WriteOptions) -> Self {
        MsrWriter {
            out: BufWriter::new(out),
            host: opts.msr_hostname.clone(),
            core: Core::new(Format::Msr),
        }
    }
}

impl<W: Write> TraceWriter for MsrWriter<W> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core.begin(rec)?;
        let kind = match rec.op {
            TraceOp::Read => "Read",
            TraceOp::Write => "Write",
            TraceOp::Trim | TraceOp::Flush => {
                self.core.stats.dropped += 1;
                return Ok(());
            }
        };
        let lat = rec.recorded_latency_ns.unwrap_or(0);
        let exact = multiple_of(rec.time_ns, NS_PER_TICK) && multiple_of(lat, NS_PER_TICK);
        let ts = UNIX_EPOCH_FILETIME + rec.time_ns / NS_PER_TICK;
        writeln!(
            self.out,
            "{ts},{},{},{kind},{},{},{}",
            self.host,
            rec.device,
            rec.offset,
            rec.len,
            lat / NS_PER_TICK
        )
        .map_err(|e| self.core.io(e))?;
        self.core.wrote(exact);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        self.out.flush().map_err(|e| self.core.io(e))
    }

    fn stats(&self) -> WriteStats {
        self.core.stats
    }
}

/// DiskSim ASCII writer (times in milliseconds with six decimals, which is
/// exact to the nanosecond).
pub struct DisksimWriter<W: Write> {
    out: BufWriter<W>,
    core: Core,
}

impl<W: Write> DisksimWriter<W> {
    /// A DiskSim writer.
    pub fn new(out: W) -> Self {
        DisksimWriter {
            out: BufWriter::new(out),
            core: Core::new(Format::Disksim),
        }
    }
}

impl<W: Write> TraceWriter for DisksimWriter<W> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core.begin(rec)?;
        let flags = match rec.op {
            TraceOp::Read => crate::disksim::DISKSIM_READ,
            TraceOp::Write => 0,
            TraceOp::Trim | TraceOp::Flush => {
                self.core.stats.dropped += 1;
                return Ok(());
            }
        };
        let (sector, count, exact) = sectors(rec.offset, rec.len);
        writeln!(
            self.out,
            "{}.{:06} {} {sector} {count} {flags:x}",
            rec.time_ns / 1_000_000,
            rec.time_ns % 1_000_000,
            rec.device
        )
        .map_err(|e| self.core.io(e))?;
        self.core.wrote(exact);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        self.out.flush().map_err(|e| self.core.io(e))
    }

    fn stats(&self) -> WriteStats {
        self.core.stats
    }
}

/// A record held by [`ReorderWriter`], ordered by (time, arrival).
struct Held(u64, u64, TraceRecord);

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

/// Sorts records that arrive up to `window_ns` out of time order before
/// passing them on: a record is written once one at least `window_ns`
/// later has been seen. Memory: the records within one window.
pub struct ReorderWriter<'a> {
    inner: Box<dyn TraceWriter + 'a>,
    heap: BinaryHeap<Reverse<Held>>,
    window_ns: u64,
    max_seen: u64,
    released: u64,
    order: u64,
    core: Core,
}

impl<'a> ReorderWriter<'a> {
    /// Wraps `inner` (which writes `format`, named in errors).
    pub fn new(inner: Box<dyn TraceWriter + 'a>, format: Format, window_ns: u64) -> Self {
        ReorderWriter {
            inner,
            heap: BinaryHeap::new(),
            window_ns,
            max_seen: 0,
            released: 0,
            order: 0,
            core: Core::new(format),
        }
    }
}

impl TraceWriter for ReorderWriter<'_> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        if rec.time_ns < self.released {
            return Err(self.core.error(format!(
                "time {} ns is more than the reorder window ({} ns) before a record already seen ({} ns)",
                rec.time_ns, self.window_ns, self.max_seen
            )));
        }
        self.core.index += 1;
        self.order += 1;
        self.max_seen = self.max_seen.max(rec.time_ns);
        self.heap.push(Reverse(Held(rec.time_ns, self.order, *rec)));
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.0.saturating_add(self.window_ns) > self.max_seen {
                break;
            }
            let Some(Reverse(Held(t, _, r))) = self.heap.pop() else {
                break;
            };
            self.released = t;
            self.inner.record(&r)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        while let Some(Reverse(Held(t, _, r))) = self.heap.pop() {
            self.released = t;
            self.inner.record(&r)?;
        }
        self.inner.finish()
    }

    fn stats(&self) -> WriteStats {
        self.inner.stats()
    }
}
