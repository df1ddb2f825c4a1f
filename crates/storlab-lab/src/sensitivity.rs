//! The sensitivity check: does each numeric row of a study move with the
//! device it measures? Every device of the study is made 2x slower in
//! media latency, then, separately, 2x lower in bandwidth ([`KEYS`] names
//! the parameters per device class); a row whose value changes by less
//! than [`THRESHOLD`] under both is [`Insensitive`]: nothing about the
//! device reaches it (a ratio that is 1 whatever the device, a run that
//! never touches the device, a value read off a preset rather than a
//! run).
//!
//! # What is perturbed
//!
//! Every device a study runs on, through its `--set` overrides: each
//! [`Spec`](crate::measure::Spec) of the study's plan gets [`overrides`] of its device appended
//! ([`crate::measure::Plan::map_specs`]), and the studies that run their
//! work in their `finish` closures (`paging`, `apps-paging`) take the
//! perturbation as an argument (`prepare_perturbed`) and append the same
//! overrides to the swap devices they load. Nothing is process-wide: a
//! normal run prepares the studies as before and sees no perturbation.
//!
//! Reference devices are perturbed like any other (`pdram`, the DRAM of
//! the NVMM study; `dram-mem`, the flash placement study's all-DRAM
//! baseline; `ddr-dram`, `haste-dram`): the point is the device under
//! test, and a row that depends on it still moves when its reference moves
//! too, unless the row is a ratio of two pure media times of the same
//! kind (both sides then scale alike; such a row would be flagged and its
//! values say why). The null device has nothing to perturb (latency 0, no
//! bandwidth limit); the host's DRAM under the swap path (`swap-linux`'s
//! own `[device]`) is not the device under test and is left alone, as
//! `storlab sim --app` leaves it (it loads the swap system with no
//! overrides): only its swap device is perturbed.
//!
//! Values a study reads off a preset without running it (the Moneta
//! study's link rate, a row's target) are not perturbed.

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::report::{Prepared, Reproduction};
use crate::studies;

pub use crate::perturb::{
    class_of, overrides, overrides_in, perturb_spec, Action, Factor, Key, Perturbation, KEYS,
};
use Perturbation::{Bandwidth, Latency};

/// A row is insensitive when its value changes by less than this (0.1 %,
/// relative) under every perturbation.
pub const THRESHOLD: f64 = 0.001;

/// Study `study` prepared with every device slower by `p`: each run of
/// its plan with [`overrides`] appended, and the runs its `finish` makes
/// itself (`paging`, `apps-paging`) told the perturbation.
pub fn prepare(study: &str, p: Perturbation) -> Result<Prepared> {
    let Prepared { plan, finish } = match study {
        "paging" => studies::paging::prepare_perturbed(Some(p)),
        "apps-paging" => studies::apps_paging::prepare_perturbed(Some(p)),
        _ => studies::prepare(study)?,
    };
    Ok(Prepared {
        plan: plan.map_specs(|s| perturb_spec(s, p))?,
        finish,
    })
}

/// A numeric row that does not move with the device.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Insensitive {
    /// The study.
    pub study: String,
    /// The row's index in the study's rows (0-based).
    pub index: usize,
    /// The row's `what`.
    pub what: String,
    /// Its value as the study runs.
    pub base: f64,
    /// Its value with media latency x2.
    pub latency: f64,
    /// Its value with bandwidth /2.
    pub bandwidth: f64,
}

/// The relative change from `base` to `other`: 0 when equal (two NaNs
/// included: a row that cannot be computed does not move either),
/// infinite from 0 to anything else.
pub fn change(base: f64, other: f64) -> f64 {
    if base == other || (base.is_nan() && other.is_nan()) {
        0.0
    } else if base == 0.0 || !base.is_finite() || !other.is_finite() {
        f64::INFINITY
    } else {
        ((other - base) / base).abs()
    }
}

