//! The solid-state drive's state: its requests, dies, channels, host link
//! (a [`Link`], PCIe or SATA), controller, write buffer, read-ahead and
//! counters; building it (with its FTL, preconditioned), completions, and
//! the drive as a [`Device`].

use std::collections::{BTreeMap, VecDeque};

use crate::breakdown::{Breakdown, Component};
use crate::config::ConfigError;
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::link::duplex::{Dir, Link};
use crate::report::{DeviceReport, Utilisation, Wear};
use crate::units::{xfer_ns, Timeline};

use super::config::{geometry, plane_order, validate, SsdConfig};
use super::ftl::div::Div32;
use super::ftl::layer::Ftl;
use super::ftl::mapcache::MapCache;
use super::ftl::types::{Mapping, Precondition, NONE};
use super::nand::Die;
use super::slc::SlcCache;
use super::spread::Spread;

pub(super) const EV_DIE: u64 = 0;
pub(super) const EV_RCMD: u64 = 1;
pub(super) const EV_WREADY: u64 = 2;
/// A tag freed (at a completion time that may lie ahead): admit a waiter.
const EV_ADMIT: u64 = 3;
pub(super) const READY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Req {
    pub(super) id: u64,
    pub(super) op: Option<Op>,
    pub(super) arrival: Nanos,
    pub(super) lpn0: u32,
    pub(super) units: u32,
    pub(super) bytes: u64,
    /// Where the request starts within its first unit, bytes.
    pub(super) skip: u32,
    pub(super) pending: u32,
    /// When the command left the controller.
    pub(super) t_cmd: Nanos,
    pub(super) data_done: Nanos,
    pub(super) bd: Breakdown,
    /// The latest data's path after `t_cmd`.
    pub(super) crit: Crit,
    pub(super) durable: bool,
    pub(super) background_wait: bool,
    /// Translation pages this read still waits for (cached mapping table).
    pub(super) map_wait: u32,
    /// A write's reclaim-unit handle (FDP; 0 otherwise).
    pub(super) handle: u16,
}

/// A read's critical path after its command (the components it can
/// have, not a whole [`Breakdown`]: a read request is written, copied and
/// merged once per completion, and the full table is 152 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Crit {
    /// Its die queue (`Background` if it queued behind collection).
    pub(super) queue: u64,
    pub(super) behind_gc: bool,
    pub(super) media: u64,
    pub(super) interconnect: u64,
    pub(super) link: u64,
}

impl Crit {
    /// Add it to `bd`.
    #[inline]
    fn merge_into(&self, bd: &mut Breakdown) {
        let q = if self.behind_gc {
            Component::Background
        } else {
            Component::DeviceQueue
        };
        bd.add(q, self.queue);
        bd.add(Component::Media, self.media);
        bd.add(Component::Interconnect, self.interconnect);
        bd.add(Component::Link, self.link);
    }
}

/// Pages in the write buffer (see [`Ssd`]'s `inbuf`).
pub(super) type InBuf = std::collections::HashMap<u32, u32, foldhash::fast::FixedState>;

/// Counters of one run.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stats {
    pub(super) nand_reads: u64,
    pub(super) nand_programs: u64,
    pub(super) gc_reads: u64,
    pub(super) gc_programs: u64,
    pub(super) erases: u64,
    pub(super) buffer_hits: u64,
    pub(super) unmapped_reads: u64,
    pub(super) prefetched: u64,
    pub(super) prefetch_hits: u64,
    pub(super) buffer_waits: u64,
    pub(super) host_read_units: u64,
    pub(super) read_retries: u64,
    pub(super) map_reads: u64,
    pub(super) map_programs: u64,
    /// Reads of old data for writes smaller than the mapping unit.
    pub(super) rmw_reads: u64,
    /// Programs and erases suspended for host reads.
    pub(super) suspends: u64,
}

