//! fio's `zonemode=zbd`: what fio itself does to a job's IO on a zoned
//! block device, so that the device sees what it would see under fio
//! (fio's zbd.c, `zbd_adjust_block` and `zbd_convert_to_write_zone`;
//! HOWTO, "zonemode", "max_open_zones", "zone_reset_threshold",
//! "zone_reset_frequency"). Described here, not copied:
//!
//! * fio learns the zones from the device (or, on a device without zones,
//!   emulates them from `zonesize` and `zonecapacity`), and the number of
//!   zones it may write at once: `max_open_zones` if given, else the
//!   device's limit; a `max_open_zones` above the device's limit is an
//!   error (EINVAL) before the job starts.
//! * A write goes to the write pointer of its zone. The zone must be one
//!   of the write zones: if it is not and the set is full, fio picks a
//!   write zone from the set by the IO's place in the job's range
//!   (`(offset - start) * write_zones / range`). A sequential job keeps
//!   writing the zone it writes until the zone is full, then moves on to
//!   the next zone (wrapping to the range's first). A zone that is full
//!   when written is reset first, so its write starts again at its start.
//!   The write is shortened to what the zone's capacity leaves, in
//!   multiples of the minimum block size; a zone that fills leaves the set
//!   of write zones.
//! * With `zone_reset_frequency` f > 0: once the data in the range reaches
//!   `zone_reset_threshold` of it, every 1/f-th write resets its zone
//!   first.
//! * A read is moved into written data: the part of a zone below its write
//!   pointer (a zone with nothing written sends it to the next zone that
//!   has some); a job with nothing to read ends.
//!
//! Resets are trims of the whole zone, the form a zone reset takes at the
//! simulated device (see storlab-model's `devices/flash/zones.rs`). fio
//! waits for the thread's IO in flight before it resets a zone
//! (`io_u_quiesce` in zbd.c: writes submitted asynchronously may still be
//! on their way to the zone) and resets synchronously; the simulator's
//! zoned source marks a reset and the request after it to wait the same
//! way (storlab-sim's `zbd.rs`).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use crate::gen::{IoDesc, IoOp};

/// A job's zoned options (`zonemode=zbd`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZbdOptions {
    /// `max_open_zones=` (0: the device's limit): zones written at once,
    /// by all the jobs on the device together.
    pub max_open_zones: u32,
    /// `job_max_open_zones=` (0: none): zones one job opens for writing
    /// at once.
    pub job_max_open_zones: u32,
    /// `zonesize=`: the zone size of emulated zones (a device without
    /// zones); a zoned device's own size otherwise.
    pub zone_size: Option<u64>,
    /// `zonecapacity=`: the writable part of an emulated zone.
    pub zone_capacity: Option<u64>,
    /// `zone_reset_threshold=` (0 to 1).
    pub reset_threshold: f64,
    /// `zone_reset_frequency=` (0 to 1; 0: no threshold resets).
    pub reset_frequency: f64,
    /// `zone_append=`: writes as Zone Append commands. The data lands at
    /// the write pointer either way; the simulated device serves both the
    /// same.
    pub zone_append: bool,
}

/// The zones a zoned job sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Zone size, bytes.
    pub zone_bytes: u64,
    /// Writable bytes of a zone.
    pub capacity_bytes: u64,
    /// The device's open-zone limit (0: none).
    pub max_open: u32,
}

/// Why a zoned job cannot run (fio's messages).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ZbdError {
    /// `max_open_zones` above the device's limit.
    #[error("Specified --max_open_zones ({asked}) is larger than max ({max})")]
    TooManyOpen {
        /// Asked for.
        asked: u32,
        /// The device's limit.
        max: u32,
    },
    /// A zone geometry that cannot hold a block.
    #[error("{0}")]
    Geometry(String),
    /// More zones of the job's range open on the drive when the job
    /// starts than its `max_open_zones`.
    #[error("Number of open zones ({open}) exceeds max_open_zones limit ({max})")]
    OpenZones {
        /// Open on the drive.
        open: u32,
        /// The job's limit.
        max: u32,
    },
}

