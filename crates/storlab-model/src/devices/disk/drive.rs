//! The disk drive: its cache (read-ahead segments, write-back), command
//! queueing and scheduling, the media's work and the interface link, and
//! the drive as a [`Device`].

use std::collections::VecDeque;

use crate::breakdown::{Breakdown, Component};
use crate::config::{check_range, ConfigError};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::link::duplex::{Dir, Link};
use crate::report::{DeviceReport, Utilisation};
use crate::units::{Rw, Timeline};

use super::config::{DiskConfig, DiskScheduler};
use super::geometry::Geometry;
use super::queue::{MOp, Queue, Slot, NOREQ};
use super::sched::Arm;

/// Validate.
pub fn validate(cfg: &DiskConfig, capacity: u64) -> Result<(), ConfigError> {
    check_range("disk.rpm", cfg.rpm, 1, 100_000)?;
    check_range("disk.surfaces", cfg.surfaces, 1, 64)?;
    check_range("disk.zones", cfg.zones, 1, 1024)?;
    check_range(
        "disk.sectors_per_track_inner",
        cfg.sectors_per_track_inner,
        1,
        cfg.sectors_per_track_outer.max(1),
    )?;
    check_range("disk.sector_bytes", cfg.sector_bytes, 512, 65536)?;
    check_range("disk.link_bytes_per_s", cfg.link_bytes_per_s, 1, u64::MAX)?;
    check_range("disk.queue_depth", cfg.queue_depth, 1, 256)?;
    check_range("disk.cache_segments", cfg.cache_segments, 1, 1024)?;
    let bad = |m: String| ConfigError::Invalid {
        field: "disk.seek_*".into(),
        message: m,
    };
    if !(cfg.seek_track_to_track_ns <= cfg.seek_average_ns
        && cfg.seek_average_ns <= cfg.seek_full_stroke_ns)
    {
        return Err(bad("need track-to-track <= average <= full stroke".into()));
    }
    Geometry::new(cfg, capacity).map(|_| ())
}

const EV_MEDIA: u64 = 0;
const EV_WDATA: u64 = 1;
/// A tag freed (at a completion time that may lie ahead): admit a waiter.
const EV_ADMIT: u64 = 2;

#[derive(Clone, Copy, Debug, Default)]
struct Req {
    id: u64,
    op: Option<Op>,
    arrival: Nanos,
    lba: u64,
    n: u64,
    bytes: u64,
    fua: bool,
    bd: Breakdown,
}

/// A read-ahead in progress while the arm is idle.
#[derive(Clone, Copy, Debug)]
struct ReadAhead {
    seg_start: u64,
    next: u64,
    t0: Nanos,
    limit: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    media_reads: u64,
    media_writes: u64,
    seeks: u64,
    seek_cylinders: u64,
    cache_hits: u64,
    read_ahead_hits: u64,
    destages: u64,
    positioning_ns: u64,
}

/// A mechanical disk drive.
pub struct Disk {
    cfg: DiskConfig,
    geo: Geometry,
    capacity: u64,
    sector: u64,
    cyl: u64,
    head: u64,
    media_busy: bool,
    media: Timeline,
    cur: Option<MOp>,
    cur_start: Nanos,
    /// The running unstaged write's data transfer (link wait included).
    cur_data_ns: u64,
    queue: Queue,
    /// The interface (SATA or SAS: half duplex, no fixed cost).
    link: Link,
    reqs: Vec<Req>,
    free: Vec<u32>,
    tags: crate::units::Tags,
    ra: Option<ReadAhead>,
    segs: VecDeque<(u64, u64)>,
    dirty_bytes: u64,
    write_waiters: VecDeque<u32>,
    flush_waiters: VecDeque<u32>,
    /// Destages started in a row while a host command waited.
    destages_over_host: u32,
    stats: Stats,
}

/// Destages a waiting host command lets pass before it is served next.
/// A write cache's destage is background work the host does not wait on,
/// so it ranks below the host's commands, with a bound so the cache still
/// drains under a stream of host commands: the rule Linux's deadline
/// scheduler applies to reads over writes, reads pass waiting writes at
/// most `writes_starved` (default 2) times (Documentation/block/
/// deadline-iosched.rst). ESTIMATE: that default.
const DESTAGES_BEFORE_HOST: u32 = 2;

