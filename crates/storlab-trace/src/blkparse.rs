//! blkparse's default text output.
//!
//! ```text
//!   8,0    3        1     0.000000000  4162  Q  WS 3417048 + 8 [kworker/3:1]
//!   8,0    3        2     0.000012040  4162  D  WS 3417048 + 8 [kworker/3:1]
//!   8,0    3        3     0.000193910     0  C  WS 3417048 + 8 [0]
//! ```
//!
//! Columns (blkparse's `%D %2c %8s %5T.%9t %5p %2a %3d` header, then per
//! action): `major,minor cpu sequence seconds.nanoseconds pid action rwbs`,
//! then for Q/D/C `sector + count` (512-byte sectors) and `[process]` or
//! `[error]`.
//!
//! - Requests start at Q (queue) events by default, or at D (issue) events
//!   with [`crate::BlkEvent::Issue`]; completions (C) supply the recorded
//!   latency (see [`crate::assemble`]). Other actions (merges M/F, get
//!   request G, insert I, plug P, unplug U/T, remap A, split X, messages m)
//!   are read, checked and ignored.
//! - rwbs letters: `D` discard → trim; `F` first with no data → flush; `W`
//!   → write; `R` → read; `N` alone (no data) → ignored. `F` after the
//!   direction (FUA), `S` sync, `M` meta, `A` ahead, `B` barrier are
//!   accepted and do not change the operation.
//! - SCSI passthrough events (`bytes (cdb) [name]`, a number without
//!   `+ count`) are ignored.
//! - The per-CPU and total summary blkparse prints at the end (from the
//!   first `CPU0 (8,0):` or `Total (8,0):` line on) is ignored, as are
//!   `Input file ... added` lines.
//! - The device is the kernel `dev_t`, `major << 20 | minor`. Traces of
//!   stacked devices (device-mapper, md) show a request once per layer;
//!   keep one layer with [`crate::ReadOptions::disk`].

use crate::assemble::{op_from_flags, Assembler, Event, Kind};
use crate::error::TraceError;
use crate::text::{parse_u32, parse_u64, sectors_to_bytes, tokens, Clock, Lines, Problem};
use crate::{make_dev, ReadOptions, TraceOp, TraceRecord};

pub(crate) struct BlkparseSource {
    lines: Lines,
    parser: Parser,
    asm: Assembler,
    skip_bad: bool,
    skipped: u64,
    eof: bool,
}

/// Line-parsing state: the clock, and whether the summary has begun.
#[derive(Default)]
struct Parser {
    clock: Clock,
    trailer: bool,
}

/// What one line holds.
enum Parsed {
    Nothing,
    Event(Event),
}

/// Parses `major,minor` into a `dev_t`.
fn parse_dev(tok: &[u8]) -> Option<u32> {
    let comma = memchr::memchr(b',', tok)?;
    let major = parse_u32(&tok[..comma])?;
    let minor = parse_u32(&tok[comma + 1..])?;
    make_dev(major, minor)
}

/// Parses `seconds.nanoseconds`.
fn parse_time(tok: &[u8]) -> Result<u64, Problem> {
    if tok.first() == Some(&b'-') {
        return Err("negative timestamp".into());
    }
    let dot = memchr::memchr(b'.', tok).ok_or("bad time (expected seconds.nanoseconds)")?;
    let secs = parse_u64(&tok[..dot]).ok_or("bad time (expected seconds.nanoseconds)")?;
    let frac = &tok[dot + 1..];
    if frac.is_empty() || frac.len() > 9 || !frac.iter().all(u8::is_ascii_digit) {
        return Err("bad time (expected seconds.nanoseconds)".into());
    }
    let mut ns = 0u64;
    for i in 0..9 {
        ns = ns * 10 + frac.get(i).map_or(0, |b| (b - b'0') as u64);
    }
    secs.checked_mul(1_000_000_000)
        .and_then(|v| v.checked_add(ns))
        .ok_or_else(|| "time too large".into())
}

/// The operation named by an rwbs field and a sector count.
pub(crate) fn op_from_rwbs(rwbs: &[u8], sectors: u64) -> Result<Option<TraceOp>, Problem> {
    if rwbs.is_empty() || !rwbs.iter().all(|b| b"FRWDNASMB".contains(b)) {
        return Err("bad rwbs field".into());
    }
    let has = |c: u8| rwbs.contains(&c);
    Ok(op_from_flags(
        has(b'D'),
        has(b'W'),
        rwbs[0] == b'F',
        // An `R` means data moved even if the count is missing.
        if has(b'R') { sectors.max(1) } else { sectors },
    ))
}

/// Whether a line looks like a blkparse event line (format detection).
pub(crate) fn looks_like(line: &[u8]) -> bool {
    if line.starts_with(b"Input file ") {
        return true;
    }
    let t: Vec<&[u8]> = tokens(line).take(7).collect();
    t.len() == 7
        && parse_dev(t[0]).is_some()
        && parse_u32(t[1]).is_some()
        && parse_u64(t[2]).is_some()
        && parse_time(t[3]).is_ok()
        && parse_u32(t[4]).is_some()
}

