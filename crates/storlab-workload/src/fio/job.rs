//! [`JobSpec`], one job after its options were applied, and [`JobFile`],
//! the jobs of a job file or command line.

use super::engine::{engine_kind, EngineKind, DEFAULT_ENGINE};
use super::error::Location;
use super::types::{
    BlockSizeSpec, Distribution, Fallocate, LogOptions, RateProcess, RwMode, RwSequencer, SizeSpec,
    ThinktimeBlocksType, UnifiedRw, Zones,
};

/// fio's default random seed when `randrepeat=1` and no `randseed` is given
/// (fio's `FIO_RANDSEED`).
pub const FIO_DEFAULT_SEED: u64 = 0xb189_9bed;

/// A parsed job file or command line: the jobs in the order fio would start
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct JobFile {
    /// Jobs in order (command-line jobs first, then each job file's jobs).
    pub jobs: Vec<JobSpec>,
    /// The `[global]` options in force at the end of the input, as written
    /// (fio's JSON reports these as `global options`).
    pub global_options: Vec<(String, String)>,
    /// fio front-end options from the command line that are not job options
    /// (`--output-format=json`, `--output=file`, ...), as written, for the
    /// caller to act on.
    pub frontend_options: Vec<(String, String)>,
}

/// One job, after its `[global]` options were applied: what one `[section]`
/// or one `--name` describes. Arrays of three are indexed read, write, trim.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// `name=` or the section name.
    pub name: String,
    /// `description=`.
    pub description: Option<String>,
    /// Where the job's section header (or `--name`) was written.
    pub location: Location,
    /// 0-based position among all jobs of the input.
    pub job_index: u32,
    /// fio's reporting group (`Run status group N`).
    pub group_id: u32,
    /// `stonewall` / `wait_for_previous`: wait for all earlier jobs to
    /// finish before starting.
    pub stonewall: bool,
    /// `new_group`.
    pub new_group: bool,
    /// `group_reporting`: report the group's jobs as one.
    pub group_reporting: bool,
    /// `rw=`.
    pub rw: RwMode,
    /// `rw=<random mode>:<n>`: IOs per random offset (1 = every IO).
    pub rw_seq_nr: u32,
    /// `rw=<sequential mode>:<bytes>`: hole added after each IO; negative
    /// steps backwards.
    pub rw_seq_add_bytes: i64,
    /// `rw_sequencer=`.
    pub rw_sequencer: RwSequencer,
    /// `rwmixread=` (or 100 - `rwmixwrite=`).
    pub rwmix_read_pct: u8,
    /// Block sizes from `bs=`, `bsrange=` and `bssplit=` (bssplit wins over
    /// bsrange, which wins over bs, per direction).
    pub bs: [BlockSizeSpec; 3],
    /// `blockalign=`; `None` means the direction's minimum block size.
    pub blockalign_bytes: [Option<u64>; 3],
    /// `bs_unaligned`.
    pub bs_unaligned: bool,
    /// `iodepth=`.
    pub iodepth: u32,
    /// `numjobs=`: identical threads running this job.
    pub numjobs: u32,
    /// `size=`; `None` is the whole device from the offset.
    pub size: Option<SizeSpec>,
    /// `io_size=` / `io_limit=`; `None` is `size`.
    pub io_size: Option<SizeSpec>,
    /// `offset=`.
    pub offset: SizeSpec,
    /// `offset_increment=`: added once per thread index.
    pub offset_increment: SizeSpec,
    /// `offset_align=`: alignment of percentage offsets (0: minimum bs).
    pub offset_align_bytes: u64,
    /// `number_ios=`.
    pub number_ios: Option<u64>,
    /// `loops=`: times the IO budget is repeated.
    pub loops: u32,
    /// `runtime=` / `timeout=`.
    pub runtime_ns: Option<u64>,
    /// `time_based`.
    pub time_based: bool,
    /// `ramp_time=`.
    pub ramp_time_ns: Option<u64>,
    /// `startdelay=`.
    pub startdelay_ns: u64,
    /// `random_distribution=`.
    pub random_distribution: Distribution,
    /// `percentage_random=` per direction.
    pub percentage_random: [u8; 3],
    /// `norandommap` (also forced by a `blockalign` that differs from the
    /// minimum block size, as fio does).
    pub norandommap: bool,
    /// `randrepeat=`.
    pub randrepeat: bool,
    /// `randseed=`.
    pub randseed: Option<u64>,
    /// The job's seed: `randseed`, else [`FIO_DEFAULT_SEED`].
    pub seed: u64,
    /// `fsync=`: an fsync after every N writes (0: never).
    pub fsync_every: u32,
    /// `fdatasync=`: an fdatasync after every N writes (0: never).
    pub fdatasync_every: u32,
    /// `end_fsync=`.
    pub end_fsync: bool,
    /// `thinktime=`.
    pub thinktime_ns: u64,
    /// `thinktime_spin=`.
    pub thinktime_spin_ns: u64,
    /// `thinktime_blocks=`.
    pub thinktime_blocks: u32,
    /// `thinktime_blocks_type=`.
    pub thinktime_blocks_type: ThinktimeBlocksType,
    /// `rate=` per direction, bytes per second.
    pub rate_bytes_per_s: [Option<u64>; 3],
    /// `rate_iops=` per direction.
    pub rate_iops: [Option<u64>; 3],
    /// `rate_process=`.
    pub rate_process: RateProcess,
    /// `direct=` (or not `buffered=`): with a file system in the path
    /// (`storlab sim --fs`), O_DIRECT bypasses the page cache; on the raw
    /// device no effect.
    pub direct: bool,
    /// `ioengine=` as written (fio's default is [`DEFAULT_ENGINE`]). Only
    /// its [`EngineKind`] matters to a simulation: a synchronous engine
    /// caps the queue depth at 1, as in fio.
    pub ioengine: Option<String>,
    /// `filename=`: with a file system, the file every thread of the job
    /// (and of any job naming the same file) works in; without one, each
    /// thread has its own `nrfiles` files (fio's `jobname.N.M`). On the
    /// raw device no effect.
    pub filename: Option<String>,
    /// `nrfiles=` (default 1): files per thread when no `filename` is
    /// given; the job's `size` is split between them.
    pub nrfiles: u32,
    /// `overwrite=`: the files are laid out (written) before the job, so
    /// its writes allocate nothing.
    pub overwrite: bool,
    /// `fallocate=`: how a file the job only writes is prepared before
    /// the run (fio's default is `native`); with a file system in the path
    /// the simulator maps the mode and the file system to a layout
    /// (`storlab-sim`'s `lay_out_files`).
    pub fallocate: Fallocate,
    /// `thread`. Recorded.
    pub thread: bool,
    /// `kb_base=` used for this job's values.
    pub kb_base: u32,
    /// `percentile_list=`.
    pub percentile_list: Option<Vec<f64>>,
    /// Which latencies keep percentiles: `slat_percentiles` (default 0),
    /// `clat_percentiles` (default 1), `lat_percentiles` (default 0).
    pub percentiles: [bool; 3],
    /// fio's log files: `write_lat_log`, `write_bw_log`, `write_iops_log`,
    /// `write_iolog` and how they are written.
    pub logs: LogOptions,
    /// `read_iolog=`: replay this trace (a fio iolog, or any format
    /// `storlab-trace` reads) instead of generating IOs; `rw`, `bs`, `size`
    /// and the like then do not apply, as in fio.
    pub read_iolog: Option<String>,
    /// storlab's `app=NAME`: the job runs an application model
    /// (`storlab apps`) instead of fio's IO generator, beside the group's
    /// other jobs; with where it was written.
    pub app: Option<(String, Location)>,
    /// storlab's `app_set=name=value,...` (repeatable): the application's
    /// parameters, each with where it was written.
    pub app_set: Vec<(String, Location)>,
    /// `replay_no_stall=`: replay as fast as `iodepth` allows, ignoring
    /// the trace's times.
    pub replay_no_stall: bool,
    /// `sync=sync` or `dsync` (`O_SYNC`, `O_DSYNC`): every write is durable
    /// when it completes, which a block device is asked for with force
    /// unit access (FUA), as Linux issues such writes.
    pub sync_writes: bool,
    /// `zonemode=strided` with `zonesize`, `zonerange`, `zoneskip`.
    pub zones: Option<Zones>,
    /// `zonemode=zbd` and its options: fio keeps writes at the zones'
    /// write pointers ([`super::zbd`]).
    pub zbd: Option<super::zbd::ZbdOptions>,
    /// Data placement (`fdp=1`, `dataplacement=`, `plids=`,
    /// `plid_select=`): `None` when the job uses none ([`super::dp`]).
    pub dp: Option<super::dp::DpOptions>,
    /// `unified_rw_reporting=`.
    pub unified_rw: UnifiedRw,
    /// `hipri` (io_uring, pvsync2): completions are polled for, not
    /// waited for with an interrupt.
    pub hipri: bool,
    /// `max_latency=` (µs without a unit): the first IO slower than this
    /// ends the job with fio's ETIMEDOUT error.
    pub max_latency_ns: Option<u64>,
    /// Every option as written (globals first, a job's own value replacing a
    /// global's in place), in fio's spelling: fio's `job options`.
    pub options: Vec<(String, String)>,
}

