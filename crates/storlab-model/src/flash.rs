//! A solid-state drive: host link, controller, DRAM write buffer, NAND (or
//! PCM) chips on channels, and a flash translation layer ([`crate::ftl`]).
//!
//! Request path. Reads: the controller parses the command and looks up the
//! mapping (it is one resource: `command_ns` plus `unit_ns` per mapping
//! unit, serialised, which is what limits a SATA SSD's IOPS); each unit is
//! served from the write buffer, from read-ahead, or by a page read on its
//! die; data crosses the channel to the controller and the link to the
//! host. Writes: the data crosses the link into the write buffer (waiting
//! for space), the controller processes it, the FTL places every unit and
//! the write is acknowledged; the page program happens later, when the page
//! is full, and frees the buffer space. A FUA write, or any write on a
//! device with no buffer, is acknowledged once its pages are programmed; a
//! flush waits for every page programmed before it.
//!
//! The NAND array. Channels are buses shared by their dies; each die has
//! its planes and two queues: host reads first, then programs, garbage
//! collection and erases in order. A die serves one operation at a time,
//! or with `multiplane` one per plane if they are of the same kind (the
//! later planes' ops are taken from the queue only if nothing before them
//! on the same plane is skipped). Read: command, array read (`read_ns` by
//! page type), transfer out over the channel. Program: transfer in over the
//! channel, array program (`program_ns` by page type). Erase: `erase_ns`.
//! Page types: SLC and PCM have one; MLC alternates LSB/MSB pages, TLC
//! LSB/CSB/MSB, so the slow pages are every second or third.
//!
//! Spread (physical variation, drawn from a `rand_pcg` generator seeded
//! from `ssd.ftl.seed`, so a run is the same for a seed): a page read
//! fails its ECC decode with `read_retry_probability` and is read again
//! (array read and channel transfer) up to `read_retry_max` times; a
//! program takes `program_ns` spread uniformly by `program_spread` (the
//! ISPP loop count). Both default to 0, which draws nothing.
//!
//! Chips in lock-step (a controller that drives several chips as one, such
//! as the Fusion-io FPGA) are expressed through the parameters: one channel
//! whose bus is as wide as the ganged chips together and pages as large as
//! their pages together.
//!
//! The FTL changes its mapping at once; the NAND work those changes imply
//! is queued on the dies, so garbage collection delays host IO exactly
//! through the die queues and the write buffer it keeps full.

use std::collections::{BTreeMap, VecDeque};

use rand::distributions::Distribution;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, Component};
use crate::config::{check_range, ConfigError};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::ftl::mapcache::MapCache;
use crate::ftl::{Div32, Ftl, FtlConfig, Geometry, Mapping, NandKind, NONE};
use crate::report::{DeviceReport, Utilisation, Wear};
use crate::units::{xfer_ns, Rw, Timeline};

/// Memory cell technology.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellType {
    /// Single-level cell NAND: one page type.
    Slc,
    /// Multi-level cell NAND: LSB and MSB pages.
    Mlc,
    /// Triple-level cell NAND: LSB, CSB and MSB pages.
    Tlc,
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
    /// Controller time per mapping unit (serialised).
    pub unit_ns: Rw,
    /// DRAM write buffer (0: none; writes are acknowledged once programmed).
    pub write_buffer_bytes: u64,
    /// Units read ahead when a read continues the previous one (0: off).
    pub read_ahead_units: u32,
    /// The memory array.
    pub nand: NandConfig,
    /// The flash translation layer.
    pub ftl: FtlConfig,
}

/// Validate an SSD configuration for a device of `capacity` bytes.
pub fn validate(cfg: &SsdConfig, capacity: u64) -> Result<(), ConfigError> {
    let n = &cfg.nand;
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
    let (geo, _) = geometry(cfg);
    Ftl::check_fit(&cfg.ftl, geo, capacity / cfg.ftl.map_unit_bytes).map_err(|e| {
        ConfigError::Invalid {
            field: "device.capacity_bytes".into(),
            message: e.to_string(),
        }
    })
}

