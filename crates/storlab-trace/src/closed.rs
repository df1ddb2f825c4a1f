//! Closed-loop traces: what an application did, request by request, with
//! the dependencies between its requests, so that a simulator can replay it
//! on another device and let a faster device finish the application sooner.
//!
//! An open-loop trace (every other format of this crate) says *when* each
//! request arrived; replayed on a faster device it still takes as long.
//! A closed-loop trace says *after what* each request was issued: which
//! earlier requests it waited for and how long its issuer computed (or
//! thought, or crossed the transport) after the latest of them completed.
//!
//! # Format (`storlab-closed` version 1)
//!
//! A text file; the first line names the format and its version, the second
//! the columns, then one request per line, `#` lines are comments:
//!
//! ```text
//! storlab-closed 1
//! columns stream thread rank after op offset len fua arrival_ns complete_ns reply_ns think_ns
//! # recorded by storlab serve on fusion-io
//! 0 0 0 0 write 0 4096 0 0 81000 95000 0
//! 0 0 1 1 flush 0 0 0 120000 128000 131000 39000
//! ```
//!
//! - `stream`: the issuer's connection (an NBD connection).
//! - `thread`: the issuing slot on that stream (see below), from 0.
//! - `rank`: the request's place in its stream's completion order (its
//!   reply's order), from 0; the ranks of a stream are `0..n`.
//! - `after`: the request waited for every request of its stream whose rank
//!   is below `after` (those whose replies were sent before it arrived).
//!   For a flush this is also the set of requests the barrier covered.
//! - `op`: `read`, `write`, `trim` or `flush`; `offset`, `len`: bytes (0 for
//!   a flush); `fua`: 1 when the write asked for forced unit access.
//! - `arrival_ns`: when it reached the device model; `complete_ns`: when the
//!   device model completed it; `reply_ns`: when the reply was sent. All
//!   three in ns on the recording's clock (the server's: since it started);
//!   [`load`] moves them so that the first arrival is at 0.
//! - `think_ns`: `arrival_ns` minus the latest `complete_ns` among the
//!   requests it waited for. This is the issuer's CPU time, the host's IO
//!   stack and the transport, everything that is not the device. For a
//!   request that waited for nothing it is its `arrival_ns` (its time from
//!   the start; [`load`] sets it to the moved arrival).
//!
//! Lines are in arrival order within each stream, except a request in
//! flight for longer than the recorder's window, written when it completes
//! ([`load`] sorts each stream by arrival). Readers check every line
//! on its own (numbers, operation, `after <= rank`, `think_ns <=
//! arrival_ns`, `arrival_ns <= complete_ns <= reply_ns`);
//! [`load`] also checks the stream as a whole (ranks a permutation,
//! arrival order) and names the line of the first problem.
//!
//! # Inference ([`Inference`])
//!
//! NBD carries no thread id, so issuers are inferred from the order on a
//! connection. What is exact and what is approximated:
//!
//! - A request *depends on* every request of its connection whose reply was
//!   sent before it arrived (exact as a happened-before relation: the client
//!   could have seen those replies; it may not have waited for all of them,
//!   so independent issuers sharing a connection, as every process does
//!   through nbdfuse or a loop device, are over-constrained).
//! - Requests in flight together stay concurrent (a request never depends on
//!   one still in flight when it arrived).
//! - The think time is measured from the device's completion, not from the
//!   reply: the server's lateness on the recording host (a reply sent
//!   after its deadline) counts as think time, on the assumption that it is
//!   the host's and not the device's.
//! - Threads: a request takes the slot of the stream whose latest request
//!   completed latest before it arrived; a request arriving while every
//!   slot is busy opens a new slot. The slot count is the stream's peak
//!   concurrency; which application thread issued a request is not known.
//! - Different connections are independent: a request never depends on
//!   another connection's request (true for one client per connection;
//!   a multi-connection client such as `nbdfuse --connections` loses its
//!   cross-connection dependencies).
//! - Requests are recorded when their replies are sent and put in arrival
//!   order through a reorder window (default 1 s). A request still in
//!   flight for longer than the window is written late, out of order
//!   (readers sort each stream by arrival), its `after` and think time
//!   counted from the stream's last 2^20 replies: exact unless it is older
//!   than all of them (then counted as inexact, `after` 0).

