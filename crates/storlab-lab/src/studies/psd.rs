//! The PCM SSD study: the Micron PSD prototype against flash SSDs
//! (docs/spec/targets.md, "PCM SSD"; docs/spec/peer-devices.md), fio with libaio.

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Spec};
use crate::places::PSD_FINDINGS;
use crate::report::{at_all, Class, Prepared, Reproduction, Row};

/// The one rule for the devices' state in the PSD study's tests (and the
/// device figures that use its runs): the PCM is written in place and
/// needs none; flash reads read data written once; flash writes run in
/// the steady state of their own pattern (SNIA's performance test
/// specification: precondition with the workload itself), sequential
/// writes on a drive written once, random writes on a drive aged by
/// random writes.
pub const STATE_RULE: &str = "PCM needs none (written in place); flash reads read data written once; flash writes run in the steady state of their own pattern (sequential writes on a drive written once, random writes on a drive aged by random writes), as SNIA's test specification preconditions";

/// A small X25-E (512 MiB of 640 MiB flash): the same timings, quick to
/// precondition.
pub const SMALL_X25E: &[&str] = &[
    "device.capacity_bytes=536870912",
    "ssd.nand.blocks_per_plane=64",
];

/// The placement card scaled down (2.5 GB of 3.2 GB of data pages: the
/// same timings and lock-stepped geometry, quick to precondition).
pub const SMALL_PLACEMENT: &[&str] = &[
    "device.capacity_bytes=2500000000",
    "ssd.nand.blocks_per_plane=32",
];

/// The SATA SSD scaled down (4 GB of 5.4 GB raw: the same channels, dies
/// and timings, quick to precondition).
pub const SMALL_SATA: &[&str] = &[
    "device.capacity_bytes=4000000000",
    "ssd.nand.blocks_per_plane=32",
];

/// A small ioDrive (1.25 GB of 1.5 GiB flash, the real one's spare ratio).
pub const SMALL_FUSION: &[&str] = &[
    "device.capacity_bytes=1250000000",
    "ssd.nand.blocks_per_plane=32",
];

/// raid-ssd over four small X25-Es.
pub const SMALL_RAID_SSD: &[&str] = &[
    "device.capacity_bytes=2147483648",
    "raid.member_set=[\"device.capacity_bytes=536870912\", \"ssd.nand.blocks_per_plane=64\"]",
];

/// Concatenate override lists.
pub fn with<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b.iter()).copied().collect()
}

/// Written once, sequentially (a flash device's "full" state).
pub fn full<'a>(ov: &[&'a str]) -> Vec<&'a str> {
    with(ov, &["ssd.ftl.precondition=\"full\""])
}

/// fio with libaio (the depth a job asks for is the depth it gets), as
/// the study ran it: `fio` arguments after `--name=peer --ioengine=libaio`.
pub fn peer(device: &str, overrides: &[&str], fio: &[&str]) -> Spec {
    Spec::new(device, overrides, &["--name=peer", "--ioengine=libaio"]).with_fio(fio)
}

/// Queue depth 1, 4 KB, one thread, over 1 GB (the study's file size).
pub fn qd1(device: &str, overrides: &[&str], rw: &str, n: u32) -> Spec {
    peer(
        device,
        overrides,
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--iodepth=1",
            "--size=1g",
            &format!("--number_ios={n}"),
        ],
    )
}