/// A solid-state drive.
pub struct Ssd {
    pub(super) cfg: SsdConfig,
    pub(super) capacity: u64,
    pub(super) unit: u64,
    pub(super) upp: u32,
    pub(super) ppd: u32,
    /// Division by `upp`, `ppd`, blocks per plane and the page types (shifts or
    /// multiplies, never a hardware division: several per NAND op).
    pub(super) upp_div: Div32,
    pub(super) ppd_div: Div32,
    pub(super) bpp_div: Div32,
    pub(super) types_div: Div32,
    /// Channel time of `k` units, `k` up to a page (`xfer_ns` of their
    /// bytes at the bus rate), and of a whole page.
    pub(super) xfer_units_ns: Vec<u64>,
    pub(super) xfer_page_ns: u64,
    pub(super) ftl: Ftl,
    pub(super) dies: Vec<Die>,
    /// Dies busy with an operation, and writes queued on every die (so
    /// an idle array is known without looking at each die).
    pub(super) busy_dies: u32,
    pub(super) writes_queued: u64,
    pub(super) channels: Vec<Timeline>,
    /// Dies programming on each channel (counted only with
    /// `programs_per_channel` set).
    pub(super) programming: Vec<u32>,
    /// The host link (PCIe or SATA).
    pub(super) link: Link,
    pub(super) ctrl: Timeline,
    pub(super) reqs: Vec<Req>,
    pub(super) free_reqs: Vec<u32>,
    /// The next read-ahead op's id.
    pub(super) next_pf_id: u32,
    pub(super) tags: crate::units::Tags,
    pub(super) buf_cap: u64,
    pub(super) buf_used: u64,
    pub(super) buf_wait: VecDeque<u32>,
    /// Pages not yet programmed → host units of them held in the buffer.
    /// A hash map, looked up and never iterated (so the model stays
    /// deterministic): every buffered unit is an insert or an update and
    /// every host program a removal, and an ordered map's walk down its
    /// tree was a twentieth of a garbage-collected write's time.
    pub(super) inbuf: InBuf,
    pub(super) prog_seq: u64,
    pub(super) done_base: u64,
    pub(super) done_window: VecDeque<bool>,
    pub(super) flush_wait: VecDeque<(u64, u32)>,
    pub(super) last_read_end: u32,
    pub(super) pf: BTreeMap<u32, u32>,
    pub(super) pf_end: u32,
    pub(super) pf_waiters: Vec<(u32, u32)>,
    /// First logical unit of each write whose data is on its way in, in
    /// the order they started (for prefetch hints only).
    pub(super) wpipe: VecDeque<u32>,
    pub(super) stats: Stats,
    pub(super) spread: Spread,
    /// The cached mapping table (`ssd.ftl.map_cache`; `None` when off).
    pub(super) map: Option<MapCache>,
    /// Mapping units a translation page moves over the channel.
    pub(super) map_units: u32,
    /// The SLC write cache (`ssd.nand.slc_cache`; `None` when off).
    pub(super) slc: Option<SlcCache>,
    /// The zoned namespace (`ssd.zns`; `None`: conventional).
    pub(super) zoned: Option<Box<super::zones::ZonedNs>>,
    /// Flexible data placement (`ssd.fdp` enabled; `None`: off).
    pub(super) fdp: Option<Box<super::fdp::Fdp>>,
}

