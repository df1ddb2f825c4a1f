//! fio job files and command lines, parsed into typed job descriptions.
//!
//! # Design
//!
//! Parsing runs in three stages, each testable alone:
//!
//! 1. `ini`: text to `[sections]` of raw `key[=value]` entries, with fio's
//!    line rules (a `;` or `#` anywhere starts a comment, `include file`,
//!    `${VAR}` expansion). The command line produces the same entries from
//!    `--key=value` arguments (`cli`).
//! 2. Assembly (this module): `[global]` sections accumulate and each job
//!    sees the globals written above it; a job's own options replace a
//!    global's in place. Group ids follow fio: a job with `stonewall` or
//!    `new_group` starts a new reporting group unless it is the first job of
//!    the current one.
//! 3. `options`: every option is looked up in one table (name, aliases,
//!    value kind, whether the simulator uses it or only records it) and its
//!    value parsed into [`JobSpec`] fields whose names carry their units.
//!
//! An option not in the table is an error that names it, the place it was
//! written, a close match if there is one, and every supported option: a
//! silently ignored option would make a simulation disagree with the job
//! the user wrote. Where fio itself silently reads garbage (`bs=1.5k` is 1
//! byte in fio 3.33, `runtime=1x` is 1 µs) storlab refuses the value.
//!
//! Sizes given as percentages stay [`SizeSpec::Percent`] until the device
//! capacity is known; [`JobSpec::region`] resolves them.

mod cli;
mod error;
mod ini;
mod options;
mod value;

use std::path::Path;

pub use cli::{parse_cli_args, parse_cli_args_with_env};
pub use error::{FioError, Location};
pub use options::{canonical_option, option_names, supported_options, OptionEffect};

/// A size as fio reads it with its default `kb_base=1024` (`4k` is 4096,
/// `1m` 1048576, `0x1000` 4096); the message says what is wrong.
pub fn parse_size(text: &str) -> Result<u64, String> {
    value::parse_size(text, 1024)
}

/// A time as fio reads it (`60s`, `500ms`, `10us`), ns; a bare number is
/// in units of `default_unit_us` microseconds (fio's `runtime` takes
/// seconds: 1,000,000).
pub fn parse_time(text: &str, default_unit_us: u64) -> Result<u64, String> {
    value::parse_time_ns(text, default_unit_us)
}

use ini::{RawOption, Section};

/// Looks up an environment variable for `${VAR}` expansion in job files.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// fio's default random seed when `randrepeat=1` and no `randseed` is given
/// (fio's `FIO_RANDSEED`).
pub const FIO_DEFAULT_SEED: u64 = 0xb189_9bed;

/// fio's IO engine when a job names none (on Linux).
pub const DEFAULT_ENGINE: &str = "psync";

/// How an fio IO engine completes IO: the one property of an engine a
/// simulation honours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// fio flags it `FIO_SYNCIO`: each IO completes inside the call that
    /// issues it, so fio caps the queue depth at 1 whatever `iodepth` says.
    Sync,
    /// Keeps up to `iodepth` IOs in flight.
    Async,
}

/// fio's built-in engines with `FIO_SYNCIO` (fio's `engines/*.c`).
const SYNC_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "mmap",
    "splice",
    "net",
    "netsplice",
    "sg",
    "falloc",
    "ftruncate",
    "e4defrag",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "dev-dax",
    "libpmem",
    "http",
    "cpuio",
    "exec",
    "mtd",
    "libhdfs",
    "gfapi",
    "ime_psync",
    "ime_psyncv",
];

/// fio's built-in engines that keep several IOs in flight.
const ASYNC_ENGINES: &[&str] = &[
    "libaio",
    "io_uring",
    "io_uring_cmd",
    "posixaio",
    "solarisaio",
    "windowsaio",
    "null",
    "libzbc",
    "rdma",
    "rados",
    "rbd",
    "gfapi_async",
    "ime_aio",
    "libiscsi",
    "nbd",
    "libcufile",
    "dfs",
    "nfs",
    "xnvme",
    "libblkio",
    "spdk",
    "spdk_bdev",
];

/// The kind of the engine `name` (as `ioengine=` takes it), or `None` for
/// a name fio does not know. An external engine (`external:path`, or a path
/// to a shared object, as fio loads them) counts as asynchronous: its
/// flags are not known before it is loaded, and `iodepth` is honoured.
pub fn engine_kind(name: &str) -> Option<EngineKind> {
    if SYNC_ENGINES.contains(&name) {
        Some(EngineKind::Sync)
    } else if ASYNC_ENGINES.contains(&name) || name.starts_with("external:") || name.contains('/') {
        Some(EngineKind::Async)
    } else {
        None
    }
}

