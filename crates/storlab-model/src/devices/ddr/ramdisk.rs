//! NVM on the DDR memory bus as a RAM disk with injected delay (docs/spec/ddr-nvm.md).
//!
//! No link, DMA, interrupt or lock: the requesting CPU copies the data with
//! loads and stores through its caches (the host runs this device in
//! `CompletionMode::Cpu`, so the thread keeps its core while it copies, and
//! the host's core pool is what shares the cores between threads).
//!
//! The copy is the CPU's: a core keeps at most `core_mlp` cache-line misses
//! in flight (its line-fill buffers), so by Little's law it moves one line
//! per (sum of its lines' miss latencies) / `core_mlp`. Every line of the
//! RAM disk's side of the copy misses (the disk is far larger than the
//! caches and accessed at random) and pays `line_path_ns` plus the media's
//! latency: the media latency is paid per missed line on the critical
//! path, `core_mlp` lines at a time, not once per row. A written line
//! waits for the write latency, not for the read that fetches it for
//! ownership: the study's driver injects each medium's delay per access in
//! the access's direction (docs/spec/ddr-nvm.md), and an NVM row is closed (written)
//! when its access completes (docs/spec/media.md), so the write is what each line of
//! a write waits for; this is why writes suffer more than reads on slow
//! media at queue depth 1 (docs/spec/targets.md). The user buffer's
//! side misses too when the buffer is larger than the thread's share of
//! the last-level cache (`cache_bytes`; fio reuses one buffer per job, so
//! a smaller one stays cached between requests), at `line_path_ns +
//! dram_ns`.
//!
//! The memory controllers are shared by every core: each copy reserves
//! the RAM disk's channels (one FCFS [`MemoryBus`] at `bus_bytes_per_s *
//! bus_efficiency * disk_channels / channels`) for the bytes it moves over
//! them, which is more than the bytes copied: reading into a missed user
//! line fetches it for ownership and later writes it back, and so does
//! writing a RAM-disk line. The RAM disk's pages are on `disk_channels`
//! of the host's channels (a RAM disk takes each page on the node of the
//! CPU that first wrote it), so those channels carry every RAM-disk line
//! and their share of the user buffers' lines (spread over all
//! channels): they are the busiest, and they are what binds. A copy ends
//! when both its core and its share of those channels are done.

use serde::{Deserialize, Serialize};

use crate::breakdown::Component;
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::link::ddr::{MemoryBus, MAX_STEP_NS};
use crate::media::MediaConfig;
use crate::report::{DeviceReport, Utilisation};
use crate::units::FixedDiv;

/// Configuration of a DDR-attached RAM disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DdrConfig {
    /// Memory channels of the host, all sockets together.
    pub channels: u32,
    /// Channels the RAM disk's pages are on, 1..=`channels`: a Linux RAM
    /// disk (brd) takes each page from the node of the CPU that first
    /// writes it, so a disk filled by one writer lives behind one socket's
    /// channels. Those channels carry every RAM-disk line of every copy
    /// and their share (`disk_channels / channels`) of the user buffers'
    /// lines; they are the busiest, and the bus modelled. Equal to
    /// `channels`: pages everywhere, the whole bus shared.
    pub disk_channels: u32,
    /// Peak bandwidth of all channels together, bytes per second.
    pub bus_bytes_per_s: u64,
    /// Fraction of the peak the channels sustain under a copy's mixed
    /// read and write stream (refresh, bank conflicts, read-write
    /// turnarounds), 0 < x <= 1.
    pub bus_efficiency: f64,
    /// Cache-line size, bytes: the unit of a miss and of bus traffic.
    pub line_bytes: u64,
    /// Cache-line misses one core keeps in flight during the copy (its
    /// memory-level parallelism), lines; may be fractional (an average).
    pub core_mlp: f64,
    /// Latency of a missed line outside the memory array, ns: cache
    /// lookups, on-chip and socket interconnect, memory-controller queue,
    /// the burst. The array adds `media.read_ns`/`write_ns` (RAM-disk
    /// side) or `dram_ns` (user side).
    pub line_path_ns: u64,
    /// Array latency of the host's own DRAM (where the user buffer is),
    /// ns.
    pub dram_ns: u64,
    /// A thread's share of the last-level cache, bytes: a user buffer no
    /// larger stays cached between requests and its side of the copy does
    /// not miss.
    pub cache_bytes: u64,
}