use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::io::{BufRead, Write};
use std::path::Path;

use crate::{TraceError, TraceOp};

/// The first word of a closed-loop trace.
pub const MAGIC: &str = "storlab-closed";
/// The version this crate writes and reads.
pub const VERSION: u32 = 1;
/// The column line of version 1.
pub const COLUMNS: &str =
    "columns stream thread rank after op offset len fua arrival_ns complete_ns reply_ns think_ns";

/// One request of a closed-loop trace (see the module documentation for
/// the meaning of each field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClosedRecord {
    /// The issuer's connection.
    pub stream: u32,
    /// The issuing slot on the stream, from 0.
    pub thread: u32,
    /// Place in the stream's completion order, from 0.
    pub rank: u64,
    /// Waits for the stream's requests of rank below this.
    pub after: u64,
    /// What the request does.
    pub op: TraceOp,
    /// Byte offset (0 for a flush).
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u64,
    /// Forced unit access.
    pub fua: bool,
    /// Arrival at the device model, ns (since the trace's first arrival
    /// once [`load`]ed).
    pub arrival_ns: u64,
    /// The device model's completion, ns.
    pub complete_ns: u64,
    /// Reply sent, ns.
    pub reply_ns: u64,
    /// Time from the latest completion waited for (or from the trace's
    /// start, when `after` is 0) to the arrival, ns.
    pub think_ns: u64,
}

/// Writes a closed-loop trace: the header, then one line per record.
pub struct ClosedWriter<W: Write> {
    out: W,
    written: u64,
}

impl<W: Write> ClosedWriter<W> {
    /// Write the header (with `comment` lines, each prefixed with `# `).
    pub fn new(mut out: W, comments: &[&str]) -> std::io::Result<Self> {
        writeln!(out, "{MAGIC} {VERSION}")?;
        writeln!(out, "{COLUMNS}")?;
        for c in comments {
            for l in c.lines() {
                writeln!(out, "# {l}")?;
            }
        }
        Ok(ClosedWriter { out, written: 0 })
    }