/// The engine names [`engine_kind`] knows, for messages.
pub fn engine_names() -> String {
    let mut all: Vec<&str> = SYNC_ENGINES.iter().chain(ASYNC_ENGINES).copied().collect();
    all.sort_unstable();
    all.join(", ")
}

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

/// The IO pattern of a job (`rw=` / `readwrite=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RwMode {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `trim`: sequential trims.
    Trim,
    /// `randread`: random reads.
    RandRead,
    /// `randwrite`: random writes.
    RandWrite,
    /// `randtrim`: random trims.
    RandTrim,
    /// `rw` or `readwrite`: sequential mixed reads and writes.
    ReadWrite,
    /// `randrw`: random mixed reads and writes.
    RandRw,
    /// `trimwrite`: sequential trim, then write of the same block.
    TrimWrite,
    /// `randtrimwrite`: random trim, then write of the same block.
    RandTrimWrite,
}

impl RwMode {
    /// All modes with their fio spellings (`readwrite` is an alias of `rw`).
    pub const ALL: [(&'static str, RwMode); 11] = [
        ("read", RwMode::Read),
        ("write", RwMode::Write),
        ("trim", RwMode::Trim),
        ("randread", RwMode::RandRead),
        ("randwrite", RwMode::RandWrite),
        ("randtrim", RwMode::RandTrim),
        ("rw", RwMode::ReadWrite),
        ("readwrite", RwMode::ReadWrite),
        ("randrw", RwMode::RandRw),
        ("trimwrite", RwMode::TrimWrite),
        ("randtrimwrite", RwMode::RandTrimWrite),
    ];

    /// fio's name for the mode.
    pub fn fio_name(self) -> &'static str {
        match Self::ALL.iter().find(|(_, m)| *m == self) {
            Some((name, _)) => name,
            None => "read",
        }
    }

    /// True when offsets are random rather than sequential.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandTrim
                | RwMode::RandRw
                | RwMode::RandTrimWrite
        )
    }

    /// True for the modes that mix reads and writes by `rwmixread`.
    pub fn is_read_write_mix(self) -> bool {
        matches!(self, RwMode::ReadWrite | RwMode::RandRw)
    }

    /// True for the modes that trim a block and then write it.
    pub fn is_trim_write(self) -> bool {
        matches!(self, RwMode::TrimWrite | RwMode::RandTrimWrite)
    }

    /// Which directions (read, write, trim) the mode issues.
    pub fn directions(self) -> [bool; 3] {
        match self {
            RwMode::Read | RwMode::RandRead => [true, false, false],
            RwMode::Write | RwMode::RandWrite => [false, true, false],
            RwMode::Trim | RwMode::RandTrim => [false, false, true],
            RwMode::ReadWrite | RwMode::RandRw => [true, true, false],
            RwMode::TrimWrite | RwMode::RandTrimWrite => [false, true, true],
        }
    }
}

/// What `rw=<mode>:<n>` does with its number for random modes
/// (`rw_sequencer=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwSequencer {
    /// `sequential`: after a random offset, the next `n - 1` IOs follow it
    /// sequentially.
    Sequential,
    /// `identical`: the same offset is used `n` times.
    Identical,
}

/// How block sizes are chosen for one direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSizeSpec {
    /// `bs=`: one size.
    Fixed(u64),
    /// `bsrange=min-max`: uniform in the range, a multiple of `min` when
    /// `min` is a power of two (unless `bs_unaligned`).
    Range {
        /// Smallest size in bytes.
        min: u64,
        /// Largest size in bytes.
        max: u64,
    },
    /// `bssplit=`: sizes with weights in percent, sorted by weight as fio
    /// does (the order decides which entry absorbs a total under 100 %).
    Split(Vec<BsSplitEntry>),
}

impl BlockSizeSpec {
    /// The smallest size this spec can produce.
    pub fn min_bytes(&self) -> u64 {
        match self {
            BlockSizeSpec::Fixed(b) => *b,
            BlockSizeSpec::Range { min, .. } => *min,
            BlockSizeSpec::Split(v) => v.iter().map(|e| e.bs).min().unwrap_or(4096),
        }
    }

    /// The largest size this spec can produce.
    pub fn max_bytes(&self) -> u64 {
        match self {
            BlockSizeSpec::Fixed(b) => *b,
            BlockSizeSpec::Range { max, .. } => *max,
            BlockSizeSpec::Split(v) => v.iter().map(|e| e.bs).max().unwrap_or(4096),
        }
    }
}

/// One `size/percent` entry of `bssplit=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsSplitEntry {
    /// Block size in bytes.
    pub bs: u64,
    /// Weight in percent (entries written without one share the rest).
    pub pct: u8,
}

/// A size that may be relative to the device (`size=20%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    /// Bytes.
    Bytes(u64),
    /// Percent (1 to 100) of the device capacity.
    Percent(u8),
}

