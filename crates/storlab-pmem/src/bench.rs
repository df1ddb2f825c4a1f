//! `storlab pmem msync-bench`: the study's persistence-cost experiment.
//!
//! For each flush mode, sync policy and size: write one byte at a
//! pseudo-random offset inside the first SIZE bytes of a region, sync those
//! SIZE bytes, repeat; report the median and p99 of the operation (write +
//! sync) and the lines flushed per operation. The `disk` mode does the same
//! with `pwrite` of one byte and `fdatasync` on a file in `--disk-dir`, as
//! the study compared msync on NVMM with msync on a disk.
//!
//! The options are clap-independent: the binary defines one flag per entry
//! of [`MSYNC_BENCH_FLAGS`] (name, default and help text come from there)
//! and hands the values to [`MsyncBenchOptions::parse`].

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;
use serde_json::json;

use crate::caps::{capabilities, Capabilities};
use crate::cpu::{cpu_features, cpu_model, Clock};
use crate::error::PmemError;
use crate::model::{FlushMode, SyncMode};
use crate::region::{page_size, Backing, Region, RegionOptions, MAX_WBARRIER_NS};
use crate::track::{TrackingChoice, TrackingKind};

/// What one row measures: a flush mode on the emulated NVMM, or the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BenchMode {
    /// A region synced with this M_FLUSH.
    Flush(FlushMode),
    /// `pwrite` + `fdatasync` on a file in the disk directory.
    Disk,
}

impl BenchMode {
    /// The name used in flags, tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            BenchMode::Flush(m) => m.name(),
            BenchMode::Disk => "disk",
        }
    }
}

impl std::str::FromStr for BenchMode {
    type Err = PmemError;
    fn from_str(s: &str) -> Result<Self, PmemError> {
        if s == "disk" {
            return Ok(BenchMode::Disk);
        }
        s.parse::<FlushMode>().map(BenchMode::Flush).map_err(|_| {
            bad(
                "modes",
                s,
                "expected clflush, clflushopt, clwb, wof or disk",
            )
        })
    }
}

/// One flag of `storlab pmem msync-bench`, defined once for the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagSpec {
    /// Long name without dashes (`--NAME`), also the key for
    /// [`MsyncBenchOptions::parse`].
    pub name: &'static str,
    /// Placeholder for the value in help text.
    pub value_name: &'static str,
    /// The default, as the user would type it.
    pub default: &'static str,
    /// One-line help.
    pub help: &'static str,
}

/// The flags of `storlab pmem msync-bench` (besides `--output-format`,
/// which the binary owns).
pub const MSYNC_BENCH_FLAGS: &[FlagSpec] = &[
    FlagSpec {
        name: "modes",
        value_name: "LIST",
        default: "clflush,clflushopt,clwb,wof,disk",
        help:
            "modes to measure, comma separated: clflush, clflushopt, clwb, wof (flush modes; one \
               the CPU lacks is refused, or skipped when taken from the default) and disk \
               (write one byte + fdatasync on a file in --disk-dir)",
    },
    FlagSpec {
        name: "sync",
        value_name: "LIST",
        default: "default,spf",
        help: "sync policies, comma separated: default (flush every line of the region) and spf \
               (only lines of pages written since the last sync)",
    },
    FlagSpec {
        name: "sizes",
        value_name: "LIST",
        default: "64,4k,64k,1m,10m,100m",
        help: "region sizes to sync, comma separated; k, m, g are powers of 1024",
    },
    FlagSpec {
        name: "wbarrier-ns",
        value_name: "NS",
        default: "1000",
        help: "L_WBAR: write-barrier latency paid after each sync's fence, in ns (at most 1e9)",
    },
    FlagSpec {
        name: "reps",
        value_name: "N",
        default: "auto",
        help: "measured repetitions per row; auto: 2000 up to 64k, 500 up to 1m, 100 up to 10m, \
               30 above (disk rows at most 200)",
    },
    FlagSpec {
        name: "tracking",
        value_name: "MECH",
        default: "auto",
        help: "SPF dirty tracking: auto (uffd-wp-async, else mprotect), uffd, mprotect",
    },
    FlagSpec {
        name: "backing",
        value_name: "WHAT",
        default: "memfd",
        help: "what backs the emulated NVMM region: memfd, or file:PATH",
    },
    FlagSpec {
        name: "disk-dir",
        value_name: "DIR",
        default: "/var/tmp",
        help: "directory on the host's disk for the disk rows' file",
    },
];