impl Disk {
    /// Build from a validated configuration.
    pub fn new(cfg: DiskConfig, capacity: u64) -> Result<Self, ConfigError> {
        validate(&cfg, capacity)?;
        let geo = Geometry::new(&cfg, capacity)?;
        Ok(Self {
            sector: cfg.sector_bytes,
            geo,
            capacity,
            cyl: 0,
            head: 0,
            media_busy: false,
            media: Timeline::default(),
            cur: None,
            cur_start: 0,
            cur_data_ns: 0,
            queue: Queue::new(cfg.scheduler == DiskScheduler::Fifo),
            link: Link::new(
                Rw {
                    read: cfg.link_bytes_per_s,
                    write: cfg.link_bytes_per_s,
                },
                Rw::default(),
                false,
            ),
            reqs: Vec::new(),
            free: Vec::new(),
            tags: crate::units::Tags::new(cfg.queue_depth),
            ra: None,
            segs: VecDeque::new(),
            dirty_bytes: 0,
            write_waiters: VecDeque::new(),
            flush_waiters: VecDeque::new(),
            destages_over_host: 0,
            stats: Stats::default(),
            cfg,
        })
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    #[inline]
    fn tok(kind: u64, idx: u32) -> u64 {
        ((idx as u64) << 2) | kind
    }

    fn ra_sectors(&self) -> u64 {
        self.cfg.read_ahead_bytes / self.sector
    }

    fn seg_sectors(&self) -> u64 {
        (self.cfg.cache_bytes / self.cfg.cache_segments as u64 / self.sector).max(1)
    }

    fn remember(&mut self, start: u64, end: u64) {
        let start = start.max(end.saturating_sub(self.seg_sectors()));
        if end <= start {
            return;
        }
        // a stream extends its own segment; otherwise a new one
        let seg = self.seg_sectors();
        if let Some(last) = self.segs.back_mut() {
            if last.0 <= start && start <= last.1 {
                last.1 = last.1.max(end);
                last.0 = last.0.max(last.1.saturating_sub(seg));
                return;
            }
        }
        self.segs.push_back((start, end));
        while self.segs.len() > self.cfg.cache_segments as usize {
            self.segs.pop_front();
        }
    }

    fn cached(&self, lba: u64, n: u64) -> bool {
        self.segs.iter().any(|&(s, e)| lba >= s && lba + n <= e)
    }

    /// The arm where it is.
    fn arm(&self) -> Arm<'_> {
        Arm {
            geo: &self.geo,
            cyl: self.cyl,
            head: self.head,
            write_settle_ns: self.cfg.write_settle_ns,
            head_switch_ns: self.cfg.head_switch_ns,
        }
    }

    /// Positioning time from the current head position for `op` starting
    /// at `t`: (seek, rotational wait).
    #[inline]
    fn positioning(&self, t: Nanos, op: &MOp) -> (u64, u64) {
        self.arm().positioning(t, op)
    }

    /// A media operation for `n` sectors at `lba`.
    fn mop(&self, lba: u64, n: u64, write: bool, req: u32, arrival: Nanos) -> MOp {
        let loc = self.geo.locate(lba);
        MOp {
            lba,
            n,
            write,
            req,
            arrival,
            cyl: loc.cyl,
            head: loc.head,
            phase: self.geo.phase(&loc),
            seq: 0,
        }
    }

    /// The read-ahead stops when the arm moves: what it read becomes a
    /// segment, and the head is where it stopped.
    fn stop_read_ahead(&mut self, now: Nanos) {
        if let Some(ra) = self.ra.take() {
            let got = self
                .geo
                .streamed(ra.next, now.saturating_sub(ra.t0), ra.limit - ra.next);
            self.remember(ra.seg_start, ra.next + got);
            if got > 0 {
                let l = self.geo.locate(ra.next + got - 1);
                self.cyl = l.cyl;
                self.head = l.head;
            }
        }
    }

