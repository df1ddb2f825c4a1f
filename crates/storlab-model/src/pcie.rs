//! A PCIe-attached NVM array: HASTE and Moneta (docs/spec/pcie-arrays.md).
//!
//! Request path inside the device: command queue(s) and scheduler policy →
//! split into transfers of at most one buffer (by size and alignment) →
//! writes: DMA host→buffer over the host-to-device link direction, wait on a
//! scoreboard until the target controller's in-queue is free, ring transfer,
//! buffer freed, controller commits the rows; reads: command to the
//! controller, rows read into its out-queue, wait for a buffer, ring
//! transfer, DMA buffer→host over the device-to-host direction, buffer
//! freed. A request completes when all its transfers have.
//!
//! Mechanisms, each a configuration switch so variants differ only by it:
//! one FIFO or separate read/write queues served round-robin (`queues`),
//! round-robin between requests at transfer granularity (`balance`),
//! number/size of buffers, controllers, stripe, row size, media timing,
//! tags. Barriers (flushes) wait for everything before them and hold back
//! everything after them, in every policy.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::breakdown::Component;
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::report::{DeviceReport, Power, Utilisation};
use crate::units::{xfer_ns, FixedDiv, Rw, Timeline};
use crate::wear::StartGap;

/// How the device queues commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueuePolicy {
    /// One FIFO, processed in order (baseline Moneta, HASTE).
    One,
    /// A read queue and a write queue served round-robin (+2Q).
    ReadWrite,
}

/// Configuration of a PCIe NVM array. Units are in the names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieArrayConfig {
    /// PCIe lanes.
    pub link_lanes: u32,
    /// Bytes per second per lane per direction.
    pub lane_bytes_per_s: u64,
    /// Fixed DMA latency before data flows (read: device→host; write:
    /// host→device, a PCIe read round trip).
    pub dma_latency_ns: Rw,
    /// Command queues.
    pub queues: QueuePolicy,
    /// Round-robin between requests at transfer granularity.
    pub balance: bool,
    /// Outstanding requests the device accepts (tags).
    pub tags: u32,
    /// Scheduler buffers.
    pub buffers: u32,
    /// Bytes per scheduler buffer (the transfer size).
    pub buffer_bytes: u64,
    /// Ring bandwidth (bytes/s, shared by both directions).
    pub ring_bytes_per_s: u64,
    /// Fixed ring latency per transfer.
    pub ring_latency_ns: Rw,
    /// Memory controllers (1-8).
    pub controllers: u32,
    /// Striping unit across controllers.
    pub stripe_bytes: u64,
    /// Streaming rate of one controller once a row is open.
    pub controller_bytes_per_s: u64,
    /// Controller pipeline latency per access, fixed part (does not occupy
    /// the controller).
    pub controller_latency_ns: Rw,
    /// Controller pipeline latency per KiB moved (does not occupy the
    /// controller: the pipeline holds data in flight).
    #[serde(default)]
    pub controller_latency_ns_per_kib: Rw,
    /// Latency of one memory access to its first data beyond the media's
    /// row open, ns (the memory controller's command and read pipeline:
    /// issue, DRAM command timing, the data's way back through its
    /// FIFOs). Paid once per transfer on the critical path and charged to
    /// the memory access (`Component::Media`); does not occupy the
    /// controller. Default 0.
    #[serde(default)]
    pub memory_latency_ns: Rw,
    /// Row size: media latency is paid once per row opened.
    pub row_bytes: u64,
    /// Start-gap: move the gap every `start_gap_psi` writes (0: off).
    pub start_gap_psi: u64,
    /// Program cycles a line endures (for the lifetime estimate).
    pub endurance_writes: u64,
    /// Selective (partial) row writes: move only the bits written.
    pub selective_writes: bool,
}

/// The Moneta power model (docs/spec/pcie-arrays.md, "Power model").
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerConfig {
    /// Scheduler and DMA, idle and peak watts.
    pub scheduler_w: [f64; 2],
    /// Ring.
    pub ring_w: [f64; 2],
    /// Scheduler buffers.
    pub scheduler_buffers_w: [f64; 2],
    /// Each memory controller.
    pub controller_w: [f64; 2],
    /// Memory-controller buffers (each controller).
    pub controller_buffers_w: [f64; 2],
    /// PCIe interface.
    pub pcie_w: [f64; 2],
    /// Array write energy per bit moved array↔row buffer.
    pub array_write_pj_per_bit: f64,
    /// Array read energy per bit.
    pub array_read_pj_per_bit: f64,
    /// Row-buffer write energy per bit transferred.
    pub row_buffer_write_pj_per_bit: f64,
    /// Row-buffer read energy per bit transferred.
    pub row_buffer_read_pj_per_bit: f64,
    /// Background power per die with its clock off (idle), W; every die
    /// draws it all the time.
    pub background_idle_w_per_die: f64,
    /// Background power per bit of a row while the array accesses it (the
    /// media read or write latency of each row opened or written back), W.
    pub background_active_w_per_bit: f64,
    /// PCM dies per controller (data capacity over die density).
    pub dies_per_controller: u32,
}

/// Media timing: array read and write latency.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MediaConfig {
    /// Technology name (for reports).
    pub name: String,
    /// Array read latency (paid once per row opened).
    pub read_ns: u64,
    /// Array write latency.
    pub write_ns: u64,
}

