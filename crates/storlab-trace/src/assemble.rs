//! Turns block-layer events (blkparse text or blktrace binary) into
//! requests: a queue (Q) or issue (D) event starts a request, the matching
//! completion (C) gives its recorded latency.
//!
//! Matching: a completion for `sector + count` on a device completes, for
//! every sector in `[sector, sector + count)`, the oldest pending request of
//! the same operation that starts there. That covers both the exact match
//! (one bio, one request) and merges (bios back- or front-merged into one
//! request complete together). Flushes without data match the oldest
//! pending flush of the device. With D as the start event, a requeue (R)
//! withdraws the pending request, since it will be issued again.
//!
//! Requests are yielded in start order. A request waits for its completion
//! at most `completion_window_ns` of trace time, and at most `max_pending`
//! requests wait at once; past either bound the oldest is yielded without a
//! latency. That keeps memory bounded on traces without completions.

use crate::{TraceOp, TraceRecord};
use std::collections::{BTreeSet, VecDeque};

/// Which block-layer event marks a request's arrival.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BlkEvent {
    /// Queue (Q): the bio enters the block layer. This is what fio's
    /// blktrace replay uses, and the latency includes scheduler queueing.
    #[default]
    Queue,
    /// Issue (D): the request is sent to the driver (what btreplay uses);
    /// the latency is the device's service time.
    Issue,
}

/// Kind of a block-layer event we care about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Queue,
    Issue,
    Complete,
    Requeue,
}

/// One parsed block-layer event, time already relative.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub time_ns: u64,
    pub dev: u32,
    pub pid: u32,
    pub kind: Kind,
    pub op: TraceOp,
    pub sector: u64,
    pub sectors: u64,
}

/// Sector used as the index key of flushes (which have no address).
const FLUSH_KEY: u64 = u64::MAX;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Done,
    Dropped,
}

struct Slot {
    rec: TraceRecord,
    key: (u32, u64, u64),
    state: State,
}

pub(crate) struct Assembler {
    start: Kind,
    window_ns: u64,
    max_pending: usize,
    slots: VecDeque<Slot>,
    first_id: u64,
    index: BTreeSet<(u32, u64, u64)>,
    last_time: u64,
    scratch: Vec<(u32, u64, u64)>,
}

impl Assembler {
    pub(crate) fn new(start: BlkEvent, window_ns: u64, max_pending: usize) -> Assembler {
        Assembler {
            start: match start {
                BlkEvent::Queue => Kind::Queue,
                BlkEvent::Issue => Kind::Issue,
            },
            window_ns,
            max_pending: max_pending.max(1),
            slots: VecDeque::new(),
            first_id: 0,
            index: BTreeSet::new(),
            last_time: 0,
            scratch: Vec::new(),
        }
    }

    fn slot_mut(&mut self, id: u64) -> &mut Slot {
        &mut self.slots[(id - self.first_id) as usize]
    }

    /// Takes one event. The offset/length overflow check is the caller's.
    pub(crate) fn push(&mut self, ev: Event) {
        self.last_time = self.last_time.max(ev.time_ns);
        match ev.kind {
            k if k == self.start => {
                let id = self.first_id + self.slots.len() as u64;
                let sector = if ev.op == TraceOp::Flush {
                    FLUSH_KEY
                } else {
                    ev.sector
                };
                let key = (ev.dev, sector, id);
                let (offset, len) = if ev.op == TraceOp::Flush {
                    (0, 0)
                } else {
                    (ev.sector * 512, ev.sectors * 512)
                };
                self.slots.push_back(Slot {
                    rec: TraceRecord {
                        time_ns: ev.time_ns,
                        op: ev.op,
                        offset,
                        len,
                        device: ev.dev,
                        recorded_latency_ns: None,
                        stream: ev.pid,
                    },
                    key,
                    state: State::Pending,
                });
                self.index.insert(key);
            }
            Kind::Complete => self.complete(ev),
            Kind::Requeue if self.start == Kind::Issue => self.requeue(ev),
            _ => {}
        }
    }

    fn complete(&mut self, ev: Event) {
        self.scratch.clear();
        if ev.op == TraceOp::Flush {
            let lo = (ev.dev, FLUSH_KEY, 0);
            let hi = (ev.dev, FLUSH_KEY, u64::MAX);
            if let Some(k) = self.index.range(lo..=hi).next() {
                self.scratch.push(*k);
            }
        } else {
            let end = ev.sector.saturating_add(ev.sectors.max(1));
            let mut last_sector = None;
            for k in self.index.range((ev.dev, ev.sector, 0)..(ev.dev, end, 0)) {
                if k.1 == FLUSH_KEY || last_sector == Some(k.1) {
                    continue;
                }
                let slot = &self.slots[(k.2 - self.first_id) as usize];
                if slot.rec.op == ev.op {
                    self.scratch.push(*k);
                    last_sector = Some(k.1);
                }
            }
        }
        let keys = std::mem::take(&mut self.scratch);
        for k in &keys {
            self.index.remove(k);
            let slot = self.slot_mut(k.2);
            slot.rec.recorded_latency_ns = Some(ev.time_ns.saturating_sub(slot.rec.time_ns));
            slot.state = State::Done;
        }
        self.scratch = keys;
    }