/// Options of [`msync_bench`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MsyncBenchOptions {
    /// Rows to measure, in order.
    #[serde(serialize_with = "ser_modes")]
    pub modes: Vec<BenchMode>,
    /// Sync policies for the flush modes.
    pub syncs: Vec<SyncMode>,
    /// Sizes in bytes.
    pub sizes: Vec<u64>,
    /// L_WBAR in ns.
    pub wbarrier_ns: u64,
    /// Measured repetitions per row (`None`: by size, see the `reps` flag).
    pub reps: Option<u64>,
    /// SPF dirty tracking.
    pub tracking: TrackingChoice,
    /// What backs the region.
    pub backing: Backing,
    /// Directory of the disk rows' file.
    pub disk_dir: PathBuf,
}

fn ser_modes<S: serde::Serializer>(m: &[BenchMode], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(m.iter().map(|m| m.name()))
}

fn bad(flag: &str, value: &str, reason: &str) -> PmemError {
    PmemError::BadFlag {
        flag: flag.to_string(),
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

impl Default for MsyncBenchOptions {
    /// The documented defaults, minus flush modes this CPU lacks.
    fn default() -> Self {
        let f = cpu_features();
        let mut modes: Vec<BenchMode> = FlushMode::ALL
            .into_iter()
            .filter(|m| f.supports(*m))
            .map(BenchMode::Flush)
            .collect();
        modes.push(BenchMode::Disk);
        MsyncBenchOptions {
            modes,
            syncs: SyncMode::ALL.to_vec(),
            sizes: vec![64, 4 << 10, 64 << 10, 1 << 20, 10 << 20, 100 << 20],
            wbarrier_ns: 1000,
            reps: None,
            tracking: TrackingChoice::Auto,
            backing: Backing::Memfd,
            disk_dir: PathBuf::from("/var/tmp"),
        }
    }
}

/// Parse a size: a number with an optional `k`, `m`, `g` or `t` (powers of
/// 1024), optionally followed by `b` or `ib`, any case; more than zero.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    match parse_size::Config::new().with_binary().parse_size(s.trim()) {
        Ok(0) => Err("must be > 0".into()),
        Ok(v) => Ok(v),
        Err(e) => Err(format!(
            "{e} (expected a number with an optional k, m, g or t suffix)"
        )),
    }
}

fn list(flag: &str, value: &str) -> Result<Vec<String>, PmemError> {
    let items: Vec<String> = value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if items.is_empty() {
        return Err(bad(flag, value, "the list is empty"));
    }
    Ok(items)
}

