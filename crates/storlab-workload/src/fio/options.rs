//! The option table and the conversion of one job's options into a
//! [`JobSpec`].

use super::error::{FioError, Location};
use super::ini::RawOption;
use super::value::{
    parse_bool, parse_float, parse_int_in, parse_size, parse_size_or_percent, parse_time_ns,
    split_per_dir,
};
use super::{
    BlockSizeSpec, BsSplitEntry, Distribution, JobSpec, RateProcess, RwMode, RwSequencer, SizeSpec,
    ThinktimeBlocksType, UnifiedRw, Zone, ZoneAbs, Zones, FIO_DEFAULT_SEED,
};

/// Whether storlab acts on an option or only records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionEffect {
    /// The generator or the simulator uses it.
    Simulated,
    /// Accepted, validated and recorded in [`JobSpec::options`] (and for some
    /// in a typed field) so fio job files run unchanged, but it does not
    /// change a simulation (`thread`, `invalidate`, logging...).
    Recorded,
}

/// How an option's value is written, which decides generic validation and
/// whether it may appear bare (`time_based`) or needs a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// fio's `str_set`: bare means on; a value must be 0 or 1.
    Flag,
    /// fio's `bool`: 0 or 1, value required.
    Bool,
    /// A non-negative integer, size suffixes allowed.
    Int,
    /// A size or a per-direction list of sizes.
    Size,
    /// A time.
    Time,
    /// Free text or option-specific syntax.
    Str,
}

/// One row of the option table.
pub(crate) struct OptDef {
    /// Canonical fio name.
    pub name: &'static str,
    /// Other spellings fio accepts for it.
    pub aliases: &'static [&'static str],
    /// Value syntax.
    pub kind: Kind,
    /// Simulated or recorded.
    pub effect: OptionEffect,
}

