//! Moneta (MICRO 2010): the IO-stack variants on random accesses through
//! the raw block device (docs/spec/targets.md, "Moneta"; docs/spec/pcie-arrays.md), and the
//! study's main figure, bandwidth against request size for every variant
//! beside the ideal link.

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, RunId, Spec};
use crate::places::{MONETA_STACK as STACK, MONETA_VARIANTS as VARIANTS_TEXT};
use crate::report::{Class, Prepared, Reproduction, Row};

/// The software variants, in the order the study adds them.
pub const VARIANTS: [&str; 6] = [
    "moneta-base",
    "moneta-nosched",
    "moneta-atomic",
    "moneta-spin",
    "moneta-2q",
    "moneta-balance",
];

/// Request sizes of the bandwidth curves: 512 B to 512 KB.
pub fn sizes() -> Vec<u64> {
    (9..=19).map(|s| 1u64 << s).collect()
}

/// The access types of the curves: fio `rw` and the panel's name.
pub const ACCESS: [(&str, &str); 3] = [
    ("randread", "reads"),
    ("randwrite", "writes"),
    ("randrw", "50/50"),
];

/// IOs per thread of a bandwidth point: about 2 MiB per thread, at least
/// 40 requests and at most 600 (enough for the 16 threads to reach a
/// steady state; more only costs time).
pub fn xdd_ios(bs: u64) -> u32 {
    ((2u64 << 20) / bs).clamp(40, 600) as u32
}

/// fio's spelling of a size.
pub fn bs_arg(bs: u64) -> String {
    if bs >= 1024 {
        format!("{}k", bs / 1024)
    } else {
        bs.to_string()
    }
}

/// The bandwidth point of `variant` at `bs` for access `rw`.
pub fn curve_point(variant: &str, rw: &str, bs: u64) -> Spec {
    Spec::xdd(variant, &[], rw, &bs_arg(bs), xdd_ios(bs))
}