fn dedup<T: PartialEq + Copy>(v: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

impl MsyncBenchOptions {
    /// Start from the defaults and apply `(flag, value)` pairs, flag names
    /// as in [`MSYNC_BENCH_FLAGS`] (e.g. `("modes", "clflush,wof")`,
    /// `("sizes", "64,4k,1m")`, `("wbarrier-ns", "1000")`). Unknown flags
    /// and malformed values are errors naming the flag.
    pub fn parse(flags: &[(&str, &str)]) -> Result<Self, PmemError> {
        let mut o = MsyncBenchOptions::default();
        for &(flag, value) in flags {
            o.set(flag, value)?;
        }
        Ok(o)
    }

    /// Apply one flag.
    pub fn set(&mut self, flag: &str, value: &str) -> Result<(), PmemError> {
        let flag = flag.trim_start_matches("--");
        match flag {
            "modes" => {
                self.modes = dedup(
                    list(flag, value)?
                        .iter()
                        .map(|s| s.parse::<BenchMode>())
                        .collect::<Result<_, _>>()?,
                );
            }
            "sync" => {
                self.syncs = dedup(
                    list(flag, value)?
                        .iter()
                        .map(|s| {
                            s.parse::<SyncMode>()
                                .map_err(|_| bad(flag, s, "expected default or spf"))
                        })
                        .collect::<Result<_, _>>()?,
                );
            }
            "sizes" => {
                self.sizes = dedup(
                    list(flag, value)?
                        .iter()
                        .map(|s| parse_size(s).map_err(|r| bad(flag, s, &r)))
                        .collect::<Result<_, _>>()?,
                );
            }
            "wbarrier-ns" => {
                let n: u64 = value
                    .trim()
                    .parse()
                    .map_err(|_| bad(flag, value, "expected a whole number of ns"))?;
                if n > MAX_WBARRIER_NS {
                    return Err(bad(flag, value, "at most 1000000000 (one second)"));
                }
                self.wbarrier_ns = n;
            }
            "reps" => {
                if value.trim() == "auto" {
                    self.reps = None;
                } else {
                    let n: u64 = value
                        .trim()
                        .parse()
                        .map_err(|_| bad(flag, value, "expected a number >= 1 or auto"))?;
                    if n == 0 || n > 10_000_000 {
                        return Err(bad(flag, value, "expected 1 to 10000000, or auto"));
                    }
                    self.reps = Some(n);
                }
            }
            "tracking" => {
                self.tracking = match value.trim() {
                    "auto" => TrackingChoice::Auto,
                    "uffd" | "uffd-wp-async" => TrackingChoice::Uffd,
                    "mprotect" => TrackingChoice::Mprotect,
                    _ => return Err(bad(flag, value, "expected auto, uffd or mprotect")),
                };
            }
            "backing" => {
                let v = value.trim();
                self.backing = if v == "memfd" {
                    Backing::Memfd
                } else if let Some(p) = v.strip_prefix("file:").filter(|p| !p.is_empty()) {
                    Backing::File(PathBuf::from(p))
                } else {
                    return Err(bad(flag, value, "expected memfd or file:PATH"));
                };
            }
            "disk-dir" => {
                if value.trim().is_empty() {
                    return Err(bad(flag, value, "expected a directory"));
                }
                self.disk_dir = PathBuf::from(value.trim());
            }
            other => return Err(PmemError::UnknownFlag(other.to_string())),
        }
        Ok(())
    }

    /// Measured repetitions for a row of `size` bytes.
    pub fn reps_for(&self, mode: BenchMode, size: u64) -> u64 {
        if let Some(r) = self.reps {
            return r;
        }
        let r = match size {
            0..=65_536 => 2000,
            65_537..=1_048_576 => 500,
            1_048_577..=10_485_760 => 100,
            _ => 30,
        };
        if mode == BenchMode::Disk {
            r.min(200)
        } else {
            r
        }
    }
}

/// One row of the result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MsyncBenchRow {
    /// Flush mode or `disk`.
    pub mode: String,
    /// `default`, `spf`, or `fdatasync` for disk rows.
    pub sync: String,
    /// Bytes synced per operation.
    pub size_bytes: u64,
    /// Measured repetitions.
    pub reps: u64,
    /// Median of write + sync, in ns.
    pub median_ns: u64,
    /// 99th percentile (nearest rank) of write + sync, in ns.
    pub p99_ns: u64,
    /// Median of the sync call alone, in ns.
    pub sync_median_ns: u64,
    /// Cache lines flushed per operation (null for disk rows).
    pub lines_flushed: Option<u64>,
    /// Pages SPF found dirty per operation (null unless SPF).
    pub dirty_pages: Option<u64>,
}

/// The result of [`msync_bench`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MsyncBenchReport {
    /// CPU brand string.
    pub cpu_model: String,
    /// Dirty tracking the region used.
    pub dirty_tracking: TrackingKind,
    /// Why `auto` fell back, if it did.
    pub dirty_tracking_note: Option<String>,
    /// L_WBAR in ns.
    pub wbarrier_ns: u64,
    /// What backed the region.
    pub backing: String,
    /// The disk rows' file (removed afterwards).
    pub disk_file: Option<String>,
    /// The resolved options.
    pub config: MsyncBenchOptions,
    /// Host capabilities, including what is not emulated.
    pub capabilities: Capabilities,
    /// Wall-clock duration of the run, in seconds.
    pub elapsed_s: f64,
    /// One row per (mode, sync, size), in the order measured.
    pub results: Vec<MsyncBenchRow>,
}

