//! The PCIe NVM array's configuration: the link, queues, buffers, ring,
//! memory controllers and rows (`[pcie]`), and its power model (`[power]`).

use serde::{Deserialize, Serialize};

use crate::units::Rw;

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
    /// The device's firmware time per command, paid once when a command
    /// arrives, before it is cut into transfers (an NVMe controller's
    /// command decode and logical-to-media address lookup). The firmware
    /// works on several commands at once (a pipeline: it occupies neither
    /// the memory controllers nor their queues). Charged to the
    /// controller. Default 0 (HASTE and Moneta have no firmware).
    #[serde(default)]
    pub command_latency_ns: Rw,
    /// Controller pipeline latency per access, fixed part. It does not
    /// occupy the controller's stream, but a read holds the controller's
    /// out-queue from its start, so it does bound that controller's reads.
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
    check_range(
        "pcie.command_latency_ns.read",
        cfg.command_latency_ns.read,
        0,
        1_000_000_000,
    )?;
    check_range(
        "pcie.command_latency_ns.write",
        cfg.command_latency_ns.write,
        0,
        1_000_000_000,
    )?;
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
