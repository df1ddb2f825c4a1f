//! A CXL Type-3 memory expander (docs/spec/today.md, "CXL Type-3 memory
//! expander"): DDR memory behind a CXL link, or the same memory on the
//! host's own DDR bus (`attach = "ddr"`), for the attach-point comparison.
//!
//! A request of `len` bytes is `ceil(len / line_bytes)` cache lines, each a
//! CXL.mem message: a read is an M2S request (header slots only) answered
//! by an S2M data response (a header slot and the line's data slots); a
//! write is an M2S request with data answered by a no-data completion. The
//! slots travel in flits of `flit_bytes` carrying `slots_per_flit` slots,
//! so a slot costs `flit_bytes / slots_per_flit` bytes of the link. The
//! link's two directions are separate FCFS timelines, as the HASTE model's
//! PCIe ([`crate::link::duplex::Link`]): reads load the device-to-host
//! direction, writes the host-to-device one, and a mix uses both.
//!
//! A message crosses two ports each way (the host's root port and the
//! device's port: PHY and link/transaction layers, `port_ns` each) and the
//! wire (`flight_ns`); the device's controller (`controller_ns`: flit
//! unpacking, its request queue) hands the lines to its DRAM channels
//! (`dram_bytes_per_s`, one FCFS timeline). `dram_ns` is a load's latency to
//! DRAM on the host's own bus (core to memory controller, the DRAM access,
//! back); on CXL the root port stands where the memory controller stood,
//! so a CXL access costs `dram_ns` plus the link's part. Lines stream: the
//! DRAM starts on the first line as soon as it has arrived, and the
//! response flits follow the DRAM.
//!
//! `local_bytes` makes the device a two-tier memory as a NUMA host sees it
//! (local DRAM node plus the expander's CPU-less node): the first
//! `local_bytes` of the address space are the host's own DRAM (timed as
//! `attach = "ddr"`, on channels of their own at `dram_bytes_per_s`), the
//! rest is behind the link. This is where Linux's default first-touch
//! policy puts a program's pages: on the local node until it is full, then
//! on the next node by distance (mm/mempolicy.c, the zonelist fallback),
//! so a program that touches its array in order finds its first
//! `local_bytes` local and the rest on CXL memory.

use serde::{Deserialize, Serialize};

use crate::breakdown::Component;
use crate::config::{check_range, ConfigError};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::link::ddr::MemoryBus;
use crate::link::duplex::{Dir, Link};
use crate::report::{DeviceReport, Utilisation};
use crate::units::Rw;

/// Where the memory attaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attach {
    /// Behind a CXL link.
    Cxl,
    /// On the host's DDR bus (the same DRAM, no link): local memory.
    Ddr,
}

/// `[cxl]`: the link, the controller and the DRAM behind it. Units are in
/// the names.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CxlConfig {
    /// Where the memory attaches.
    pub attach: Attach,
    /// Lanes of the link.
    pub link_lanes: u32,
    /// Bytes per second per lane per direction after line coding.
    pub lane_bytes_per_s: u64,
    /// Bytes of one flit on the wire (slots, protocol ID and CRC).
    pub flit_bytes: u64,
    /// Slots one flit carries.
    pub slots_per_flit: u64,
    /// Bytes of one slot.
    pub slot_bytes: u64,
    /// Bytes of one cache line (one message's data).
    pub line_bytes: u64,
    /// Header slots of a line's request (host to device): `{read: M2S
    /// Req, write: M2S RwD}`.
    pub request_header_slots: Rw,
    /// Header slots of a line's response (device to host): `{read: S2M
    /// DRS, write: S2M NDR}`.
    pub response_header_slots: Rw,
    /// One crossing of one port (PHY, link and transaction layers), ns.
    pub port_ns: u64,
    /// The wire between the ports, one way, ns.
    pub flight_ns: u64,
    /// The device controller's part of an access beyond what the host's
    /// memory controller does, ns.
    pub controller_ns: u64,
    /// A load's latency to DRAM on the host's own bus, ns.
    pub dram_ns: u64,
    /// The DRAM channels' sustained rate, all channels together, bytes/s.
    pub dram_bytes_per_s: u64,
    /// Bytes at the start of the address space that are the host's own
    /// DRAM (a local NUMA node in front of the expander); 0: all of it is
    /// behind the link (or all local with `attach = "ddr"`).
    #[serde(default)]
    pub local_bytes: u64,
}