const fn sim(name: &'static str, aliases: &'static [&'static str], kind: Kind) -> OptDef {
    OptDef {
        name,
        aliases,
        kind,
        effect: OptionEffect::Simulated,
    }
}

const fn rec(name: &'static str, aliases: &'static [&'static str], kind: Kind) -> OptDef {
    OptDef {
        name,
        aliases,
        kind,
        effect: OptionEffect::Recorded,
    }
}

/// Every option storlab accepts. Names, aliases and value kinds follow fio
/// 3.33 (`fio --debug=parse` reports each option's type).
static OPTIONS: &[OptDef] = &[
    sim("name", &[], Kind::Str),
    sim("description", &[], Kind::Str),
    sim("rw", &["readwrite"], Kind::Str),
    sim("rw_sequencer", &[], Kind::Str),
    sim("rwmixread", &[], Kind::Int),
    sim("rwmixwrite", &[], Kind::Int),
    sim("bs", &["blocksize"], Kind::Size),
    sim("bsrange", &["blocksize_range"], Kind::Size),
    sim("bssplit", &[], Kind::Str),
    sim("blockalign", &["ba"], Kind::Size),
    sim("bs_unaligned", &["blocksize_unaligned"], Kind::Flag),
    sim("iodepth", &[], Kind::Int),
    sim("numjobs", &[], Kind::Int),
    sim("size", &[], Kind::Size),
    sim("io_size", &["io_limit"], Kind::Size),
    sim("offset", &[], Kind::Size),
    sim("offset_increment", &[], Kind::Size),
    sim("offset_align", &[], Kind::Size),
    sim("number_ios", &[], Kind::Int),
    sim("loops", &[], Kind::Int),
    sim("runtime", &["timeout"], Kind::Time),
    sim("time_based", &[], Kind::Flag),
    sim("ramp_time", &[], Kind::Time),
    sim("startdelay", &[], Kind::Time),
    sim("random_distribution", &[], Kind::Str),
    sim("percentage_random", &[], Kind::Int),
    sim("norandommap", &[], Kind::Flag),
    sim("randrepeat", &[], Kind::Bool),
    sim("randseed", &[], Kind::Int),
    sim("fsync", &[], Kind::Int),
    sim("fdatasync", &[], Kind::Int),
    sim("end_fsync", &[], Kind::Bool),
    sim("thinktime", &[], Kind::Time),
    sim("thinktime_spin", &[], Kind::Time),
    sim("thinktime_blocks", &[], Kind::Int),
    sim("thinktime_blocks_type", &[], Kind::Str),
    sim("rate", &[], Kind::Size),
    sim("rate_iops", &[], Kind::Int),
    sim("rate_process", &[], Kind::Str),
    sim("stonewall", &["wait_for_previous"], Kind::Flag),
    sim("new_group", &[], Kind::Flag),
    sim("group_reporting", &[], Kind::Flag),
    sim("kb_base", &[], Kind::Int),
    sim("percentile_list", &[], Kind::Str),
    sim("direct", &[], Kind::Bool),
    sim("buffered", &[], Kind::Bool),
    sim("filename", &[], Kind::Str),
    sim("nrfiles", &["nr_files"], Kind::Int),
    // the engine decides the queue depth a job reaches (a sync engine
    // such as psync keeps one IO in flight whatever iodepth says)
    sim("ioengine", &[], Kind::Str),
    rec("thread", &[], Kind::Flag),
    rec("invalidate", &[], Kind::Bool),
    rec("random_generator", &[], Kind::Str),
    rec("allrandrepeat", &[], Kind::Bool),
    rec("fsync_on_close", &[], Kind::Bool),
    rec("iodepth_batch", &["iodepth_batch_submit"], Kind::Int),
    rec(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        Kind::Int,
    ),
    rec("iodepth_batch_complete_max", &[], Kind::Int),
    rec("iodepth_low", &[], Kind::Int),
    rec("exitall", &[], Kind::Flag),
    rec("exitall_on_error", &[], Kind::Flag),
    rec("refill_buffers", &[], Kind::Flag),
    rec("zero_buffers", &[], Kind::Flag),
    rec("scramble_buffers", &[], Kind::Bool),
    rec("buffer_compress_percentage", &[], Kind::Int),
    rec("buffer_compress_chunk", &[], Kind::Int),
    rec("dedupe_percentage", &[], Kind::Int),
    sim("overwrite", &[], Kind::Bool),
    rec("create_on_open", &[], Kind::Bool),
    rec("unlink", &[], Kind::Bool),
    rec("allow_file_create", &[], Kind::Bool),
    rec("allow_mounted_write", &[], Kind::Bool),
    sim("fallocate", &[], Kind::Str),
    rec("fadvise_hint", &[], Kind::Str),
    sim("clat_percentiles", &[], Kind::Bool),
    sim("lat_percentiles", &[], Kind::Bool),
    sim("slat_percentiles", &[], Kind::Bool),
    rec("gtod_reduce", &[], Kind::Bool),
    rec("disable_lat", &[], Kind::Bool),
    rec("disable_clat", &[], Kind::Bool),
    rec("disable_slat", &[], Kind::Bool),
    rec("disable_bw_measurement", &["disable_bw"], Kind::Bool),
    rec("stats", &[], Kind::Bool),
    rec("clocksource", &[], Kind::Str),
    rec("cpus_allowed", &[], Kind::Str),
    rec("cpus_allowed_policy", &[], Kind::Str),
    rec("cpumask", &[], Kind::Int),
    rec("nice", &[], Kind::Str),
    rec("prio", &[], Kind::Int),
    rec("prioclass", &[], Kind::Int),
    rec("mem", &["iomem"], Kind::Str),
    rec("iomem_align", &["mem_align"], Kind::Int),
    // fio's log files, written from the simulated completions
    sim("log_avg_msec", &[], Kind::Int),
    sim("log_max_value", &[], Kind::Bool),
    sim("write_bw_log", &[], Kind::Str),
    sim("write_lat_log", &[], Kind::Str),
    sim("write_iops_log", &[], Kind::Str),
    sim("write_iolog", &[], Kind::Str),
    sim("read_iolog", &[], Kind::Str),
    // storlab's own: an application model runs as the job
    sim("app", &[], Kind::Str),
    sim("app_set", &[], Kind::Str),
    sim("sync", &[], Kind::Str),
    sim("zonemode", &[], Kind::Str),
    sim("unified_rw_reporting", &[], Kind::Str),
    sim("max_latency", &[], Kind::Time),
    // engine options (fio knows them only with these engines, see
    // ENGINE_OPTIONS): polled completions are simulated; the others save
    // host CPU work storlab's host model does not itemise
    sim("hipri", &[], Kind::Flag),
    rec("fixedbufs", &[], Kind::Flag),
    rec("registerfiles", &[], Kind::Flag),
    rec("sqthread_poll", &[], Kind::Flag),
    rec("force_async", &[], Kind::Int),
    rec("nowait", &[], Kind::Flag),
    sim("zonesize", &[], Kind::Size),
    sim("zonerange", &[], Kind::Size),
    sim("zoneskip", &[], Kind::Size),
    sim("replay_no_stall", &[], Kind::Bool),
    sim("per_job_logs", &[], Kind::Bool),
    sim("log_offset", &[], Kind::Bool),
    rec("write_hist_log", &[], Kind::Str),
    rec("unit_base", &[], Kind::Int),
    rec("log_hist_msec", &[], Kind::Int),
    // output and error handling a simulation has no use for (no disk
    // utilisation section, no IO errors, no data content, submission by
    // helper threads costs no simulated time)
    rec("disk_util", &[], Kind::Bool),
    rec("create_serialize", &[], Kind::Bool),
    rec("continue_on_error", &[], Kind::Str),
    rec("ignore_error", &[], Kind::Str),
    rec("buffer_pattern", &[], Kind::Str),
    rec("io_submit_mode", &[], Kind::Str),
    rec("significant_figures", &[], Kind::Int),
    // where fio would put its files: the simulated device has none
    rec("directory", &[], Kind::Str),
    rec("filename_format", &[], Kind::Str),
    rec("unique_filename", &[], Kind::Bool),
    rec("lockfile", &[], Kind::Str),
    rec("numa_cpu_nodes", &[], Kind::Str),
    rec("numa_mem_policy", &[], Kind::Str),
];

/// Look an option up by any of its spellings (case-sensitive, as fio).
pub(crate) fn lookup(key: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|d| d.name == key || d.aliases.contains(&key))
}

/// The canonical name of an option or alias (`blocksize` -> `bs`).
pub fn canonical_option(key: &str) -> Option<&'static str> {
    lookup(key).map(|d| d.name)
}

