//! The repository stands alone (issue 44): every document a preset, a
//! source file or a README cites is in the repository, nothing points
//! outside it (`../shared/...`, a machine's own directories), and the
//! specification's pages are cited by their path (`docs/spec/media.md`,
//! not the page name alone; `scripts/spec-paths` rewrites those).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Files under `dir` (relative to the root) ending in one of `exts`,
/// skipping build output.
fn files(dir: &str, exts: &[&str]) -> Vec<PathBuf> {
    fn walk(p: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(p) else {
            return;
        };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for e in entries {
            let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if e.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&e, exts, out);
                }
            } else if exts.iter().any(|x| name.ends_with(x)) {
                out.push(e);
            }
        }
    }
    let mut out = Vec::new();
    let p = root().join(dir);
    if p.is_file() {
        out.push(p);
    } else {
        walk(&p, exts, &mut out);
    }
    out
}

/// Every file that cites documents: presets, job files, sources, READMEs
/// and the docs.
fn citing_files() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for (dir, exts) in [
        ("presets", &[".toml"][..]),
        ("jobs", &[".fio"][..]),
        ("crates", &[".rs", ".md", ".toml", ".fio"][..]),
        ("docs", &[".md"][..]),
        ("README.md", &[".md"][..]),
        ("ARCHITECTURE.md", &[".md"][..]),
    ] {
        all.extend(files(dir, exts));
    }
    // not this file: it names what it looks for
    all.retain(|f| !f.ends_with("crates/storlab/tests/doc_paths.rs"));
    assert!(all.len() > 100, "{} files", all.len());
    all
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

const SPEC_PAGES: &[&str] = &[
    "media",
    "pcie-arrays",
    "ddr-nvm",
    "nvmm",
    "hybrid",
    "peer-devices",
    "workloads",
    "targets",
];

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

#[test]
fn nothing_points_outside_the_repository() {
    let mut bad = Vec::new();
    for f in citing_files() {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            for needle in ["../shared", "shared/spec", "/work/", "/home/"] {
                if line.contains(needle) {
                    bad.push(format!("{}:{}: {needle}: {line}", rel(&f), i + 1));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn specification_pages_are_cited_by_their_path_in_the_repository() {
    for page in SPEC_PAGES {
        let p = root().join(format!("docs/spec/{page}.md"));
        assert!(p.is_file(), "{} is missing", p.display());
    }
    let mut bare = Vec::new();
    for f in citing_files() {
        // the docs link to each other relatively
        if rel(&f).starts_with("docs/") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            for page in SPEC_PAGES {
                let name = format!("{page}.md");
                for (at, _) in line.match_indices(&name) {
                    let before = line[..at].chars().next_back();
                    let after = line[at + name.len()..].chars().next();
                    let whole = before.is_none_or(|c| !path_char(c))
                        && after.is_none_or(|c| !c.is_ascii_alphanumeric());
                    if whole {
                        bare.push(format!("{}:{}: {line}", rel(&f), i + 1));
                    }
                }
            }
        }
    }
    assert!(
        bare.is_empty(),
        "bare citations (run scripts/spec-paths):\n{}",
        bare.join("\n")
    );
}

/// Paths from the root cited in text: `docs/...md`, `crates/...md`.
fn cited_paths(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["docs/", "crates/"] {
        for (at, _) in line.match_indices(start) {
            if line[..at].chars().next_back().is_some_and(path_char) {
                continue; // inside a longer path (../../docs/...: a link)
            }
            let tail: String = line[at..].chars().take_while(|c| path_char(*c)).collect();
            let tail = tail.trim_end_matches('.');
            if tail.ends_with(".md") {
                out.push(tail.to_string());
            }
        }
    }
    out
}

/// Relative Markdown link targets: `[text](target)`.
fn links(line: &str) -> Vec<String> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            rest.find(')').map(|end| rest[..end].to_string())
        })
        .filter(|t| !t.contains("://") && !t.starts_with('#') && !t.starts_with("mailto:"))
        .collect()
}

#[test]
fn every_cited_document_exists() {
    let mut missing = Vec::new();
    let mut seen = 0;
    for f in citing_files() {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let is_md = f.extension().and_then(|x| x.to_str()) == Some("md");
        for (i, line) in text.lines().enumerate() {
            for p in cited_paths(line) {
                seen += 1;
                if !root().join(&p).is_file() {
                    missing.push(format!("{}:{}: {p}", rel(&f), i + 1));
                }
            }
            if is_md {
                for l in links(line) {
                    seen += 1;
                    let target = l.split('#').next().unwrap_or("");
                    let dir = f.parent().expect("a file has a directory");
                    if !target.is_empty() && !dir.join(target).exists() {
                        missing.push(format!("{}:{}: link {l}", rel(&f), i + 1));
                    }
                }
            }
        }
    }
    assert!(
        seen > 300,
        "only {seen} citations found: is the scan right?"
    );
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_scan_finds_what_it_must() {
    assert_eq!(
        cited_paths("# docs/spec/media.md: SLC and crates/storlab-emu/README.md."),
        ["docs/spec/media.md", "crates/storlab-emu/README.md"]
    );
    assert!(cited_paths("[x](../../docs/spec/nvmm.md)").is_empty());
    assert_eq!(
        links("see [a](spec/a.md#x) and [b](https://x.org)"),
        ["spec/a.md#x"]
    );
}

/// README and docs quote how long storlab's own runs take only with the
/// command and the machine (the crates' READMEs do, beside their
/// figures): no "about eight seconds", no "13-18 µs here".
#[test]
fn no_timing_claim_without_its_command_and_machine() {
    let mut docs = files("docs", &[".md"]);
    docs.push(root().join("README.md"));
    let mut bad = Vec::new();
    for f in docs {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        // sentences run over lines
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for claim in [
            " here)",
            "takes seconds",
            "take seconds",
            "run takes",
            "runs in seconds",
            "seconds on this",
            "about eight seconds",
        ] {
            for (at, _) in flat.match_indices(claim) {
                let from = flat[..at]
                    .char_indices()
                    .rev()
                    .nth(60)
                    .map_or(0, |(i, _)| i);
                bad.push(format!(
                    "{}: ...{}...",
                    rel(&f),
                    &flat[from..at + claim.len()]
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