impl Ssd {
    /// Build from a validated configuration (see [`validate`]); runs the
    /// configured preconditioning.
    pub fn new(cfg: SsdConfig, capacity: u64) -> Result<Self, ConfigError> {
        validate(&cfg, capacity)?;
        let (geo, upp) = geometry(&cfg);
        let unit = cfg.ftl.map_unit_bytes;
        let logical = match &cfg.zns {
            Some(z) => super::zones::ZonedNs::logical_units(z, capacity, unit),
            None => capacity / unit,
        };
        let mut ftl = Ftl::new(&cfg.ftl, geo, logical, plane_order(&cfg.nand)).map_err(|e| {
            ConfigError::Invalid {
                field: "device.capacity_bytes".into(),
                message: e.to_string(),
            }
        })?;
        ftl.precondition(cfg.ftl.precondition, cfg.ftl.fullness);
        // a zoned drive keeps every zone's data in its own blocks
        let zoned = cfg.zns.clone().map(|z| {
            ftl.set_streams(z.zones(capacity) as u32);
            Box::new(super::zones::ZonedNs::new(z, capacity, unit))
        });
        // an FDP drive keeps every reclaim-unit handle's data in its own blocks
        let fdp = cfg.fdp.as_ref().and_then(|f| f.active_handles()).map(|h| {
            ftl.set_streams(h);
            let ru = cfg.nand.pages_per_block as u64 * cfg.nand.page_bytes;
            Box::new(super::fdp::Fdp::new(h, ru))
        });
        let mc = &cfg.ftl.map_cache;
        let map = mc
            .on()
            .then(|| MapCache::new(mc, ftl.logical_units(), cfg.ftl.precondition));
        let map_units = mc.flash_page_bytes().div_ceil(unit).max(1) as u32;
        let n = &cfg.nand;
        let ndies = (n.channels * n.dies_per_channel) as usize;
        let dies = (0..ndies)
            .map(|d| Die {
                channel: d as u32 / n.dies_per_channel,
                cur: Vec::with_capacity(16),
                ..Default::default()
            })
            .collect();
        Ok(Self {
            capacity,
            unit,
            upp,
            ppd: n.planes_per_die,

            upp_div: Div32::new(upp),
            ppd_div: Div32::new(n.planes_per_die),
            bpp_div: Div32::new(n.blocks_per_plane),
            types_div: Div32::new(n.cell.page_types() as u32),
            xfer_units_ns: (0..=upp as u64)
                .map(|k| xfer_ns(k * unit, n.bus_bytes_per_s))
                .collect(),
            xfer_page_ns: xfer_ns(n.page_bytes, n.bus_bytes_per_s),
            ftl,
            dies,
            busy_dies: 0,
            writes_queued: 0,
            channels: vec![Timeline::default(); n.channels as usize],
            programming: vec![0; n.channels as usize],
            link: Link::new(cfg.link_bytes_per_s, cfg.link_latency_ns, cfg.link_duplex),
            ctrl: Timeline::default(),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            next_pf_id: 0,
            tags: crate::units::Tags::new(cfg.tags),
            buf_cap: cfg.write_buffer_bytes / unit,
            buf_used: 0,
            buf_wait: VecDeque::new(),
            inbuf: InBuf::with_hasher(foldhash::fast::FixedState::with_seed(0x696e_6275_665f_7061)),
            prog_seq: 0,
            done_base: 0,
            done_window: VecDeque::new(),
            flush_wait: VecDeque::new(),
            last_read_end: NONE,
            pf: BTreeMap::new(),
            pf_end: 0,
            pf_waiters: Vec::new(),
            wpipe: VecDeque::new(),
            stats: Stats::default(),
            spread: Spread::new(&cfg.nand, cfg.ftl.seed),
            map,
            map_units,
            slc: n.slc_cache.clone().map(|c| {
                let mean = n.program_ns.iter().sum::<u64>() as f64 / n.program_ns.len() as f64;
                let planes = (n.channels * n.dies_per_channel * n.planes_per_die) as u64;
                SlcCache::new(c, unit, n.cell.page_types(), planes, upp as u64, mean)
            }),
            zoned,
            fdp,
            cfg,
        })
    }

    /// Channel time of `units` units (`xfer_ns` of their bytes at the
    /// bus rate).
    #[inline]
    pub(super) fn xfer_units(&self, units: u32) -> u64 {
        match self.xfer_units_ns.get(units as usize) {
            Some(&t) => t,
            None => xfer_ns(units as u64 * self.unit, self.cfg.nand.bus_bytes_per_s),
        }
    }

