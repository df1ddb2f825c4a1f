//! What an application is: its entry in the registry ([`AppInfo`]), its
//! parameters ([`ParamDef`], [`COMMON_PARAMS`], [`Params`]) and what
//! building it gives ([`AppKind`]: a closed-loop [`Model`] or a paging
//! program's [`MemoryApp`]).
//!
//! Parameters are given as `name=value` pairs (`--app-set` on the
//! command line, `app_set=` in a job file); every model also takes the
//! common ones in [`COMMON_PARAMS`].

use std::collections::BTreeMap;

use storlab_model::Nanos;

use crate::error::AppError;
use crate::model::Model;

/// One parameter of an application: its name, default (as it would be
/// written after `=`), unit and meaning.
#[derive(Clone, Copy, Debug)]
pub struct ParamDef {
    /// Name, as in `--app-set name=value`.
    pub name: &'static str,
    /// Default value, as text.
    pub default: &'static str,
    /// What it is, with its unit and source.
    pub help: &'static str,
}

/// Parameters every application takes.
pub const COMMON_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "threads",
        default: "",
        help: "application threads (clients); empty: the model's own default",
    },
    ParamDef {
        name: "runtime",
        default: "0",
        help: "stop starting operations after this much simulated time (fio time syntax: 60s, 500ms); 0: run the model's own amount of work",
    },
    ParamDef {
        name: "scale",
        default: "1",
        help: "multiply the data set's size (records, files, footprint) by this factor, 0 < scale <= 1000",
    },
    ParamDef {
        name: "study",
        default: "",
        help: "run another study's configuration of the application (moneta, haste, nvmm, placement: `storlab apps show NAME` lists the app's); pairs given beside it override the study's; empty: the app's defaults, its own study's configuration",
    },
];

/// An application model in the registry.
pub struct AppInfo {
    /// Name (as the studies name the program).
    pub name: &'static str,
    /// One line for `storlab apps`.
    pub summary: &'static str,
    /// The metric's unit: `transactions/s`, `queries/s`, `operations/s`,
    /// `seconds`, `instructions/s`.
    pub unit: &'static str,
    /// What the model does, paragraph by paragraph (`storlab apps show`).
    pub models: &'static [&'static str],
    /// What it leaves out or simplifies.
    pub simplifies: &'static [&'static str],
    /// Which parameter was calibrated, against which figure, and why; or
    /// where its constants come from.
    pub calibration: &'static str,
    /// The model's own parameters.
    pub params: &'static [ParamDef],
    /// Build the model from its parameters.
    pub build: fn(&Params) -> Result<AppKind, AppError>,
}

/// A built application.
pub enum AppKind {
    /// Threads running operations on files (run by `AppRun`).
    Closed(Box<dyn Model>),
    /// A memory-access program paging to the device.
    Memory(Box<MemoryApp>),
}

/// A memory-access program (NPB, DGEMM, thrash): its access stream, the
/// DRAM it runs in, and how many instructions an access stands for (its
/// metric is instructions per second).
#[derive(Clone, Debug)]
pub struct MemoryApp {
    /// The access stream.
    pub workload: storlab_model::host::swap::MemWorkload,
    /// DRAM for the program's pages, bytes.
    pub dram_bytes: u64,
    /// Instructions the program retires per access of the stream.
    pub instructions_per_access: f64,
}

/// An application's parameters: its defaults with the given values over
/// them, each checked against the model's list.
#[derive(Clone, Debug)]
pub struct Params {
    app: &'static str,
    place: String,
    values: BTreeMap<&'static str, String>,
    /// Where each given value was written.
    places: BTreeMap<&'static str, String>,
}

impl Params {
    /// Parse `pairs` (each `name=value`, or several joined by commas) for
    /// `app`; `place` names where they were given (for errors).
    pub fn parse(app: &'static AppInfo, pairs: &[String], place: &str) -> Result<Params, AppError> {
        let given: Vec<(String, String)> = pairs
            .iter()
            .map(|p| (p.clone(), place.to_string()))
            .collect();
        Self::parse_at(app, &given, place)
    }

    /// As [`Params::parse`], each list of pairs with the place it was
    /// written (a job file's `app_set=` lines); `place` names the
    /// application's own place (its `app=` line).
    pub fn parse_at(
        app: &'static AppInfo,
        given: &[(String, String)],
        place: &str,
    ) -> Result<Params, AppError> {
        let mut values: BTreeMap<&'static str, String> = BTreeMap::new();
        let mut places: BTreeMap<&'static str, String> = BTreeMap::new();
        for d in COMMON_PARAMS.iter().chain(app.params) {
            values.insert(d.name, d.default.to_string());
        }
        // `study=NAME` first: its pairs, then the given ones over them
        let mut pairs: Vec<(String, String)> = given
            .iter()
            .flat_map(|(p, at)| split_pairs(p).into_iter().map(move |x| (x, at.clone())))
            .collect();
        if let Some(i) = pairs
            .iter()
            .rposition(|(p, _)| p.split_once('=').is_some_and(|(k, _)| k.trim() == "study"))
        {
            let (p, at) = pairs[i].clone();
            let study = p.split_once('=').map_or("", |(_, v)| v.trim()).to_string();
            if !study.is_empty() {
                let set = crate::studysets::pairs(app.name, &study, &at)?;
                let from = format!("{at} (study={study})");
                let mut all: Vec<(String, String)> =
                    set.iter().map(|x| (x.to_string(), from.clone())).collect();
                all.append(&mut pairs);
                pairs = all;
            }
        }
        for (pair, place) in &pairs {
            let (k, v) = pair.split_once('=').ok_or_else(|| AppError::Syntax {
                place: place.to_string(),
                text: pair.clone(),
            })?;
            let k = k.trim();
            let def = COMMON_PARAMS
                .iter()
                .chain(app.params)
                .find(|d| d.name == k)
                .ok_or_else(|| AppError::UnknownParam {
                    place: place.to_string(),
                    app: app.name.to_string(),
                    param: k.to_string(),
                    accepted: COMMON_PARAMS
                        .iter()
                        .chain(app.params)
                        .map(|d| d.name)
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            values.insert(def.name, v.trim().to_string());
            places.insert(def.name, place.clone());
        }
        let p = Params {
            app: app.name,
            place: place.to_string(),
            values,
            places,
        };
        let s = p.f64("scale")?;
        if !(s > 0.0 && s <= 1000.0) {
            return Err(p.bad("scale", "must be above 0 and at most 1000"));
        }
        p.runtime_ns()?;
        p.opt_u64("threads", 1, 4096)?;
        Ok(p)
    }

    /// The application's name.
    pub fn app(&self) -> &'static str {
        self.app
    }

    fn raw(&self, name: &str) -> &str {
        self.values
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("parameter {name} is not declared by {}", self.app))
    }

