//! A reproduction: each published figure of a study beside the model's,
//! with the tolerance and the verdict, plus the study's figures.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{LabError, Result};
use crate::figure::Figure;
use crate::measure::{Plan, Results};

/// How a row came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the published tolerance (or the published ordering holds),
    /// and the published value is not one of the model's inputs.
    Ok,
    /// The published value is an input of the model (a parameter set or
    /// calibrated from it) and the model reproduces it within 1 %
    /// ([`INPUT_REPRODUCED`]): the row holds by construction and says
    /// nothing of the model's power to predict. An input row the model
    /// does not reproduce that closely is scored like any other.
    Input,
    /// Outside the tolerance. With a reason, the miss is known and
    /// explained (a mechanism not modelled yet, a figure the study's own
    /// numbers contradict); without one it is a regression.
    Miss,
}

/// How close a row marked as an input must come to its published value
/// to count as one (otherwise it is scored): 1 %.
pub const INPUT_REPRODUCED: f64 = 0.01;

/// What kind of evidence a row is: the summary gives each its own median.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// A device figure: latency, bandwidth, IOPS, power, a host cost.
    Device,
    /// A device benchmark counted with an application table (Table V's
    /// XDD rows): a device figure, kept apart from both.
    Xdd,
    /// An application: a database, a file workload, a paging program.
    App,
}

impl Class {
    /// Every class, in the order the summary prints them.
    pub const ALL: [Class; 3] = [Class::Device, Class::Xdd, Class::App];

    /// The summary's label.
    pub fn label(self) -> &'static str {
        match self {
            Class::Device => "device rows",
            Class::Xdd => "XDD rows (Table V)",
            Class::App => "application rows",
        }
    }
}