/// The numeric rows of `base` that change by less than [`THRESHOLD`] in
/// both `latency` and `bandwidth` (the same study run with media latency
/// x2 and with bandwidth /2), matched by index. A row count that differs
/// is an error (a run that failed under a perturbation adds a row saying
/// so: its text is in the message).
pub fn compare(
    base: &Reproduction,
    latency: &Reproduction,
    bandwidth: &Reproduction,
) -> Result<Vec<Insensitive>> {
    for (p, r) in [(Latency, latency), (Bandwidth, bandwidth)] {
        if r.rows.len() != base.rows.len() {
            let extra: Vec<String> = r
                .rows
                .iter()
                .skip(base.rows.len())
                .map(|x| format!("{}: {}", x.what, x.model))
                .collect();
            return Err(LabError::Sensitivity(format!(
                "{}: {} rows as run, {} with {}{}",
                base.study,
                base.rows.len(),
                r.rows.len(),
                p.label(),
                if extra.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", extra.join("; "))
                }
            )));
        }
    }
    let mut out = Vec::new();
    for (i, row) in base.rows.iter().enumerate() {
        let Some(b) = row.value else { continue };
        let (Some(l), Some(w)) = (latency.rows[i].value, bandwidth.rows[i].value) else {
            continue;
        };
        if change(b, l) < THRESHOLD && change(b, w) < THRESHOLD {
            out.push(Insensitive {
                study: base.study.clone(),
                index: i,
                what: row.what.clone(),
                base: b,
                latency: l,
                bandwidth: w,
            });
        }
    }
    Ok(out)
}

/// Run `study` as it is and under both perturbations, and compare.
pub fn check(study: &str) -> Result<Vec<Insensitive>> {
    let base = studies::prepare(study)?.run(&|| {})?;
    check_against(&base, &|| {})
}

/// Run `base`'s study under both perturbations (`progress` once per
/// run) and compare with `base`.
pub fn check_against(
    base: &Reproduction,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Insensitive>> {
    let lat = prepare(&base.study, Latency)?.run(progress)?;
    let bw = prepare(&base.study, Bandwidth)?.run(progress)?;
    compare(base, &lat, &bw)
}

/// One study's part of a [`Report`].
#[derive(Clone, Debug, Serialize)]
pub struct StudyCheck {
    /// The study.
    pub study: String,
    /// Its numeric rows (the ones checked).
    pub numeric_rows: usize,
    /// How many of them do not move.
    pub insensitive: usize,
}

/// The check over several studies, as `storlab lab reproduce
/// --sensitivity` prints it and writes `sensitivity.json`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// [`THRESHOLD`].
    pub threshold: f64,
    /// The perturbations, as labelled.
    pub perturbations: Vec<(Perturbation, &'static str)>,
    /// The keys per device class ([`KEYS`]).
    pub keys: &'static [Key],
    /// Per study.
    pub studies: Vec<StudyCheck>,
    /// The rows that do not move.
    pub rows: Vec<Insensitive>,
}

impl Report {
    /// From each study's run (`base`) and its insensitive rows.
    pub fn new<'a>(
        checked: impl IntoIterator<Item = (&'a Reproduction, Vec<Insensitive>)>,
    ) -> Self {
        let mut studies = Vec::new();
        let mut rows = Vec::new();
        for (base, flagged) in checked {
            studies.push(StudyCheck {
                study: base.study.clone(),
                numeric_rows: base.rows.iter().filter(|r| r.value.is_some()).count(),
                insensitive: flagged.len(),
            });
            rows.extend(flagged);
        }
        Report {
            threshold: THRESHOLD,
            perturbations: Perturbation::ALL.iter().map(|p| (*p, p.label())).collect(),
            keys: KEYS,
            studies,
            rows,
        }
    }

    /// The section for the terminal.
    pub fn write_text(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let numeric: usize = self.studies.iter().map(|s| s.numeric_rows).sum();
        writeln!(
            w,
            "rows that do not move with the device (media latency x2, bandwidth /2): {} of {} numeric rows change by less than {}% under both",
            self.rows.len(),
            numeric,
            self.threshold * 100.0
        )?;
        for r in &self.rows {
            writeln!(
                w,
                "  {} #{}: {}: {} (media latency x2: {}, bandwidth /2: {})",
                r.study,
                r.index,
                r.what,
                sig(r.base),
                sig(r.latency),
                sig(r.bandwidth)
            )?;
        }
        Ok(())
    }

    /// As JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report serializes") + "\n"
    }
}

/// Six significant figures.
fn sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (6 - 1 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_is_relative_and_nan_stays() {
        assert_eq!(change(2.0, 2.0), 0.0);
        assert!((change(2.0, 2.002) - 0.001).abs() < 1e-12);
        assert_eq!(change(f64::NAN, f64::NAN), 0.0);
        assert_eq!(change(0.0, 1.0), f64::INFINITY);
    }
}