    /// The bytes of request `r` that fall in its units `lpn..lpn + n`
    /// (what crosses the host link for them: a request smaller than the
    /// mapping unit moves only its own bytes).
    #[inline]
    pub(super) fn bytes_in(&self, r: &Req, lpn: u32, n: u32) -> u64 {
        let start = r.lpn0 as u64 * self.unit + r.skip as u64;
        let end = start + r.bytes;
        let lo = (lpn as u64 * self.unit).max(start);
        let hi = ((lpn + n) as u64 * self.unit).min(end);
        hi.saturating_sub(lo)
    }

    /// The FTL (for tests and reports).
    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    #[inline]
    pub(super) fn tok(kind: u64, idx: u32) -> u64 {
        ((idx as u64) << 2) | kind
    }

    fn alloc_req(&mut self, r: Req) -> u32 {
        crate::units::slab_insert(&mut self.reqs, &mut self.free_reqs, r)
    }

    pub(super) fn finish_read(&mut self, ri: u32, cx: &mut Cx) {
        let lat = self.link.latency_ns(Dir::ToHost);
        let rm = &mut self.reqs[ri as usize];
        let crit = rm.crit;
        crit.merge_into(&mut rm.bd);
        rm.bd.add(Component::Link, lat);
        let at = rm.data_done + lat;
        self.finish(at, ri, cx);
    }

    /// Report completion at `at` and release the request's tag.
    pub(super) fn finish(&mut self, at: Nanos, ri: u32, cx: &mut Cx) {
        let r = &mut self.reqs[ri as usize];
        cx.done_since_ref(r.id, r.arrival, at, &r.bd);
        r.op = None;
        self.free_reqs.push(ri);
        if self.slc.is_some() {
            self.slc_done(at);
        }
        if let Some(next) = self.tags.release() {
            let t = at.max(self.reqs[next as usize].arrival);
            cx.wake(t, Self::tok(EV_ADMIT, next));
        }
    }
}

impl Device for Ssd {
    fn zone_bytes(&self) -> Option<u64> {
        self.cfg.zns.as_ref().map(|z| z.zone_bytes)
    }

    fn zone_report(&self) -> Option<Vec<crate::device::ZoneReport>> {
        self.zoned.as_ref().map(|z| {
            (0..z.zones.len())
                .map(|i| crate::device::ZoneReport {
                    write_pointer: z.zones.write_pointer(i),
                    open: z.zones.state(i).is_open(),
                })
                .collect()
        })
    }

    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let lpns = self.ftl.logical_units() as u64;
        let (lpn0, units) = if self.zoned.is_some() {
            match self.zoned_request(now, &req, cx) {
                Some(r) => r,
                None => return,
            }
        } else if matches!(req.op, Op::Flush) || req.len == 0 {
            (0, 0)
        } else {
            let first = (req.offset / self.unit).min(lpns);
            let last = (req.offset + req.len).div_ceil(self.unit).min(lpns);
            (first as u32, (last - first) as u32)
        };
        if units > 0 && matches!(req.op, Op::Read | Op::Write) {
            // its mapping entry is needed when the command has been parsed
            self.ftl.prefetch(lpn0);
        }
        let durable = req.op == Op::Write && (req.fua || self.buf_cap == 0);
        if let Some(s) = &mut self.slc {
            s.arrive(now);
        }
        let handle = match &mut self.fdp {
            Some(f) if req.op == Op::Write => f.handle_of(req.placement),
            _ => 0,
        };
        let ri = self.alloc_req(Req {
            id: req.id,
            op: Some(req.op),
            arrival: now,
            lpn0,
            units,
            bytes: req.len,
            skip: if units > 0 {
                (req.offset % self.unit) as u32
            } else {
                0
            },
            durable,
            handle,
            ..Default::default()
        });
        if self.tags.arrive(ri) {
            self.admit(now, ri, cx);
        }
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let idx = (token >> 2) as u32;
        match token & 3 {
            EV_DIE => self.die_done(now, idx, cx),
            EV_RCMD => self.read_cmd(now, idx, cx),
            EV_WREADY => self.write_ready(now, idx, cx),
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
        self.buf_cap > 0
    }

