//! The derived `aged` state is the state greedy collection converges to:
//! random 4 KB overwrites at 100 % occupancy start at the long-run write
//! amplification (no cheap burst, no stall) and match a drive aged by
//! actually overwriting it several times (the real policy is the
//! reference, not a number). Issue 63: a drive derived from a replayed
//! drive with fewer blocks per plane (and its open blocks counted as
//! nearly empty closed ones) started at about 0.7 of the long-run WA.
//!
//! Each plane collects on its own, so the write amplification of a window
//! sets the plane's NAND time per host write: a window's bandwidth, when
//! the NAND is the limit, is in proportion to 1 / WA.

use rand::{Rng, SeedableRng};
use storlab_model::devices::flash::ftl::config::FtlConfig;
use storlab_model::devices::flash::ftl::layer::Ftl;
use storlab_model::devices::flash::ftl::types::{
    GcPolicy, Geometry, Mapping, Precondition, WearLeveling,
};

fn cfg() -> FtlConfig {
    // the pm9a3 preset's FTL: greedy, 4 free blocks a plane, dynamic WL
    FtlConfig {
        mapping: Mapping::Page,
        map_unit_bytes: 4096,
        gc_policy: GcPolicy::Greedy,
        gc_threshold_blocks: 4,
        wear_leveling: WearLeveling::Dynamic,
        static_wl_gap: 64,
        static_wl_interval: 256,
        precondition: Precondition::Fresh,
        fullness: 1.0,
        seed: 1,
        gc_pacing: false,
        map_cache: Default::default(),
    }
}

/// Write amplification of each of `windows` windows of `per` random
/// overwrites of `0..n`.
fn windows(f: &mut Ftl, n: u32, windows: usize, per: u64) -> Vec<f64> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(77);
    (0..windows)
        .map(|_| {
            let (h0, m0) = (f.counters.host_units, f.counters.moved_units);
            for _ in 0..per {
                f.write(rng.gen_range(0..n));
            }
            let host = f.counters.host_units - h0;
            (host + f.counters.moved_units - m0) as f64 / host as f64
        })
        .collect()
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn a_derived_aged_drive_starts_at_its_long_run_write_amplification() {
    // 4 planes of the pm9a3's 512 blocks, of 1,024 units (256 pages of
    // 16 KiB), its 87.3 % of raw space exposed: 1.8 M units, derived from
    // a replayed drive of one plane (a budget of 512 K raw units)
    let g = Geometry {
        planes: 4,
        blocks_per_plane: 512,
        pages_per_block: 256,
        units_per_page: 4,
    };
    let logical = (g.raw_units() as f64 * 0.873) as u64;
    let n = logical as u32;
    let per = logical / 20;
    let mut d = Ftl::new(&cfg(), g, logical, (0..4).collect()).expect("fits");
    d.precondition_with(Precondition::Aged, 1.0, 1 << 19);
    assert!(d.preconditioned.derived);
    assert_eq!(d.check(), Ok(()));
    let wd = windows(&mut d, n, 40, per);
    let mut r = Ftl::new(&cfg(), g, logical, (0..4).collect()).expect("fits");
    r.precondition_with(Precondition::Aged, 1.0, u64::MAX);
    assert!(!r.preconditioned.derived);
    let wr = windows(&mut r, n, 40, per);

    let long_run = mean(&wd[20..]);
    assert!(
        long_run > 3.0,
        "steady state at 12.7 % spare: WA {long_run}"
    );
    // (i) flat from the start: every window of the first quarter of the
    // drive written within 20 % of the long-run WA (windows of 1/20 of the
    // drive swing by about 8 % either way in a replayed steady state too)
    for (i, w) in wd[..5].iter().enumerate() {
        assert!(
            (w / long_run - 1.0).abs() <= 0.2,
            "window {i}: WA {w}, long run {long_run} (derived {wd:?})"
        );
    }
    // (ii) the first quarter's WA is that of a drive aged by replay
    let (first_d, first_r) = (mean(&wd[..5]), mean(&wr[..5]));
    assert!(
        (first_d / first_r - 1.0).abs() <= 0.05,
        "first quarter WA derived {first_d} replayed {first_r} ({wd:?} / {wr:?})"
    );
    // and the replayed reference is itself in its steady state
    assert!((mean(&wr[20..]) / first_r - 1.0).abs() <= 0.05, "{wr:?}");
}