fn human_size(b: u64) -> String {
    for (unit, sh) in [("G", 30), ("M", 20), ("K", 10)] {
        if b >= 1 << sh && b & ((1 << sh) - 1) == 0 {
            return format!("{}{unit}", b >> sh);
        }
    }
    b.to_string()
}

impl MsyncBenchReport {
    /// The report as a table: a header naming the CPU, tracking, L_WBAR and
    /// backing, then one line per row, times in µs.
    pub fn write_table<W: Write + ?Sized>(&self, w: &mut W) -> std::io::Result<()> {
        writeln!(
            w,
            "msync-bench on {}: dirty tracking {}, L_WBAR {} ns, region backing {}",
            self.cpu_model, self.dirty_tracking, self.wbarrier_ns, self.backing
        )?;
        if let Some(n) = &self.dirty_tracking_note {
            writeln!(w, "  note: {n}")?;
        }
        if let Some(d) = &self.disk_file {
            writeln!(w, "  disk rows: pwrite 1 byte + fdatasync on {d}")?;
        }
        writeln!(
            w,
            "  op = write one byte, then sync the first SIZE bytes; times in microseconds"
        )?;
        writeln!(
            w,
            "{:<11} {:<10} {:>6} {:>6} {:>11} {:>11} {:>11} {:>9} {:>8}",
            "mode",
            "sync",
            "size",
            "reps",
            "median_us",
            "p99_us",
            "sync_med_us",
            "lines/op",
            "dirty/op"
        )?;
        for r in &self.results {
            let opt = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
            writeln!(
                w,
                "{:<11} {:<10} {:>6} {:>6} {:>11.2} {:>11.2} {:>11.2} {:>9} {:>8}",
                r.mode,
                r.sync,
                human_size(r.size_bytes),
                r.reps,
                r.median_ns as f64 / 1e3,
                r.p99_ns as f64 / 1e3,
                r.sync_median_ns as f64 / 1e3,
                opt(r.lines_flushed),
                opt(r.dirty_pages),
            )?;
        }
        writeln!(w, "not emulated here:")?;
        for n in &self.capabilities.not_emulated {
            writeln!(w, "  - {n}")?;
        }
        writeln!(w, "elapsed: {:.1} s", self.elapsed_s)
    }

    /// The report as JSON: `cpu_model`, `dirty_tracking`, `wbarrier_ns`,
    /// `backing`, `config`, `capabilities`, `elapsed_s`, and `results`, an
    /// array of rows with `mode`, `sync`, `size_bytes`, `reps`, `median_ns`,
    /// `p99_ns`, `sync_median_ns`, `lines_flushed`, `dirty_pages`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_else(|e| json!({ "error": e.to_string() }))
    }
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A deterministic pseudo-random offset in `[0, size)` for repetition `i`.
fn offset_for(i: u64, size: u64) -> u64 {
    let mut x = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) % size
}