/// Every option name storlab accepts (canonical names and aliases), sorted,
/// with what it does in a simulation.
pub fn supported_options() -> Vec<(&'static str, OptionEffect)> {
    let mut v: Vec<(&'static str, OptionEffect)> = OPTIONS
        .iter()
        .flat_map(|d| {
            std::iter::once((d.name, d.effect)).chain(d.aliases.iter().map(|a| (*a, d.effect)))
        })
        .collect();
    v.sort_unstable_by_key(|(n, _)| *n);
    v
}

/// The names of the supported options with `effect`, sorted, joined by
/// commas (the error for an unknown option, `storlab sim --help`).
pub fn option_names(effect: OptionEffect) -> String {
    supported_options()
        .into_iter()
        .filter(|(_, e)| *e == effect)
        .map(|(n, _)| n)
        .collect::<Vec<_>>()
        .join(", ")
}

fn supported_list() -> String {
    format!(
        "{} (accepted and recorded, without effect on a simulation: {})",
        option_names(OptionEffect::Simulated),
        option_names(OptionEffect::Recorded)
    )
}

/// The closest known option name, if it is close enough to be a typo.
fn suggestion(key: &str) -> Option<&'static str> {
    // Option names are short; a long key is not a typo of one.
    if key.len() > 40 {
        return None;
    }
    let key_lower = key.to_ascii_lowercase();
    supported_options()
        .into_iter()
        .map(|(n, _)| (edit_distance(&key_lower, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A raw option with its table row.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub def: &'static OptDef,
    pub raw: RawOption,
}

impl std::fmt::Debug for OptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Entry {
    /// Look the option up; an unknown one is an error listing what exists.
    pub(crate) fn new(raw: RawOption) -> Result<Entry, FioError> {
        match lookup(&raw.key) {
            Some(def) => {
                if raw.value.is_none() && def.kind != Kind::Flag {
                    return Err(FioError::InvalidValue {
                        location: raw.location.clone(),
                        option: raw.key.clone(),
                        value: String::new(),
                        reason: "this option needs a value (`option=value`)".into(),
                    });
                }
                Ok(Entry { def, raw })
            }
            None => Err(FioError::UnsupportedOption {
                location: raw.location.clone(),
                suggestion: suggestion(&raw.key)
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default(),
                option: raw.key,
                supported: supported_list(),
            }),
        }
    }

    /// `(key, value)` as written; a bare flag has an empty value.
    pub(crate) fn as_written(&self) -> (String, String) {
        (
            self.raw.key.clone(),
            self.raw.value.clone().unwrap_or_default(),
        )
    }

    fn value(&self) -> &str {
        self.raw.value.as_deref().unwrap_or("")
    }

    fn invalid(&self, reason: impl Into<String>) -> FioError {
        FioError::InvalidValue {
            location: self.raw.location.clone(),
            option: self.raw.key.clone(),
            value: self.value().to_string(),
            reason: reason.into(),
        }
    }

    fn flag(&self) -> Result<bool, FioError> {
        match &self.raw.value {
            None => Ok(true),
            Some(v) => parse_bool(v).map_err(|r| self.invalid(r)),
        }
    }
}

/// The options as fio would list them for a job: in order, a later setting
/// of the same option replacing the earlier one in place (in the later
/// spelling).
pub(crate) fn as_written_merged(entries: &[Entry]) -> Vec<(String, String)> {
    let mut out: Vec<(&'static str, (String, String))> = Vec::new();
    for e in entries {
        let pair = e.as_written();
        match out.iter_mut().find(|(n, _)| *n == e.def.name) {
            Some(slot) => slot.1 = pair,
            None => out.push((e.def.name, pair)),
        }
    }
    out.into_iter().map(|(_, p)| p).collect()
}

/// Per-direction block-size settings before precedence is applied.
/// Options fio knows only with some IO engines, and those engines.
const ENGINE_OPTIONS: &[(&str, &[&str])] = &[
    ("hipri", &["io_uring", "io_uring_cmd", "pvsync2"]),
    ("fixedbufs", &["io_uring", "io_uring_cmd"]),
    ("registerfiles", &["io_uring", "io_uring_cmd"]),
    ("sqthread_poll", &["io_uring", "io_uring_cmd"]),
    ("force_async", &["io_uring", "io_uring_cmd"]),
    ("nowait", &["io_uring", "io_uring_cmd", "libaio"]),
];

#[derive(Default)]
struct SizeSettings {
    bs: [Option<u64>; 3],
    bsrange: [Option<(u64, u64)>; 3],
    bssplit: [Option<Vec<BsSplitEntry>>; 3],
    zone_strided: bool,
    zone_size: Option<u64>,
    zone_range: Option<u64>,
    zone_skip: u64,
}

/// Build a job from its options in application order (globals first).
pub(crate) fn build_job(
    section_name: &str,
    location: &Location,
    entries: &[Entry],
) -> Result<JobSpec, FioError> {
    let mut job = JobSpec::with_defaults(section_name);
    job.location = location.clone();
    // fio applies kb_base before the values that depend on it, wherever it
    // is written.
    for e in entries.iter().filter(|e| e.def.name == "kb_base") {
        job.kb_base = match e.value().trim() {
            "1024" => 1024,
            "1000" => 1000,
            _ => return Err(e.invalid("kb_base must be 1000 or 1024")),
        };
    }
    let mut sizes = SizeSettings::default();
    for e in entries {
        apply(&mut job, &mut sizes, e)?;
    }
    let engine = job.ioengine.as_deref().unwrap_or(super::DEFAULT_ENGINE);
    for e in entries {
        if let Some((_, engines)) = ENGINE_OPTIONS.iter().find(|(n, _)| *n == e.def.name) {
            if !engines.contains(&engine) {
                return Err(FioError::InvalidJob {
                    location: e.raw.location.clone(),
                    job: job.name.clone(),
                    reason: format!(
                        "`{}` is an option of the {} engines; fio does not know it with ioengine={engine}",
                        e.raw.key,
                        engines.join(", ")
                    ),
                });
            }
        }
    }
    finish(&mut job, sizes)?;
    job.options = as_written_merged(entries);
    Ok(job)
}

fn apply(job: &mut JobSpec, sizes: &mut SizeSettings, e: &Entry) -> Result<(), FioError> {
    let kb = job.kb_base;
    let v = e.value();
    let err = |r: String| e.invalid(r);
    match e.def.name {
        "name" => {
            if v.is_empty() {
                return Err(e.invalid("the job name may not be empty"));
            }
            job.name = v.to_string();
        }
        "description" => job.description = Some(v.to_string()),
        "rw" => parse_rw(job, e)?,
        "rw_sequencer" => {
            job.rw_sequencer = match v {
                "sequential" => RwSequencer::Sequential,
                "identical" => RwSequencer::Identical,
                _ => return Err(e.invalid("expected sequential or identical")),
            }
        }
        "rwmixread" => job.rwmix_read_pct = parse_int_in(v, kb, 0, 100).map_err(err)? as u8,
        "rwmixwrite" => job.rwmix_read_pct = 100 - parse_int_in(v, kb, 0, 100).map_err(err)? as u8,
        "bs" => {
            for (d, part) in split_per_dir(v).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    sizes.bs[d] = Some(positive_size(e, p, kb)?);
                }
            }
        }
        "bsrange" => {
            // fio also accepts `/` between the read and write ranges.
            let text = if v.contains(',') {
                v.to_string()
            } else {
                v.replace('/', ",")
            };
            for (d, part) in split_per_dir(&text).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    sizes.bsrange[d] = Some(parse_range(e, p, kb)?);
                }
            }
        }
        "bssplit" => {
            for (d, part) in split_per_dir(v).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    sizes.bssplit[d] = Some(parse_bssplit(e, p, kb)?);
                }
            }
        }
        "blockalign" => {
            for (d, part) in split_per_dir(v).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    job.blockalign_bytes[d] = Some(positive_size(e, p, kb)?);
                }
            }
        }
        "bs_unaligned" => job.bs_unaligned = e.flag()?,
        "iodepth" => job.iodepth = parse_int_in(v, kb, 1, 65_536).map_err(err)? as u32,
        "numjobs" => job.numjobs = parse_int_in(v, kb, 1, 65_536).map_err(err)? as u32,
        "size" => job.size = nonzero_size(parse_size_or_percent(v, kb).map_err(err)?),
        "io_size" => job.io_size = nonzero_size(parse_size_or_percent(v, kb).map_err(err)?),
        "offset" => job.offset = parse_size_or_percent(v, kb).map_err(err)?,
        "offset_increment" => job.offset_increment = parse_size_or_percent(v, kb).map_err(err)?,
        "offset_align" => job.offset_align_bytes = parse_size(v, kb).map_err(err)?,
        "number_ios" => {
            let n = parse_size(v, kb).map_err(err)?;
            job.number_ios = (n > 0).then_some(n);
        }
        "loops" => job.loops = parse_int_in(v, kb, 1, u64::from(u32::MAX)).map_err(err)? as u32,
        "runtime" => job.runtime_ns = nonzero(parse_time_ns(v, 1_000_000).map_err(err)?),
        "time_based" => job.time_based = e.flag()?,
        "ramp_time" => job.ramp_time_ns = nonzero(parse_time_ns(v, 1_000_000).map_err(err)?),
        "startdelay" => job.startdelay_ns = parse_time_ns(v, 1_000_000).map_err(err)?,
        "random_distribution" => job.random_distribution = parse_distribution(e, kb)?,
        "percentage_random" => {
            for (d, part) in split_per_dir(v).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    job.percentage_random[d] = parse_int_in(p, kb, 0, 100).map_err(err)? as u8;
                }
            }
        }
        "norandommap" => job.norandommap = e.flag()?,
        "randrepeat" => job.randrepeat = parse_bool(v).map_err(err)?,
        "randseed" => job.randseed = Some(parse_size(v, kb).map_err(err)?),
        "fsync" => job.fsync_every = parse_u32(e, kb)?,
        "fdatasync" => job.fdatasync_every = parse_u32(e, kb)?,
        "end_fsync" => job.end_fsync = parse_bool(v).map_err(err)?,
        "thinktime" => job.thinktime_ns = parse_time_ns(v, 1).map_err(err)?,
        "thinktime_spin" => job.thinktime_spin_ns = parse_time_ns(v, 1).map_err(err)?,
        "thinktime_blocks" => {
            job.thinktime_blocks = parse_int_in(v, kb, 1, u64::from(u32::MAX)).map_err(err)? as u32
        }
        "thinktime_blocks_type" => {
            job.thinktime_blocks_type = match v {
                "complete" => ThinktimeBlocksType::Complete,
                "issue" => ThinktimeBlocksType::Issue,
                _ => return Err(e.invalid("expected complete or issue")),
            }
        }
        "rate" => {
            for (d, part) in split_per_dir(v).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    job.rate_bytes_per_s[d] = nonzero(parse_size(p, kb).map_err(err)?);
                }
            }
        }
        "rate_iops" => {
            for (d, part) in split_per_dir(v).map_err(err)?.iter().enumerate() {
                if let Some(p) = part {
                    job.rate_iops[d] = nonzero(parse_size(p, kb).map_err(err)?);
                }
            }
        }
        "rate_process" => {
            job.rate_process = match v {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                _ => return Err(e.invalid("expected linear or poisson")),
            }
        }
        "stonewall" => job.stonewall = e.flag()?,
        "new_group" => job.new_group = e.flag()?,
        "group_reporting" => job.group_reporting = e.flag()?,
        "kb_base" => {} // applied first, in build_job
        "percentile_list" => {
            let mut list = Vec::new();
            for p in v.split(':') {
                let f = parse_float(p).map_err(err)?;
                if !(0.0..=100.0).contains(&f) {
                    return Err(e.invalid("percentiles must be from 0 to 100"));
                }
                list.push(f);
            }
            job.percentile_list = Some(list);
        }
        "slat_percentiles" => job.percentiles[0] = parse_bool(v).map_err(err)?,
        "clat_percentiles" => job.percentiles[1] = parse_bool(v).map_err(err)?,
        "lat_percentiles" => job.percentiles[2] = parse_bool(v).map_err(err)?,
        "direct" => job.direct = parse_bool(v).map_err(err)?,
        "buffered" => job.direct = !parse_bool(v).map_err(err)?,
        "filename" => job.filename = Some(nonempty(e)?.to_string()),
        "nrfiles" => {
            job.nrfiles = parse_int_in(v, kb, 1, 1 << 20)
                .map(|n| n as u32)
                .map_err(err)?
        }
        "overwrite" => job.overwrite = parse_bool(v).map_err(err)?,
        "fallocate" => {
            job.fallocate = match v.trim() {
                "none" | "0" => super::Fallocate::None,
                "native" => super::Fallocate::Native,
                // fio's HOWTO: 1 is the backward-compatible alias for posix
                "posix" | "1" => super::Fallocate::Posix,
                "keep" => super::Fallocate::Keep,
                "truncate" => super::Fallocate::Truncate,
                _ => {
                    return Err(e.invalid(
                        "fio's fallocate modes are none, native, posix, keep and truncate",
                    ))
                }
            }
        }
        "ioengine" => {
            let name = nonempty(e)?;
            if super::engine_kind(name).is_none() {
                return Err(e.invalid(format!(
                    "fio has no such IO engine (it would fail to load it); the engines are {}, or external:<path>",
                    super::engine_names()
                )));
            }
            job.ioengine = Some(name.to_string());
        }
        "thread" => job.thread = e.flag()?,
        "hipri" => job.hipri = e.flag()?,
        "max_latency" => job.max_latency_ns = nonzero(parse_time_ns(v, 1).map_err(err)?),
        "write_lat_log" => job.logs.lat = Some(nonempty(e)?.to_string()),
        "write_bw_log" => job.logs.bw = Some(nonempty(e)?.to_string()),
        "write_iops_log" => job.logs.iops = Some(nonempty(e)?.to_string()),
        "write_iolog" => job.logs.iolog = Some(nonempty(e)?.to_string()),
        "read_iolog" => job.read_iolog = Some(nonempty(e)?.to_string()),
        "app" => job.app = Some((nonempty(e)?.to_string(), e.raw.location.clone())),
        "app_set" => job
            .app_set
            .push((nonempty(e)?.to_string(), e.raw.location.clone())),
        "unified_rw_reporting" => {
            job.unified_rw = match v {
                "none" | "0" => UnifiedRw::None,
                "mixed" | "1" => UnifiedRw::Mixed,
                "both" | "2" => UnifiedRw::Both,
                _ => return Err(e.invalid("expected none (0), mixed (1) or both (2)")),
            }
        }
        "zonemode" => sizes.zone_strided = match v {
            "none" => false,
            "strided" => true,
            "zbd" => return Err(e.invalid(
                "zoned block devices (ZNS, SMR) are not modelled; zonemode=strided and none are",
            )),
            _ => return Err(e.invalid("expected none, strided or zbd")),
        },
        "zonesize" => sizes.zone_size = Some(positive_size(e, v, kb)?),
        "zonerange" => sizes.zone_range = Some(positive_size(e, v, kb)?),
        "zoneskip" => sizes.zone_skip = parse_size(v, kb).map_err(err)?,
        "sync" => {
            job.sync_writes = match v {
                "none" | "0" => false,
                "sync" | "1" | "dsync" => true,
                _ => return Err(e.invalid("expected none (0), sync (1) or dsync")),
            }
        }
        "replay_no_stall" => job.replay_no_stall = parse_bool(v).map_err(err)?,
        "log_avg_msec" => {
            job.logs.avg_msec = parse_int_in(v, kb, 0, u64::from(u32::MAX)).map_err(err)?
        }
        "log_max_value" => job.logs.max_value = parse_bool(v).map_err(err)?,
        "log_offset" => job.logs.offset = parse_bool(v).map_err(err)?,
        "per_job_logs" => job.logs.per_job = parse_bool(v).map_err(err)?,
        "random_generator" => {
            if !matches!(v, "tausworthe" | "lfsr" | "tausworthe64") {
                return Err(e.invalid("expected tausworthe, lfsr or tausworthe64"));
            }
        }
        "continue_on_error" => {
            if !matches!(
                v,
                "none" | "read" | "write" | "io" | "verify" | "all" | "0" | "1"
            ) {
                return Err(e.invalid("expected none, read, write, io, verify, all, 0 or 1"));
            }
        }
        "io_submit_mode" => {
            if !matches!(v, "inline" | "offload") {
                return Err(e.invalid("expected inline or offload"));
            }
        }
        "significant_figures" => {
            parse_int_in(v, kb, 1, 10).map_err(err)?;
        }
        "nice" => {
            if v.trim().parse::<i32>().is_err() {
                return Err(e.invalid("expected an integer"));
            }
        }
        _ => validate_generic(e, kb)?,
    }
    Ok(())
}

