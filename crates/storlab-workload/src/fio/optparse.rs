//! Parsing one option's value into the job's types: generic checks by
//! value kind, ranges, `bssplit`, `rw`, distributions, zones.

use super::entry::Entry;
use super::error::FioError;
use super::job::JobSpec;
use super::options::Kind;
use super::types::{BsSplitEntry, Distribution, RwMode, SizeSpec, Zone, ZoneAbs};
use super::value::{
    parse_bool, parse_float, parse_int_in, parse_size, parse_time_ns, split_per_dir,
};

/// Validation for recorded options without their own rule.
pub(super) fn validate_generic(e: &Entry, kb: u32) -> Result<(), FioError> {
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

pub(super) fn nonempty(e: &Entry) -> Result<&str, FioError> {
    let v = e.value().trim();
    if v.is_empty() {
        Err(e.invalid("a value is required"))
    } else {
        Ok(v)
    }
}

pub(super) fn nonzero(v: u64) -> Option<u64> {
    (v > 0).then_some(v)
}

pub(super) fn nonzero_size(s: SizeSpec) -> Option<SizeSpec> {
    match s {
        SizeSpec::Bytes(0) => None,
        other => Some(other),
    }
}

pub(super) fn parse_u32(e: &Entry, kb: u32) -> Result<u32, FioError> {
    parse_int_in(e.value(), kb, 0, u64::from(u32::MAX))
        .map(|v| v as u32)
        .map_err(|r| e.invalid(r))
}

pub(super) fn positive_size(e: &Entry, text: &str, kb: u32) -> Result<u64, FioError> {
    match parse_size(text, kb) {
        Ok(0) => Err(e.invalid(format!("`{text}`: must be at least 1 byte"))),
        Ok(v) => Ok(v),
        Err(r) => Err(e.invalid(format!("`{text}`: {r}"))),
    }
}

pub(super) fn parse_range(e: &Entry, text: &str, kb: u32) -> Result<(u64, u64), FioError> {
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

pub(super) fn parse_bssplit(e: &Entry, text: &str, kb: u32) -> Result<Vec<BsSplitEntry>, FioError> {
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

pub(super) fn parse_rw(job: &mut JobSpec, e: &Entry) -> Result<(), FioError> {
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

pub(super) fn parse_distribution(e: &Entry, kb: u32) -> Result<Distribution, FioError> {
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