/// Run the experiment (see the module docs).
///
/// Errors: empty lists, a flush mode the CPU lacks, a size above physical
/// memory, SPF without a working tracking mechanism, and IO errors on the
/// disk file (with its path).
pub fn msync_bench(opts: &MsyncBenchOptions) -> Result<MsyncBenchReport, PmemError> {
    let started = Instant::now();
    if opts.modes.is_empty() || opts.sizes.is_empty() {
        return Err(PmemError::InvalidArgument(
            "msync-bench needs at least one mode and one size".into(),
        ));
    }
    let flush_modes: Vec<FlushMode> = opts
        .modes
        .iter()
        .filter_map(|m| match m {
            BenchMode::Flush(f) => Some(*f),
            BenchMode::Disk => None,
        })
        .collect();
    if !flush_modes.is_empty() && opts.syncs.is_empty() {
        return Err(PmemError::InvalidArgument(
            "msync-bench needs at least one sync policy".into(),
        ));
    }
    for m in &flush_modes {
        cpu_features().check(*m)?;
    }
    if opts.wbarrier_ns > MAX_WBARRIER_NS {
        return Err(bad(
            "wbarrier-ns",
            &opts.wbarrier_ns.to_string(),
            "at most 1000000000",
        ));
    }
    let max_size = *opts.sizes.iter().max().unwrap_or(&1);
    let page = page_size() as u64;
    let region_size = max_size.div_ceil(page) * page;

    let mut results = Vec::new();
    let mut tracking = TrackingKind::Off;
    let mut note = None;
    if !flush_modes.is_empty() {
        let ro = RegionOptions {
            size: region_size,
            backing: opts.backing.clone(),
            flush_mode: flush_modes[0],
            sync_mode: SyncMode::Default,
            wbarrier_ns: opts.wbarrier_ns,
            tracking: opts.tracking,
            populate: true,
        };
        let mut region = Region::map(&ro)?;
        tracking = region.tracking();
        note = region.tracking_note().map(str::to_string);
        for &mode in &flush_modes {
            for &sync in &opts.syncs {
                for &size in &opts.sizes {
                    let reps = opts.reps_for(BenchMode::Flush(mode), size);
                    results.push(run_region_row(&mut region, mode, sync, size, reps)?);
                }
            }
        }
    }
    let mut disk_file = None;
    if opts.modes.contains(&BenchMode::Disk) {
        let path = opts.disk_dir.join(format!(
            "storlab-pmem-msync-bench-{}.dat",
            std::process::id()
        ));
        disk_file = Some(path.display().to_string());
        let disk = DiskFile::create(path, max_size)?;
        for &size in &opts.sizes {
            let reps = opts.reps_for(BenchMode::Disk, size);
            results.push(disk.run_row(size, reps)?);
        }
    }
    Ok(MsyncBenchReport {
        cpu_model: cpu_model().to_string(),
        dirty_tracking: tracking,
        dirty_tracking_note: note,
        wbarrier_ns: opts.wbarrier_ns,
        backing: opts.backing.describe(),
        disk_file,
        config: opts.clone(),
        capabilities: capabilities(),
        elapsed_s: started.elapsed().as_secs_f64(),
        results,
    })
}

fn run_region_row(
    region: &mut Region,
    mode: FlushMode,
    sync: SyncMode,
    size: u64,
    reps: u64,
) -> Result<MsyncBenchRow, PmemError> {
    region.set_flush_mode(mode)?;
    // Start every row from a clean dirty state: an SPF sync of the whole
    // region takes (and flushes) whatever earlier rows wrote.
    if region.tracking() != TrackingKind::Off {
        region.set_sync_mode(SyncMode::Spf)?;
        let len = region.len();
        region.sync(0, len)?;
    }
    region.set_sync_mode(sync)?;
    let clock = Clock::get();
    let warm = (reps / 10).clamp(2, 50);
    let mut ops = Vec::with_capacity(reps as usize);
    let mut syncs = Vec::with_capacity(reps as usize);
    for i in 0..warm + reps {
        if i == warm {
            region.reset_counters();
        }
        let off = offset_for(i, size) as usize;
        let t0 = clock.now();
        // SAFETY: `off < size <= region.len()`; a volatile store so the
        // write is not elided or merged across repetitions.
        unsafe { std::ptr::write_volatile(region.as_mut_ptr().add(off), i as u8) };
        let t1 = clock.now();
        region.sync(0, size)?;
        let t2 = clock.now();
        if i >= warm {
            ops.push(clock.ticks_to_ns(t2.wrapping_sub(t0)));
            syncs.push(clock.ticks_to_ns(t2.wrapping_sub(t1)));
        }
    }
    ops.sort_unstable();
    syncs.sort_unstable();
    let c = region.counters();
    Ok(MsyncBenchRow {
        mode: mode.name().to_string(),
        sync: sync.name().to_string(),
        size_bytes: size,
        reps,
        median_ns: percentile(&ops, 0.5),
        p99_ns: percentile(&ops, 0.99),
        sync_median_ns: percentile(&syncs, 0.5),
        lines_flushed: Some((c.lines_flushed + reps / 2) / reps),
        dirty_pages: (sync == SyncMode::Spf).then_some((c.pages_dirty + reps / 2) / reps),
    })
}