impl ZbdError {
    /// The errno fio reports for the job (EINVAL).
    pub fn errno(&self) -> i32 {
        22
    }
}

/// The zones of one device as all its zoned jobs see them: fio keeps one
/// zone table per device (its `zbd_info`, shared by every job on the
/// file), so a job sees the others' writes and the zones they write.
#[derive(Clone, Debug, Default)]
pub struct ZoneTable {
    /// Write pointers (bytes from each zone's start), by zone number.
    wp: Vec<u64>,
    /// The zones being written (open), by zone number, in the order they
    /// were opened, each with the job that opened it (0: open when the
    /// table was made).
    open: Vec<(u64, u32)>,
    /// Jobs that have joined (each job's number is one more).
    jobs: u32,
}

/// A [`ZoneTable`] shared by the jobs of one device.
pub type SharedZones = Rc<RefCell<ZoneTable>>;

impl ZoneTable {
    /// The table of a drive's zone report: `report[z]`, zone `z`'s write
    /// pointer in bytes from its start (at most `capacity_bytes`, the
    /// writable part) and whether the drive has it open.
    pub fn from_report(report: &[(u64, bool)], capacity_bytes: u64) -> Self {
        let wp: Vec<u64> = report.iter().map(|&(w, _)| w.min(capacity_bytes)).collect();
        let open = report
            .iter()
            .enumerate()
            .filter(|&(z, &(_, open))| open && wp[z] < capacity_bytes)
            .map(|(z, _)| (z as u64, 0))
            .collect();
        ZoneTable { wp, open, jobs: 0 }
    }

    /// Shared by the jobs that join it ([`ZbdHost::join`]).
    pub fn shared(self) -> SharedZones {
        Rc::new(RefCell::new(self))
    }

    fn cover(&mut self, zones: u64) {
        if (self.wp.len() as u64) < zones {
            self.wp.resize(zones as usize, 0);
        }
    }
}

/// fio's host-side zone handling for one job thread.
pub struct ZbdHost {
    geo: ZoneGeometry,
    /// The device's zones, shared with the other jobs on it.
    table: SharedZones,
    first_zone: u64,
    /// Zones in the job's range.
    zones: u32,
    start: u64,
    range: u64,
    limit: u32,
    /// `job_max_open_zones` (0: none).
    job_limit: u32,
    /// This job's number in its table.
    id: u32,
    random: bool,
    min_bs: u64,
    /// Sequential jobs: the zone being written.
    seq_zone: u32,
    /// Sequential jobs: this job has written in `seq_zone` (so the job's
    /// own writes, not an earlier job's, filled it when it is full).
    seq_written: bool,
    valid_bytes: u64,
    reset_threshold: f64,
    reset_frequency: f64,
    write_cnt: u64,
    queue: VecDeque<IoDesc>,
    /// Zone resets issued.
    pub resets: u64,
}

impl ZbdHost {
    /// The host side of a job over `[start, start + range)` (whole zones
    /// are used: the range is rounded to them), `random` for random
    /// offsets, writes of at least `min_bs` bytes.
    pub fn new(
        opts: &ZbdOptions,
        geo: ZoneGeometry,
        start: u64,
        range: u64,
        random: bool,
        min_bs: u64,
    ) -> Result<Self, ZbdError> {
        let limit = match (geo.max_open, opts.max_open_zones) {
            (0, asked) => asked,
            (max, 0) => max,
            (max, asked) if asked <= max => asked,
            (max, asked) => return Err(ZbdError::TooManyOpen { asked, max }),
        };
        if geo.zone_bytes == 0 || geo.capacity_bytes < min_bs.max(1) {
            return Err(ZbdError::Geometry(format!(
                "zone capacity {} smaller than minimum block size {min_bs}",
                geo.capacity_bytes
            )));
        }
        let first_zone = start / geo.zone_bytes;
        let zones = (range / geo.zone_bytes).max(1);
        let queue = VecDeque::new();
        let mut table = ZoneTable::default();
        table.cover(first_zone + zones);
        Ok(ZbdHost {
            geo,
            table: table.shared(),
            first_zone,
            zones: zones as u32,
            start: first_zone * geo.zone_bytes,
            range: zones * geo.zone_bytes,
            limit,
            job_limit: opts.job_max_open_zones,
            id: 1,
            random,
            min_bs: min_bs.max(1),
            seq_zone: 0,
            seq_written: false,
            valid_bytes: 0,
            reset_threshold: opts.reset_threshold,
            reset_frequency: opts.reset_frequency,
            write_cnt: Self::reload(opts.reset_frequency),
            queue,
            resets: 0,
        })
    }