/// Validation for recorded options without their own rule.
fn validate_generic(e: &Entry, kb: u32) -> Result<(), FioError> {
    let v = e.value();
    match e.def.kind {
        Kind::Flag => {
            e.flag()?;
        }
        Kind::Bool => {
            parse_bool(v).map_err(|r| e.invalid(r))?;
        }
        Kind::Int | Kind::Size => {
            parse_size(v, kb).map_err(|r| e.invalid(r))?;
        }
        Kind::Time => {
            parse_time_ns(v, 1_000_000).map_err(|r| e.invalid(r))?;
        }
        Kind::Str => {
            nonempty(e)?;
        }
    }
    Ok(())
}

fn nonempty(e: &Entry) -> Result<&str, FioError> {
    let v = e.value().trim();
    if v.is_empty() {
        Err(e.invalid("a value is required"))
    } else {
        Ok(v)
    }
}

fn nonzero(v: u64) -> Option<u64> {
    (v > 0).then_some(v)
}

fn nonzero_size(s: SizeSpec) -> Option<SizeSpec> {
    match s {
        SizeSpec::Bytes(0) => None,
        other => Some(other),
    }
}

fn parse_u32(e: &Entry, kb: u32) -> Result<u32, FioError> {
    parse_int_in(e.value(), kb, 0, u64::from(u32::MAX))
        .map(|v| v as u32)
        .map_err(|r| e.invalid(r))
}