const EV_DMA_DONE: u64 = 0; // write: first bytes in the buffer
const EV_RING_W: u64 = 1; // write: first bytes in the controller's in-queue
const EV_CTRL_FREE: u64 = 2; // controller can start its next op
const EV_CTRL_DONE: u64 = 3; // media op finished (write: transfer done; read: data in out-queue)
const EV_XFER_DONE: u64 = 4; // read: DMA to host finished
const EV_BUF_FREE: u64 = 6; // write: last byte left the buffer over the ring

/// [`xfer_ns`] at one rate, remembering the last length asked: a
/// request's transfers mostly share one size, and a 64-bit division costs
/// tens of cycles (several per simulated IO). Same answers as `xfer_ns`.
#[derive(Clone, Copy, Debug)]
struct RateNs {
    bytes_per_s: u64,
    len: u64,
    ns: u64,
}

impl RateNs {
    fn new(bytes_per_s: u64) -> Self {
        RateNs {
            bytes_per_s,
            len: 0,
            ns: xfer_ns(0, bytes_per_s),
        }
    }

    /// `xfer_ns(len, bytes_per_s)`.
    #[inline]
    fn ns(&mut self, len: u64) -> u64 {
        if len != self.len {
            self.len = len;
            self.ns = xfer_ns(len, self.bytes_per_s);
        }
        self.ns
    }
}

#[derive(Clone, Debug, Default)]
struct Req {
    id: u64,
    op: Option<Op>,
    offset: u64,
    len: u64,
    seq: u64,
    arrival: Nanos,
    issued: u64,
    pending: u32,
    done_all_issued: bool,
    /// Time waiting for a tag before admission (the request's own part of
    /// its breakdown: the rest is its last transfer's, in `xpath`, joined
    /// only in the completion).
    queued_ns: u64,
    last_done: Nanos,
}