    /// Work on `table`, the zones shared with the device's other jobs
    /// (fio reads the zone report when a job starts, so a job sees what
    /// the jobs before it wrote: a reader after a stonewalled fill reads
    /// it, a writer continues a zone at its write pointer). The zones of
    /// the range that are open count against the job's
    /// `max_open_zones`, and more of them than it is fio's error before
    /// the job starts (fio's zbd_setup_files).
    pub fn join(mut self, table: SharedZones) -> Result<Self, ZbdError> {
        {
            let mut t = table.borrow_mut();
            let (lo, hi) = (self.first_zone, self.first_zone + self.zones as u64);
            t.cover(hi);
            t.jobs += 1;
            self.id = t.jobs;
            self.valid_bytes = t.wp[lo as usize..hi as usize].iter().sum();
            let open = t.open.iter().filter(|&&(z, _)| z >= lo && z < hi).count() as u32;
            if self.limit > 0 && open > self.limit {
                return Err(ZbdError::OpenZones {
                    open,
                    max: self.limit,
                });
            }
        }
        self.table = table;
        Ok(self)
    }

    /// Zone `z` of the range's write pointer.
    fn wp(&self, z: u32) -> u64 {
        self.table.borrow().wp[(self.first_zone + z as u64) as usize]
    }

    fn set_wp(&self, z: u32, wp: u64) {
        self.table.borrow_mut().wp[(self.first_zone + z as u64) as usize] = wp;
    }

    fn reload(f: f64) -> u64 {
        if f > 0.0 {
            (1.0 / f).min(u32::MAX as f64) as u64
        } else {
            u64::from(u32::MAX)
        }
    }

    /// Zones the job may write at once.
    pub fn write_zone_limit(&self) -> u32 {
        self.limit
    }

    fn zone_start(&self, z: u32) -> u64 {
        (self.first_zone + z as u64) * self.geo.zone_bytes
    }

    fn full(&self, z: u32) -> bool {
        self.wp(z) + self.min_bs > self.geo.capacity_bytes
    }

    fn reset(&mut self, z: u32) {
        self.valid_bytes = self.valid_bytes.saturating_sub(self.wp(z));
        self.set_wp(z, 0);
        self.resets += 1;
        self.queue.push_back(IoDesc {
            op: IoOp::Trim,
            offset: self.zone_start(z),
            len: self.geo.zone_bytes,
        });
    }

    /// The zone index (within the range) of `offset`.
    fn zone_of(&self, offset: u64) -> u32 {
        let rel = offset.saturating_sub(self.start) % self.range;
        (rel / self.geo.zone_bytes) as u32
    }

