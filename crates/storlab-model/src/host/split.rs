//! A request-size limit: a layer that cuts every read or write longer than
//! a limit into pieces of at most that size, submits them all to the device
//! behind it at once, and completes the request when its last piece
//! completes (its breakdown is that piece's: every piece starts when the
//! request arrives, so the last one accounts for the whole latency).
//!
//! This is what Linux's block layer does with a request queue's
//! `max_sectors_kb`: a bio larger than the queue's limit becomes several
//! requests, dispatched to the driver one after the other as tags allow
//! (2.6.2x's default for SCSI and libata disks is `BLK_DEF_MAX_SECTORS` =
//! 1,024 sectors, 512 KB, in include/linux/blkdev.h; a driver may set a
//! smaller hardware limit, as 3w-9xxx's `TW_MAX_SECTORS` = 256 sectors).
//! Used by the host in front of its device (`host.max_request_bytes`) and
//! by RAID-0 in front of each member (`raid.member_max_request_bytes`).
//! Trims and flushes pass whole.
//!
//! Requests that need no cut pass through untouched (their ids and
//! completions are the device's own); a cut request's pieces carry the
//! top bit of the id and the slot of their parent. The layer has no events
//! of its own: the device's tokens pass through unchanged. No allocation
//! per request once the slots have grown to the peak number of cut
//! requests in flight.

use crate::breakdown::Breakdown;
use crate::device::{Completion, Cx, DevRequest, Device, Nanos, Op};
use crate::report::DeviceReport;

/// Marks a piece's id (the rest is its parent's slot).
const PIECE_BIT: u64 = 1 << 63;

#[derive(Clone, Copy, Debug, Default)]
struct Parent {
    id: u64,
    pending: u32,
    at: Nanos,
    bd: Breakdown,
    /// The first failed piece's status (a request fails if a piece does).
    status: u16,
}

/// How many pieces of at most `max` bytes a request of `len` bytes takes,
/// and the size of each but the last (`max` 0: no limit, one piece).
#[inline]
pub fn pieces(len: u64, max: u64) -> (u64, u64) {
    if max == 0 || len <= max {
        (1, len)
    } else {
        (len.div_ceil(max), max)
    }
}

/// A device behind a request-size limit.
pub struct SplitRequests {
    inner: Box<dyn Device>,
    max: u64,
    parents: Vec<Parent>,
    free: Vec<u32>,
    /// Cut requests with pieces still out: while none is, the device's
    /// completions are the callers' own and are not looked at.
    live: u32,
}

impl SplitRequests {
    /// `inner` receives requests of at most `max_bytes` (> 0).
    pub fn new(inner: Box<dyn Device>, max_bytes: u64) -> Self {
        assert!(max_bytes > 0, "a request limit needs a size");
        Self {
            inner,
            max: max_bytes,
            parents: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }

    /// `device` behind a limit of `max_bytes`, or `device` itself when
    /// `max_bytes` is 0 (no limit: no layer, no cost).
    pub fn wrap(device: Box<dyn Device>, max_bytes: u64) -> Box<dyn Device> {
        if max_bytes == 0 {
            device
        } else {
            Box::new(Self::new(device, max_bytes))
        }
    }

    /// The device behind the limit.
    pub fn inner(&self) -> &dyn Device {
        self.inner.as_ref()
    }

    /// Turn the completions the device reported from index `from` on into
    /// the callers': a piece counts towards its parent, which is reported
    /// (in the place of its last piece) when no piece is left.
    fn absorb(&mut self, cx: &mut Cx, from: usize) {
        let n = cx.completions.len();
        let mut w = from;
        for r in from..n {
            let c = &cx.completions[r];
            if c.id & PIECE_BIT == 0 {
                if w != r {
                    cx.completions.swap(w, r);
                }
                w += 1;
                continue;
            }
            let pi = (c.id & !PIECE_BIT) as usize;
            let p = &mut self.parents[pi];
            if c.at >= p.at {
                p.at = c.at;
                p.bd = c.breakdown;
            }
            if p.status == 0 {
                p.status = c.status;
            }
            p.pending -= 1;
            if p.pending == 0 {
                cx.completions[w] = Completion {
                    id: p.id,
                    at: p.at,
                    breakdown: p.bd,
                    status: p.status,
                };
                w += 1;
                self.free.push(pi as u32);
                self.live -= 1;
            }
        }
        cx.completions.truncate(w);
    }
}

impl Device for SplitRequests {
    fn zone_report(&self) -> Option<Vec<crate::device::ZoneReport>> {
        self.inner.zone_report()
    }

