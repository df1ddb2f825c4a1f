//! A storage controller with a DRAM cache in front of a device: the host
//! link and firmware of a hardware RAID controller (the 3ware 9650SE), its
//! read cache and its write-back buffer.
//!
//! Reads: if every line of the request is cached the controller answers
//! from DRAM; otherwise the whole request goes to the device below and its
//! lines are kept (clean, least recently used evicted first). Writes, with
//! write-back on: acknowledged once the data is in DRAM, provided there is
//! room (clean lines are evicted for it; dirty lines never are, so a full
//! buffer makes writes wait for destaging). Destaging writes dirty lines
//! back in ascending address order from where it last stopped (an
//! elevator), coalescing neighbours into writes of up to
//! `destage_max_bytes`, with at most `destage_depth` outstanding; it runs
//! while dirty data exceeds `destage_threshold` of the cache, while a flush
//! waits, or whenever no host request is outstanding. With
//! `destage_order = "oldest"` a destage write instead starts from the line
//! that has been dirty longest (first in, first out, still coalescing the
//! dirty neighbours that follow it): under a sustained random stream the
//! disks then see the writes in the host's random order, and the rate is
//! the disks' random-write rate at `destage_depth` whatever the cache's
//! size (an elevator's seeks shorten as the dirty set grows, so its rate
//! grows with the cache). A line written again
//! while being destaged stays dirty. FUA writes, and all writes with
//! write-back off, go through to the device. A flush completes at once if
//! the cache is battery-backed, else once nothing is dirty.
//!
//! Tokens: the layer has no events of its own; its device's tokens pass
//! through unchanged (see `devices/raid.rs` for the convention).
//!
//! Lines are found through a hash map with a fixed hasher that is only
//! looked up, never iterated (the least-recently-used order is a linked
//! list through the line slots, the dirty set a `BTreeSet`), so runs stay
//! deterministic.

use std::collections::{BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, Component};
use crate::config::{check_range, ConfigError};
use crate::device::{Completion, Cx, DevRequest, Device, Nanos, Op};
use crate::link::duplex::{Dir, Link};
use crate::report::{DeviceReport, Utilisation};
use crate::units::Rw;

use super::lines::LineStore;

/// `[raid.controller]`: a caching controller in front of a device.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Host link rate per direction (PCIe lanes x lane rate).
    pub link_bytes_per_s: u64,
    /// Fixed DMA set-up per request.
    pub link_latency_ns: Rw,
    /// Firmware time per command.
    pub command_ns: Rw,
    /// DRAM for caching and write buffering.
    pub cache_bytes: u64,
    /// Cache line (allocation unit).
    pub line_bytes: u64,
    /// Acknowledge writes from DRAM.
    pub write_back: bool,
    /// The DRAM survives power loss (a battery): flushes are free.
    pub battery_backed: bool,
    /// Destage once dirty lines exceed this fraction of the cache.
    pub destage_threshold: f64,
    /// Destage writes outstanding at once.
    pub destage_depth: u32,
    /// Largest destage write.
    pub destage_max_bytes: u64,
    /// Which dirty line a destage write starts from (absent:
    /// `"elevator"`).
    #[serde(default)]
    pub destage_order: DestageOrder,
    /// Read-ahead: a read that starts where a recent read ended (a
    /// sequential stream) has the controller also read the next this many
    /// bytes into its cache, as its own read of the device; a host read
    /// wholly inside a read-ahead in flight waits for it instead of going
    /// to the device. 0 (the default): none.
    #[serde(default)]
    pub read_ahead_bytes: u64,
}

/// Read streams a controller's read-ahead follows at once (the most
/// recent; an older one is forgotten).
const READ_STREAMS: usize = 32;

/// The order in which a controller cache destages its dirty lines
/// (`raid.controller.destage_order`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DestageOrder {
    /// Ascending address from where the last destage stopped (a circular
    /// scan of the dirty set).
    #[default]
    Elevator,
    /// The line dirty longest first (the order the host dirtied them).
    Oldest,
}