    /// Make `z` a write zone if the device's set of them has room under
    /// `max_open_zones` and the job's under `job_max_open_zones`; else the
    /// write zone of the range fio picks for an IO at `offset`. (With the
    /// limit taken by zones outside the range, none of which this job may
    /// write, `z` is opened past it, and the drive's own limits decide.)
    fn write_zone(&mut self, z: u32, offset: u64) -> u32 {
        let abs = self.first_zone + z as u64;
        let (lo, hi) = (self.first_zone, self.first_zone + self.zones as u64);
        let mut t = self.table.borrow_mut();
        if t.open.iter().any(|&(w, _)| w == abs) {
            return z;
        }
        let in_range = |&&(w, _): &&(u64, u32)| w >= lo && w < hi;
        let mine = t.open.iter().filter(in_range).count() as u64;
        let own = t.open.iter().filter(|&&(_, j)| j == self.id).count() as u32;
        let device_room = self.limit == 0 || (t.open.len() as u32) < self.limit;
        let job_room = self.job_limit == 0 || own < self.job_limit;
        if (device_room && job_room) || mine == 0 {
            t.open.push((abs, self.id));
            return z;
        }
        let i = (offset.saturating_sub(self.start) % self.range) * mine / self.range;
        let (w, _) = t
            .open
            .iter()
            .filter(in_range)
            .nth(i as usize)
            .copied()
            .expect("i < the range's open zones");
        (w - lo) as u32
    }

    /// Feed the generator's IO in; take what fio issues out with
    /// [`ZbdHost::next_io`]. Returns false when the IO cannot be issued (a
    /// read with nothing written: fio's job ends).
    pub fn adjust(&mut self, io: IoDesc) -> bool {
        match io.op {
            IoOp::Write => self.write(io),
            IoOp::Read => self.read(io),
            _ => {
                self.queue.push_back(io);
                true
            }
        }
    }

    /// The next IO fio issues, in order (resets before the write that
    /// caused them).
    pub fn next_io(&mut self) -> Option<IoDesc> {
        self.queue.pop_front()
    }

    fn write(&mut self, io: IoDesc) -> bool {
        let zones = self.zones;
        let z = if self.random {
            let z = self.zone_of(io.offset);
            self.write_zone(z, io.offset)
        } else {
            // a sequential job writes its zone to the end, then the next;
            // a zone it starts in full (an earlier job's) is reset below,
            // as fio resets the full zone a sequential write lands in
            let mut z = self.seq_zone;
            if self.full(z) && self.seq_written {
                z = (z + 1) % zones;
                self.seq_zone = z;
            }
            self.seq_written = true;
            self.write_zone(z, io.offset)
        };
        if self.reset_frequency > 0.0
            && self.valid_bytes as f64 >= self.range as f64 * self.reset_threshold
        {
            self.write_cnt = self.write_cnt.saturating_sub(1);
            if self.write_cnt == 0 {
                self.write_cnt = Self::reload(self.reset_frequency);
                self.reset(z);
            }
        }
        if self.full(z) {
            self.reset(z);
        }
        let wp = self.wp(z);
        let room = self.geo.capacity_bytes - wp;
        let len = io.len.min(room) / self.min_bs * self.min_bs;
        if len == 0 {
            // a write shorter than the minimum block size
            return false;
        }
        self.queue.push_back(IoDesc {
            op: IoOp::Write,
            offset: self.zone_start(z) + wp,
            len,
        });
        self.set_wp(z, wp + len);
        self.valid_bytes += len;
        if self.full(z) {
            let abs = self.first_zone + z as u64;
            self.table.borrow_mut().open.retain(|&(w, _)| w != abs);
        }
        true
    }

