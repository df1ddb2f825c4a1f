//! The drive's configuration: the front end (`[ssd]`: link, tags,
//! controller, write buffer), the memory array (`[ssd.nand]`) and the FTL
//! (`[ssd.ftl]`); validating it, and the geometry the FTL sees.

use serde::{Deserialize, Serialize};

use crate::config::{check_range, ConfigError};
use crate::units::Rw;

use super::ftl::config::FtlConfig;
use super::ftl::layer::Ftl;
use super::ftl::types::{Geometry, Mapping};

/// The order in which a die takes its queued operations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DieOrder {
    /// Read priority scheduling (RPS in Wu and He, "Reducing SSD Read
    /// Latency via NAND Flash Program and Erase Suspension", FAST 2012):
    /// an idle die takes its queued host reads before any queued program,
    /// collection read or erase, so a read waits at most for the
    /// operation running when it arrived.
    #[default]
    ReadsFirst,
    /// First in, first out (FIFO in the same paper, its baseline): an idle
    /// die takes its operations in the order they were queued, so a read
    /// queued behind buffered pages' programs, a garbage collection's
    /// copies or an erase waits for all of them.
    Arrival,
}

/// Memory cell technology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellType {
    /// Single-level cell NAND: one page type.
    Slc,
    /// Multi-level cell NAND: LSB and MSB pages.
    Mlc,
    /// Triple-level cell NAND: LSB, CSB and MSB pages (lower, upper and
    /// extra pages).
    Tlc,
    /// Quad-level cell NAND: lower, upper, extra and top pages (four bits
    /// a cell). Page types take turns page by page as for MLC and TLC
    /// (MQSim's `Flash_Technology` enum SLC/MLC/TLC with a read and a
    /// program latency per page type, `Page_Read_Latency_LSB/CSB/MSB`,
    /// extended by the fourth, top, page).
    Qlc,
    /// Phase-change memory: bit-alterable, no erase (use `mapping =
    /// "in-place"`).
    Pcm,
}

impl CellType {
    /// Page types (bits per cell).
    pub fn page_types(self) -> usize {
        match self {
            CellType::Slc | CellType::Pcm => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
            CellType::Qlc => 4,
        }
    }
}

/// `[ssd.nand]`: the memory array.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    /// Cell technology.
    pub cell: CellType,
    /// Independent buses.
    pub channels: u32,
    /// Dies sharing each channel.
    pub dies_per_channel: u32,
    /// Planes per die.
    pub planes_per_die: u32,
    /// Erase blocks per plane.
    pub blocks_per_plane: u32,
    /// Pages per block.
    pub pages_per_block: u32,
    /// Bytes per page (a multiple of the mapping unit).
    pub page_bytes: u64,
    /// Array read time by page type (one entry per bit per cell).
    pub read_ns: Vec<u64>,
    /// Array program time by page type.
    pub program_ns: Vec<u64>,
    /// Block erase time (0 for PCM).
    pub erase_ns: u64,
    /// Channel bus rate.
    pub bus_bytes_per_s: u64,
    /// Command, address and status cycles per die operation.
    pub op_overhead_ns: u64,
    /// Multi-plane operations.
    pub multiplane: bool,
    /// With `multiplane`: the planes of one read must use the same page
    /// address (ONFI multi-plane addressing, which many parts require:
    /// only the plane address may differ), so random reads on different
    /// pages of a die's planes are served one after another. Programs
    /// still pair: a controller writes its planes' pages as one
    /// multi-plane page (its open blocks advance together), which this
    /// FTL's per-plane open blocks only approximate. False (the
    /// default): any pages of different planes pair.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiplane_same_page: bool,
    /// Erases a block endures (programs per block for PCM), for the
    /// lifetime estimate.
    pub endurance: u64,
    /// Probability (0..=1) that a page read fails its ECC decode and is
    /// read again with shifted read references (read retry): each retry
    /// is one more array read and channel transfer, and fails again with
    /// the same probability, up to `read_retry_max` retries. 0 (the
    /// default): every read succeeds at once and no number is drawn.
    #[serde(default)]
    pub read_retry_probability: f64,
    /// Most read retries of one page read (the retry table's length);
    /// 0 to 64.
    #[serde(default)]
    pub read_retry_max: u32,
    /// Spread of the program time (incremental step pulse programming:
    /// the loop count varies from page to page with its slowest cells), as
    /// the half-width relative to `program_ns`: each program takes
    /// `program_ns * (1 + program_spread * u)`, `u` uniform in -1..1, so
    /// the mean stays `program_ns`. 0 (the default): no spread; 0 to 1.
    #[serde(default)]
    pub program_spread: f64,
    /// Dies of one channel that may program at once (a supply or power
    /// budget: PCM programs by melting cells, with far more current than
    /// a read, so a board's regulator lets only so many chips program
    /// together). A program that would exceed it waits, at the head of its
    /// die's write queue, until one on its channel ends; reads are not
    /// limited. 0 (the default): no limit, nothing counted. 0 to
    /// `dies_per_channel`.
    #[serde(default)]
    pub programs_per_channel: u32,
    /// Program and erase suspend: a host read that reaches a die busy
    /// with a program or an erase suspends it, is read (array read and
    /// transfer), and the program or erase resumes, its end pushed out by
    /// the read and `suspend_resume_ns`. False (the default): the read
    /// waits for the program or erase to end, as on controllers without
    /// suspend (the 2008-2010 X25-E and ioDrive; ONFI made program and
    /// erase suspend optional commands of later parts).
    #[serde(default)]
    pub suspend: bool,
    /// With `suspend`: the time a suspended program or erase loses to its
    /// suspend and resume (the die's suspend latency and the restart of
    /// the interrupted step), added to its end; 0 to 10^9 ns.
    #[serde(default)]
    pub suspend_resume_ns: u64,
    /// The order in which an idle die takes its queued operations
    /// ([`DieOrder`]); `reads_first` by default. Orthogonal to `suspend`,
    /// which decides what a read does at a busy die: with `arrival` a read
    /// suspends (or waits for) only the operation running, and only once
    /// every operation queued before it has been taken.
    #[serde(default)]
    pub die_order: DieOrder,
    /// An SLC write cache in front of the native cells (`None`, the
    /// default: none). See [`super::slc`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slc_cache: Option<super::slc::SlcCacheConfig>,
}

