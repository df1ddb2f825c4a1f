//! The sensitivity check (`storlab_lab::sensitivity`): rows that cannot
//! move with their device are found, rows that measure a device are not,
//! and every device preset takes both perturbations.

use std::collections::BTreeSet;
use std::path::Path;

use storlab_lab::sensitivity::{self, Action, Perturbation, KEYS};
use storlab_lab::studies;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

/// Every preset in presets/, by name.
fn presets() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("presets/")
        .filter_map(|e| {
            let p = e.expect("an entry").path();
            (p.extension()? == "toml").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    names.sort();
    assert!(names.len() > 20, "{names:?}");
    names
}

#[test]
fn every_preset_takes_both_perturbations() {
    let store = PresetStore::default();
    // the keys each perturbation set somewhere, nested lists included
    let mut seen = Vec::new();
    for name in presets() {
        let (_, cfg) = SystemConfig::load(&store, &name, &[]).expect("the preset loads");
        for p in Perturbation::ALL {
            let ov = sensitivity::overrides(&name, &[], p)
                .unwrap_or_else(|e| panic!("{name}, {}: {e:?}", p.label()));
            // what the check loaded, built too: RAID members and tiers'
            // devices are loaded only when the device is built
            let (_, pc) = SystemConfig::load(&store, &name, &ov)
                .unwrap_or_else(|e| panic!("{name} {ov:?}: {e}"));
            pc.build_device_in(&store)
                .unwrap_or_else(|e| panic!("{name} {ov:?}: {e}"));
            // only the null device (latency 0, no bandwidth limit) and a
            // fixed device without a bandwidth have nothing to perturb
            let nothing = ov.is_empty();
            let fixed_without = sensitivity::class_of(&cfg) == "fixed"
                && (cfg.device.latency_ns == 0 || p == Perturbation::Bandwidth)
                && cfg.device.bandwidth_bytes_per_s.is_none();
            assert_eq!(nothing, fixed_without, "{name}, {}: {ov:?}", p.label());
            seen.extend(ov.iter().map(|o| (p, o.clone())));
        }
    }
    // every key of the table is a real key of some preset (a misspelt key
    // would be skipped as absent, not refused)
    for k in KEYS {
        let Action::Scale(path, _) = k.action else {
            continue;
        };
        assert!(
            seen.iter()
                .any(|(p, o)| *p == k.perturbation && o.contains(&format!("{path}="))),
            "{} {}: {path} set by no preset",
            k.class,
            k.perturbation.label()
        );
    }
    // every class has a line for each perturbation
    let classes: BTreeSet<&str> = KEYS.iter().map(|k| k.class).collect();
    for c in &classes {
        for p in Perturbation::ALL {
            assert!(
                KEYS.iter().any(|k| k.class == *c && k.perturbation == p),
                "{c}: no key for {}",
                p.label()
            );
        }
    }
}

#[test]
fn nested_devices_keep_their_overrides() {
    // raid-disk's members keep their own member_set ahead of the
    // perturbation, and a spec's own overrides are honoured (a media
    // latency set on the command line is the one doubled)
    let ov = sensitivity::overrides("raid-disk", &[], Perturbation::Latency).expect("perturbs");
    assert_eq!(ov.len(), 1, "{ov:?}");
    assert!(
        ov[0].starts_with(
            "raid.member_set=[\"disk.write_cache=false\", \"disk.write_through_staging=true\", \"disk.seek_track_to_track_ns=2000000\""
        ),
        "{ov:?}"
    );
    let ov = sensitivity::overrides(
        "haste-pcm",
        &["media.read_ns=100".to_string()],
        Perturbation::Latency,
    )
    .expect("perturbs");
    assert!(ov.contains(&"media.read_ns=200".to_string()), "{ov:?}");
    // the swap path: only its swap device
    let ov = sensitivity::overrides("swap-linux", &[], Perturbation::Bandwidth).expect("perturbs");
    assert_eq!(ov.len(), 1, "{ov:?}");
    assert!(ov[0].starts_with("swap.device_set=[\"pcie."), "{ov:?}");
}

#[test]
fn apps_kv_journaled_rows_do_not_move() {
    // the model's journaled MongoDB commits on a timer, off the client's
    // path: its NVMM-Opt / DRAM ratio is the same on any device. So the
    // rows are the study's finding (about equal), pass/fail and out of the
    // medians, not numeric agreement.
    let base = studies::prepare("apps-kv")
        .expect("known")
        .run(&|| {})
        .expect("runs");
    let ratio = |rep: &storlab_lab::Reproduction, i: usize| -> f64 {
        rep.rows[i]
            .model
            .trim_end_matches('x')
            .parse()
            .expect("a ratio")
    };
    let journaled: Vec<usize> = (0..base.rows.len())
        .filter(|&i| base.rows[i].what.contains("JOURNALED: NVMM-Opt / DRAM"))
        .collect();
    assert_eq!(journaled.len(), 6, "{:#?}", base.rows);
    for p in Perturbation::ALL {
        let slow = sensitivity::prepare("apps-kv", p)
            .expect("perturbed")
            .run(&|| {})
            .expect("runs");
        for &i in &journaled {
            assert!(base.rows[i].value.is_none(), "{:?}", base.rows[i]);
            let (a, b) = (ratio(&base, i), ratio(&slow, i));
            assert!(
                sensitivity::change(a, b) < 0.01,
                "{}: {a} against {b} with {}",
                base.rows[i].what,
                p.label()
            );
        }
    }
    // and the numeric check finds no such row left among the scored ones
    let flagged = sensitivity::check("apps-kv").expect("runs");
    assert!(
        flagged.iter().all(|r| !r.what.contains("JOURNALED")),
        "{flagged:#?}"
    );
}

/// Whether the row of `study` whose `what` starts with `what` is flagged
/// (the row must exist and be numeric).
fn flagged(study: &str, what: &str) -> bool {
    let base = studies::prepare(study)
        .expect("known")
        .run(&|| {})
        .expect("runs");
    let i = base
        .rows
        .iter()
        .position(|r| r.what.starts_with(what))
        .unwrap_or_else(|| panic!("{study}: no row {what}"));
    assert!(base.rows[i].value.is_some(), "{study}: {what} is numeric");
    let f = sensitivity::check_against(&base, &|| {}).expect("runs");
    f.iter().any(|r| r.index == i)
}

#[test]
fn device_rows_move() {
    assert!(!flagged("haste-ddr", "haste-dram, 4 KB read latency"));
    assert!(!flagged("peers", "RAID-Disk, 4 KB random read IOPS"));
}

#[test]
fn perturbed_plans_keep_their_runs() {
    // every run of the study, in its place, with overrides appended
    let base = studies::prepare("haste-ddr").expect("known");
    for p in Perturbation::ALL {
        let pert = sensitivity::prepare("haste-ddr", p).expect("perturbs");
        assert_eq!(pert.plan.len(), base.plan.len());
        for (b, q) in base.plan.specs().iter().zip(pert.plan.specs()) {
            assert_eq!((&b.device, &b.fio), (&q.device, &q.fio));
            assert!(q.overrides.len() > b.overrides.len(), "{q:?}");
            assert_eq!(q.overrides[..b.overrides.len()], b.overrides[..]);
        }
    }
}

/// The audit's "targets taken from the model": a target is a published
/// number, so it stays put when every device is made slower, while the
/// model's figures move.
#[test]
fn targets_do_not_move_with_the_device() {
    for study in ["moneta", "haste-ddr"] {
        let base = studies::prepare(study)
            .expect("a study")
            .run(&|| {})
            .expect("runs");
        let slow = sensitivity::prepare(study, Perturbation::Latency)
            .expect("perturbed")
            .run(&|| {})
            .expect("runs");
        assert_eq!(base.rows.len(), slow.rows.len(), "{study}");
        let mut moved = 0;
        for (a, b) in base.rows.iter().zip(&slow.rows) {
            assert_eq!(a.what, b.what, "{study}");
            assert_eq!(
                (a.target, &a.published),
                (b.target, &b.published),
                "{study}: {}",
                a.what
            );
            moved += usize::from(a.value != b.value);
        }
        assert!(moved > 0, "{study}: no model figure moved");
    }
}
