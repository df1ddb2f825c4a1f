//! The lab's report as HTML: one self-contained page per study and an
//! index (`storlab lab reproduce --html DIR`, and the Python package's
//! `storlab.reproduce(..., html=DIR)`).
//!
//! A study's page holds its table (published beside model, the verdict
//! coloured: `ok`, `input`, `MISS (known: why)`, `FAIL`), each figure
//! inline as the SVG [`Figure::to_svg`] draws (the same drawing as the
//! `.svg` file `storlab lab reproduce` writes), the resolved configuration
//! of every device preset the study's runs use (every key with its value,
//! source comment and the file that set it, as `storlab devices show`
//! prints it), and how the figures were made: the command, seed and
//! version, and every run of the study as the `storlab sim` command that
//! repeats it. Pages carry their style in a `<style>` element and need no
//! script, no other file and no network: they open from disk.
//!
//! Text is escaped with the `html-escape` crate (text nodes and
//! double-quoted attributes), a well-kept crate made for exactly this;
//! the SVG is plotters' own output, which escapes its text itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

use crate::error::{LabError, Result};
use crate::figure::Figure;
use crate::measure::Spec;
use crate::report::{Reproduction, Row, Summary, Verdict};

/// How the reproductions were made, shown on every page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SiteMeta {
    /// The command that made them, as the user typed it
    /// (`storlab lab reproduce moneta --html report`, or the Python call).
    pub command: String,
    /// The seed given for every run, when one was (`None`: each run's own
    /// seed, which the page lists with the run; the studies use seed 1).
    pub seed: Option<u64>,
    /// storlab's version (the crates' version, `0.1.0`).
    pub version: String,
    /// `git describe --always --dirty` of the source tree, when known.
    pub git: Option<String>,
}

impl SiteMeta {
    /// For `command`: this build's version, the source tree's `git
    /// describe` when the tree is still where it was built (see
    /// [`SiteMeta::git_describe`]), no common seed.
    pub fn new(command: impl Into<String>) -> SiteMeta {
        SiteMeta {
            command: command.into(),
            seed: None,
            version: env!("CARGO_PKG_VERSION").to_string(),
            git: SiteMeta::git_describe(),
        }
    }

    /// `git describe --always --dirty` run in the directory this crate
    /// was built from; `None` when that is not a git work tree any more,
    /// or git is missing (cheap: one process, no network).
    pub fn git_describe() -> Option<String> {
        let dir = env!("CARGO_MANIFEST_DIR");
        let out = std::process::Command::new("git")
            .args(["-C", dir, "describe", "--always", "--dirty"])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !s.is_empty()).then_some(s)
    }
}

/// Write `index.html` and one `<study>.html` per reproduction into `dir`
/// (created if missing); the paths written, index first. Each page is
/// self-contained (inline style and SVG, no script, no network). The
/// devices and runs a page lists come from the study's plan
/// ([`crate::studies::prepare`]); a reproduction that is not one of the
/// lab's studies gets its table and figures only.
pub fn write_site(dir: &Path, reps: &[Reproduction], meta: &SiteMeta) -> Result<Vec<PathBuf>> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LabError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut written = Vec::new();
    let index = dir.join("index.html");
    std::fs::write(&index, index_page(reps, meta)).map_err(io(&index))?;
    written.push(index);
    for rep in reps {
        let page = dir.join(page_name(&rep.study));
        std::fs::write(&page, study_page(rep, meta)?).map_err(io(&page))?;
        written.push(page);
    }
    Ok(written)
}

/// The file name of a study's page: `<study>.html`, with any character
/// other than ASCII letters, digits, `-` and `_` replaced by `_`.
pub fn page_name(study: &str) -> String {
    let stem: String = study
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = if stem.is_empty() || stem == "index" {
        format!("study-{stem}")
    } else {
        stem
    };
    format!("{stem}.html")
}