/// `[ssd]`: the drive's front end, with its array and FTL.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    /// Host link rate per direction.
    pub link_bytes_per_s: Rw,
    /// Both directions at once (PCIe); false: one shared direction (SATA).
    pub link_duplex: bool,
    /// Fixed protocol cost per request on the link (command and status
    /// frames, DMA set-up).
    pub link_latency_ns: Rw,
    /// Commands the drive accepts at once (NCQ depth for SATA).
    pub tags: u32,
    /// Controller time per command (serialised).
    pub command_ns: Rw,
    /// Controller time per mapping unit's worth of data (serialised),
    /// charged per byte of the request: a request of half a unit pays half.
    pub unit_ns: Rw,
    /// The controller's firmware serves other commands while a write waits
    /// for the NAND reads it needs (a translation page missing from the
    /// mapping cache, a read-modify-write's old data): the wait is that
    /// write's alone, and the controller is taken for `command_ns` and
    /// `unit_ns` once the data is there (a multi-core NVMe controller,
    /// whose firmware handles commands as events). False (the default):
    /// the one FTL thread waits for those reads holding the controller, so
    /// every command behind the write waits too (the single-threaded
    /// firmware of the SATA era).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub concurrent_firmware: bool,
    /// DRAM write buffer (0: none; writes are acknowledged once programmed).
    pub write_buffer_bytes: u64,
    /// Units read ahead when a read continues the previous one (0: off).
    pub read_ahead_units: u32,
    /// The memory array.
    pub nand: NandConfig,
    /// The flash translation layer.
    pub ftl: FtlConfig,
    /// A zoned namespace (NVMe ZNS; `None`, the default: a conventional
    /// namespace). See [`super::zones`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zns: Option<super::zones::ZnsConfig>,
    /// Flexible data placement (`None`, the default: no FDP). See
    /// [`super::fdp`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fdp: Option<super::fdp::FdpConfig>,
}

