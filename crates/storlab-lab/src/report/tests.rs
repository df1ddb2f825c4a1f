//! Tests of reproductions, rows and verdicts (`super`).

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

fn rep(rows: Vec<Row>) -> Reproduction {
    Reproduction {
        study: "s".into(),
        title: "t".into(),
        setting: "w".into(),
        class: Class::Device,
        state_rule: "r".into(),
        notes: vec![("shared".into(), "a long explanation".into())],
        rows: at_all(rows, crate::places::MONETA_T3),
        figures: vec![],
    }
}

#[test]
fn a_missed_row_shows_in_every_output() {
    let rep = rep(vec![
        Row::within("good", 1.0, 1.0, 0.1, "x"),
        Row::holds("bad", "ordering", "reversed".into(), false),
    ]);
    assert_eq!(rep.failures().len(), 1);
    let mut text = Vec::new();
    rep.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("MISS")
            && text.contains("FAILS: misses with no known reason")
            && text.contains("1 of 2 within the published tolerance (1 missed)"),
        "{text}"
    );
    assert!(rep
        .to_markdown()
        .contains("| bad | Moneta study, Table III | ordering | reversed | **MISS** |"));
}

#[test]
fn inputs_and_known_misses_are_labelled_and_kept_apart() {
    let rep = rep(vec![
        Row::within("given", 3.0, 3.0, 0.2, "µs").input("host.syscall_entry_ns"),
        Row::within("predicted", 11.0, 10.0, 0.2, "µs"),
        Row::within("far", 25.0, 10.0, 0.2, "µs").miss_because("no swap path yet"),
        Row::within("near", 8.5, 10.0, 0.1, "µs"),
        Row::between("range", 90.0, 100.0, 200.0, "x").miss_because("held"),
        Row::holds("order", "a > b", "a 2, b 1".into(), true),
    ]);
    let verdicts: Vec<String> = rep.rows.iter().map(Row::verdict_text).collect();
    assert_eq!(
        verdicts,
        [
            "input",
            "ok",
            "MISS (known: no swap path yet)",
            "MISS",
            "MISS (known: held)",
            "ok"
        ]
    );
    // only the unexplained miss fails the reproduction
    assert_eq!(rep.failures().len(), 1);
    assert_eq!(rep.misses().len(), 3);
    let s = Summary::of([&rep]);
    assert_eq!(
        (s.rows, s.inputs, s.ok, s.known_misses, s.misses, s.scored),
        (6, 1, 2, 2, 1, 4)
    );
    // errors 0.1, 1.5, 0.15, 0.1 (90 against the range's lower bound 100)
    assert!((s.median_error - 0.125).abs() < 1e-9, "{s:?}");
    assert_eq!(s.beyond_2x, 1, "25 against 10");
    assert_eq!(s.by_construction, 0);
    let mut text = Vec::new();
    rep.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("3 of 6 within the published tolerance, 1 of them model inputs (3 missed, 2 of them known)"),
        "{text}"
    );
}

/// The audit's "input without a fit": a row marked as an input that the
/// model does not reproduce within 1 % is scored like any other.
#[test]
fn an_input_the_model_does_not_reproduce_is_scored() {
    let near = Row::within("near", 3.02, 3.0, 0.2, "µs").input("k");
    assert_eq!(near.verdict(), Verdict::Input);
    let off = Row::within("off", 22.9, 21.0, 0.1, "µs").input("k");
    assert_eq!(off.verdict(), Verdict::Ok);
    let s = Summary::of([&rep(vec![near, off])]);
    assert_eq!((s.inputs, s.scored), (1, 1));
}

/// The audit's "reasons attached in advance": a reason beside a row
/// that holds, an empty reason, a long one, or one pointing to a note
/// the study lacks fails the lab.
#[test]
fn reasons_are_written_only_for_misses_and_kept_short() {
    let notes = ["shared"];
    let held = Row::within("x", 1.0, 1.0, 0.1, "").at(crate::places::MONETA_T3);
    assert!(held.clone().problem(&notes).is_none());
    let p = held.miss_because("in advance").problem(&notes).unwrap();
    assert!(p.contains("holds but carries a miss reason"), "{p}");
    let miss = Row::within("x", 3.0, 1.0, 0.1, "").at(crate::places::MONETA_T3);
    assert!(miss
        .clone()
        .problem(&notes)
        .unwrap()
        .contains("no known reason"));
    assert!(miss
        .clone()
        .miss_because("  ")
        .problem(&notes)
        .unwrap()
        .contains("empty"));
    let three = "One. Two sentences here. Three of them.";
    assert!(miss
        .clone()
        .miss_because(three)
        .problem(&notes)
        .unwrap()
        .contains("3 sentences"));
    let long = "word ".repeat(100);
    assert!(miss
        .clone()
        .miss_because(long)
        .problem(&notes)
        .unwrap()
        .contains("characters"));
    assert!(miss
        .clone()
        .miss_because("see note [other].")
        .problem(&notes)
        .unwrap()
        .contains("note [other]"));
    assert!(miss
        .miss_because("as HASTE's Fig. 4 shows, see note [shared]. The study says so.")
        .problem(&notes)
        .is_none());
}

/// The audit's "targets taken from the model": a row with no published
/// place, or a place not on the list, fails and counts as by
/// construction.
#[test]
fn a_target_without_a_published_place_fails_and_counts() {
    let none = Row::within("x", 1.0, 1.0, 0.1, "");
    assert!(none.problem(&[]).unwrap().contains("no published place"));
    let preset = Row::within("x", 1.0, 1.0, 0.1, "").at("moneta-spin.toml's link rate");
    assert!(preset
        .problem(&[])
        .unwrap()
        .contains("not a published place"));
    let mut r = rep(vec![]);
    r.rows = vec![none, preset];
    let s = Summary::of([&r]);
    assert_eq!((s.by_construction, s.misses), (2, 2));
}

#[test]
fn classes_are_summarised_apart() {
    let mut r = rep(vec![
        Row::within("dev", 1.1, 1.0, 0.2, ""),
        Row::within("xdd", 3.0, 1.0, 0.2, "")
            .class(Class::Xdd)
            .miss_because("r"),
    ]);
    r.class = Class::Device;
    let d = Summary::of_class([&r], Class::Device);
    let x = Summary::of_class([&r], Class::Xdd);
    assert_eq!((d.scored, d.beyond_2x, x.scored, x.beyond_2x), (1, 0, 1, 1));
    assert_eq!(Summary::of_class([&r], Class::App).rows, 0);
}

#[test]
fn sentences_are_counted_past_abbreviations() {
    assert_eq!(sentence_count("one"), 1);
    assert_eq!(
        sentence_count("HASTE's Fig. 4 says 3.3x, Linux 2.6.28 too."),
        1
    );
    assert_eq!(sentence_count("First. Second."), 2);
}

#[test]
fn a_range_holds_between_its_bounds_and_measures_error_outside() {
    let r = Row::between("x", 150.0, 100.0, 200.0, "x");
    assert!(r.pass && r.error == Some(0.0));
    assert_eq!(r.published, "100-200x");
    let r = Row::between("x", 300.0, 100.0, 200.0, "x");
    assert!(!r.pass && (r.error.unwrap() - 0.5).abs() < 1e-12);
    assert!(!Row::between("x", f64::NAN, 1.0, 2.0, "").pass);
    // a reason on a row that holds is kept, and fails the lab
    assert!(Row::between("x", 150.0, 100.0, 200.0, "")
        .miss_because("r")
        .reason
        .is_some());
}