/// Validate.
pub fn validate(cfg: &DdrConfig) -> Result<(), crate::config::ConfigError> {
    use crate::config::check_range;
    check_range("ddr.channels", cfg.channels, 1, 64)?;
    check_range("ddr.disk_channels", cfg.disk_channels, 1, cfg.channels)?;
    check_range("ddr.bus_bytes_per_s", cfg.bus_bytes_per_s, 1, u64::MAX)?;
    if !(cfg.bus_efficiency > 0.0 && cfg.bus_efficiency <= 1.0) {
        return Err(crate::config::ConfigError::Invalid {
            field: "ddr.bus_efficiency".into(),
            message: format!("{} is outside (0, 1]", cfg.bus_efficiency),
        });
    }
    check_range("ddr.line_bytes", cfg.line_bytes, 8, 4096)?;
    if !cfg.line_bytes.is_power_of_two() {
        return Err(crate::config::ConfigError::Invalid {
            field: "ddr.line_bytes".into(),
            message: format!("{} is not a power of two", cfg.line_bytes),
        });
    }
    check_range("ddr.core_mlp", cfg.core_mlp, 1.0, 1024.0)?;
    // the disk's channels must still move at least one byte per second
    if (cfg.bus_bytes_per_s as f64 * cfg.bus_efficiency * cfg.disk_channels as f64
        / cfg.channels as f64)
        < 1.0
    {
        return Err(crate::config::ConfigError::Invalid {
            field: "ddr.bus_efficiency".into(),
            message: "bus_bytes_per_s * bus_efficiency * disk_channels / channels is below 1 byte per second".into(),
        });
    }
    Ok(())
}

/// The RAM-disk device.
pub struct DdrRamDisk {
    cfg: DdrConfig,
    media: MediaConfig,
    capacity: u64,
    /// The RAM disk's channels (`disk_channels`), one FCFS server at
    /// their sustained bandwidth.
    bus: MemoryBus,
    /// 1 / `core_mlp`.
    inv_mlp: f64,
    line_div: FixedDiv,
    lines: u64,
    bus_bytes: u64,
    /// The last copy's cost by direction (read, write): a run's requests
    /// mostly have one size and alignment, so most copies cost what the
    /// one before did, and its floating point and divisions are skipped.
    memo: [CopyMemo; 2],
}

/// A copy's cost for a shape of request: `(disk_lines, len)` and what
/// [`DdrRamDisk::cost`] and [`DdrRamDisk::bus_ns`] make of it.
#[derive(Clone, Copy, Debug)]
struct CopyMemo {
    /// Lines of the RAM disk the request spans (`u64::MAX`: none yet; a
    /// request spans at least one and far fewer than that).
    disk_lines: u64,
    /// Bytes.
    len: u64,
    /// `(copy_ns, media_ns, bus_bytes)` of [`DdrRamDisk::cost`].
    cost: (u64, u64, u64),
    /// [`DdrRamDisk::bus_ns`] of the bytes it moves over the RAM disk's
    /// channels.
    bus_ns: u64,
}

impl CopyMemo {
    const EMPTY: CopyMemo = CopyMemo {
        disk_lines: u64::MAX,
        len: 0,
        cost: (0, 0, 0),
        bus_ns: 0,
    };
}

impl DdrRamDisk {
    /// Build from a validated configuration.
    pub fn new(cfg: DdrConfig, media: MediaConfig, capacity: u64) -> Self {
        let bus = MemoryBus::channels(
            cfg.bus_bytes_per_s,
            cfg.bus_efficiency,
            cfg.disk_channels,
            cfg.channels,
        );
        Self {
            line_div: FixedDiv::new(cfg.line_bytes),
            bus,
            inv_mlp: 1.0 / cfg.core_mlp,
            cfg,
            media,
            capacity,
            lines: 0,
            bus_bytes: 0,
            memo: [CopyMemo::EMPTY; 2],
        }
    }

    /// The copy of `len` bytes at `offset` in direction `op` (read or
    /// write) as the core does it: `(copy_ns, media_ns, bus_bytes)`, where
    /// `media_ns` is the part of `copy_ns` spent waiting on the media and
    /// `bus_bytes` the traffic it puts on the memory bus.
    pub fn copy_cost(&self, op: Op, offset: u64, len: u64) -> (u64, u64, u64) {
        self.cost(op, self.line_div.spanned(offset, len), len).0
    }