    /// Start the next media operation if the arm is idle.
    fn kick(&mut self, now: Nanos, cx: &mut Cx) {
        if self.media_busy || self.queue.is_empty() {
            return;
        }
        self.stop_read_ahead(now);
        let pick = match self.cfg.scheduler {
            DiskScheduler::Fifo => self.queue.first().expect("non-empty"),
            DiskScheduler::Sptf => {
                // the starvation bound is the firmware's ageing of the
                // host's queued commands: the oldest host command past it
                // goes next. A write cache's destage has no command
                // waiting on it, so its age never forces it: destages go
                // in positioning order (SPTF over the dirty cache, as a
                // drive's write cache reorders writes it has already
                // reported: Ruemmler and Wilkes, "An introduction to disk
                // drive modeling", IEEE Computer 1994, on immediate
                // reporting; Worthington, Ganger and Patt, SIGMETRICS
                // 1994, on positioning-time scheduling), and a writer
                // waiting for cache space waits on whichever destage ends
                // first, not on the oldest. (Issue 58: with the bound on
                // destages too, a cache full of writes each older than it
                // went oldest-first, in the host's random order, while a
                // mix's waiting reads switched that off: pure random
                // writes destaged at a third of the rate they did inside
                // a 50/50 mix.) A waiting host command also goes next
                // once it has let DESTAGES_BEFORE_HOST destages pass (the
                // nearest host command: SPTF among the host's commands).
                // `sched` finds the nearest destage through a cylinder
                // index, without ranking the whole cache.
                let oldest_host = self
                    .queue
                    .host
                    .iter()
                    .min_by_key(|&(i, op)| (op.arrival, i))
                    .map(|(i, op)| (i, op.arrival));
                let host_only =
                    oldest_host.is_some() && self.destages_over_host >= DESTAGES_BEFORE_HOST;
                match oldest_host {
                    Some((h, at)) if now.saturating_sub(at) > self.cfg.starvation_ns => {
                        Slot::Host(h)
                    }
                    _ => self
                        .arm()
                        .pick(&self.queue, now, host_only)
                        .expect("non-empty"),
                }
            }
        };
        let host_waits = self.queue.host_waits();
        let op = self.queue.take(pick);
        if op.req != NOREQ {
            self.destages_over_host = 0;
        } else if host_waits {
            self.destages_over_host += 1;
        }
        let (seek, mut rot) = self.positioning(now, &op);
        self.cur_data_ns = 0;
        if op.write && op.req != NOREQ && !self.cfg.write_through_staging {
            // an unstaged write-through write: its data crosses the link now
            // (while the arm seeks), the write starts once it is all in
            let stall = self.fetch_write_data(now, op.req, seek);
            let rev = self.geo.rev_ns;
            rot = stall + (op.phase + rev - (now + seek + stall) % rev) % rev;
        }
        if op.cyl != self.cyl {
            self.stats.seeks += 1;
            self.stats.seek_cylinders += op.cyl.abs_diff(self.cyl);
        }
        let (xfer, end_loc) = self.geo.stream(op.lba, op.n);
        let end = now + seek + rot + xfer;
        self.stats.positioning_ns += seek + rot;
        self.media.reserve(now, end - now);
        self.media_busy = true;
        self.cyl = end_loc.cyl;
        self.head = end_loc.head;
        self.cur = Some(op);
        self.cur_start = now;
        if op.write {
            self.stats.media_writes += 1;
        } else {
            self.stats.media_reads += 1;
        }
        cx.wake(end, Self::tok(EV_MEDIA, 0));
    }

    fn media_done(&mut self, now: Nanos, cx: &mut Cx) {
        self.media_busy = false;
        let op = self.cur.take().expect("an operation was running");
        if op.req == NOREQ {
            // a destage finished
            self.stats.destages += 1;
            self.dirty_bytes -= op.n * self.sector;
            self.admit_writes(now, cx);
            if self.dirty_bytes == 0 {
                while let Some(ri) = self.flush_waiters.pop_front() {
                    let at = now + self.cfg.command_ns.write;
                    let r = &mut self.reqs[ri as usize];
                    // the wait for the destage: what came before it (a
                    // wait for a tag) is already in the breakdown
                    let w = (now - r.arrival).saturating_sub(r.bd.total());
                    r.bd.add(Component::Media, w);
                    r.bd.add(Component::Controller, self.cfg.command_ns.write);
                    self.finish(at, ri, cx);
                }
            }
        } else {
            let ri = op.req;
            let r = self.reqs[ri as usize];
            let mut bd = r.bd;
            bd.add(Component::DeviceQueue, self.cur_start - op.arrival);
            bd.add(Component::Media, now - self.cur_start - self.cur_data_ns);
            let at = if op.write {
                // an unstaged write's data transfer (zero otherwise)
                bd.add(Component::Link, self.cur_data_ns);
                bd.add(Component::Controller, self.cfg.command_ns.write);
                now + self.cfg.command_ns.write
            } else {
                let (_, end) = self.link.move_to_host(now, r.bytes);
                bd.add(Component::Link, end - now);
                bd.add(Component::Controller, self.cfg.command_ns.read);
                // the drive reads ahead from here while the arm is idle
                self.remember(op.lba, op.lba + op.n);
                if self.ra_sectors() > 0 {
                    let next = op.lba + op.n;
                    let limit = (next + self.ra_sectors()).min(self.geo.sectors());
                    if limit > next {
                        self.ra = Some(ReadAhead {
                            seg_start: op.lba,
                            next,
                            t0: now,
                            limit,
                        });
                    }
                }
                end + self.cfg.command_ns.read
            };
            self.reqs[ri as usize].bd = bd;
            self.finish(at, ri, cx);
        }
        self.kick(now, cx);
    }