/// One published result and the model's.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What is compared (the row's key in the verdict record: it names
    /// the quantity, never the model's figures).
    pub what: String,
    /// Where the study published the target (one of
    /// [`crate::places::PLACES`]): empty until [`Row::at`] says.
    pub place: String,
    /// The row's class when it is not its study's.
    pub class: Option<Class>,
    /// The published figure and its tolerance, as text.
    pub published: String,
    /// The model's figure, as text.
    pub model: String,
    /// The model's figure as a number, when it is one.
    pub value: Option<f64>,
    /// The published figure as a number, when it is one (a range's
    /// geometric middle for a range).
    pub target: Option<f64>,
    /// Relative error against the published figure: `|model / target - 1|`
    /// for a figure, the distance outside the range relative to its
    /// nearer bound for a range (0 inside); `None` for an ordering.
    pub error: Option<f64>,
    /// Within the tolerance (or the published ordering holds).
    pub pass: bool,
    /// The published value is a model input (see [`Verdict::Input`]):
    /// which input, in words.
    pub input: Option<String>,
    /// Why the row misses, when it is a known miss.
    pub reason: Option<String>,
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
            target: Some(target),
            error: Some(rel_error(value, target)),
            pass: value.is_finite() && value >= lo && value <= hi,
            input: None,
            reason: None,
            place: String::new(),
            class: None,
        }
    }

    /// The model's `value` against a published range `lo`..=`hi` (the
    /// stated bounds of an "about" or "up to").
    pub fn between(what: impl Into<String>, value: f64, lo: f64, hi: f64, unit: &str) -> Row {
        let error = if !value.is_finite() {
            f64::INFINITY
        } else if value < lo {
            rel_error(value, lo)
        } else if value > hi {
            rel_error(value, hi)
        } else {
            0.0
        };
        let (l, h) = (with_unit(lo, ""), with_unit(hi, unit));
        Row {
            what: what.into(),
            published: format!("{l}-{h}"),
            model: with_unit(value, unit),
            value: Some(value),
            target: Some((lo * hi).sqrt()),
            error: Some(error),
            pass: value.is_finite() && value >= lo && value <= hi,
            input: None,
            reason: None,
            place: String::new(),
            class: None,
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
            target: None,
            error: None,
            pass,
            input: None,
            reason: None,
            place: String::new(),
            class: None,
        }
    }

    /// Where the study published the target: one of
    /// [`crate::places::PLACES`] (`"Moneta study, Table III"`).
    pub fn at(mut self, place: &str) -> Row {
        self.place = place.to_string();
        self
    }

    /// Append `text` to the model's figure as shown (which run gave it:
    /// model detail belongs there, never in [`Row::what`]).
    pub fn model_note(mut self, text: &str) -> Row {
        self.model = format!("{} {text}", self.model);
        self
    }

    /// The row's class, when not its study's.
    pub fn class(mut self, class: Class) -> Row {
        self.class = Some(class);
        self
    }

    /// Mark the published value as a model input: `which` starts with the
    /// fitted parameter's key (`host.driver_worker_share`, `cpu_us`), whose
    /// preset or model comment names this row's place. The row counts as
    /// an input only while the model reproduces it within 1 %.
    pub fn input(mut self, which: impl Into<String>) -> Row {
        self.input = Some(which.into());
        self
    }

    /// Say why this row misses. Written only for a row that misses: the
    /// lab fails on a reason beside a row that holds ([`Row::problem`]).
    /// At most two sentences; an explanation several rows share is a note
    /// of the study ([`Reproduction::notes`]) the reason points to
    /// (`"see note [reclaim]"`).
    pub fn miss_because(mut self, reason: impl Into<String>) -> Row {
        self.reason = Some(reason.into());
        self
    }

    /// The verdict.
    pub fn verdict(&self) -> Verdict {
        if !self.pass {
            Verdict::Miss
        } else if self.is_input() {
            Verdict::Input
        } else {
            Verdict::Ok
        }
    }

    /// Marked as an input and reproduced within [`INPUT_REPRODUCED`] (a
    /// qualitative row marked as an input is one while it holds).
    fn is_input(&self) -> bool {
        self.input.is_some() && self.error.is_none_or(|e| e <= INPUT_REPRODUCED)
    }

    /// What is wrong with the row as evidence, if anything: a miss with no
    /// reason, a reason beside a row that holds, an empty or long reason,
    /// a target with no published place. `notes` are the study's note ids.
    pub fn problem(&self, notes: &[&str]) -> Option<String> {
        if self.place.is_empty() {
            return Some("no published place for its target (Row::at)".into());
        }
        if !crate::places::PLACES.contains(&self.place.as_str()) {
            return Some(format!(
                "its place {:?} is not a published place (crate::places::PLACES)",
                self.place
            ));
        }
        match (&self.reason, self.pass) {
            (None, false) => Some("misses with no known reason".into()),
            (Some(_), true) => Some(
                "holds but carries a miss reason (a reason is written only for a row that misses)"
                    .into(),
            ),
            (Some(r), false) => reason_problem(r, notes),
            (None, true) => None,
        }
    }

    /// The verdict as the tables show it.
    pub fn verdict_text(&self) -> String {
        match (self.verdict(), &self.reason) {
            (Verdict::Ok, _) => "ok".into(),
            (Verdict::Input, _) => "input".into(),
            (Verdict::Miss, None) => "MISS".into(),
            (Verdict::Miss, Some(r)) => format!("MISS (known: {r})"),
        }
    }
}

/// `rows` with `place` given to every row that names none (a study whose
/// rows mostly come from one table or figure).
pub fn at_all(rows: Vec<Row>, place: &str) -> Vec<Row> {
    rows.into_iter()
        .map(|r| if r.place.is_empty() { r.at(place) } else { r })
        .collect()
}

/// The longest reason the lab accepts, in characters.
pub const REASON_MAX_CHARS: usize = 400;

/// Why `reason` is not a usable miss reason, if it is not: empty, more
/// than two sentences or [`REASON_MAX_CHARS`], or pointing to a note
/// (`note [id]`) the study does not have.
pub fn reason_problem(reason: &str, notes: &[&str]) -> Option<String> {
    let r = reason.trim();
    if r.is_empty() {
        return Some("misses with an empty reason".into());
    }
    let sentences = sentence_count(r);
    if sentences > 2 {
        return Some(format!(
            "its reason has {sentences} sentences (at most two; put a shared explanation in a study note)"
        ));
    }
    if r.chars().count() > REASON_MAX_CHARS {
        return Some(format!(
            "its reason has {} characters (at most {REASON_MAX_CHARS}; put a shared explanation in a study note)",
            r.chars().count()
        ));
    }
    let mut rest = r;
    while let Some(i) = rest.find("note [") {
        let after = &rest[i + 6..];
        let Some(end) = after.find(']') else {
            return Some("its reason opens a note reference it does not close".into());
        };
        let id = &after[..end];
        if !notes.contains(&id) {
            return Some(format!(
                "its reason points to note [{id}], which the study does not have"
            ));
        }
        rest = &after[end..];
    }
    None
}