/// Validate an SSD configuration for a device of `capacity` bytes.
pub fn validate(cfg: &SsdConfig, capacity: u64) -> Result<(), ConfigError> {
    let n = &cfg.nand;
    if let Some(z) = &cfg.zns {
        z.validate(capacity, cfg.ftl.map_unit_bytes.max(1))?;
    }
    if let Some(f) = &cfg.fdp {
        f.validate()?;
        if f.enabled && cfg.zns.is_some() {
            return Err(ConfigError::Invalid {
                field: "ssd.fdp.enabled".into(),
                message: "a zoned namespace places data by zone: FDP is for conventional namespaces (NVMe 2.0: FDP and the Zoned Namespace command set are not used together)".into(),
            });
        }
    }
    check_range("ssd.tags", cfg.tags, 1, 65536)?;
    check_range(
        "ssd.link_bytes_per_s.read",
        cfg.link_bytes_per_s.read,
        1,
        u64::MAX,
    )?;
    check_range(
        "ssd.link_bytes_per_s.write",
        cfg.link_bytes_per_s.write,
        1,
        u64::MAX,
    )?;
    check_range("ssd.nand.channels", n.channels, 1, 1024)?;
    check_range("ssd.nand.dies_per_channel", n.dies_per_channel, 1, 256)?;
    check_range("ssd.nand.planes_per_die", n.planes_per_die, 1, 16)?;
    check_range("ssd.nand.blocks_per_plane", n.blocks_per_plane, 1, 1 << 24)?;
    check_range("ssd.nand.pages_per_block", n.pages_per_block, 1, 1 << 16)?;
    check_range("ssd.nand.bus_bytes_per_s", n.bus_bytes_per_s, 1, u64::MAX)?;
    check_range(
        "ssd.ftl.map_unit_bytes",
        cfg.ftl.map_unit_bytes,
        512,
        1 << 20,
    )?;
    check_range("ssd.ftl.fullness", cfg.ftl.fullness, 0.0, 1.0)?;
    check_range(
        "ssd.nand.read_retry_probability",
        n.read_retry_probability,
        0.0,
        1.0,
    )?;
    check_range("ssd.nand.read_retry_max", n.read_retry_max, 0, 64)?;
    check_range("ssd.nand.program_spread", n.program_spread, 0.0, 1.0)?;
    check_range(
        "ssd.nand.programs_per_channel",
        n.programs_per_channel,
        0,
        n.dies_per_channel,
    )?;
    check_range(
        "ssd.nand.suspend_resume_ns",
        n.suspend_resume_ns,
        0,
        1_000_000_000,
    )?;
    check_range(
        "ssd.ftl.gc_threshold_blocks",
        cfg.ftl.gc_threshold_blocks,
        2,
        1 << 20,
    )?;
    let bad = |f: &str, m: String| {
        Err(ConfigError::Invalid {
            field: f.into(),
            message: m,
        })
    };
    let types = n.cell.page_types();
    if n.read_ns.len() != types {
        return bad(
            "ssd.nand.read_ns",
            format!(
                "{:?} cells need {types} page types, got {}",
                n.cell,
                n.read_ns.len()
            ),
        );
    }
    if n.program_ns.len() != types {
        return bad(
            "ssd.nand.program_ns",
            format!(
                "{:?} cells need {types} page types, got {}",
                n.cell,
                n.program_ns.len()
            ),
        );
    }
    if n.page_bytes == 0 || !n.page_bytes.is_multiple_of(cfg.ftl.map_unit_bytes) {
        return bad(
            "ssd.nand.page_bytes",
            format!("{} is not a multiple of the mapping unit", n.page_bytes),
        );
    }
    let upp = n.page_bytes / cfg.ftl.map_unit_bytes;
    if cfg.ftl.mapping == Mapping::InPlace && upp != 1 {
        return bad(
            "ssd.ftl.mapping",
            "in-place mapping needs pages of one mapping unit".into(),
        );
    }
    if cfg.ftl.mapping == Mapping::Page && n.cell == CellType::Pcm {
        return bad(
            "ssd.ftl.mapping",
            "PCM is written in place: use mapping = \"in-place\"".into(),
        );
    }
    if cfg.write_buffer_bytes > 0 && cfg.write_buffer_bytes < n.page_bytes {
        return bad(
            "ssd.write_buffer_bytes",
            format!("{} is smaller than one page", cfg.write_buffer_bytes),
        );
    }
    cfg.ftl.map_cache.validate(n.page_bytes)?;
    if let Some(slc) = &n.slc_cache {
        slc.validate(n.cell.page_types())?;
    }
    let (geo, _) = geometry(cfg);
    let logical = match &cfg.zns {
        // a zoned namespace stores its zones' capacity only
        Some(z) => super::zones::ZonedNs::logical_units(z, capacity, cfg.ftl.map_unit_bytes),
        None => capacity / cfg.ftl.map_unit_bytes,
    };
    Ftl::check_fit(&cfg.ftl, geo, logical).map_err(|e| ConfigError::Invalid {
        field: "device.capacity_bytes".into(),
        message: e.to_string(),
    })
}

pub(super) fn geometry(cfg: &SsdConfig) -> (Geometry, u32) {
    let n = &cfg.nand;
    let planes = n.channels * n.dies_per_channel * n.planes_per_die;
    let upp = (n.page_bytes / cfg.ftl.map_unit_bytes) as u32;
    (
        Geometry {
            planes,
            blocks_per_plane: n.blocks_per_plane,
            pages_per_block: n.pages_per_block,
            units_per_page: upp,
        },
        upp,
    )
}

/// Planes in the order host writes stripe over them: channel first, then
/// die, then plane, so consecutive pages go to different buses. A plane's
/// global number is `(channel * dies_per_channel + die) * planes_per_die +
/// plane`.
pub(super) fn plane_order(n: &NandConfig) -> Vec<u32> {
    let (c, d, p) = (n.channels, n.dies_per_channel, n.planes_per_die);
    (0..c * d * p)
        .map(|k| {
            let ch = k % c;
            let die = (k / c) % d;
            let pl = k / (c * d);
            (ch * d + die) * p + pl
        })
        .collect()
}
