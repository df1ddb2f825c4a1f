//! The committed record of every row's verdict
//! (`docs/studies/verdicts.json`, [`RECORD_PATH`]): the lab compares each
//! run with it, fails when a row that held (`ok` or `input`) now misses or
//! is gone, and prints every row that moved either way. Updating the
//! record is a deliberate commit that says why: `storlab lab reproduce`
//! writes the run's own record as `verdicts.json` in its output folder,
//! to be copied over the committed one.

use std::collections::BTreeMap;

use crate::report::{Reproduction, Verdict};

/// Where the record lives in the repository.
pub const RECORD_PATH: &str = "docs/studies/verdicts.json";

/// The record as committed when this binary was built.
const COMMITTED: &str = include_str!("../../../docs/studies/verdicts.json");

/// Study name → row (`what`) → verdict.
pub type Record = BTreeMap<String, BTreeMap<String, Verdict>>;

/// The committed record.
pub fn committed() -> Record {
    serde_json::from_str(COMMITTED).expect("docs/studies/verdicts.json is a verdict record")
}

/// The record of `reps`.
pub fn record_of(reps: &[Reproduction]) -> Record {
    reps.iter()
        .map(|r| {
            (
                r.study.clone(),
                r.rows
                    .iter()
                    .map(|row| (row.what.clone(), row.verdict()))
                    .collect(),
            )
        })
        .collect()
}

/// The record as the file holds it (pretty JSON, a final newline).
pub fn to_json(record: &Record) -> String {
    serde_json::to_string_pretty(record).expect("a record serializes") + "\n"
}

/// A row whose verdict is not the recorded one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The study.
    pub study: String,
    /// The row.
    pub what: String,
    /// Its recorded verdict (`None`: a new row).
    pub from: Option<Verdict>,
    /// Its verdict now (`None`: the row is gone).
    pub to: Option<Verdict>,
}

impl Move {
    /// A row that held and now misses, or a recorded row that is gone.
    pub fn is_regression(&self) -> bool {
        matches!(
            (self.from, self.to),
            (Some(Verdict::Ok | Verdict::Input), Some(Verdict::Miss)) | (Some(_), None)
        )
    }

    /// One line for the terminal.
    pub fn describe(&self) -> String {
        let v = |v: Option<Verdict>| match v {
            None => "-".to_string(),
            Some(Verdict::Ok) => "ok".into(),
            Some(Verdict::Input) => "input".into(),
            Some(Verdict::Miss) => "miss".into(),
        };
        format!(
            "{}: {}: {} -> {}{}",
            self.study,
            self.what,
            v(self.from),
            v(self.to),
            if self.is_regression() {
                "  (REGRESSION)"
            } else {
                ""
            }
        )
    }
}

/// The rows of the studies in `now` whose verdict differs from
/// `recorded`'s (studies that did not run are not compared), in study and
/// row order.
pub fn moves(recorded: &Record, now: &Record) -> Vec<Move> {
    let mut out = Vec::new();
    let empty = BTreeMap::new();
    for (study, rows) in now {
        let before = recorded.get(study).unwrap_or(&empty);
        for (what, &v) in rows {
            let from = before.get(what).copied();
            if from != Some(v) {
                out.push(Move {
                    study: study.clone(),
                    what: what.clone(),
                    from,
                    to: Some(v),
                });
            }
        }
        for (what, &v) in before {
            if !rows.contains_key(what) {
                out.push(Move {
                    study: study.clone(),
                    what: what.clone(),
                    from: Some(v),
                    to: None,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(rows: &[(&str, Verdict)]) -> Record {
        let mut r = Record::new();
        r.insert(
            "s".into(),
            rows.iter().map(|(w, v)| (w.to_string(), *v)).collect(),
        );
        r
    }

    #[test]
    fn a_row_that_held_and_now_misses_or_is_gone_is_a_regression() {
        let before = rec(&[
            ("a", Verdict::Ok),
            ("b", Verdict::Miss),
            ("c", Verdict::Input),
            ("d", Verdict::Ok),
        ]);
        let now = rec(&[
            ("a", Verdict::Miss),
            ("b", Verdict::Ok),
            ("c", Verdict::Ok),
            ("e", Verdict::Miss),
        ]);
        let m = moves(&before, &now);
        let regressions: Vec<&str> = m
            .iter()
            .filter(|m| m.is_regression())
            .map(|m| m.what.as_str())
            .collect();
        assert_eq!(regressions, ["a", "d"]);
        // improvements and new rows are printed, not failed
        assert_eq!(m.len(), 5, "{m:?}");
        assert!(m[0].describe().ends_with("ok -> miss  (REGRESSION)"));
    }

    #[test]
    fn studies_that_did_not_run_are_not_compared() {
        let before = rec(&[("a", Verdict::Ok)]);
        assert!(moves(&before, &Record::new()).is_empty());
    }

    #[test]
    fn the_committed_record_parses() {
        assert!(!committed().is_empty());
    }
}