/// The disk rows' file: zero-filled to its full size and fsynced before
/// measuring (so later one-byte writes overwrite allocated blocks), removed
/// on drop.
struct DiskFile {
    path: PathBuf,
    fd: std::fs::File,
}

impl DiskFile {
    fn create(path: PathBuf, size: u64) -> Result<Self, PmemError> {
        let io = |call: &'static str, path: &PathBuf, e: std::io::Error| PmemError::Sys {
            call,
            path: Some(path.clone()),
            source: e,
        };
        let mut fd = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| io("open", &path, e))?;
        let d = DiskFile {
            path,
            fd: fd.try_clone().map_err(|e| io("dup", &PathBuf::new(), e))?,
        };
        let chunk = vec![0u8; 1 << 20];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            fd.write_all(&chunk[..n])
                .map_err(|e| io("write", &d.path, e))?;
            left -= n as u64;
        }
        fd.sync_all().map_err(|e| io("fsync", &d.path, e))?;
        Ok(d)
    }

    fn run_row(&self, size: u64, reps: u64) -> Result<MsyncBenchRow, PmemError> {
        use std::os::unix::fs::FileExt;
        let clock = Clock::get();
        let warm = (reps / 10).clamp(2, 10);
        let mut ops = Vec::with_capacity(reps as usize);
        let mut syncs = Vec::with_capacity(reps as usize);
        for i in 0..warm + reps {
            let off = offset_for(i, size);
            let t0 = clock.now();
            self.fd
                .write_all_at(&[i as u8], off)
                .map_err(|e| PmemError::Sys {
                    call: "pwrite",
                    path: Some(self.path.clone()),
                    source: e,
                })?;
            let t1 = clock.now();
            self.fd.sync_data().map_err(|e| PmemError::Sys {
                call: "fdatasync",
                path: Some(self.path.clone()),
                source: e,
            })?;
            let t2 = clock.now();
            if i >= warm {
                ops.push(clock.ticks_to_ns(t2.wrapping_sub(t0)));
                syncs.push(clock.ticks_to_ns(t2.wrapping_sub(t1)));
            }
        }
        ops.sort_unstable();
        syncs.sort_unstable();
        Ok(MsyncBenchRow {
            mode: "disk".into(),
            sync: "fdatasync".into(),
            size_bytes: size,
            reps,
            median_ns: percentile(&ops, 0.5),
            p99_ns: percentile(&ops, 0.99),
            sync_median_ns: percentile(&syncs, 0.5),
            lines_flushed: None,
            dirty_pages: None,
        })
    }
}

impl Drop for DiskFile {
    fn drop(&mut self) {
        if let Ok(c) = CString::new(self.path.as_os_str().as_bytes()) {
            // SAFETY: `c` is NUL-terminated; removing our own file.
            unsafe { libc::unlink(c.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        let o = MsyncBenchOptions::parse(&[("sizes", "64,4k,64k,1m,10m,100m")]).unwrap();
        assert_eq!(o.sizes, vec![64, 4096, 65536, 1 << 20, 10 << 20, 100 << 20]);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert!(parse_size("0").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("99999999999999999999g").is_err());
    }

    #[test]
    fn percentile_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&[7], 0.99), 7);
    }

    #[test]
    fn offsets_stay_inside() {
        for size in [1, 64, 4096, 100 << 20] {
            for i in 0..1000 {
                assert!(offset_for(i, size) < size);
            }
        }
    }

    #[test]
    fn flags_table_matches_parse() {
        for f in MSYNC_BENCH_FLAGS {
            let mut o = MsyncBenchOptions::default();
            o.set(f.name, f.default).unwrap();
        }
    }
}