const STYLE: &str = "
body{font-family:sans-serif;margin:1.5em auto;max-width:1150px;padding:0 1em;color:#1a1a1a;background:#fff}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
th,td{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#e8e8e8}
td.num{text-align:right;white-space:nowrap}
.v-ok{background:#cdeccd;color:#0f4a17}
.v-input{background:#d9e2f5;color:#1f3a78}
.v-known{background:#fde9b0;color:#5c3d00}
.v-fail{background:#f5b8b8;color:#7a0b0b;font-weight:bold}
figure{margin:1em 0;padding:.5em;border:1px solid #ddd}
figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:.92em;margin-top:.4em}
.left-out{color:#7a0b0b}
pre,code{font-family:monospace;font-size:.88em}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto;white-space:pre-wrap}
details{margin:.4em 0}summary{cursor:pointer}
.meta td:first-child{font-weight:bold}
";

fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        text(title)
    )
}

const TAIL: &str = "</body>\n</html>\n";

/// The verdict as the pages show it, and its CSS class: `ok`, `input`,
/// `MISS (known: why)` or `FAIL` (a miss with no known reason).
pub fn verdict_cell(r: &Row) -> (String, &'static str) {
    match r.verdict() {
        Verdict::Ok => ("ok".into(), "v-ok"),
        Verdict::Input => ("input".into(), "v-input"),
        Verdict::Miss if r.reason.is_some() => (r.verdict_text(), "v-known"),
        Verdict::Miss => ("FAIL".into(), "v-fail"),
    }
}

fn meta_table(meta: &SiteMeta) -> String {
    let mut s = String::from("<table class=\"meta\">\n");
    s.push_str(&format!(
        "<tr><td>command</td><td><code>{}</code></td></tr>\n",
        text(&meta.command)
    ));
    s.push_str(&format!(
        "<tr><td>seed</td><td>{}</td></tr>\n",
        match meta.seed {
            Some(seed) => seed.to_string(),
            None => "each run's own (listed with the run; the studies use 1)".into(),
        }
    ));
    s.push_str(&format!(
        "<tr><td>version</td><td>storlab {}{}</td></tr>\n",
        text(&meta.version),
        meta.git
            .as_deref()
            .map(|g| format!(" ({})", text(g)))
            .unwrap_or_default()
    ));
    s.push_str("</table>\n");
    s
}

/// The index page: the run's summary and one line per study, linking to
/// its page.
pub fn index_page(reps: &[Reproduction], meta: &SiteMeta) -> String {
    let mut s = head("storlab: reproductions of the published studies");
    s.push_str("<h1>storlab: reproductions of the published studies</h1>\n");
    s.push_str(&meta_table(meta));
    let sum = Summary::of(reps);
    s.push_str(&format!(
        "<p>{} rows: {} ok, {} inputs (hold by construction), {} known misses, {} failing (FAIL). \
         Over the {} scored numeric rows: median error {:.1}%, {} beyond 2x; {} rows by construction.</p>\n",
        sum.rows,
        sum.ok,
        sum.inputs,
        sum.known_misses,
        sum.misses,
        sum.scored,
        sum.median_error * 100.0,
        sum.beyond_2x,
        sum.by_construction
    ));
    s.push_str("<ul>\n");
    for class in crate::report::Class::ALL {
        let c = Summary::of_class(reps, class);
        if c.rows > 0 {
            s.push_str(&format!(
                "<li>{}: {} scored numeric rows, median error {:.1}%, {} beyond 2x; {}; {} by construction</li>\n",
                text(class.label()),
                c.scored,
                c.median_error * 100.0,
                c.beyond_2x,
                text(&c.inputs_text()),
                c.by_construction
            ));
        }
    }
    s.push_str("</ul>\n");
    s.push_str(
        "<table class=\"studies\">\n<tr><th>study</th><th>title</th><th>rows</th><th>ok</th>\
         <th>input</th><th>MISS (known)</th><th>FAIL</th><th>figures</th></tr>\n",
    );
    for rep in reps {
        let count = |f: &dyn Fn(&Row) -> bool| rep.rows.iter().filter(|r| f(r)).count();
        let fail = rep.failures().len();
        s.push_str(&format!(
            "<tr><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td>\
             <td class=\"num v-ok\">{}</td><td class=\"num v-input\">{}</td>\
             <td class=\"num v-known\">{}</td><td class=\"num{}\">{}</td><td class=\"num\">{}</td></tr>\n",
            attr(&page_name(&rep.study)),
            text(&rep.study),
            text(&rep.title),
            rep.rows.len(),
            count(&|r| r.verdict() == Verdict::Ok),
            count(&|r| r.verdict() == Verdict::Input),
            rep.known_misses(),
            if fail > 0 { " v-fail" } else { "" },
            fail,
            rep.figures.len()
        ));
    }
    s.push_str("</table>\n");
    s.push_str(TAIL);
    s
}

/// One study's page (see the module's documentation).
pub fn study_page(rep: &Reproduction, meta: &SiteMeta) -> Result<String> {
    let mut s = head(&format!("{}: {}", rep.study, rep.title));
    s.push_str("<p><a href=\"index.html\">all studies</a></p>\n");
    s.push_str(&format!(
        "<h1>{}: {}</h1>\n<p>{}</p>\n",
        text(&rep.study),
        text(&rep.title),
        text(&rep.setting)
    ));
    s.push_str("<h2>Published and model</h2>\n");
    s.push_str(&rows_table(rep));
    if !rep.figures.is_empty() {
        s.push_str("<h2>Figures</h2>\n");
        for f in &rep.figures {
            s.push_str(&figure_html(f)?);
        }
    }
    let runs = study_runs(&rep.study);
    s.push_str("<h2>Devices</h2>\n");
    match &runs {
        Some(runs) => s.push_str(&devices_html(runs, &named_presets(rep))),
        None => s.push_str("<p>Not one of the lab's studies: no runs or devices to list.</p>\n"),
    }
    s.push_str("<h2>How the figures were made</h2>\n");
    s.push_str(&meta_table(meta));
    match &runs {
        Some(runs) if !runs.is_empty() => s.push_str(&runs_html(runs)),
        Some(_) => s.push_str(&format!(
            "<p>This study runs its simulations itself (the paging model's own driver, not \
             <code>storlab sim</code> job runs): see <code>crates/storlab-lab/src/studies/{}.rs</code>; \
             <code>storlab paging</code> runs the same model from the command line.</p>\n",
            text(&rep.study.replace('-', "_"))
        )),
        None => {}
    }
    s.push_str(TAIL);
    Ok(s)
}

fn rows_table(rep: &Reproduction) -> String {
    let s = String::from(
        "<p>State before a measurement: {}</p>\n<table class=\"rows\">\n<tr><th>what</th><th>place</th><th>published</th><th>model</th>\
         <th>error</th><th>verdict</th></tr>\n",
    );
    let mut s = s.replace("{}", &text(&rep.state_rule));
    for r in &rep.rows {
        let (v, class) = verdict_cell(r);
        let err = match r.error {
            Some(e) if e.is_finite() => format!("{:.1}%", e * 100.0),
            Some(_) => "∞".into(),
            None => String::new(),
        };
        let input = r
            .input
            .as_deref()
            .map(|i| format!("<br><small>input: {}</small>", text(i)))
            .unwrap_or_default();
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"{class}\">{}{input}</td></tr>\n",
            text(&r.what),
            text(&r.place),
            text(&r.published),
            text(&r.model),
            err,
            text(&v)
        ));
    }
    let miss = rep.misses().len();
    s.push_str("</table>\n");
    for (id, note) in &rep.notes {
        s.push_str(&format!(
            "<p class=\"note\">Note [{}]: {}</p>\n",
            text(id),
            text(note)
        ));
    }
    s.push_str(&format!(
        "<p>{} of {} within the published tolerance; {} known misses, {} FAIL.</p>\n",
        rep.rows.len() - miss,
        rep.rows.len(),
        rep.known_misses(),
        rep.failures().len()
    ));
    s
}

/// A figure as HTML: the SVG inline, the caption with every point left
/// out of the drawing and why.
pub fn figure_html(f: &Figure) -> Result<String> {
    let svg = f.to_svg()?;
    // an XML prolog is not allowed inside HTML
    let svg = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => &svg[..],
    };
    let mut s = format!(
        "<figure id=\"{}\">\n{}\n<figcaption><b>{}</b>",
        attr(&f.id),
        svg.trim_end(),
        text(&f.title)
    );
    let left = f.left_out();
    if !left.is_empty() {
        s.push_str("<br><span class=\"left-out\">Points left out of the drawing (marked × on the x axis):</span><ul>");
        for l in &left {
            s.push_str(&format!("<li>{}</li>", text(&l.to_string())));
        }
        s.push_str("</ul>");
    }
    s.push_str("</figcaption>\n</figure>\n");
    Ok(s)
}

/// The runs of study `name`, from its plan (`None` for a name that is
/// not one of the lab's studies).
fn study_runs(name: &str) -> Option<Vec<Spec>> {
    crate::studies::prepare(name)
        .ok()
        .map(|p| p.plan.specs().to_vec())
}

/// A value that names a preset (a `swap.device`, a tier's members...).
fn preset_named<'a>(v: &'a str, names: &BTreeSet<String>) -> Option<&'a str> {
    let v = v.trim().trim_matches('"').trim_matches('\'');
    names.contains(v).then_some(v)
}

