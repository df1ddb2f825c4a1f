//! blktrace binary files (`NAME.blktrace.CPU`), one per CPU, merged by time.
//!
//! Each file is a sequence of `struct blk_io_trace` records (48 bytes, from
//! the kernel's `blktrace_api.h`), each followed by `pdu_len` bytes of
//! payload:
//!
//! | offset | field | |
//! |---|---|---|
//! | 0 | `u32 magic` | `0x65617400 | version` (version 7) |
//! | 4 | `u32 sequence` | |
//! | 8 | `u64 time` | nanoseconds |
//! | 16 | `u64 sector` | 512-byte sectors |
//! | 24 | `u32 bytes` | |
//! | 28 | `u32 action` | low 16 bits: action, high 16 bits: categories |
//! | 32 | `u32 pid` | |
//! | 36 | `u32 device` | kernel `dev_t`, `major << 20 | minor` |
//! | 40 | `u32 cpu` | |
//! | 44 | `u16 error` | |
//! | 46 | `u16 pdu_len` | |
//!
//! Records are in the byte order of the machine that traced; we detect it
//! from the magic, per file. Actions used: queue (1), requeue (6), issue
//! (7), complete (8); everything else (merges, plugs, notify records with
//! process names, driver data) is skipped. Categories give the operation:
//! discard (bit 13) → trim, flush (bit 2) with no bytes → flush, write
//! (bit 1) → write, else read when bytes move; passthrough (bit 9) requests
//! are skipped.
//!
//! The per-CPU files are merged with a k-way merge (one record buffered per
//! file). Per-CPU clocks can disagree slightly, so merged events then pass a
//! reorder buffer of [`crate::ReadOptions::reorder_window_ns`]: disorder
//! within that window is sorted; an event later than that is an error (or
//! skipped with `skip_bad_lines`). Errors give the file and byte offset.

use crate::assemble::{op_from_flags, Assembler, Event, Kind};
use crate::error::TraceError;
use crate::text::Clock;
use crate::{ReadOptions, TraceRecord};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::{BufRead, ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `blk_io_trace` magic, without the version byte.
pub const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
/// The record version we read and write.
pub const BLK_IO_TRACE_VERSION: u32 = 0x07;
/// Size of `struct blk_io_trace`.
pub const RECORD_LEN: usize = 48;

/// Action codes (low 16 bits of `action`).
pub mod action {
    /// Queued (Q).
    pub const QUEUE: u32 = 1;
    /// Back merge (M).
    pub const BACKMERGE: u32 = 2;
    /// Requeued (R).
    pub const REQUEUE: u32 = 6;
    /// Issued to the driver (D).
    pub const ISSUE: u32 = 7;
    /// Completed (C).
    pub const COMPLETE: u32 = 8;
    /// Process-name notify record (with the notify category).
    pub const NOTIFY_PROCESS: u32 = 0;
}

/// Category bits (high 16 bits of `action`, i.e. shifted left by 16).
pub mod category {
    /// Read.
    pub const READ: u32 = 1 << 0;
    /// Write.
    pub const WRITE: u32 = 1 << 1;
    /// Flush (formerly barrier).
    pub const FLUSH: u32 = 1 << 2;
    /// Synchronous.
    pub const SYNC: u32 = 1 << 3;
    /// Queueing and merging events.
    pub const QUEUE: u32 = 1 << 4;
    /// Requeue events.
    pub const REQUEUE: u32 = 1 << 5;
    /// Issue events.
    pub const ISSUE: u32 = 1 << 6;
    /// Completion events.
    pub const COMPLETE: u32 = 1 << 7;
    /// File-system requests.
    pub const FS: u32 = 1 << 8;
    /// Passthrough (packet command) requests.
    pub const PC: u32 = 1 << 9;
    /// Notify records (process names, messages).
    pub const NOTIFY: u32 = 1 << 10;
    /// Read-ahead.
    pub const AHEAD: u32 = 1 << 11;
    /// Metadata.
    pub const META: u32 = 1 << 12;
    /// Discard.
    pub const DISCARD: u32 = 1 << 13;
    /// Driver data.
    pub const DRV_DATA: u32 = 1 << 14;
    /// Forced unit access.
    pub const FUA: u32 = 1 << 15;
}

/// Byte order of a blktrace file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Little-endian (x86, most ARM).
    #[default]
    Little,
    /// Big-endian (s390, some POWER).
    Big,
}