fn positive_size(e: &Entry, text: &str, kb: u32) -> Result<u64, FioError> {
    match parse_size(text, kb) {
        Ok(0) => Err(e.invalid(format!("`{text}`: must be at least 1 byte"))),
        Ok(v) => Ok(v),
        Err(r) => Err(e.invalid(format!("`{text}`: {r}"))),
    }
}

fn parse_range(e: &Entry, text: &str, kb: u32) -> Result<(u64, u64), FioError> {
    let Some((lo, hi)) = text.split_once(['-', ':']) else {
        return Err(e.invalid(format!("`{text}`: expected a range `min-max`")));
    };
    let lo = positive_size(e, lo, kb)?;
    let hi = positive_size(e, hi, kb)?;
    // fio swaps a reversed range.
    Ok((lo.min(hi), lo.max(hi)))
}

/// Most entries fio accepts in one direction of `bssplit` or a zoned
/// distribution.
const BSSPLIT_MAX: usize = 64;
const ZONES_MAX: usize = 256;

fn parse_bssplit(e: &Entry, text: &str, kb: u32) -> Result<Vec<BsSplitEntry>, FioError> {
    let mut sizes = Vec::new();
    let mut pcts: Vec<Option<u64>> = Vec::new();
    for item in text.split(':') {
        if item.trim().is_empty() {
            break; // fio stops at an empty entry
        }
        let (bs, pct) = match item.split_once('/') {
            Some((b, p)) => (b, Some(p.trim())),
            None => (item, None),
        };
        sizes.push(positive_size(e, bs, kb)?);
        pcts.push(match pct {
            None | Some("") => None,
            Some(p) => match parse_int_in(p, kb, 0, 100) {
                Ok(0) => None, // fio treats 0 % as "not given"
                Ok(v) => Some(v),
                Err(r) => return Err(e.invalid(format!("`{item}`: percentage {r}"))),
            },
        });
    }
    if sizes.is_empty() {
        return Err(e.invalid("expected `size/percent:size/percent...`"));
    }
    if sizes.len() > BSSPLIT_MAX {
        return Err(e.invalid(format!("at most {BSSPLIT_MAX} block sizes per direction")));
    }
    let given: u64 = pcts.iter().flatten().sum();
    if given > 100 {
        return Err(e.invalid(format!("percentages add up to {given}, more than 100")));
    }
    let missing = pcts.iter().filter(|p| p.is_none()).count() as u64;
    let share = (100 - given).checked_div(missing).unwrap_or(0);
    let mut out: Vec<BsSplitEntry> = sizes
        .into_iter()
        .zip(pcts)
        .map(|(bs, p)| BsSplitEntry {
            bs,
            pct: p.unwrap_or(share) as u8,
        })
        .collect();
    // fio sorts by percentage; the last (largest) entry absorbs any total
    // below 100.
    out.sort_by_key(|x| x.pct);
    if out.iter().all(|x| x.pct == 0) {
        return Err(e.invalid("all percentages are zero"));
    }
    Ok(out)
}

