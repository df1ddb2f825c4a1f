//! [`JobThread`]: the IO stream of one thread of one job (see the
//! [`crate::gen`] module documentation for the semantics).

use super::bs::BsPicker;
use super::dist::Skewed;
use super::io::{IoDesc, IoOp};
use super::perm::Permutation;
use super::rng::{derive, Rng};
use crate::fio::{Distribution, FioError, JobSpec, RwSequencer};

/// Streams of a thread; a label each, so they stay independent.
const STREAM_DDIR: u64 = 1;
const STREAM_OFFSET: u64 = 2;
const STREAM_BS: u64 = 3;
const STREAM_SEQRAND: u64 = 4;
const STREAM_DIST: u64 = 5;
const STREAM_MAP: u64 = 6;

/// Where a strided-zone job is (`zonemode=strided`).
#[derive(Clone, Copy, Debug)]
struct ZoneWalk {
    /// Bytes of IO per zone.
    size: u64,
    /// From one zone's start to the next.
    step: u64,
    /// The first zone's start (the job's offset), where the walk wraps.
    base: u64,
    /// Bytes done in the current zone.
    bytes: u64,
}

/// How random offsets of one direction are drawn.
#[derive(Clone, Debug)]
enum Picker {
    /// Uniform, no random map.
    Uniform,
    /// Uniform through the random map `maps[i]`.
    Map(usize),
    Skewed(Skewed),
}

#[derive(Clone, Debug)]
struct Dir {
    bs: BsPicker,
    align: u64,
    nblocks: u64,
    last_pos: u64,
    last_start: u64,
    pct_random: u8,
    picker: Picker,
}

/// The IO stream of one thread of one job. See the module documentation for
/// the semantics.
#[derive(Clone, Debug)]
pub struct JobThread {
    start: u64,
    end: u64,
    region_len: u64,
    dirs: [Dir; 3],
    active: [bool; 3],
    random: bool,
    mix: bool,
    trim_write: bool,
    rwmix_read_pct: u64,
    seq_nr: u32,
    seq_left: u32,
    seq_add: i64,
    identical: bool,
    fsync_every: u64,
    fdatasync_every: u64,
    end_fsync: bool,
    byte_limit: Option<u64>,
    io_limit: Option<u64>,
    /// The device's end: a fixed-size sequential IO may run past the
    /// region's end, not past this.
    device_end: u64,
    time_based: bool,
    /// `io_size=` given: passes repeat until it is done.
    io_size_given: bool,
    /// Passes still to run after the current one (`loops - 1` at start).
    loops_left: u64,
    /// The largest block size of any active direction.
    max_bs: u64,
    /// `zonemode=strided`: `start..end` is the current zone.
    zones: Option<ZoneWalk>,
    // progress
    bytes: u64,
    ios: u64,
    writes: u64,
    last_was_sync: bool,
    pending_write: Option<(u64, u64)>,
    finished: bool,
    end_fsync_done: bool,
    // randomness
    maps: Vec<Permutation>,
    map_rng: Rng,
    ddir_rng: Rng,
    off_rng: Rng,
    bs_rng: Rng,
    seqrand_rng: Rng,
    dist_rng: Rng,
}

