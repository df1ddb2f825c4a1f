//! Helpers shared by the lab's tests: runs through the lab's own
//! measurement path (the one `storlab lab reproduce` uses), and a
//! tolerance check that prints both figures.
#![allow(dead_code)]

#[allow(unused_imports)]
pub use storlab_lab::studies::psd::{full, with, SMALL_FUSION, SMALL_RAID_SSD, SMALL_X25E};
#[allow(unused_imports)]
pub use storlab_lab::{Run, Spec};

/// fio arguments on `device` with `overrides`, with fio's libaio engine
/// (the depth a job asks for is the depth it gets).
pub fn run(device: &str, overrides: &[&str], fio: &[&str]) -> Run {
    storlab_lab::studies::psd::peer(device, overrides, fio)
        .run()
        .expect("simulation runs")
}

/// A run of `spec`, all job threads merged.
pub fn sim(spec: Spec) -> Run {
    spec.run().expect("simulation runs")
}

/// `x` within `rel` of `target`, or fail with both.
pub fn within(what: &str, x: f64, target: f64, rel: f64) {
    let (lo, hi) = (target * (1.0 - rel), target * (1.0 + rel));
    eprintln!("{what}: model {x:.3}, reference {target}");
    assert!(
        x >= lo && x <= hi,
        "{what}: model {x:.3}, reference {target} ±{:.0}% = [{lo:.3}, {hi:.3}]",
        rel * 100.0
    );
}

/// Run study `name` as `storlab lab reproduce` does, print its table, and
/// fail on any miss without a known reason; the study and its table.
pub fn reproduce(name: &str) -> (storlab_lab::Reproduction, String) {
    let r = storlab_lab::studies::prepare(name)
        .expect("a known study")
        .run(&|| {})
        .expect("the study runs");
    let mut table = Vec::new();
    r.write_text(&mut table).expect("text report");
    let table = String::from_utf8(table).expect("utf-8");
    eprintln!("{table}");
    assert!(r.failures().is_empty(), "unexplained misses:\n{table}");
    (r, table)
}
