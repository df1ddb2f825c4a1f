//! Non-volatile main memory (docs/spec/nvmm.md): a persistent-memory file mapped into
//! the application, used with loads and stores, with PMEP's knobs (L_READ,
//! Th_BW, L_WBAR, M_FLUSH, M_SYNC).
//!
//! As a block device for fio-style workloads it behaves like a DAX file:
//! the requesting CPU copies (the host runs it in `CompletionMode::Cpu`);
//! a read pays one exposed miss (L_READ, floored at PMEP's real DRAM
//! latency) plus the throttled bandwidth; a write pays the bandwidth and
//! dirties its pages; a FUA write is made durable as the kernel's
//! non-temporal copy is (PMFS's `memcpy_to_nvmm` on a CPU without `clwb`,
//! Linux's pmem driver's `memcpy_flushcache`): its stores bypass the
//! caches, so only an edge line not 8-byte aligned is flushed, then the
//! fence and L_WBAR (until 2026-12-01 every line of it was flushed with
//! M_FLUSH, as stores through the caches would be); a flush (fio's
//! fsync/fdatasync) is an msync of the whole mapped region: M_SYNC decides
//! which lines are flushed (default: every line; SPF: only pages written
//! since the last sync), M_FLUSH what each costs, then one fence and L_WBAR.
//! The cost arithmetic is `storlab_pmem::model`, shared with the real
//! runtime's documentation and tests.

use std::collections::BTreeSet;

use storlab_pmem::model::NvmmParams;

use crate::breakdown::{Breakdown, Component};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::report::{DeviceReport, Utilisation};
use crate::units::Timeline;

/// The NVMM device.
pub struct Nvmm {
    p: NvmmParams,
    capacity: u64,
    bus: Timeline,
    dirty: BTreeSet<u64>,
    lines_flushed: u64,
    syncs: u64,
    sync_ns: u64,
}

impl Nvmm {
    /// Build from validated parameters; `capacity` is the mapped region.
    pub fn new(p: NvmmParams, capacity: u64) -> Self {
        Self {
            p,
            capacity,
            bus: Timeline::default(),
            dirty: BTreeSet::new(),
            lines_flushed: 0,
            syncs: 0,
            sync_ns: 0,
        }
    }
}

impl Device for Nvmm {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let mut bd = Breakdown::default();
        let p = &self.p;
        let at = match req.op {
            Op::Read | Op::Write => {
                let len = req.len.max(1);
                let bytes_ns = (len as f64 / p.bandwidth_bytes_per_s() * 1e9).ceil() as u64;
                // the throttled memory channels are shared by all threads
                let start = self.bus.reserve(now, bytes_ns);
                bd.add(Component::DeviceQueue, start - now);
                let mut t = start;
                if req.op == Op::Read {
                    let c = p.read_ns(len, 1);
                    bd.add(Component::Media, c);
                    t += c;
                } else {
                    let c = p.write_ns(len);
                    bd.add(Component::Link, c);
                    t += c;
                    let pb = p.page_bytes;
                    for page in req.offset / pb..=(req.offset + len - 1) / pb {
                        self.dirty.insert(page);
                    }
                    if req.fua {
                        // the kernel's copy is non-temporal: its lines
                        // are not flushed one by one (module notes)
                        let cost = p.nt_write_persist_cost(req.offset, len);
                        self.lines_flushed += cost.lines_flushed;
                        bd.add(Component::Background, cost.total_ns());
                        t += cost.total_ns();
                    }
                }
                t
            }
            Op::Trim => now,
            Op::Flush => {
                let dirty: Vec<u64> = self.dirty.iter().copied().collect();
                let plan = p.sync_plan(0, self.capacity, &dirty);
                if plan.cleaned_pages > 0 {
                    let (lo, hi) = (plan.clear_first, plan.clear_end);
                    self.dirty.retain(|pg| *pg < lo || *pg >= hi);
                }
                let cost = p.sync_cost(&plan);
                self.lines_flushed += cost.lines_flushed;
                self.syncs += 1;
                self.sync_ns += cost.total_ns();
                bd.add(Component::Background, cost.flush_ns + cost.scan_ns);
                bd.add(Component::Controller, cost.barrier_ns);
                now + cost.total_ns()
            }
        };
        cx.done(req.id, at, bd);
    }
    fn on_event(&mut self, _now: Nanos, _token: u64, _cx: &mut Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, now: Nanos) -> DeviceReport {
        DeviceReport {
            utilisation: vec![Utilisation {
                resource: "nvmm_bandwidth".into(),
                busy: self.bus.utilisation(now),
            }],
            counters: vec![
                ("lines_flushed".into(), self.lines_flushed as f64),
                ("syncs".into(), self.syncs as f64),
                (
                    "sync_ns_mean".into(),
                    self.sync_ns as f64 / self.syncs.max(1) as f64,
                ),
                ("dirty_pages_now".into(), self.dirty.len() as f64),
            ],
            ..Default::default()
        }
    }
}
