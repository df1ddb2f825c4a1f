//! A mechanical disk: zoned geometry, a seek curve, rotational position
//! from time, media transfer with head and cylinder switches, an on-disk
//! cache (read-ahead segments, optional write-back), and command queueing
//! (NCQ) with first-come or shortest-positioning-time-first scheduling.
//!
//! Geometry. `zones` zones of equal cylinder count, sectors per track
//! falling linearly from `sectors_per_track_outer` (zone 0, the outer edge,
//! LBA 0) to `sectors_per_track_inner`; the cylinder count is the smallest
//! that holds the capacity. LBAs fill a track, then the next surface of the
//! cylinder, then the next cylinder.
//!
//! Seek curve. `seek(d) = a + b*sqrt(d) + c*d` for a move of `d >= 1`
//! cylinders (DiskSim's and Ruemmler-Wilkes's shape: the square root, the
//! arm accelerating and braking, dominates short seeks; the linear term,
//! the arm coasting, long ones). The three coefficients are fitted exactly
//! to the datasheet's track-to-track (`d = 1`), full-stroke (`d =
//! cylinders - 1`) and average seek; the average is the curve's mean over
//! uniformly random start and end cylinders, whose distance has density
//! `2(C - d)/C^2`, so `E[d] = C/3` and `E[sqrt d] = (8/15) sqrt C`. Writes
//! add `write_settle_ns` to a seek. A switch to another surface of the same
//! cylinder costs `head_switch_ns`.
//!
//! Rotation. The platter turns at `rpm` from angle 0 at time 0, so the
//! angle is `t mod revolution`, deterministic. Track `k`'s sector 0 is
//! skewed by the switch times before it (head switches and track-to-track
//! seeks), so a transfer that runs onto the next track pays only the switch
//! and no extra revolution, as on real drives.
//!
//! Cache. After a read the drive keeps reading ahead into the segment while
//! the arm is idle, up to `read_ahead_bytes`: a read that follows finds its
//! data there (or waits only for it to stream in, without a new seek). The
//! last `cache_segments` segments are remembered. With `write_cache` on, a
//! write is acknowledged once in the buffer and written later (its destage
//! queued with the host's commands); a flush waits for every destage.
//! A write-through write (cache off, or FUA) takes its data over the link
//! when queued, or with `write_through_staging` off only when the drive
//! starts it: the transfer then stands between one write's end and the
//! next one's start, and a sequential stream of them waits about a
//! revolution per command for its start sector to come round again.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, Component};
use crate::config::{check_range, ConfigError};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::report::{DeviceReport, Utilisation};
use crate::units::{xfer_ns, Rw, Timeline};

/// How the drive orders its queued commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiskScheduler {
    /// In arrival order.
    Fifo,
    /// Shortest positioning time (seek plus rotational wait) first, with a
    /// starvation bound.
    Sptf,
}

/// `[disk]`: a mechanical disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskConfig {
    /// Spindle speed.
    pub rpm: u32,
    /// Recording surfaces (heads).
    pub surfaces: u32,
    /// Recording zones.
    pub zones: u32,
    /// Sectors per track in the outermost zone.
    pub sectors_per_track_outer: u32,
    /// Sectors per track in the innermost zone.
    pub sectors_per_track_inner: u32,
    /// Bytes per sector.
    pub sector_bytes: u64,
    /// Single-track seek.
    pub seek_track_to_track_ns: u64,
    /// Average seek (mean over random start and end).
    pub seek_average_ns: u64,
    /// Full-stroke seek.
    pub seek_full_stroke_ns: u64,
    /// Extra settling for a write after a seek.
    pub write_settle_ns: u64,
    /// Switch to another surface of the same cylinder.
    pub head_switch_ns: u64,
    /// Controller overhead per command.
    pub command_ns: Rw,
    /// Interface rate (SATA), shared by both directions.
    pub link_bytes_per_s: u64,
    /// Commands queued in the drive (NCQ depth).
    pub queue_depth: u32,
    /// Queue ordering.
    pub scheduler: DiskScheduler,
    /// A command older than this is served next regardless of position.
    pub starvation_ns: u64,
    /// Buffer size.
    pub cache_bytes: u64,
    /// Segments remembered for read hits.
    pub cache_segments: u32,
    /// Read-ahead after a read, per segment (0: off).
    pub read_ahead_bytes: u64,
    /// Acknowledge writes from the buffer (write-back).
    pub write_cache: bool,
    /// A write-through write (write cache off, or FUA) takes its data over
    /// the link when it is queued (`true`, the default: queued writes'
    /// data waits in the buffer, so a stream of them is written back to
    /// back), or only when the drive starts it on the media (`false`: the
    /// command's data moves after the arm is free for it, the write starts
    /// once it is in, and the previous command's completion and this
    /// transfer let the start sector pass the head: a sequential stream of
    /// uncached writes loses about a revolution per command). Boolean.
    #[serde(default = "yes")]
    pub write_through_staging: bool,
}