/// Validate.
pub fn validate(cfg: &CacheConfig) -> Result<(), ConfigError> {
    check_range(
        "raid.controller.link_bytes_per_s",
        cfg.link_bytes_per_s,
        1,
        u64::MAX,
    )?;
    check_range("raid.controller.line_bytes", cfg.line_bytes, 512, 1 << 24)?;
    check_range(
        "raid.controller.cache_bytes",
        cfg.cache_bytes,
        cfg.line_bytes,
        u64::MAX / 2,
    )?;
    check_range(
        "raid.controller.destage_threshold",
        cfg.destage_threshold,
        0.0,
        1.0,
    )?;
    check_range("raid.controller.destage_depth", cfg.destage_depth, 1, 4096)?;
    check_range(
        "raid.controller.read_ahead_bytes",
        cfg.read_ahead_bytes,
        0,
        cfg.cache_bytes / 2,
    )?;
    check_range(
        "raid.controller.destage_max_bytes",
        cfg.destage_max_bytes,
        cfg.line_bytes,
        1 << 30,
    )?;
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A host read that missed.
    Miss,
    /// A host write going through.
    Through,
    /// A host trim or flush passed down.
    Pass,
    /// A destage write of lines `first..first + n`, with their generations
    /// recorded in `gens`.
    Destage,
    /// A read-ahead of lines `first..first + n`; host reads `waiters`
    /// wait for it.
    ReadAhead,
}

#[derive(Clone, Debug)]
struct Sub {
    kind: Kind,
    host: u32,
    first: u64,
    n: u64,
    gens: Vec<u32>,
    /// Write-through: when the host's data is in DRAM.
    t_data: Nanos,
    /// Read-ahead: the host reads waiting for it.
    waiters: Vec<u32>,
}