    /// A unit of the range maps to a page still in the DRAM write buffer
    /// (not yet programmed).
    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        if self.inbuf.is_empty() {
            return false;
        }
        let lpns = self.ftl.logical_units() as u64;
        let first = (offset / self.unit).min(lpns) as u32;
        let last = (offset + len.max(1)).div_ceil(self.unit).min(lpns) as u32;
        (first..last).any(|lpn| {
            self.ftl
                .lookup(lpn)
                .is_some_and(|ppa| self.inbuf.contains_key(&(ppa / self.upp)))
        })
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        let el = now.max(1) as f64;
        let frac = |b: u64| crate::units::busy_fraction(b, now);
        let mut utilisation = vec![
            Utilisation {
                resource: "link.device_to_host".into(),
                busy: frac(self.link.busy_ns(Dir::ToHost)),
            },
            Utilisation {
                resource: "link.host_to_device".into(),
                busy: frac(self.link.busy_ns(Dir::ToDevice)),
            },
            Utilisation {
                resource: "controller".into(),
                busy: frac(self.ctrl.busy_ns),
            },
        ];
        let nch = self.channels.len().max(1) as f64;
        utilisation.push(Utilisation {
            resource: "channels".into(),
            busy: self.channels.iter().map(|c| frac(c.busy_ns)).sum::<f64>() / nch,
        });
        let nd = self.dies.len().max(1) as f64;
        utilisation.push(Utilisation {
            resource: "dies".into(),
            busy: self.dies.iter().map(|d| frac(d.busy_ns)).sum::<f64>() / nd,
        });
        let (units, max, mean) = self.ftl.wear();
        let inplace = self.ftl.mapping() == Mapping::InPlace;
        let wear = Wear {
            unit: if inplace {
                "page programs per block".into()
            } else {
                "block erases".into()
            },
            units,
            max,
            mean,
        };
        let c = self.ftl.counters;
        let s = &self.stats;
        let mut counters = vec![
            ("host_units_written".to_string(), c.host_units as f64),
            (
                "write_amplification".to_string(),
                self.ftl.write_amplification(),
            ),
            ("gc_runs".to_string(), c.gc_runs as f64),
            ("gc_units_moved".to_string(), c.moved_units as f64),
            ("padded_units".to_string(), c.padded_units as f64),
            ("erases".to_string(), c.erases as f64),
            ("wear_leveling_moves".to_string(), c.wl_moves as f64),
            ("trimmed_units".to_string(), c.trimmed_units as f64),
            ("nand_reads".to_string(), s.nand_reads as f64),
            ("nand_programs".to_string(), s.nand_programs as f64),
            ("gc_reads".to_string(), s.gc_reads as f64),
            ("gc_programs".to_string(), s.gc_programs as f64),
            ("buffer_read_hits".to_string(), s.buffer_hits as f64),
            ("unmapped_reads".to_string(), s.unmapped_reads as f64),
            ("prefetched_units".to_string(), s.prefetched as f64),
            ("prefetch_hits".to_string(), s.prefetch_hits as f64),
            ("buffer_full_waits".to_string(), s.buffer_waits as f64),
            ("rmw_reads".to_string(), s.rmw_reads as f64),
        ];
        if self.spread.retry_p > 0.0 {
            counters.push(("read_retries".to_string(), s.read_retries as f64));
        }
        if self.cfg.nand.suspend {
            counters.push(("suspends".to_string(), s.suspends as f64));
        }
        if let Some(slc) = &self.slc {
            let free = (self.ftl.logical_units() as u64).saturating_sub(self.ftl.mapped_units());
            counters.extend(slc.counters(free));
            // folding programs each folded unit a second time
            if c.host_units > 0 {
                counters[1].1 += slc.folded_units as f64 / c.host_units as f64;
            }
        }
        if let Some(z) = &self.zoned {
            counters.extend(z.counters());
        }
        if let Some(f) = &self.fdp {
            counters.extend(f.counters(self.unit, &c));
        }
        if let Some(m) = &self.map {
            let c = m.counters;
            counters.extend([
                ("map_compact".to_string(), c.compact as f64),
                ("map_hits".to_string(), c.hits as f64),
                ("map_loads".to_string(), c.loads as f64),
                ("map_writebacks".to_string(), c.writebacks as f64),
                ("map_fragmented".to_string(), c.fragmented as f64),
                ("map_nand_reads".to_string(), s.map_reads as f64),
                ("map_nand_programs".to_string(), s.map_programs as f64),
            ]);
        }
        let free_min = (0..self.ftl.geometry().planes)
            .map(|p| self.ftl.free_blocks(p))
            .min()
            .unwrap_or(0);
        counters.push(("free_blocks_min_plane".to_string(), free_min as f64));
        if self.cfg.ftl.precondition != Precondition::Fresh {
            // what preconditioning did, apart from the measured jobs
            // (deterministic: no wall time here)
            let pc = &self.ftl.preconditioned;
            counters.extend([
                (
                    "precondition_units_written".to_string(),
                    pc.units_written as f64,
                ),
                (
                    "precondition_units_moved".to_string(),
                    pc.units_moved as f64,
                ),
                ("precondition_erases".to_string(), pc.erases as f64),
                (
                    "precondition_units_replayed".to_string(),
                    pc.units_replayed as f64,
                ),
                (
                    "precondition_derived".to_string(),
                    if pc.derived { 1.0 } else { 0.0 },
                ),
            ]);
        }
        if now > 0 && c.erases > 0 && units > 0 {
            // years until the mean block reaches its endurance at this run's
            // erase rate (wear levelling keeps the blocks near the mean)
            let per_block_per_s = c.erases as f64 / units as f64 / (el / 1e9);
            let left = (self.cfg.nand.endurance as f64 - mean).max(0.0);
            counters.push((
                "lifetime_years_at_this_rate".to_string(),
                left / per_block_per_s / 3.156e7,
            ));
        }
        DeviceReport {
            utilisation,
            power: Vec::new(),
            wear: Some(wear),
            counters,
        }
    }
}