    /// Write one record.
    pub fn write(&mut self, r: &ClosedRecord) -> std::io::Result<()> {
        self.written += 1;
        writeln!(
            self.out,
            "{} {} {} {} {} {} {} {} {} {} {} {}",
            r.stream,
            r.thread,
            r.rank,
            r.after,
            r.op.name(),
            r.offset,
            r.len,
            u8::from(r.fua),
            r.arrival_ns,
            r.complete_ns,
            r.reply_ns,
            r.think_ns
        )
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flush and return the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads a closed-loop trace line by line: an iterator of records with
/// their 1-based line numbers. The header is checked by [`ClosedReader::new`].
pub struct ClosedReader<R: BufRead> {
    input: R,
    path: String,
    line_no: u64,
    line: String,
    failed: bool,
}

impl<R: BufRead> ClosedReader<R> {
    /// Check the header of `input` (named `path` in errors).
    pub fn new(mut input: R, path: &str) -> Result<Self, TraceError> {
        let mut line = String::new();
        let mut line_no = 0;
        let mut read = |line: &mut String, line_no: &mut u64| -> Result<bool, TraceError> {
            line.clear();
            *line_no += 1;
            input
                .read_line(line)
                .map(|n| n > 0)
                .map_err(|e| TraceError::Io {
                    path: path.to_string(),
                    source: e,
                })
        };
        if !read(&mut line, &mut line_no)? {
            return Err(TraceError::Input {
                path: path.to_string(),
                problem: format!("empty file: a closed-loop trace starts with `{MAGIC} {VERSION}`"),
            });
        }
        let mut words = line.split_whitespace();
        if words.next() != Some(MAGIC) {
            return Err(bad_line(
                path,
                1,
                &line,
                format!("not a closed-loop trace: the first line must be `{MAGIC} {VERSION}`"),
            ));
        }
        match words.next().map(str::parse::<u32>) {
            Some(Ok(VERSION)) if words.next().is_none() => {}
            Some(Ok(v)) => {
                return Err(bad_line(
                    path,
                    1,
                    &line,
                    format!("version {v} is not supported (this storlab reads version {VERSION})"),
                ))
            }
            _ => {
                return Err(bad_line(
                    path,
                    1,
                    &line,
                    format!("expected `{MAGIC} {VERSION}`"),
                ))
            }
        }
        if !read(&mut line, &mut line_no)? || line.split_whitespace().ne(COLUMNS.split(' ')) {
            return Err(bad_line(
                path,
                2,
                &line,
                format!("the second line must be `{COLUMNS}`"),
            ));
        }
        Ok(ClosedReader {
            input,
            path: path.to_string(),
            line_no,
            line,
            failed: false,
        })
    }

    fn parse(&self) -> Result<ClosedRecord, String> {
        let mut w = self.line.split_whitespace();
        let mut next = |name: &str| w.next().ok_or_else(|| format!("missing column `{name}`"));
        fn num(s: &str, name: &str) -> Result<u64, String> {
            s.parse::<u64>()
                .map_err(|_| format!("column `{name}`: `{s}` is not a whole number"))
        }
        let n32 = |s: &str, name: &str| -> Result<u32, String> {
            num(s, name)?
                .try_into()
                .map_err(|_| format!("column `{name}`: `{s}` is larger than 2^32-1"))
        };
        let stream = n32(next("stream")?, "stream")?;
        let thread = n32(next("thread")?, "thread")?;
        let rank = num(next("rank")?, "rank")?;
        let after = num(next("after")?, "after")?;
        let op: TraceOp = next("op")?
            .parse()
            .map_err(|e| format!("column `op`: {e}"))?;
        let offset = num(next("offset")?, "offset")?;
        let len = num(next("len")?, "len")?;
        let fua = match next("fua")? {
            "0" => false,
            "1" => true,
            s => return Err(format!("column `fua`: `{s}` is neither 0 nor 1")),
        };
        let arrival_ns = num(next("arrival_ns")?, "arrival_ns")?;
        let complete_ns = num(next("complete_ns")?, "complete_ns")?;
        let reply_ns = num(next("reply_ns")?, "reply_ns")?;
        let think_ns = num(next("think_ns")?, "think_ns")?;
        if let Some(extra) = w.next() {
            return Err(format!("more than 12 columns (`{extra}`)"));
        }
        if after > rank {
            return Err(format!(
                "after {after} > rank {rank}: a request cannot wait for itself or a later one"
            ));
        }
        if offset.checked_add(len).is_none() {
            return Err("offset + len overflows".into());
        }
        if !(arrival_ns <= complete_ns && complete_ns <= reply_ns) {
            return Err("times must satisfy arrival_ns <= complete_ns <= reply_ns".into());
        }
        if think_ns > arrival_ns {
            return Err("think_ns is larger than arrival_ns".into());
        }
        Ok(ClosedRecord {
            stream,
            thread,
            rank,
            after,
            op,
            offset,
            len,
            fua,
            arrival_ns,
            complete_ns,
            reply_ns,
            think_ns,
        })
    }

    /// The line number of the record last returned.
    pub fn line(&self) -> u64 {
        self.line_no
    }
}

fn bad_line(path: &str, line: u64, text: &str, problem: String) -> TraceError {
    TraceError::Line {
        path: path.to_string(),
        line,
        problem,
        text: crate::error::excerpt(text.trim_end().as_bytes()),
    }
}

impl<R: BufRead> Iterator for ClosedReader<R> {
    type Item = Result<(u64, ClosedRecord), TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            self.line.clear();
            self.line_no += 1;
            match self.input.read_line(&mut self.line) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    self.failed = true;
                    return Some(Err(TraceError::Io {
                        path: format!("{}:{}", self.path, self.line_no),
                        source: e,
                    }));
                }
            }
            let t = self.line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            return Some(match self.parse() {
                Ok(r) => Ok((self.line_no, r)),
                Err(p) => {
                    self.failed = true;
                    Err(bad_line(&self.path, self.line_no, &self.line, p))
                }
            });
        }
    }
}