impl Parser {
    fn parse(&mut self, line: &[u8]) -> Result<Parsed, Problem> {
        let mut t = tokens(line);
        let Some(first) = t.next() else {
            return Ok(Parsed::Nothing);
        };
        let Some(dev) = parse_dev(first) else {
            if line.starts_with(b"Input file ") {
                return Ok(Parsed::Nothing);
            }
            let second = t.next().unwrap_or_default();
            if (first.starts_with(b"CPU") || first == b"Total") && second.starts_with(b"(") {
                self.trailer = true;
                return Ok(Parsed::Nothing);
            }
            return Err("not a blkparse event line (expected `major,minor cpu seq time pid action rwbs ...`)".into());
        };
        const SHAPE: &str = "expected `major,minor cpu seq time pid action rwbs ...`";
        let cpu = t.next().ok_or(SHAPE)?;
        let seq = t.next().ok_or(SHAPE)?;
        let time = t.next().ok_or(SHAPE)?;
        let pid = t.next().ok_or(SHAPE)?;
        let action = t.next().ok_or(SHAPE)?;
        let rwbs = t.next().ok_or(SHAPE)?;
        parse_u32(cpu).ok_or("bad cpu")?;
        parse_u64(seq).ok_or("bad sequence number")?;
        let raw = parse_time(time)?;
        let pid = parse_u32(pid).ok_or("bad pid")?;
        let kind = match action {
            b"Q" => Kind::Queue,
            b"D" => Kind::Issue,
            b"C" => Kind::Complete,
            b"R" => Kind::Requeue,
            _ => {
                self.clock.relative(raw)?;
                return Ok(Parsed::Nothing);
            }
        };
        // `sector + count`, or just `sector` (completions without data),
        // or nothing (`[process]`, flushes).
        let (sector, sectors) = match t.next() {
            None => (0, 0),
            Some(tok) if tok.starts_with(b"[") => (0, 0),
            Some(tok) if tok.starts_with(b"(") => {
                // SCSI passthrough completion: `(cdb) [error]`.
                self.clock.relative(raw)?;
                return Ok(Parsed::Nothing);
            }
            Some(tok) => {
                let sector = parse_u64(tok).ok_or("bad sector")?;
                match t.next() {
                    Some(b"+") => {
                        let n = t.next().ok_or("missing sector count after `+`")?;
                        (sector, parse_u64(n).ok_or("bad sector count")?)
                    }
                    _ if kind != Kind::Complete => {
                        // A number without `+ count` outside completions
                        // is a passthrough command's byte count:
                        // `bytes [(cdb)] [name]`.
                        op_from_rwbs(rwbs, 0)?;
                        self.clock.relative(raw)?;
                        return Ok(Parsed::Nothing);
                    }
                    _ => (sector, 0),
                }
            }
        };
        let op = op_from_rwbs(rwbs, sectors)?;
        sectors_to_bytes(sector)?;
        sectors_to_bytes(sectors)?;
        sector
            .checked_add(sectors)
            .and_then(|e| e.checked_mul(512))
            .ok_or("request ends beyond 2^64 bytes")?;
        let time_ns = self.clock.relative(raw)?;
        let Some(op) = op else {
            return Ok(Parsed::Nothing);
        };
        Ok(Parsed::Event(Event {
            time_ns,
            dev,
            pid,
            kind,
            op,
            sector,
            sectors,
        }))
    }
}

impl BlkparseSource {
    pub(crate) fn new(lines: Lines, opts: &ReadOptions) -> BlkparseSource {
        BlkparseSource {
            lines,
            parser: Parser::default(),
            asm: Assembler::new(opts.blk_event, opts.completion_window_ns, opts.max_pending),
            skip_bad: opts.skip_bad_lines,
            skipped: 0,
            eof: false,
        }
    }

    pub(crate) fn skipped(&self) -> u64 {
        self.skipped
    }

    pub(crate) fn next_record(&mut self) -> Option<Result<TraceRecord, TraceError>> {
        loop {
            if let Some(r) = self.asm.pop_ready(self.eof) {
                return Some(Ok(r));
            }
            if self.eof {
                return None;
            }
            match self.lines.advance() {
                Err(e) => return Some(Err(e)),
                Ok(false) => {
                    self.eof = true;
                    continue;
                }
                Ok(true) => {}
            }
            if self.parser.trailer {
                continue;
            }
            let parsed = if self.lines.too_long() {
                Err(Problem::from("line too long (more than 4096 bytes)"))
            } else {
                self.parser.parse(self.lines.line())
            };
            match parsed {
                Ok(Parsed::Event(ev)) => self.asm.push(ev),
                Ok(Parsed::Nothing) => {}
                Err(p) => {
                    if self.skip_bad {
                        self.skipped += 1;
                    } else {
                        return Some(Err(self.lines.error(p)));
                    }
                }
            }
        }
    }
}
