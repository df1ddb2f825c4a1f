//! The flash translation layer on its own: invariants as property tests
//! (the mapping stays a bijection on valid units, no written unit is lost,
//! free blocks never run out), determinism, preconditioning, garbage
//! collection policies and wear levelling.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use storlab_model::devices::flash::ftl::config::FtlConfig;
use storlab_model::devices::flash::ftl::layer::Ftl;
use storlab_model::devices::flash::ftl::types::{
    GcPolicy, Geometry, Mapping, Precondition, WearLeveling,
};

fn cfg(policy: GcPolicy, wl: WearLeveling) -> FtlConfig {
    FtlConfig {
        mapping: Mapping::Page,
        map_unit_bytes: 4096,
        gc_policy: policy,
        gc_threshold_blocks: 2,
        wear_leveling: wl,
        static_wl_gap: 4,
        static_wl_interval: 8,
        precondition: Precondition::Fresh,
        fullness: 0.0,
        seed: 7,
        gc_pacing: false,
        map_cache: Default::default(),
    }
}

/// 4 planes x 24 blocks x 8 pages x `upp` units.
fn geo(upp: u32) -> Geometry {
    Geometry {
        planes: 4,
        blocks_per_plane: 24,
        pages_per_block: 8,
        units_per_page: upp,
    }
}

fn ftl(c: &FtlConfig, g: Geometry, logical: u64) -> Ftl {
    Ftl::new(c, g, logical, (0..g.planes).collect()).expect("fits")
}

const POLICIES: [GcPolicy; 4] = [
    GcPolicy::Greedy,
    GcPolicy::CostBenefit,
    GcPolicy::Random,
    GcPolicy::Fifo,
];
const WLS: [WearLeveling; 3] = [
    WearLeveling::None,
    WearLeveling::Dynamic,
    WearLeveling::Static,
];

#[derive(Clone, Debug)]
enum Step {
    Write(u32),
    Trim(u32),
    Pad,
}

fn steps(lpns: u32) -> impl Strategy<Value = Vec<Step>> {
    let step = prop_oneof![
        8 => (0..lpns).prop_map(Step::Write),
        1 => (0..lpns).prop_map(Step::Trim),
        1 => Just(Step::Pad),
    ];
    prop::collection::vec(step, 1..3000)
}

fn apply(f: &mut Ftl, s: &Step) {
    match *s {
        Step::Write(l) => {
            f.write(l);
        }
        Step::Trim(l) => f.trim(l),
        Step::Pad => {
            f.pad_open_pages();
        }
    }
    f.ops.clear();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// After every step: the bijection and block counts hold (`check`),
    /// every unit written and not trimmed maps to a valid physical unit,
    /// every trimmed or never-written unit maps to nothing, and every plane
    /// keeps at least one free block in reserve.
    #[test]
    fn invariants_hold_under_any_sequence(
        policy in 0usize..4, wl in 0usize..3, upp in 1u32..3, ops in steps(440)
    ) {
        let g = geo(upp);
        // raw units = 4*24*8*upp; leave the GC reserve (threshold+2 blocks per plane) and some slack
        let logical = (g.raw_units() * 55 / 100) as u32;
        let mut f = ftl(&cfg(POLICIES[policy], WLS[wl]), g, logical as u64);
        let mut written = vec![false; logical as usize];
        for s in &ops {
            let s = match *s {
                Step::Write(l) => Step::Write(l % logical),
                Step::Trim(l) => Step::Trim(l % logical),
                Step::Pad => Step::Pad,
            };
            apply(&mut f, &s);
            match s {
                Step::Write(l) => written[l as usize] = true,
                Step::Trim(l) => written[l as usize] = false,
                Step::Pad => {}
            }
            prop_assert_eq!(f.check(), Ok(()));
            for p in 0..g.planes {
                prop_assert!(f.free_blocks(p) >= 1, "plane {} has no free block left", p);
            }
        }
        for (l, &w) in written.iter().enumerate() {
            prop_assert_eq!(f.lookup(l as u32).is_some(), w, "lpn {} lost or resurrected", l);
        }
        prop_assert_eq!(f.mapped_units(), written.iter().filter(|&&w| w).count() as u64);
    }

    /// The same configuration and steps give the same state and counters.
    #[test]
    fn deterministic(policy in 0usize..4, wl in 0usize..3, ops in steps(200)) {
        let g = geo(2);
        let logical = g.raw_units() / 2;
        let run = || {
            let mut f = ftl(&cfg(POLICIES[policy], WLS[wl]), g, logical);
            for s in &ops {
                let s = match *s {
                    Step::Write(l) => Step::Write(l % logical as u32),
                    Step::Trim(l) => Step::Trim(l % logical as u32),
                    Step::Pad => Step::Pad,
                };
                apply(&mut f, &s);
            }
            let map: Vec<Option<u32>> = (0..logical as u32).map(|l| f.lookup(l)).collect();
            (map, f.erase_counts(), f.counters)
        };
        prop_assert_eq!(run(), run());
    }
}