/// One `struct blk_io_trace` record, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawTrace {
    /// Magic and version.
    pub magic: u32,
    /// Event number.
    pub sequence: u32,
    /// Time in nanoseconds.
    pub time: u64,
    /// Disk offset in 512-byte sectors.
    pub sector: u64,
    /// Transfer length in bytes.
    pub bytes: u32,
    /// Action code and categories.
    pub action: u32,
    /// Process id.
    pub pid: u32,
    /// Device (`dev_t`).
    pub device: u32,
    /// CPU.
    pub cpu: u32,
    /// Completion error.
    pub error: u16,
    /// Length of the payload that follows.
    pub pdu_len: u16,
}

impl RawTrace {
    /// Encodes the record in the given byte order.
    pub fn encode(&self, endian: Endian) -> [u8; RECORD_LEN] {
        let mut b = [0u8; RECORD_LEN];
        macro_rules! put {
            ($at:expr, $v:expr) => {{
                let bytes = match endian {
                    Endian::Little => $v.to_le_bytes(),
                    Endian::Big => $v.to_be_bytes(),
                };
                b[$at..$at + bytes.len()].copy_from_slice(&bytes);
            }};
        }
        put!(0, self.magic);
        put!(4, self.sequence);
        put!(8, self.time);
        put!(16, self.sector);
        put!(24, self.bytes);
        put!(28, self.action);
        put!(32, self.pid);
        put!(36, self.device);
        put!(40, self.cpu);
        put!(44, self.error);
        put!(46, self.pdu_len);
        b
    }

    /// Decodes a record in the given byte order.
    pub fn decode(b: &[u8; RECORD_LEN], endian: Endian) -> RawTrace {
        macro_rules! get {
            ($t:ty, $at:expr) => {{
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[$at..$at + std::mem::size_of::<$t>()]);
                match endian {
                    Endian::Little => <$t>::from_le_bytes(a),
                    Endian::Big => <$t>::from_be_bytes(a),
                }
            }};
        }
        RawTrace {
            magic: get!(u32, 0),
            sequence: get!(u32, 4),
            time: get!(u64, 8),
            sector: get!(u64, 16),
            bytes: get!(u32, 24),
            action: get!(u32, 28),
            pid: get!(u32, 32),
            device: get!(u32, 36),
            cpu: get!(u32, 40),
            error: get!(u16, 44),
            pdu_len: get!(u16, 46),
        }
    }
}

/// Byte order in which these four bytes are a blktrace magic, if any.
pub fn detect_endian(first4: &[u8]) -> Option<Endian> {
    let a: [u8; 4] = first4.get(..4)?.try_into().ok()?;
    if u32::from_le_bytes(a) & 0xffff_ff00 == BLK_IO_TRACE_MAGIC {
        Some(Endian::Little)
    } else if u32::from_be_bytes(a) & 0xffff_ff00 == BLK_IO_TRACE_MAGIC {
        Some(Endian::Big)
    } else {
        None
    }
}

/// The per-CPU files of a blktrace run. `path` may be one of them
/// (`sda.blktrace.0`: all `sda.blktrace.N` next to it are returned, sorted
/// by N) or the run's base name (`sda`, when `sda.blktrace.0` exists).
/// `None` if `path` is neither.
pub fn per_cpu_files(path: &Path) -> Option<Vec<PathBuf>> {
    let name = path.file_name()?.to_str()?;
    let base = match split_per_cpu(name) {
        Some((base, _)) => base.to_string(),
        None => {
            let first = PathBuf::from(format!("{}.blktrace.0", path.display()));
            if !first.is_file() {
                return None;
            }
            name.to_string()
        }
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name();
            let (b, cpu) = split_per_cpu(n.to_str()?)?;
            (b == base).then(|| (cpu, dir.join(&n)))
        })
        .collect();
    found.sort();
    (!found.is_empty()).then(|| found.into_iter().map(|(_, p)| p).collect())
}