/// A transfer's critical path by component: the only components it sets
/// (a whole [`crate::Breakdown`] per transfer was zeroed, filled and copied into
/// the completion: 160 bytes where 40 do).
#[derive(Clone, Copy, Debug, Default)]
struct XPath {
    /// Waiting for a buffer (device queue).
    queue: u64,
    /// The ring.
    interconnect: u64,
    /// The link and its DMA.
    link: u64,
    /// The controller's queue and pipeline.
    controller: u64,
    /// The memory access.
    media: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Xfer {
    req: u32,
    write: bool,
    offset: u64,
    len: u64,
    ctrl: u32,
    t_sched: Nanos,
    t_mark: Nanos,
    /// When the upstream stage delivers its last byte.
    stream_end: Nanos,
}

#[derive(Clone, Debug, Default)]
struct Ctrl {
    /// An EV_CTRL_FREE wake-up is scheduled.
    free_pending: bool,
    /// Ops that have arrived (writes over the ring, read commands), FIFO.
    queue: VecDeque<u32>,
    /// A write occupies the in-queue from its ring transfer until its commit
    /// starts.
    in_used: bool,
    /// A read occupies the out-queue from its start until its ring transfer.
    out_used: bool,
    /// Read commands accepted but not started.
    pending_reads: u32,
    /// Writes whose DMA is done, waiting for the in-queue (scoreboard).
    ring_waiters: VecDeque<u32>,
    tl: Timeline,
}

/// A PCIe NVM array device.
pub struct PcieArray {
    cfg: PcieArrayConfig,
    media: MediaConfig,
    power: PowerConfig,
    capacity: u64,
    /// Transfer times over the link (past u64 bytes/s the link is no
    /// bottleneck at all), the ring and a controller's stream.
    link_t: RateNs,
    ring_t: RateNs,
    ctrl_t: RateNs,
    /// Divisions by the stripe, row and buffer sizes and the controller
    /// count, done for every transfer.
    stripe_div: FixedDiv,
    row_div: FixedDiv,
    buf_div: FixedDiv,
    ctrl_div: FixedDiv,
    /// Rows per stripe (at least 1).
    stripe_rows_div: FixedDiv,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    xfers: Vec<Xfer>,
    /// Breakdown of each transfer's critical path (apart from `xfers`, which
    /// is copied often).
    xpath: Vec<XPath>,
    free_xfers: Vec<u32>,
    queues: [VecDeque<u32>; 2],
    rr: usize,
    tag_wait: VecDeque<u32>,
    in_device: u32,
    buffers_free: u32,
    /// Reads with data in a controller out-queue, waiting for a buffer.
    buffer_waiters: VecDeque<u32>,
    link: [Timeline; 2],
    ring: Timeline,
    ctrls: Vec<Ctrl>,
    wear: Vec<StartGap>,
    next_seq: u64,
    /// Completion flags of requests by seq, from `seq_base`.
    done_window: VecDeque<bool>,
    seq_base: u64,
    barriers: VecDeque<u32>,
    /// Requests that arrived behind a pending barrier.
    held: VecDeque<u32>,
    pumping: bool,
    last_grant_read: bool,
    /// Read transfers issued to a controller that have no buffer yet.
    reads_before_buffer: u32,
    // accounting
    busy_since: Option<Nanos>,
    busy_ns: u64,
    buffer_ns: u64,
    buffer_hold: [u64; 2],
    buffer_uses: [u64; 2],
    rows_read: u64,
    rows_written: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// Validate a PCIe array configuration.
pub fn validate(cfg: &PcieArrayConfig) -> Result<(), crate::config::ConfigError> {
    use crate::config::check_range;
    check_range("pcie.controllers", cfg.controllers, 1, 8)?;
    check_range("pcie.link_lanes", cfg.link_lanes, 1, 32)?;
    check_range("pcie.buffers", cfg.buffers, 1, 1024)?;
    check_range("pcie.buffer_bytes", cfg.buffer_bytes, 512, 1 << 24)?;
    check_range("pcie.tags", cfg.tags, 1, 65536)?;
    check_range("pcie.row_bytes", cfg.row_bytes, 64, 1 << 20)?;
    check_range("pcie.stripe_bytes", cfg.stripe_bytes, 512, 1 << 30)?;
    for (f, v) in [
        ("pcie.lane_bytes_per_s", cfg.lane_bytes_per_s),
        ("pcie.ring_bytes_per_s", cfg.ring_bytes_per_s),
        ("pcie.controller_bytes_per_s", cfg.controller_bytes_per_s),
    ] {
        check_range(f, v, 1, u64::MAX)?;
    }
    // an access latency beyond a second is a typo, and would overflow sums
    check_range(
        "pcie.memory_latency_ns.read",
        cfg.memory_latency_ns.read,
        0,
        1_000_000_000,
    )?;
    check_range(
        "pcie.memory_latency_ns.write",
        cfg.memory_latency_ns.write,
        0,
        1_000_000_000,
    )?;
    if !cfg.buffer_bytes.is_power_of_two() {
        return Err(crate::config::ConfigError::Invalid {
            field: "pcie.buffer_bytes".into(),
            message: format!("{} is not a power of two", cfg.buffer_bytes),
        });
    }
    Ok(())
}

impl PcieArray {
    /// Build from a validated configuration.
    pub fn new(
        cfg: PcieArrayConfig,
        media: MediaConfig,
        power: PowerConfig,
        capacity: u64,
    ) -> Self {
        let nctl = cfg.controllers as usize;
        let per_ctrl = capacity.div_ceil(cfg.controllers as u64);
        let lines = per_ctrl.div_ceil(cfg.row_bytes).max(1);
        let wear = (0..nctl)
            .map(|i| StartGap::new(lines, cfg.start_gap_psi, 0x5eed + i as u64))
            .collect();
        Self {
            link_t: RateNs::new(cfg.lane_bytes_per_s.saturating_mul(cfg.link_lanes as u64)),
            ring_t: RateNs::new(cfg.ring_bytes_per_s),
            ctrl_t: RateNs::new(cfg.controller_bytes_per_s),
            stripe_div: FixedDiv::new(cfg.stripe_bytes),
            row_div: FixedDiv::new(cfg.row_bytes),
            buf_div: FixedDiv::new(cfg.buffer_bytes),
            ctrl_div: FixedDiv::new(cfg.controllers as u64),
            stripe_rows_div: FixedDiv::new((cfg.stripe_bytes / cfg.row_bytes).max(1)),
            buffers_free: cfg.buffers,
            ctrls: vec![Ctrl::default(); nctl],
            wear,
            cfg,
            media,
            power,
            capacity,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            xfers: Vec::new(),
            xpath: Vec::new(),
            free_xfers: Vec::new(),
            queues: [VecDeque::new(), VecDeque::new()],
            rr: 0,
            tag_wait: VecDeque::new(),
            in_device: 0,
            buffer_waiters: VecDeque::new(),
            link: [Timeline::default(); 2],
            ring: Timeline::default(),
            next_seq: 0,
            done_window: VecDeque::new(),
            seq_base: 0,
            barriers: VecDeque::new(),
            held: VecDeque::new(),
            pumping: false,
            last_grant_read: false,
            reads_before_buffer: 0,
            busy_since: None,
            busy_ns: 0,
            buffer_ns: 0,
            buffer_hold: [0; 2],
            buffer_uses: [0; 2],
            rows_read: 0,
            rows_written: 0,
            bytes_read: 0,
            bytes_written: 0,
        }
    }

    #[inline]
    fn tok(kind: u64, idx: u32) -> u64 {
        ((idx as u64) << 3) | kind
    }

    fn alloc_req(&mut self, r: Req) -> u32 {
        crate::units::slab_insert(&mut self.reqs, &mut self.free_reqs, r)
    }

    fn alloc_xfer(&mut self, x: Xfer) -> u32 {
        let i = crate::units::slab_insert(&mut self.xfers, &mut self.free_xfers, x);
        if i as usize == self.xpath.len() {
            self.xpath.push(XPath::default());
        } else {
            self.xpath[i as usize] = XPath::default();
        }
        i
    }

    fn oldest_incomplete(&self) -> u64 {
        self.seq_base
    }

    fn mark_done(&mut self, seq: u64) {
        let i = (seq - self.seq_base) as usize;
        self.done_window[i] = true;
        while self.done_window.front() == Some(&true) {
            self.done_window.pop_front();
            self.seq_base += 1;
        }
    }

    fn first_barrier_seq(&self) -> u64 {
        self.barriers
            .front()
            .map(|&b| self.reqs[b as usize].seq)
            .unwrap_or(u64::MAX)
    }

