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

/// With enough DRAM, CG's page visits (943 ns of CPU against a page's
/// traffic at a sixteenth of the host's DRAM bandwidth) and IS's bucket
/// stores are bound by the memory channels, so their native rates fall
/// below 16 threads x 2.26 GHz x IPC 0.6; BT's visits stay bound by their
/// CPU.
#[test]
fn streaming_programs_run_at_the_hosts_dram_bandwidth_with_enough_dram() {
    let set: Vec<String> = vec!["scale=0.125".into(), "passes=0.5".into()];
    let store = storlab_model::config::PresetStore::default();
    let run = |name: &str| {
        let app = apps_paging::program(name, &set).expect("builds");
        let d = storlab_model::SystemConfig::load(&store, "moneta-balance", &[])
            .expect("preset")
            .1;
        storlab_apps::paging::run(&store, storlab_apps::paging::SWAP_PRESET, &app, &d, &[], 7)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let peak = 16.0 * storlab_apps::paging::GHZ * 1e9 * storlab_apps::paging::IPC;
    let cg = run("npb-cg");
    // (all but the last few, as threads finish and fewer share the channels)
    assert!(
        cg.enough.bandwidth_bound * 100 > cg.enough.accesses * 95,
        "{cg:?}"
    );
    // a visit takes at least 4 KiB x 16 / 35 GB/s = 1.87 us against its
    // 943 ns of CPU: about half the CPU-bound rate
    let cpu_share = storlab_apps::paging::CG_CPU_NS / 1870.0;
    assert!(
        cg.metric_enough < (cpu_share + 0.05) * peak,
        "{} of {peak}",
        cg.metric_enough
    );
    let is = run("npb-is");
    assert!(is.enough.bandwidth_bound > is.enough.accesses / 3, "{is:?}");
    let bt = run("npb-bt");
    assert_eq!(bt.enough.bandwidth_bound, 0, "{bt:?}");
    assert!(
        bt.metric_enough > 0.95 * peak,
        "{} of {peak}",
        bt.metric_enough
    );
}