    fn zone_bytes(&self) -> Option<u64> {
        self.inner.zone_bytes()
    }

    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        debug_assert!(
            req.id & PIECE_BIT == 0,
            "request ids must leave the top bit clear"
        );
        let (k, step) = pieces(req.len, self.max);
        let from = cx.completions.len();
        if k == 1 || !matches!(req.op, Op::Read | Op::Write) {
            self.inner.submit(now, req, cx);
        } else {
            let p = Parent {
                id: req.id,
                pending: k as u32,
                at: now,
                bd: Breakdown::default(),
                status: 0,
            };
            let pi = crate::units::slab_insert(&mut self.parents, &mut self.free, p);
            self.live += 1;
            for j in 0..k {
                let piece = DevRequest {
                    id: PIECE_BIT | pi as u64,
                    offset: req.offset + j * step,
                    len: step.min(req.len - j * step),
                    ..req
                };
                self.inner.submit(now, piece, cx);
            }
        }
        if self.live > 0 {
            self.absorb(cx, from);
        }
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let from = cx.completions.len();
        self.inner.on_event(now, token, cx);
        if self.live > 0 {
            self.absorb(cx, from);
        }
    }

    fn capacity(&self) -> u64 {
        self.inner.capacity()
    }

    fn volatile_write_cache(&self) -> bool {
        self.inner.volatile_write_cache()
    }

    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        self.inner.volatile_holds(offset, len)
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        self.inner.report(now)
    }

    fn debug_state(&self) -> String {
        self.inner.debug_state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A device that records what it was given and completes each request
    /// 10 ns per KiB after it arrives.
    struct Log(Arc<Mutex<Vec<(u64, u64)>>>);

    impl Device for Log {
        fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
            self.0.lock().unwrap().push((req.offset, req.len));
            cx.done(req.id, now + req.len / 1024 * 10, Breakdown::default());
        }
        fn on_event(&mut self, _: Nanos, _: u64, _: &mut Cx) {}
        fn capacity(&self) -> u64 {
            1 << 40
        }
        fn report(&self, _: Nanos) -> DeviceReport {
            DeviceReport::default()
        }
    }

    #[test]
    fn pieces_cover_the_request() {
        assert_eq!(pieces(1 << 20, 0), (1, 1 << 20));
        assert_eq!(pieces(512 << 10, 512 << 10), (1, 512 << 10));
        assert_eq!(pieces(1 << 20, 512 << 10), (2, 512 << 10));
        assert_eq!(pieces((1 << 20) + 4096, 512 << 10), (3, 512 << 10));
    }

    #[test]
    fn a_long_request_reaches_the_device_in_pieces_and_completes_with_the_last() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let mut d = SplitRequests::new(Box::new(Log(got.clone())), 512 << 10);
        let mut cx = Cx::default();
        // 1 MB + 4 KB: three contiguous pieces, the last 4 KB
        d.submit(
            100,
            DevRequest::new(7, Op::Write, 1 << 30, (1 << 20) + 4096),
            &mut cx,
        );
        // a short one passes whole, with its own id
        d.submit(200, DevRequest::new(8, Op::Read, 0, 4096), &mut cx);
        // a flush is never cut
        d.submit(300, DevRequest::new(9, Op::Flush, 0, 0), &mut cx);
        let done: Vec<(u64, Nanos)> = cx.completions.iter().map(|c| (c.id, c.at)).collect();
        // the cut write completes when its slowest piece does (512 KB)
        assert_eq!(done, vec![(7, 100 + 512 * 10), (8, 200 + 40), (9, 300)]);
        let got = got.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![
                (1 << 30, 512 << 10),
                ((1 << 30) + (512 << 10), 512 << 10),
                ((1 << 30) + (1 << 20), 4096),
                (0, 4096),
                (0, 0),
            ]
        );
        // the slot is reused: a second cut request allocates nothing new
        d.submit(400, DevRequest::new(10, Op::Read, 0, 1 << 20), &mut cx);
        assert_eq!(d.parents.len(), 1);
        assert_eq!(
            cx.completions.last().map(|c| (c.id, c.at)),
            Some((10, 400 + 5120))
        );
    }

    #[test]
    fn no_limit_is_no_layer() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let d = SplitRequests::wrap(Box::new(Log(got)), 0);
        // the device itself comes back: no layer to cross
        assert_eq!(d.capacity(), 1 << 40);
        let mut d = d;
        let mut cx = Cx::default();
        d.submit(
            0,
            DevRequest::new(PIECE_BIT >> 1, Op::Write, 0, 1 << 30),
            &mut cx,
        );
        assert_eq!(cx.completions[0].id, PIECE_BIT >> 1);
    }
}