fn yes() -> bool {
    true
}

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

/// Zoned geometry and the fitted seek curve.
#[derive(Clone, Debug)]
pub struct Geometry {
    surfaces: u64,
    rev_ns: u64,
    /// Per zone: first LBA, first cylinder, sectors per track.
    zones: Vec<(u64, u64, u64)>,
    cyl_per_zone: u64,
    cylinders: u64,
    /// Seek coefficients (ns): a + b sqrt(d) + c d.
    seek: [f64; 3],
    head_switch_ns: u64,
    track_to_track_ns: u64,
}

/// Where an LBA lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    /// Cylinder.
    pub cyl: u64,
    /// Surface.
    pub head: u64,
    /// Sector within the track.
    pub sector: u64,
    /// Sectors on this track.
    pub spt: u64,
    /// Zone.
    pub zone: usize,
}

impl Geometry {
    /// Lay out `capacity` bytes and fit the seek curve.
    pub fn new(cfg: &DiskConfig, capacity: u64) -> Result<Self, ConfigError> {
        let z = cfg.zones as u64;
        let (outer, inner) = (
            cfg.sectors_per_track_outer as u64,
            cfg.sectors_per_track_inner as u64,
        );
        let spt: Vec<u64> = (0..z)
            .map(|i| {
                if z == 1 {
                    outer
                } else {
                    outer - (outer - inner) * i / (z - 1)
                }
            })
            .collect();
        let sectors = capacity.div_ceil(cfg.sector_bytes);
        let per_cyl_sum: u64 = spt.iter().sum::<u64>() * cfg.surfaces as u64;
        let cz = sectors.div_ceil(per_cyl_sum).max(1);
        let mut zones = Vec::with_capacity(z as usize);
        let mut lba = 0;
        for (i, &s) in spt.iter().enumerate() {
            zones.push((lba, i as u64 * cz, s));
            lba += cz * cfg.surfaces as u64 * s;
        }
        let cylinders = cz * z;
        let c = (cylinders - 1).max(1) as f64;
        let (t1, ta, tf) = (
            cfg.seek_track_to_track_ns as f64,
            cfg.seek_average_ns as f64,
            cfg.seek_full_stroke_ns as f64,
        );
        // a + b + c = t1; a + b sqrt(C) + c C = tf; a + b (8/15) sqrt(C) + c C/3 = ta
        let s = c.sqrt();
        let (r1, r2) = (tf - t1, ta - t1);
        let (m11, m12) = (s - 1.0, c - 1.0);
        let (m21, m22) = (8.0 / 15.0 * s - 1.0, c / 3.0 - 1.0);
        let det = m11 * m22 - m12 * m21;
        let b = (r1 * m22 - m12 * r2) / det;
        let cc = (m11 * r2 - m21 * r1) / det;
        let a = t1 - b - cc;
        if !(b >= 0.0 && cc >= 0.0 && a >= 0.0 && det.is_finite()) {
            return Err(ConfigError::Invalid {
                field: "disk.seek_*".into(),
                message: format!(
                    "no monotone curve a + b sqrt(d) + c d fits track-to-track {t1} ns, average {ta} ns, full stroke {tf} ns over {cylinders} cylinders (a={a:.0}, b={b:.1}, c={cc:.4})"
                ),
            });
        }
        Ok(Self {
            surfaces: cfg.surfaces as u64,
            rev_ns: (60_000_000_000u64).div_ceil(cfg.rpm as u64),
            zones,
            cyl_per_zone: cz,
            cylinders,
            seek: [a, b, cc],
            head_switch_ns: cfg.head_switch_ns,
            track_to_track_ns: cfg.seek_track_to_track_ns,
        })
    }

    /// Cylinders.
    pub fn cylinders(&self) -> u64 {
        self.cylinders
    }

