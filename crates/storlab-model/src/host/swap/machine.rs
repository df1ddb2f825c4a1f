//! The swap model's machine: DRAM frames, page tables, the swap map,
//! reclaimers, the swap device behind its host stack, and the event queue;
//! building it for a run, the event loop, and the swap IO it issues.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::SeedableRng;
use rand_pcg::Pcg64;

use crate::config::{ConfigError, PresetStore};
use crate::device::Op;
use crate::host::config::{CompletionMode, FileSystem};
use crate::host::io::{HostCx, HostIo, IoDone};
use crate::host::stack::Host;
use crate::system::{DeviceClass, SystemConfig};
use crate::units::{Rw, Timeline};

use super::config::{validate, SwapConfig, NONE, PAGE, SWAPFILE_CLUSTER, SWAP_CLUSTER_MAX};
use super::workload::{MemReport, MemWorkload, SwapError};

/// Tokens of the swap model's own events (the host's use bit 63 and the
/// device's stay below bit 61).
pub(super) const MY_BIT: u64 = 1 << 62;
pub(super) const KSWAPD_BIT: u64 = 1 << 40;

#[derive(Clone, Copy, Default)]
pub(super) struct Frame {
    pub(super) page: u32,
    pub(super) slot: u32,
    pub(super) mapped: bool,
    pub(super) referenced: bool,
    pub(super) dirty: bool,
    pub(super) reading: bool,
    pub(super) writeback: bool,
    /// Read ahead and not yet faulted.
    pub(super) ahead: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Touch,
    Random,
    Done,
}

pub(super) struct Thread {
    pub(super) rng: Pcg64,
    pub(super) phase: Phase,
    /// Accesses done in this phase.
    pub(super) n: u64,
    pub(super) page: u32,
    /// Fault entry already paid for the current access.
    pub(super) entered: bool,
    /// Direct reclaim done for the current fault.
    pub(super) reclaimed: bool,
    pub(super) fault_start: u64,
    /// The thread's pending event ends a stretch of computation (it is on
    /// a CPU and receives shootdown IPIs), not a wait.
    pub(super) on_cpu: bool,
    /// Shootdowns counted up to the start of the computation.
    pub(super) ipi_seen: u64,
    /// The pending event ends an access's computation, which is counted
    /// in the machine's `streaming` (the threads sharing DRAM bandwidth).
    pub(super) streaming: bool,
    /// The current access stores.
    pub(super) write: bool,
    /// Slots of this thread's direct-reclaim batch, written on resume.
    pub(super) batch: Vec<u32>,
    /// Next page of a `Stream` pattern's sequential stream.
    pub(super) stream: u64,
    /// Pages written so far into each bucket of a `Scatter` pattern.
    pub(super) fronts: Vec<u64>,
}

pub(super) struct Kswapd {
    pub(super) running: bool,
    pub(super) batch: Vec<u32>,
}

#[derive(Clone, Copy)]
pub(super) struct Req {
    pub(super) write: bool,
    pub(super) start: u32,
    pub(super) n: u32,
    pub(super) waiter: u32,
}

/// The machine: DRAM frames, page tables, swap map, reclaimers, the swap
/// device behind its host stack, and the event queue.
pub(super) struct Machine<'a> {
    pub(super) cfg: &'a SwapConfig,
    pub(super) w: &'a MemWorkload,
    pub(super) access_ns: u64,
    pub(super) min: usize,
    pub(super) low: usize,
    pub(super) high: usize,
    pub(super) frames: Vec<Frame>,
    pub(super) free: Vec<u32>,
    pub(super) hand: usize,
    pub(super) page_frame: Vec<u32>,
    pub(super) page_slot: Vec<u32>,
    pub(super) slot_owner: Vec<u32>,
    pub(super) cluster_used: Vec<u16>,
    /// Whole clusters with no slot in use (skips the search when none).
    pub(super) free_clusters: usize,
    pub(super) slot_cursor: u32,
    pub(super) cluster_left: u32,
    pub(super) threads: Vec<Thread>,
    pub(super) kswapd: Vec<Kswapd>,
    /// (frame, thread) waiting for a read in flight.
    pub(super) read_waiters: Vec<(u32, u32)>,
    pub(super) frame_waiters: VecDeque<u32>,
    pub(super) writeback: usize,
    pub(super) inflight: usize,
    pub(super) writes_inflight: usize,
    pub(super) congested_at: usize,
    pub(super) reqs: Vec<Req>,
    pub(super) reqs_free: Vec<u32>,
    pub(super) host: Host,
    pub(super) cx: HostCx,
    pub(super) dones: Vec<IoDone>,
    pub(super) heap: BinaryHeap<Reverse<(u64, u64, u64)>>,
    pub(super) seq: u64,
    pub(super) rep: MemReport,
    pub(super) fault_ns_sum: u64,
    pub(super) touched_done: u32,
    pub(super) random_done: u32,
    pub(super) t0: u64,
    pub(super) anon_lock: Timeline,
    /// The swap device's driver takes bios directly, without a request
    /// queue (a device the CPU serves synchronously, `completion = "cpu"`:
    /// the RAM disk's `make_request`), so nothing merges the one-page bios
    /// of `swap_readpage` and `swap_writepage`: each page is a request.
    pub(super) bio_per_page: bool,
    pub(super) stuck: Option<u64>,
    /// Shootdowns since the start (not reset with the report).
    pub(super) shootdowns_total: u64,
    /// Threads in an access's computation (sharing the DRAM bandwidth).
    pub(super) streaming: u32,
}