fn geometry(cfg: &SsdConfig) -> (Geometry, u32) {
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
fn plane_order(n: &NandConfig) -> Vec<u32> {
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

const EV_DIE: u64 = 0;
const EV_RCMD: u64 = 1;
const EV_WREADY: u64 = 2;
/// A tag freed (at a completion time that may lie ahead): admit a waiter.
const EV_ADMIT: u64 = 3;
const READY: u32 = u32::MAX;
const WINDOW: usize = 8;

#[derive(Clone, Copy, Debug, Default)]
struct Req {
    id: u64,
    op: Option<Op>,
    arrival: Nanos,
    lpn0: u32,
    units: u32,
    bytes: u64,
    pending: u32,
    /// When the command left the controller.
    t_cmd: Nanos,
    data_done: Nanos,
    bd: Breakdown,
    /// The latest data's path after `t_cmd`.
    crit: Crit,
    durable: bool,
    background_wait: bool,
    /// Translation pages this read still waits for (cached mapping table).
    map_wait: u32,
}

/// A read's critical path after its command (the components it can
/// have, not a whole [`Breakdown`]: a read request is written, copied and
/// merged once per completion, and the full table is 152 bytes).
#[derive(Clone, Copy, Debug, Default)]
struct Crit {
    /// Its die queue (`Background` if it queued behind collection).
    queue: u64,
    behind_gc: bool,
    media: u64,
    interconnect: u64,
    link: u64,
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

/// A NAND operation in its die's current batch (and, for host reads, in
/// the die's read queue). Its times are its batch's, kept once in the
/// [`Die`].
#[derive(Clone, Copy, Debug)]
struct FOp {
    kind: NandKind,
    /// A read-ahead op's name in `pf` (unique among live ones).
    id: u32,
    die: u32,
    /// `1 << ` its plane within the die (multi-plane batching).
    plane_bit: u32,
    block: u32,
    page: u32,
    units: u32,
    lpn0: u32,
    req: u32,
    background: bool,
    prefetch: bool,
    seq: u64,
    behind_gc: bool,
    /// A translation page's read or program (cached mapping table).
    map: bool,
}

/// An operation of a die's write queue (programs, garbage collection's
/// reads, erases), held by value in 16 bytes: garbage collection queues
/// hundreds of ops on one die at once and the queues run thousands deep,
/// so their memory is swept far beyond the caches (at 48 bytes an op the
/// queues' writes were a third of the write path's last-level misses).
/// What only a host read needs (its request, read-ahead name, whether it
/// queued behind collection) is not here: this queue holds none.
#[derive(Clone, Copy, Debug)]
struct WOp {
    block: u32,
    units: u32,
    /// A host program's place in program order, its low 32 bits (fewer
    /// than 2^32 programs are ever outstanding, so [`Ssd::wop_seq`]
    /// recovers it exactly from the oldest outstanding one).
    seq: u32,
    /// Page within the block (`pages_per_block` is at most 2^16).
    page: u16,
    /// Its plane within the die (at most 16 planes).
    plane: u8,
    /// [`NandKind`] in bits 0-1, background in bit 2, a translation page
    /// (cached mapping table) in bit 3.
    flags: u8,
}

impl WOp {
    const BACKGROUND: u8 = 4;
    /// A translation page's program (cached mapping table).
    const MAP: u8 = 8;

    #[inline]
    fn kind(&self) -> NandKind {
        match self.flags & 3 {
            0 => NandKind::Read,
            1 => NandKind::Program,
            _ => NandKind::Erase,
        }
    }

    #[inline]
    fn kind_bits(kind: NandKind) -> u8 {
        match kind {
            NandKind::Read => 0,
            NandKind::Program => 1,
            NandKind::Erase => 2,
        }
    }
}

/// What the multi-plane batching reads of a queued op.
trait Queued: Copy {
    fn plane_bit(&self) -> u32;
    /// Its [`NandKind`] as [`WOp::kind_bits`] numbers it.
    fn kind_bits(&self) -> u8;
}

impl Queued for FOp {
    #[inline]
    fn plane_bit(&self) -> u32 {
        self.plane_bit
    }
    #[inline]
    fn kind_bits(&self) -> u8 {
        WOp::kind_bits(self.kind)
    }
}

impl Queued for WOp {
    #[inline]
    fn plane_bit(&self) -> u32 {
        1 << self.plane
    }
    #[inline]
    fn kind_bits(&self) -> u8 {
        self.flags & 3
    }
}

/// Take the next batch of `q` into `cur` (empty): its head, and with
/// multi-plane operations (`ppd` > 1) up to one op more per other plane of
/// the same kind from the next [`WINDOW`] ops, where nothing before them
/// on their plane is skipped if `strict` (the write queue keeps each
/// plane's order). False if `q` is empty.
///
/// `same`, if given, remembers how far the queue's front is known to hold
/// one plane only: under garbage collection a die's write queue holds a
/// victim's hundreds of ops on one plane in a row, where the scan can take
/// nothing, and each batch then checks the one op that entered the window
/// instead of scanning all of it again. (Speed only: the batch is the
/// scan's. Host reads land on any plane, so their queue does without.)
#[inline]
fn take_batch<T: Queued>(
    q: &mut VecDeque<T>,
    mut same: Option<&mut SamePlane>,
    cur: &mut Vec<FOp>,
    multiplane: bool,
    ppd: u32,
    strict: bool,
    conv: impl Fn(T) -> FOp,
) -> bool {
    debug_assert!(cur.is_empty());
    let scan = multiplane
        && ppd > 1
        && match same.as_deref_mut() {
            None => true,
            Some(same) => {
                // extend the run of ops on the head's plane over the window
                // (the head and the WINDOW ops behind it)
                let len = q.len().min(WINDOW + 1) as u32;
                if same.n == 0 {
                    match q.front() {
                        Some(h) => {
                            *same = SamePlane {
                                n: 1,
                                bit: h.plane_bit(),
                            }
                        }
                        None => return false,
                    }
                }
                while same.n < len && q[same.n as usize].plane_bit() == same.bit {
                    same.n += 1;
                }
                // every op of the window on the head's plane: the scan would
                // take none
                same.n < len
            }
        };
    let Some(head) = q.pop_front() else {
        return false;
    };
    if let Some(same) = same.as_deref_mut() {
        same.n = same.n.saturating_sub(1);
    }
    // the die's next batch will scan from about here: its ops were
    // queued long ago (queues run thousands deep under garbage
    // collection) and are out of cache, so ask for them now (a hint)
    if let Some(o) = q.get(WINDOW + 4) {
        crate::ftl::prefetch(o);
    }
    cur.push(conv(head));
    if scan {
        let kind = head.kind_bits();
        let all = if ppd >= 32 { u32::MAX } else { (1 << ppd) - 1 };
        let mut used = head.plane_bit();
        let mut blocked = 0u32;
        let mut take: [usize; WINDOW] = [0; WINDOW];
        let mut nt = 0;
        for (i, o) in q.iter().take(WINDOW).enumerate() {
            let bit = o.plane_bit();
            if (used | blocked) & bit != 0 {
                continue;
            }
            if o.kind_bits() != kind {
                if strict {
                    blocked |= bit;
                    // no plane left that could add an op
                    if used | blocked == all {
                        break;
                    }
                }
                continue;
            }
            used |= bit;
            take[nt] = i;
            nt += 1;
            if nt + 1 >= ppd as usize {
                break;
            }
        }
        if nt > 0 {
            // ops left the middle of the queue: what is known of its
            // front may no longer hold
            if let Some(same) = same {
                same.n = 0;
            }
        }
        for k in (0..nt).rev() {
            let o = q.remove(take[k]).expect("index from the scan");
            cur.push(conv(o));
        }
        // keep the batch in queue order
        cur[1..].reverse();
    }
    true
}

/// How many ops at the front of a die queue are known to be on one
/// plane, and that plane's bit (see [`take_batch`]).
#[derive(Clone, Copy, Debug, Default)]
struct SamePlane {
    n: u32,
    bit: u32,
}

#[derive(Clone, Debug, Default)]
struct Die {
    channel: u32,
    busy: bool,
    reads: VecDeque<FOp>,
    writes: VecDeque<WOp>,
    /// The front run of `writes` known to be on one plane.
    writes_same: SamePlane,
    cur: Vec<FOp>,
    /// When the current batch started, and when its array work ends
    /// (reads: the data is in the page register; programs and erases:
    /// done).
    start: Nanos,
    media_end: Nanos,
    busy_ns: u64,
    background: u32,
}

/// Pages in the write buffer (see [`Ssd`]'s `inbuf`).
type InBuf = std::collections::HashMap<u32, u32, foldhash::fast::FixedState>;

/// Counters of one run.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    nand_reads: u64,
    nand_programs: u64,
    gc_reads: u64,
    gc_programs: u64,
    erases: u64,
    buffer_hits: u64,
    unmapped_reads: u64,
    prefetched: u64,
    prefetch_hits: u64,
    buffer_waits: u64,
    host_read_units: u64,
    read_retries: u64,
    map_reads: u64,
    map_programs: u64,
}

/// The NAND array's physical variations (read retries, program time),
/// drawn from a generator seeded from `ssd.ftl.seed`, so a run is the same
/// for a seed. Off (both zero) it draws nothing.
struct Spread {
    rng: rand_pcg::Pcg64Mcg,
    retry_p: f64,
    retry_max: u32,
    program: f64,
    /// `u` of [`Spread::program`], uniform in -1..=1: built once (what
    /// `gen_range(-1.0..=1.0)` builds on every call, so the draws are the
    /// same).
    unit: rand::distributions::Uniform<f64>,
}

impl Spread {
    fn new(n: &NandConfig, seed: u64) -> Self {
        Spread {
            // a sub-seed of its own, so the FTL's draws stay as they were
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x6e61_6e64_5f73_7072),
            retry_p: if n.read_retry_max == 0 {
                0.0
            } else {
                n.read_retry_probability
            },
            retry_max: n.read_retry_max,
            program: n.program_spread,
            unit: rand::distributions::Uniform::new_inclusive(-1.0, 1.0),
        }
    }

    /// Retries of one page read (geometric, capped).
    #[inline]
    fn retries(&mut self) -> u32 {
        if self.retry_p <= 0.0 {
            return 0;
        }
        let mut k = 0;
        while k < self.retry_max && self.rng.gen::<f64>() < self.retry_p {
            k += 1;
        }
        k
    }

    /// One program's time, `typ` spread by the ISPP variation.
    #[inline]
    fn program(&mut self, typ: u64) -> u64 {
        if self.program <= 0.0 {
            return typ;
        }
        let u = self.unit.sample(&mut self.rng);
        round_non_negative(typ as f64 * (1.0 + self.program * u))
    }
}

/// `x.round() as u64` for `x >= 0` (half away from zero), without the
/// library call `f64::round` is on x86-64's baseline (no SSE4.1 rounding
/// instruction): below 2^52 the fraction `x - trunc(x)` is exact, and from
/// 2^52 up every `f64` is an integer.
#[inline]
fn round_non_negative(x: f64) -> u64 {
    debug_assert!(x >= 0.0);
    // below 2^63 through the signed conversions, one instruction each way
    // on x86-64's baseline (the unsigned ones are sequences of about ten:
    // a fifth of starting a die's program); the same numbers
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if x < TWO_63 {
        let i = x as i64;
        return if x - i as f64 >= 0.5 {
            i as u64 + 1
        } else {
            i as u64
        };
    }
    let i = x as u64;
    if x - i as f64 >= 0.5 {
        i + 1
    } else {
        i
    }
}

/// A solid-state drive.
pub struct Ssd {
    cfg: SsdConfig,
    capacity: u64,
    unit: u64,
    upp: u32,
    ppd: u32,
    /// Division by `upp`, `ppd`, blocks per plane and the page types (shifts or
    /// multiplies, never a hardware division: several per NAND op).
    upp_div: Div32,
    ppd_div: Div32,
    bpp_div: Div32,
    types_div: Div32,
    /// Channel time of `k` units, `k` up to a page (`xfer_ns` of their
    /// bytes at the bus rate), and of a whole page.
    xfer_units_ns: Vec<u64>,
    xfer_page_ns: u64,
    ftl: Ftl,
    dies: Vec<Die>,
    channels: Vec<Timeline>,
    /// Dies programming on each channel (counted only with
    /// `programs_per_channel` set).
    programming: Vec<u32>,
    link: [Timeline; 2],
    ctrl: Timeline,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    /// The next read-ahead op's id.
    next_pf_id: u32,
    tags: crate::units::Tags,
    buf_cap: u64,
    buf_used: u64,
    buf_wait: VecDeque<u32>,
    /// Pages not yet programmed → host units of them held in the buffer.
    /// A hash map, looked up and never iterated (so the model stays
    /// deterministic): every buffered unit is an insert or an update and
    /// every host program a removal, and an ordered map's walk down its
    /// tree was a twentieth of a garbage-collected write's time.
    inbuf: InBuf,
    prog_seq: u64,
    done_base: u64,
    done_window: VecDeque<bool>,
    flush_wait: VecDeque<(u64, u32)>,
    last_read_end: u32,
    pf: BTreeMap<u32, u32>,
    pf_end: u32,
    pf_waiters: Vec<(u32, u32)>,
    /// First logical unit of each write whose data is on its way in, in
    /// the order they started (for prefetch hints only).
    wpipe: VecDeque<u32>,
    stats: Stats,
    spread: Spread,
    /// The cached mapping table (`ssd.ftl.map_cache`; `None` when off).
    map: Option<MapCache>,
    /// Mapping units a translation page moves over the channel.
    map_units: u32,
}

impl Ssd {
    /// Build from a validated configuration (see [`validate`]); runs the
    /// configured preconditioning.
    pub fn new(cfg: SsdConfig, capacity: u64) -> Result<Self, ConfigError> {
        validate(&cfg, capacity)?;
        let (geo, upp) = geometry(&cfg);
        let unit = cfg.ftl.map_unit_bytes;
        let mut ftl =
            Ftl::new(&cfg.ftl, geo, capacity / unit, plane_order(&cfg.nand)).map_err(|e| {
                ConfigError::Invalid {
                    field: "device.capacity_bytes".into(),
                    message: e.to_string(),
                }
            })?;
        ftl.precondition(cfg.ftl.precondition, cfg.ftl.fullness);
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
            channels: vec![Timeline::default(); n.channels as usize],
            programming: vec![0; n.channels as usize],
            link: [Timeline::default(); 2],
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
            cfg,
        })
    }

    /// Channel time of `units` units (`xfer_ns` of their bytes at the
    /// bus rate).
    #[inline]
    fn xfer_units(&self, units: u32) -> u64 {
        match self.xfer_units_ns.get(units as usize) {
            Some(&t) => t,
            None => xfer_ns(units as u64 * self.unit, self.cfg.nand.bus_bytes_per_s),
        }
    }

    /// The FTL (for tests and reports).
    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    #[inline]
    fn tok(kind: u64, idx: u32) -> u64 {
        ((idx as u64) << 2) | kind
    }

    fn alloc_req(&mut self, r: Req) -> u32 {
        crate::units::slab_insert(&mut self.reqs, &mut self.free_reqs, r)
    }

    /// Move `bytes` to the host; returns when the last byte is there.
    #[inline]
    fn link_out(&mut self, at: Nanos, bytes: u64) -> Nanos {
        let dur = xfer_ns(bytes, self.cfg.link_bytes_per_s.read);
        let s = self.link[0].reserve(at, dur);
        s + dur
    }

    /// Move `bytes` from the host; returns when the last byte is here.
    #[inline]
    fn link_in(&mut self, at: Nanos, bytes: u64) -> Nanos {
        let dur = xfer_ns(bytes, self.cfg.link_bytes_per_s.write);
        let i = if self.cfg.link_duplex { 1 } else { 0 };
        let s = self.link[i].reserve(at, dur);
        s + dur
    }

    fn admit(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        self.reqs[ri as usize]
            .bd
            .add(Component::DeviceQueue, now - r.arrival);
        match r.op.expect("live request") {
            Op::Read => {
                let dur = self.cfg.command_ns.read + r.units as u64 * self.cfg.unit_ns.read;
                let s = self.ctrl.reserve(now, dur);
                let rm = &mut self.reqs[ri as usize];
                rm.bd.add(Component::DeviceQueue, s - now);
                rm.bd.add(Component::Controller, dur);
                rm.t_cmd = s + dur;
                cx.wake(s + dur, Self::tok(EV_RCMD, ri));
            }
            Op::Write => {
                if r.durable {
                    self.start_write(now, ri, cx);
                } else if self.buf_used == 0 || self.buf_used + r.units as u64 <= self.buf_cap {
                    self.buf_used += r.units as u64;
                    self.start_write(now, ri, cx);
                } else {
                    self.stats.buffer_waits += 1;
                    self.buf_wait.push_back(ri);
                    self.unjam(now, cx);
                }
            }
            Op::Trim => {
                if self.ftl.mapping() == Mapping::Page {
                    for lpn in r.lpn0..r.lpn0 + r.units {
                        self.ftl.trim(lpn);
                        self.pf.remove(&lpn);
                    }
                }
                let dur = self.cfg.command_ns.write;
                let s = self.ctrl.reserve(now, dur);
                let at = s + dur + self.cfg.link_latency_ns.write;
                let rm = &mut self.reqs[ri as usize];
                rm.bd.add(Component::DeviceQueue, s - now);
                rm.bd.add(Component::Controller, dur);
                rm.bd.add(Component::Link, self.cfg.link_latency_ns.write);
                self.finish(at, ri, cx);
            }
            Op::Flush => {
                self.ftl.pad_open_pages();
                self.enqueue_ftl_ops(now, cx);
                let target = self.prog_seq;
                if self.done_base >= target {
                    let at = now + self.cfg.command_ns.write;
                    self.reqs[ri as usize]
                        .bd
                        .add(Component::Controller, self.cfg.command_ns.write);
                    self.finish(at, ri, cx);
                } else {
                    self.flush_wait.push_back((target, ri));
                }
            }
        }
    }

    /// Data in over the link, then the controller; `EV_WREADY` when done.
    fn start_write(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        // its mapping entry is needed when the data is in (a write that
        // waited for buffer space may have lost the one fetched at submit)
        self.ftl.prefetch(r.lpn0);
        self.wpipe.push_back(r.lpn0);
        let lat = self.cfg.link_latency_ns.write;
        let in_end = self.link_in(now + lat, r.bytes);
        let map_ns = if self.map.is_some() {
            self.map_write(now, r.lpn0, r.units, cx)
        } else {
            0
        };
        let dur = self.cfg.command_ns.write + r.units as u64 * self.cfg.unit_ns.write + map_ns;
        let s = self.ctrl.reserve(in_end, dur);
        let rm = &mut self.reqs[ri as usize];
        let waited = (now - rm.arrival).saturating_sub(rm.bd.total());
        if waited > 0 {
            let c = if rm.background_wait {
                Component::Background
            } else {
                Component::DeviceQueue
            };
            rm.bd.add(c, waited);
        }
        rm.bd.add(Component::Link, in_end - now);
        rm.bd.add(Component::DeviceQueue, s - in_end);
        rm.bd.add(Component::Controller, dur - map_ns);
        rm.bd.add(Component::Media, map_ns);
        cx.wake(s + dur, Self::tok(EV_WREADY, ri));
    }

    /// When writes wait for buffer space that no queued program will free
    /// (every buffered unit sits in a partly filled page), program those
    /// pages now.
    fn unjam(&mut self, now: Nanos, cx: &mut Cx) {
        if !self.buf_wait.is_empty() && self.prog_seq == self.done_base {
            self.ftl.pad_open_pages();
            self.enqueue_ftl_ops(now, cx);
        }
    }

    fn write_ready(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        for lpn in r.lpn0..r.lpn0 + r.units {
            let ppa = self.ftl.write(lpn);
            if !r.durable {
                *self.inbuf.entry(self.upp_div.div(ppa)).or_insert(0) += 1;
            }
            if !self.pf.is_empty() {
                self.pf.remove(&lpn);
            }
        }
        // writes are ready in the order they started (one controller
        // timeline): the next one's mapping entry has had this write's
        // work (and any collection it caused) to arrive, so fetch the
        // reverse entry and block it will invalidate (hints only; asked
        // before this write's work, the entry, fetched when the next
        // write started just before, was often still on its way)
        self.wpipe.pop_front();
        if let Some(&next) = self.wpipe.front() {
            self.ftl.prefetch_overwrite(next);
        }
        if r.durable {
            self.ftl.pad_open_pages();
            self.enqueue_ftl_ops(now, cx);
            let target = self.prog_seq;
            if self.done_base >= target {
                self.finish(now, ri, cx);
            } else {
                self.flush_wait.push_back((target, ri));
            }
        } else {
            self.enqueue_ftl_ops(now, cx);
            self.finish(now, ri, cx);
        }
    }

    /// Queue the NAND work the FTL produced.
    fn enqueue_ftl_ops(&mut self, now: Nanos, cx: &mut Cx) {
        if self.ftl.ops.is_empty() {
            return;
        }
        let ops = std::mem::take(&mut self.ftl.ops);
        let mut touched: u64 = 0;
        let mut touched_many = false;
        // a collection's ops come in runs on one plane (its victim's
        // reads, its destination's programs, the erase): divide once per
        // run (`lo` the plane's first block)
        let bpp = self.bpp_div.d();
        let (mut lo, mut die, mut pid) = (NONE, 0, 0);
        for o in &ops {
            if o.block < lo || o.block - lo >= bpp {
                let plane = self.bpp_div.div(o.block);
                lo = plane * bpp;
                die = self.ppd_div.div(plane);
                pid = self.ppd_div.rem(plane) as u8;
            }
            let seq = if o.kind == NandKind::Program && !o.background {
                let s = self.prog_seq;
                self.prog_seq += 1;
                self.done_window.push_back(false);
                s
            } else {
                0
            };
            debug_assert!(o.page <= u16::MAX as u32);
            let op = WOp {
                block: o.block,
                units: o.units,
                seq: seq as u32,
                page: o.page as u16,
                plane: pid,
                flags: WOp::kind_bits(o.kind) | if o.background { WOp::BACKGROUND } else { 0 },
            };
            let d = &mut self.dies[die as usize];
            if o.background {
                d.background += 1;
            }
            d.writes.push_back(op);
            if die < 64 {
                touched |= 1 << die;
            } else {
                touched_many = true;
            }
        }
        let mut ops = ops;
        ops.clear();
        self.ftl.ops = ops;
        if touched_many {
            for d in 0..self.dies.len() as u32 {
                self.start_die(now, d, cx);
            }
        } else {
            while touched != 0 {
                let d = touched.trailing_zeros();
                touched &= touched - 1;
                self.start_die(now, d, cx);
            }
        }
    }

    /// A read's command is parsed: serve each unit from the buffer,
    /// read-ahead or its die.
    fn read_cmd(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        if self.map.is_some() && self.map_read(now, ri, cx) {
            return;
        }
        self.read_data(now, ri, cx);
    }

    /// The read's mapping entries are at hand: serve each unit.
    fn read_data(&mut self, now: Nanos, ri: u32, cx: &mut Cx) {
        let r = self.reqs[ri as usize];
        let last = r.lpn0 + r.units;
        let mut hit_units = 0u64;
        let mut pending = 0u32;
        let mut lpn = r.lpn0;
        self.stats.host_read_units += r.units as u64;
        while lpn < last {
            let Some(ppa) = self.ftl.lookup(lpn) else {
                self.stats.unmapped_reads += 1;
                hit_units += 1;
                lpn += 1;
                continue;
            };
            let page_g = self.upp_div.div(ppa);
            if !self.inbuf.is_empty() && self.inbuf.contains_key(&page_g) {
                self.stats.buffer_hits += 1;
                hit_units += 1;
                lpn += 1;
                continue;
            }
            if !self.pf.is_empty() {
                if let Some(&st) = self.pf.get(&lpn) {
                    self.stats.prefetch_hits += 1;
                    if st == READY {
                        self.pf.remove(&lpn);
                        hit_units += 1;
                    } else {
                        self.pf_waiters.push((st, ri));
                        pending += 1;
                    }
                    lpn += 1;
                    continue;
                }
            }
            // consecutive units in the same physical page form one read
            let mut n = 1;
            while lpn + n < last
                && self.upp_div.rem(ppa + n) != 0
                && self.ftl.lookup(lpn + n) == Some(ppa + n)
                && (self.pf.is_empty() || !self.pf.contains_key(&(lpn + n)))
            {
                n += 1;
            }
            self.queue_read(now, ppa, n, lpn, ri, false, cx);
            pending += 1;
            lpn += n;
        }
        let rm = &mut self.reqs[ri as usize];
        rm.pending = pending;
        rm.data_done = now;
        if hit_units > 0 {
            let e = self.link_out(now, hit_units * self.unit);
            let rm = &mut self.reqs[ri as usize];
            rm.data_done = e;
            rm.crit = Crit {
                link: e - now,
                ..Crit::default()
            };
        }
        // read-ahead when this read continues the previous one
        let ra = self.cfg.read_ahead_units;
        if ra > 0 && r.lpn0 == self.last_read_end {
            self.prefetch(now, last, ra, cx);
        }
        self.last_read_end = last;
        if pending == 0 {
            self.finish_read(ri, cx);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_read(
        &mut self,
        now: Nanos,
        ppa: u32,
        units: u32,
        lpn0: u32,
        req: u32,
        prefetch: bool,
        cx: &mut Cx,
    ) -> u32 {
        let block = self.ftl.block_of(ppa);
        let plane = self.bpp_div.div(block);
        let die = self.ppd_div.div(plane);
        let id = if prefetch {
            let id = self.next_pf_id;
            // READY (u32::MAX) names no op
            self.next_pf_id = if id + 1 == READY { 0 } else { id + 1 };
            id
        } else {
            NONE
        };
        let op = FOp {
            kind: NandKind::Read,
            id,
            die,
            plane_bit: 1 << self.ppd_div.rem(plane),
            block,
            page: self.ftl.page_of(ppa),
            units,
            lpn0,
            req,
            background: false,
            prefetch,
            seq: 0,
            behind_gc: self.dies[die as usize].background > 0,
            map: false,
        };
        self.dies[die as usize].reads.push_back(op);
        self.start_die(now, die, cx);
        id
    }

    /// Read `n` units after `from` into the buffer ahead of demand.
    fn prefetch(&mut self, now: Nanos, from: u32, n: u32, cx: &mut Cx) {
        let lpns = self.ftl.logical_units();
        let mut lpn = from.max(self.pf_end);
        let end = from.saturating_add(n).min(lpns);
        while lpn < end {
            let Some(ppa) = self.ftl.lookup(lpn) else {
                lpn += 1;
                continue;
            };
            if self.pf.contains_key(&lpn) || self.inbuf.contains_key(&(ppa / self.upp)) {
                lpn += 1;
                continue;
            }
            let mut k = 1;
            while lpn + k < end
                && (ppa + k) % self.upp != 0
                && self.ftl.lookup(lpn + k) == Some(ppa + k)
            {
                k += 1;
            }
            let oi = self.queue_read(now, ppa, k, lpn, NONE, true, cx);
            for l in lpn..lpn + k {
                self.pf.insert(l, oi);
            }
            self.stats.prefetched += k as u64;
            lpn += k;
        }
        self.pf_end = end;
        // bound the read-ahead buffer: forget the oldest entries
        while self.pf.len() > 4 * n as usize {
            self.pf.pop_first();
        }
    }

    /// The batch form of write-queue op `o` of die `die`, `done_base` the
    /// oldest outstanding host program (the op is not done, so its
    /// program order is at most 2^32 past it).
    #[inline]
    fn wop_op(o: WOp, die: u32, done_base: u64) -> FOp {
        FOp {
            kind: o.kind(),
            id: NONE,
            die,
            plane_bit: 1 << o.plane,
            block: o.block,
            page: o.page as u32,
            units: o.units,
            lpn0: NONE,
            req: NONE,
            background: o.flags & WOp::BACKGROUND != 0,
            prefetch: false,
            seq: if o.flags == WOp::kind_bits(NandKind::Program) {
                done_base + o.seq.wrapping_sub(done_base as u32) as u64
            } else {
                0
            },
            // only a host read's breakdown reads it; this queue has none
            behind_gc: false,
            map: o.flags & WOp::MAP != 0,
        }
    }

    /// Start the die's next operation(s) if it is idle.
    fn start_die(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let di = d as usize;
        if self.dies[di].busy {
            return;
        }
        let from_reads = !self.dies[di].reads.is_empty();
        if !from_reads && self.program_blocked(di) {
            return;
        }
        let mut cur = std::mem::take(&mut self.dies[di].cur);
        let multiplane = self.cfg.nand.multiplane;
        let die = &mut self.dies[di];
        let taken = if from_reads {
            take_batch(
                &mut die.reads,
                None,
                &mut cur,
                multiplane,
                self.ppd,
                false,
                |o| o,
            )
        } else {
            let done_base = self.done_base;
            take_batch(
                &mut die.writes,
                Some(&mut die.writes_same),
                &mut cur,
                multiplane,
                self.ppd,
                true,
                |o| Self::wop_op(o, d, done_base),
            )
        };
        if !taken {
            self.dies[di].cur = cur;
            return;
        }
        let n = &self.cfg.nand;
        let ch = self.dies[di].channel as usize;
        let t0 = now + n.op_overhead_ns;
        let kind = cur[0].kind;
        let (end, media_end) = match kind {
            NandKind::Read => {
                // the planes read together; a page that needs retries
                // re-reads (array read and transfer to the controller's
                // ECC) before its data can leave
                let mut tr = 0;
                for o in &cur {
                    let one = n.read_ns[self.types_div.rem(o.page) as usize];
                    let k = self.spread.retries() as u64;
                    let t = if k == 0 {
                        one
                    } else {
                        self.stats.read_retries += k;
                        one + k * (one + self.xfer_units(o.units))
                    };
                    tr = tr.max(t);
                }
                let t_r = t0 + tr;
                let mut end = t_r;
                for o in &cur {
                    let dur = self.xfer_units(o.units);
                    let s = self.channels[ch].reserve(t_r, dur);
                    end = end.max(s + dur);
                }
                (end, t_r)
            }
            NandKind::Program => {
                let mut tp = 0;
                for o in &cur {
                    let typ = n.program_ns[self.types_div.rem(o.page) as usize];
                    tp = tp.max(self.spread.program(typ));
                }
                let mut t = t0;
                for _ in &cur {
                    let dur = self.xfer_page_ns;
                    let s = self.channels[ch].reserve(t, dur);
                    t = s + dur;
                }
                let end = t + tp;
                if self.cfg.nand.programs_per_channel > 0 {
                    self.programming[ch] += 1;
                }
                (end, end)
            }
            NandKind::Erase => {
                let end = t0 + n.erase_ns;
                (end, end)
            }
        };
        let die = &mut self.dies[di];
        die.cur = cur;
        die.start = now;
        die.media_end = media_end;
        die.busy = true;
        die.busy_ns += end - now;
        cx.wake(end, Self::tok(EV_DIE, d));
    }

    fn die_done(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let di = d as usize;
        let cur = std::mem::take(&mut self.dies[di].cur);
        let programmed = cur[0].kind == NandKind::Program;
        for &o in &cur {
            self.finish_op(now, o, cx);
        }
        let mut cur = cur;
        cur.clear();
        let die = &mut self.dies[di];
        die.cur = cur;
        die.busy = false;
        if programmed && self.cfg.nand.programs_per_channel > 0 {
            self.program_slot_freed(now, d, cx);
        } else {
            self.start_die(now, d, cx);
        }
    }

    /// With `programs_per_channel` set: whether die `di`'s next write-queue
    /// operation is a program its channel has no room for. Off: never.
    #[inline]
    fn program_blocked(&self, di: usize) -> bool {
        let limit = self.cfg.nand.programs_per_channel;
        limit > 0
            && self.dies[di].writes.front().map(|o| o.kind()) == Some(NandKind::Program)
            && self.programming[self.dies[di].channel as usize] >= limit
    }

    /// A program on die `d` ended: release its channel's slot and start
    /// the channel's idle dies in turn from the next one, `d` itself last
    /// (round robin, so no die starves), each of which may take the slot.
    fn program_slot_freed(&mut self, now: Nanos, d: u32, cx: &mut Cx) {
        let n = self.cfg.nand.dies_per_channel;
        let ch = self.dies[d as usize].channel;
        self.programming[ch as usize] -= 1;
        let first = ch * n;
        // `d` is idle now, so it is started (last) by this loop
        for k in 1..=n {
            let e = first + (d - first + k) % n;
            if !self.dies[e as usize].busy {
                self.start_die(now, e, cx);
            }
        }
    }

    fn finish_op(&mut self, now: Nanos, o: FOp, cx: &mut Cx) {
        if o.map {
            self.map_op_done(now, o, cx);
            return;
        }
        if o.background {
            self.dies[o.die as usize].background -= 1;
        }
        match o.kind {
            NandKind::Read if o.background => self.stats.gc_reads += 1,
            NandKind::Read if o.prefetch => {
                self.stats.nand_reads += 1;
                for l in o.lpn0..o.lpn0 + o.units {
                    if self.pf.get(&l) == Some(&o.id) {
                        self.pf.insert(l, READY);
                    }
                }
                let mut i = 0;
                while i < self.pf_waiters.len() {
                    if self.pf_waiters[i].0 == o.id {
                        let (_, ri) = self.pf_waiters.swap_remove(i);
                        self.deliver(now, ri, &o, 1, cx);
                    } else {
                        i += 1;
                    }
                }
            }
            NandKind::Read => {
                self.stats.nand_reads += 1;
                self.deliver(now, o.req, &o, o.units, cx);
            }
            NandKind::Program => {
                if o.background {
                    self.stats.gc_programs += 1;
                    return;
                }
                self.stats.nand_programs += 1;
                let page_g = o.block * self.ftl.geometry().pages_per_block + o.page;
                if let Some(n) = self.inbuf.remove(&page_g) {
                    self.buf_used -= n as u64;
                }
                let k = (o.seq - self.done_base) as usize;
                self.done_window[k] = true;
                while self.done_window.front() == Some(&true) {
                    self.done_window.pop_front();
                    self.done_base += 1;
                }
                while let Some(&(target, ri)) = self.flush_wait.front() {
                    if target > self.done_base {
                        break;
                    }
                    self.flush_wait.pop_front();
                    let rm = &mut self.reqs[ri as usize];
                    let waited = (now - rm.arrival).saturating_sub(rm.bd.total());
                    rm.bd.add(Component::Media, waited);
                    self.finish(now, ri, cx);
                }
                // buffer space freed: admit waiting writes
                while let Some(&ri) = self.buf_wait.front() {
                    let units = self.reqs[ri as usize].units as u64;
                    if self.buf_used != 0 && self.buf_used + units > self.buf_cap {
                        break;
                    }
                    self.buf_wait.pop_front();
                    self.buf_used += units;
                    let behind_gc = self.dies.iter().any(|d| d.background > 0);
                    self.reqs[ri as usize].background_wait = behind_gc;
                    self.start_write(now, ri, cx);
                }
                self.unjam(now, cx);
            }
            NandKind::Erase => self.stats.erases += 1,
        }
    }

    /// Cached mapping table, write path: the write's entries are updated
    /// by the controller's one FTL thread, which waits while it makes room
    /// (programs an evicted dirty translation page: the directory may point
    /// at the new copy only once it is durable) and reads a missing page.
    /// Returns that synchronous time (each operation's own duration; the
    /// operations also occupy their dies).
    fn map_write(&mut self, now: Nanos, lpn0: u32, units: u32, cx: &mut Cx) -> u64 {
        let Some(m) = self.map.as_mut() else {
            return 0;
        };
        if units == 0 {
            return 0;
        }
        let (t0, t1, fragments) = m.begin(lpn0, units, true);
        let n = &self.cfg.nand;
        let wb_ns = n.op_overhead_ns + self.xfer_page_ns + n.program_ns[0];
        let load_ns = n.op_overhead_ns + n.read_ns[0] + self.xfer_units(self.map_units);
        let (writebacks, loads) = self.map_touch(now, t0, t1, true, fragments, NONE, cx);
        writebacks as u64 * wb_ns + loads as u64 * load_ns
    }

    /// Touch translation pages `t0..=t1` (written or read, `fragments` as
    /// [`MapCache::touch`] takes it) and queue the programs of the dirty
    /// pages evicted and the reads of the missing ones, the reads for
    /// request `req` (`NONE`: nobody waits on them). Returns how many of
    /// each were queued.
    #[allow(clippy::too_many_arguments)]
    fn map_touch(
        &mut self,
        now: Nanos,
        t0: u32,
        t1: u32,
        write: bool,
        fragments: bool,
        req: u32,
        cx: &mut Cx,
    ) -> (u32, u32) {
        let (mut writebacks, mut loads) = (0, 0);
        for t in t0..=t1 {
            let a = match self.map.as_mut() {
                Some(m) => m.touch(t, write, fragments),
                None => break,
            };
            if let Some(v) = a.writeback {
                writebacks += 1;
                self.queue_map_op(now, NandKind::Program, v, NONE, cx);
            }
            if let Some(t) = a.load {
                loads += 1;
                self.queue_map_op(now, NandKind::Read, t, req, cx);
            }
        }
        (writebacks, loads)
    }

    /// Cached mapping table, read path: queue the reads of the request's
    /// missing translation pages (and the write-back of dirty pages
    /// evicted for them); the controller serves other commands meanwhile.
    /// True when the request waits for them.
    fn map_read(&mut self, now: Nanos, ri: u32, cx: &mut Cx) -> bool {
        let r = self.reqs[ri as usize];
        let Some(m) = self.map.as_mut() else {
            return false;
        };
        if r.units == 0 {
            return false;
        }
        let (t0, t1, _) = m.begin(r.lpn0, r.units, false);
        let (_, wait) = self.map_touch(now, t0, t1, false, false, ri, cx);
        self.reqs[ri as usize].map_wait = wait;
        wait > 0
    }

    /// Queue translation page `t`'s read or program on its die (pages
    /// striped over the planes, in each plane's first block, page 0: the
    /// fast page type); `req` is the read waiting for it, or `NONE`.
    fn queue_map_op(&mut self, now: Nanos, kind: NandKind, t: u32, req: u32, cx: &mut Cx) {
        let plane = t % self.ftl.geometry().planes;
        let die = self.ppd_div.div(plane);
        let op = FOp {
            kind,
            id: NONE,
            die,
            plane_bit: 1 << self.ppd_div.rem(plane),
            block: plane * self.cfg.nand.blocks_per_plane,
            page: 0,
            units: self.map_units,
            lpn0: NONE,
            req,
            background: false,
            prefetch: false,
            seq: 0,
            behind_gc: self.dies[die as usize].background > 0,
            map: true,
        };
        let d = &mut self.dies[die as usize];
        if kind == NandKind::Read {
            d.reads.push_back(op);
        } else {
            d.writes.push_back(WOp {
                block: op.block,
                units: op.units,
                seq: 0,
                page: 0,
                plane: self.ppd_div.rem(plane) as u8,
                flags: WOp::kind_bits(kind) | WOp::MAP,
            });
        }
        self.start_die(now, die, cx);
    }

    /// A translation page's operation ended; a read waiting for its last
    /// page goes on (the wait counts as media time).
    fn map_op_done(&mut self, now: Nanos, o: FOp, cx: &mut Cx) {
        if o.kind != NandKind::Read {
            self.stats.map_programs += 1;
            return;
        }
        self.stats.map_reads += 1;
        if o.req == NONE {
            return;
        }
        let rm = &mut self.reqs[o.req as usize];
        rm.map_wait -= 1;
        if rm.map_wait == 0 {
            let w = now - rm.t_cmd;
            rm.bd.add(Component::Media, w);
            rm.t_cmd = now;
            self.read_data(now, o.req, cx);
        }
    }

    /// Data of `units` units of op `o` reached the controller for request
    /// `ri`: move it to the host.
    fn deliver(&mut self, now: Nanos, ri: u32, o: &FOp, units: u32, cx: &mut Cx) {
        let e = self.link_out(now, units as u64 * self.unit);
        let rm = &mut self.reqs[ri as usize];
        if e >= rm.data_done {
            rm.data_done = e;
            // the critical path from the command's end: die queue, array,
            // channel, link (clamped: read-ahead ops may predate the command)
            let t = rm.t_cmd;
            // `o` is in the batch its die is finishing
            let die = &self.dies[o.die as usize];
            let start = die.start.max(t);
            let media_end = die.media_end.max(start);
            let end = now.max(media_end);
            rm.crit = Crit {
                queue: start - t,
                behind_gc: o.behind_gc,
                media: media_end - start,
                interconnect: end - media_end,
                link: e - end,
            };
        }
        rm.pending -= 1;
        if rm.pending == 0 {
            self.finish_read(ri, cx);
        }
    }

    fn finish_read(&mut self, ri: u32, cx: &mut Cx) {
        let lat = self.cfg.link_latency_ns.read;
        let rm = &mut self.reqs[ri as usize];
        let crit = rm.crit;
        crit.merge_into(&mut rm.bd);
        rm.bd.add(Component::Link, lat);
        let at = rm.data_done + lat;
        self.finish(at, ri, cx);
    }

    /// Report completion at `at` and release the request's tag.
    fn finish(&mut self, at: Nanos, ri: u32, cx: &mut Cx) {
        let r = &mut self.reqs[ri as usize];
        cx.done_since_ref(r.id, r.arrival, at, &r.bd);
        r.op = None;
        self.free_reqs.push(ri);
        if let Some(next) = self.tags.release() {
            let t = at.max(self.reqs[next as usize].arrival);
            cx.wake(t, Self::tok(EV_ADMIT, next));
        }
    }
}

impl Device for Ssd {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let lpns = self.ftl.logical_units() as u64;
        let (lpn0, units) = if matches!(req.op, Op::Flush) || req.len == 0 {
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
        let ri = self.alloc_req(Req {
            id: req.id,
            op: Some(req.op),
            arrival: now,
            lpn0,
            units,
            bytes: req.len,
            durable,
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
                busy: frac(self.link[0].busy_ns),
            },
            Utilisation {
                resource: "link.host_to_device".into(),
                busy: frac(self.link[1].busy_ns),
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
        ];
        if self.spread.retry_p > 0.0 {
            counters.push(("read_retries".to_string(), s.read_retries as f64));
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
        if self.cfg.ftl.precondition != crate::ftl::Precondition::Fresh {
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

#[cfg(test)]
mod tests {
    use super::{round_non_negative, take_batch, SamePlane, WOp};
    use std::collections::VecDeque;

    #[test]
    fn remembering_a_one_plane_front_takes_the_scans_batches() {
        // long runs on one plane (a victim's ops), with other planes' and
        // other kinds' ops now and then, taken with the remembered front
        // and with none (a full scan each time): the same batches
        let mut x = 12345u64;
        let mut rnd = |n: u64| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (x >> 33) % n
        };
        for ppd in [2u32, 4] {
            let mut q = VecDeque::new();
            let mut plane = 0;
            for i in 0..5000u32 {
                if rnd(40) == 0 {
                    plane = rnd(ppd as u64) as u8;
                }
                let p = if rnd(10) == 0 {
                    rnd(ppd as u64) as u8
                } else {
                    plane
                };
                q.push_back(WOp {
                    block: i,
                    units: 1,
                    seq: 0,
                    page: 0,
                    plane: p,
                    flags: rnd(3) as u8 | WOp::BACKGROUND,
                });
            }
            let (mut a, mut b) = (q.clone(), q);
            let mut same = SamePlane::default();
            let (mut ca, mut cb) = (Vec::new(), Vec::new());
            let mut batches = 0;
            let mut paired = 0;
            loop {
                ca.clear();
                cb.clear();
                let ta = take_batch(&mut a, Some(&mut same), &mut ca, true, ppd, true, |o| {
                    super::Ssd::wop_op(o, 0, 0)
                });
                let tb = take_batch(&mut b, None, &mut cb, true, ppd, true, |o| {
                    super::Ssd::wop_op(o, 0, 0)
                });
                assert_eq!(ta, tb);
                if !ta {
                    break;
                }
                let blocks = |c: &Vec<super::FOp>| c.iter().map(|o| o.block).collect::<Vec<_>>();
                assert_eq!(blocks(&ca), blocks(&cb), "batch {batches}");
                batches += 1;
                paired += usize::from(ca.len() > 1);
                // the odd batch with nothing remembered, as after a
                // read took the die
                if batches % 97 == 0 {
                    same = SamePlane::default();
                }
            }
            assert!(paired > 0 && batches > paired, "both kinds of batch");
        }
    }

    #[test]
    fn rounding_without_the_library_call_is_f64_round() {
        let mut xs = vec![
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            1e6 + 0.5,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            9.2e18,
            9_223_372_036_854_774_784.0,
            9_223_372_036_854_775_808.0,
            1.8e19,
        ];
        let mut x = 0.37f64;
        for _ in 0..10_000 {
            x = (x * 1.618_033_988_749_895 + 0.123) % 3.0e6;
            xs.push(x);
            xs.push(x.trunc() + 0.5);
        }
        for x in xs {
            assert_eq!(round_non_negative(x), x.round() as u64, "{x}");
        }
    }
}
