//! A reproduction: each published figure of a study beside the model's,
//! with the tolerance and the verdict, plus the study's figures.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::figure::Figure;
use crate::measure::{Plan, Results};

/// One published result and the model's.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What is compared.
    pub what: String,
    /// The published figure and its tolerance, as text.
    pub published: String,
    /// The model's figure, as text.
    pub model: String,
    /// The model's figure as a number, when it is one.
    pub value: Option<f64>,
    /// Within the tolerance (or the published ordering holds).
    pub pass: bool,
}

impl Row {
    /// The model's `value` against `target` ±`rel` (0.1 for ±10 %).
    pub fn within(what: impl Into<String>, value: f64, target: f64, rel: f64, unit: &str) -> Row {
        let (lo, hi) = (target * (1.0 - rel), target * (1.0 + rel));
        Row {
            what: what.into(),
            published: format!("{} ±{}%", with_unit(target, unit), (rel * 100.0).round()),
            model: with_unit(value, unit),
            value: Some(value),
            pass: value.is_finite() && value >= lo && value <= hi,
        }
    }

    /// A published ordering or bound (`published` says it in words) and
    /// the model's figures that decide it.
    pub fn holds(what: impl Into<String>, published: &str, model: String, pass: bool) -> Row {
        Row {
            what: what.into(),
            published: published.to_string(),
            model,
            value: None,
            pass,
        }
    }
}

/// Three significant figures at most, and the unit.
pub fn with_unit(v: f64, unit: &str) -> String {
    let s = if v == 0.0 || !v.is_finite() {
        format!("{v}")
    } else {
        let digits = (3 - 1 - v.abs().log10().floor() as i32).max(0) as usize;
        format!("{v:.digits$}")
    };
    if unit.is_empty() {
        s
    } else if unit == "%" || unit == "x" {
        format!("{s}{unit}")
    } else {
        format!("{s} {unit}")
    }
}

/// A study reproduced: its rows and figures.
#[derive(Clone, Debug, Serialize)]
pub struct Reproduction {
    /// Short name (`moneta`).
    pub study: String,
    /// The study, as cited.
    pub title: String,
    /// The workload and setting the rows share.
    pub setting: String,
    /// Published result against model.
    pub rows: Vec<Row>,
    /// The study's figures, drawn from the model.
    pub figures: Vec<Figure>,
}

impl Reproduction {
    /// The rows outside their tolerance.
    pub fn failures(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| !r.pass).collect()
    }

    /// The table as aligned text.
    pub fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "{}: {}", self.study, self.title)?;
        writeln!(w, "  {}", self.setting)?;
        let ww = self
            .rows
            .iter()
            .map(|r| r.what.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let wp = self
            .rows
            .iter()
            .map(|r| r.published.chars().count())
            .max()
            .unwrap_or(9)
            .max(9);
        let wm = self
            .rows
            .iter()
            .map(|r| r.model.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        writeln!(
            w,
            "  {:<ww$}  {:<wp$}  {:<wm$}  verdict",
            "what", "published", "model"
        )?;
        for r in &self.rows {
            writeln!(
                w,
                "  {}  {}  {}  {}",
                pad(&r.what, ww),
                pad(&r.published, wp),
                pad(&r.model, wm),
                if r.pass { "ok" } else { "MISS" }
            )?;
        }
        let miss = self.failures().len();
        writeln!(
            w,
            "  {} of {} within the published tolerance{}",
            self.rows.len() - miss,
            self.rows.len(),
            if miss > 0 {
                format!(" ({miss} missed)")
            } else {
                String::new()
            }
        )
    }

    /// The table and the figures' files as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("# {}: {}\n\n{}\n\n", self.study, self.title, self.setting);
        s.push_str("| what | published | model | verdict |\n|---|---|---|---|\n");
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                r.what.replace('|', "\\|"),
                r.published.replace('|', "\\|"),
                r.model.replace('|', "\\|"),
                if r.pass { "ok" } else { "**miss**" }
            ));
        }
        for f in &self.figures {
            s.push_str(&format!(
                "\n## {}\n\n![{}]({}.svg)\n\nData: [{}.csv]({}.csv)\n",
                f.title, f.title, f.id, f.id, f.id
            ));
        }
        s
    }

    /// Write `<study>.md`, `<study>.json` and each figure's `.svg` and
    /// `.csv` into `dir` (created if missing); the paths written.
    pub fn write_files(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| LabError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut written = Vec::new();
        let md = dir.join(format!("{}.md", self.study));
        std::fs::write(&md, self.to_markdown()).map_err(io(&md))?;
        written.push(md);
        let json = dir.join(format!("{}.json", self.study));
        let text = serde_json::to_string_pretty(self).expect("a reproduction serializes");
        std::fs::write(&json, text + "\n").map_err(io(&json))?;
        written.push(json);
        for f in &self.figures {
            let svg = dir.join(format!("{}.svg", f.id));
            f.write_svg(&svg)?;
            written.push(svg);
            let csv = dir.join(format!("{}.csv", f.id));
            std::fs::write(&csv, f.to_csv()).map_err(io(&csv))?;
            written.push(csv);
        }
        Ok(written)
    }
}

fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    format!("{s}{}", " ".repeat(w.saturating_sub(n)))
}

/// A study ready to run: its runs, and how to read the reproduction off
/// their results.
pub struct Prepared {
    /// The runs.
    pub plan: Plan,
    /// Rows and figures from the results.
    pub finish: Box<dyn FnOnce(&Results) -> Reproduction + Send>,
}

impl Prepared {
    /// Run the plan (in parallel; `progress` once per run) and finish.
    pub fn run(self, progress: &(dyn Fn() + Sync)) -> Result<Reproduction> {
        let results = self.plan.run(progress)?;
        Ok((self.finish)(&results))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_hold_inside_the_tolerance_only() {
        assert!(Row::within("x", 11.0, 10.0, 0.10, "µs").pass);
        assert!(Row::within("x", 9.0, 10.0, 0.10, "µs").pass);
        assert!(!Row::within("x", 11.01, 10.0, 0.10, "µs").pass);
        assert!(!Row::within("x", 8.99, 10.0, 0.10, "µs").pass);
        assert!(!Row::within("x", f64::NAN, 10.0, 0.10, "µs").pass);
        let r = Row::within("lat", 22.94, 21.0, 0.10, "µs");
        assert_eq!(
            (r.published.as_str(), r.model.as_str()),
            ("21.0 µs ±10%", "22.9 µs")
        );
        assert_eq!(Row::within("s", 67.49, 62.0, 0.1, "%").model, "67.5%");
    }

    #[test]
    fn a_missed_row_shows_in_every_output() {
        let rep = Reproduction {
            study: "s".into(),
            title: "t".into(),
            setting: "w".into(),
            rows: vec![
                Row::within("good", 1.0, 1.0, 0.1, "x"),
                Row::holds("bad", "ordering", "reversed".into(), false),
            ],
            figures: vec![],
        };
        assert_eq!(rep.failures().len(), 1);
        let mut text = Vec::new();
        rep.write_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("MISS")
                && text.contains("1 of 2 within the published tolerance (1 missed)"),
            "{text}"
        );
        assert!(rep
            .to_markdown()
            .contains("| bad | ordering | reversed | **miss** |"));
    }
}