fn split_per_cpu(name: &str) -> Option<(&str, u32)> {
    let (base, cpu) = name.rsplit_once(".blktrace.")?;
    if cpu.is_empty() || !cpu.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, cpu.parse().ok()?))
}

/// One event read from a file, with where it came from.
#[derive(Clone, Copy)]
struct Located {
    ev: RawTrace,
    stream: usize,
    offset: u64,
}

struct BinStream {
    src: Box<dyn BufRead + Send>,
    path: Arc<str>,
    /// Offset of the next byte to read (the first of `back`, if any).
    pos: u64,
    endian: Option<Endian>,
    /// Bytes given back after a resync, read before `src`.
    back: Vec<u8>,
    /// Inside a run of bad bytes (counted once as skipped).
    in_bad_run: bool,
}

/// Reads into `buf` until it is full or the input ends; returns the count.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Where the magic (of the given byte order, or either) starts in `b`.
fn find_magic(b: &[u8], endian: Option<Endian>) -> Option<usize> {
    let full = BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION;
    let le = full.to_le_bytes();
    let be = full.to_be_bytes();
    b.windows(4).position(|w| match endian {
        Some(Endian::Little) => w == le,
        Some(Endian::Big) => w == be,
        None => w == le || w == be,
    })
}

enum Next {
    Record(RawTrace, u64),
    Bad {
        offset: u64,
        problem: String,
        fatal: bool,
    },
    End,
}

impl BinStream {
    fn io(&self, e: std::io::Error) -> TraceError {
        TraceError::Io {
            path: self.path.to_string(),
            source: e,
        }
    }

    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, TraceError> {
        let k = self.back.len().min(buf.len());
        buf[..k].copy_from_slice(&self.back[..k]);
        self.back.drain(..k);
        let n = k + read_full(&mut self.src, &mut buf[k..]).map_err(|e| self.io(e))?;
        self.pos += n as u64;
        Ok(n)
    }

    /// After a bad header read at `start`: give back the bytes from the
    /// next place the magic appears (or the last three bytes, which could
    /// begin one), so the next read starts there.
    fn resync(&mut self, hdr: &[u8; RECORD_LEN]) {
        let keep_from = match find_magic(&hdr[1..], self.endian) {
            Some(i) => i + 1,
            None => RECORD_LEN - 3,
        };
        let mut back = hdr[keep_from..].to_vec();
        back.append(&mut self.back);
        self.pos -= (RECORD_LEN - keep_from) as u64;
        self.back = back;
    }

