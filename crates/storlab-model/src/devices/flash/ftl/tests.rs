//! Tests of the FTL's internals (greedy buckets, reverse entries, tables
//! too large to allocate).

use super::blocks::Buckets;
use super::config::FtlConfig;
use super::layer::Ftl;
use super::types::{try_filled, GcPolicy, Geometry, Mapping, Precondition, WearLeveling, NONE};
use rand::{Rng, SeedableRng};

/// A page-mapped FTL with greedy collection at 2 free blocks, no wear
/// levelling, fresh: the small drives of these tests.
fn greedy_page_config() -> FtlConfig {
    FtlConfig {
        mapping: Mapping::Page,
        map_unit_bytes: 4096,
        gc_policy: GcPolicy::Greedy,
        gc_threshold_blocks: 2,
        wear_leveling: WearLeveling::None,
        static_wl_gap: 4,
        static_wl_interval: 8,
        precondition: Precondition::Fresh,
        fullness: 0.0,
        seed: 3,
        map_cache: Default::default(),
    }
}

#[test]
fn wide_greedy_buckets_pick_the_scans_victim() {
    // the width follows the geometry: one count per bucket on a large
    // plane, several on a small one
    assert_eq!(Buckets::shift_for(512, 28_000), 0);
    assert_eq!(Buckets::shift_for(512, 445), 2);
    assert!(Buckets::shift_for(256, 16) >= 3);
    for (bpp, ppb, upp) in [(24, 8, 1), (16, 32, 2), (12, 64, 4), (40, 16, 2)] {
        let geo = Geometry {
            planes: 2,
            blocks_per_plane: bpp,
            pages_per_block: ppb,
            units_per_page: upp,
        };
        let cfg = greedy_page_config();
        let logical = geo.raw_units() * 5 / 8;
        let mut f = Ftl::new(&cfg, geo, logical, vec![0, 1]).expect("fits");
        let shift = f.buckets.as_ref().expect("greedy").shift;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        for i in 0..logical * 6 {
            f.write(rng.gen_range(0..logical as u32));
            f.ops.clear();
            if i % 97 == 0 {
                for plane in 0..2 {
                    let scan = f.scan_victim(plane);
                    let from_buckets = f.buckets.as_mut().expect("greedy").victim(plane, &f.blocks);
                    assert_eq!(from_buckets, scan, "shift {shift}, write {i}");
                }
            }
        }
        assert!(f.counters.gc_runs > 0);
        f.check().expect("consistent");
    }
}

#[test]
fn a_reverse_entry_left_behind_is_invalid_and_never_moved() {
    // overwrites and trims leave the old units' reverse entries in
    // place: only the logical unit's own entry says where it is, and
    // collection must move exactly the units it names (fresh blocks,
    // a sequential fill's layout blocks, and a fill's open block that
    // took later writes: the three kinds of victim)
    let geo = Geometry {
        planes: 2,
        blocks_per_plane: 16,
        pages_per_block: 8,
        units_per_page: 2,
    };
    let cfg = greedy_page_config();
    let logical = geo.raw_units() * 5 / 8;
    for fill in [None, Some(0.9)] {
        let mut f = Ftl::new(&cfg, geo, logical, vec![0, 1]).expect("fits");
        if let Some(x) = fill {
            f.precondition(Precondition::Full, x);
        }
        let a = f.write(3);
        let b = f.write(3);
        assert_ne!(a, b);
        // the stale entry is still in the table, and says nothing
        assert_eq!(f.p2l.raw(a), Some(3));
        assert_eq!(f.p2l_get(a), NONE);
        assert_eq!(f.p2l_get(b), 3);
        f.trim(3);
        assert_eq!(f.p2l_get(b), NONE);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        for i in 0..logical * 8 {
            let l = rng.gen_range(0..logical as u32);
            if i % 13 == 0 {
                f.trim(l);
            } else {
                f.write(l);
            }
            f.ops.clear();
        }
        assert!(f.counters.gc_runs > 0);
        // every mapped unit's reverse entry names it, every other
        // unit holds nothing, and the valid counts agree
        f.check().expect("consistent");
    }
}

#[test]
fn tables_too_large_to_allocate_are_an_error_not_an_abort() {
    assert!(try_filled(usize::MAX / 2, 0u32).is_err());
    let v = try_filled(5, 7u32).expect("small");
    assert_eq!(v, vec![7; 5]);
}
