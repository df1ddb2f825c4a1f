//! docs/spec/targets.md: every published result, with its tolerance, through
//! the reproductions `storlab lab reproduce` prints (one table serves the
//! report and the test), and the figures' shapes.

use storlab_lab::figure::{Figure, SeriesKind};
use storlab_lab::studies::{self, haste_ddr, moneta, nvmm, placement};
use storlab_lab::Reproduction;

mod support;

fn reproduce(name: &str) -> Reproduction {
    support::reproduce(name).0
}

fn model_series(f: &Figure) -> impl Iterator<Item = &storlab_lab::figure::Series> {
    f.panels
        .iter()
        .flat_map(|p| p.series.iter())
        .filter(|s| s.kind == SeriesKind::Model)
}

#[test]
fn moneta_rows_and_bandwidth_curves() {
    let r = reproduce("moneta");
    assert_eq!(r.rows.len(), 16, "every Moneta row of docs/spec/targets.md");
    let f = &r.figures[0];
    let titles: Vec<&str> = f.panels.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["reads", "writes", "50/50"]);
    let link = moneta::link_gbps("moneta-spin");
    for (k, p) in f.panels.iter().enumerate() {
        let ideal = p
            .series
            .iter()
            .find(|s| s.kind == SeriesKind::Ideal)
            .expect("the ideal link curve");
        let bound = if k == 2 { 2.0 * link } else { link };
        assert!(ideal.points.iter().all(|&(_, y)| y == bound));
        for v in moneta::VARIANTS {
            let s = f.series(&p.title, v).expect("every variant drawn");
            let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
            let want: Vec<f64> = moneta::sizes().iter().map(|&b| b as f64).collect();
            assert_eq!(xs, want, "{v}: 512 B to 512 KB");
            for &(x, y) in &s.points {
                assert!(
                    y > 0.0 && y <= bound * 1.001,
                    "{} {v} at {x} B: {y} GB/s against a {bound} GB/s link",
                    p.title
                );
            }
            // larger requests never cost bandwidth by much (queueing noise
            // at the link's ceiling aside)
            for w in s.points.windows(2) {
                assert!(w[1].1 >= w[0].1 * 0.95, "{} {v}: {:?}", p.title, s.points);
            }
        }
        // without the IO scheduler small requests are no longer bound by
        // its single thread
        let at_4k = |v: &str| f.series(&p.title, v).expect("drawn").points[3].1;
        assert!(at_4k("moneta-nosched") > 2.0 * at_4k("moneta-base"));
    }
}

#[test]
fn haste_ddr_rows_and_media_sweep() {
    let r = reproduce("haste-ddr");
    assert_eq!(
        r.rows.len(),
        12,
        "every HASTE/DDR row of docs/spec/targets.md"
    );
    let f = &r.figures[0];
    for s in model_series(f) {
        let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        let want: Vec<f64> = haste_ddr::sweep_ns().iter().map(|&n| n as f64).collect();
        assert_eq!(xs, want);
        for w in s.points.windows(2) {
            assert!(
                w[1].1 >= w[0].1 - 0.05,
                "{}: latency falls as media slow: {:?}",
                s.label,
                s.points
            );
        }
    }
}

#[test]
fn psd_rows_and_queue_depth_curves() {
    let r = reproduce("psd");
    assert_eq!(r.rows.len(), 6, "PSD rows of docs/spec/targets.md");
    // docs/spec/peer-devices.md: performance depends on queue depth
    let f = &r.figures[0];
    let curve = |panel: &str| -> Vec<f64> {
        f.series(panel, "micron-psd (PCM)")
            .expect("the PSD drawn")
            .points
            .iter()
            .map(|p| p.1)
            .collect()
    };
    let (reads, writes) = (curve("reads"), curve("writes"));
    assert_eq!(writes.len(), storlab_lab::studies::psd::DEPTHS.len());
    // depths 1, 2, 4, ..., 64: writes gain at every doubling (the study's
    // best came at 64), levelling off as the three boards' program budget
    // fills (ssd.nand.programs_per_channel), 2.5x in all
    for w in writes[..7].windows(2) {
        assert!(w[1] > w[0], "writes should grow with iodepth: {writes:?}");
    }
    assert!(
        writes[6] > 2.5 * writes[0],
        "QD64 far above QD1: {writes:?}"
    );
    assert!(
        reads[2] > 1.3 * reads[0],
        "reads grow with iodepth: {reads:?}"
    );
}