    /// Reads the next record.
    fn next(&mut self) -> Result<Next, TraceError> {
        let mut hdr = [0u8; RECORD_LEN];
        let start = self.pos;
        let n = self.fill(&mut hdr)?;
        if n == 0 {
            return Ok(Next::End);
        }
        if n < RECORD_LEN {
            return Ok(Next::Bad {
                offset: start,
                problem: format!("truncated record: {n} of {RECORD_LEN} header bytes"),
                fatal: true,
            });
        }
        let Some(endian) = self.endian.or_else(|| detect_endian(&hdr)) else {
            self.resync(&hdr);
            return Ok(Next::Bad {
                offset: start,
                problem: format!(
                    "not a blktrace record (first bytes {:02x} {:02x} {:02x} {:02x}, expected the magic {:#010x} in either byte order)",
                    hdr[0], hdr[1], hdr[2], hdr[3],
                    BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION
                ),
                fatal: false,
            });
        };
        let rec = RawTrace::decode(&hdr, endian);
        if rec.magic & 0xffff_ff00 != BLK_IO_TRACE_MAGIC {
            self.resync(&hdr);
            return Ok(Next::Bad {
                offset: start,
                problem: format!("bad magic {:#010x} (corrupted record)", rec.magic),
                fatal: false,
            });
        }
        if rec.magic & 0xff != BLK_IO_TRACE_VERSION {
            self.resync(&hdr);
            return Ok(Next::Bad {
                offset: start,
                problem: format!(
                    "unsupported blktrace record version {} (expected {})",
                    rec.magic & 0xff,
                    BLK_IO_TRACE_VERSION
                ),
                fatal: false,
            });
        }
        self.endian = Some(endian);
        let pdu = rec.pdu_len as usize;
        let mut skipped = 0;
        let mut scratch = [0u8; 256];
        while skipped < pdu {
            let want = (pdu - skipped).min(scratch.len());
            let got = self.fill(&mut scratch[..want])?;
            if got == 0 {
                return Ok(Next::Bad {
                    offset: start,
                    problem: format!("truncated record: payload has {skipped} of {pdu} bytes"),
                    fatal: true,
                });
            }
            skipped += got;
        }
        Ok(Next::Record(rec, start))
    }
}

/// Wrapper ordering located events by (time, arrival order), smallest first
/// in a max-heap through `Reverse`.
struct Held {
    time: u64,
    order: u64,
    item: Located,
}

impl PartialEq for Held {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.order) == (o.time, o.order)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Held {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.time, self.order).cmp(&(o.time, o.order))
    }
}

pub(crate) struct BlktraceSource {
    streams: Vec<BinStream>,
    heads: BinaryHeap<Reverse<(u64, usize)>>,
    head: Vec<Option<Located>>,
    started: bool,
    merged_done: bool,
    reorder: BinaryHeap<Reverse<Held>>,
    order: u64,
    max_seen: u64,
    window_ns: u64,
    clock: Clock,
    asm: Assembler,
    skip_bad: bool,
    skipped: u64,
    eof: bool,
}

impl BlktraceSource {
    pub(crate) fn new(
        inputs: Vec<(Arc<str>, Box<dyn BufRead + Send>)>,
        opts: &ReadOptions,
    ) -> Self {
        let n = inputs.len();
        BlktraceSource {
            streams: inputs
                .into_iter()
                .map(|(path, src)| BinStream {
                    src,
                    path,
                    pos: 0,
                    endian: None,
                    back: Vec::new(),
                    in_bad_run: false,
                })
                .collect(),
            heads: BinaryHeap::with_capacity(n),
            head: vec![None; n],
            started: false,
            merged_done: false,
            reorder: BinaryHeap::new(),
            order: 0,
            max_seen: 0,
            window_ns: opts.reorder_window_ns,
            clock: Clock::default(),
            asm: Assembler::new(opts.blk_event, opts.completion_window_ns, opts.max_pending),
            skip_bad: opts.skip_bad_lines,
            skipped: 0,
            eof: false,
        }
    }

    pub(crate) fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Whether a record is an I/O event we use.
    fn wanted(ev: &RawTrace) -> bool {
        let cats = ev.action >> 16;
        if cats & (category::NOTIFY | category::DRV_DATA | category::PC) != 0 {
            return false;
        }
        matches!(
            ev.action & 0xffff,
            action::QUEUE | action::ISSUE | action::COMPLETE | action::REQUEUE
        )
    }

    /// Reads the next wanted event of one stream into its head slot.
    fn refill(&mut self, i: usize) -> Result<(), TraceError> {
        loop {
            let s = &mut self.streams[i];
            match s.next()? {
                Next::End => {
                    self.head[i] = None;
                    return Ok(());
                }
                Next::Bad {
                    offset,
                    problem,
                    fatal,
                } => {
                    if !self.skip_bad {
                        return Err(TraceError::Binary {
                            path: s.path.to_string(),
                            offset,
                            problem,
                        });
                    }
                    if !s.in_bad_run {
                        self.skipped += 1;
                    }
                    s.in_bad_run = true;
                    if fatal {
                        self.head[i] = None;
                        return Ok(());
                    }
                }
                Next::Record(ev, offset) => {
                    s.in_bad_run = false;
                    if !Self::wanted(&ev) {
                        continue;
                    }
                    self.head[i] = Some(Located {
                        ev,
                        stream: i,
                        offset,
                    });
                    self.heads.push(Reverse((ev.time, i)));
                    return Ok(());
                }
            }
        }
    }

