//! HASTE and DDR-attached NVM (SC 2010): one thread, random 4 KB, raw
//! device (docs/spec/targets.md, "HASTE and DDR-attached NVM"; docs/spec/ddr-nvm.md), and the
//! media-latency sweep drawn for both attachments.

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Spec};
use crate::places::HASTE_LATENCY;
use crate::report::{at_all, Class, Prepared, Reproduction, Row};

/// The HASTE presets, one per medium.
pub const HASTE: [&str; 3] = ["haste-dram", "haste-sttm", "haste-pcm"];

/// Media read latencies of the sweep: 25 ns doubling to 51.2 µs.
pub fn sweep_ns() -> Vec<u64> {
    (0..12).map(|i| 25u64 << i).collect()
}

/// Where the sweep's DDR growth must outrun HASTE's (the array's
/// controllers hide short media latencies; from 1.6 µs on, the media
/// dominates on the DDR bus).
pub const SWEEP_FROM_NS: u64 = 1600;

/// A point of the sweep: 4 KB random reads on `preset` with media read
/// latency `ns`.
pub fn sweep_point(preset: &str, ns: u64) -> Spec {
    let o = format!("media.read_ns={ns}");
    Spec::qd1(preset, &[&o], "randread", "4k", 200)
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let dirs = [("randread", 0usize, "read"), ("randwrite", 1, "write")];
    let mut lat = Vec::new();
    for dev in HASTE
        .iter()
        .chain(["ddr-dram", "ddr-sttm", "ddr-pcm"].iter())
    {
        for (rw, d, name) in dirs {
            lat.push((*dev, name, d, p.add(Spec::qd1(dev, &[], rw, "4k", 500))));
        }
    }
    let sweep: Vec<_> = ["haste-dram", "ddr-dram"]
        .iter()
        .map(|dev| {
            sweep_ns()
                .into_iter()
                .map(|ns| p.add(sweep_point(dev, ns)))
                .collect::<Vec<_>>()
        })
        .collect();
    let finish = move |r: &crate::measure::Results| {
        let get = |dev: &str, name: &str| {
            let (_, _, d, id) = lat
                .iter()
                .find(|(v, n, _, _)| *v == dev && *n == name)
                .expect("planned");
            r[*id].lat_us(*d)
        };
        let mut rows = Vec::new();
        let mut haste = Vec::new();
        for dev in HASTE {
            for name in ["read", "write"] {
                let l = get(dev, name);
                haste.push(l);
                rows.push(Row::within(
                    format!("{dev}, 4 KB {name} latency"),
                    l,
                    15.5,
                    0.15,
                    "µs",
                ));
            }
        }
        let (lo, hi) = haste
            .iter()
            .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        rows.push(Row::holds(
            "HASTE latency across media",
            "nearly equal",
            format!("{lo:.2}-{hi:.2} µs, spread {:.1}%", (hi / lo - 1.0) * 100.0),
            hi / lo < 1.05,
        ));
        for name in ["read", "write"] {
            rows.push(
                Row::within(
                    format!("ddr-dram, 4 KB {name} latency"),
                    get("ddr-dram", name),
                    3.0,
                    0.20,
                    "µs",
                )
                .input("syscall_entry_ns (with syscall_exit_ns and block_queue_ns: ddr-dram's host costs, CALIBRATED on this figure)"),
            );
        }
        for dev in ["ddr-sttm", "ddr-pcm"] {
            let rd = get(dev, "read") - get("ddr-dram", "read");
            let wr = get(dev, "write") - get("ddr-dram", "write");
            rows.push(Row::holds(
                format!("{dev} against ddr-dram"),
                "above, writes more so than reads",
                format!("read +{rd:.2} µs, write +{wr:.2} µs"),
                rd > 0.0 && wr > rd,
            ));
        }
        let curve = |k: usize| -> Vec<(f64, f64)> {
            sweep_ns()
                .iter()
                .zip(&sweep[k])
                .map(|(&ns, &id)| (ns as f64, r[id].lat_us(0)))
                .collect()
        };
        let (h, d) = (curve(0), curve(1));
        let grows_faster = h
            .iter()
            .zip(&d)
            .filter(|((ns, _), _)| *ns >= SWEEP_FROM_NS as f64)
            .all(|((_, hl), (_, dl))| dl - d[0].1 > 2.0 * (hl - h[0].1));
        let crossed = h.iter().zip(&d).any(|((_, hl), (_, dl))| dl > hl);
        let (hl, dl) = (h[h.len() - 1].1, d[d.len() - 1].1);
        rows.push(Row::holds(
            "media read latency 25 ns to 51.2 µs",
            "latency grows much faster on DDR than on HASTE",
            format!(
                "25 ns -> 51.2 µs: DDR +{:.1} µs, HASTE +{:.1} µs; DDR {} HASTE",
                dl - d[0].1,
                hl - h[0].1,
                if crossed { "ends above" } else { "stays below" }
            ),
            grows_faster && crossed,
        ));
        Reproduction {
            study: "haste-ddr".into(),
            title: "Caulfield et al., Understanding the Impact of Emerging Non-Volatile Memories, SC 2010".into(),
            setting: "One thread, queue depth 1, random 4 KB accesses on the raw device.".into(),
            class: Class::Device,
            state_rule: "none needed: the NVM media and DRAM are written in place and the runs use the raw device".into(),
            notes: vec![],
            rows: at_all(rows, HASTE_LATENCY),
            figures: vec![Figure {
                id: "haste-ddr-media-sweep".into(),
                title: "4 KB read latency against media read latency".into(),
                x_label: "media read latency (ns)".into(),
                y_label: "µs".into(),
                x_log: true,
                x_bytes: false,
                y_log: true,
                panels: vec![Panel {
                    title: "PCIe array (HASTE) vs DDR bus".into(),
                    series: vec![
                        Series { label: "haste-dram".into(), kind: SeriesKind::Model, points: h },
                        Series { label: "ddr-dram".into(), kind: SeriesKind::Model, points: d },
                    ],
                }],
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