impl SizeSpec {
    /// Bytes on a device of `capacity` bytes (percentages round down).
    pub fn resolve(self, capacity: u64) -> u64 {
        match self {
            SizeSpec::Bytes(b) => b,
            SizeSpec::Percent(p) => ((u128::from(capacity) * u128::from(p)) / 100) as u64,
        }
    }
}

/// One zone of `random_distribution=zoned:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zone {
    /// Percent of accesses that go to this zone.
    pub access_pct: u8,
    /// Percent of the region the zone covers (zones are consecutive).
    pub size_pct: u8,
}

/// One zone of `random_distribution=zoned_abs:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneAbs {
    /// Percent of accesses that go to this zone.
    pub access_pct: u8,
    /// Bytes the zone covers (zones are consecutive from the region start).
    pub size_bytes: u64,
}

/// `random_distribution=`: how random offsets are drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum Distribution {
    /// `random`: uniform (the default).
    Random,
    /// `zipf:theta[:center]`.
    Zipf {
        /// Zipf exponent θ (fio's default 1.1; 1.0 is refused as in fio).
        theta: f64,
        /// Where the hottest rank lands, as a fraction of the region
        /// (`None`: drawn from the seed, as fio does).
        center: Option<f64>,
    },
    /// `pareto:h[:center]`.
    Pareto {
        /// Pareto parameter, 0 < h < 1 (fio's default 0.2).
        h: f64,
        /// As for zipf.
        center: Option<f64>,
    },
    /// `normal:dev[:center]`.
    Normal {
        /// Deviation in percent of the region, 0 <= dev < 100.
        dev_pct: f64,
        /// As for zipf (fio's default is the middle).
        center: Option<f64>,
    },
    /// `zoned:access/size:...`, per direction (read, write, trim); an empty
    /// list means uniform for that direction.
    Zoned([Vec<Zone>; 3]),
    /// `zoned_abs:access/bytes:...`, per direction.
    ZonedAbs([Vec<ZoneAbs>; 3]),
}

/// `rate_process=`: how a rate limit spaces IOs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    /// `linear`: evenly spaced.
    Linear,
    /// `poisson`: exponentially distributed gaps.
    Poisson,
}

/// `thinktime_blocks_type=`: what `thinktime_blocks` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThinktimeBlocksType {
    /// `complete`: completed IOs (fio's default).
    Complete,
    /// `issue`: issued IOs.
    Issue,
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

/// fio's `fallocate=` modes (fio's HOWTO, `fallocate=str`; filesetup.c
/// `fallocate_file`): how fio prepares a file before a job that only
/// writes it. A job that reads the file, or writes it with `overwrite=1`,
/// has it written in full afterwards whatever the mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fallocate {
    /// `none`, `0`: no preallocation.
    None,
    /// `native` (the default on Linux): fallocate(2) with mode 0 (blocks
    /// reserved, the size set); fio carries on without preallocation when
    /// the file system does not support it.
    #[default]
    Native,
    /// `posix`, `1`: posix_fallocate(3). glibc calls fallocate(2) and,
    /// only where the file system lacks it, writes a zero byte into every
    /// block.
    Posix,
    /// `keep`: fallocate(2) with `FALLOC_FL_KEEP_SIZE`: blocks reserved,
    /// the file's size left as it was (0 for fio's new file).
    Keep,
    /// `truncate`: ftruncate(2) to the size, no blocks reserved (a sparse
    /// file).
    Truncate,
}

/// fio's `unified_rw_reporting`: how directions are reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UnifiedRw {
    /// `none`, `0`: read, write and trim apart (the default).
    #[default]
    None,
    /// `mixed`, `1`: one `mixed` direction summing them, in their place.
    Mixed,
    /// `both`, `2`: read, write and trim, then `mixed`.
    Both,
}

/// fio's strided zones: `size` bytes of IO in a zone of `range` bytes,
/// then on to the next zone, `range + skip` further.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zones {
    /// `zonesize=`: bytes of IO per zone.
    pub size: u64,
    /// `zonerange=` (default `zonesize`): the zone's span.
    pub range: u64,
    /// `zoneskip=`: the gap to the next zone.
    pub skip: u64,
}

/// The log files a job asks for, as fio names the options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// `write_lat_log=`: the prefix of the `_lat`, `_clat` and `_slat` logs.
    pub lat: Option<String>,
    /// `write_bw_log=`: the prefix of the `_bw` log.
    pub bw: Option<String>,
    /// `write_iops_log=`: the prefix of the `_iops` log.
    pub iops: Option<String>,
    /// `write_iolog=`: the file the issued IOs go to (fio iolog version 3).
    pub iolog: Option<String>,
    /// `log_avg_msec=`: average over windows of this many ms (0: every IO).
    pub avg_msec: u64,
    /// `log_max_value=`: a window's maximum instead of its mean.
    pub max_value: bool,
    /// `log_offset=`: add each IO's offset.
    pub offset: bool,
    /// `per_job_logs=` (default on): one file per thread, `.N` numbered.
    pub per_job: bool,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            lat: None,
            bw: None,
            iops: None,
            iolog: None,
            avg_msec: 0,
            max_value: false,
            offset: false,
            per_job: true,
        }
    }
}

