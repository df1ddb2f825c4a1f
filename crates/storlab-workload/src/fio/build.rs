//! Building a [`JobSpec`] from its options in application order: each
//! option applied, then the per-direction sizes, zones and checks of the
//! whole job.

use super::engine::DEFAULT_ENGINE;
use super::entry::{as_written_merged, Entry};
use super::error::{FioError, Location};
use super::job::{JobSpec, FIO_DEFAULT_SEED};
use super::optparse::{
    nonempty, nonzero, nonzero_size, parse_bssplit, parse_distribution, parse_range, parse_rw,
    parse_u32, positive_size, validate_generic,
};
use super::types::{
    BlockSizeSpec, BsSplitEntry, RateProcess, RwSequencer, ThinktimeBlocksType, UnifiedRw, Zones,
};
use super::value::{
    parse_bool, parse_float, parse_int_in, parse_size, parse_size_or_percent, parse_time_ns,
    split_per_dir,
};

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
    zbd: bool,
    zbd_opts: super::zbd::ZbdOptions,
    /// `fdp=1`.
    fdp: bool,
    /// `dataplacement=` when written.
    dp_type: Option<super::dp::DpType>,
    dp: super::dp::DpOptions,
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
    let engine = job.ioengine.as_deref().unwrap_or(DEFAULT_ENGINE);
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
        "zonemode" => {
            (sizes.zone_strided, sizes.zbd) = match v {
                "none" => (false, false),
                "strided" => (true, false),
                "zbd" => (false, true),
                _ => return Err(e.invalid("expected none, strided or zbd")),
            }
        }
        "max_open_zones" => {
            sizes.zbd_opts.max_open_zones =
                parse_int_in(v, kb, 0, u64::from(u32::MAX)).map_err(err)? as u32
        }
        "job_max_open_zones" => {
            sizes.zbd_opts.job_max_open_zones =
                parse_int_in(v, kb, 0, u64::from(u32::MAX)).map_err(err)? as u32
        }
        "zonecapacity" => sizes.zbd_opts.zone_capacity = Some(positive_size(e, v, kb)?),
        "zone_reset_threshold" | "zone_reset_frequency" => {
            let f = super::value::parse_float(v).map_err(err)?;
            if !(0.0..=1.0).contains(&f) {
                return Err(e.invalid("expected a number from 0 to 1"));
            }
            if e.def.name == "zone_reset_threshold" {
                sizes.zbd_opts.reset_threshold = f;
            } else {
                sizes.zbd_opts.reset_frequency = f;
            }
        }
        "zone_append" => sizes.zbd_opts.zone_append = parse_bool(v).map_err(err)?,
        "fdp" => sizes.fdp = parse_bool(v).map_err(err)?,
        "dataplacement" => {
            use super::dp::DpType;
            sizes.dp_type = Some(match v {
                "none" => DpType::None,
                "fdp" => DpType::Fdp,
                "streams" => DpType::Streams,
                _ => return Err(e.invalid("expected none, fdp or streams")),
            })
        }
        "plids" => sizes.dp.ids = super::dp::parse_ids(v).map_err(err)?,
        "plid_select" => {
            sizes.dp.select = match v {
                "roundrobin" => super::dp::DpSelect::RoundRobin,
                "random" => super::dp::DpSelect::Random,
                "scheme" => {
                    return Err(e.invalid(
                        "plid_select=scheme (placement by dp_scheme's offset ranges) is not simulated; give each range its own job with plids=",
                    ))
                }
                _ => return Err(e.invalid("expected random, roundrobin or scheme")),
            }
        }
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

/// Cross-option rules, once every option is applied.
fn finish(job: &mut JobSpec, mut sizes: SizeSettings) -> Result<(), FioError> {
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
    {
        // fio's init.c: fdp=1 is dataplacement=fdp, and refuses an
        // explicit dataplacement=none or streams beside it
        use super::dp::DpType;
        let kind =
            match (sizes.fdp, sizes.dp_type) {
                (true, Some(DpType::None | DpType::Streams)) => return Err(invalid(
                    "fdp=1 is not compatible with dataplacement={streams, none} (fio's message)",
                )),
                (true, _) => DpType::Fdp,
                (false, t) => t.unwrap_or_default(),
            };
        if kind != DpType::None {
            let mut dp = std::mem::take(&mut sizes.dp);
            dp.kind = kind;
            job.dp = Some(dp);
        }
    }
    if sizes.zbd {
        // zonemode=zbd: zonesize names emulated zones (a device without
        // zones); a zoned device's own zones win
        let mut z = std::mem::take(&mut sizes.zbd_opts);
        z.zone_size = sizes.zone_size.take();
        job.zbd = Some(z);
    }
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