impl JobSpec {
    /// A job with fio's defaults and the given name (as `[name]` with no
    /// options would give).
    pub fn with_defaults(name: &str) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            description: None,
            location: Location::file("<defaults>", 0),
            job_index: 0,
            group_id: 0,
            stonewall: false,
            new_group: false,
            group_reporting: false,
            rw: RwMode::Read,
            rw_seq_nr: 1,
            rw_seq_add_bytes: 0,
            rw_sequencer: RwSequencer::Sequential,
            rwmix_read_pct: 50,
            bs: [
                BlockSizeSpec::Fixed(4096),
                BlockSizeSpec::Fixed(4096),
                BlockSizeSpec::Fixed(4096),
            ],
            blockalign_bytes: [None; 3],
            bs_unaligned: false,
            iodepth: 1,
            numjobs: 1,
            size: None,
            io_size: None,
            offset: SizeSpec::Bytes(0),
            offset_increment: SizeSpec::Bytes(0),
            offset_align_bytes: 0,
            number_ios: None,
            loops: 1,
            runtime_ns: None,
            time_based: false,
            ramp_time_ns: None,
            startdelay_ns: 0,
            random_distribution: Distribution::Random,
            percentage_random: [100; 3],
            norandommap: false,
            randrepeat: true,
            randseed: None,
            seed: FIO_DEFAULT_SEED,
            fsync_every: 0,
            fdatasync_every: 0,
            end_fsync: false,
            thinktime_ns: 0,
            thinktime_spin_ns: 0,
            thinktime_blocks: 1,
            thinktime_blocks_type: ThinktimeBlocksType::Complete,
            rate_bytes_per_s: [None; 3],
            rate_iops: [None; 3],
            rate_process: RateProcess::Linear,
            direct: false,
            ioengine: None,
            filename: None,
            nrfiles: 1,
            overwrite: false,
            fallocate: Fallocate::Native,
            thread: false,
            kb_base: 1024,
            percentile_list: None,
            percentiles: [false, true, false],
            logs: LogOptions::default(),
            read_iolog: None,
            app: None,
            app_set: Vec::new(),
            replay_no_stall: false,
            sync_writes: false,
            zones: None,
            zbd: None,
            dp: None,
            unified_rw: UnifiedRw::None,
            hipri: false,
            max_latency_ns: None,
            options: Vec::new(),
        }
    }

    /// IOs the job keeps in flight: `iodepth`, or 1 with a synchronous
    /// engine (fio's cap; `iodepth` itself stays as written, as fio reports
    /// it in `latency_depth`).
    pub fn queue_depth(&self) -> u32 {
        let engine = self.ioengine.as_deref().unwrap_or(DEFAULT_ENGINE);
        match engine_kind(engine) {
            Some(EngineKind::Sync) => 1,
            _ => self.iodepth.max(1),
        }
    }

    /// fio's console note when a synchronous engine caps `iodepth` (see
    /// [`JobSpec::queue_depth`]), for the caller to print before the run;
    /// it is not part of the report.
    pub fn depth_note(&self) -> Option<String> {
        (self.queue_depth() < self.iodepth).then(|| {
            let engine = match &self.ioengine {
                Some(e) => e.clone(),
                None => format!("{DEFAULT_ENGINE}, fio's default"),
            };
            format!(
                "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1 (job `{}`: ioengine={engine}; an asynchronous engine such as ioengine=libaio keeps iodepth={} in flight)",
                self.name, self.iodepth
            )
        })
    }

    /// The smallest block size over the directions the job issues.
    pub fn min_block_size(&self) -> u64 {
        let dirs = self.rw.directions();
        (0..3)
            .filter(|&d| dirs[d])
            .map(|d| self.bs[d].min_bytes())
            .min()
            .unwrap_or(4096)
            .max(1)
    }

    /// The byte range `[start, start + len)` thread `thread_index` works in
    /// on a device of `capacity` bytes: `offset` (percentages aligned up to
    /// `offset_align` or the minimum block size) plus `offset_increment`
    /// times the thread index, then `size` (or the rest of the device),
    /// clipped to the device. Not rounded to the block size, as in fio: a
    /// sequential walk issues a whole block wherever one starts inside it
    /// (and the device holds it), random offsets take only whole blocks.
    pub fn region(&self, capacity: u64, thread_index: u32) -> Result<(u64, u64), String> {
        let min_bs = self.min_block_size();
        let align = if self.offset_align_bytes > 0 {
            self.offset_align_bytes
        } else {
            min_bs
        };
        let resolve_offset = |s: SizeSpec| -> u64 {
            match s {
                SizeSpec::Bytes(b) => b,
                SizeSpec::Percent(_) => {
                    let raw = s.resolve(capacity);
                    raw.div_ceil(align).saturating_mul(align)
                }
            }
        };
        let base = resolve_offset(self.offset);
        let step = resolve_offset(self.offset_increment);
        let start = step
            .checked_mul(u64::from(thread_index))
            .and_then(|inc| inc.checked_add(base))
            .ok_or_else(|| "offset overflows".to_string())?;
        if start >= capacity {
            return Err(format!(
                "offset {start} is at or beyond the device capacity {capacity}"
            ));
        }
        let avail = capacity - start;
        let wanted = self.size.map_or(avail, |s| s.resolve(capacity));
        let len = wanted.min(avail);
        if len < min_bs {
            return Err(format!(
                "the region at offset={start} of size={wanted} ({avail} bytes available) holds no block of the smallest block size (bs, bsrange, bssplit) {min_bs}: raise size or lower the block size"
            ));
        }
        Ok((start, len))
    }

    /// The bytes a thread with a region of `region_len` bytes moves before
    /// it ends by size: `io_size` (or the region) times `loops`, as fio
    /// counts them (for trimwrite, the writes). `None` for a time-based
    /// job, which ends only at its runtime.
    pub fn byte_budget(&self, region_len: u64, capacity: u64) -> Option<u64> {
        if self.time_based {
            return None;
        }
        let per_loop = self.io_size.map_or(region_len, |s| s.resolve(capacity));
        Some(per_loop.saturating_mul(u64::from(self.loops.max(1))))
    }

    /// About how many IOs the whole job (every thread) issues before it
    /// ends by size or `number_ios` on a device of `capacity` bytes: each
    /// thread's byte budget over the mean IO size of its mix. `None` for a
    /// time-based job. An estimate for progress bars, not for reports.
    pub fn expected_ios(&self, capacity: u64) -> Option<u64> {
        let dirs = self.rw.directions();
        let share = |d: usize| -> f64 {
            match (d, self.rw.is_read_write_mix()) {
                (0, true) => f64::from(self.rwmix_read_pct) / 100.0,
                (1, true) => 1.0 - f64::from(self.rwmix_read_pct) / 100.0,
                _ if dirs[d] => 1.0,
                _ => 0.0,
            }
        };
        // bytes counted toward the budget per IO issued
        let counted = if self.rw.is_trim_write() {
            // a trim, then a write of the same block: only the write counts
            self.bs[1].mean_bytes() / 2.0
        } else {
            (0..3).map(|d| share(d) * self.bs[d].mean_bytes()).sum()
        };
        let mut total = 0u64;
        for t in 0..self.numjobs.max(1) {
            let (_, len) = self.region(capacity, t).ok()?;
            let bytes = self.byte_budget(len, capacity)?;
            let mut ios = (bytes as f64 / counted.max(1.0)).ceil() as u64;
            if let Some(n) = self.number_ios {
                ios = ios.min(n);
            }
            total = total.saturating_add(ios);
        }
        Some(total)
    }
}