/// Queue depths of the characterisation curve.
pub const DEPTHS: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/// Devices of the queue-depth curve: (label, preset, overrides).
pub fn depth_devices() -> [(&'static str, &'static str, Vec<&'static str>); 2] {
    [
        ("micron-psd (PCM)", "micron-psd", vec![]),
        (
            "fusion-io (flash, written)",
            "fusion-io",
            full(SMALL_FUSION),
        ),
    ]
}

/// 4 KB random accesses at queue depth `qd` over 1 GB with libaio.
pub fn at_depth(device: &str, overrides: &[&str], rw: &str, qd: u32) -> Spec {
    peer(
        device,
        overrides,
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--size=1g",
            &format!("--iodepth={qd}"),
            "--number_ios=20000",
        ],
    )
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let depth_runs: Vec<Vec<Vec<_>>> = depth_devices()
        .iter()
        .map(|(_, dev, ov)| {
            ["randread", "randwrite"]
                .iter()
                .map(|rw| {
                    DEPTHS
                        .iter()
                        .map(|&q| p.add(at_depth(dev, ov, rw, q)))
                        .collect()
                })
                .collect()
        })
        .collect();
    let psd: Vec<_> = ["randread", "read", "randwrite", "write"]
        .iter()
        .map(|rw| p.add(qd1("micron-psd", &[], rw, 2000)))
        .collect();
    let x = full(SMALL_X25E);
    let xr = p.add(qd1("x25e", &x, "randread", 2000));
    let xs = p.add(qd1("x25e", &x, "read", 2000));
    // flash writes, each in its own steady state (SNIA-style: precondition
    // with the workload's own pattern)
    let fl = p.add(qd1("x25e", &x, "write", 20000));
    let ag = p.add(qd1(
        "x25e",
        &with(SMALL_X25E, &["ssd.ftl.precondition=\"aged\""]),
        "randwrite",
        20000,
    ));
    let ratio_runs: Vec<_> = [
        ("micron-psd", vec![]),
        ("x25e", full(SMALL_X25E)),
        ("fusion-io", full(SMALL_FUSION)),
    ]
    .into_iter()
    .map(|(dev, ov)| {
        (
            dev,
            p.add(qd1(dev, &ov, "randread", 1000)),
            p.add(qd1(dev, &ov, "randwrite", 1000)),
        )
    })
    .collect();
    let finish = move |r: &crate::measure::Results| {
        let mut rows = vec![
            Row::within(
                "micron-psd, random / sequential 4 KB read latency",
                r[psd[0]].lat_us(0) / r[psd[1]].lat_us(0),
                1.0,
                0.05,
                "x",
            ),
            Row::within(
                "micron-psd, random / sequential 4 KB write latency",
                r[psd[2]].lat_us(1) / r[psd[3]].lat_us(1),
                1.0,
                0.05,
                "x",
            ),
        ];
        let flash_read = r[xr].lat_us(0) / r[xs].lat_us(0);
        rows.push(Row::holds(
            "x25e (written), random / sequential read latency",
            "far more sensitive than the PSD (> 1.5x)",
            format!("{flash_read:.2}x"),
            flash_read > 1.5,
        ));
        let flash_write = r[ag].lat_us(1) / r[fl].lat_us(1);
        rows.push(Row::holds(
            "x25e, random (aged) / sequential (full) write latency",
            "far more sensitive than the PSD (> 1.5x)",
            format!(
                "{flash_write:.2}x, GC runs {} vs {}",
                r[ag].counter("gc_runs"),
                r[fl].counter("gc_runs")
            ),
            flash_write > 1.5 && r[ag].counter("gc_runs") > 0.0 && r[fl].counter("gc_runs") == 0.0,
        ));
        let ratio = |k: usize| {
            let (_, rd, wr) = ratio_runs[k];
            r[wr].lat_us(1) / r[rd].lat_us(0)
        };
        let (psd_r, x25e, fusion) = (ratio(0), ratio(1), ratio(2));
        rows.push(Row::holds(
            "micron-psd, 4 KB write / read latency",
            "several times (>= 3x)",
            format!("{psd_r:.2}x"),
            psd_r >= 3.0,
        ));
        rows.push(Row::holds(
            "write / read gap, micron-psd against flash",
            "much larger than on flash (>= 3x theirs)",
            format!("psd {psd_r:.2}x, x25e {x25e:.2}x, fusion-io {fusion:.2}x"),
            psd_r >= 3.0 * x25e && psd_r >= 3.0 * fusion,
        ));
        Reproduction {
            study: "psd".into(),
            title: "Jung et al., Characterizing a Real PCM Storage Device".into(),
            setting: "fio, libaio, 4 KB, one thread, queue depth 1, 1 GB; flash SSDs preconditioned as stated.".into(),
            class: Class::Device,
            state_rule: STATE_RULE.into(),
            notes: vec![],
            rows: at_all(rows, PSD_FINDINGS),
            figures: vec![Figure {
                id: "psd-iodepth".into(),
                title: "4 KB random bandwidth against queue depth (the study's best came at 64)".into(),
                x_label: "iodepth".into(),
                y_label: "MB/s".into(),
                x_log: true,
                x_bytes: false,
                y_log: false,
                panels: ["reads", "writes"]
                    .iter()
                    .enumerate()
                    .map(|(d, title)| Panel {
                        title: title.to_string(),
                        series: depth_devices()
                            .iter()
                            .zip(&depth_runs)
                            .map(|((label, _, _), runs)| Series {
                                label: label.to_string(),
                                kind: SeriesKind::Model,
                                points: DEPTHS
                                    .iter()
                                    .zip(&runs[d])
                                    .map(|(&q, &id)| (q as f64, r[id].mbps(d)))
                                    .collect(),
                            })
                            .collect(),
                    })
                    .collect(),
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