    /// Admit a request into the device queues (it holds a tag).
    fn admit(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        self.in_device += 1;
        if self.busy_since.is_none() {
            self.busy_since = Some(now);
        }
        let r = &mut self.reqs[ri as usize];
        r.queued_ns = now - r.arrival;
        r.last_done = now;
        match r.op {
            Some(Op::Flush) => {
                self.barriers.push_back(ri);
                self.try_barriers(now, cx);
            }
            _ if !self.barriers.is_empty() => {
                // nothing behind a barrier is queued until it completes
                // (docs/spec/pcie-arrays.md +2Q and +Balance); a request waiting here
                // cannot block the requests the barrier waits for
                self.held.push_back(ri);
            }
            _ => self.enqueue(now, ri, cx),
        }
    }

    fn enqueue(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        match self.reqs[ri as usize].op {
            Some(Op::Trim) | Some(Op::Flush) | None => {
                // the arrays have no trim: it completes once admitted
                self.finish_req(now, ri, None, cx);
            }
            Some(op) => {
                let q = if self.cfg.queues == QueuePolicy::ReadWrite && op == Op::Write {
                    1
                } else {
                    0
                };
                self.queues[q].push_back(ri);
            }
        }
    }

    fn try_barriers(&mut self, now: Nanos, cx: &mut Cx) {
        while let Some(&b) = self.barriers.front() {
            if self.oldest_incomplete() != self.reqs[b as usize].seq {
                break;
            }
            self.barriers.pop_front();
            self.finish_req(now, b, None, cx);
            // release what was held behind it, up to the next barrier
            let next = self.first_barrier_seq();
            while let Some(&h) = self.held.front() {
                if self.reqs[h as usize].seq > next {
                    break;
                }
                self.held.pop_front();
                self.enqueue(now, h, cx);
            }
        }
    }

    /// Request `ri` finished at `now`; `last`, its transfer that finished
    /// last (none for a trim or a flush), holds the critical path's
    /// breakdown.
    fn finish_req(&mut self, now: Nanos, ri: u32, last: Option<u32>, cx: &mut Cx) {
        let r = &mut self.reqs[ri as usize];
        let seq = r.seq;
        // the breakdown written once, in the completion: the last
        // transfer's critical path, the wait for a tag, and (in
        // `queue_rest`) time not on the critical path as queueing
        let p = last.map_or_else(XPath::default, |xi| self.xpath[xi as usize]);
        cx.done_parts(
            r.id,
            r.arrival,
            now,
            &[
                (Component::DeviceQueue, p.queue + r.queued_ns),
                (Component::Interconnect, p.interconnect),
                (Component::Link, p.link),
                (Component::Controller, p.controller),
                (Component::Media, p.media),
            ],
        );
        self.free_reqs.push(ri);
        self.in_device -= 1;
        if self.in_device == 0 {
            if let Some(s) = self.busy_since.take() {
                self.busy_ns += now - s;
            }
        }
        self.mark_done(seq);
        if let Some(next) = self.tag_wait.pop_front() {
            self.admit(now, next, cx);
        }
        if !self.barriers.is_empty() {
            self.try_barriers(now, cx);
        }
        // a finished barrier or a freed tag may let the scheduler go on
        self.pump(now, cx);
    }

    /// Next transfer of request `ri`, as (offset, len).
    #[inline]
    fn next_piece(&self, ri: u32) -> (u64, u64) {
        let r = &self.reqs[ri as usize];
        let off = r.offset + r.issued;
        let bb = self.cfg.buffer_bytes;
        let end_of_buf = (self.buf_div.div(off) + 1) * bb;
        let len = (r.offset + r.len).min(end_of_buf) - off;
        (off, len)
    }

    #[inline]
    fn ctrl_of(&self, off: u64) -> u32 {
        self.ctrl_div.rem(self.stripe_div.div(off)) as u32
    }

    /// Can the head transfer of `ri` start now?
    fn can_start(&self, ri: u32) -> bool {
        let r = &self.reqs[ri as usize];
        match r.op {
            // one queue is processed in order: a write gets a buffer only
            // after every read issued before it has one; +2Q alternates the
            // grants between the directions instead
            Some(Op::Write) => {
                self.buffers_free > 0
                    && (self.reads_before_buffer == 0
                        || (self.cfg.queues == QueuePolicy::ReadWrite && self.last_grant_read))
            }
            _ => {
                let (off, _) = self.next_piece(ri);
                self.ctrls[self.ctrl_of(off) as usize].pending_reads == 0
            }
        }
    }

    /// The scheduler: start transfers while the policy allows. Re-entrant
    /// calls (a resource freed while starting a transfer) only note that
    /// the outer loop should look again.
    ///
    /// (The idle case, nothing queued or a pump already running, is
    /// decided inline: the scheduler is called four or five times per
    /// request, most of them with nothing to start.)
    #[inline]
    fn pump(&mut self, now: Nanos, cx: &mut Cx) {
        if self.pumping || (self.queues[0].is_empty() && self.queues[1].is_empty()) {
            return;
        }
        self.pump_queues(now, cx);
    }