    fn finish(&mut self, at: Nanos, ri: u32, cx: &mut Cx) {
        let r = &mut self.reqs[ri as usize];
        cx.done_since(r.id, r.arrival, at, r.bd);
        r.op = None;
        self.free.push(ri);
        if let Some(next) = self.tags.release() {
            let t = at.max(self.reqs[next as usize].arrival);
            cx.wake(t, Self::tok(EV_ADMIT, next));
        }
    }

    /// Writes waiting for buffer space.
    fn admit_writes(&mut self, now: Nanos, cx: &mut Cx) {
        while let Some(&ri) = self.write_waiters.front() {
            let b = self.reqs[ri as usize].n * self.sector;
            if self.dirty_bytes != 0 && self.dirty_bytes + b > self.cfg.cache_bytes {
                break;
            }
            self.write_waiters.pop_front();
            self.dirty_bytes += b;
            self.write_in(now, ri, cx);
        }
    }

    /// Write data crosses the link; `EV_WDATA` when it is in the buffer.
    fn write_in(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        let (_, end) = self.link.move_to_device(now, r.bytes);
        let rm = &mut self.reqs[ri as usize];
        let waited = (now - rm.arrival).saturating_sub(rm.bd.total());
        rm.bd.add(Component::DeviceQueue, waited);
        rm.bd.add(Component::Link, end - now);
        cx.wake(end, Self::tok(EV_WDATA, ri));
    }

    fn admit(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        self.reqs[ri as usize]
            .bd
            .add(Component::DeviceQueue, now - r.arrival);
        match r.op.expect("live request") {
            Op::Read => {
                if r.n == 0 {
                    self.finish(now + self.cfg.command_ns.read, ri, cx);
                    return;
                }
                // served by the read-ahead in progress?
                if let Some(ra) = self.ra {
                    if r.lba >= ra.seg_start && r.lba + r.n <= ra.limit && !self.media_busy {
                        let have =
                            ra.next + self.geo.streamed(ra.next, now - ra.t0, ra.limit - ra.next);
                        let ready = if r.lba + r.n <= have {
                            now
                        } else {
                            ra.t0 + self.geo.stream(ra.next, r.lba + r.n - ra.next).0
                        };
                        self.stats.read_ahead_hits += 1;
                        // a sequential stream keeps the read-ahead going
                        let limit = (r.lba + r.n + self.ra_sectors())
                            .min(self.geo.sectors())
                            .max(ra.limit);
                        self.ra = Some(ReadAhead { limit, ..ra });
                        self.hit(now, ready, ri, Component::Media, cx);
                        return;
                    }
                }
                if self.cached(r.lba, r.n) {
                    self.stats.cache_hits += 1;
                    self.hit(now, now, ri, Component::Cache, cx);
                    return;
                }
                let op = self.mop(r.lba, r.n, false, ri, now);
                self.queue.push(op);
                self.kick(now, cx);
            }
            Op::Write => {
                if r.n == 0 {
                    self.finish(now + self.cfg.command_ns.write, ri, cx);
                    return;
                }
                let b = r.n * self.sector;
                if (!self.cfg.write_cache || r.fua) && !self.cfg.write_through_staging {
                    // the data moves when the drive starts the write (`kick`)
                    self.remember(r.lba, r.lba + r.n);
                    if self
                        .ra
                        .is_some_and(|ra| r.lba < ra.limit && r.lba + r.n > ra.seg_start)
                    {
                        self.stop_read_ahead(now);
                    }
                    let op = self.mop(r.lba, r.n, true, ri, now);
                    self.queue.push(op);
                    self.kick(now, cx);
                } else if !self.cfg.write_cache
                    || r.fua
                    || self.dirty_bytes == 0
                    || self.dirty_bytes + b <= self.cfg.cache_bytes
                {
                    if self.cfg.write_cache && !r.fua {
                        self.dirty_bytes += b;
                    }
                    self.write_in(now, ri, cx);
                } else {
                    self.write_waiters.push_back(ri);
                }
            }
            Op::Trim => self.finish(now + self.cfg.command_ns.write, ri, cx),
            Op::Flush => {
                if self.dirty_bytes == 0 {
                    self.reqs[ri as usize]
                        .bd
                        .add(Component::Controller, self.cfg.command_ns.write);
                    self.finish(now + self.cfg.command_ns.write, ri, cx);
                } else {
                    self.flush_waiters.push_back(ri);
                }
            }
        }
    }