impl JobThread {
    /// The generator of thread `thread_index` (0-based, below
    /// `spec.numjobs`) of `spec` on a device of `device_capacity` bytes.
    ///
    /// `seed` is the run's seed. It matters only for a job with
    /// `randrepeat=0` and no `randseed`, where fio would draw fresh entropy:
    /// storlab mixes in the run's seed instead so runs stay reproducible.
    /// Otherwise the job's own seed (`randseed`, or fio's default) decides,
    /// together with the job's index and the thread's index.
    pub fn new(
        spec: &JobSpec,
        thread_index: u32,
        device_capacity: u64,
        seed: u64,
    ) -> Result<JobThread, FioError> {
        let fail = |reason: String| FioError::Generator {
            job: spec.name.clone(),
            thread: thread_index,
            reason,
        };
        let (start, region_len) = spec.region(device_capacity, thread_index).map_err(fail)?;
        // With strided zones, offsets come from the current zone (of
        // zonerange bytes), while size stays the byte budget.
        let zone_len = spec
            .zones
            .map_or(region_len, |z| z.range.min(device_capacity - start));
        let end = start + zone_len;
        if spec.rw_seq_add_bytes < 0 && !spec.rw.is_random() {
            // Outside these bounds fio's arithmetic leaves the region at
            // once (it issues one IO and stops, or walks forwards over
            // overlapping IOs): say so rather than guess.
            let step = spec.rw_seq_add_bytes.unsigned_abs();
            let largest = (0..3).map(|d| spec.bs[d].max_bytes()).max().unwrap_or(0);
            if step < largest || step > region_len {
                return Err(fail(format!(
                    "rw=...:-{step}: a backward step must be from the largest block size ({largest}) to the region's size ({region_len} bytes)"
                )));
            }
        }

        let base = if spec.randrepeat || spec.randseed.is_some() {
            spec.seed
        } else {
            derive(spec.seed, seed)
        };
        let thread_seed = derive(
            derive(base, u64::from(spec.job_index)),
            u64::from(thread_index),
        );
        let stream = |label: u64| Rng::new(derive(thread_seed, label));
        let mut dist_rng = stream(STREAM_DIST);
        let mut map_rng = stream(STREAM_MAP);

        let active = spec.rw.directions();
        let random = spec.rw.is_random();
        let use_map =
            random && !spec.norandommap && matches!(spec.random_distribution, Distribution::Random);
        let mut maps: Vec<Permutation> = Vec::new();
        let mut map_geometry: Vec<(u64, u64)> = Vec::new();

        let mut make_dir = |d: usize| -> Result<Dir, FioError> {
            let bs = BsPicker::new(&spec.bs[d], spec.bs_unaligned);
            let min_bs = bs.min();
            let align = spec.blockalign_bytes[d].unwrap_or(min_bs).max(1);
            let usable = zone_len.saturating_sub(min_bs.saturating_sub(align));
            let nblocks = usable / align;
            if active[d] && (nblocks == 0 || min_bs > zone_len) {
                let what = if spec.zones.is_some() {
                    "zone (zonerange)"
                } else {
                    "region (size)"
                };
                return Err(fail(format!(
                    "the {what} of {zone_len} bytes holds no {} block of {min_bs} bytes (bs, bsrange, bssplit) at a multiple of blockalign={align}",
                    ["read", "write", "trim"][d]
                )));
            }
            let picker = if !active[d] || !random {
                Picker::Uniform
            } else if use_map {
                let idx = match map_geometry.iter().position(|g| *g == (align, nblocks)) {
                    Some(i) => i,
                    None => {
                        map_geometry.push((align, nblocks));
                        maps.push(Permutation::new(nblocks, map_rng.next_u64()));
                        maps.len() - 1
                    }
                };
                Picker::Map(idx)
            } else {
                match &spec.random_distribution {
                    Distribution::Random => Picker::Uniform,
                    Distribution::Zipf { theta, center } => {
                        Picker::Skewed(Skewed::zipf(nblocks, *theta, *center, &mut dist_rng))
                    }
                    Distribution::Pareto { h, center } => {
                        Picker::Skewed(Skewed::pareto(nblocks, *h, *center, &mut dist_rng))
                    }
                    Distribution::Normal { dev_pct, center } => {
                        Picker::Skewed(Skewed::normal(nblocks, *dev_pct, *center))
                    }
                    Distribution::Zoned(zones) if !zones[d].is_empty() => {
                        Picker::Skewed(Skewed::zoned(nblocks, &zones[d]))
                    }
                    Distribution::ZonedAbs(zones) if !zones[d].is_empty() => {
                        Picker::Skewed(Skewed::zoned_abs(nblocks, align, &zones[d]))
                    }
                    Distribution::Zoned(_) | Distribution::ZonedAbs(_) => Picker::Uniform,
                }
            };
            Ok(Dir {
                bs,
                align,
                nblocks: nblocks.max(1),
                last_pos: start,
                last_start: start,
                pct_random: spec.percentage_random[d],
                picker,
            })
        };
        let dirs = [make_dir(0)?, make_dir(1)?, make_dir(2)?];

        let loops = u64::from(spec.loops.max(1));
        let byte_limit = spec.byte_budget(region_len, device_capacity);
        let io_limit = byte_limit.and(spec.number_ios);
        let writes = active[1];
        let max_bs = (0..3)
            .filter(|&d| active[d])
            .map(|d| spec.bs[d].max_bytes())
            .max()
            .unwrap_or(1);
        Ok(JobThread {
            start,
            end,
            region_len,
            dirs,
            active,
            random,
            mix: spec.rw.is_read_write_mix(),
            trim_write: spec.rw.is_trim_write(),
            rwmix_read_pct: u64::from(spec.rwmix_read_pct),
            seq_nr: spec.rw_seq_nr.max(1),
            seq_left: spec.rw_seq_nr.max(1),
            seq_add: spec.rw_seq_add_bytes,
            identical: spec.rw_sequencer == RwSequencer::Identical,
            fsync_every: if writes {
                u64::from(spec.fsync_every)
            } else {
                0
            },
            fdatasync_every: if writes {
                u64::from(spec.fdatasync_every)
            } else {
                0
            },
            end_fsync: writes && spec.end_fsync,
            byte_limit,
            io_limit,
            device_end: device_capacity,
            time_based: spec.time_based,
            io_size_given: spec.io_size.is_some(),
            loops_left: loops - 1,
            max_bs,
            zones: spec.zones.map(|z| ZoneWalk {
                size: z.size,
                step: z.range.saturating_add(z.skip),
                base: start,
                bytes: 0,
            }),
            bytes: 0,
            ios: 0,
            writes: 0,
            last_was_sync: false,
            pending_write: None,
            finished: false,
            end_fsync_done: false,
            maps,
            map_rng,
            ddir_rng: stream(STREAM_DDIR),
            off_rng: stream(STREAM_OFFSET),
            bs_rng: stream(STREAM_BS),
            seqrand_rng: stream(STREAM_SEQRAND),
            dist_rng,
        })
    }