    /// The next event of the k-way merge.
    fn pull_merged(&mut self) -> Result<Option<Located>, TraceError> {
        if !self.started {
            self.started = true;
            for i in 0..self.streams.len() {
                self.refill(i)?;
            }
        }
        let Some(Reverse((_, i))) = self.heads.pop() else {
            return Ok(None);
        };
        let item = self.head[i].take();
        self.refill(i)?;
        Ok(item)
    }

    /// The next event in time order, after the reorder buffer.
    fn next_sorted(&mut self) -> Result<Option<Located>, TraceError> {
        loop {
            if let Some(Reverse(top)) = self.reorder.peek() {
                if self.merged_done || top.time.saturating_add(self.window_ns) <= self.max_seen {
                    return Ok(self.reorder.pop().map(|Reverse(h)| h.item));
                }
            } else if self.merged_done {
                return Ok(None);
            }
            match self.pull_merged()? {
                Some(item) => {
                    self.max_seen = self.max_seen.max(item.ev.time);
                    self.order += 1;
                    self.reorder.push(Reverse(Held {
                        time: item.ev.time,
                        order: self.order,
                        item,
                    }));
                }
                None => self.merged_done = true,
            }
        }
    }

    fn event_of(&mut self, loc: &Located) -> Result<Option<Event>, String> {
        let ev = &loc.ev;
        let kind = match ev.action & 0xffff {
            action::QUEUE => Kind::Queue,
            action::ISSUE => Kind::Issue,
            action::COMPLETE => Kind::Complete,
            _ => Kind::Requeue,
        };
        let cats = ev.action >> 16;
        let sectors = (ev.bytes >> 9) as u64;
        ev.sector
            .checked_add(sectors)
            .and_then(|e| e.checked_mul(512))
            .ok_or("request ends beyond 2^64 bytes")?;
        let time_ns = self.clock.relative(ev.time).map_err(|_| {
            format!(
                "event time {} ns is more than the reorder window ({} ns) before an event already read",
                ev.time, self.window_ns
            )
        })?;
        let Some(op) = op_from_flags(
            cats & category::DISCARD != 0,
            cats & category::WRITE != 0,
            cats & category::FLUSH != 0,
            // the read category means data moved even if the count is 0
            // (as blkparse's `R`)
            if cats & category::READ != 0 {
                (ev.bytes as u64).max(1)
            } else {
                ev.bytes as u64
            },
        ) else {
            return Ok(None);
        };
        Ok(Some(Event {
            time_ns,
            dev: ev.device,
            pid: ev.pid,
            kind,
            op,
            sector: ev.sector,
            sectors,
        }))
    }

    pub(crate) fn next_record(&mut self) -> Option<Result<TraceRecord, TraceError>> {
        loop {
            if let Some(r) = self.asm.pop_ready(self.eof) {
                return Some(Ok(r));
            }
            if self.eof {
                return None;
            }
            let loc = match self.next_sorted() {
                Err(e) => return Some(Err(e)),
                Ok(None) => {
                    self.eof = true;
                    continue;
                }
                Ok(Some(loc)) => loc,
            };
            match self.event_of(&loc) {
                Ok(Some(ev)) => self.asm.push(ev),
                Ok(None) => {}
                Err(problem) => {
                    if self.skip_bad {
                        self.skipped += 1;
                    } else {
                        return Some(Err(TraceError::Binary {
                            path: self.streams[loc.stream].path.to_string(),
                            offset: loc.offset,
                            problem,
                        }));
                    }
                }
            }
        }
    }
}