    /// [`Self::copy_cost`] of a request spanning `disk_lines` lines, and
    /// the bytes of its traffic that cross the RAM disk's channels.
    #[inline]
    fn cost(&self, op: Op, disk_lines: u64, len: u64) -> ((u64, u64, u64), u64) {
        let media = if op == Op::Write {
            self.media.write_ns
        } else {
            self.media.read_ns
        };
        let user_misses = len > self.cfg.cache_bytes;
        let user_lines = if user_misses {
            len.div_ceil(self.cfg.line_bytes)
        } else {
            0
        };
        let l_disk = self.cfg.line_path_ns.saturating_add(media);
        let l_user = self.cfg.line_path_ns.saturating_add(self.cfg.dram_ns);
        // Little's law: line-latencies in flight at once = core_mlp
        let occupancy = disk_lines as f64 * l_disk as f64 + user_lines as f64 * l_user as f64;
        let first = if user_misses {
            l_disk.max(l_user)
        } else {
            l_disk
        };
        // (a float to integer cast saturates; MAX_STEP_NS keeps sums of
        // steps from overflowing the clock: such a run ends at the horizon)
        let copy = ((occupancy * self.inv_mlp).ceil() as u64)
            .max(first)
            .min(MAX_STEP_NS);
        // the media's share of the lines' latencies
        let media_ns = if occupancy > 0.0 {
            let share = disk_lines as f64 * media as f64 / occupancy;
            ((copy as f64 * share) as u64).min(copy)
        } else {
            0
        };
        // bus bytes per line: a read fetches the disk line, and a missed
        // user line is fetched for ownership and written back; a write
        // fetches the disk line for ownership and writes it back, and
        // reads a missed user line
        let line = self.cfg.line_bytes;
        let (disk_moves, user_moves) = match op {
            Op::Write => (disk_lines.saturating_mul(2), user_lines),
            _ => (disk_lines, user_lines.saturating_mul(2)),
        };
        let disk_bytes = disk_moves.saturating_mul(line);
        let user_bytes = user_moves.saturating_mul(line);
        let traffic = disk_bytes.saturating_add(user_bytes);
        // every disk line crosses the disk's channels; the user buffers
        // are spread over all channels, so their share crosses them too
        let user_share = if self.cfg.disk_channels == self.cfg.channels {
            user_bytes
        } else {
            (user_bytes as u128 * self.cfg.disk_channels as u128 / self.cfg.channels as u128) as u64
        };
        (
            (copy, media_ns, traffic),
            disk_bytes.saturating_add(user_share),
        )
    }

    /// Time the bus is busy moving `traffic` bytes.
    #[inline]
    fn bus_ns(&self, traffic: u64) -> u64 {
        self.bus.xfer_ns(traffic)
    }
}

impl Device for DdrRamDisk {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        if !matches!(req.op, Op::Read | Op::Write) {
            cx.done_mut(req.id, now);
            return;
        }
        let len = req.len.max(1);
        let lines = self.line_div.spanned(req.offset, len);
        let w = (req.op == Op::Write) as usize;
        let m = self.memo[w];
        let ((copy, media, traffic), occupancy) = if m.disk_lines == lines && m.len == len {
            (m.cost, m.bus_ns)
        } else {
            let (cost, on_disk_channels) = self.cost(req.op, lines, len);
            let bus_ns = self.bus_ns(on_disk_channels);
            self.memo[w] = CopyMemo {
                disk_lines: lines,
                len,
                cost,
                bus_ns,
            };
            (cost, bus_ns)
        };
        // the disk's channels are shared: this copy's traffic on them
        // occupies them, in order
        let (_, bus_end) = self.bus.occupy(now, occupancy);
        let at = now.saturating_add(copy).max(bus_end);
        self.lines = self.lines.saturating_add(lines);
        self.bus_bytes = self.bus_bytes.saturating_add(traffic);
        let bd = cx.done_mut(req.id, at);
        bd.add(Component::Media, media);
        bd.add(Component::Link, copy - media);
        bd.add(Component::DeviceQueue, at - now - copy);
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
            counters: vec![
                ("lines_missed".into(), self.lines as f64),
                ("bus_bytes".into(), self.bus_bytes as f64),
            ],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> DdrConfig {
        DdrConfig {
            channels: 6,
            disk_channels: 6,
            bus_bytes_per_s: 63_000_000_000,
            bus_efficiency: 0.7,
            line_bytes: 64,
            core_mlp: 4.0,
            line_path_ns: 60,
            dram_ns: 25,
            cache_bytes: 1 << 20,
        }
    }
    fn media(r: u64, w: u64) -> MediaConfig {
        MediaConfig {
            name: "x".into(),
            read_ns: r,
            write_ns: w,
        }
    }
    fn disk(r: u64, w: u64) -> DdrRamDisk {
        DdrRamDisk::new(cfg(), media(r, w), 1 << 34)
    }