    /// The byte range `(start, len)` this thread works in: its region, or
    /// with strided zones everything from its first zone to the device's
    /// end.
    pub fn region(&self) -> (u64, u64) {
        match &self.zones {
            Some(z) => (z.base, self.device_end - z.base),
            None => (self.start, self.region_len),
        }
    }

    /// Bytes of reads, writes and trims issued so far that count toward the
    /// job's size (for trimwrite, the writes).
    pub fn bytes_issued(&self) -> u64 {
        self.bytes
    }

    /// IOs issued so far that count toward `number_ios` (sync ops and the
    /// trims of trimwrite excluded).
    pub fn ios_issued(&self) -> u64 {
        self.ios
    }

    /// The next IO, or `None` when the job has done its work. Time-based
    /// jobs never end here; the simulator stops them at their runtime.
    #[inline]
    pub fn next_io(&mut self) -> Option<IoDesc> {
        if let Some((offset, len)) = self.pending_write.take() {
            return Some(self.account(IoOp::Write, offset, len));
        }
        if self.finished || self.limit_reached() {
            self.finished = true;
            if self.end_fsync && !self.end_fsync_done {
                self.end_fsync_done = true;
                return Some(IoDesc {
                    op: IoOp::Fsync,
                    offset: 0,
                    len: 0,
                });
            }
            return None;
        }
        if !self.last_was_sync && self.writes > 0 {
            let op = if self.writes.checked_rem(self.fsync_every) == Some(0) {
                Some(IoOp::Fsync)
            } else if self.writes.checked_rem(self.fdatasync_every) == Some(0) {
                Some(IoOp::Fdatasync)
            } else {
                None
            };
            if let Some(op) = op {
                self.last_was_sync = true;
                return Some(IoDesc {
                    op,
                    offset: 0,
                    len: 0,
                });
            }
        }
        self.zone_turn();
        let d = self.pick_direction();
        let Some((offset, len)) = self.place(d) else {
            self.finished = true;
            return self.next_io();
        };
        if self.trim_write {
            self.pending_write = Some((offset, len));
            self.last_was_sync = false;
            return Some(IoDesc {
                op: IoOp::Trim,
                offset,
                len,
            });
        }
        let op = [IoOp::Read, IoOp::Write, IoOp::Trim][d];
        Some(self.account(op, offset, len))
    }

    #[inline]
    fn limit_reached(&self) -> bool {
        self.byte_limit.is_some_and(|b| self.bytes >= b)
            || self.io_limit.is_some_and(|n| self.ios >= n)
    }