    /// An unstaged write-through write starts on the media at `now`: its
    /// data crosses the link from `now` (the arm seeking `seek` meanwhile).
    /// Returns how long the data holds the write back beyond the seek, and
    /// records the transfer (link wait and time) for the breakdown.
    fn fetch_write_data(&mut self, now: Nanos, ri: u32, seek: u64) -> u64 {
        let (_, end) = self.link.move_to_device(now, self.reqs[ri as usize].bytes);
        self.cur_data_ns = end - now;
        self.cur_data_ns.saturating_sub(seek)
    }

    /// Serve a read from the buffer once its data is there at `ready`.
    fn hit(&mut self, now: Nanos, ready: Nanos, ri: u32, wait: Component, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        let (_, end) = self.link.move_to_host(ready, r.bytes);
        let rm = &mut self.reqs[ri as usize];
        rm.bd.add(wait, ready - now);
        rm.bd.add(Component::Link, end - ready);
        rm.bd.add(Component::Controller, self.cfg.command_ns.read);
        self.finish(end + self.cfg.command_ns.read, ri, cx);
    }

    fn write_data_in(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        // the written range is in the buffer: later reads hit it
        self.remember(r.lba, r.lba + r.n);
        if self
            .ra
            .is_some_and(|ra| r.lba < ra.limit && r.lba + r.n > ra.seg_start)
        {
            self.stop_read_ahead(now);
        }
        if self.cfg.write_cache && !r.fua {
            let op = self.mop(r.lba, r.n, true, NOREQ, now);
            self.queue.push(op);
            self.reqs[ri as usize]
                .bd
                .add(Component::Controller, self.cfg.command_ns.write);
            self.finish(now + self.cfg.command_ns.write, ri, cx);
        } else {
            let op = self.mop(r.lba, r.n, true, ri, now);
            self.queue.push(op);
        }
        self.kick(now, cx);
    }
}

impl Device for Disk {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let total = self.capacity / self.sector;
        let lba = (req.offset / self.sector).min(total);
        let end = (req.offset + req.len).div_ceil(self.sector).min(total);
        let r = Req {
            id: req.id,
            op: Some(req.op),
            arrival: now,
            lba,
            n: end.saturating_sub(lba),
            bytes: req.len,
            fua: req.fua,
            bd: Breakdown::default(),
        };
        let ri = if let Some(i) = self.free.pop() {
            self.reqs[i as usize] = r;
            i
        } else {
            self.reqs.push(r);
            (self.reqs.len() - 1) as u32
        };
        if self.tags.arrive(ri) {
            self.admit(now, ri, cx);
        }
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let idx = (token >> 2) as u32;
        match token & 3 {
            EV_MEDIA => self.media_done(now, cx),
            EV_WDATA => self.write_data_in(now, idx, cx),
            EV_ADMIT => {
                self.tags.admitted();
                self.admit(now, idx, cx)
            }
            _ => {}
        }
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn volatile_write_cache(&self) -> bool {
        self.cfg.write_cache
    }

    /// A destage (a media write of no request: the write cache's) queued
    /// or running covers a sector of the range.
    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        if !self.cfg.write_cache || self.dirty_bytes == 0 {
            return false;
        }
        let lba = offset / self.sector;
        let end = (offset + len.max(1)).div_ceil(self.sector);
        self.cur
            .iter()
            .chain(self.queue.iter().map(|(_, op)| op))
            .any(|op| op.req == NOREQ && op.lba < end && lba < op.lba + op.n)
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        let s = &self.stats;
        let ops = (s.media_reads + s.media_writes).max(1) as f64;
        DeviceReport {
            utilisation: vec![
                Utilisation {
                    resource: "media".into(),
                    busy: self.media.utilisation(now),
                },
                Utilisation {
                    resource: "link".into(),
                    busy: self.link.utilisation(Dir::ToHost, now),
                },
            ],
            power: Vec::new(),
            wear: None,
            counters: vec![
                ("media_reads".into(), s.media_reads as f64),
                ("media_writes".into(), s.media_writes as f64),
                ("seeks".into(), s.seeks as f64),
                (
                    "mean_seek_cylinders".into(),
                    s.seek_cylinders as f64 / s.seeks.max(1) as f64,
                ),
                (
                    "mean_positioning_ms".into(),
                    s.positioning_ns as f64 / ops / 1e6,
                ),
                ("cache_hits".into(), s.cache_hits as f64),
                ("read_ahead_hits".into(), s.read_ahead_hits as f64),
                ("destages".into(), s.destages as f64),
                ("cylinders".into(), self.geo.cylinders as f64),
            ],
        }
    }
}