    fn requeue(&mut self, ev: Event) {
        let sector = if ev.op == TraceOp::Flush {
            FLUSH_KEY
        } else {
            ev.sector
        };
        let found = self
            .index
            .range((ev.dev, sector, 0)..=(ev.dev, sector, u64::MAX))
            .find(|k| self.slots[(k.2 - self.first_id) as usize].rec.op == ev.op)
            .copied();
        if let Some(k) = found {
            self.index.remove(&k);
            self.slot_mut(k.2).state = State::Dropped;
        }
    }

    /// The next request that may be yielded, if any. At the end of the
    /// input (`eof`) everything pending is released.
    pub(crate) fn pop_ready(&mut self, eof: bool) -> Option<TraceRecord> {
        loop {
            let front = self.slots.front()?;
            let release = match front.state {
                State::Dropped | State::Done => true,
                State::Pending => {
                    eof || self.slots.len() > self.max_pending
                        || self.last_time - front.rec.time_ns > self.window_ns
                }
            };
            if !release {
                return None;
            }
            let slot = self.slots.pop_front()?;
            self.first_id += 1;
            match slot.state {
                State::Dropped => continue,
                State::Done => return Some(slot.rec),
                State::Pending => {
                    self.index.remove(&slot.key);
                    return Some(slot.rec);
                }
            }
        }
    }
}

/// The operation a block event stands for, from its flags. `None` for
/// events that move no data and are not flushes (SCSI passthrough, empty
/// requests).
pub(crate) fn op_from_flags(
    discard: bool,
    write: bool,
    flush: bool,
    bytes: u64,
) -> Option<TraceOp> {
    if discard {
        Some(TraceOp::Trim)
    } else if flush && bytes == 0 {
        Some(TraceOp::Flush)
    } else if write {
        Some(TraceOp::Write)
    } else if bytes > 0 {
        Some(TraceOp::Read)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: u64, kind: Kind, op: TraceOp, sector: u64, sectors: u64) -> Event {
        Event {
            time_ns: t,
            dev: 7,
            pid: 1,
            kind,
            op,
            sector,
            sectors,
        }
    }

    #[test]
    fn back_merged_bios_complete_together_and_order_is_kept() {
        let mut a = Assembler::new(BlkEvent::Queue, 1_000_000, 100);
        a.push(ev(0, Kind::Queue, TraceOp::Write, 100, 8));
        a.push(ev(10, Kind::Queue, TraceOp::Write, 108, 8));
        a.push(ev(20, Kind::Queue, TraceOp::Read, 500, 8));
        assert!(a.pop_ready(false).is_none());
        a.push(ev(25, Kind::Complete, TraceOp::Read, 500, 8));
        // The read is done, but the writes before it are not: still nothing.
        assert!(a.pop_ready(false).is_none());
        a.push(ev(100, Kind::Complete, TraceOp::Write, 100, 16));
        let r: Vec<_> = std::iter::from_fn(|| a.pop_ready(false)).collect();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].recorded_latency_ns, Some(100));
        assert_eq!(r[1].recorded_latency_ns, Some(90));
        assert_eq!(r[2].recorded_latency_ns, Some(5));
        assert_eq!(r[2].offset, 500 * 512);
    }

    #[test]
    fn window_and_capacity_release_unmatched_requests() {
        let mut a = Assembler::new(BlkEvent::Queue, 50, 2);
        a.push(ev(0, Kind::Queue, TraceOp::Read, 1, 1));
        a.push(ev(10, Kind::Queue, TraceOp::Read, 2, 1));
        assert!(a.pop_ready(false).is_none());
        a.push(ev(60, Kind::Queue, TraceOp::Read, 3, 1));
        let r = a.pop_ready(false).unwrap();
        assert_eq!((r.offset, r.recorded_latency_ns), (512, None));
        a.push(ev(61, Kind::Queue, TraceOp::Read, 4, 1));
        a.push(ev(62, Kind::Queue, TraceOp::Read, 5, 1));
        // Three pending > max 2: the oldest goes.
        assert_eq!(a.pop_ready(false).unwrap().offset, 1024);
        // A completion for a released request does nothing.
        a.push(ev(63, Kind::Complete, TraceOp::Read, 1, 1));
        let rest: Vec<_> = std::iter::from_fn(|| a.pop_ready(true)).collect();
        assert_eq!(rest.len(), 3);
        assert!(rest.iter().all(|r| r.recorded_latency_ns.is_none()));
    }

    #[test]
    fn requeue_withdraws_issued_request() {
        let mut a = Assembler::new(BlkEvent::Issue, 1000, 100);
        a.push(ev(0, Kind::Issue, TraceOp::Write, 8, 8));
        a.push(ev(5, Kind::Requeue, TraceOp::Write, 8, 8));
        a.push(ev(9, Kind::Issue, TraceOp::Write, 8, 8));
        a.push(ev(20, Kind::Complete, TraceOp::Write, 8, 8));
        let r: Vec<_> = std::iter::from_fn(|| a.pop_ready(true)).collect();
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].time_ns, r[0].recorded_latency_ns), (9, Some(11)));
    }

    #[test]
    fn flushes_match_by_device() {
        let mut a = Assembler::new(BlkEvent::Queue, 1000, 100);
        a.push(ev(0, Kind::Queue, TraceOp::Flush, 0, 0));
        a.push(ev(4, Kind::Complete, TraceOp::Flush, 0, 0));
        let r = a.pop_ready(false).unwrap();
        assert_eq!(
            (r.op, r.len, r.recorded_latency_ns),
            (TraceOp::Flush, 0, Some(4))
        );
    }
}