    #[inline]
    fn account(&mut self, op: IoOp, offset: u64, len: u64) -> IoDesc {
        self.bytes = self.bytes.saturating_add(len);
        self.ios = self.ios.saturating_add(1);
        if op == IoOp::Write {
            self.writes = self.writes.wrapping_add(1);
        }
        self.last_was_sync = false;
        IoDesc { op, offset, len }
    }

    #[inline]
    fn pick_direction(&mut self) -> usize {
        if self.mix {
            if self.ddir_rng.below(100) < self.rwmix_read_pct {
                0
            } else {
                1
            }
        } else if self.trim_write {
            2
        } else if self.active[0] {
            0
        } else if self.active[1] {
            1
        } else {
            2
        }
    }

    /// Offset and length of the next IO in direction `d`.
    #[inline]
    /// `None` when a sequential walk left the region and no further pass
    /// is due: the job is done.
    fn place(&mut self, d: usize) -> Option<(u64, u64)> {
        let len = self.dirs[d].bs.pick(&mut self.bs_rng);
        // fio's rw=<mode>:<n> counter: a "hit" every n IOs takes the normal
        // path; the IOs between follow the previous one.
        let hit = if self.seq_nr > 1 {
            self.seq_left -= 1;
            if self.seq_left == 0 {
                self.seq_left = self.seq_nr;
                true
            } else {
                false
            }
        } else {
            true
        };
        let go_random = self.random && hit && {
            let pct = self.dirs[d].pct_random;
            pct >= 100 || (pct > 0 && self.seqrand_rng.below(100) < u64::from(pct))
        };
        let identical = !hit && self.identical;
        // A random job's sequential IO with nowhere left on the device
        // takes a random block, as fio's get_next_block does when its
        // sequential offset fails.
        let seq_off_device = self.random
            && !go_random
            && !identical
            && self.seq_add >= 0
            && self.next_seq_pos(d) >= self.device_end;
        let (offset, len) = if go_random || seq_off_device {
            match self.random_place(d, len) {
                Some(p) => p,
                None if self.new_pass() => self.random_place(d, len)?,
                None => return None,
            }
        } else if identical {
            let off = self.dirs[d].last_start;
            (off, self.dirs[d].bs.fit(len, self.end - off))
        } else {
            match self.sequential_place(d, len) {
                Some(p) => p,
                None if self.new_pass() => self.sequential_place(d, len)?,
                None => return None,
            }
        };
        let dir = &mut self.dirs[d];
        dir.last_start = offset;
        dir.last_pos = offset + len;
        if let Some(z) = &mut self.zones {
            z.bytes = z.bytes.saturating_add(len);
        }
        Some((offset, len))
    }

    /// `zonemode=strided`: once `zonesize` bytes went to the current zone,
    /// move `zonerange + zoneskip` on (back to the first zone when the next
    /// would not fit on the device), every direction at the zone's start
    /// and the random maps in a new order.
    fn zone_turn(&mut self) {
        let Some(z) = &mut self.zones else {
            return;
        };
        if z.bytes < z.size {
            return;
        }
        z.bytes = 0;
        let len = self.end - self.start;
        let mut next = self.start.saturating_add(z.step);
        if next > self.device_end.saturating_sub(len) {
            next = z.base;
        }
        self.start = next;
        self.end = next + len;
        for dir in &mut self.dirs {
            dir.last_pos = next;
            dir.last_start = next;
        }
        for map in &mut self.maps {
            map.rekey(self.map_rng.next_u64());
        }
    }

    /// A sequential walk left the region, or the random map has handed out
    /// every block: fio's pass is over. Another one starts (every direction
    /// back at the region's start, every random map in a new order) when
    /// the job is
    /// time based, when an explicit `io_size` has at least one largest
    /// block still to do, or while `loops` remain; otherwise the job ends,
    /// even short of `size` bytes (holes skip bytes, as fio's own iolog
    /// shows: `rw=read:8k bs=4k size=64k` is six reads).
    fn new_pass(&mut self) -> bool {
        let again = if self.time_based {
            true
        } else if self.io_size_given {
            self.byte_limit
                .is_none_or(|b| b.saturating_sub(self.bytes) >= self.max_bs)
        } else if self.loops_left > 0 {
            self.loops_left -= 1;
            true
        } else {
            false
        };
        if again {
            for dir in &mut self.dirs {
                dir.last_pos = self.start;
                dir.last_start = self.start;
            }
            for map in &mut self.maps {
                map.rekey(self.map_rng.next_u64());
            }
        }
        again
    }