    /// An error for parameter `name`'s value.
    pub fn bad(&self, name: &str, message: &str) -> AppError {
        AppError::BadValue {
            place: self.places.get(name).unwrap_or(&self.place).clone(),
            app: self.app.to_string(),
            param: name.to_string(),
            value: self.raw(name).to_string(),
            message: message.to_string(),
        }
    }

    /// Parameter `name` as text.
    pub fn str(&self, name: &str) -> &str {
        self.raw(name)
    }

    /// Parameter `name` as one of `choices`.
    pub fn choice(&self, name: &str, choices: &[&'static str]) -> Result<&'static str, AppError> {
        let v = self.raw(name);
        choices
            .iter()
            .find(|c| c.eq_ignore_ascii_case(v))
            .copied()
            .ok_or_else(|| self.bad(name, &format!("expected one of {}", choices.join(", "))))
    }

    /// Parameter `name` as a number (fio's size suffixes allowed: 4k,
    /// 16g) within `lo..=hi`.
    pub fn u64(&self, name: &str, lo: u64, hi: u64) -> Result<u64, AppError> {
        let v = self.raw(name);
        let n = storlab_workload::fio::parse_size(v)
            .map_err(|e| self.bad(name, &format!("not a number or size: {e}")))?;
        if n < lo || n > hi {
            return Err(self.bad(name, &format!("must be from {lo} to {hi}")));
        }
        Ok(n)
    }

    /// Parameter `name` as a number within `lo..=hi`, or `None` when empty.
    pub fn opt_u64(&self, name: &str, lo: u64, hi: u64) -> Result<Option<u64>, AppError> {
        if self.raw(name).is_empty() {
            return Ok(None);
        }
        self.u64(name, lo, hi).map(Some)
    }

    /// Parameter `name` as a real number.
    pub fn f64(&self, name: &str) -> Result<f64, AppError> {
        let v = self.raw(name);
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.bad(name, "not a number"))
    }

    /// Parameter `name` as a fraction from 0 to 1.
    pub fn fraction(&self, name: &str) -> Result<f64, AppError> {
        let x = self.f64(name)?;
        if !(0.0..=1.0).contains(&x) {
            return Err(self.bad(name, "must be from 0 to 1"));
        }
        Ok(x)
    }

    /// Parameter `name` as a time (fio's syntax; a bare number is in
    /// units of `default_unit_us` microseconds), ns.
    pub fn time_ns(&self, name: &str, default_unit_us: u64) -> Result<Nanos, AppError> {
        let v = self.raw(name);
        storlab_workload::fio::parse_time(v, default_unit_us)
            .map_err(|e| self.bad(name, &format!("not a time: {e}")))
    }

    /// The common `runtime` parameter (seconds by default), ns; 0: none.
    pub fn runtime_ns(&self) -> Result<Nanos, AppError> {
        self.time_ns("runtime", 1_000_000)
    }

    /// The common `threads` parameter, or `default`.
    pub fn threads(&self, default: u32) -> u32 {
        self.opt_u64("threads", 1, 4096)
            .ok()
            .flatten()
            .map_or(default, |t| t as u32)
    }

    /// The common `scale` parameter.
    pub fn scale(&self) -> f64 {
        self.f64("scale").unwrap_or(1.0)
    }

    /// `n` scaled by `scale`, at least `min`.
    pub fn scaled(&self, n: u64, min: u64) -> u64 {
        ((n as f64 * self.scale()).round() as u64).max(min)
    }

    /// Every parameter with its value, in name order (for reports).
    pub fn values(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.values.iter().map(|(k, v)| (*k, v.as_str()))
    }
}

/// Split `a=1,b=2` into pairs, keeping commas inside a value that has no
/// `=` after them (`list=a,b`).
fn split_pairs(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split(',') {
        if part.trim().is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if !part.contains('=') => {
                last.push(',');
                last.push_str(part);
            }
            _ => out.push(part.to_string()),
        }
    }
    out.retain(|p| !p.trim().is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_split_on_commas_between_pairs_only() {
        assert_eq!(split_pairs("a=1,b=2"), vec!["a=1", "b=2"]);
        assert_eq!(split_pairs("list=x,y,b=2"), vec!["list=x,y", "b=2"]);
        assert!(split_pairs(",").is_empty());
    }
}