#[test]
fn nvmm_rows_and_msync_curves() {
    let r = reproduce("nvmm");
    assert_eq!(r.rows.len(), 8, "every NVMM row of docs/spec/targets.md");
    let f = &r.figures[0];
    let rg = nvmm::regions();
    for m in nvmm::MODES {
        let s = f.series(&f.panels[0].title, m).expect("every mode drawn");
        assert_eq!(s.points.len(), rg.len());
        // default flushing: linear in the region once the lines dominate
        let (a, b) = (s.points[rg.len() - 3], s.points[rg.len() - 2]);
        within(
            &format!("{m}: cost ratio for a 4x region"),
            b.1 / a.1,
            4.0,
            0.1,
        );
    }
    let spf = f
        .series(&f.panels[0].title, "SPF (nvmm-opt)")
        .expect("SPF drawn");
    let grow = spf.points[spf.points.len() - 1].1 / spf.points[0].1;
    let region = rg[rg.len() - 1] as f64 / rg[0] as f64;
    assert!(
        grow * 100.0 < region,
        "SPF grows {grow:.1}x over a {region}x region"
    );
}

fn within(what: &str, x: f64, t: f64, rel: f64) {
    assert!(
        (x - t).abs() <= t * rel,
        "{what}: {x:.3}, expected {t} ±{:.0}%",
        rel * 100.0
    );
}

#[test]
fn flash_placement_findings_and_paging_curves() {
    let r = reproduce("flash-placement");
    assert_eq!(r.rows.len(), 6, "the flash placement findings");
    let f = &r.figures[0];
    let p = &f.panels[0];
    assert_eq!(p.series.len(), placement::PAGING_DEVICES.len());
    for (s, (label, _, max)) in p.series.iter().zip(placement::PAGING_DEVICES) {
        assert_eq!(s.label, label);
        let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        let want: Vec<f64> = placement::RATIOS
            .iter()
            .copied()
            .filter(|r| *r <= max)
            .collect();
        assert_eq!(xs, want);
        // relative to DRAM: never above it, never better with a larger array
        for w in s.points.windows(2) {
            assert!(w[0].1 <= 1.0 + 1e-9, "{label}: {:?}", s.points);
            assert!(w[1].1 <= w[0].1 * 1.05, "{label}: {:?}", s.points);
        }
    }
}

#[test]
fn an_unknown_study_is_refused_with_the_known_names() {
    let e = studies::prepare("monetta").err().expect("refused");
    let msg = e.to_string();
    let known: Vec<&str> = studies::STUDIES.iter().map(|s| s.0).collect();
    assert!(
        known.len() >= 5 && known[..5] == ["moneta", "haste-ddr", "psd", "nvmm", "flash-placement"]
    );
    assert!(
        msg.contains("monetta") && msg.contains(&known.join(", ")),
        "{msg}"
    );
}

#[test]
fn reproductions_are_deterministic_and_written_as_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = studies::prepare("haste-ddr")
        .expect("known")
        .run(&|| {})
        .expect("runs");
    let b = studies::prepare("haste-ddr")
        .expect("known")
        .run(&|| {})
        .expect("runs");
    let files = a.write_files(dir.path()).expect("written");
    let names: Vec<String> = files
        .iter()
        .map(|p| {
            p.file_name()
                .expect("a file")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            "haste-ddr.md",
            "haste-ddr.json",
            "haste-ddr-media-sweep.svg",
            "haste-ddr-media-sweep.csv"
        ]
    );
    let first: Vec<Vec<u8>> = files
        .iter()
        .map(|p| std::fs::read(p).expect("read"))
        .collect();
    b.write_files(dir.path()).expect("written again");
    for (p, before) in files.iter().zip(&first) {
        assert_eq!(
            &std::fs::read(p).expect("read"),
            before,
            "{} differs between runs",
            p.display()
        );
    }
    let svg = String::from_utf8(first[2].clone()).expect("svg text");
    assert!(svg.starts_with("<svg") && svg.contains("haste-dram") && svg.contains("ddr-dram"));
    let csv = String::from_utf8(first[3].clone()).expect("csv text");
    assert_eq!(csv.lines().next(), Some("panel,series,kind,x,y"));
    assert_eq!(csv.lines().count(), 1 + 2 * haste_ddr::sweep_ns().len());
    let md = String::from_utf8(first[0].clone()).expect("md");
    assert!(
        md.contains(
            "| ddr-dram, 4 KB read latency | HASTE study, latency and media sweep | 3.00 µs ±20% |"
        ),
        "{md}"
    );
}