    /// One revolution, ns.
    pub fn revolution_ns(&self) -> u64 {
        self.rev_ns
    }

    /// Sectors the geometry holds.
    pub fn sectors(&self) -> u64 {
        let &(l, _, s) = self.zones.last().expect("at least one zone");
        l + self.cyl_per_zone * self.surfaces * s
    }

    /// Seek time for a move of `d` cylinders.
    #[inline]
    pub fn seek_ns(&self, d: u64) -> u64 {
        if d == 0 {
            return 0;
        }
        let d = d as f64;
        (self.seek[0] + self.seek[1] * d.sqrt() + self.seek[2] * d).round() as u64
    }

    /// A lower bound of [`Self::seek_ns`] that needs no square root:
    /// `a + c d` (b, the square root's coefficient, is never negative).
    #[inline]
    pub fn seek_floor_ns(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        self.seek[0] + self.seek[2] * d as f64
    }

    /// The seek coefficients (a, b, c) in ns.
    pub fn seek_coefficients(&self) -> [f64; 3] {
        self.seek
    }

    /// Location of `lba`.
    #[inline]
    pub fn locate(&self, lba: u64) -> Loc {
        let zi = match self.zones.binary_search_by(|z| z.0.cmp(&lba)) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let (l0, c0, spt) = self.zones[zi];
        let rel = lba - l0;
        let track = rel / spt;
        Loc {
            cyl: c0 + track / self.surfaces,
            head: track % self.surfaces,
            sector: rel % spt,
            spt,
            zone: zi,
        }
    }

    /// Time within a revolution at which sector 0 of the track passes the
    /// head: the skew accumulated by the switches before it.
    #[inline]
    fn skew(&self, cyl: u64, head: u64) -> u64 {
        let hs = (cyl * (self.surfaces - 1) + head) as u128 * self.head_switch_ns as u128;
        let cs = cyl as u128 * self.track_to_track_ns as u128;
        ((hs + cs) % self.rev_ns as u128) as u64
    }

    #[inline]
    fn sector_time(&self, sector: u64, spt: u64) -> u64 {
        (sector as u128 * self.rev_ns as u128 / spt as u128) as u64
    }

    /// Time within a revolution at which the start of sector `loc` passes
    /// the head.
    #[inline]
    pub fn phase(&self, loc: &Loc) -> u64 {
        (self.skew(loc.cyl, loc.head) + self.sector_time(loc.sector, loc.spt)) % self.rev_ns
    }

    /// Rotational wait from time `t` until sector `loc` is under the head.
    #[inline]
    pub fn rotational_wait(&self, t: Nanos, loc: &Loc) -> u64 {
        let target =
            (self.skew(loc.cyl, loc.head) + self.sector_time(loc.sector, loc.spt)) % self.rev_ns;
        let phase = t % self.rev_ns;
        (target + self.rev_ns - phase) % self.rev_ns
    }

    /// Time to stream `n` sectors from `lba` once positioned, and where the
    /// head ends.
    pub fn stream(&self, lba: u64, n: u64) -> (u64, Loc) {
        let mut loc = self.locate(lba);
        let mut left = n;
        let mut t = 0;
        loop {
            let m = left.min(loc.spt - loc.sector);
            t += self.sector_time(loc.sector + m, loc.spt) - self.sector_time(loc.sector, loc.spt);
            left -= m;
            if left == 0 {
                return (t, loc);
            }
            let next = lba + n - left;
            let nl = self.locate(next);
            t += if nl.cyl == loc.cyl {
                self.head_switch_ns
            } else {
                self.track_to_track_ns
            };
            loc = nl;
        }
    }

    /// Sectors streamed from `lba` within `dt` ns (at most `max`).
    pub fn streamed(&self, lba: u64, dt: u64, max: u64) -> u64 {
        let mut loc = self.locate(lba);
        let mut got = 0;
        let mut left_t = dt;
        while got < max {
            let rest = loc.spt - loc.sector;
            let t_rest = self.sector_time(loc.spt, loc.spt) - self.sector_time(loc.sector, loc.spt);
            if left_t < t_rest {
                let base = self.sector_time(loc.sector, loc.spt);
                // sectors whose end passed by base + left_t
                let k = (((base + left_t) as u128 * loc.spt as u128 / self.rev_ns as u128) as u64)
                    .saturating_sub(loc.sector);
                return (got + k.min(rest)).min(max);
            }
            got += rest;
            left_t -= t_rest;
            let nl = self.locate(lba + got);
            let sw = if nl.cyl == loc.cyl {
                self.head_switch_ns
            } else {
                self.track_to_track_ns
            };
            if left_t < sw {
                return got.min(max);
            }
            left_t -= sw;
            loc = nl;
        }
        max
    }
}

