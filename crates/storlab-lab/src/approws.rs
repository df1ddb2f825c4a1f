//! Which lab rows concern an application: the names the studies give it
//! in the rows' text ("Berkeley-DB BTree", "TPC-C", "NPB"), found in the
//! committed verdict record ([`crate::verdicts::committed`]), so that
//! `storlab apps show` lists an application's lab rows and `storlab sim
//! --app` notes their known misses where a user runs the model.

use crate::report::Verdict;

/// Each application with the names rows give it (whole words).
pub const NAMES: &[(&str, &[&str])] = &[
    ("bdb-btree", &["Berkeley DB BTree", "Berkeley-DB BTree"]),
    (
        "bdb-hash",
        &[
            "Berkeley DB HashTable",
            "Berkeley-DB HashTable",
            "HashTable",
        ],
    ),
    ("ycsb-a", &["YCSB-A"]),
    ("ycsb-b", &["YCSB-B"]),
    ("ycsb-c", &["YCSB-C"]),
    ("ycsb-d", &["YCSB-D"]),
    ("ycsb-e", &["YCSB-E"]),
    ("ycsb-f", &["YCSB-F"]),
    ("memcached", &["memcached"]),
    ("oltp", &["OLTP"]),
    ("tpcc", &["TPC-C"]),
    ("ptfdb", &["PTFDB"]),
    ("bionet", &["BiologicalNetworks", "BioNet"]),
    ("sqlite", &["SQLite"]),
    ("pgbench", &["pgbench"]),
    ("rocksdb", &["RocksDB"]),
    ("postmark", &["Postmark"]),
    ("build", &["Build"]),
    ("patch", &["Patch"]),
    ("fileserver", &["FileServer", "fileserver", "Filebench"]),
    ("webserver", &["WebServer", "webserver", "Filebench"]),
    ("varmail", &["Varmail", "varmail", "Filebench"]),
    ("npb-bt", &["BT", "NPB"]),
    ("npb-cg", &["CG", "NPB"]),
    ("npb-is", &["IS", "NPB"]),
    ("npb-lu", &["LU", "NPB"]),
    ("npb-mg", &["MG", "NPB"]),
    ("npb-sp", &["SP", "NPB"]),
    ("npb-ua", &["UA", "NPB"]),
    ("dgemm", &["DGEMM"]),
    ("thrash", &["thrash"]),
];

/// One lab row of an application, as the committed record holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppRow {
    /// The study.
    pub study: String,
    /// The row.
    pub what: String,
    /// Its recorded verdict.
    pub verdict: Verdict,
}

/// `name` occurs in `text` as a whole word (no letter or digit on either
/// side: "BT" is not in "BTree").
fn has_word(text: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    text.match_indices(name).any(|(i, _)| {
        !word(text[..i].chars().next_back()) && !word(text[i + name.len()..].chars().next())
    })
}

/// The committed record's rows that concern `app` (empty for an
/// application no row names).
pub fn rows_for(app: &str) -> Vec<AppRow> {
    let Some((_, names)) = NAMES.iter().find(|(a, _)| *a == app) else {
        return Vec::new();
    };
    crate::verdicts::committed()
        .into_iter()
        .flat_map(|(study, rows)| {
            rows.into_iter()
                .map(move |(what, verdict)| (study.clone(), what, verdict))
        })
        .filter(|(_, what, _)| names.iter().any(|n| has_word(what, n)))
        .map(|(study, what, verdict)| AppRow {
            study,
            what,
            verdict,
        })
        .collect()
}

/// `storlab apps show`'s section: every lab row of `app` with its
/// recorded verdict (empty when no row concerns it).
pub fn show_text(app: &str) -> String {
    let rows = rows_for(app);
    if rows.is_empty() {
        return String::new();
    }
    let misses = rows.iter().filter(|r| r.verdict == Verdict::Miss).count();
    let mut s = format!(
        "\nlab rows ({} in the committed record, {misses} of them known misses; `storlab lab reproduce STUDY` gives the figures and each miss's reason):\n",
        rows.len()
    );
    for r in &rows {
        s.push_str(&format!(
            "  {:<5} {}: {}\n",
            verdict_word(r.verdict),
            r.study,
            r.what
        ));
    }
    s
}

/// A note for a run of `app`, when lab rows of it miss: how many, and
/// where to read them.
pub fn miss_note(app: &str) -> Option<String> {
    let rows = rows_for(app);
    let misses: Vec<&AppRow> = rows.iter().filter(|r| r.verdict == Verdict::Miss).collect();
    if misses.is_empty() {
        return None;
    }
    let mut studies: Vec<&str> = misses.iter().map(|r| r.study.as_str()).collect();
    studies.dedup();
    Some(format!(
        "note: {} of the lab's {} rows for {app} miss the published figures (known misses, in {}): `storlab apps show {app}` lists them, `storlab lab reproduce {}` gives the figures and reasons",
        misses.len(),
        rows.len(),
        studies.join(", "),
        studies[0]
    ))
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "ok",
        Verdict::Input => "input",
        Verdict::Miss => "MISS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_application_has_its_names() {
        for app in storlab_apps::all() {
            assert!(
                NAMES.iter().any(|(a, _)| *a == app.name),
                "{} has no row names in approws::NAMES",
                app.name
            );
        }
    }

    #[test]
    fn names_match_whole_words_only() {
        assert!(has_word("Table V, RAID-SSD: BT", "BT"));
        assert!(!has_word("Table V, RAID-SSD: Berkeley-DB BTree", "BT"));
        assert!(has_word("mean NPB slowdown", "NPB"));
        assert!(!has_word("XNPB", "NPB"));
    }

    #[test]
    fn rows_of_an_application_are_its_own() {
        let bt = rows_for("bdb-btree");
        assert!(bt
            .iter()
            .any(|r| r.what.contains("RAID-SSD: Berkeley-DB BTree")));
        assert!(bt.iter().all(|r| !r.what.contains("HashTable")), "{bt:?}");
        let npb = rows_for("npb-bt");
        assert!(npb.iter().all(|r| !r.what.contains("BTree")), "{npb:?}");
        assert!(npb.iter().any(|r| r.what.contains("NPB")));
        assert!(rows_for("no-such-app").is_empty());
    }

    #[test]
    fn a_note_names_the_misses_and_where_to_read_them() {
        let rows = rows_for("postmark");
        let misses = rows.iter().filter(|r| r.verdict == Verdict::Miss).count();
        match miss_note("postmark") {
            Some(n) => {
                assert!(
                    n.contains(&format!("{misses} of the lab's {} rows", rows.len())),
                    "{n}"
                );
                assert!(n.contains("storlab apps show postmark"), "{n}");
            }
            None => assert_eq!(misses, 0),
        }
        let show = show_text("postmark");
        assert_eq!(
            show.lines().filter(|l| l.starts_with("  ")).count(),
            rows.len()
        );
    }
}