impl LogOptions {
    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.lat.is_some() || self.bw.is_some() || self.iops.is_some() || self.iolog.is_some()
    }
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
}

/// Parse a job file from disk. `include` directives are resolved relative
/// to the including file; `${VAR}` uses the process environment.
pub fn parse_job_file(path: &Path) -> Result<JobFile, FioError> {
    let env = |k: &str| std::env::var(k).ok();
    parse_job_file_with_env(path, &env)
}

/// [`parse_job_file`] with an explicit environment for `${VAR}`.
pub fn parse_job_file_with_env(path: &Path, env: EnvLookup<'_>) -> Result<JobFile, FioError> {
    let mut asm = Assembler::default();
    asm.add_file(path, &[], env)?;
    asm.finish(&path.display().to_string())
}

/// Parse job-file text; `source_name` is used in messages. `${VAR}` uses the
/// process environment; `include` is refused (there is no directory to
/// resolve it against).
pub fn parse_job_str(source_name: &str, text: &str) -> Result<JobFile, FioError> {
    let env = |k: &str| std::env::var(k).ok();
    parse_job_str_with_env(source_name, text, &env)
}

/// [`parse_job_str`] with an explicit environment for `${VAR}`.
pub fn parse_job_str_with_env(
    source_name: &str,
    text: &str,
    env: EnvLookup<'_>,
) -> Result<JobFile, FioError> {
    let sections = ini::parse_sections(source_name, text, None, env)?;
    let mut asm = Assembler::default();
    asm.add_sections(&sections, &[])?;
    asm.finish(source_name)
}

/// Turns sections into jobs, keeping the counters fio keeps across all
/// inputs (job index, reporting group).
#[derive(Default)]
pub(crate) struct Assembler {
    jobs: Vec<JobSpec>,
    group_id: u32,
    jobs_in_group: u32,
    last_globals: Vec<(String, String)>,
}

impl Assembler {
    /// Read and add a job file; `defaults` are global options in force
    /// before the file's own (fio's command-line options).
    pub(crate) fn add_file(
        &mut self,
        path: &Path,
        defaults: &[RawOption],
        env: EnvLookup<'_>,
    ) -> Result<(), FioError> {
        let text = std::fs::read(path).map_err(|source| FioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8_lossy(&text);
        let base = path.parent().map(|p| {
            if p.as_os_str().is_empty() {
                Path::new(".")
            } else {
                p
            }
        });
        let sections = ini::parse_sections(&path.display().to_string(), &text, base, env)?;
        self.add_sections(&sections, defaults)
    }

    /// Add sections in order. `[global]` sections update the globals that
    /// later sections see; every other section is a job.
    pub(crate) fn add_sections(
        &mut self,
        sections: &[Section],
        defaults: &[RawOption],
    ) -> Result<(), FioError> {
        // Entries are applied in the order written (globals, then the job's
        // own), exactly as fio copies the global options and then parses the
        // job's over them.
        let mut globals: Vec<options::Entry> = Vec::new();
        for raw in defaults {
            globals.push(options::Entry::new(raw.clone())?);
        }
        for section in sections {
            if section.name == "global" {
                for raw in &section.options {
                    globals.push(options::Entry::new(raw.clone())?);
                }
                continue;
            }
            let mut entries = globals.clone();
            for raw in &section.options {
                entries.push(options::Entry::new(raw.clone())?);
            }
            let mut job = options::build_job(&section.name, &section.location, &entries)?;
            job.job_index = u32::try_from(self.jobs.len()).unwrap_or(u32::MAX);
            if (job.stonewall || job.new_group) && self.jobs_in_group > 0 {
                self.group_id += 1;
                self.jobs_in_group = 0;
            }
            job.group_id = self.group_id;
            self.jobs_in_group += 1;
            self.jobs.push(job);
        }
        self.last_globals = options::as_written_merged(&globals);
        Ok(())
    }

    pub(crate) fn finish(self, source_name: &str) -> Result<JobFile, FioError> {
        if self.jobs.is_empty() {
            return Err(FioError::NoJobs {
                source_name: source_name.to_string(),
            });
        }
        Ok(JobFile {
            jobs: self.jobs,
            global_options: self.last_globals,
            frontend_options: Vec::new(),
        })
    }
}