/// A whole closed-loop trace in memory, checked, streams in ascending
/// order, each stream's requests in arrival order.
#[derive(Clone, Debug, Default)]
pub struct ClosedTrace {
    /// `(stream id, its requests in arrival order)`, by stream id.
    pub streams: Vec<(u32, Vec<ClosedRecord>)>,
    /// The first arrival on the recording's clock (the records' times are
    /// moved by it): a replay that starts its clock here sees the times
    /// the recording's device saw (a disk's rotational position depends
    /// on them).
    pub origin_ns: u64,
}

impl ClosedTrace {
    /// Requests in the trace.
    pub fn requests(&self) -> u64 {
        self.streams.iter().map(|(_, v)| v.len() as u64).sum()
    }

    /// The recorded run: from the first arrival (time 0) to the latest
    /// device completion, ns.
    pub fn recorded_span_ns(&self) -> u64 {
        self.streams
            .iter()
            .flat_map(|(_, v)| v.iter().map(|r| r.complete_ns))
            .max()
            .unwrap_or(0)
    }

    /// Threads (slots) over every stream.
    pub fn threads(&self) -> u64 {
        self.streams
            .iter()
            .map(|(_, v)| v.iter().map(|r| r.thread as u64 + 1).max().unwrap_or(0))
            .sum()
    }
}

/// Read and check a whole closed-loop trace from `input` (named `path` in
/// errors): each line (see [`ClosedReader`]), then each stream: its ranks
/// must be `0..n` exactly once and a request's `after` may not count a
/// request that arrived after it. Each stream is put in arrival order.
pub fn load_from<R: BufRead>(input: R, path: &str) -> Result<ClosedTrace, TraceError> {
    let reader = ClosedReader::new(input, path)?;
    let mut streams: BTreeMap<u32, Vec<(u64, ClosedRecord)>> = BTreeMap::new();
    for item in reader {
        let (line, r) = item?;
        streams.entry(r.stream).or_default().push((line, r));
    }
    let first = streams
        .values()
        .flat_map(|v| v.iter().map(|(_, r)| r.arrival_ns))
        .min()
        .unwrap_or(0);
    for recs in streams.values_mut() {
        // stable: equal arrivals keep file order
        recs.sort_by_key(|(_, r)| r.arrival_ns);
        for (_, r) in recs.iter_mut() {
            r.arrival_ns -= first;
            r.complete_ns -= first;
            r.reply_ns -= first;
            r.think_ns = if r.after == 0 {
                r.arrival_ns
            } else {
                r.think_ns.min(r.arrival_ns)
            };
        }
    }
    let mut out = ClosedTrace {
        origin_ns: first,
        ..ClosedTrace::default()
    };
    for (id, recs) in streams {
        let n = recs.len() as u64;
        // by rank: the arrival of each, to check that nothing waits for a
        // later arrival (which would deadlock a replay)
        let mut by_rank = vec![u64::MAX; recs.len()];
        for (line, r) in &recs {
            if r.rank >= n {
                return Err(TraceError::Input {
                    path: format!("{path}:{line}"),
                    problem: format!(
                        "stream {id}: rank {} but the stream has {n} requests (ranks are 0..{n})",
                        r.rank
                    ),
                });
            }
            let slot = &mut by_rank[r.rank as usize];
            if *slot != u64::MAX {
                return Err(TraceError::Input {
                    path: format!("{path}:{line}"),
                    problem: format!("stream {id}: rank {} appears twice", r.rank),
                });
            }
            *slot = r.arrival_ns;
        }
        // prefix maximum of arrivals in rank order
        let mut latest = Vec::with_capacity(recs.len() + 1);
        latest.push(0u64);
        for a in &by_rank {
            let m = latest.last().copied().unwrap_or(0).max(*a);
            latest.push(m);
        }
        for (line, r) in &recs {
            if r.after > 0 && latest[r.after as usize] > r.arrival_ns {
                return Err(TraceError::Input {
                    path: format!("{path}:{line}"),
                    problem: format!(
                        "stream {id}: the request waits (after = {}) for a request that arrived after it",
                        r.after
                    ),
                });
            }
        }
        out.streams
            .push((id, recs.into_iter().map(|(_, r)| r).collect()));
    }
    Ok(out)
}