const EV_MEDIA: u64 = 0;
const EV_WDATA: u64 = 1;
/// A tag freed (at a completion time that may lie ahead): admit a waiter.
const EV_ADMIT: u64 = 2;
const NOREQ: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct MOp {
    lba: u64,
    n: u64,
    write: bool,
    req: u32,
    arrival: Nanos,
    /// Where the first sector is, and when within a revolution it passes
    /// the head (computed once, at queueing).
    cyl: u64,
    head: u64,
    phase: u64,
}

/// The drive's queue of media operations in arrival order, with O(1)
/// removal from anywhere: a taken slot is left empty, and the holes are
/// squeezed out (order kept) once they outnumber the live entries. The
/// order matters (the schedulers break ties by position), and a write
/// cache's destages queue thousands, so `Vec::remove`'s shift of every
/// later entry was most of a random-write run's time. Hand-written: the
/// standard collections either shift (`Vec`, `VecDeque`) or do not keep
/// positions comparable (`swap_remove`, slabs).
#[derive(Clone, Debug, Default)]
struct MQueue {
    slots: Vec<Option<MOp>>,
    /// Slots before `head` are all empty.
    head: usize,
    live: usize,
}

impl MQueue {
    fn push(&mut self, op: MOp) {
        self.slots.push(Some(op));
        self.live += 1;
    }

    fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The live entries with their positions, in arrival order (positions
    /// grow with arrival, so ordering by them is ordering by arrival).
    fn iter(&self) -> impl Iterator<Item = (usize, &MOp)> {
        self.slots[self.head..]
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().map(|op| (self.head + i, op)))
    }

    fn get(&self, i: usize) -> &MOp {
        self.slots[i].as_ref().expect("a live entry")
    }

