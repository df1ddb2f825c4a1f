//! The flash placement study (docs/spec/hybrid.md): flash as a disk cache in front
//! of a disk array, flash as hybrid main memory behind DRAM, and paging
//! with the studies' thrash benchmark. docs/spec/hybrid.md publishes no figures for
//! these, only findings; each finding is a row, and the paging curve (the
//! HASTE and Moneta studies' experiment: thrash over array sizes from
//! fitting in DRAM to many times it) is drawn for three devices.

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Run, Spec};
use crate::places::{HASTE_FIG9, PLACEMENT_FINDINGS};
use crate::report::{at_all, Class, Prepared, Reproduction, Row};
use crate::studies::psd::peer;

/// DRAM of the scaled-down paging runs: 64 MiB (the studies' 8-24 GB
/// servers against 4-60 GB arrays, scaled by the same ratios).
pub const DRAM_BYTES: u64 = 64 << 20;

/// Array sizes of the paging curve, as multiples of DRAM.
pub const RATIOS: [f64; 5] = [0.5, 1.0, 2.0, 4.0, 8.0];

/// Devices paged to: (label, `tier.backing` preset, largest ratio run).
/// The disks stop at 4x: the disk model's request scheduler looks at
/// every queued request, and past 4x its write cache queues thousands.
pub const PAGING_DEVICES: [(&str, &str, f64); 3] = [
    ("moneta-spin (PCM array)", "moneta-spin", 8.0),
    ("fusion-io (flash SSD)", "fusion-io", 8.0),
    ("raid-hdd2 (disks)", "raid-hdd2", 4.0),
];

/// Updating threads (the studies' thrash: 16).
const THREADS: u64 = 16;

/// thrash as fio jobs on `device`: 16 threads each first touch every page
/// of its part (4 KB writes), then, as a second group, update random
/// 64-byte entries of it (4096 each).
pub fn thrash(device: &str, overrides: &[&str], array_bytes: u64) -> Spec {
    let part = format!("{}", (array_bytes / THREADS) / 4096 * 4096);
    Spec::new(
        device,
        overrides,
        &[
            "--name=touch",
            "--rw=write",
            "--bs=4k",
            &format!("--size={part}"),
            &format!("--offset_increment={part}"),
            "--numjobs=16",
            "--name=update",
            "--stonewall",
            "--rw=randwrite",
            "--bs=64",
            &format!("--size={part}"),
            &format!("--offset_increment={part}"),
            "--numjobs=16",
            "--io_size=128k",
            "--norandommap",
        ],
    )
    .only("update")
}

/// 4 KB random accesses over a 64 MiB working set, `io_size` of IO at
/// queue depth 8 with libaio.
pub fn hot(device: &str, rw: &str, io_size: &str) -> Spec {
    peer(
        device,
        &[],
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--size=64m",
            &format!("--io_size={io_size}"),
            "--norandommap",
            "--iodepth=8",
        ],
    )
}

/// The array sizes, bytes.
pub fn arrays() -> Vec<u64> {
    RATIOS
        .iter()
        .map(|r| (r * DRAM_BYTES as f64) as u64)
        .collect()
}

