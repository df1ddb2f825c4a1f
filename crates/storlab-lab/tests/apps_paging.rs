//! The apps-paging study: NPB and DGEMM paging with 8 GB of DRAM (64 MiB
//! at the study's 1/128 scale) on each swap device.

mod support;
use support::reproduce;

use storlab_lab::studies::apps_paging;

#[test]
fn apps_paging_rows_and_figure() {
    let (rep, _) = reproduce("apps-paging");
    // disk RAID smallest and largest, SSD RAID, Fusion-io, HASTE, DDR;
    // Table V's five Moneta figures
    assert_eq!(rep.rows.len(), 2 + 2 + 2 + 5, "{:?}", rep.rows);
    assert!(rep.failures().is_empty(), "{:?}", rep.failures());
    let f = &rep.figures[0];
    let series = &f.panels[0].series;
    assert_eq!(series.len(), apps_paging::DEVICES.len());
    let of = |label: &str| {
        series
            .iter()
            .find(|s| s.label == label)
            .expect("series")
            .points
            .iter()
            .map(|p| p.1)
            .collect::<Vec<f64>>()
    };
    let disk = of("disk RAID");
    let ssd = of("SSD RAID");
    let haste = of("HASTE PCM");
    for p in 0..apps_paging::NPB {
        // paging slows every NPB program, the disk RAID most
        assert!(haste[p] > 1.0, "{p}: {haste:?}");
        assert!(
            disk[p] > ssd[p] && ssd[p] > haste[p],
            "{p}: {disk:?} {ssd:?} {haste:?}"
        );
    }
}

/// Every paging program on an NVM array, a flash SSD, an SSD RAID and
/// NVMM as the swap device, at 1/8 of the default sizes (8 MiB of DRAM,
/// half a pass: the mechanisms only need DRAM well past the watermarks
/// and a footprint past DRAM): deterministic, never faster than enough
/// DRAM, and an NVM array never slower to page to than one flash SSD.
#[test]
fn every_program_runs_on_each_device_class_deterministically() {
    let set: Vec<String> = vec!["scale=0.125".into(), "passes=0.5".into()];
    let run = |name: &str, dev: &str| {
        let app = apps_paging::program(name, &set).expect("builds");
        let d = storlab_model::SystemConfig::load(
            &storlab_model::config::PresetStore::default(),
            dev,
            &[],
        )
        .expect("preset")
        .1;
        storlab_apps::paging::run(
            &storlab_model::config::PresetStore::default(),
            storlab_apps::paging::SWAP_PRESET,
            &app,
            &d,
            &[],
            7,
        )
        .unwrap_or_else(|e| panic!("{name} on {dev}: {e}"))
    };
    for name in storlab_apps::paging::APPS.iter().map(|a| a.name) {
        let mut rel = Vec::new();
        for dev in ["moneta-balance", "x25e", "raid-ssd", "nvmm-opt"] {
            let r = run(name, dev);
            assert!(
                r.relative > 0.0 && r.relative <= 1.0 + 1e-9,
                "{name} on {dev}: {r:?}"
            );
            assert!(
                r.paged.major_faults > 0,
                "{name} on {dev} does not page: {r:?}"
            );
            rel.push(r.relative);
        }
        assert!(
            rel[0] >= rel[1],
            "{name}: moneta {} x25e {}",
            rel[0],
            rel[1]
        );
        let a = run(name, "moneta-balance");
        let b = run(name, "moneta-balance");
        assert_eq!(
            serde_json::to_string(&a.paged).expect("json"),
            serde_json::to_string(&b.paged).expect("json"),
            "{name}"
        );
        assert_eq!(a.metric, b.metric, "{name}");
    }
}
