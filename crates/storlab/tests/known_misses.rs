//! The lab's known misses are shown where a user runs a model: `storlab
//! apps show` lists an application's lab rows with their verdicts, and
//! `storlab sim --app` notes how many of them miss.

use std::process::Command;

fn storlab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args)
        .output()
        .expect("run storlab")
}

#[test]
fn apps_show_lists_the_applications_lab_rows_with_verdicts() {
    let out = storlab(&["apps", "show", "bdb-btree"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let section = text
        .split("\nlab rows (")
        .nth(1)
        .unwrap_or_else(|| panic!("no lab rows section: {text}"));
    let rows: Vec<&str> = section
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("  "))
        .collect();
    assert!(rows.len() >= 2, "{section}");
    // its own rows only, each with a verdict
    assert!(
        rows.iter()
            .any(|r| r.contains("RAID-SSD: Berkeley-DB BTree")),
        "{section}"
    );
    assert!(rows.iter().all(|r| !r.contains("HashTable")), "{section}");
    assert!(rows
        .iter()
        .all(|r| ["ok", "input", "MISS"].contains(&r.split_whitespace().next().unwrap_or(""))));
}

#[test]
fn a_model_run_notes_the_labs_known_misses_for_it() {
    let out = storlab(&[
        "sim",
        "--device",
        "raid-disk",
        "--app",
        "postmark",
        "--app-set",
        "scale=0.01",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let misses = storlab_lab::approws::rows_for("postmark")
        .iter()
        .filter(|r| r.verdict == storlab_lab::report::Verdict::Miss)
        .count();
    if misses > 0 {
        assert!(
            err.contains(&format!("note: {misses} of the lab's"))
                && err.contains("storlab apps show postmark"),
            "{err}"
        );
    } else {
        assert!(!err.contains("of the lab's"), "{err}");
    }
}