fn parse_rw(job: &mut JobSpec, e: &Entry) -> Result<(), FioError> {
    let v = e.value();
    let (mode_text, postfix) = match v.split_once(':') {
        Some((m, p)) => (m.trim(), Some(p.trim())),
        None => (v.trim(), None),
    };
    let Some((_, mode)) = RwMode::ALL.iter().find(|(n, _)| *n == mode_text) else {
        let names: Vec<&str> = RwMode::ALL.iter().map(|(n, _)| *n).collect();
        return Err(e.invalid(format!("expected one of {}", names.join(", "))));
    };
    job.rw = *mode;
    job.rw_seq_nr = 1;
    job.rw_seq_add_bytes = 0;
    if let Some(p) = postfix {
        if mode.is_random() {
            job.rw_seq_nr = parse_int_in(p, job.kb_base, 1, u64::from(u32::MAX))
                .map_err(|r| e.invalid(format!("IOs per random offset after `:` {r}")))?
                as u32;
        } else {
            // fio: a negative value steps backwards (`rw=read:-8k`).
            let (sign, magnitude) = match p.trim().strip_prefix('-') {
                Some(m) => (-1, m),
                None => (1, p),
            };
            let bytes = parse_size(magnitude, job.kb_base)
                .map_err(|r| e.invalid(format!("hole size after `:`: {r}")))?;
            let bytes =
                i64::try_from(bytes).map_err(|_| e.invalid("hole size after `:`: too large"))?;
            job.rw_seq_add_bytes = sign * bytes;
        }
    }
    Ok(())
}