    /// [`Self::pump`]'s loop, with work queued.
    fn pump_queues(&mut self, now: Nanos, cx: &mut Cx) {
        self.pumping = true;
        let nq = if self.cfg.queues == QueuePolicy::ReadWrite {
            2
        } else {
            1
        };
        loop {
            let mut started = false;
            for k in 0..nq {
                // (nq is 1 or 2: a mask, not a division)
                let q = (self.rr + k) & (nq - 1);
                let Some(&ri) = self.queues[q].front() else {
                    continue;
                };
                if !self.can_start(ri) {
                    continue;
                }
                self.queues[q].pop_front();
                self.start_transfer(now, ri, cx);
                let r = &self.reqs[ri as usize];
                if r.issued < r.len {
                    if self.cfg.balance {
                        self.queues[q].push_back(ri);
                    } else {
                        self.queues[q].push_front(ri);
                    }
                }
                self.rr = (q + 1) & (nq - 1);
                started = true;
                break;
            }
            if !started {
                break;
            }
        }
        self.pumping = false;
    }

    fn start_transfer(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let (off, len) = self.next_piece(ri);
        let ctrl = self.ctrl_of(off);
        let write = self.reqs[ri as usize].op == Some(Op::Write);
        {
            let r = &mut self.reqs[ri as usize];
            r.issued += len;
            r.pending += 1;
            if r.issued >= r.len {
                r.done_all_issued = true;
            }
        }
        let x = Xfer {
            req: ri,
            write,
            offset: off,
            len,
            ctrl,
            t_sched: now,
            t_mark: now,
            stream_end: now,
        };
        let xi = self.alloc_xfer(x);
        if write {
            // DMA host → buffer: first bytes after the DMA latency, at link rate
            self.buffers_free -= 1;
            self.last_grant_read = false;
            let dur = self.link_t.ns(len);
            let start = self.link[1].reserve(now + self.cfg.dma_latency_ns.write, dur);
            let xm = &mut self.xfers[xi as usize];
            xm.stream_end = start + dur;
            self.xpath[xi as usize].link += start + dur - now;
            xm.t_mark = start + dur;
            cx.wake(start, Self::tok(EV_DMA_DONE, xi));
        } else {
            self.ctrls[ctrl as usize].pending_reads += 1;
            self.reads_before_buffer += 1;
            self.ctrls[ctrl as usize].queue.push_back(xi);
            self.kick_ctrl(now, ctrl, cx);
        }
    }

    /// Start the controller's next op if it is idle.
    fn kick_ctrl(&mut self, now: Nanos, c: u32, cx: &mut Cx) {
        let ci = c as usize;
        if self.ctrls[ci].tl.free_at > now {
            // busy: make sure it looks at its queue when it frees up (one
            // event, and only when there is work waiting)
            if !self.ctrls[ci].free_pending && !self.ctrls[ci].queue.is_empty() {
                self.ctrls[ci].free_pending = true;
                cx.wake(self.ctrls[ci].tl.free_at, Self::tok(EV_CTRL_FREE, c));
            }
            return;
        }
        // a write waiting in the in-queue commits first: it frees the
        // scoreboard for the next write's ring transfer (and a write never
        // waits behind a blocked read, which would deadlock buffers and
        // scoreboard); otherwise the oldest read, if the out-queue is empty
        let out_used = self.ctrls[ci].out_used;
        let xfers = &self.xfers;
        let q = &self.ctrls[ci].queue;
        let Some(pos) = q
            .iter()
            .position(|&xi| xfers[xi as usize].write)
            .or_else(|| {
                if out_used {
                    None
                } else {
                    q.iter().position(|_| true)
                }
            })
        else {
            return;
        };
        // (the head, most of the time: a plain pop)
        let q = &mut self.ctrls[ci].queue;
        let xi = if pos == 0 {
            q.pop_front()
        } else {
            q.remove(pos)
        }
        .expect("position is in range");
        let x = self.xfers[xi as usize];
        let rows = self.row_div.spanned(x.offset, x.len);
        let row_ns = rows
            * if x.write {
                self.media.write_ns
            } else {
                self.media.read_ns
            };
        let stream = self.ctrl_t.ns(x.len);
        let service = row_ns + stream;
        let lat = if x.write {
            self.cfg.controller_latency_ns.write
        } else {
            self.cfg.controller_latency_ns.read
        } + (x.len
            * if x.write {
                self.cfg.controller_latency_ns_per_kib.write
            } else {
                self.cfg.controller_latency_ns_per_kib.read
            })
        .div_ceil(1024);
        self.ctrls[ci].tl.reserve(now, service);
        if !self.ctrls[ci].queue.is_empty() && !self.ctrls[ci].free_pending {
            // more work waits: look again when this op ends
            self.ctrls[ci].free_pending = true;
            cx.wake(now + service, Self::tok(EV_CTRL_FREE, c));
        }
        if x.write {
            // commit: rows are written as data streams in; done when the last
            // byte has arrived and its row has been written back
            let ready = (now + service).max(x.stream_end + row_ns);
            let mem_lat = self.cfg.memory_latency_ns.write;
            let done = ready + lat + mem_lat;
            let xm = &mut self.xfers[xi as usize];
            let media_part = service.min(ready - xm.t_mark);
            let xp = &mut self.xpath[xi as usize];
            xp.media += media_part + mem_lat;
            xp.controller += ready - xm.t_mark - media_part + lat;
            xm.t_mark = done;
            cx.wake(done, Self::tok(EV_CTRL_DONE, xi));
            self.rows_written += rows;
            self.bytes_written += x.len;
            let stripe_rows = self.stripe_rows_div;
            let first_row = self.row_div.div(x.offset);
            for row in first_row..first_row + rows {
                // rows of one controller are numbered densely
                let la = self.ctrl_div.div(stripe_rows.div(row)) * stripe_rows.divisor()
                    + stripe_rows.rem(row);
                self.wear[ci].write(la);
            }
            // the in-queue empties as the commit starts
            self.ctrls[ci].in_used = false;
            if let Some(w) = self.ctrls[ci].ring_waiters.pop_front() {
                self.ring_write(now, w, cx);
            }
        } else {
            // first bytes leave the row buffer after the pipeline, the
            // memory access and the row open; the last after the stream.
            // The memory is charged the delay it adds to the first byte;
            // the stream itself overlaps the stages downstream (see
            // `charge_read_stream`)
            let mem_first = self.cfg.memory_latency_ns.read + row_ns;
            let first = now + lat + mem_first;
            let last = first + stream;
            let xm = &mut self.xfers[xi as usize];
            let xp = &mut self.xpath[xi as usize];
            xp.controller += now - xm.t_mark + lat;
            xp.media += mem_first;
            xm.t_mark = first;
            xm.stream_end = last;
            self.rows_read += rows;
            self.bytes_read += x.len;
            self.ctrls[ci].out_used = true;
            self.ctrls[ci].pending_reads -= 1;
            cx.wake(first, Self::tok(EV_CTRL_DONE, xi));
            // a read command slot freed: the scheduler may proceed
            self.pump(now, cx);
        }
    }