/// Validate `[cxl]`.
pub fn validate(c: &CxlConfig) -> Result<(), ConfigError> {
    check_range("cxl.link_lanes", c.link_lanes, 1, 32)?;
    check_range("cxl.lane_bytes_per_s", c.lane_bytes_per_s, 1, u64::MAX / 64)?;
    check_range("cxl.slots_per_flit", c.slots_per_flit, 1, 64)?;
    check_range("cxl.slot_bytes", c.slot_bytes, 1, 4096)?;
    check_range(
        "cxl.flit_bytes",
        c.flit_bytes,
        c.slots_per_flit * c.slot_bytes,
        1 << 16,
    )?;
    check_range("cxl.line_bytes", c.line_bytes, c.slot_bytes, 4096)?;
    for (f, v) in [
        ("cxl.request_header_slots.read", c.request_header_slots.read),
        (
            "cxl.request_header_slots.write",
            c.request_header_slots.write,
        ),
        (
            "cxl.response_header_slots.read",
            c.response_header_slots.read,
        ),
        (
            "cxl.response_header_slots.write",
            c.response_header_slots.write,
        ),
    ] {
        check_range(f, v, 0, 64)?;
    }
    for (f, v) in [
        ("cxl.port_ns", c.port_ns),
        ("cxl.flight_ns", c.flight_ns),
        ("cxl.controller_ns", c.controller_ns),
        ("cxl.dram_ns", c.dram_ns),
    ] {
        check_range(f, v, 0, 1_000_000_000)?;
    }
    check_range("cxl.dram_bytes_per_s", c.dram_bytes_per_s, 1, u64::MAX)?;
    Ok(())
}

/// The device.
pub struct CxlMemory {
    c: CxlConfig,
    capacity: u64,
    link: Link,
    dram: MemoryBus,
    /// The host's own DRAM channels holding the first `local_bytes`.
    local: MemoryBus,
    lines: [u64; 2],
}

/// When a part of a request ends and where its time went.
type Timed = (Nanos, Vec<(Component, Nanos)>);

impl CxlMemory {
    /// Build from a validated configuration.
    pub fn new(c: CxlConfig, capacity: u64) -> Self {
        let rate = c.lane_bytes_per_s.saturating_mul(c.link_lanes as u64);
        let link = Link::new(
            Rw {
                read: rate,
                write: rate,
            },
            Rw::default(),
            true,
        );
        let dram = MemoryBus::new(c.dram_bytes_per_s);
        let local = MemoryBus::new(c.dram_bytes_per_s);
        Self {
            c,
            capacity,
            link,
            dram,
            local,
            lines: [0; 2],
        }
    }

    /// Link bytes of `slots` slots (flits carry `slots_per_flit`).
    fn slot_wire_bytes(&self, slots: u64) -> u64 {
        (slots * self.c.flit_bytes).div_ceil(self.c.slots_per_flit)
    }

    /// The link bytes a request of `lines` lines puts on each direction:
    /// `(to device, to host)`.
    pub fn wire_bytes(&self, op: Op, lines: u64) -> (u64, u64) {
        let data = self.c.line_bytes.div_ceil(self.c.slot_bytes);
        let (req, resp) = match op {
            Op::Read => (
                self.c.request_header_slots.read,
                self.c.response_header_slots.read + data,
            ),
            _ => (
                self.c.request_header_slots.write + data,
                self.c.response_header_slots.write,
            ),
        };
        (
            self.slot_wire_bytes(lines * req),
            self.slot_wire_bytes(lines * resp),
        )
    }
}

impl CxlMemory {
    /// `lines` lines on DRAM on the host's bus (`bus`: the expander's
    /// DRAM with `attach = "ddr"`, else the local node's).
    fn on_ddr(c: &CxlConfig, bus: &mut MemoryBus, now: Nanos, lines: u64) -> Timed {
        let xfer = bus.xfer_ns(lines * c.line_bytes);
        let (start, end) = bus.occupy(now, xfer);
        (
            end.saturating_add(c.dram_ns),
            vec![
                (Component::DeviceQueue, start - now),
                (Component::Media, xfer + c.dram_ns),
            ],
        )
    }

