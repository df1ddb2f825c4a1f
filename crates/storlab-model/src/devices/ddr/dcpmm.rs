//! Optane persistent memory (DCPMM, docs/spec/today.md "Optane persistent
//! memory 100"): 3D XPoint DIMMs on the DDR4 bus speaking DDR-T, in App
//! Direct mode (persistent memory mapped by a DAX file system, used with
//! loads and stores as the NVMM class is) or in Memory Mode (main memory
//! behind the host's DRAM as a direct-mapped cache).
//!
//! Structure, each part a key of `[dcpmm]`:
//!
//! - the DIMMs are interleaved every `interleave_bytes` (4 KB); each has
//!   its media (a timeline: `media_units` accesses at once, each of
//!   `xpline_bytes`, taking `media_read_ns` / `media_write_ns`) and its
//!   write-combining buffer (`wc_buffer_xplines` entries of one XPLine,
//!   least recently written out first);
//! - a load misses to the DIMM: the path from core to the memory
//!   controller and back (`host_path_ns`), the DDR-T request/grant
//!   exchange (`ddrt_ns`), the DIMM's controller (`controller_ns`: address
//!   indirection, ECC, decryption) and the media read of the XPLine (a hit
//!   in the write-combining buffer skips the media); the bytes cross the
//!   DDR channels (`bus_bytes_per_s`, all channels);
//! - a store reaches the DIMM's write-combining buffer; when an entry
//!   leaves it, the media writes the XPLine: whole if all its lines were
//!   written, else read-modify-write (a 64 B store costs a 256 B media read
//!   and a 256 B media write);
//! - persistence: under `adr` the write-pending queue and the DIMM are
//!   persistent and the CPU caches are not, so an msync (fio's fsync) or a
//!   FUA write flushes its lines (`flush`: clflush one at a time, each a
//!   round trip to the memory controller; clflushopt and clwb overlapped,
//!   bounded by the media's write rate) and fences (`fence_ns`); under
//!   `eadr` the caches are persistent too: no line is flushed, only the
//!   fence orders. Which lines an msync flushes is `sync` (every line of
//!   the region, or SPF's dirty pages), as the NVMM class
//!   (`storlab_pmem::model::NvmmParams::sync_plan`);
//! - Memory Mode: `near_bytes` of DRAM cache the DIMMs, direct-mapped by
//!   line: a hit costs `near_ns` (a DRAM load), a miss the DIMM's read
//!   after the tag check, and a dirty victim is written to the DIMM.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use storlab_pmem::model::{FlushMode, NvmmParams, SyncMode};

use crate::breakdown::Component;
use crate::config::{check_range, ConfigError};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::link::ddr::MemoryBus;
use crate::report::{DeviceReport, Utilisation};
use crate::units::Timeline;

/// How the DIMMs are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PmemMode {
    /// Persistent memory, mapped (DAX).
    AppDirect,
    /// Volatile main memory behind a DRAM cache.
    MemoryMode,
}

/// The persistence domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Persistence {
    /// The memory controller's write-pending queue and the DIMMs.
    Adr,
    /// The CPU caches as well.
    Eadr,
}

