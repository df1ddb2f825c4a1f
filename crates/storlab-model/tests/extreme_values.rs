//! Every numeric field of a preset of every device class, set to an
//! extreme value (zero, one, negative, huge, tiny fractions): the loader
//! either refuses it with an error naming the field, or the device it
//! builds serves a mixed workload to the end with consistent times. Never
//! a panic (debug builds check arithmetic overflow), a hang or an
//! allocation the size of the value. The random keys of `config_props.rs`
//! rarely hit a real field; this walks all of them.

use std::panic::{catch_unwind, AssertUnwindSafe};

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

mod common;

/// Values tried in every integer field.
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "3",
    "4294967296",
    "1152921504606846976",
    "9223372036854775807",
];
/// Values tried in every float field.
const FLOATS: &[&str] = &["0.0", "1e-12", "-1.0", "1e12", "1e300", "nan", "inf"];

/// One preset per device class and model path (the other presets of a
/// family differ in values only), with the overrides it is walked from.
/// Solid-state drives are walked shrunk (64 blocks a plane, 128 MiB): their
/// FTL tables follow the raw capacity, and at full size the walk's ~400
/// builds of one drive took 10 s in a debug build.
const PRESETS: &[(&str, &[&str])] = &[
    ("null", &[]),
    ("ddr-pcm", &[]),
    ("dram-mem", &[]),
    ("nvmm-opt", &[]),
    ("pm-lat", &[]),
    ("moneta-spin", &[]),
    ("moneta-2q", &[]),
    ("haste-pcm", &[]),
    ("hdd-7200", &[]),
    ("raid-disk", &[]),
    ("micron-psd", SMALL_SSD),
    ("x25e", SMALL_SSD),
    ("fusion-io", SMALL_SSD),
    (
        "sata-ssd",
        &[
            "ssd.nand.blocks_per_plane=8",
            "device.capacity_bytes=134217728",
        ],
    ),
    ("flash-cache-wb", SMALL_TIER),
];
/// The write-back flash cache over a small ioDrive.
const SMALL_TIER: &[&str] = &[
    "tier.cache_set=[\"ssd.nand.blocks_per_plane=64\", \"device.capacity_bytes=134217728\"]",
    "tier.cache_bytes=67108864",
];
const SMALL_SSD: &[&str] = &[
    "ssd.nand.blocks_per_plane=64",
    "device.capacity_bytes=134217728",
];

/// Most device events one workload may take before it counts as a hang.
const MAX_EVENTS: usize = 2_000_000;

/// Load `preset` with `key=value`; if it loads, build and drive it.
/// `Ok(true)` when it loaded, `Ok(false)` when refused (with a message
/// naming the key).
fn try_one(
    store: &PresetStore,
    (preset, base): (&str, &[&str]),
    key: &str,
    value: &str,
) -> Result<bool, String> {
    let mut o: Vec<String> = base
        .iter()
        .filter(|b| !b.starts_with(&format!("{key}=")))
        .map(|b| b.to_string())
        .collect();
    o.push(format!("{key}={value}"));
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<bool, String> {
        let cfg = match SystemConfig::load(store, preset, &o) {
            Ok((_, cfg)) => cfg,
            Err(e) => {
                let msg = e.to_string();
                let leaf = key.rsplit('.').next().unwrap_or(key);
                // The message names the field (or, for a table-wide rule,
                // its table).
                let table = key.split('.').next().unwrap_or(key);
                if !msg.contains(leaf) && !msg.contains(table) {
                    return Err(format!("refused without naming {key}: {msg}"));
                }
                return Ok(false);
            }
        };
        let mut d = match cfg.build_device() {
            Ok(d) => d,
            Err(_) => return Ok(false),
        };
        let reqs = common::workload(d.capacity());
        let done = common::drive(d.as_mut(), &reqs, MAX_EVENTS)?;
        let _ = d.report(done.values().map(|c| c.at).max().unwrap_or(0));
        Ok(true)
    }));
    match outcome {
        Ok(r) => r,
        Err(p) => Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("?")
        )),
    }
}

#[test]
fn every_numeric_field_at_its_extremes_is_refused_or_served() {
    let store = PresetStore::default();
    let mut failures = Vec::new();
    let (mut loaded, mut refused) = (0, 0);
    for &(preset, base) in PRESETS {
        let base_o: Vec<String> = base.iter().map(|b| b.to_string()).collect();
        let (resolved, _) = SystemConfig::load(&store, preset, &base_o).expect("preset loads");
        for (key, leaf) in &resolved.leaves {
            let values = match &leaf.value {
                toml_edit::Value::Integer(_) => INTS,
                toml_edit::Value::Float(_) => FLOATS,
                _ => continue,
            };
            for v in values {
                match try_one(&store, (preset, base), key, v) {
                    Ok(true) => loaded += 1,
                    Ok(false) => refused += 1,
                    Err(e) => failures.push(format!("{preset}: {key}={v}: {e}")),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        loaded + refused + failures.len(),
        failures.join("\n")
    );
    // Both outcomes occur: the walk reached real fields.
    assert!(
        loaded > 100 && refused > 100,
        "loaded {loaded}, refused {refused}"
    );
}