    /// `lines` lines behind the link.
    fn on_cxl(&mut self, now: Nanos, op: Op, lines: u64) -> Timed {
        let c = &self.c;
        let dram_xfer = self.dram.xfer_ns(lines * c.line_bytes);
        let (to_dev, to_host) = self.wire_bytes(op, lines);
        let one_way = 2 * c.port_ns + c.flight_ns;
        // requests leave the host's port, cross, enter the device's port
        let (s1, e1) = self.link.reserve(Dir::ToDevice, now + c.port_ns, to_dev);
        let first_in = s1 + self.link.xfer_ns(Dir::ToDevice, to_dev.div_ceil(lines));
        let dram_at = first_in + c.flight_ns + c.port_ns + c.controller_ns;
        let (s2, e2) = self.dram.occupy(dram_at, dram_xfer);
        // the last line's request must have arrived before its DRAM access
        let e2 = e2.max(e1 + c.flight_ns + c.port_ns + c.controller_ns);
        let (_, e3) = self.link.reserve(Dir::ToHost, s2 + c.port_ns, to_host);
        let last_out = e3.max(e2 + c.port_ns);
        let done = last_out + c.flight_ns + c.port_ns + c.dram_ns;
        let total = done - now;
        let media = (dram_xfer + c.dram_ns).min(total);
        let controller = c.controller_ns.min(total - media);
        let link_ns = 2 * one_way
            + self.link.xfer_ns(Dir::ToDevice, to_dev.div_ceil(lines))
            + self.link.xfer_ns(Dir::ToHost, to_host);
        let rest = total - media - controller;
        let link_ns = link_ns.min(rest);
        (
            done,
            vec![
                (Component::Media, media),
                (Component::Controller, controller),
                (Component::Link, link_ns),
                (Component::DeviceQueue, rest - link_ns),
            ],
        )
    }
}

impl Device for CxlMemory {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        if matches!(req.op, Op::Trim | Op::Flush) {
            // memory: nothing to discard, and a completed store is in the
            // device (its DRAM is as durable as the host's)
            cx.done_mut(req.id, now);
            return;
        }
        let lb = self.c.line_bytes;
        let lines = req.len.max(1).div_ceil(lb);
        self.lines[(req.op == Op::Write) as usize] += lines;
        let (done, parts) = if self.c.attach == Attach::Ddr {
            Self::on_ddr(&self.c, &mut self.dram, now, lines)
        } else {
            // lines on the local node, the rest behind the link
            let first = req.offset / lb;
            let near = (self.c.local_bytes / lb).saturating_sub(first).min(lines);
            if near == 0 {
                self.on_cxl(now, req.op, lines)
            } else if near == lines {
                Self::on_ddr(&self.c, &mut self.local, now, lines)
            } else {
                // the request ends with its later part; that part's time
                // is the request's
                let h = Self::on_ddr(&self.c, &mut self.local, now, near);
                let f = self.on_cxl(now, req.op, lines - near);
                if h.0 > f.0 {
                    h
                } else {
                    f
                }
            }
        };
        let bd = cx.done_mut(req.id, done);
        for (k, ns) in parts {
            bd.add(k, ns);
        }
    }
    fn on_event(&mut self, _now: Nanos, _token: u64, _cx: &mut Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, now: Nanos) -> DeviceReport {
        let mut utilisation = vec![Utilisation {
            resource: "dram".into(),
            busy: self.dram.utilisation(now),
        }];
        if self.c.attach == Attach::Cxl && self.c.local_bytes > 0 {
            utilisation.push(Utilisation {
                resource: "local_dram".into(),
                busy: self.local.utilisation(now),
            });
        }
        if self.c.attach == Attach::Cxl {
            utilisation.push(Utilisation {
                resource: "link.device_to_host".into(),
                busy: self.link.utilisation(Dir::ToHost, now),
            });
            utilisation.push(Utilisation {
                resource: "link.host_to_device".into(),
                busy: self.link.utilisation(Dir::ToDevice, now),
            });
        }
        DeviceReport {
            utilisation,
            counters: vec![
                ("lines_read".into(), self.lines[0] as f64),
                ("lines_written".into(), self.lines[1] as f64),
            ],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests;