fn parse_center(e: &Entry, text: Option<&str>) -> Result<Option<f64>, FioError> {
    match text {
        None => Ok(None),
        Some(t) => {
            let c = parse_float(t).map_err(|r| e.invalid(format!("center: {r}")))?;
            if !(0.0..=1.0).contains(&c) {
                return Err(e.invalid("the center must be from 0.0 to 1.0"));
            }
            Ok(Some(c))
        }
    }
}

fn parse_distribution(e: &Entry, kb: u32) -> Result<Distribution, FioError> {
    let v = e.value().trim();
    let (kind, rest) = match v.split_once(':') {
        Some((k, r)) => (k, Some(r)),
        None => (v, None),
    };
    // `zipf:1.2:0.25` -> parameter and optional center.
    let param = |default: f64| -> Result<(f64, Option<f64>), FioError> {
        match rest {
            None => Ok((default, None)),
            Some(r) => {
                let (p, c) = match r.split_once(':') {
                    Some((p, c)) => (p, Some(c)),
                    None => (r, None),
                };
                let p = parse_float(p).map_err(|r| e.invalid(r))?;
                Ok((p, parse_center(e, c)?))
            }
        }
    };
    match kind {
        "random" => match rest {
            None => Ok(Distribution::Random),
            Some(_) => Err(e.invalid("`random` takes no parameter")),
        },
        "zipf" => {
            let (theta, center) = param(1.1)?;
            if theta == 1.0 {
                return Err(e.invalid("zipf theta must be different from 1.0 (as in fio)"));
            }
            if theta < 0.0 {
                return Err(e.invalid("zipf theta must not be negative"));
            }
            Ok(Distribution::Zipf { theta, center })
        }
        "pareto" => {
            let (h, center) = param(0.2)?;
            if !(h > 0.0 && h < 1.0) {
                return Err(e.invalid("pareto parameter must be in (0, 1)"));
            }
            Ok(Distribution::Pareto { h, center })
        }
        "normal" => {
            let (dev_pct, center) = param(0.0)?;
            if !(0.0..100.0).contains(&dev_pct) {
                return Err(e.invalid("normal deviation must be in [0, 100)"));
            }
            Ok(Distribution::Normal { dev_pct, center })
        }
        "zoned" | "zoned_abs" => {
            let Some(rest) = rest else {
                return Err(e.invalid(format!("`{kind}` needs zones: {kind}:access/size:...")));
            };
            let dirs = split_per_dir(rest).map_err(|r| e.invalid(r))?;
            if kind == "zoned" {
                let mut zones: [Vec<Zone>; 3] = Default::default();
                for (d, part) in dirs.iter().enumerate() {
                    if let Some(p) = part {
                        zones[d] = parse_zones(e, p, kb)?;
                    }
                }
                Ok(Distribution::Zoned(zones))
            } else {
                let mut zones: [Vec<ZoneAbs>; 3] = Default::default();
                for (d, part) in dirs.iter().enumerate() {
                    if let Some(p) = part {
                        zones[d] = parse_zones_abs(e, p, kb)?;
                    }
                }
                Ok(Distribution::ZonedAbs(zones))
            }
        }
        _ => Err(e.invalid(
            "expected random, zipf[:theta[:center]], pareto[:h[:center]], normal[:dev[:center]], zoned:... or zoned_abs:...",
        )),
    }
}

