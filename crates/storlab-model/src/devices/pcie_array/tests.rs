//! The array's shortcuts for the common case (a request to empty queues,
//! a read whose data is ready with a buffer free, an idle controller with
//! nothing queued) against the general paths they stand in for.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};

use super::PcieArray;
use crate::config::PresetStore;
use crate::device::drive;
use crate::{Completion, DevRequest, Device, Op, SystemConfig};

fn array(preset: &str, shortcuts: bool) -> PcieArray {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &[]).expect("preset");
    let mut a = PcieArray::new(
        cfg.pcie.clone().expect("an array preset"),
        cfg.media.clone().expect("media"),
        cfg.power.clone().expect("power"),
        cfg.device.capacity_bytes,
    );
    a.shortcuts = shortcuts;
    a
}

/// Submit `reqs` at their times and run the array to quiescence
/// ([`drive`], which checks every completion): the completions, and the
/// report at the last.
fn run(a: &mut PcieArray, reqs: &[(u64, DevRequest)]) -> (BTreeMap<u64, Completion>, String) {
    let done = drive(a, reqs, usize::MAX).expect("the array runs to quiescence");
    let end = done.values().map(|c| c.at).max().unwrap_or(0);
    (done, format!("{:?}", a.report(end)))
}

/// Requests in bursts with gaps between them (so the queues fill and
/// drain, and the shortcuts' conditions hold now and then fail): reads
/// and writes of 512 B to 1 MiB, aligned and not, and now and then a
/// flush.
fn workload(seed: u64, n: usize, capacity: u64) -> Vec<(u64, DevRequest)> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let mut t = 0u64;
    (0..n)
        .map(|i| {
            t += match rng.gen_range(0..10) {
                0..=5 => 0,
                6..=8 => rng.gen_range(1..3_000),
                _ => rng.gen_range(10_000..200_000),
            };
            let op = match rng.gen_range(0..40) {
                0 => Op::Flush,
                1..=22 => Op::Read,
                _ => Op::Write,
            };
            let len = if op == Op::Flush {
                0
            } else {
                [512, 4096, 8192, 65536, 300_000, 1 << 20][rng.gen_range(0..6)]
            };
            let offset = rng.gen_range(0..capacity / 4096 - 512) * 4096
                + if rng.gen_bool(0.2) { 512 } else { 0 };
            (t, DevRequest::new(i as u64, op, offset, len))
        })
        .collect()
}

#[test]
fn the_shortcuts_do_what_the_general_paths_do() {
    for preset in [
        "moneta-base",
        "moneta-nosched",
        "moneta-spin",
        "moneta-2q",
        "moneta-balance",
        "moneta-atomic",
        "haste-pcm",
        "haste-dram",
    ] {
        for seed in 1..=3 {
            let mut fast = array(preset, true);
            let mut general = array(preset, false);
            let reqs = workload(seed, 3000, fast.capacity);
            let (a, ra) = run(&mut fast, &reqs);
            let (b, rb) = run(&mut general, &reqs);
            for (id, c) in &a {
                assert_eq!(Some(c), b.get(id), "{preset} seed {seed}: request {id}");
            }
            assert_eq!(ra, rb, "{preset} seed {seed}: the reports");
            let taken = fast.taken;
            assert!(
                taken.iter().all(|&n| n > 0),
                "{preset} seed {seed}: every shortcut was taken ({taken:?}: admit, grant, start)"
            );
            assert_eq!(general.taken, [0; 3], "{preset}: none with them off");
        }
    }
}
