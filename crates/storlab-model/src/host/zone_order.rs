//! A zoned device's writes reach it in the order they were submitted,
//! zone by zone, as Linux's block layer keeps them for a zoned device
//! (mq-deadline's zone write locking before Linux 6.10, the block layer's
//! zone write plugging, block/blk-zoned.c, since): a write whose turn has
//! not come waits at the device's door for the writes submitted before it
//! to its zone, which may be slower through the stack (another thread's,
//! waiting for a core). So writes that fio sent to one zone's write
//! pointer in turn are not turned into Zone Invalid Writes by the stack.
//! The host ([`super::stack::Host`]) charges the wait as the request's
//! `scheduler_wait`.

use std::collections::{HashMap, VecDeque};

use crate::device::{DevRequest, Nanos};

/// Each zone's writes in submission order, and those held for their turn.
pub(super) struct ZoneOrder {
    zone_bytes: u64,
    /// Submitted writes not yet at the device, in submission order.
    queues: HashMap<u64, VecDeque<u32>>,
    /// Writes whose turn has not come: the request and when it came.
    held: HashMap<u32, (DevRequest, Nanos)>,
}

impl ZoneOrder {
    /// For a device of zones of `zone_bytes`.
    pub(super) fn new(zone_bytes: u64) -> Self {
        ZoneOrder {
            zone_bytes: zone_bytes.max(1),
            queues: HashMap::new(),
            held: HashMap::new(),
        }
    }

    /// Write `i` to `offset` was submitted.
    pub(super) fn submitted(&mut self, i: u32, offset: u64) {
        self.queues
            .entry(offset / self.zone_bytes)
            .or_default()
            .push_back(i);
    }

    /// Write `i` (`req`) is ready for the device at `now`: `send` the
    /// writes to send now, in order, each with the time it became ready
    /// (`i` first, then those held for it); nothing, and `i` held, when an
    /// earlier write to its zone is still on its way.
    pub(super) fn ready(
        &mut self,
        now: Nanos,
        i: u32,
        req: DevRequest,
        mut send: impl FnMut(u32, DevRequest, Nanos),
    ) {
        let zone = req.offset / self.zone_bytes;
        let q = self.queues.get_mut(&zone).expect("queued when submitted");
        if q.front() != Some(&i) {
            self.held.insert(i, (req, now));
            return;
        }
        q.pop_front();
        send(i, req, now);
        while let Some(&f) = q.front() {
            let Some((r, since)) = self.held.remove(&f) else {
                // the next one is still on its way through the stack
                return;
            };
            q.pop_front();
            send(f, r, since);
        }
        self.queues.remove(&zone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Op;

    fn w(offset: u64) -> DevRequest {
        DevRequest {
            id: 0,
            op: Op::Write,
            offset,
            len: 4096,
            fua: false,
            placement: None,
        }
    }

    #[test]
    fn a_write_that_overtakes_an_earlier_one_to_its_zone_waits_for_it() {
        let mut zo = ZoneOrder::new(1 << 20);
        let mut out = Vec::new();
        // writes 1 and 2 to zone 0, 3 to zone 1, submitted in that order
        zo.submitted(1, 0);
        zo.submitted(2, 4096);
        zo.submitted(3, 1 << 20);
        // 2 comes first: held; 3, alone in its zone, goes at once
        zo.ready(10, 2, w(4096), |n, _, t| out.push((n, t)));
        assert!(out.is_empty());
        zo.ready(11, 3, w(1 << 20), |n, _, t| out.push((n, t)));
        assert_eq!(out, [(3, 11)]);
        out.clear();
        // 1 comes: it goes, and 2 after it, ready since 10
        zo.ready(15, 1, w(0), |n, _, t| out.push((n, t)));
        assert_eq!(out, [(1, 15), (2, 10)]);
        assert!(zo.queues.is_empty() && zo.held.is_empty());
    }
}