    /// A transfer of `len` bytes streams over the ring, cut-through behind
    /// an upstream whose last byte arrives at `upstream_end`. The stream is
    /// paced by the link, which is slower than the ring, so it needs only
    /// part of the ring's bandwidth: concurrent streams share the ring as
    /// long as its total work fits (the ring's backlog is absorbed within
    /// the stream's own duration). Returns (first byte out, last byte out).
    fn ring_stream(
        &mut self,
        now: Nanos,
        len: u64,
        upstream_end: Nanos,
        lat: Nanos,
    ) -> (Nanos, Nanos) {
        let dur = self.ring_t.ns(len);
        let window = self.link_t.ns(len).max(dur);
        let backlog = self.ring.free_at.saturating_sub(now);
        let start = self.ring.reserve(now, dur);
        let first = now + backlog.saturating_sub(window - dur) + lat;
        let last = (start + dur).max(upstream_end).max(first - lat + dur) + lat;
        (first, last)
    }

    /// Write data (arriving in its buffer) moves over the ring into the
    /// controller's in-queue.
    fn ring_write(&mut self, now: Nanos, xi: u32, cx: &mut Cx) {
        let x = self.xfers[xi as usize];
        self.ctrls[x.ctrl as usize].in_used = true;
        let (first, last) =
            self.ring_stream(now, x.len, x.stream_end, self.cfg.ring_latency_ns.write);
        let xm = &mut self.xfers[xi as usize];
        self.xpath[xi as usize].interconnect += last - xm.t_mark;
        xm.t_mark = last;
        xm.stream_end = last;
        cx.wake(first, Self::tok(EV_RING_W, xi));
        cx.wake(last, Self::tok(EV_BUF_FREE, xi));
    }

    /// Read data leaves the controller's out-queue over the ring into a
    /// buffer and on over the device-to-host link: the ring drains the
    /// out-queue from now, and the DMA follows the first bytes into the
    /// buffer (cut-through).
    fn ring_read(&mut self, now: Nanos, xi: u32, cx: &mut Cx) {
        self.buffers_free -= 1;
        self.reads_before_buffer -= 1;
        let x = self.xfers[xi as usize];
        let (first, last_r) =
            self.ring_stream(now, x.len, x.stream_end, self.cfg.ring_latency_ns.read);
        // the out-queue empties as the ring drains it
        self.ctrls[x.ctrl as usize].out_used = false;
        let dur = self.link_t.ns(x.len);
        let start = self.link[0].reserve(first, dur);
        let last = (start + dur).max(last_r) + self.cfg.dma_latency_ns.read;
        self.charge_read_stream(now, xi, first, start, dur, last_r);
        let xm = &mut self.xfers[xi as usize];
        xm.t_mark = last;
        xm.t_sched = now; // buffer held from now
        cx.wake(last, Self::tok(EV_XFER_DONE, xi));
        self.kick_ctrl(now, x.ctrl, cx);
    }