    fn read(&mut self, io: IoDesc) -> bool {
        let zones = self.zones;
        let orig = self.zone_of(io.offset);
        let mut z = orig;
        let mut tries = 0;
        while self.wp(z) < self.min_bs {
            z = (z + 1) % zones;
            tries += 1;
            if tries >= zones {
                return false;
            }
        }
        let range = self.wp(z);
        let zs = self.zone_start(z);
        let within = io.offset.saturating_sub(self.zone_start(orig));
        let offset = if range <= io.len || (!self.random && z != orig) {
            zs
        } else if self.random {
            zs + (within % (range - io.len)) / self.min_bs * self.min_bs
        } else if within + self.min_bs > range {
            zs
        } else {
            zs + within
        };
        let len = io.len.min(zs + range - offset) / self.min_bs * self.min_bs;
        self.queue.push_back(IoDesc {
            op: IoOp::Read,
            offset,
            len: len.max(self.min_bs.min(range)),
        });
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn geo(max_open: u32) -> ZoneGeometry {
        ZoneGeometry {
            zone_bytes: 4 * MIB,
            capacity_bytes: 3 * MIB,
            max_open,
        }
    }

    fn w(offset: u64, len: u64) -> IoDesc {
        IoDesc {
            op: IoOp::Write,
            offset,
            len,
        }
    }

    fn drain(h: &mut ZbdHost) -> Vec<IoDesc> {
        std::iter::from_fn(|| h.next_io()).collect()
    }

    #[test]
    fn a_limit_above_the_device_is_fios_error() {
        let opts = ZbdOptions {
            max_open_zones: 20,
            ..Default::default()
        };
        let e = ZbdHost::new(&opts, geo(14), 0, 64 * MIB, true, 4096)
            .err()
            .unwrap();
        assert_eq!(e.errno(), 22);
        assert!(
            e.to_string().contains("(20) is larger than max (14)"),
            "{e}"
        );
        let ok = ZbdHost::new(&ZbdOptions::default(), geo(14), 0, 64 * MIB, true, 4096).unwrap();
        assert_eq!(ok.write_zone_limit(), 14);
    }

    #[test]
    fn a_job_starts_from_the_zone_report_and_takes_its_open_zones() {
        // four zones of 3 MiB capacity: 0 full, 1 open at 1 MiB, 2 closed
        // at 2 MiB (written, not open), 3 empty
        let report = [(3 * MIB, false), (MIB, true), (2 * MIB, false), (0, false)];
        let opts = ZbdOptions::default();
        let mut h = ZbdHost::new(&opts, geo(1), 0, 16 * MIB, true, MIB)
            .unwrap()
            .join(ZoneTable::from_report(&report, 3 * MIB).shared())
            .unwrap();
        // with one write zone allowed, the open zone 1 is it: random writes
        // anywhere go on at its write pointer
        assert!(h.adjust(w(13 * MIB, MIB)));
        assert!(h.adjust(w(0, MIB)));
        let got: Vec<(IoOp, u64)> = drain(&mut h).iter().map(|d| (d.op, d.offset)).collect();
        assert_eq!(got, vec![(IoOp::Write, 5 * MIB), (IoOp::Write, 6 * MIB)]);
        // reads go to written data, the closed zone's too
        let mut r = ZbdHost::new(&opts, geo(1), 8 * MIB, 4 * MIB, true, MIB)
            .unwrap()
            .join(ZoneTable::from_report(&report, 3 * MIB).shared())
            .unwrap();
        assert!(r.adjust(IoDesc {
            op: IoOp::Read,
            offset: 8 * MIB,
            len: MIB
        }));
        let got = drain(&mut r);
        assert!(
            got[0].offset >= 8 * MIB && got[0].offset < 10 * MIB,
            "{got:?}"
        );
        // more open zones in the range than the job may have: fio's error
        let both = [(MIB, true), (MIB, true)];
        let e = ZbdHost::new(&opts, geo(1), 0, 8 * MIB, true, MIB)
            .unwrap()
            .join(ZoneTable::from_report(&both, 3 * MIB).shared())
            .err()
            .unwrap();
        assert_eq!(e.errno(), 22);
        assert!(
            e.to_string()
                .contains("open zones (2) exceeds max_open_zones limit (1)"),
            "{e}"
        );
    }

    #[test]
    fn jobs_sharing_a_table_keep_to_the_device_and_job_limits() {
        // eight zones; the device-wide limit 3 and each job's own 2: the
        // first job opens two zones and then writes only them, the second
        // opens one more (the device's third) and then shares the open ones
        let opts = ZbdOptions {
            max_open_zones: 3,
            job_max_open_zones: 2,
            ..Default::default()
        };
        let table = ZoneTable::default().shared();
        let job = || {
            ZbdHost::new(&opts, geo(14), 0, 32 * MIB, true, 4096)
                .unwrap()
                .join(table.clone())
                .unwrap()
        };
        let (mut a, mut b) = (job(), job());
        let zones = |h: &mut ZbdHost, starts: &[u64]| {
            for &z in starts {
                assert!(h.adjust(w(z * 4 * MIB, 4096)));
            }
            let mut got: Vec<u64> = drain(h).iter().map(|d| d.offset / (4 * MIB)).collect();
            got.sort();
            got.dedup();
            got
        };
        assert_eq!(zones(&mut a, &[0, 1, 2, 3, 4, 5, 6, 7]), [0, 1]);
        assert_eq!(zones(&mut b, &[5, 0, 4]), [0, 1, 5]);
        assert_eq!(table.borrow().open.len(), 3);
        // both see each other's writes: zone 0's write pointer moved on
        assert!(table.borrow().wp[0] >= 2 * 4096);
    }

    #[test]
    fn sequential_writes_fill_a_zone_then_move_on_and_reset_on_wrap() {
        let mut h = ZbdHost::new(&ZbdOptions::default(), geo(2), 0, 8 * MIB, false, MIB).unwrap();
        for i in 0..6 {
            assert!(h.adjust(w(i * MIB, MIB)));
        }
        let got: Vec<u64> = drain(&mut h).iter().map(|d| d.offset / MIB).collect();
        // zone 0 holds 0..3 MiB, zone 1 starts at 4 MiB
        assert_eq!(got, vec![0, 1, 2, 4, 5, 6]);
        // both full: the next write wraps to zone 0, reset first
        assert!(h.adjust(w(0, MIB)));
        let got = drain(&mut h);
        assert_eq!(got[0].op, IoOp::Trim);
        assert_eq!((got[0].offset, got[0].len), (0, 4 * MIB));
        assert_eq!((got[1].op, got[1].offset), (IoOp::Write, 0));
        assert_eq!(h.resets, 1);
    }

    #[test]
    fn random_writes_keep_to_the_open_zone_limit() {
        let mut h = ZbdHost::new(&ZbdOptions::default(), geo(2), 0, 32 * MIB, true, 4096).unwrap();
        let mut zones = std::collections::BTreeSet::new();
        for i in 0..64u64 {
            // offsets spread over all eight zones
            assert!(h.adjust(w((i * 7 % 32) * MIB, 4096)));
        }
        for d in drain(&mut h) {
            assert_eq!(d.op, IoOp::Write);
            zones.insert(d.offset / (4 * MIB));
        }
        assert_eq!(zones.len(), 2, "{zones:?}");
    }

    #[test]
    fn threshold_resets_come_every_nth_write() {
        let opts = ZbdOptions {
            reset_threshold: 0.0,
            reset_frequency: 0.25,
            ..Default::default()
        };
        let mut h = ZbdHost::new(&opts, geo(0), 0, 8 * MIB, false, 4096).unwrap();
        for i in 0..8 {
            h.adjust(w(i * 4096, 4096));
        }
        let trims = drain(&mut h).iter().filter(|d| d.op == IoOp::Trim).count();
        assert_eq!(trims, 2);
    }

    #[test]
    fn reads_stay_below_the_write_pointer() {
        let mut h = ZbdHost::new(&ZbdOptions::default(), geo(0), 0, 8 * MIB, true, 4096).unwrap();
        let r = |o| IoDesc {
            op: IoOp::Read,
            offset: o,
            len: 4096,
        };
        // nothing written: nothing to read
        assert!(!h.adjust(r(0)));
        h.adjust(w(5 * MIB, 64 * 1024));
        drain(&mut h);
        for o in [0, MIB, 5 * MIB + 8192, 6 * MIB] {
            assert!(h.adjust(r(o)));
            let d = h.next_io().unwrap();
            assert!(
                d.offset >= 4 * MIB && d.offset + d.len <= 4 * MIB + 64 * 1024,
                "{d:?}"
            );
        }
    }
}