/// [`load_from`] a file.
pub fn load(path: &Path) -> Result<ClosedTrace, TraceError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| TraceError::Io {
        path: name.clone(),
        source: e,
    })?;
    load_from(std::io::BufReader::new(f), &name)
}

/// One request as the server served it: what the recorder is told, in the
/// order the replies were sent (times on the server's clock, any origin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    /// The connection.
    pub stream: u32,
    /// What it did.
    pub op: TraceOp,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// Forced unit access.
    pub fua: bool,
    /// Arrival at the device model.
    pub arrival_ns: u64,
    /// The device model's completion (the reply's deadline).
    pub complete_ns: u64,
    /// The reply sent.
    pub reply_ns: u64,
}

/// What [`Inference`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InferenceStats {
    /// Records emitted.
    pub emitted: u64,
    /// Records emitted out of arrival order (in flight longer than the
    /// window; readers put them back in order).
    pub late: u64,
    /// Records whose `after` or think time is approximate (a late record
    /// older than the replies a stream remembers, 2^20).
    pub inexact: u64,
}

/// Replies a stream remembers for requests written late (in flight longer
/// than the window): 16 bytes each.
const HISTORY: usize = 1 << 20;

#[derive(Default)]
struct StreamState {
    /// Replies received, in reply (rank) order: `(reply_ns, the latest
    /// device completion among this and every earlier rank)`; the first
    /// is rank `hist_base` (older ones are forgotten past [`HISTORY`]).
    hist: VecDeque<(u64, u64)>,
    hist_base: u64,
    /// Replies counted by the latest arrival processed in order (its
    /// `after`).
    counted: u64,
    /// Each slot's latest request's rank.
    slots: Vec<u64>,
}

impl StreamState {
    fn next_rank(&self) -> u64 {
        self.hist_base + self.hist.len() as u64
    }

    /// The latest device completion among ranks below `after` (> 0), if
    /// still remembered.
    fn latest_complete(&self, after: u64) -> Option<u64> {
        let i = after.checked_sub(1)?.checked_sub(self.hist_base)?;
        self.hist.get(i as usize).map(|&(_, c)| c)
    }
}

/// Infers a closed-loop trace from the requests a server served, fed in the
/// order their replies were sent, and hands records out in arrival order
/// (see the module documentation for the rules and what is approximated).
pub struct Inference {
    window_ns: u64,
    streams: BTreeMap<u32, StreamState>,
    /// Waiting to be processed, by `(arrival, sequence)`.
    pending: BinaryHeap<std::cmp::Reverse<(u64, u64, PendingReq)>>,
    seq: u64,
    latest_reply: u64,
    /// The latest arrival processed.
    processed_to: u64,
    stats: InferenceStats,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct PendingReq {
    rank: u64,
    stream: u32,
    op: u8,
    offset: u64,
    len: u64,
    fua: bool,
    complete_ns: u64,
    reply_ns: u64,
}

impl Inference {
    /// Requests are put in arrival order once the replies sent have passed
    /// their arrival by `window_ns`.
    pub fn new(window_ns: u64) -> Self {
        Inference {
            window_ns,
            streams: BTreeMap::new(),
            pending: BinaryHeap::new(),
            seq: 0,
            latest_reply: 0,
            processed_to: 0,
            stats: InferenceStats::default(),
        }
    }

