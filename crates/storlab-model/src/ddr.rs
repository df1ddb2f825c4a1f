//! NVM on the DDR memory bus as a RAM disk with injected delay (ddr-nvm.md).
//!
//! No link, DMA, interrupt or lock: the requesting CPU copies the data with
//! loads or stores (the host runs this device in `CompletionMode::Cpu`, so
//! the thread keeps its core). The copy streams at one core's copy rate,
//! shares the memory channels' total bandwidth with other threads, and pays
//! the media latency on the critical path once per row it opens as it walks
//! the request (no parallel controllers to hide it).

use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, Component};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::pcie::MediaConfig;
use crate::report::{DeviceReport, Utilisation};
use crate::units::{xfer_ns, FixedDiv, Timeline};

/// Configuration of a DDR-attached RAM disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdrConfig {
    /// Memory channels.
    pub channels: u32,
    /// Total bandwidth of all channels.
    pub bus_bytes_per_s: u64,
    /// One core's copy rate over the bus.
    pub copy_bytes_per_s: u64,
    /// Row (page) size: media latency is paid per row opened.
    pub row_bytes: u64,
}

/// Validate.
pub fn validate(cfg: &DdrConfig) -> Result<(), crate::config::ConfigError> {
    use crate::config::check_range;
    check_range("ddr.channels", cfg.channels, 1, 64)?;
    check_range("ddr.bus_bytes_per_s", cfg.bus_bytes_per_s, 1, u64::MAX)?;
    check_range("ddr.copy_bytes_per_s", cfg.copy_bytes_per_s, 1, u64::MAX)?;
    check_range("ddr.row_bytes", cfg.row_bytes, 64, 1 << 20)?;
    Ok(())
}

/// The RAM-disk device.
pub struct DdrRamDisk {
    cfg: DdrConfig,
    media: MediaConfig,
    capacity: u64,
    bus: Timeline,
    rows: u64,
    row_div: FixedDiv,
}

impl DdrRamDisk {
    /// Build from a validated configuration.
    pub fn new(cfg: DdrConfig, media: MediaConfig, capacity: u64) -> Self {
        Self {
            row_div: FixedDiv::new(cfg.row_bytes),
            cfg,
            media,
            capacity,
            bus: Timeline::default(),
            rows: 0,
        }
    }
}

impl Device for DdrRamDisk {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let mut bd = Breakdown::default();
        let (lat, write) = match req.op {
            Op::Read => (self.media.read_ns, false),
            Op::Write => (self.media.write_ns, true),
            Op::Trim | Op::Flush => {
                cx.done(req.id, now, bd);
                return;
            }
        };
        let _ = write;
        let len = req.len.max(1);
        // the bus is shared: its occupancy is this copy's share of the total
        let occupancy = xfer_ns(len, self.cfg.bus_bytes_per_s);
        let start = self.bus.reserve(now, occupancy);
        let copy = xfer_ns(len, self.cfg.copy_bytes_per_s);
        let rows = self.row_div.spanned(req.offset, len);
        self.rows += rows;
        bd.add(Component::DeviceQueue, start - now);
        bd.add(Component::Link, copy);
        bd.add(Component::Media, rows * lat);
        let at = start + copy + rows * lat;
        cx.done(req.id, at, bd);
    }
    fn on_event(&mut self, _now: Nanos, _token: u64, _cx: &mut Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, now: Nanos) -> DeviceReport {
        DeviceReport {
            utilisation: vec![Utilisation {
                resource: "memory_bus".into(),
                busy: self.bus.utilisation(now),
            }],
            counters: vec![("rows_opened".into(), self.rows as f64)],
            ..Default::default()
        }
    }
}