/// Sentences in `text`: a full stop, question or exclamation mark ends
/// one when the text ends there or the next word starts with a capital
/// letter ("Fig. 4", "e.g. the", "2.6.28" end none).
pub fn sentence_count(text: &str) -> usize {
    let chars: Vec<char> = text.trim().chars().collect();
    let mut n = 0;
    for (i, &c) in chars.iter().enumerate() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let rest = &chars[i + 1..];
        if rest.iter().all(|c| c.is_whitespace() || *c == ')') {
            n += 1;
            break;
        }
        if rest.first().is_some_and(|c| c.is_whitespace()) {
            let next = rest.iter().find(|c| !c.is_whitespace());
            // an abbreviation ("Fig. 4", "Table V. The"): only a capital
            // after a word of more than three letters ends a sentence
            let word: String = chars[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_alphanumeric())
                .collect();
            if next.is_some_and(|c| c.is_uppercase())
                && !matches!(
                    word.chars().rev().collect::<String>().as_str(),
                    "Fig" | "Sec" | "al" | "vs" | "cf" | "e.g" | "i.e" | "no"
                )
            {
                n += 1;
            }
        }
    }
    n.max(1)
}

/// `|value / target - 1|`, infinite for a value that is not a number.
pub fn rel_error(value: f64, target: f64) -> f64 {
    if !value.is_finite() || target == 0.0 {
        f64::INFINITY
    } else {
        (value / target - 1.0).abs()
    }
}

/// How the model does over many rows: the figures the project's bar is
/// set in (median absolute error over the scored numeric rows, how many
/// are off by more than 2x, and how many hold by construction).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// All rows.
    pub rows: usize,
    /// Rows whose published value is a model input (reproduced within 1 %).
    pub inputs: usize,
    /// Rows that hold and are not inputs.
    pub ok: usize,
    /// Missed rows with a known reason.
    pub known_misses: usize,
    /// Rows the lab fails on ([`Row::problem`]): a miss with no reason,
    /// a reason beside a row that holds, a target with no published place.
    pub misses: usize,
    /// Numeric rows that are not inputs (the ones the error is taken over).
    pub scored: usize,
    /// Median relative error over the scored rows.
    pub median_error: f64,
    /// Median relative error over the numeric inputs (the fitted rows,
    /// reported apart from the predictions).
    pub input_median_error: f64,
    /// Scored rows whose model figure is more than twice, or less than
    /// half, the published one.
    pub beyond_2x: usize,
    /// Rows that hold by construction without saying so: a target with no
    /// published place (from a preset, the model, or inputs). Must be 0.
    pub by_construction: usize,
}