    /// Take the entry at position `i` (from `iter`); positions of the
    /// others stay valid until the next `take`.
    fn take(&mut self, i: usize) -> MOp {
        let op = self.slots[i].take().expect("a live entry");
        self.live -= 1;
        if self.live == 0 {
            self.slots.clear();
            self.head = 0;
        } else if self.slots.len() > 64 && self.slots.len() > 2 * self.live {
            self.slots.retain(Option::is_some);
            self.head = 0;
        } else {
            while self.slots[self.head].is_none() {
                self.head += 1;
            }
        }
        op
    }
}

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
    queue: MQueue,
    link: Timeline,
    reqs: Vec<Req>,
    free: Vec<u32>,
    tags: crate::units::Tags,
    ra: Option<ReadAhead>,
    segs: VecDeque<(u64, u64)>,
    dirty_bytes: u64,
    write_waiters: VecDeque<u32>,
    flush_waiters: VecDeque<u32>,
    stats: Stats,
}

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
            queue: MQueue::default(),
            link: Timeline::default(),
            reqs: Vec::new(),
            free: Vec::new(),
            tags: crate::units::Tags::new(cfg.queue_depth),
            ra: None,
            segs: VecDeque::new(),
            dirty_bytes: 0,
            write_waiters: VecDeque::new(),
            flush_waiters: VecDeque::new(),
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

    /// Positioning time from the current head position for `op` starting
    /// at `t`: (seek, rotational wait).
    #[inline]
    fn positioning(&self, t: Nanos, op: &MOp) -> (u64, u64) {
        let d = op.cyl.abs_diff(self.cyl);
        let seek = if d > 0 {
            self.geo.seek_ns(d)
                + if op.write {
                    self.cfg.write_settle_ns
                } else {
                    0
                }
        } else if op.head != self.head {
            self.cfg.head_switch_ns
        } else {
            0
        };
        let rev = self.geo.rev_ns;
        let rot = (op.phase + rev - (t + seek) % rev) % rev;
        (seek, rot)
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
            DiskScheduler::Fifo => self.queue.iter().next().expect("non-empty").0,
            DiskScheduler::Sptf => {
                let oldest = self
                    .queue
                    .iter()
                    .min_by_key(|&(i, op)| (op.arrival, i))
                    .expect("non-empty")
                    .0;
                if now.saturating_sub(self.queue.get(oldest).arrival) > self.cfg.starvation_ns {
                    oldest
                } else {
                    let mut best = (u64::MAX, 0);
                    for (i, op) in self.queue.iter() {
                        // skip, exactly, what cannot beat the best so far:
                        // the seek alone, rounded, is at least the rounded
                        // bound, and the rotation adds to it (a queue of a
                        // write cache's destages holds thousands)
                        let d = op.cyl.abs_diff(self.cyl);
                        if best.0 != u64::MAX && self.geo.seek_floor_ns(d) > best.0 as f64 + 0.5 {
                            continue;
                        }
                        let (s, r) = self.positioning(now, op);
                        if s + r < best.0 {
                            best = (s + r, i);
                        }
                    }
                    // the pruning changes nothing: the full scan agrees
                    debug_assert_eq!(
                        best.1,
                        self.queue
                            .iter()
                            .min_by_key(|&(i, op)| {
                                let (s, r) = self.positioning(now, op);
                                (s + r, i)
                            })
                            .expect("non-empty")
                            .0,
                        "pruned SPTF picked differently"
                    );
                    best.1
                }
            }
        };
        let op = self.queue.take(pick);
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
                let dur = xfer_ns(r.bytes, self.cfg.link_bytes_per_s);
                let s = self.link.reserve(now, dur);
                bd.add(Component::Link, s + dur - now);
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
                s + dur + self.cfg.command_ns.read
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
        let dur = xfer_ns(r.bytes, self.cfg.link_bytes_per_s);
        let s = self.link.reserve(now, dur);
        let rm = &mut self.reqs[ri as usize];
        let waited = (now - rm.arrival).saturating_sub(rm.bd.total());
        rm.bd.add(Component::DeviceQueue, waited);
        rm.bd.add(Component::Link, s + dur - now);
        cx.wake(s + dur, Self::tok(EV_WDATA, ri));
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
        let dur = xfer_ns(self.reqs[ri as usize].bytes, self.cfg.link_bytes_per_s);
        let s = self.link.reserve(now, dur);
        self.cur_data_ns = s + dur - now;
        self.cur_data_ns.saturating_sub(seek)
    }

    /// Serve a read from the buffer once its data is there at `ready`.
    fn hit(&mut self, now: Nanos, ready: Nanos, ri: u32, wait: Component, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        let dur = xfer_ns(r.bytes, self.cfg.link_bytes_per_s);
        let s = self.link.reserve(ready, dur);
        let rm = &mut self.reqs[ri as usize];
        rm.bd.add(wait, ready - now);
        rm.bd.add(Component::Link, s + dur - ready);
        rm.bd.add(Component::Controller, self.cfg.command_ns.read);
        self.finish(s + dur + self.cfg.command_ns.read, ri, cx);
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
                    busy: self.link.utilisation(now),
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

#[cfg(test)]
mod tests {
    use super::{MOp, MQueue};

    fn op(lba: u64) -> MOp {
        MOp {
            lba,
            n: 1,
            write: true,
            req: 0,
            arrival: lba,
            cyl: 0,
            head: 0,
            phase: 0,
        }
    }

    /// Taking from anywhere keeps the others in arrival order, across the
    /// squeezes that drop the holes, exactly as `Vec::remove` would.
    #[test]
    fn the_queue_keeps_arrival_order_through_takes() {
        let mut q = MQueue::default();
        let mut model: Vec<u64> = Vec::new();
        let mut next = 0u64;
        let mut x = 12345u64;
        for step in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // grow for 2,500 steps, then mostly drain (the squeezes happen there)
            let push = if step < 2500 {
                !(x >> 33).is_multiple_of(3)
            } else {
                (x >> 33).is_multiple_of(4)
            };
            if model.is_empty() || push || step < 300 {
                q.push(op(next));
                model.push(next);
                next += 1;
            } else {
                let k = (x >> 20) as usize % model.len();
                let (pos, o) = q.iter().nth(k).expect("as many entries as the model");
                assert_eq!(o.lba, model[k]);
                assert_eq!(q.take(pos).lba, model.remove(k));
            }
            let got: Vec<u64> = q.iter().map(|(_, o)| o.lba).collect();
            assert_eq!(got, model, "step {step}");
            assert_eq!(q.is_empty(), model.is_empty());
        }
        assert!(
            q.slots.len() <= 2 * q.live.max(64),
            "holes are squeezed out"
        );
    }
}
