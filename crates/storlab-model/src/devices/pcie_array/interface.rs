//! The PCIe NVM array as a [`Device`]: submission, the dispatch of its
//! events, and its report (utilisation, the Moneta power model, wear).

use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::link::duplex::Dir;
use crate::report::{DeviceReport, Power, Utilisation};

use super::array::{
    PcieArray, Req, EV_BUF_FREE, EV_CMD_READY, EV_CTRL_DONE, EV_CTRL_FREE, EV_DMA_DONE, EV_RING_W,
    EV_XFER_DONE,
};
use super::wear::StartGap;

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
            if !(self.shortcuts && self.admit_direct(now, ri, cx)) {
                self.admit(now, ri, cx);
                self.pump(now, cx);
            }
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
                let c = &mut self.ctrls[x.ctrl as usize];
                c.queue.push_back(idx);
                c.writes_queued += 1;
                self.kick_ctrl(now, x.ctrl, cx);
            }
            EV_CMD_READY => {
                // the firmware is done with the command: it is queued
                self.enqueue(now, idx, cx);
                self.pump(now, cx);
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
                } else if !(self.shortcuts && self.grant_now(now, idx, cx)) {
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
                busy: frac(self.link.busy_ns(Dir::ToHost)),
            },
            Utilisation {
                resource: "link.host_to_device".into(),
                busy: frac(self.link.busy_ns(Dir::ToDevice)),
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
        let u_link = frac(
            self.link
                .busy_ns(Dir::ToHost)
                .max(self.link.busy_ns(Dir::ToDevice)),
        );
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