impl Summary {
    /// Over every row of `reps`.
    pub fn of<'a>(reps: impl IntoIterator<Item = &'a Reproduction>) -> Summary {
        Summary::of_rows(
            reps.into_iter()
                .flat_map(|r| r.rows.iter().map(move |row| (r, row))),
        )
    }

    /// Over the rows of class `class` in `reps`.
    pub fn of_class<'a>(reps: impl IntoIterator<Item = &'a Reproduction>, class: Class) -> Summary {
        Summary::of_rows(
            reps.into_iter()
                .flat_map(|r| r.rows.iter().map(move |row| (r, row)))
                .filter(|(r, row)| r.class_of(row) == class),
        )
    }

    fn of_rows<'a>(rows: impl Iterator<Item = (&'a Reproduction, &'a Row)>) -> Summary {
        let mut s = Summary::default();
        let mut errors = Vec::new();
        let mut input_errors = Vec::new();
        for (rep, r) in rows {
            s.rows += 1;
            let notes = rep.note_ids();
            let problem = r.problem(&notes);
            match (r.verdict(), &problem) {
                (_, Some(_)) => s.misses += 1,
                (Verdict::Input, _) => s.inputs += 1,
                (Verdict::Ok, _) => s.ok += 1,
                (Verdict::Miss, None) => s.known_misses += 1,
            }
            if r.place.is_empty() || !crate::places::PLACES.contains(&r.place.as_str()) {
                s.by_construction += 1;
            }
            if let (Some(e), Some(v), Some(t)) = (r.error, r.value, r.target) {
                if r.verdict() == Verdict::Input {
                    input_errors.push(e);
                    continue;
                }
                errors.push(e);
                let ratio = v / t;
                if !(0.5..=2.0).contains(&ratio) {
                    s.beyond_2x += 1;
                }
            }
        }
        s.scored = errors.len();
        s.median_error = median(errors);
        s.input_median_error = median(input_errors);
        s
    }

    /// One line of the scored rows only, after `label`.
    pub fn write_scored(&self, label: &str, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            w,
            "  {label}: {} scored numeric rows, median error {:.1}%, {} beyond 2x; {}; {} by construction",
            self.scored,
            self.median_error * 100.0,
            self.beyond_2x,
            self.inputs_text(),
            self.by_construction
        )
    }

    /// The inputs' count, and their median error when there are any.
    pub fn inputs_text(&self) -> String {
        match self.inputs {
            0 => "0 inputs".into(),
            n => format!(
                "{n} inputs (fitted, median error {:.1}%)",
                self.input_median_error * 100.0
            ),
        }
    }

    /// One paragraph for the terminal.
    pub fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            w,
            "all studies: {} rows: {} ok, {} inputs (hold by construction, said so), {} known misses, {} failing",
            self.rows, self.ok, self.inputs, self.known_misses, self.misses
        )?;
        writeln!(
            w,
            "  over the {} scored numeric rows: median error {:.1}%, {} beyond 2x; {} rows by construction",
            self.scored,
            self.median_error * 100.0,
            self.beyond_2x,
            self.by_construction
        )
    }

    /// The summary of every class apart (device, XDD, application rows)
    /// after the whole, as `storlab lab reproduce` ends.
    pub fn write_by_class(reps: &[Reproduction], w: &mut dyn Write) -> std::io::Result<()> {
        Summary::of(reps).write_text(w)?;
        for class in Class::ALL {
            let s = Summary::of_class(reps, class);
            if s.rows > 0 {
                s.write_scored(class.label(), w)?;
            }
        }
        Ok(())
    }
}

/// The lab's totals as a Markdown page (what `storlab lab reproduce`
/// prints at its end, by class, and each study's counts), for
/// docs/studies/totals.md.
pub fn totals_markdown(reps: &[Reproduction]) -> std::io::Result<String> {
    let mut text = Vec::new();
    Summary::write_by_class(reps, &mut text)?;
    let mut s = String::from(
        "# The lab's totals\n\n\
         Generated by `storlab lab reproduce` (the `totals.md` it writes beside its \
         reports) and copied here when the totals change; the lab's test fails while \
         this page and the lab disagree. Inputs are rows whose published figure a \
         model was fitted to; every other row is a prediction.\n\n```text\n",
    );
    s.push_str(&String::from_utf8_lossy(&text));
    s.push_str("```\n\n| study | rows | ok | inputs | known misses | scored | median error | beyond 2x |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in reps {
        let t = Summary::of([r]);
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.1}% | {} |\n",
            r.study,
            t.rows,
            t.ok,
            t.inputs,
            t.known_misses,
            t.scored,
            t.median_error * 100.0,
            t.beyond_2x
        ));
    }
    Ok(s)
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
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
    /// The class of its rows (a row may say another, [`Row::class`]).
    pub class: Class,
    /// The one rule for the state of the device and the files before a
    /// measurement, from what the study says, applied to every row.
    pub state_rule: String,
    /// Explanations several rows' miss reasons share, written once
    /// (`(id, text)`; a reason points to one as `note [id]`).
    pub notes: Vec<(String, String)>,
    /// Published result against model.
    pub rows: Vec<Row>,
    /// The study's figures, drawn from the model.
    pub figures: Vec<Figure>,
}