/// `[dcpmm]`. Units are in the names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcpmmConfig {
    /// App Direct or Memory Mode.
    pub mode: PmemMode,
    /// ADR or eADR.
    pub persistence: Persistence,
    /// How an msync flushes a line.
    pub flush: FlushMode,
    /// Which lines an msync flushes.
    pub sync: SyncMode,
    /// DIMMs interleaved.
    pub dimms: u32,
    /// Interleave unit across DIMMs, bytes.
    pub interleave_bytes: u64,
    /// CPU cache line, bytes.
    pub line_bytes: u64,
    /// The media's access unit, bytes.
    pub xpline_bytes: u64,
    /// Entries (XPLines) of each DIMM's write-combining buffer.
    pub wc_buffer_xplines: u32,
    /// Media accesses one DIMM serves at once.
    pub media_units: u32,
    /// One media read of an XPLine, ns.
    pub media_read_ns: u64,
    /// One media write of an XPLine, ns.
    pub media_write_ns: u64,
    /// Core to memory controller and back, ns.
    pub host_path_ns: u64,
    /// DDR-T's request/grant exchange, ns.
    pub ddrt_ns: u64,
    /// The DIMM's controller per access, ns.
    pub controller_ns: u64,
    /// The DDR channels' rate, all together, bytes/s.
    pub bus_bytes_per_s: u64,
    /// An sfence waiting for the flushes before it, ns.
    pub fence_ns: u64,
    /// SPF's per-page tracking granularity, bytes.
    pub page_bytes: u64,
    /// Memory Mode: the DRAM cache, bytes (0 in App Direct).
    #[serde(default)]
    pub near_bytes: u64,
    /// Memory Mode: a DRAM load (cache hit), ns.
    #[serde(default)]
    pub near_ns: u64,
}

/// Validate `[dcpmm]`.
pub fn validate(c: &DcpmmConfig) -> Result<(), ConfigError> {
    check_range("dcpmm.dimms", c.dimms, 1, 64)?;
    check_range("dcpmm.line_bytes", c.line_bytes, 8, 4096)?;
    check_range(
        "dcpmm.xpline_bytes",
        c.xpline_bytes,
        c.line_bytes,
        64 * c.line_bytes,
    )?;
    check_range(
        "dcpmm.interleave_bytes",
        c.interleave_bytes,
        c.xpline_bytes,
        1 << 30,
    )?;
    check_range("dcpmm.page_bytes", c.page_bytes, c.line_bytes, 1 << 30)?;
    check_range("dcpmm.wc_buffer_xplines", c.wc_buffer_xplines, 1, 1 << 16)?;
    check_range("dcpmm.media_units", c.media_units, 1, 1024)?;
    check_range("dcpmm.bus_bytes_per_s", c.bus_bytes_per_s, 1, u64::MAX)?;
    for (f, v) in [
        ("dcpmm.media_read_ns", c.media_read_ns),
        ("dcpmm.media_write_ns", c.media_write_ns),
        ("dcpmm.host_path_ns", c.host_path_ns),
        ("dcpmm.ddrt_ns", c.ddrt_ns),
        ("dcpmm.controller_ns", c.controller_ns),
        ("dcpmm.fence_ns", c.fence_ns),
        ("dcpmm.near_ns", c.near_ns),
    ] {
        check_range(f, v, 0, 1_000_000_000)?;
    }
    for (f, v) in [
        ("dcpmm.line_bytes", c.line_bytes),
        ("dcpmm.xpline_bytes", c.xpline_bytes),
        ("dcpmm.interleave_bytes", c.interleave_bytes),
        ("dcpmm.page_bytes", c.page_bytes),
    ] {
        if !v.is_power_of_two() {
            return Err(ConfigError::Invalid {
                field: f.into(),
                message: format!("{v} is not a power of two"),
            });
        }
    }
    if c.mode == PmemMode::MemoryMode && c.near_bytes < c.line_bytes {
        return Err(ConfigError::Invalid {
            field: "dcpmm.near_bytes".into(),
            message: "Memory Mode needs a DRAM cache of at least one line".into(),
        });
    }
    Ok(())
}

/// One DIMM: its media and its write-combining buffer.
#[derive(Clone, Debug, Default)]
struct Dimm {
    media: Vec<Timeline>,
    /// (XPLine, mask of lines written, last write's sequence number)
    wc: Vec<(u64, u64, u64)>,
}

/// Media traffic counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MediaCounts {
    /// Bytes the media read (loads and read-modify-writes).
    pub read_bytes: u64,
    /// Bytes the media wrote.
    pub write_bytes: u64,
    /// XPLines written by read-modify-write.
    pub rmw: u64,
    /// Lines flushed by msyncs and FUA writes.
    pub lines_flushed: u64,
}