    /// A request's reply was sent; append the records now known for sure to
    /// `out`.
    pub fn push(&mut self, s: Served, out: &mut Vec<ClosedRecord>) {
        let st = self.streams.entry(s.stream).or_default();
        let rank = st.next_rank();
        let complete = s.complete_ns.max(s.arrival_ns);
        let prev = st.hist.back().map_or((0, 0), |&x| x);
        // the server's clock is monotonic, replies of a stream come in order
        let reply = s.reply_ns.max(complete).max(prev.0);
        st.hist.push_back((reply, prev.1.max(complete)));
        while st.hist.len() > HISTORY && st.hist_base < st.counted {
            st.hist.pop_front();
            st.hist_base += 1;
        }
        self.latest_reply = self.latest_reply.max(reply);
        let op = match s.op {
            TraceOp::Read => 0,
            TraceOp::Write => 1,
            TraceOp::Trim => 2,
            TraceOp::Flush => 3,
        };
        self.seq += 1;
        self.pending.push(std::cmp::Reverse((
            s.arrival_ns,
            self.seq,
            PendingReq {
                rank,
                stream: s.stream,
                op,
                offset: s.offset,
                len: s.len,
                fua: s.fua,
                complete_ns: complete,
                reply_ns: reply,
            },
        )));
        let limit = self.latest_reply.saturating_sub(self.window_ns);
        self.drain(Some(limit), out);
    }

    /// No more requests: append every record still held.
    pub fn finish(&mut self, out: &mut Vec<ClosedRecord>) {
        self.drain(None, out);
    }

    /// What was counted.
    pub fn stats(&self) -> InferenceStats {
        self.stats
    }

    fn drain(&mut self, limit: Option<u64>, out: &mut Vec<ClosedRecord>) {
        while let Some(std::cmp::Reverse((arrival, _, _))) = self.pending.peek() {
            if limit.is_some_and(|l| *arrival >= l) {
                break;
            }
            let Some(std::cmp::Reverse((arrival, _, p))) = self.pending.pop() else {
                break;
            };
            let late = arrival < self.processed_to;
            self.processed_to = self.processed_to.max(arrival);
            let st = self.streams.entry(p.stream).or_default();
            let mut exact = true;
            let after = if late {
                // in flight longer than the window: count the replies
                // before its arrival in the history
                self.stats.late += 1;
                let i = st.hist.partition_point(|&(reply, _)| reply < arrival) as u64;
                if i == 0 && st.hist_base > 0 {
                    exact = false;
                    0
                } else {
                    st.hist_base + i
                }
            } else {
                st.counted = st.counted.max(st.hist_base);
                while st.counted < st.next_rank()
                    && st.hist[(st.counted - st.hist_base) as usize].0 < arrival
                {
                    st.counted += 1;
                }
                st.counted
            }
            .min(p.rank);
            let think = match st.latest_complete(after) {
                Some(c) => arrival.saturating_sub(c),
                None if after == 0 => arrival,
                None => {
                    exact = false;
                    0
                }
            };
            if !exact {
                self.stats.inexact += 1;
            }
            // the free slot whose latest request completed last, else a new one
            let mut best: Option<(usize, u64)> = None;
            for (i, &last) in st.slots.iter().enumerate() {
                if last < after && best.is_none_or(|(_, b)| last > b) {
                    best = Some((i, last));
                }
            }
            let thread = match best {
                Some((i, _)) => {
                    st.slots[i] = p.rank;
                    i
                }
                None => {
                    st.slots.push(p.rank);
                    st.slots.len() - 1
                }
            };
            self.stats.emitted += 1;
            out.push(ClosedRecord {
                stream: p.stream,
                thread: thread as u32,
                rank: p.rank,
                after,
                op: TraceOp::ALL[p.op as usize],
                offset: p.offset,
                len: p.len,
                fua: p.fua,
                arrival_ns: arrival,
                complete_ns: p.complete_ns,
                reply_ns: p.reply_ns,
                think_ns: think.min(arrival),
            });
        }
    }
}

#[cfg(test)]
mod tests;