    #[test]
    fn media_latency_is_paid_per_line_over_the_mlp() {
        // 4 KB with a cached user buffer: 64 disk lines, 4 in flight
        let (c25, _, _) = disk(25, 25).copy_cost(Op::Read, 0, 4096);
        let (c825, m, _) = disk(825, 25).copy_cost(Op::Read, 0, 4096);
        assert_eq!(c25, 64 * 85 / 4);
        assert_eq!(
            c825 - c25,
            64 * 800 / 4,
            "800 ns more per line, 4 at a time"
        );
        assert!(m > c825 / 2 && m <= c825);
    }

    #[test]
    fn more_lines_in_flight_copy_faster() {
        let mut c = cfg();
        c.core_mlp = 8.0;
        let fast = DdrRamDisk::new(c, media(25, 25), 1 << 34);
        let (a, _, _) = disk(25, 25).copy_cost(Op::Read, 0, 1 << 16);
        let (b, _, _) = fast.copy_cost(Op::Read, 0, 1 << 16);
        assert_eq!(a, 2 * b);
    }

    #[test]
    fn writes_pay_the_write_latency() {
        let d = disk(30, 95);
        let (r, _, _) = d.copy_cost(Op::Read, 0, 4096);
        let (w, _, _) = d.copy_cost(Op::Write, 0, 4096);
        assert_eq!(w - r, 64 * 65 / 4);
    }

    #[test]
    fn a_large_buffer_misses_on_both_sides_and_triples_the_traffic() {
        let d = disk(25, 25);
        let (small, _, t_small) = d.copy_cost(Op::Read, 0, 1 << 20);
        let (big, _, t_big) = d.copy_cost(Op::Read, 0, 2 << 20);
        assert_eq!(t_small, 1 << 20, "cached buffer: the disk lines only");
        assert_eq!(
            t_big,
            3 * (2 << 20),
            "read, fetch for ownership, write back"
        );
        assert_eq!(big, 4 * small, "twice the lines, each with two misses");
        let (_, _, tw) = d.copy_cost(Op::Write, 0, 1 << 20);
        assert_eq!(
            tw,
            2 << 20,
            "a written disk line is fetched and written back"
        );
    }

    #[test]
    fn one_line_takes_one_miss_latency() {
        let (c, _, _) = disk(25, 25).copy_cost(Op::Read, 0, 64);
        assert_eq!(c, 85);
    }

    #[test]
    fn the_shared_bus_bounds_many_copies() {
        // 4 MB copies from 64 cores at once: the bus, not the cores, limits
        let mut c = cfg();
        c.core_mlp = 1000.0;
        let mut d = DdrRamDisk::new(c, media(25, 25), 1 << 34);
        let mut cx = Cx::default();
        let n = 64u64;
        for i in 0..n {
            d.submit(0, DevRequest::new(i, Op::Read, i << 22, 4 << 20), &mut cx);
        }
        let last = cx.completions.iter().map(|c| c.at).max().unwrap();
        let bytes = n * (4 << 20) * 3;
        let rate = 63e9 * 0.7;
        let want = bytes as f64 / rate * 1e9;
        assert!(
            (last as f64 / want - 1.0).abs() < 0.01,
            "{last} ns vs {want} ns"
        );
        // and a lone copy is not held up by the bus
        let mut d = disk(25, 25);
        let mut cx = Cx::default();
        d.submit(0, DevRequest::new(0, Op::Read, 0, 4096), &mut cx);
        assert_eq!(cx.completions[0].at, 64 * 85 / 4);
        assert_eq!(cx.completions[0].breakdown.total(), 64 * 85 / 4);
    }