/// The device.
pub struct Dcpmm {
    c: DcpmmConfig,
    capacity: u64,
    dimms: Vec<Dimm>,
    bus: MemoryBus,
    seq: u64,
    counts: MediaCounts,
    dirty_pages: std::collections::BTreeSet<u64>,
    /// Memory Mode's DRAM cache: set -> (tag, dirty).
    near: BTreeMap<u64, (u64, bool)>,
    near_hits: u64,
    near_misses: u64,
    syncs: u64,
}

impl Dcpmm {
    /// Build from a validated configuration.
    pub fn new(c: DcpmmConfig, capacity: u64) -> Self {
        let dimms = (0..c.dimms)
            .map(|_| Dimm {
                media: vec![Timeline::default(); c.media_units as usize],
                wc: Vec::new(),
            })
            .collect();
        let bus = MemoryBus::new(c.bus_bytes_per_s);
        Self {
            c,
            capacity,
            dimms,
            bus,
            seq: 0,
            counts: MediaCounts::default(),
            dirty_pages: Default::default(),
            near: BTreeMap::new(),
            near_hits: 0,
            near_misses: 0,
            syncs: 0,
        }
    }

    /// The media traffic so far.
    pub fn media_counts(&self) -> MediaCounts {
        self.counts
    }

    fn dimm_of(&self, addr: u64) -> usize {
        ((addr / self.c.interleave_bytes) % self.c.dimms as u64) as usize
    }

    /// Occupy one of `d`'s media units from `at` for `dur`: its end.
    fn media(&mut self, d: usize, at: Nanos, dur: u64) -> Nanos {
        let units = &mut self.dimms[d].media;
        let u = (0..units.len())
            .min_by_key(|&i| units[i].free_at)
            .expect("at least one unit");
        units[u].reserve(at, dur) + dur
    }

    /// An XPLine leaves `d`'s buffer with `mask` of its lines written.
    fn write_back(&mut self, d: usize, mask: u64, at: Nanos) -> Nanos {
        let full = (1u64 << (self.c.xpline_bytes / self.c.line_bytes)) - 1;
        let mut dur = self.c.media_write_ns;
        if mask != full {
            dur += self.c.media_read_ns;
            self.counts.read_bytes += self.c.xpline_bytes;
            self.counts.rmw += 1;
        }
        self.counts.write_bytes += self.c.xpline_bytes;
        self.media(d, at, dur)
    }

