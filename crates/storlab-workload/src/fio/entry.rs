//! [`Entry`]: a raw option with its row of the option table, looked up
//! (an unknown option is an error naming the close matches).

use super::error::FioError;
use super::ini::RawOption;
use super::options::{lookup, suggestion, supported_list, Kind, OptDef};
use super::value::parse_bool;

/// A raw option with its table row.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub def: &'static OptDef,
    pub raw: RawOption,
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

    pub(super) fn value(&self) -> &str {
        self.raw.value.as_deref().unwrap_or("")
    }

    pub(super) fn invalid(&self, reason: impl Into<String>) -> FioError {
        FioError::InvalidValue {
            location: self.raw.location.clone(),
            option: self.raw.key.clone(),
            value: self.value().to_string(),
            reason: reason.into(),
        }
    }

    pub(super) fn flag(&self) -> Result<bool, FioError> {
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
