//! [`ReorderWriter`]: records sorted within a window before they are
//! written.

use super::base::{Core, TraceWriter, WriteStats};
use crate::error::TraceError;
use crate::{Format, TraceRecord};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