/// Overrides of the paging runs over `backing`: 64 MiB of DRAM, and a
/// memory no larger than the smallest device paged to.
pub fn paging_overrides(backing: &str) -> Vec<String> {
    vec![
        format!("tier.cache_bytes={DRAM_BYTES}"),
        format!("tier.backing=\"{backing}\""),
        "device.capacity_bytes=34359738368".into(),
    ]
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    // reads: the set read about 16 times over; writes: 4 times
    let disks_r = p.add(hot("raid-hdd2", "randread", "1g"));
    let flash_r = p.add(hot("fusion-io", "randread", "1g"));
    let wt_r = p.add(hot("flash-cache-wt", "randread", "1g"));
    let disks_w = p.add(hot("raid-hdd2", "randwrite", "256m"));
    let wt_w = p.add(hot("flash-cache-wt", "randwrite", "256m"));
    let wb_w = p.add(hot("flash-cache-wb", "randwrite", "256m"));
    let ov = |b: &str| paging_overrides(b);
    let refs = |v: &[String]| -> Vec<String> { v.to_vec() };
    let fusion = ov("fusion-io");
    let hm = p.add(thrash(
        "hybrid-mem",
        &fusion.iter().map(String::as_str).collect::<Vec<_>>(),
        4 * DRAM_BYTES,
    ));
    let dram: Vec<_> = arrays()
        .iter()
        .map(|&a| p.add(thrash("dram-mem", &[], a)))
        .collect();
    let paging: Vec<Vec<_>> = PAGING_DEVICES
        .iter()
        .map(|(_, backing, max)| {
            let o = refs(&ov(backing));
            let o: Vec<&str> = o.iter().map(String::as_str).collect();
            arrays()
                .iter()
                .filter(|&&a| a as f64 <= max * DRAM_BYTES as f64)
                .map(|&a| p.add(thrash("hybrid-mem", &o, a)))
                .collect()
        })
        .collect();
    let finish = move |r: &crate::measure::Results| {
        let p50 = |x: &Run| x.stats.dirs[0].percentile(50.0) as f64 / 1000.0;
        let rows = vec![
            Row::holds(
                "flash cache (write-through), hot 64 MB set, 4 KB reads",
                "hot blocks read at flash speed (median within 1.5x of the ioDrive's)",
                format!(
                    "hit ratio {:.2}, median {:.0} µs vs ioDrive {:.0} µs, disks {:.0} µs",
                    r[wt_r].counter("tier_read_hit_ratio"),
                    p50(&r[wt_r]),
                    p50(&r[flash_r]),
                    p50(&r[disks_r])
                ),
                r[wt_r].counter("tier_read_hit_ratio") > 0.9
                    && p50(&r[wt_r]) < 1.5 * p50(&r[flash_r]),
            ),
            Row::holds(
                "flash cache (write-through), 4 KB random writes",
                "no write speed-up: every write goes to disk",
                format!(
                    "{:.0} µs vs the disks' {:.0} µs",
                    r[wt_w].lat_us(1),
                    r[disks_w].lat_us(1)
                ),
                r[wt_w].lat_us(1) >= 0.9 * r[disks_w].lat_us(1)
                    && r[wt_w].counter("tier_writes_cached") == 0.0,
            ),
            Row::holds(
                "flash cache (write-back), 4 KB random writes",
                "flash buffers writes and destages them later (5x faster than write-through)",
                format!(
                    "{:.0} µs vs write-through {:.0} µs; {} destages",
                    r[wb_w].lat_us(1),
                    r[wt_w].lat_us(1),
                    r[wb_w].counter("tier_destages")
                ),
                r[wb_w].lat_us(1) * 5.0 < r[wt_w].lat_us(1)
                    && r[wb_w].counter("tier_destages") > 0.0,
            ),
            Row::holds(
                "hybrid memory, thrash over 4x DRAM",
                "flash holds clean and dirty pages: both its read and write bandwidth are used",
                format!(
                    "{} page-ins read, {} dirty pages written back",
                    r[hm].counter("tier_write_allocs"),
                    r[hm].counter("backing.host_units_written")
                ),
                r[hm].counter("backing.nand_reads") > 0.0
                    && r[hm].counter("backing.host_units_written") > 0.0,
            ),
        ];
        // the paging curves: relative to the same jobs on DRAM
        let mut series = Vec::new();
        let mut rel = Vec::new();
        for (k, (label, _, _)) in PAGING_DEVICES.iter().enumerate() {
            let pts: Vec<(f64, f64)> = arrays()
                .iter()
                .zip(&dram)
                .zip(&paging[k])
                .map(|((&a, &d), &h)| (a as f64 / DRAM_BYTES as f64, r[h].iops(1) / r[d].iops(1)))
                .collect();
            rel.push(pts.clone());
            series.push(Series {
                label: label.to_string(),
                kind: SeriesKind::Model,
                points: pts,
            });
        }
        let at = |k: usize, ratio: f64| {
            rel[k]
                .iter()
                .find(|p| p.0 == ratio)
                .map_or(f64::NAN, |p| p.1)
        };
        let fits = (0..PAGING_DEVICES.len()).all(|k| at(k, 0.5) > 0.5);
        let mut rows = at_all(rows, PLACEMENT_FINDINGS);
        rows.push(Row::holds(
            "paging (thrash), array half of DRAM",
            "no paging once resident: near DRAM speed",
            format!(
                "relative {:.2}, {:.2}, {:.2}",
                at(0, 0.5),
                at(1, 0.5),
                at(2, 0.5)
            ),
            fits,
        ));
        let falls = (0..PAGING_DEVICES.len()).all(|k| at(k, 4.0) * 10.0 < at(k, 0.5));
        let ordered = at(0, 4.0) > at(1, 4.0) && at(1, 4.0) > at(2, 4.0);
        rows.push(Row::holds(
            "paging (thrash), array 4x DRAM",
            "paging costs an order of magnitude or more; faster devices page better",
            format!(
                "relative: moneta-spin {:.4}, fusion-io {:.4}, disks {:.6}",
                at(0, 4.0),
                at(1, 4.0),
                at(2, 4.0)
            ),
            falls && ordered,
        ));
        Reproduction {
            study: "flash-placement".into(),
            title: "Sudan, Badam and Nellans, NAND-Flash: Fast Storage or Slow Memory? (with the HASTE and Moneta studies' paging)".into(),
            setting: "Flash cache: fio libaio 4 KB at queue depth 8 over a 64 MB hot set. Paging: thrash (16 threads, 64-byte updates of their own parts after touching every page) on hybrid-mem with 64 MiB of DRAM, relative to the same jobs on dram-mem. docs/spec/hybrid.md publishes findings, not figures.".into(),
            class: Class::Device,
            state_rule: "the flash cache starts holding the hot set (as after the study's hour of warm-up); flash is written once; thrash touches every page before it is measured".into(),
            notes: vec![],
            rows: at_all(rows, HASTE_FIG9),
            figures: vec![Figure {
                id: "paging-thrash".into(),
                title: "thrash: updates per second relative to DRAM, against array size".into(),
                x_label: "array size / DRAM".into(),
                y_label: "relative to DRAM".into(),
                x_log: true,
                x_bytes: false,
                y_log: true,
                panels: vec![Panel {
                    title: "hybrid-mem over each device".into(),
                    series,
                }],
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