    /// Stores reach the DIMMs' write-combining buffers: the end of any
    /// media work they force (entries written out), or `now`.
    fn store(&mut self, now: Nanos, offset: u64, len: u64) -> Nanos {
        let (lb, xb) = (self.c.line_bytes, self.c.xpline_bytes);
        let mut end = now;
        let mut line = offset / lb;
        let last = (offset + len.max(1) - 1) / lb;
        while line <= last {
            let xp = line * lb / xb;
            let per = xb / lb;
            let hi = ((xp + 1) * per - 1).min(last);
            let mut mask = 0u64;
            for l in line..=hi {
                mask |= 1 << (l - xp * per);
            }
            let d = self.dimm_of(xp * xb);
            self.seq += 1;
            let seq = self.seq;
            let cap = self.c.wc_buffer_xplines as usize;
            let wc = &mut self.dimms[d].wc;
            if let Some(e) = wc.iter_mut().find(|e| e.0 == xp) {
                e.1 |= mask;
                e.2 = seq;
            } else {
                if wc.len() >= cap {
                    let (i, _) = wc
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, e)| e.2)
                        .expect("full buffer");
                    let old = wc.swap_remove(i);
                    end = end.max(self.write_back(d, old.1, now));
                }
                self.dimms[d].wc.push((xp, mask, seq));
            }
            line = hi + 1;
        }
        end
    }

    /// A load of `[offset, offset+len)` from the DIMMs: when its first
    /// byte is back (media reads of XPLines not in a buffer started at
    /// `now`), and the last media read's end.
    fn load(&mut self, now: Nanos, offset: u64, len: u64) -> (Nanos, Nanos) {
        let xb = self.c.xpline_bytes;
        let front = self.c.host_path_ns + self.c.ddrt_ns + self.c.controller_ns;
        let (mut first, mut last) = (Nanos::MAX, now);
        for xp in offset / xb..=(offset + len.max(1) - 1) / xb {
            let d = self.dimm_of(xp * xb);
            let end = if self.dimms[d].wc.iter().any(|e| e.0 == xp) {
                now
            } else {
                self.counts.read_bytes += xb;
                self.media(d, now, self.c.media_read_ns)
            };
            first = first.min(end);
            last = last.max(end);
        }
        (first + front, last + front)
    }

    /// Time to make `lines` lines durable with the configured flush, and
    /// the lines flushed (0 under eADR): bounded by the instruction's
    /// ordering (clflush: one round trip to the memory controller per
    /// line) or by the media's write rate (lines of a sequential range
    /// merge into whole XPLines), then one fence.
    fn persist_ns(&self, lines: u64) -> (u64, u64) {
        if lines == 0 {
            return (0, 0);
        }
        if self.c.persistence == Persistence::Eadr {
            return (self.c.fence_ns, 0);
        }
        let c = &self.c;
        let per_xpline = (c.xpline_bytes / c.line_bytes) as f64;
        let write_rate_lines_per_ns =
            (c.dimms * c.media_units) as f64 * per_xpline / c.media_write_ns.max(1) as f64;
        let bound = (lines as f64 / write_rate_lines_per_ns).ceil() as u64;
        let ordered = match c.flush {
            FlushMode::Clflush => lines * (c.host_path_ns + c.ddrt_ns),
            _ => 0,
        };
        (bound.max(ordered) + c.fence_ns, lines)
    }

    fn sync_params(&self) -> NvmmParams {
        let mut p = NvmmParams::preset(storlab_pmem::model::Preset::Pdram);
        p.line_bytes = self.c.line_bytes;
        p.page_bytes = self.c.page_bytes;
        p.m_sync = self.c.sync;
        p
    }

    fn read_write(&mut self, now: Nanos, req: &DevRequest, cx: &mut Cx) {
        let len = req.len.max(1);
        let xfer = self.bus.xfer_ns(len);
        let (start, bus_end) = self.bus.occupy(now, xfer);
        let write = req.op == Op::Write;
        let mut bd = crate::breakdown::Breakdown::default();
        bd.add(Component::DeviceQueue, start - now);
        let done = if self.c.mode == PmemMode::MemoryMode {
            self.memory_mode(start, req.offset, len, write, &mut bd)
        } else if write {
            let pb = self.c.page_bytes;
            for page in req.offset / pb..=(req.offset + len - 1) / pb {
                self.dirty_pages.insert(page);
            }
            let media_end = self.store(start, req.offset, len);
            let mut t = bus_end.max(media_end) + self.c.host_path_ns;
            bd.add(Component::Link, t - start);
            if req.fua {
                let lines = storlab_pmem::model::covered_lines(req.offset, len, self.c.line_bytes);
                let (ns, flushed) = self.persist_ns(lines);
                self.counts.lines_flushed += flushed;
                bd.add(Component::Background, ns);
                t += ns;
            }
            t
        } else {
            let (first, last) = self.load(start, req.offset, len);
            let t = (first + xfer).max(last);
            bd.add(Component::Media, first - start);
            bd.add(Component::Link, t - first);
            t
        };
        cx.done(req.id, done, bd);
    }

    /// Memory Mode: each line through the DRAM cache.
    fn memory_mode(
        &mut self,
        now: Nanos,
        offset: u64,
        len: u64,
        write: bool,
        bd: &mut crate::breakdown::Breakdown,
    ) -> Nanos {
        let lb = self.c.line_bytes;
        let sets = (self.c.near_bytes / lb).max(1);
        let mut done = now + self.c.near_ns + self.bus.xfer_ns(len);
        let mut miss_end = now;
        // the XPLine last read for a miss of this request: the DIMM's read
        // buffer serves its other lines
        let mut fetched = u64::MAX;
        for line in offset / lb..=(offset + len - 1) / lb {
            let set = line % sets;
            match self.near.get(&set).copied() {
                Some((tag, dirty)) if tag == line => {
                    self.near_hits += 1;
                    self.near.insert(set, (line, dirty || write));
                }
                old => {
                    self.near_misses += 1;
                    if let Some((victim, true)) = old {
                        miss_end = miss_end.max(self.store(now, victim * lb, lb));
                    }
                    let xp = line * lb / self.c.xpline_bytes;
                    if xp != fetched {
                        fetched = xp;
                        let (_, last) = self.load(now + self.c.near_ns, line * lb, lb);
                        miss_end = miss_end.max(last);
                    }
                    self.near.insert(set, (line, write));
                }
            }
        }
        done = done.max(miss_end + self.bus.xfer_ns(len));
        bd.add(Component::Cache, self.c.near_ns.min(done - now));
        bd.add(
            Component::Media,
            done - now - self.c.near_ns.min(done - now),
        );
        done
    }
}