/// Write `n` uniformly random units of `0..span`.
fn random_writes(f: &mut Ftl, span: u32, n: u64, seed: u64) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    for _ in 0..n {
        f.write(rng.gen_range(0..span));
        f.ops.clear();
    }
}

#[test]
fn preconditioning_fills_and_ages() {
    let g = Geometry {
        planes: 8,
        blocks_per_plane: 64,
        pages_per_block: 32,
        units_per_page: 1,
    };
    let logical = g.raw_units() * 80 / 100;
    let c = cfg(GcPolicy::Greedy, WearLeveling::Dynamic);

    let mut fresh = ftl(&c, g, logical);
    fresh.precondition(Precondition::Fresh, 1.0);
    assert_eq!(fresh.mapped_units(), 0);
    assert_eq!(fresh.wear().1, 0, "a fresh device has no erases");

    let mut full = ftl(&c, g, logical);
    full.precondition(Precondition::Full, 0.5);
    assert_eq!(full.mapped_units(), logical / 2);
    assert_eq!(full.check(), Ok(()));
    assert!(full.ops.is_empty(), "preconditioning emits no NAND work");
    assert_eq!(
        full.counters.host_units, 0,
        "counters restart after preconditioning"
    );

    let mut aged = ftl(&c, g, logical);
    aged.precondition(Precondition::Aged, 1.0);
    assert_eq!(aged.mapped_units(), logical);
    assert_eq!(aged.check(), Ok(()));
    assert!(
        aged.wear().2 > 0.5,
        "aging erased blocks: mean erases {}",
        aged.wear().2
    );
    // steady state: random overwrites now collect garbage at once and keep a
    // write amplification close to the one they end with
    random_writes(&mut aged, logical as u32, logical / 4, 99);
    let wa_first = aged.write_amplification();
    assert!(
        wa_first > 1.5,
        "an aged 80%-full device amplifies writes (WA {wa_first})"
    );
    let c0 = aged.counters;
    random_writes(&mut aged, logical as u32, logical / 4, 100);
    let c1 = aged.counters;
    let wa_second = (c1.host_units - c0.host_units + c1.moved_units - c0.moved_units) as f64
        / (c1.host_units - c0.host_units) as f64;
    assert!(
        (wa_second - wa_first).abs() < 0.1 * wa_first,
        "not in steady state: WA {wa_first} then {wa_second}"
    );

    // a full (sequentially written, not aged) device starts with no garbage
    random_writes(&mut full, (logical / 2) as u32, 1000, 5);
    assert_eq!(
        full.counters.moved_units, 0,
        "no collection before the free pool runs low"
    );
}

#[test]
fn greedy_beats_fifo_on_uniform_random_writes() {
    let g = Geometry {
        planes: 4,
        blocks_per_plane: 128,
        pages_per_block: 32,
        units_per_page: 1,
    };
    let logical = g.raw_units() * 85 / 100;
    let wa = |p: GcPolicy| {
        let mut f = ftl(&cfg(p, WearLeveling::Dynamic), g, logical);
        f.precondition(Precondition::Full, 1.0);
        random_writes(&mut f, logical as u32, logical * 3, 11);
        assert_eq!(f.check(), Ok(()));
        f.write_amplification()
    };
    let (greedy, fifo, cb, random) = (
        wa(GcPolicy::Greedy),
        wa(GcPolicy::Fifo),
        wa(GcPolicy::CostBenefit),
        wa(GcPolicy::Random),
    );
    assert!(greedy > 1.0 && fifo > 1.0 && cb > 1.0 && random > 1.0);
    assert!(
        greedy < fifo,
        "greedy WA {greedy} should be below FIFO's {fifo} for uniform writes"
    );
    assert!(
        greedy < random,
        "greedy WA {greedy} should be below random's {random}"
    );
}

