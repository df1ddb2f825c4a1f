//! The option table: every option storlab accepts, by any spelling, and
//! the lists and suggestions made from it (a job is built from its
//! options in `build`).

/// Whether storlab acts on an option or only records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionEffect {
    /// The generator or the simulator uses it.
    Simulated,
    /// Accepted, validated and recorded in [`JobSpec::options`](crate::fio::JobSpec::options) (and for some
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
    // zonemode=zbd (fio's HOWTO, "I/O zones" options)
    sim("max_open_zones", &[], Kind::Int),
    sim("zonecapacity", &[], Kind::Size),
    sim("zone_reset_threshold", &[], Kind::Str),
    sim("zone_reset_frequency", &[], Kind::Str),
    sim("zone_append", &[], Kind::Bool),
    rec("read_beyond_wp", &[], Kind::Bool),
    // data placement (fio's HOWTO: fdp, dataplacement, plids, plid_select)
    sim("fdp", &[], Kind::Bool),
    sim("dataplacement", &["data_placement"], Kind::Str),
    sim("plids", &["fdp_pli"], Kind::Str),
    sim("plid_select", &["fdp_pli_select"], Kind::Str),
    sim("job_max_open_zones", &[], Kind::Int),
    rec("ignore_zone_limits", &[], Kind::Bool),
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

pub(super) fn supported_list() -> String {
    format!(
        "{} (accepted and recorded, without effect on a simulation: {})",
        option_names(OptionEffect::Simulated),
        option_names(OptionEffect::Recorded)
    )
}

/// The closest known option name, if it is close enough to be a typo.
pub(super) fn suggestion(key: &str) -> Option<&'static str> {
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

impl std::fmt::Debug for OptDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}
