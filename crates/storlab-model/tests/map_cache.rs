//! `[ssd.ftl.map_cache]` (and the request limits `raid.member_max_request_bytes`,
//! `host.max_request_bytes`): bad values
//! are errors naming the field; the presets without a map cache keep the
//! whole map resident.

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

fn load(preset: &str, set: &[&str]) -> Result<SystemConfig, String> {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    SystemConfig::load(&PresetStore::default(), preset, &set)
        .map(|(_, c)| c)
        .map_err(|e| e.to_string())
}

#[test]
fn bad_values_name_their_field() {
    for (set, field) in [
        ("ssd.ftl.map_cache.bytes=100", "ssd.ftl.map_cache.bytes"),
        (
            "ssd.ftl.map_cache.entry_bytes=0",
            "ssd.ftl.map_cache.entry_bytes",
        ),
        (
            "ssd.ftl.map_cache.page_entries=0",
            "ssd.ftl.map_cache.page_entries",
        ),
        // a translation page larger than a NAND page (20 KB)
        (
            "ssd.ftl.map_cache.page_entries=8192",
            "ssd.ftl.map_cache.page_entries",
        ),
    ] {
        let e = load("x25e", &[set])
            .err()
            .unwrap_or_else(|| panic!("{set} accepted"));
        assert!(e.contains(field), "{set}: {e}");
    }
    let e = load("raid-ssd", &["raid.member_max_request_bytes=100"]).expect_err("too small");
    assert!(e.contains("raid.member_max_request_bytes"), "{e}");
    for bad in [
        "host.max_request_bytes=100",
        "host.max_request_bytes=4294967296",
    ] {
        let e = load("hdd-7200", &[bad]).expect_err(bad);
        assert!(e.contains("host.max_request_bytes"), "{bad}: {e}");
    }
    let e = load("hdd-7200", &["host.max_request_bytes=-1"]).expect_err("negative");
    assert!(e.contains("max_request_bytes"), "{e}");
    let e = load("x25e", &["ssd.ftl.map_cache.sizes=1"]).expect_err("unknown key");
    assert!(e.contains("sizes"), "{e}");
}

#[test]
fn the_x25e_caches_its_map_and_other_flash_presets_do_not() {
    let c = load("x25e", &[]).unwrap();
    let m = c.ssd.as_ref().expect("an ssd").ftl.map_cache;
    assert!(m.on());
    // 15 MB of 32 KB slots: 480 translation pages of 4 MB of the map each
    assert_eq!(m.slots(), 480);
    for p in ["sata-ssd", "fusion-io", "micron-psd"] {
        let c = load(p, &[]).unwrap();
        assert!(!c.ssd.as_ref().expect("an ssd").ftl.map_cache.on(), "{p}");
    }
}