impl Reproduction {
    /// The class of `row` in this study.
    pub fn class_of(&self, row: &Row) -> Class {
        row.class.unwrap_or(self.class)
    }

    /// The ids of the study's notes.
    pub fn note_ids(&self) -> Vec<&str> {
        self.notes.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// The rows the lab fails on, each with what is wrong
    /// ([`Row::problem`]): what makes `storlab lab reproduce` fail.
    pub fn problems(&self) -> Vec<(&Row, String)> {
        let notes = self.note_ids();
        self.rows
            .iter()
            .filter_map(|r| r.problem(&notes).map(|p| (r, p)))
            .collect()
    }

    /// The rows the lab fails on ([`Reproduction::problems`]).
    pub fn failures(&self) -> Vec<&Row> {
        self.problems().into_iter().map(|(r, _)| r).collect()
    }

    /// The rows outside their tolerance with a valid reason.
    pub fn known_misses(&self) -> usize {
        let notes = self.note_ids();
        self.rows
            .iter()
            .filter(|r| !r.pass && r.problem(&notes).is_none())
            .count()
    }

    /// Every row outside its tolerance, explained or not.
    pub fn misses(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| !r.pass).collect()
    }

    /// The table as aligned text.
    pub fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "{}: {}", self.study, self.title)?;
        writeln!(w, "  {}", self.setting)?;
        writeln!(w, "  State before a measurement: {}", self.state_rule)?;
        // a column's width: its widest cell, at least its heading
        let width = |cell: &dyn Fn(&Row) -> &str, heading: &str| {
            self.rows
                .iter()
                .map(|r| cell(r).chars().count())
                .chain([heading.chars().count()])
                .max()
                .unwrap_or(0)
        };
        let ww = width(&|r| &r.what, "what");
        let wl = width(&|r| &r.place, "place");
        let wp = width(&|r| &r.published, "published");
        let wm = width(&|r| &r.model, "model");
        writeln!(
            w,
            "  {:<ww$}  {:<wl$}  {:<wp$}  {:<wm$}  verdict",
            "what", "place", "published", "model"
        )?;
        let notes = self.note_ids();
        for r in &self.rows {
            writeln!(
                w,
                "  {}  {}  {}  {}  {}",
                pad(&r.what, ww),
                pad(&r.place, wl),
                pad(&r.published, wp),
                pad(&r.model, wm),
                r.verdict_text()
            )?;
            if let Some(p) = r.problem(&notes) {
                writeln!(w, "    FAILS: {p}")?;
            }
        }
        for (id, text) in &self.notes {
            writeln!(w, "  note [{id}]: {text}")?;
        }
        let miss = self.misses().len();
        let known = self.known_misses();
        let inputs = self
            .rows
            .iter()
            .filter(|r| r.verdict() == Verdict::Input)
            .count();
        writeln!(
            w,
            "  {} of {} within the published tolerance{}{}",
            self.rows.len() - miss,
            self.rows.len(),
            if inputs > 0 {
                format!(", {inputs} of them model inputs")
            } else {
                String::new()
            },
            match (miss, known) {
                (0, _) => String::new(),
                (m, 0) => format!(" ({m} missed)"),
                (m, k) => format!(" ({m} missed, {k} of them known)"),
            }
        )
    }

    /// The table and the figures' files as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "# {}: {}\n\n{}\n\nState before a measurement: {}\n\n",
            self.study, self.title, self.setting, self.state_rule
        );
        s.push_str("| what | place | published | model | verdict |\n|---|---|---|---|---|\n");
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                r.what.replace('|', "\\|"),
                r.place.replace('|', "\\|"),
                r.published.replace('|', "\\|"),
                r.model.replace('|', "\\|"),
                match r.verdict() {
                    Verdict::Miss => format!("**{}**", r.verdict_text().replace('|', "\\|")),
                    _ => r.verdict_text(),
                }
            ));
        }
        for (id, text) in &self.notes {
            s.push_str(&format!("\nNote [{id}]: {text}\n"));
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
mod tests;