#[test]
fn static_wear_leveling_spreads_erases_of_hot_data() {
    // 10% of the space takes 95% of the writes; the rest is written once
    let g = Geometry {
        planes: 2,
        blocks_per_plane: 64,
        pages_per_block: 16,
        units_per_page: 1,
    };
    let logical = g.raw_units() * 75 / 100;
    let spread = |wl: WearLeveling| {
        let mut c = cfg(GcPolicy::Greedy, wl);
        c.static_wl_gap = 8;
        c.static_wl_interval = 16;
        let mut f = ftl(&c, g, logical);
        f.precondition(Precondition::Full, 1.0);
        let hot = (logical / 10) as u32;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        for _ in 0..logical * 20 {
            let l = if rng.gen_bool(0.95) {
                rng.gen_range(0..hot)
            } else {
                rng.gen_range(hot..logical as u32)
            };
            f.write(l);
            f.ops.clear();
        }
        assert_eq!(f.check(), Ok(()));
        let e = f.erase_counts();
        (
            *e.iter().max().unwrap() - *e.iter().min().unwrap(),
            f.counters.wl_moves,
        )
    };
    let (none, _) = spread(WearLeveling::None);
    let (dynamic, _) = spread(WearLeveling::Dynamic);
    let (stat, moves) = spread(WearLeveling::Static);
    assert!(moves > 0, "static levelling moved no cold block");
    assert!(
        stat < dynamic,
        "static levelling should narrow the erase spread ({stat} vs dynamic {dynamic})"
    );
    assert!(
        dynamic <= none,
        "dynamic levelling should not widen the spread ({dynamic} vs none {none})"
    );
}

#[test]
fn trim_frees_space_and_lowers_write_amplification() {
    let g = Geometry {
        planes: 4,
        blocks_per_plane: 64,
        pages_per_block: 32,
        units_per_page: 1,
    };
    let logical = g.raw_units() * 85 / 100;
    let run = |trim: bool| {
        let mut f = ftl(&cfg(GcPolicy::Greedy, WearLeveling::Dynamic), g, logical);
        f.precondition(Precondition::Full, 1.0);
        if trim {
            for l in (logical / 2) as u32..logical as u32 {
                f.trim(l);
            }
        }
        random_writes(&mut f, (logical / 2) as u32, logical * 2, 4);
        f.write_amplification()
    };
    let (kept, trimmed) = (run(false), run(true));
    assert!(
        trimmed < kept,
        "trimming half the space should lower WA ({trimmed} vs {kept})"
    );
}

#[test]
fn too_little_spare_space_is_refused() {
    let g = geo(1);
    let c = cfg(GcPolicy::Greedy, WearLeveling::Dynamic);
    let err = Ftl::new(&c, g, g.raw_units(), (0..g.planes).collect())
        .err()
        .expect("no room for GC");
    assert!(
        err.to_string().contains("reserved for garbage collection"),
        "{err}"
    );
}

#[test]
fn in_place_mapping_has_no_garbage_collection() {
    let mut c = cfg(GcPolicy::Greedy, WearLeveling::None);
    c.mapping = Mapping::InPlace;
    let g = geo(1);
    let mut f = ftl(&c, g, g.raw_units());
    for l in 0..g.raw_units() as u32 {
        assert_eq!(f.lookup(l), f.lookup(l), "fixed address");
    }
    random_writes(&mut f, g.raw_units() as u32, 10_000, 1);
    assert_eq!(f.counters.moved_units, 0);
    assert_eq!(f.counters.erases, 0);
    assert_eq!(f.write_amplification(), 1.0);
    // every logical unit has its own physical unit
    let mut seen: Vec<u32> = (0..g.raw_units() as u32)
        .map(|l| f.lookup(l).unwrap())
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len() as u64, g.raw_units());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// At the largest capacity the geometry accepts (only the garbage
    /// collection reserve spare), any write sequence still finds room and
    /// keeps every invariant.
    #[test]
    fn fullest_device_still_makes_room(policy in 0usize..4, upp in 1u32..3, seed in 0u64..1000) {
        let g = geo(upp);
        let c = cfg(POLICIES[policy], WearLeveling::Static);
        let reserve = g.planes as u64 * (c.gc_threshold_blocks as u64 + 2) * g.units_per_block() as u64;
        let logical = g.raw_units() - reserve;
        let mut f = ftl(&c, g, logical);
        f.precondition(Precondition::Full, 1.0);
        random_writes(&mut f, logical as u32, logical * 3, seed);
        prop_assert_eq!(f.check(), Ok(()));
        prop_assert_eq!(f.mapped_units(), logical);
    }
}