    /// The next sequential IO of direction `d` (`len` drawn), `None` when
    /// it would leave the region: fio's `get_next_seq_offset` and
    /// `get_next_buflen`. A position at or past the region's end ends the
    /// pass; a fixed block size is issued whole, past the region's end if
    /// the device goes on (fio checks only the device's size), while a
    /// block size range must fit the region (the largest size that does;
    /// fio redraws until one does). The same holds for the sequential IOs
    /// of a random job (`rw=randread:4`, `percentage_random`) but at the
    /// device's end, where `place` takes a random block instead.
    #[inline]
    fn sequential_place(&mut self, d: usize, len: u64) -> Option<(u64, u64)> {
        if self.seq_add < 0 {
            return Some(self.backward_place(d, len));
        }
        let dir = &self.dirs[d];
        let zoned = self.zones.is_some();
        let mut pos = self.next_seq_pos(d);
        if zoned && pos >= self.end {
            // within a zone the walk wraps to the zone's start until the
            // zone's bytes are done (fio's iolog: zonesize=32k zonerange=16k
            // reads the zone twice)
            pos = self.start;
        }
        let room = self.end.saturating_sub(pos);
        let min = dir.bs.min();
        match dir.bs {
            BsPicker::Fixed(b) if pos < self.end && pos.checked_add(b)? <= self.device_end => {
                Some((pos, b))
            }
            BsPicker::Fixed(_) => None,
            // a zone's walk never ends the pass
            _ if room >= min || zoned => Some((pos, dir.bs.fit(len, room.max(min)))),
            _ => None,
        }
    }

    /// Where a forward sequential IO of direction `d` would start.
    #[inline]
    fn next_seq_pos(&self, d: usize) -> u64 {
        let pos = self.dirs[d].last_pos;
        if self.seq_add > 0 && pos != self.start {
            pos.saturating_add(self.seq_add as u64)
        } else {
            pos
        }
    }

    /// `rw=<seq>:-<step>`, fio's `get_next_seq_offset` with a negative add
    /// (`JobThread::new` keeps the step between the largest block size and
    /// the region's size): positions relative to the region's start; the
    /// first IO at the start, each next one `step` before the end of the
    /// previous one, and a step past the start wraps to `step` before the
    /// region's end. With `offset=`, fio's "back at the start" test also
    /// holds before the first IO and puts the previous end at the region's
    /// length taken as an absolute position, so the walk begins at
    /// `size - offset - step` (or at the wrap when `offset` exceeds
    /// `size`), as fio's own iolog shows.
    fn backward_place(&mut self, d: usize, len: u64) -> (u64, u64) {
        let step = self.seq_add.unsigned_abs();
        let io_size = self.end - self.start;
        let mut last = self.dirs[d].last_pos - self.start;
        if last == 0 && self.start != 0 {
            last = io_size.wrapping_sub(self.start);
        }
        let rel = if last == 0 {
            0
        } else {
            match last.checked_sub(step) {
                Some(r) if r < io_size => r,
                _ => io_size - step,
            }
        };
        let offset = self.start + rel;
        (offset, self.dirs[d].bs.fit(len, self.end - offset))
    }

    /// A random IO of direction `d`, `None` when its random map has handed
    /// out every block of this pass.
    #[inline]
    fn random_place(&mut self, d: usize, len: u64) -> Option<(u64, u64)> {
        let block = match &self.dirs[d].picker {
            Picker::Uniform => self.off_rng.below(self.dirs[d].nblocks),
            Picker::Map(i) => match self.maps[*i].next() {
                Some(b) => b,
                None if self.zones.is_some() => {
                    let map = &mut self.maps[*i];
                    map.rekey(self.map_rng.next_u64());
                    map.next()?
                }
                None => return None,
            },
            Picker::Skewed(s) => s.sample(&mut self.dist_rng),
        };
        let dir = &self.dirs[d];
        let offset = self.start + block.min(dir.nblocks - 1) * dir.align;
        Some((offset, dir.bs.fit(len, self.end - offset)))
    }
}