    /// The critical path of a read transfer from its first byte out of the
    /// memory (`t_mark`) to its last byte in the host, cut-through: each
    /// stage is charged the delay it adds to the first byte (the wait for
    /// a buffer to the device queue, the ring's latency and backlog to the
    /// interconnect) and the link its own transfer, its queue and the
    /// DMA's fixed latency; what the stream waits beyond that for a slower
    /// stage upstream goes to that stage (the memory's stream or the
    /// ring's). `ring_first`: first byte off the ring; `start`, `dur`: the
    /// link's transfer; `last_r`: last byte off the ring.
    fn charge_read_stream(
        &mut self,
        now: Nanos,
        xi: u32,
        ring_first: Nanos,
        start: Nanos,
        dur: Nanos,
        last_r: Nanos,
    ) {
        let x = self.xfers[xi as usize];
        let lat_r = self.cfg.ring_latency_ns.read;
        let xp = &mut self.xpath[xi as usize];
        xp.queue += now.saturating_sub(x.t_mark);
        xp.interconnect += ring_first - now;
        xp.link += start - ring_first + dur + self.cfg.dma_latency_ns.read;
        let behind = last_r.saturating_sub(start + dur);
        if behind > 0 {
            if x.stream_end + lat_r >= last_r {
                xp.media += behind;
            } else {
                xp.interconnect += behind;
            }
        }
    }

    fn release_buffer(&mut self, now: Nanos, held_since: Nanos, write: bool, cx: &mut Cx) {
        self.buffers_free += 1;
        self.buffer_ns += now - held_since;
        self.buffer_hold[write as usize] += now - held_since;
        self.buffer_uses[write as usize] += 1;
        self.grant_buffers(now, cx);
    }

    /// Give free buffers out. With one queue, transfers get buffers in the
    /// order the scheduler issued them, so reads already at a controller
    /// (issued earlier) come before the queue's next write. With read and
    /// write queues (+2Q) the grants alternate between the directions, which
    /// is what keeps both link directions busy.
    fn grant_buffers(&mut self, now: Nanos, cx: &mut Cx) {
        while self.buffers_free > 0 {
            // a waiting read gets the buffer unless a write is ready and
            // the last grant went to a read (whether a write is ready is
            // looked at only then)
            let to_read = !self.buffer_waiters.is_empty()
                && (!self.last_grant_read
                    || !self.queues[1].front().is_some_and(|&ri| self.can_start(ri)));
            if to_read {
                let xi = self.buffer_waiters.pop_front().expect("checked non-empty");
                self.last_grant_read = true;
                self.ring_read(now, xi, cx);
            } else {
                break;
            }
        }
        self.pump(now, cx);
    }