/// `access/size` pairs of one direction: the access percentage (before the
/// slash) and the second field, unparsed.
fn zone_items<'t>(e: &Entry, text: &'t str) -> Result<Vec<(u64, Option<&'t str>)>, FioError> {
    let mut out = Vec::new();
    for item in text.split(':') {
        if item.trim().is_empty() {
            break;
        }
        let (acc, second) = match item.split_once('/') {
            Some((a, s)) => (a, Some(s.trim()).filter(|s| !s.is_empty())),
            None => (item, None),
        };
        let acc = parse_int_in(acc, 1024, 0, 100)
            .map_err(|r| e.invalid(format!("`{item}`: access percentage {r}")))?;
        out.push((acc, second));
    }
    if out.is_empty() {
        return Err(e.invalid("expected zones `access/size:access/size...`"));
    }
    if out.len() > ZONES_MAX {
        return Err(e.invalid(format!("at most {ZONES_MAX} zones per direction")));
    }
    let total: u64 = out.iter().map(|(a, _)| a).sum();
    if total != 100 {
        return Err(e.invalid(format!(
            "zone access percentages add up to {total}; they must add up to 100"
        )));
    }
    Ok(out)
}

fn parse_zones(e: &Entry, text: &str, kb: u32) -> Result<Vec<Zone>, FioError> {
    let items = zone_items(e, text)?;
    let mut sizes: Vec<Option<u64>> = Vec::new();
    for (_, s) in &items {
        sizes.push(match s {
            None => None,
            Some(s) => Some(
                parse_int_in(s, kb, 0, 100)
                    .map_err(|r| e.invalid(format!("zone size percentage `{s}` {r}")))?,
            ),
        });
    }
    let given: u64 = sizes.iter().flatten().sum();
    if given > 100 {
        return Err(e.invalid(format!(
            "zone size percentages add up to {given}, more than 100"
        )));
    }
    let missing = sizes.iter().filter(|s| s.is_none()).count() as u64;
    let share = (100 - given).checked_div(missing).unwrap_or(0);
    Ok(items
        .iter()
        .zip(sizes)
        .map(|((a, _), s)| Zone {
            access_pct: *a as u8,
            size_pct: s.unwrap_or(share) as u8,
        })
        .collect())
}

fn parse_zones_abs(e: &Entry, text: &str, kb: u32) -> Result<Vec<ZoneAbs>, FioError> {
    let items = zone_items(e, text)?;
    let mut out = Vec::new();
    for (a, s) in items {
        let size_bytes = match s {
            None => 0,
            Some(s) => parse_size(s, kb).map_err(|r| e.invalid(format!("zone size `{s}`: {r}")))?,
        };
        out.push(ZoneAbs {
            access_pct: a as u8,
            size_bytes,
        });
    }
    Ok(out)
}

/// Cross-option rules, once every option is applied.
fn finish(job: &mut JobSpec, sizes: SizeSettings) -> Result<(), FioError> {
    for d in 0..3 {
        job.bs[d] = if let Some(split) = sizes.bssplit[d].clone() {
            BlockSizeSpec::Split(split)
        } else if let Some((min, max)) = sizes.bsrange[d] {
            if min == max {
                BlockSizeSpec::Fixed(min)
            } else {
                BlockSizeSpec::Range { min, max }
            }
        } else {
            BlockSizeSpec::Fixed(sizes.bs[d].unwrap_or(4096))
        };
    }
    // fio: "Any use of blockalign= turns off randommap".
    if job.rw.is_random() {
        let dirs = job.rw.directions();
        let misaligned = (0..3).any(|d| {
            dirs[d] && job.blockalign_bytes[d].is_some_and(|ba| ba != job.bs[d].min_bytes())
        });
        if misaligned {
            job.norandommap = true;
        }
    }
    if job.time_based && job.runtime_ns.is_none() {
        return Err(FioError::InvalidJob {
            location: job.location.clone(),
            job: job.name.clone(),
            reason: "time_based requires runtime= (fio: \"time_based requires a runtime/timeout setting\")".into(),
        });
    }
    let invalid = |reason: &str| FioError::InvalidJob {
        location: job.location.clone(),
        job: job.name.clone(),
        reason: reason.into(),
    };
    job.zones = match (sizes.zone_strided, sizes.zone_size) {
        (true, Some(size)) => Some(Zones {
            size,
            range: sizes.zone_range.unwrap_or(size),
            skip: sizes.zone_skip,
        }),
        (true, None) => {
            return Err(invalid(
                "zonemode=strided needs zonesize= (fio: \"--zonesize must be specified when using --zonemode=strided\")",
            ))
        }
        (false, Some(_)) => {
            return Err(invalid(
                "zonesize= needs zonemode=strided (fio: \"--zonemode=none and --zonesize are not compatible\")",
            ))
        }
        (false, None) => None,
    };
    job.seed = job.randseed.unwrap_or(FIO_DEFAULT_SEED);
    Ok(())
}