impl Device for Dcpmm {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        match req.op {
            Op::Read | Op::Write => self.read_write(now, &req, cx),
            Op::Trim => cx.done_mut(req.id, now).add(Component::Media, 0),
            Op::Flush => {
                if self.c.mode == PmemMode::MemoryMode {
                    // volatile memory: nothing to make durable
                    cx.done_mut(req.id, now);
                    return;
                }
                if self.c.persistence == Persistence::Eadr {
                    // the caches are persistent: nothing to find or flush,
                    // the fence orders (SPF's tracking has nothing to do)
                    self.dirty_pages.clear();
                    self.syncs += 1;
                    cx.done_mut(req.id, now + self.c.fence_ns)
                        .add(Component::Background, self.c.fence_ns);
                    return;
                }
                let p = self.sync_params();
                let dirty: Vec<u64> = self.dirty_pages.iter().copied().collect();
                let plan = p.sync_plan(0, self.capacity, &dirty);
                if plan.cleaned_pages > 0 {
                    let (lo, hi) = (plan.clear_first, plan.clear_end);
                    self.dirty_pages.retain(|pg| *pg < lo || *pg >= hi);
                }
                let (ns, flushed) = self.persist_ns(plan.lines);
                // SPF's dirty-page lookup and re-arm faults, at the costs
                // storlab-pmem measured on its host (as the NVMM class)
                let ns = ns + p.sync_cost(&plan).scan_ns;
                self.counts.lines_flushed += flushed;
                self.syncs += 1;
                cx.done_mut(req.id, now + ns).add(Component::Background, ns);
            }
        }
    }
    fn on_event(&mut self, _now: Nanos, _token: u64, _cx: &mut Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, now: Nanos) -> DeviceReport {
        let busy: f64 = self
            .dimms
            .iter()
            .flat_map(|d| d.media.iter())
            .map(|t| t.utilisation(now))
            .sum::<f64>()
            / (self.c.dimms * self.c.media_units) as f64;
        let mut counters = vec![
            ("media_read_bytes".into(), self.counts.read_bytes as f64),
            ("media_write_bytes".into(), self.counts.write_bytes as f64),
            ("media_rmw".into(), self.counts.rmw as f64),
            ("lines_flushed".into(), self.counts.lines_flushed as f64),
            ("syncs".into(), self.syncs as f64),
        ];
        if self.c.mode == PmemMode::MemoryMode {
            counters.push(("near_hits".into(), self.near_hits as f64));
            counters.push(("near_misses".into(), self.near_misses as f64));
        }
        DeviceReport {
            utilisation: vec![
                Utilisation {
                    resource: "media".into(),
                    busy,
                },
                Utilisation {
                    resource: "ddr_bus".into(),
                    busy: self.bus.utilisation(now),
                },
            ],
            counters,
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests;