    fn xfer_done(&mut self, now: Nanos, xi: u32, cx: &mut Cx) {
        let x = self.xfers[xi as usize];
        self.free_xfers.push(xi);
        let r = &mut self.reqs[x.req as usize];
        r.pending -= 1;
        if r.pending == 0 && r.done_all_issued {
            // the last transfer to finish defines the critical path
            self.finish_req(now, x.req, Some(xi), cx);
        }
    }
}

impl Device for PcieArray {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.done_window.push_back(false);
        let len = if matches!(req.op, Op::Read | Op::Write) {
            req.len.max(1)
        } else {
            req.len
        };
        let ri = self.alloc_req(Req {
            id: req.id,
            op: Some(req.op),
            offset: req.offset,
            len,
            seq,
            arrival: now,
            ..Default::default()
        });
        if self.in_device < self.cfg.tags {
            self.admit(now, ri, cx);
            self.pump(now, cx);
        } else {
            self.tag_wait.push_back(ri);
        }
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let kind = token & 7;
        let idx = (token >> 3) as u32;
        match kind {
            EV_DMA_DONE => {
                // first bytes are in the buffer: wait on the scoreboard
                let x = self.xfers[idx as usize];
                let c = &mut self.ctrls[x.ctrl as usize];
                if !c.in_used {
                    self.ring_write(now, idx, cx);
                } else {
                    c.ring_waiters.push_back(idx);
                }
            }
            EV_RING_W => {
                let x = self.xfers[idx as usize];
                self.ctrls[x.ctrl as usize].queue.push_back(idx);
                self.kick_ctrl(now, x.ctrl, cx);
            }
            EV_BUF_FREE => {
                let x = self.xfers[idx as usize];
                self.release_buffer(now, x.t_sched, x.write, cx);
            }
            EV_CTRL_FREE => {
                self.ctrls[idx as usize].free_pending = false;
                self.kick_ctrl(now, idx, cx);
            }
            EV_CTRL_DONE => {
                let x = self.xfers[idx as usize];
                if x.write {
                    self.xfer_done(now, idx, cx);
                } else {
                    self.buffer_waiters.push_back(idx);
                    self.grant_buffers(now, cx);
                }
            }
            EV_XFER_DONE => {
                let x = self.xfers[idx as usize];
                self.xfer_done(now, idx, cx);
                self.release_buffer(now, x.t_sched, x.write, cx);
            }
            _ => {}
        }
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn debug_state(&self) -> String {
        let ctrls: Vec<String> = self
            .ctrls
            .iter()
            .map(|c| {
                format!(
                    "[q={} in={} out={} pend={} ringw={} free_at={} fp={}]",
                    c.queue.len(),
                    c.in_used,
                    c.out_used,
                    c.pending_reads,
                    c.ring_waiters.len(),
                    c.tl.free_at,
                    c.free_pending
                )
            })
            .collect();
        format!(
            "in_device={} queues={}/{} held={} barriers={} tag_wait={} buffers_free={} buffer_waiters={} reads_before_buffer={} ctrls={}",
            self.in_device,
            self.queues[0].len(),
            self.queues[1].len(),
            self.held.len(),
            self.barriers.len(),
            self.tag_wait.len(),
            self.buffers_free,
            self.buffer_waiters.len(),
            self.reads_before_buffer,
            ctrls.join("")
        )
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        let el = now.max(1) as f64;
        let busy = self.busy_ns + self.busy_since.map(|s| now - s).unwrap_or(0);
        let frac = |b: u64| crate::units::busy_fraction(b, now);
        let mut util = vec![
            Utilisation {
                resource: "scheduler".into(),
                busy: frac(busy),
            },
            Utilisation {
                resource: "link.device_to_host".into(),
                busy: frac(self.link[0].busy_ns),
            },
            Utilisation {
                resource: "link.host_to_device".into(),
                busy: frac(self.link[1].busy_ns),
            },
            Utilisation {
                resource: "buffers".into(),
                busy: (self.buffer_ns as f64 / el / self.cfg.buffers as f64).min(1.0),
            },
            Utilisation {
                resource: "ring".into(),
                busy: frac(self.ring.busy_ns),
            },
        ];
        for (i, c) in self.ctrls.iter().enumerate() {
            util.push(Utilisation {
                resource: format!("controller.{i}"),
                busy: frac(c.tl.busy_ns),
            });
        }
        let p = &self.power;
        let secs = el / 1e9;
        let comp = |name: &str, w: [f64; 2], u: f64, n: f64| {
            let avg = n * (w[0] + (w[1] - w[0]) * u);
            Power {
                component: name.into(),
                avg_w: avg,
                energy_j: avg * secs,
            }
        };
        let u_sched = frac(busy);
        let u_ring = frac(self.ring.busy_ns);
        let u_buf = (self.buffer_ns as f64 / el / self.cfg.buffers as f64).min(1.0);
        let u_link = frac(self.link[0].busy_ns.max(self.link[1].busy_ns));
        let u_ctrl: f64 = self.ctrls.iter().map(|c| frac(c.tl.busy_ns)).sum::<f64>()
            / self.ctrls.len().max(1) as f64;
        let n_ctrl = self.ctrls.len() as f64;
        let row_bits = (self.cfg.row_bytes * 8) as f64;
        let write_bits_array = if self.cfg.selective_writes {
            (self.bytes_written * 8) as f64
        } else {
            self.rows_written as f64 * row_bits
        };
        let array_j = (write_bits_array * p.array_write_pj_per_bit
            + self.rows_read as f64 * row_bits * p.array_read_pj_per_bit)
            * 1e-12;
        let rowbuf_j = ((self.bytes_written * 8) as f64 * p.row_buffer_write_pj_per_bit
            + (self.bytes_read * 8) as f64 * p.row_buffer_read_pj_per_bit)
            * 1e-12;
        let dies = (p.dies_per_controller as f64) * n_ctrl;
        // the dies idle with their clock off, and a row's bits draw the
        // active background while the array reads or writes them back
        let access_ns = self.rows_read as f64 * self.media.read_ns as f64
            + self.rows_written as f64 * self.media.write_ns as f64;
        let bg_w = dies * p.background_idle_w_per_die
            + access_ns / el * row_bits * p.background_active_w_per_bit;
        let power = vec![
            comp("scheduler_and_dma", p.scheduler_w, u_sched, 1.0),
            comp("ring", p.ring_w, u_ring, 1.0),
            comp(
                "scheduler_buffers",
                p.scheduler_buffers_w,
                u_buf,
                self.cfg.buffers as f64 / 2.0,
            ),
            comp("memory_controllers", p.controller_w, u_ctrl, n_ctrl),
            comp(
                "memory_controller_buffers",
                p.controller_buffers_w,
                u_ctrl,
                n_ctrl,
            ),
            comp("pcie", p.pcie_w, u_link, 1.0),
            Power {
                component: "media_array".into(),
                avg_w: array_j / secs,
                energy_j: array_j,
            },
            Power {
                component: "media_row_buffers".into(),
                avg_w: rowbuf_j / secs,
                energy_j: rowbuf_j,
            },
            Power {
                component: "media_background".into(),
                avg_w: bg_w,
                energy_j: bg_w * secs,
            },
        ];
        let mut wear = StartGap::summarize(self.wear.iter(), "row writes");
        let gap_writes: u64 = self.wear.iter().map(|w| w.gap_writes).sum();
        let mut counters = vec![
            ("rows_read".to_string(), self.rows_read as f64),
            ("rows_written".to_string(), self.rows_written as f64),
            ("start_gap_extra_writes".to_string(), gap_writes as f64),
            (
                "buffer_hold_ns_mean.read".to_string(),
                self.buffer_hold[0] as f64 / self.buffer_uses[0].max(1) as f64,
            ),
            (
                "buffer_hold_ns_mean.write".to_string(),
                self.buffer_hold[1] as f64 / self.buffer_uses[1].max(1) as f64,
            ),
        ];
        if wear.max > 0 {
            // lifetime at this write rate, for the most-written line
            let per_s = wear.max as f64 / secs;
            counters.push((
                "lifetime_years_at_this_rate".into(),
                self.cfg.endurance_writes as f64 / per_s / 3.156e7,
            ));
        } else {
            wear.mean = 0.0;
        }
        DeviceReport {
            utilisation: util,
            power,
            wear: Some(wear),
            counters,
        }
    }
}