/// The presets a study names without running them as [`Spec`]s (the
/// paging studies drive the swap model themselves): their device lists,
/// and any preset named in the study's text, rows or figures' legends.
fn named_presets(rep: &Reproduction) -> Vec<String> {
    let mut v: Vec<String> = match rep.study.as_str() {
        "paging" => crate::studies::paging::DEVICES
            .iter()
            .map(|d| d.1.to_string())
            .collect(),
        "apps-paging" => crate::studies::apps_paging::DEVICES
            .iter()
            .map(|d| d.1.to_string())
            .collect(),
        _ => Vec::new(),
    };
    if rep.study.contains("paging") {
        v.push("swap-linux".into());
    }
    let names: BTreeSet<String> = PresetStore::default()
        .list()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let mut words = vec![rep.setting.as_str()];
    for r in &rep.rows {
        words.extend([r.what.as_str(), r.model.as_str()]);
    }
    for f in &rep.figures {
        for p in &f.panels {
            words.extend(p.series.iter().map(|s| s.label.as_str()));
        }
    }
    for w in words {
        for t in w.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
            if names.contains(t) {
                v.push(t.to_string());
            }
        }
    }
    v
}

fn devices_html(runs: &[Spec], named: &[String]) -> String {
    let store = PresetStore::default();
    let names: BTreeSet<String> = store.list().into_iter().map(|(n, _)| n).collect();
    // device -> distinct override sets and how many runs use each
    let mut uses: BTreeMap<&str, BTreeMap<&[String], usize>> = BTreeMap::new();
    for r in runs {
        *uses
            .entry(r.device.as_str())
            .or_default()
            .entry(r.overrides.as_slice())
            .or_default() += 1;
    }
    // the presets to show: those run, and those their values or the
    // runs' overrides name (a swap device, a cache's members), in turn
    let mut todo: Vec<String> = uses.keys().rev().map(|d| d.to_string()).collect();
    // the presets the study only names come after those it runs
    let mut shown_last: Vec<String> = named
        .iter()
        .filter(|n| names.contains(*n) && !uses.contains_key(n.as_str()))
        .cloned()
        .collect();
    shown_last.reverse();
    todo.splice(0..0, shown_last);
    for r in runs {
        for o in &r.overrides {
            if let Some((_, v)) = o.split_once('=') {
                for part in v.split([',', '[', ']', ' ']) {
                    if let Some(n) = preset_named(part, &names) {
                        todo.push(n.to_string());
                    }
                }
            }
        }
    }
    let mut shown = BTreeSet::new();
    let mut s = String::from(
        "<p>Each preset the study's runs use, resolved (every key, its value, its source and the file \
         that set it, as <code>storlab devices show NAME</code> prints it), and the overrides its runs \
         set on top of it.</p>\n",
    );
    while let Some(d) = todo.pop() {
        if !shown.insert(d.clone()) {
            continue;
        }
        s.push_str(&format!(
            "<details class=\"device\"><summary><b>{}</b>",
            text(&d)
        ));
        match SystemConfig::load(&store, &d, &[]) {
            Ok((resolved, _)) => {
                s.push_str(&format!(
                    " (resolved from {}; {} keys){}</summary>\n",
                    text(&resolved.chain.join(" ← ")),
                    resolved.leaves.len(),
                    if uses.contains_key(d.as_str()) {
                        ""
                    } else {
                        ": named by the study or by another preset's value"
                    }
                ));
                s.push_str(
                    "<table><tr><th>key</th><th>value</th><th>source</th><th>set in</th></tr>\n",
                );
                for (k, leaf) in &resolved.leaves {
                    let v = leaf.value.to_string();
                    if let Some(n) = preset_named(&v, &names) {
                        todo.push(n.to_string());
                    }
                    let origin = leaf.place();
                    let origin = origin.rsplit('/').next().unwrap_or(&origin);
                    s.push_str(&format!(
                        "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>\n",
                        text(k),
                        text(&v),
                        text(&leaf.source),
                        text(origin)
                    ));
                }
                s.push_str("</table>\n");
            }
            Err(e) => s.push_str(&format!(
                "</summary>\n<p class=\"left-out\">cannot resolve: {}</p>\n",
                text(&e.to_string())
            )),
        }
        if let Some(sets) = uses.get(d.as_str()) {
            s.push_str("<table><tr><th>overrides set by the study's runs</th><th>runs</th></tr>\n");
            for (o, n) in sets {
                let o = if o.is_empty() {
                    "(none)".to_string()
                } else {
                    o.iter()
                        .map(|x| format!("--set {}", shell_word(x)))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                s.push_str(&format!(
                    "<tr><td><code>{}</code></td><td class=\"num\">{n}</td></tr>\n",
                    text(&o)
                ));
            }
            s.push_str("</table>\n");
        }
        s.push_str("</details>\n");
    }
    s
}

/// A word of a command line as a POSIX shell takes it: as it is when it
/// holds only safe characters, else in single quotes.
pub fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:+@%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// A run as the `storlab sim` command that repeats it.
pub fn sim_command(r: &Spec) -> String {
    let mut c = format!("storlab sim --device {}", shell_word(&r.device));
    for o in &r.overrides {
        c.push_str(&format!(" --set {}", shell_word(o)));
    }
    c.push_str(&format!(" --seed {}", r.seed));
    for a in &r.fio {
        c.push(' ');
        c.push_str(&shell_word(a));
    }
    c
}

fn runs_html(runs: &[Spec]) -> String {
    let seeds: BTreeSet<u64> = runs.iter().map(|r| r.seed).collect();
    let mut s = format!(
        "<details class=\"runs\"><summary>The study's {} runs (seeds: {}), each as the <code>storlab sim</code> command that repeats it</summary>\n<pre>",
        runs.len(),
        seeds.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
    );
    for r in runs {
        s.push_str(&text(&sim_command(r)));
        if let Some(j) = &r.only {
            s.push_str(&text(&format!("   # measured: the jobs called {j}")));
        }
        s.push('\n');
    }
    s.push_str("</pre></details>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(study: &str, setting: &str) -> Reproduction {
        Reproduction {
            study: study.into(),
            title: "t".into(),
            setting: setting.into(),
            class: crate::report::Class::Device,
            state_rule: "r".into(),
            notes: vec![],
            rows: vec![Row::holds("on raid-ssd", "x", "y".into(), true)],
            figures: vec![],
        }
    }

    #[test]
    fn a_study_that_runs_no_plan_still_lists_its_devices() {
        let named = named_presets(&rep("paging", "through swap-linux"));
        for d in ["raid-disk", "haste-sttm", "swap-linux", "raid-ssd"] {
            assert!(named.iter().any(|n| n == d), "{d} in {named:?}");
        }
        let page = devices_html(&[], &named);
        assert!(page.contains("<summary><b>raid-disk</b> (resolved from raid-disk"));
        assert!(page.contains("named by the study"));
        // a word that only contains a preset's name is not one
        let named = named_presets(&rep("x", "pre-raid-ssd-like, null-ish"));
        assert_eq!(named, ["raid-ssd"], "from the row only");
        // and the paging page says where its runs are
        let page = study_page(&rep("paging", ""), &SiteMeta::default()).unwrap();
        assert!(page.contains("studies/paging.rs"), "{page}");
    }

    #[test]
    fn names_and_commands_are_safe() {
        assert_eq!(page_name("moneta"), "moneta.html");
        assert_eq!(page_name("../x y"), "___x_y.html");
        assert_eq!(page_name("index"), "study-index.html");
        assert_eq!(shell_word("--bs=4k"), "--bs=4k");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
        let s = Spec::new("moneta-spin", &["swap.device_set=[\"a\"]"], &["--name=x"]);
        assert_eq!(
            sim_command(&s),
            "storlab sim --device moneta-spin --set 'swap.device_set=[\"a\"]' --seed 1 --name=x"
        );
    }

    #[test]
    fn every_verdict_has_its_colour() {
        let cells: Vec<(String, &str)> = [
            Row::within("a", 1.0, 1.0, 0.1, ""),
            Row::within("b", 1.0, 1.0, 0.1, "").input("k"),
            Row::within("c", 2.0, 1.0, 0.1, "").miss_because("why"),
            Row::within("d", 2.0, 1.0, 0.1, ""),
        ]
        .iter()
        .map(verdict_cell)
        .collect();
        assert_eq!(
            cells,
            [
                ("ok".to_string(), "v-ok"),
                ("input".to_string(), "v-input"),
                ("MISS (known: why)".to_string(), "v-known"),
                ("FAIL".to_string(), "v-fail"),
            ]
        );
        for class in ["v-ok", "v-input", "v-known", "v-fail"] {
            assert!(STYLE.contains(&format!(".{class}{{")), "{class}");
        }
    }
}
