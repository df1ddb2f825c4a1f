//! The `psd` study (the PCM SSD against flash, fio with libaio) and the
//! shape of its queue-depth curve: PCM writes level off at three boards'
//! one program at a time (`ssd.nand.programs_per_channel`), reads run
//! far above them.

mod support;
use support::reproduce;

use storlab_lab::studies::psd;

#[test]
fn psd_rows_hold_and_pcm_writes_level_off_at_the_program_budget() {
    let (r, _) = reproduce("psd");
    assert!(r.failures().is_empty(), "{:?}", r.failures());
    assert_eq!(r.rows.len(), 6, "every finding of the study");
    let f = &r.figures[0];
    let at = |panel: &str, q: u32| {
        let s = f.series(panel, "micron-psd (PCM)").expect("the PCM curve");
        s.points
            .iter()
            .find(|p| p.0 == q as f64)
            .map(|p| p.1)
            .expect("a point per depth")
    };
    let xs: Vec<f64> = f
        .series("writes", "micron-psd (PCM)")
        .expect("curve")
        .points
        .iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(
        xs,
        psd::DEPTHS.iter().map(|&q| q as f64).collect::<Vec<_>>()
    );
    // three boards, one 4 KB program (120 µs plus its transfer and
    // command) at a time each: at most 3 x 4096 B / 120 µs = 102 MB/s
    let budget = 3.0 * 4096.0 / 120e-6 / 1e6;
    let (w64, w256) = (at("writes", 64), at("writes", 256));
    assert!(
        w256 <= budget && w256 >= 0.8 * budget,
        "writes at depth {w256:.0} MB/s against the budget's {budget:.0}"
    );
    assert!(
        w64 >= 0.95 * w256,
        "level by QD64: {w64:.0} against {w256:.0}"
    );
    // reads are held by neither the budget nor a write: an order of
    // magnitude above the writes at the study's best depth
    let r64 = at("reads", 64);
    assert!(r64 >= 10.0 * w64, "reads {r64:.0} MB/s, writes {w64:.0}");
}
