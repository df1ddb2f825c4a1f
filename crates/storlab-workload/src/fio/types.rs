//! The value types of a job's fields: IO pattern, block sizes, sizes,
//! zones, distributions, rate process, preallocation, logs.

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

    /// The mean size this spec produces (a range's midpoint, a split's
    /// weighted mean).
    pub fn mean_bytes(&self) -> f64 {
        match self {
            BlockSizeSpec::Fixed(b) => *b as f64,
            BlockSizeSpec::Range { min, max } => (*min + *max) as f64 / 2.0,
            BlockSizeSpec::Split(v) => {
                let w: u64 = v.iter().map(|e| u64::from(e.pct)).sum();
                if w == 0 {
                    return self.min_bytes() as f64;
                }
                v.iter()
                    .map(|e| e.bs as f64 * f64::from(e.pct))
                    .sum::<f64>()
                    / w as f64
            }
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
