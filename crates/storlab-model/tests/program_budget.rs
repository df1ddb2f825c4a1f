//! The per-channel program budget (`ssd.nand.programs_per_channel`): at
//! most that many dies of one channel program at once, reads go on, and 0
//! (the default) limits nothing.

mod common;
use common::{build, drive};

use storlab_model::config::PresetStore;
use storlab_model::{DevRequest, Op, SystemConfig};

/// micron-psd (3 channels of 4 ranks, 120 µs programs) with its program
/// budget `ppc` and no program spread, so times are exact.
fn psd(ppc: u32) -> Box<dyn storlab_model::Device> {
    build(
        "micron-psd",
        &[
            &format!("ssd.nand.programs_per_channel={ppc}"),
            "ssd.nand.program_spread=0",
        ],
    )
}

/// `n` 4 KB writes at time 0 over distinct 4 KB blocks spread over the
/// device, and one read among them; (time the last write ends, the read's
/// latency).
fn burst(ppc: u32, n: u64) -> (u64, u64) {
    let mut d = psd(ppc);
    let mut reqs: Vec<(u64, DevRequest)> = (0..n)
        .map(|i| {
            (
                0,
                DevRequest::new(i, Op::Write, (i * 7919 % 100_000) * 4096, 4096),
            )
        })
        .collect();
    reqs.push((0, DevRequest::new(n, Op::Read, 123_457 * 4096, 4096)));
    let done = drive(d.as_mut(), &reqs, 1_000_000).expect("runs to the end");
    let last_write = (0..n).map(|i| done[&i].at).max().expect("writes");
    (last_write, done[&n].at)
}

#[test]
fn at_most_the_budget_programs_at_once_per_channel() {
    let n = 48;
    let program = 120_000;
    let (one, read_one) = burst(1, n);
    let (two, _) = burst(2, n);
    let (off, _) = burst(0, n);
    // three channels, one program each: 48 programs take at least 16 in turn
    assert!(one >= n / 3 * program, "budget 1: {one} ns");
    // twice the budget, about twice the rate (within the collisions of
    // random blocks on ranks)
    assert!(
        two < one * 7 / 10 && two >= n / 6 * program,
        "budget 2: {two} ns against {one} ns"
    );
    // no budget: all 12 ranks program together, far sooner
    assert!(off < two, "no budget: {off} ns against {two} ns");
    // a read is not held by the budget: it waits at most for its rank's
    // current program
    assert!(
        read_one < 2 * program,
        "read behind a full program budget: {read_one} ns"
    );
}

#[test]
fn a_budget_above_the_dies_of_a_channel_is_refused_by_name() {
    let err = SystemConfig::load(
        &PresetStore::default(),
        "micron-psd",
        &["ssd.nand.programs_per_channel=5".to_string()],
    )
    .and_then(|(_, c)| c.build_device().map(|_| ()))
    .expect_err("5 of 4 dies");
    assert!(
        err.to_string().contains("ssd.nand.programs_per_channel"),
        "{err}"
    );
}