    #[test]
    fn a_disk_behind_one_socket_binds_on_its_channels() {
        // many 4 MB writes from cores with plenty of lines in flight: each
        // moves the disk lines twice (fetch for ownership, write back) over
        // the disk's 3 channels, and reads its missed user lines from all 6
        // (half of them over the disk's)
        let mut c = cfg();
        c.core_mlp = 1000.0;
        c.disk_channels = 3;
        let mut d = DdrRamDisk::new(c, media(25, 25), 1 << 34);
        let mut cx = Cx::default();
        let n = 32u64;
        for i in 0..n {
            d.submit(0, DevRequest::new(i, Op::Write, i << 22, 4 << 20), &mut cx);
        }
        let last = cx.completions.iter().map(|c| c.at).max().unwrap();
        let on_disk = n as f64 * (4u64 << 20) as f64 * 2.5;
        let want = on_disk / (63e9 * 0.7 * 0.5) * 1e9;
        assert!(
            (last as f64 / want - 1.0).abs() < 0.01,
            "{last} ns vs {want} ns"
        );
        // the traffic counted is all of it, on every channel
        assert_eq!(d.bus_bytes, n * (4 << 20) * 3);
        // pages on every channel: the whole bus, three moves per byte
        let mut c = cfg();
        c.core_mlp = 1000.0;
        let mut d = DdrRamDisk::new(c, media(25, 25), 1 << 34);
        let mut cx = Cx::default();
        for i in 0..n {
            d.submit(0, DevRequest::new(i, Op::Write, i << 22, 4 << 20), &mut cx);
        }
        let all = cx.completions.iter().map(|c| c.at).max().unwrap();
        let want = n as f64 * (4u64 << 20) as f64 * 3.0 / (63e9 * 0.7) * 1e9;
        assert!((all as f64 / want - 1.0).abs() < 0.01, "{all} vs {want}");
        assert!(last > all, "one socket's channels bind sooner");
    }

    #[test]
    fn a_remembered_copy_costs_what_a_computed_one_does() {
        // the same requests on two disks, one of which forgets its last
        // copy's cost before every request: identical completions, for
        // sizes, alignments and directions that change and repeat
        let shapes = [
            (Op::Read, 0, 4096),
            (Op::Read, 4096, 4096),
            (Op::Read, 32, 4096),
            (Op::Write, 0, 4096),
            (Op::Read, 0, 4096),
            (Op::Write, 64, 512),
            (Op::Write, 0, 2 << 20),
            (Op::Read, 0, 2 << 20),
            (Op::Write, 128, 512),
            (Op::Read, 96, 4096),
        ];
        let mut memo = disk(300, 1000);
        let mut fresh = disk(300, 1000);
        let (mut a, mut b) = (Cx::default(), Cx::default());
        for (k, &(op, off, len)) in shapes.iter().cycle().take(50).enumerate() {
            let now = 100 * k as u64;
            memo.submit(now, DevRequest::new(k as u64, op, off, len), &mut a);
            fresh.memo = [CopyMemo::EMPTY; 2];
            fresh.submit(now, DevRequest::new(k as u64, op, off, len), &mut b);
        }
        assert_eq!(a.completions.len(), 50);
        for (x, y) in a.completions.iter().zip(&b.completions) {
            assert_eq!((x.id, x.at, x.breakdown), (y.id, y.at, y.breakdown));
        }
        assert_eq!(memo.lines, fresh.lines);
        assert_eq!(memo.bus_bytes, fresh.bus_bytes);
    }

    #[test]
    fn huge_requests_do_not_overflow() {
        let mut c = cfg();
        c.line_path_ns = crate::config::MAX_DURATION_NS;
        c.core_mlp = 1.0;
        let d = DdrRamDisk::new(c, media(u64::MAX / 4, u64::MAX / 4), u64::MAX / 2);
        let (copy, m, t) = d.copy_cost(Op::Write, 0, u64::MAX / 4);
        assert!(copy >= m && t > 0);
    }

    #[test]
    fn validation_names_the_field() {
        let mut c = cfg();
        c.core_mlp = 0.5;
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("ddr.core_mlp"));
        let mut c = cfg();
        c.bus_efficiency = 1.5;
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("ddr.bus_efficiency"));
        let mut c = cfg();
        c.disk_channels = 7;
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("ddr.disk_channels"));
        c.disk_channels = 0;
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("ddr.disk_channels"));
        let mut c = cfg();
        c.line_bytes = 48;
        assert!(validate(&c)
            .unwrap_err()
            .to_string()
            .contains("ddr.line_bytes"));
        assert!(validate(&cfg()).is_ok());
    }
}