impl Ssd {
    /// A command completed at `at`: if it was the last outstanding, the
    /// drive goes quiet once its dies have drained what is queued (their
    /// current batch, then their queued programs at the native rate).
    pub(super) fn slc_done(&mut self, at: Nanos) {
        // (the quiet time matters only when the last outstanding command
        // completes: not looked for over every die at every completion)
        if self.slc.as_ref().is_some_and(|s| !s.last_outstanding()) {
            if let Some(s) = &mut self.slc {
                s.done(at, at);
            }
            return;
        }
        debug_assert_eq!(
            (self.busy_dies as usize, self.writes_queued as usize),
            (
                self.dies.iter().filter(|d| d.busy).count(),
                self.dies.iter().map(|d| d.writes.len()).sum()
            )
        );
        if self.busy_dies == 0 && self.writes_queued == 0 {
            // every die idle with nothing to write: quiet now
            if let Some(s) = &mut self.slc {
                s.done(at, at);
            }
            return;
        }
        let n = &self.cfg.nand;
        let prog = n.program_ns.iter().sum::<u64>() / n.program_ns.len() as u64;
        let ppd = n.planes_per_die.max(1) as u64;
        let quiet = self
            .dies
            .iter()
            .map(|d| {
                let end = if d.busy { d.end } else { at };
                // (no division for a die with no writes queued: a 64-bit
                // division per die was a tenth of a read-only run's time)
                match d.writes.len() as u64 {
                    0 => end,
                    w => end + w * prog / ppd,
                }
            })
            .max()
            .unwrap_or(at);
        if let Some(s) = &mut self.slc {
            s.done(at, quiet);
        }
    }
}