/// The `[swap]` table of `sys`, validated, with DRAM as its fixed device.
fn swap_config(sys: &SystemConfig) -> Result<&SwapConfig, SwapError> {
    let cfg = sys.swap.as_ref().ok_or_else(|| ConfigError::Invalid {
        field: "swap".into(),
        message: "the preset has no [swap] table".into(),
    })?;
    validate(cfg)?;
    if sys.device.class != DeviceClass::Fixed {
        return Err(ConfigError::Invalid {
            field: "device.class".into(),
            message: "the swap model's memory is a fixed device (its latency_ns is a DRAM access)"
                .into(),
        }
        .into());
    }
    Ok(cfg)
}

/// Run `w` on the system `sys` (a preset with a `[swap]` table), looking
/// the swap device up in `store`.
pub fn run(
    sys: &SystemConfig,
    store: &PresetStore,
    w: &MemWorkload,
) -> Result<MemReport, SwapError> {
    let cfg = swap_config(sys)?;
    let (_, dc) = SystemConfig::load(store, &cfg.device, &cfg.device_set)?;
    run_with_device(sys, store, &dc, w)
}

/// As [`run`], with the swap device's configuration given (a preset
/// already loaded with its overrides) instead of `swap.device`.
pub fn run_with_device(
    sys: &SystemConfig,
    store: &PresetStore,
    dc: &SystemConfig,
    w: &MemWorkload,
) -> Result<MemReport, SwapError> {
    let cfg = swap_config(sys)?;
    let device = dc.build_device_in(store)?;
    if cfg.swap_bytes > device.capacity() {
        return Err(ConfigError::Invalid {
            field: "swap.swap_bytes".into(),
            message: format!(
                "{} is more than the swap device's {} bytes",
                cfg.swap_bytes,
                device.capacity()
            ),
        }
        .into());
    }
    if w.threads == 0 || w.pages_per_thread == 0 {
        return Err(SwapError::Workload("no threads or no pages".into()));
    }
    let frac = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
    if !frac(w.write_fraction) {
        return Err(SwapError::Workload(format!(
            "write_fraction {} is not between 0 and 1",
            w.write_fraction
        )));
    }
    w.pattern.check()?;
    let pages = w.threads as u64 * w.pages_per_thread;
    // the swap device's driver keeps some of the DRAM for itself
    let driver = dc.host.driver_memory_bytes;
    if driver >= sys.device.capacity_bytes {
        return Err(SwapError::Workload(format!(
            "the swap device's driver keeps {driver} bytes (host.driver_memory_bytes) of {} bytes of DRAM",
            sys.device.capacity_bytes
        )));
    }
    let nframes = (sys.device.capacity_bytes - driver) / PAGE;
    let nslots = cfg.swap_bytes / PAGE;
    if pages >= NONE as u64 || nframes >= NONE as u64 {
        return Err(SwapError::Workload("more than 2^32 pages".into()));
    }
    let min_kib = if cfg.min_free_kbytes > 0 {
        cfg.min_free_kbytes
    } else {
        // init_per_zone_wmark_min: int_sqrt(lowmem_kbytes * 16), clamped
        (((nframes * 4 * 16) as f64).sqrt() as u64).clamp(128, 65536)
    };
    let min = (min_kib / 4) as usize;
    let low = min + min / 4;
    let high = min + min / 2;
    if nframes as usize <= high + SWAP_CLUSTER_MAX * 2 {
        return Err(SwapError::Workload(format!(
            "{nframes} page frames: not above the high watermark ({high}) and a reclaim batch"
        )));
    }
    if pages > nframes + nslots - (high as u64) {
        return Err(SwapError::Workload(format!(
            "{pages} pages do not fit in {nframes} frames and {nslots} swap slots"
        )));
    }
    // swap IO enters the block layer from the kernel, not by a system call
    let mut hc = dc.host.clone();
    hc.syscall_entry_ns = Rw { read: 0, write: 0 };
    hc.syscall_exit_ns = Rw { read: 0, write: 0 };
    hc.file_system = FileSystem::None;
    let host = Host::new(hc, device, w.threads + cfg.kswapd_threads);
    let threads = (0..w.threads)
        .map(|t| Thread {
            rng: Pcg64::seed_from_u64(w.seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            phase: Phase::Touch,
            n: 0,
            page: NONE,
            entered: false,
            reclaimed: false,
            fault_start: 0,
            on_cpu: false,
            ipi_seen: 0,
            streaming: false,
            write: true,
            batch: Vec::with_capacity(SWAP_CLUSTER_MAX),
            stream: 0,
            fronts: Vec::new(),
        })
        .collect();
    let mut m = Machine {
        cfg,
        w,
        access_ns: sys.device.latency_ns,
        min,
        low,
        high,
        frames: vec![
            Frame {
                page: NONE,
                slot: NONE,
                ..Frame::default()
            };
            nframes as usize
        ],
        free: (0..nframes as u32).rev().collect(),
        hand: 0,
        page_frame: vec![NONE; pages as usize],
        page_slot: vec![NONE; pages as usize],
        slot_owner: vec![NONE; nslots as usize],
        cluster_used: vec![0; nslots.div_ceil(SWAPFILE_CLUSTER as u64) as usize],
        free_clusters: (nslots / SWAPFILE_CLUSTER as u64) as usize,
        slot_cursor: 0,
        cluster_left: 0,
        threads,
        kswapd: (0..cfg.kswapd_threads)
            .map(|_| Kswapd {
                running: false,
                batch: Vec::with_capacity(SWAP_CLUSTER_MAX),
            })
            .collect(),
        read_waiters: Vec::new(),
        frame_waiters: VecDeque::new(),
        writeback: 0,
        inflight: 0,
        writes_inflight: 0,
        congested_at: (cfg.nr_requests - cfg.nr_requests / 8 + 1) as usize,
        reqs: Vec::new(),
        reqs_free: Vec::new(),
        host,
        cx: HostCx::default(),
        dones: Vec::new(),
        heap: BinaryHeap::new(),
        seq: 0,
        rep: MemReport::default(),
        fault_ns_sum: 0,
        touched_done: 0,
        random_done: 0,
        t0: 0,
        anon_lock: Timeline::default(),
        bio_per_page: dc.host.completion == CompletionMode::Cpu,
        stuck: None,
        shootdowns_total: 0,
        streaming: 0,
    };
    for t in 0..w.threads {
        m.next_access(0, t);
    }
    m.run_loop()?;
    Ok(m.report())
}

impl Machine<'_> {
    pub(super) fn push(&mut self, at: u64, token: u64) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, token)));
    }

    fn run_loop(&mut self) -> Result<(), SwapError> {
        while self.random_done < self.w.threads {
            if let Some(at) = self.stuck {
                return Err(SwapError::Stuck(at));
            }
            let Some(Reverse((now, _, token))) = self.heap.pop() else {
                return Err(SwapError::Stuck(self.t0));
            };
            if token & MY_BIT != 0 {
                let idx = token & !MY_BIT;
                if idx & KSWAPD_BIT != 0 {
                    self.kswapd_step(now, (idx & !KSWAPD_BIT) as usize);
                } else {
                    self.thread_event(now, idx as u32);
                }
            } else {
                self.host.on_event(now, token, &mut self.cx);
                self.drain(now);
            }
        }
        Ok(())
    }

    /// Move the host's wake-ups to the queue and act on finished IO.
    fn drain(&mut self, now: u64) {
        loop {
            for i in 0..self.cx.dev.wakeups.len() {
                let (at, tok) = self.cx.dev.wakeups[i];
                self.push(at, tok);
            }
            self.cx.dev.wakeups.clear();
            if self.cx.done.is_empty() {
                return;
            }
            std::mem::swap(&mut self.dones, &mut self.cx.done);
            let mut d = std::mem::take(&mut self.dones);
            for io in d.drain(..) {
                self.io_done(now, io.id as u32);
            }
            self.dones = d;
        }
    }

    fn submit(&mut self, now: u64, thread: u32, write: bool, start: u32, n: u32, waiter: u32) {
        let r = Req {
            write,
            start,
            n,
            waiter,
        };
        let i = if let Some(i) = self.reqs_free.pop() {
            self.reqs[i as usize] = r;
            i
        } else {
            self.reqs.push(r);
            (self.reqs.len() - 1) as u32
        };
        self.inflight += 1;
        self.rep.io_depths[crate::units::depth_bucket(self.inflight as u64)] += 1;
        if write {
            self.writes_inflight += 1;
            self.rep.swap_writes += 1;
            self.rep.pages_written += n as u64;
        } else {
            self.rep.swap_reads += 1;
            self.rep.pages_read += n as u64;
        }
        let io = HostIo {
            id: i as u64,
            thread,
            op: if write { Op::Write } else { Op::Read },
            offset: start as u64 * PAGE,
            len: n as u64 * PAGE,
            fua: false,
            poll: false,
            placement: None,
        };
        self.host.submit(now, io, &mut self.cx);
        self.drain(now);
    }

    /// Submit `n` contiguous slots from `start`: one request when the
    /// block layer merges the pages' bios (a request queue), one request
    /// per page when the driver takes bios directly (`bio_per_page`).
    /// `fault` is the faulting thread's slot (its request wakes `thread`),
    /// or NONE.
    pub(super) fn submit_run(
        &mut self,
        now: u64,
        thread: u32,
        write: bool,
        start: u32,
        n: u32,
        fault: u32,
    ) {
        let waiter = |s: u32, k: u32| {
            if (s..s + k).contains(&fault) {
                thread
            } else {
                NONE
            }
        };
        if self.bio_per_page {
            for s in start..start + n {
                self.submit(now, thread, write, s, 1, waiter(s, 1));
            }
        } else {
            self.submit(now, thread, write, start, n, waiter(start, n));
        }
    }

    fn io_done(&mut self, now: u64, i: u32) {
        let r = self.reqs[i as usize];
        self.reqs_free.push(i);
        self.inflight -= 1;
        if r.write {
            self.writes_inflight -= 1;
        }
        for s in r.start..r.start + r.n {
            let p = self.slot_owner[s as usize];
            let f = self.page_frame[p as usize];
            let fr = &mut self.frames[f as usize];
            if r.write {
                fr.writeback = false;
                self.writeback -= 1;
                if !fr.mapped && !fr.dirty && !fr.reading {
                    self.free_frame(f);
                }
            } else {
                fr.reading = false;
                // threads waiting for this page retry their access
                let mut k = 0;
                while k < self.read_waiters.len() {
                    if self.read_waiters[k].0 == f {
                        let (_, t) = self.read_waiters.swap_remove(k);
                        self.push(now, MY_BIT | t as u64);
                    } else {
                        k += 1;
                    }
                }
            }
        }
        if !r.write && r.waiter != NONE {
            // the faulting thread's page is in: map it and go on
            let t = r.waiter;
            let p = self.threads[t as usize].page;
            let f = self.page_frame[p as usize];
            self.rep.major_faults += 1;
            self.fault_ns_sum += now + self.cfg.map_ns - self.threads[t as usize].fault_start;
            self.map(f, t);
            let done = now + self.cfg.map_ns + self.access_ns + self.visit_ns(t);
            self.finish_access(done, t);
        }
        self.wake_frame_waiters(now);
    }

    fn report(&self) -> MemReport {
        let mut r = self.rep.clone();
        r.accesses_per_s = if r.elapsed_ns > 0 {
            r.accesses as f64 * 1e9 / r.elapsed_ns as f64
        } else {
            0.0
        };
        r.major_fault_ns = if r.major_faults > 0 {
            self.fault_ns_sum as f64 / r.major_faults as f64
        } else {
            0.0
        };
        r.pages_per_write = if r.swap_writes > 0 {
            r.pages_written as f64 / r.swap_writes as f64
        } else {
            0.0
        };
        r
    }
}