impl Sub {
    /// A sub-request that carries host request `host` on, with no cache
    /// lines of its own.
    fn for_host(kind: Kind, host: u32, t_data: Nanos) -> Self {
        Sub {
            kind,
            host,
            first: 0,
            n: 0,
            gens: Vec::new(),
            t_data,
            waiters: Vec::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct HReq {
    id: u64,
    op: Option<Op>,
    arrival: Nanos,
    offset: u64,
    len: u64,
    bd: Breakdown,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    read_hits: u64,
    read_misses: u64,
    write_hits: u64,
    write_waits: u64,
    destages: u64,
    destaged_bytes: u64,
    read_aheads: u64,
    read_ahead_bytes: u64,
    read_ahead_waits: u64,
}

/// A caching controller over a device.
pub struct ControllerCache {
    cfg: CacheConfig,
    next: Box<dyn Device>,
    cap_lines: u64,
    lines: LineStore,
    dirty: BTreeSet<u64>,
    dirty_count: u64,
    cursor: u64,
    /// `DestageOrder::Oldest`: lines in the order they became dirty (an
    /// entry whose line is no longer dirty, or is being destaged, is
    /// dropped when reached; always empty under the elevator).
    dirty_fifo: VecDeque<u64>,
    /// The host link (PCIe: full duplex).
    link: Link,
    hreqs: Vec<HReq>,
    hfree: Vec<u32>,
    subs: Vec<Sub>,
    sfree: Vec<u32>,
    host_inflight: u32,
    destaging: u32,
    write_wait: VecDeque<u32>,
    flush_wait: VecDeque<u32>,
    ccx: Cx,
    stats: Stats,
    /// Read streams: where each recent read ended and how far read-ahead
    /// has been asked for it, bytes (the most recent last).
    streams: VecDeque<(u64, u64)>,
    /// Read-aheads: (first line, end line, sub-request slot, when the data
    /// is in DRAM once the device has answered): kept until that time, so
    /// a read of their lines waits for the data, not only for the answer.
    reading_ahead: Vec<(u64, u64, u32, Option<Nanos>)>,
}

impl ControllerCache {
    /// A controller with `cfg` in front of `next`.
    pub fn new(cfg: CacheConfig, next: Box<dyn Device>) -> Self {
        let rate = cfg.link_bytes_per_s;
        let link = Link::new(
            Rw {
                read: rate,
                write: rate,
            },
            cfg.link_latency_ns,
            true,
        );
        Self {
            cap_lines: cfg.cache_bytes / cfg.line_bytes,
            cfg,
            next,
            lines: LineStore::new(),
            dirty: BTreeSet::new(),
            dirty_count: 0,
            cursor: 0,
            dirty_fifo: VecDeque::new(),
            link,
            hreqs: Vec::new(),
            hfree: Vec::new(),
            subs: Vec::new(),
            sfree: Vec::new(),
            host_inflight: 0,
            destaging: 0,
            write_wait: VecDeque::new(),
            flush_wait: VecDeque::new(),
            ccx: Cx::default(),
            stats: Stats::default(),
            streams: VecDeque::new(),
            reading_ahead: Vec::new(),
        }
    }

    /// The device below.
    pub fn next(&self) -> &dyn Device {
        self.next.as_ref()
    }

    fn line_range(&self, off: u64, len: u64) -> (u64, u64) {
        let lb = self.cfg.line_bytes;
        (off / lb, (off + len.max(1)).div_ceil(lb))
    }

    /// Make room for `k` new lines by evicting clean ones; false if the
    /// dirty lines leave too little.
    fn make_room(&mut self, k: u64) -> bool {
        while self.lines.len() + k > self.cap_lines {
            if self.lines.evict().is_none() {
                return false;
            }
        }
        true
    }

    fn insert_clean(&mut self, l: u64) {
        if self.lines.contains(l) {
            self.lines.touch(l);
            return;
        }
        if self.make_room(1) {
            self.lines.insert(l, false, 0);
        }
    }

    fn mark_dirty(&mut self, l: u64) {
        match self.lines.slot(l) {
            Some(s) => {
                if !self.lines.slots[s as usize].dirty {
                    self.lines.unlink(s);
                    self.lines.slots[s as usize].dirty = true;
                    self.dirty.insert(l);
                    self.dirty_count += 1;
                    self.queue_dirty(l);
                }
                let line = &mut self.lines.slots[s as usize];
                line.gen = line.gen.wrapping_add(1);
            }
            None => {
                self.lines.insert(l, true, 1);
                self.dirty.insert(l);
                self.dirty_count += 1;
                self.queue_dirty(l);
            }
        }
    }

    /// Line `l` has just become dirty: queue it for oldest-first destaging.
    fn queue_dirty(&mut self, l: u64) {
        if self.cfg.destage_order == DestageOrder::Oldest {
            self.dirty_fifo.push_back(l);
        }
    }

    /// The next dirty line not being destaged, in the configured order
    /// (the oldest-first queue drops the entries it passes over).
    fn next_to_destage(&mut self) -> Option<u64> {
        let lines = &self.lines;
        let ready = |l: u64| lines.get(l).is_some_and(|x| x.dirty && !x.destaging);
        match self.cfg.destage_order {
            DestageOrder::Elevator => self
                .dirty
                .range(self.cursor..)
                .chain(self.dirty.range(..self.cursor))
                .find(|&&l| ready(l))
                .copied(),
            DestageOrder::Oldest => {
                while let Some(l) = self.dirty_fifo.pop_front() {
                    if ready(l) {
                        return Some(l);
                    }
                }
                None
            }
        }
    }

    /// Drop line `l` unless a destage is writing it.
    fn drop_line(&mut self, l: u64) {
        if let Some(line) = self.lines.get(l) {
            if !line.destaging {
                if line.dirty {
                    self.dirty.remove(&l);
                    self.dirty_count -= 1;
                }
                self.lines.remove(l);
            }
        }
    }

    fn alloc_sub(&mut self, s: Sub) -> u32 {
        crate::units::slab_insert(&mut self.subs, &mut self.sfree, s)
    }

    /// Pass `req` down (its id replaced by the tracking slot of `s`).
    fn send(&mut self, now: Nanos, s: Sub, req: DevRequest, cx: &mut Cx) {
        let si = self.alloc_sub(s);
        self.send_slot(now, si, req, cx);
    }

    /// Pass `req` down for the sub-request in slot `si`.
    fn send_slot(&mut self, now: Nanos, si: u32, req: DevRequest, cx: &mut Cx) {
        let req = DevRequest {
            id: si as u64,
            ..req
        };
        let mut ccx = std::mem::take(&mut self.ccx);
        self.next.submit(now, req, &mut ccx);
        self.ccx = ccx;
        self.drain(now, cx);
    }

    fn drain(&mut self, now: Nanos, cx: &mut Cx) {
        for (t, tok) in self.ccx.wakeups.drain(..) {
            cx.wake(t, tok);
        }
        // sub_done may submit again (and drain recursively): take the list
        while !self.ccx.completions.is_empty() {
            let mut done = std::mem::take(&mut self.ccx.completions);
            for c in done.drain(..) {
                self.sub_done(now, c, cx);
            }
            if self.ccx.completions.is_empty() {
                self.ccx.completions = done;
            }
        }
    }

    fn complete(&mut self, at: Nanos, hi: u32, cx: &mut Cx) {
        let h = &mut self.hreqs[hi as usize];
        cx.done_since(h.id, h.arrival, at, h.bd);
        h.op = None;
        self.hfree.push(hi);
        self.host_inflight -= 1;
    }

    fn sub_done(&mut self, now: Nanos, c: Completion, cx: &mut Cx) {
        let si = c.id as u32;
        let s = std::mem::replace(&mut self.subs[si as usize], Sub::for_host(Kind::Pass, 0, 0));
        self.sfree.push(si);
        match s.kind {
            Kind::Destage => {
                self.destaging -= 1;
                self.stats.destages += 1;
                self.stats.destaged_bytes += s.n * self.cfg.line_bytes;
                for (i, l) in (s.first..s.first + s.n).enumerate() {
                    if let Some(slot) = self.lines.slot(l) {
                        let line = &mut self.lines.slots[slot as usize];
                        line.destaging = false;
                        if line.dirty && line.gen == s.gens[i] {
                            line.dirty = false;
                            self.lines.push_tail(slot);
                            self.dirty.remove(&l);
                            self.dirty_count -= 1;
                        } else if line.dirty {
                            // written again while being destaged: queued
                            // again as the newest
                            self.queue_dirty(l);
                        }
                    }
                }
                self.admit_writes(now, cx);
                if self.dirty_count == 0 {
                    while let Some(hi) = self.flush_wait.pop_front() {
                        let at = now.max(c.at) + self.cfg.command_ns.write;
                        let h = &mut self.hreqs[hi as usize];
                        let w = at - h.arrival - h.bd.total();
                        h.bd.add(Component::Background, w);
                        self.complete(at, hi, cx);
                    }
                }
                self.destage(now, cx);
            }
            Kind::Miss => {
                let h = self.hreqs[s.host as usize];
                let (l0, l1) = self.line_range(h.offset, h.len);
                for l in l0..l1 {
                    self.insert_clean(l);
                }
                let t = c.at + self.cfg.command_ns.read;
                let (_, end) = self.link.move_to_host(t, h.len);
                let at = end + self.link.latency_ns(Dir::ToHost);
                let hm = &mut self.hreqs[s.host as usize];
                let mut bd = c.breakdown;
                bd.add(Component::Controller, self.cfg.command_ns.read);
                bd.add(Component::Link, at - t);
                hm.bd.merge(&bd);
                self.complete(at, s.host, cx);
                self.destage(now, cx);
            }
            Kind::ReadAhead => {
                if let Some(p) = self
                    .reading_ahead
                    .iter_mut()
                    .find(|p| p.2 == si && p.3.is_none())
                {
                    p.3 = Some(c.at);
                }
                for l in s.first..s.first + s.n {
                    self.insert_clean(l);
                }
                // the reads that waited for it are answered from DRAM
                for &hi in &s.waiters {
                    self.answer_ahead(c.at, hi, cx);
                }
                self.destage(now, cx);
            }
            Kind::Through | Kind::Pass => {
                let hm = &mut self.hreqs[s.host as usize];
                let mut bd = c.breakdown;
                bd.add(Component::Controller, self.cfg.command_ns.write);
                hm.bd.merge(&bd);
                // a write-through completes no earlier than its data arrived
                let at = c.at.max(s.t_data) + self.cfg.command_ns.write;
                self.complete(at, s.host, cx);
                self.destage(now, cx);
            }
        }
    }

    /// Start destage writes while the policy asks for them.
    fn destage(&mut self, now: Nanos, cx: &mut Cx) {
        let lb = self.cfg.line_bytes;
        let max_lines = (self.cfg.destage_max_bytes / lb).max(1);
        while self.destaging < self.cfg.destage_depth {
            let pressure =
                self.dirty_count as f64 > self.cfg.destage_threshold * self.cap_lines as f64;
            let want = pressure
                || !self.flush_wait.is_empty()
                || !self.write_wait.is_empty()
                || self.host_inflight == 0;
            if !want || self.dirty_count == 0 {
                return;
            }
            let Some(first) = self.next_to_destage() else {
                return;
            };
            let mut n = 0;
            let mut gens = Vec::new();
            while n < max_lines {
                let l = first + n;
                match self.lines.slot(l) {
                    Some(slot)
                        if self.lines.slots[slot as usize].dirty
                            && !self.lines.slots[slot as usize].destaging =>
                    {
                        let line = &mut self.lines.slots[slot as usize];
                        line.destaging = true;
                        gens.push(line.gen);
                        n += 1;
                    }
                    _ => break,
                }
            }
            self.cursor = first + n;
            self.destaging += 1;
            let s = Sub {
                first,
                n,
                gens,
                ..Sub::for_host(Kind::Destage, 0, 0)
            };
            self.send(
                now,
                s,
                DevRequest::new(0, Op::Write, first * lb, n * lb),
                cx,
            );
        }
    }

    /// A host read of `len` bytes at `off`: if it continues a stream, read
    /// ahead of it (what is not cached or asked for already); remember
    /// where it ends.
    fn read_ahead(&mut self, now: Nanos, off: u64, len: u64, cx: &mut Cx) {
        let ra = self.cfg.read_ahead_bytes;
        if ra == 0 {
            return;
        }
        let end = off + len;
        let lb = self.cfg.line_bytes;
        let Some(i) = self.streams.iter().position(|&(e, _)| e == off) else {
            self.streams.push_back((end, end));
            if self.streams.len() > READ_STREAMS {
                self.streams.pop_front();
            }
            return;
        };
        let (_, asked) = self.streams.remove(i).expect("found");
        let mut first = asked.max(end).div_ceil(lb);
        let last = (end + ra).min(self.next.capacity()) / lb;
        while first < last && self.lines.contains(first) {
            first += 1;
        }
        self.streams.push_back((end, asked.max(end).max(last * lb)));
        if first >= last {
            return;
        }
        let n = last - first;
        self.stats.read_aheads += 1;
        self.stats.read_ahead_bytes += n * lb;
        let si = self.alloc_sub(Sub {
            first,
            n,
            ..Sub::for_host(Kind::ReadAhead, 0, 0)
        });
        self.reading_ahead.push((first, last, si, None));
        let req = DevRequest::new(0, Op::Read, first * lb, n * lb);
        self.send_slot(now, si, req, cx);
    }

    /// Answer host read `hi` from a read-ahead's data, in DRAM at `ready`.
    fn answer_ahead(&mut self, ready: Nanos, hi: u32, cx: &mut Cx) {
        let h = self.hreqs[hi as usize];
        let ready = ready.max(h.arrival);
        let t = ready + self.cfg.command_ns.read;
        let (_, end) = self.link.move_to_host(t, h.len);
        let at = end + self.link.latency_ns(Dir::ToHost);
        let hm = &mut self.hreqs[hi as usize];
        hm.bd.add(Component::Media, ready - h.arrival);
        hm.bd.add(Component::Controller, self.cfg.command_ns.read);
        hm.bd.add(Component::Link, at - t);
        self.complete(at, hi, cx);
    }

    fn admit_writes(&mut self, now: Nanos, cx: &mut Cx) {
        while let Some(&hi) = self.write_wait.front() {
            if !self.try_buffer_write(now, hi, cx) {
                break;
            }
            self.write_wait.pop_front();
        }
    }

    /// Take a write into DRAM if there is room; acknowledge it.
    fn try_buffer_write(&mut self, now: Nanos, hi: u32, cx: &mut Cx) -> bool {
        let h = self.hreqs[hi as usize];
        let (l0, l1) = self.line_range(h.offset, h.len);
        let new = (l0..l1).filter(|&l| !self.lines.contains(l)).count() as u64;
        if !self.make_room(new) {
            return false;
        }
        for l in l0..l1 {
            self.mark_dirty(l);
        }
        self.stats.write_hits += 1;
        let (_, end) = self.link.move_to_device(now, h.len);
        let at = end + self.cfg.command_ns.write;
        let hm = &mut self.hreqs[hi as usize];
        let waited = now - hm.arrival;
        hm.bd.add(Component::Background, waited);
        hm.bd.add(Component::Link, end - now);
        hm.bd.add(Component::Controller, self.cfg.command_ns.write);
        self.complete(at, hi, cx);
        true
    }
}

impl Device for ControllerCache {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let h = HReq {
            id: req.id,
            op: Some(req.op),
            arrival: now,
            offset: req.offset,
            len: req.len,
            bd: Breakdown::default(),
        };
        let hi = crate::units::slab_insert(&mut self.hreqs, &mut self.hfree, h);
        self.host_inflight += 1;
        match req.op {
            Op::Read => {
                let (l0, l1) = self.line_range(req.offset, req.len);
                self.reading_ahead.retain(|p| p.3.is_none_or(|t| t > now));
                let ahead = self
                    .reading_ahead
                    .iter()
                    .find(|&&(a, b, _, _)| a <= l0 && l1 <= b)
                    .copied();
                let hit = (l0..l1).all(|l| self.lines.contains(l));
                if let Some((_, _, si, ready)) = ahead {
                    // its lines are on their way: wait for them
                    self.stats.read_ahead_waits += 1;
                    match ready {
                        Some(t) => self.answer_ahead(t, hi, cx),
                        None => self.subs[si as usize].waiters.push(hi),
                    }
                } else if hit {
                    self.stats.read_hits += 1;
                    for l in l0..l1 {
                        self.lines.touch(l);
                    }
                    let t = now + self.cfg.command_ns.read;
                    let (_, end) = self.link.move_to_host(t, req.len);
                    let at = end + self.link.latency_ns(Dir::ToHost);
                    let hm = &mut self.hreqs[hi as usize];
                    hm.bd.add(Component::Cache, self.cfg.command_ns.read);
                    hm.bd.add(Component::Link, at - t);
                    self.complete(at, hi, cx);
                } else {
                    self.stats.read_misses += 1;
                    let s = Sub::for_host(Kind::Miss, hi, 0);
                    self.send(now, s, DevRequest { fua: false, ..req }, cx);
                }
                self.read_ahead(now, req.offset, req.len, cx);
            }
            Op::Write if self.cfg.write_back && !req.fua => {
                if !(self.write_wait.is_empty() && self.try_buffer_write(now, hi, cx)) {
                    self.stats.write_waits += 1;
                    self.write_wait.push_back(hi);
                }
            }
            Op::Write => {
                // write-through: the line is kept clean (an older dirty copy
                // is superseded)
                let (l0, l1) = self.line_range(req.offset, req.len);
                for l in l0..l1 {
                    self.drop_line(l);
                    self.insert_clean(l);
                }
                let (_, end) = self.link.move_to_device(now, req.len);
                // the device is asked at once, overlapping the host's DMA;
                // the write completes no earlier than the DMA has ended
                let s = Sub::for_host(Kind::Through, hi, end);
                self.send(now, s, req, cx);
            }
            Op::Trim => {
                let (l0, l1) = self.line_range(req.offset, req.len);
                for l in l0..l1 {
                    self.drop_line(l);
                }
                let s = Sub::for_host(Kind::Pass, hi, 0);
                self.send(now, s, DevRequest { fua: false, ..req }, cx);
            }
            Op::Flush => {
                if self.cfg.battery_backed || self.dirty_count == 0 || !self.cfg.write_back {
                    let at = now + self.cfg.command_ns.write;
                    self.hreqs[hi as usize]
                        .bd
                        .add(Component::Controller, self.cfg.command_ns.write);
                    self.complete(at, hi, cx);
                } else {
                    self.flush_wait.push_back(hi);
                }
            }
        }
        self.destage(now, cx);
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let mut ccx = std::mem::take(&mut self.ccx);
        self.next.on_event(now, token, &mut ccx);
        self.ccx = ccx;
        self.drain(now, cx);
    }

    fn capacity(&self) -> u64 {
        self.next.capacity()
    }

    fn volatile_write_cache(&self) -> bool {
        (self.cfg.write_back && !self.cfg.battery_backed) || self.next.volatile_write_cache()
    }

    /// A dirty line (destaging or not) of a volatile write-back cache
    /// holds the range, or the device behind it does (same offsets).
    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        if self.cfg.write_back && !self.cfg.battery_backed {
            let (l0, l1) = self.line_range(offset, len);
            if self.dirty.range(l0..l1).next().is_some() {
                return true;
            }
        }
        self.next.volatile_holds(offset, len)
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        let s = &self.stats;
        let mut r = DeviceReport {
            utilisation: vec![
                Utilisation {
                    resource: "link.device_to_host".into(),
                    busy: self.link.utilisation(Dir::ToHost, now),
                },
                Utilisation {
                    resource: "link.host_to_device".into(),
                    busy: self.link.utilisation(Dir::ToDevice, now),
                },
            ],
            power: Vec::new(),
            wear: None,
            counters: vec![
                ("cache_read_hits".into(), s.read_hits as f64),
                ("cache_read_misses".into(), s.read_misses as f64),
                ("cache_writes_buffered".into(), s.write_hits as f64),
                ("cache_write_waits".into(), s.write_waits as f64),
                ("destages".into(), s.destages as f64),
                ("destaged_bytes".into(), s.destaged_bytes as f64),
                ("dirty_lines_at_end".into(), self.dirty_count as f64),
            ],
        };
        if self.cfg.read_ahead_bytes > 0 {
            r.counters.extend([
                ("read_aheads".into(), s.read_aheads as f64),
                ("read_ahead_bytes".into(), s.read_ahead_bytes as f64),
                ("read_ahead_waits".into(), s.read_ahead_waits as f64),
            ]);
        }
        r.absorb("", self.next.report(now));
        r
    }
}