/// One direction's link bandwidth of `preset`, GB/s (lanes × lane rate).
pub fn link_gbps(preset: &str) -> f64 {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &[])
        .expect("built-in Moneta presets load");
    let p = cfg.pcie.expect("Moneta presets are PCIe arrays");
    p.link_lanes as f64 * p.lane_bytes_per_s as f64 / 1e9
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let q = |p: &mut Plan, dev: &str, ov: &[&str], rw: &str, bs: &str, n: u32| {
        p.add(Spec::qd1(dev, ov, rw, bs, n))
    };
    let base_read = q(&mut p, "moneta-base", &[], "randread", "4k", 2000);
    let xfs = ["host.file_system=\"xfs\""];
    let lat = |p: &mut Plan, dev: &str, ov: &[&str], rw: &str| q(p, dev, ov, rw, "4k", 1000);
    let mut xfs_runs = Vec::new();
    let mut nosched_runs = Vec::new();
    for rw in ["randread", "randwrite"] {
        xfs_runs.push((
            lat(&mut p, "moneta-base", &[], rw),
            // the study's file-system runs used direct IO (XDD) on the file
            // a write pass left (the state rule: every block written)
            p.add(
                Spec::qd1("moneta-base", &xfs, rw, "4k", 1000)
                    .with_fio(&["--direct=1", "--overwrite=1"]),
            ),
        ));
        nosched_runs.push((
            lat(&mut p, "moneta-base", &[], rw),
            lat(&mut p, "moneta-nosched", &[], rw),
        ));
    }
    let atomic = (
        lat(&mut p, "moneta-nosched", &[], "randwrite"),
        lat(&mut p, "moneta-atomic", &[], "randwrite"),
    );
    let spin = (
        q(&mut p, "moneta-atomic", &[], "randwrite", "512", 1000),
        q(&mut p, "moneta-spin", &[], "randwrite", "512", 1000),
    );
    // every point of every curve
    let mut curves: Vec<Vec<Vec<RunId>>> = Vec::new();
    for v in VARIANTS {
        curves.push(
            ACCESS
                .iter()
                .map(|(rw, _)| {
                    sizes()
                        .iter()
                        .map(|&bs| p.add(curve_point(v, rw, bs)))
                        .collect()
                })
                .collect(),
        );
    }
    let link = link_gbps("moneta-spin");
    let finish = move |r: &crate::measure::Results| {
        let var = |name: &str| VARIANTS.iter().position(|v| *v == name).expect("a variant");
        let size_at = |bs: u64| sizes().iter().position(|&s| s == bs).expect("a curve size");
        // bandwidth of variant, access (0 read, 1 write, 2 mixed), size
        let bw = |v: &str, a: usize, bs: u64| {
            let run = &r[curves[var(v)][a][size_at(bs)]];
            if a == 2 {
                run.total_gbps()
            } else {
                run.gbps(a)
            }
        };
        let mut rows = vec![
            Row::within(
                "moneta-base, one thread, 4 KB read latency",
                r[base_read].lat_us(0),
                21.0,
                0.10,
                "µs",
            )
            .at(STACK),
            Row::within(
                "moneta-base, software share of that latency",
                r[base_read].software_share(0) * 100.0,
                62.0,
                0.10,
                "%",
            )
            .at(STACK),
        ];
        for (d, (rw, published)) in [("read", 4.2), ("write", 5.8)].iter().enumerate() {
            let (raw, x) = xfs_runs[d];
            rows.push(
                Row::within(
                    format!("XFS in the path adds, 4 KB {rw}"),
                    r[x].lat_us(d) - r[raw].lat_us(d),
                    *published,
                    0.25,
                    "µs",
                )
                .at(STACK)
                .input("xfs_ns (host.xfs_ns), the IO-stack table's XFS row"),
            );
        }
        for (d, rw) in ["read", "write"].iter().enumerate() {
            let (b, n) = nosched_runs[d];
            rows.push(
                Row::within(
                    format!("+NoSched saves, 4 KB {rw} latency"),
                    r[b].lat_us(d) - r[n].lat_us(d),
                    2.0,
                    0.30,
                    "µs",
                )
                .at(VARIANTS_TEXT)
                .input("scheduler_handoff_ns (host.scheduler_handoff_ns = 2 µs)"),
            );
        }
        for (d, rw) in ["read", "write"].iter().enumerate() {
            rows.push(
                Row::within(
                    format!("+NoSched / base, peak 4 KB {rw} bandwidth"),
                    bw("moneta-nosched", d, 4096) / bw("moneta-base", d, 4096),
                    4.0,
                    0.30,
                    "x",
                )
                .at(VARIANTS_TEXT),
            );
        }
        rows.push(
            Row::within(
                "+Atomic saves, 4 KB write latency",
                r[atomic.0].lat_us(1) - r[atomic.1].lat_us(1),
                1.0,
                0.30,
                "µs",
            )
            .at(VARIANTS_TEXT),
        );
        rows.push(
            Row::within(
                "+Atomic adds, 4 KB write bandwidth",
                (bw("moneta-atomic", 1, 4096) - bw("moneta-nosched", 1, 4096)) * 1000.0,
                460.0,
                0.30,
                "MB/s",
            )
            .at(VARIANTS_TEXT),
        );
        rows.push(
            Row::within(
                "+Spin saves, 512 B write latency",
                r[spin.0].lat_us(1) - r[spin.1].lat_us(1),
                6.0,
                0.30,
                "µs",
            )
            .at(VARIANTS_TEXT),
        );
        let best = sizes()
            .into_iter()
            .filter(|&bs| bs <= 4096)
            .flat_map(|bs| (0..2).map(move |d| (bs, d)))
            .map(|(bs, d)| (bw("moneta-spin", d, bs) - bw("moneta-atomic", d, bs)) * 1000.0)
            .fold(f64::MIN, f64::max);
        rows.push(
            Row::within("+Spin adds at most, 512 B-4 KB", best, 250.0, 0.30, "MB/s")
                .at(VARIANTS_TEXT),
        );
        // the study's words: "near the 2 GB/s link" (its figure, not the
        // preset's link rate)
        for (d, rw) in ["reads", "writes"].iter().enumerate() {
            rows.push(
                Row::within(
                    format!("moneta-spin, 512 KB {rw}, near the 2 GB/s link"),
                    bw("moneta-spin", d, 512 << 10),
                    2.0,
                    0.10,
                    "GB/s",
                )
                .at(VARIANTS_TEXT),
            );
        }
        let (q2, sp) = (
            bw("moneta-2q", 2, 512 << 10),
            bw("moneta-spin", 2, 512 << 10),
        );
        rows.push(
            Row::within(
                "+2Q / +Spin, 50/50 mixed bandwidth",
                q2 / sp,
                1.75,
                0.20,
                "x",
            )
            .at(VARIANTS_TEXT),
        );
        // "about 71 % of the 4 GB/s two-way link": the study's 4 GB/s
        rows.push(
            Row::within(
                "+2Q share of the 4 GB/s two-way link",
                q2 / 4.0 * 100.0,
                71.0,
                0.20,
                "%",
            )
            .at(VARIANTS_TEXT),
        );
        let panels = ACCESS
            .iter()
            .enumerate()
            .map(|(a, (_, title))| {
                let mut series: Vec<Series> = VARIANTS
                    .iter()
                    .map(|v| Series {
                        label: v.to_string(),
                        kind: SeriesKind::Model,
                        points: sizes()
                            .into_iter()
                            .map(|bs| (bs as f64, bw(v, a, bs)))
                            .collect(),
                    })
                    .collect();
                let ideal = if a == 2 { 2.0 * link } else { link };
                series.push(Series {
                    label: "ideal link".into(),
                    kind: SeriesKind::Ideal,
                    points: sizes().into_iter().map(|bs| (bs as f64, ideal)).collect(),
                });
                Panel {
                    title: title.to_string(),
                    series,
                }
            })
            .collect();
        Reproduction {
            study: "moneta".into(),
            class: Class::Device,
            state_rule: "the array needs none (PCM is written in place: no erase, no garbage collection); the XFS runs, XDD's, use the file a write pass left, every block written".into(),
            notes: vec![],
            title: "Caulfield et al., Moneta, MICRO 2010".into(),
            setting: "Random accesses on the raw block device (no file system unless stated); latency: one thread, queue depth 1; bandwidth: XDD-style, 16 threads, one request each.".into(),
            rows,
            figures: vec![Figure {
                id: "moneta-bandwidth".into(),
                title: "Moneta: bandwidth against request size, random accesses, 16 threads".into(),
                x_label: "request size (bytes)".into(),
                y_label: "GB/s".into(),
                x_log: true,
                x_bytes: true,
                y_log: false,
                panels,
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
