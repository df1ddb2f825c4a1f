//! The blkparse (text) and blktrace (binary) writers: a queue event per
//! request, a complete event at arrival + latency.

use super::base::{sectors, Core, TraceWriter, WriteOptions, WriteStats};
use crate::blktrace::{
    action, category, Endian, RawTrace, BLK_IO_TRACE_MAGIC, BLK_IO_TRACE_VERSION,
};
use crate::error::TraceError;
use crate::{dev_major, dev_minor, Format, TraceOp, TraceRecord};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};
use std::io::{BufWriter, Write};

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
