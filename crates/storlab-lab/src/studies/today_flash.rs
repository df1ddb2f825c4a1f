//! Today's flash (issue 63): the data-sheet ratings of the datacenter TLC
//! drive (`pm9a3`), the consumer TLC drive with its SLC write cache
//! (`990pro`) and the QLC drive (`p5336`), each from fio jobs, and the
//! consumer drive's write bandwidth against bytes written from fresh to
//! full (the SLC cache's cliff).
//!
//! One rule for every row, after how the vendors rate (SNIA SSS PTS):
//! sequential 128 KB at 4 threads of queue depth 32 (16 GiB each), random
//! 4 KB over the whole drive at 16
//! threads of queue depth 32 (fio's libaio engine, `direct=1`); reads on a
//! drive written once (so they reach the flash); writes on a fresh drive,
//! except the datacenter drives' random writes, which their data sheets
//! rate in steady state (a drive aged by random overwrites, then written
//! for a 10 s ramp before a 10 s window, so that the window comes once the
//! throughput has stopped trending, as SNIA SSS PTS measures).
//!
//! The zoned drive (`zn540`) has no row: no published rating was found.
//! Searched (the search tool's docs, pages and code corpora): "Ultrastar
//! DC ZN540 datasheet sequential read MB/s", "ZN540 random read IOPS",
//! "ZN540 zoned namespace SSD random read IOPS sequential write MB/s
//! Western Digital", "Western Digital Ultrastar DC ZN540 ZNS NVMe SSD
//! 3200 MB/s", "ZN540 product brief performance sequential read write
//! random read 4KB IOPS zoned", "Ultrastar DC ZN540 specifications MB/s
//! IOPS". They found the 2020 announcement's coverage (96-layer TLC,
//! dual-port NVMe 1.3c, ZNS command set 1.0, U.2, up to 8 TB, "up to 4x"
//! the throughput of a conventional drive, no MB/s or IOPS) and no data
//! sheet or product brief with figures; a row needs a published figure
//! and its source.

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, RunId, Spec};
use crate::places::{P5336_BRIEF, PM9A3_DATASHEET, SSD_990PRO_DATASHEET};
use crate::report::{Class, Prepared, Reproduction, Row};

/// The ramp before a steady-state window (see [`rated`]).
const STEADY_RAMP: &str = "10s";

/// The data sheets' tolerance (issue 63: within ±25 %).
pub const TOL: f64 = 0.25;

/// The 990pro fill of the figure runs the drive at this fraction of its
/// size (capacity, blocks and SLC cache alike), so that writing it from
/// fresh to full is a few hundred thousand requests.
pub const FILL_SCALE: u64 = 8;

/// Chunks of the fill, one bandwidth point each.
pub const FILL_CHUNKS: u64 = 20;

/// The 990pro's capacity (its preset's) and SLC cache (its preset's).
const PRO_CAPACITY: u64 = 2_000_398_934_016;
const PRO_STATIC: u64 = 6_000_000_000;
const PRO_DYNAMIC: u64 = 220_000_000_000;
const PRO_BLOCKS: u64 = 1024;

fn state(precondition: &str) -> String {
    format!("ssd.ftl.precondition=\"{precondition}\"")
}

/// A rated run: `rw` of `bs` on `device` in state `precondition`.
fn rated(device: &str, precondition: &str, rw: &str, runtime: &str) -> Spec {
    let seq = rw == "read" || rw == "write";
    let (bs, jobs) = if seq { ("128k", "4") } else { ("4k", "16") };
    let st = state(precondition);
    let mut fio = vec![
        "--name=rated".to_string(),
        format!("--rw={rw}"),
        format!("--bs={bs}"),
        "--ioengine=libaio".to_string(),
        "--iodepth=32".to_string(),
        format!("--numjobs={jobs}"),
        "--direct=1".to_string(),
        format!("--runtime={runtime}"),
        "--time_based".to_string(),
    ];
    if precondition == "aged" {
        // steady state as SNIA SSS PTS takes it: the measured window
        // comes once the throughput has stopped trending (the aged
        // drive's free blocks last about 2 s at full speed; 5, 10 and
        // 20 s of ramp give the same rate within 1 %)
        fio.push(format!("--ramp_time={STEADY_RAMP}"));
    }
    if seq {
        // each thread its own stretch, as fio's sequential tests with
        // numjobs and offset_increment
        fio.extend([
            "--size=16g".to_string(),
            "--offset_increment=16g".to_string(),
        ]);
    }
    let fio: Vec<&str> = fio.iter().map(|s| s.as_str()).collect();
    Spec::new(device, &[&st], &fio)
}

/// The overrides of the scaled 990pro of the fill figure.
pub fn fill_overrides() -> Vec<String> {
    let cap = PRO_CAPACITY / FILL_SCALE / 4096 * 4096;
    vec![
        format!("device.capacity_bytes={cap}"),
        format!("ssd.nand.blocks_per_plane={}", PRO_BLOCKS / FILL_SCALE),
        format!(
            "ssd.nand.slc_cache.static_bytes={}",
            PRO_STATIC / FILL_SCALE
        ),
        format!(
            "ssd.nand.slc_cache.dynamic_max_bytes={}",
            PRO_DYNAMIC / FILL_SCALE
        ),
    ]
}

/// The fill: one sequential 1 MiB writer (queue depth 32) per chunk of
/// the scaled drive, the chunks in order, each after the last
/// (stonewall), so each chunk's bandwidth is the drive's at that fill.
pub fn fill_spec() -> Spec {
    let cap = PRO_CAPACITY / FILL_SCALE / 4096 * 4096;
    let chunk = cap / FILL_CHUNKS / (1 << 20) * (1 << 20);
    let ov = fill_overrides();
    let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
    let mut fio = vec![
        "--rw=write".to_string(),
        "--bs=1m".to_string(),
        "--ioengine=libaio".to_string(),
        "--iodepth=32".to_string(),
        "--direct=1".to_string(),
        format!("--size={chunk}"),
    ];
    for k in 0..FILL_CHUNKS {
        fio.push(format!("--name=c{k}"));
        fio.push(format!("--offset={}", k * chunk));
        fio.push("--stonewall".to_string());
    }
    let fio: Vec<&str> = fio.iter().map(|s| s.as_str()).collect();
    Spec::new("990pro", &ov, &fio)
}

/// The fill's points: (GB written at the chunk's end, the chunk's write
/// bandwidth in GB/s); empty if the run fails.
pub fn fill_points() -> Vec<(f64, f64)> {
    let Ok(jobs) = fill_spec().run_jobs() else {
        return Vec::new();
    };
    let mut written = 0.0;
    jobs.iter()
        .map(|j| {
            let bytes = j.dirs[1].io_bytes() as f64;
            written += bytes * FILL_SCALE as f64 / 1e9;
            let bw = bytes / j.runtime_ns[1].max(1) as f64;
            (written, bw)
        })
        .collect()
}

struct Rated {
    device: &'static str,
    what: &'static str,
    dir: usize,
    target: f64,
    unit: &'static str,
    place: &'static str,
    id: RunId,
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let mut rows: Vec<Rated> = Vec::new();
    let mut add = |p: &mut Plan,
                   device: &'static str,
                   what: &'static str,
                   pre: &str,
                   rw: &str,
                   runtime: &str,
                   target: f64,
                   place: &'static str| {
        let dir = usize::from(rw.ends_with("write"));
        let unit = if rw.starts_with("rand") {
            "IOPS"
        } else {
            "MB/s"
        };
        let id = p.add(rated(device, pre, rw, runtime));
        rows.push(Rated {
            device,
            what,
            dir,
            target,
            unit,
            place,
            id,
        });
    };
    // Samsung PM9A3 data sheet, 960 GB
    add(
        &mut p,
        "pm9a3",
        "sequential 128 KB read",
        "full",
        "read",
        "100ms",
        6500.0,
        PM9A3_DATASHEET,
    );
    add(
        &mut p,
        "pm9a3",
        "sequential 128 KB write",
        "fresh",
        "write",
        "100ms",
        1500.0,
        PM9A3_DATASHEET,
    );
    add(
        &mut p,
        "pm9a3",
        "random 4 KB read",
        "full",
        "randread",
        "100ms",
        580_000.0,
        PM9A3_DATASHEET,
    );
    add(
        &mut p,
        "pm9a3",
        "random 4 KB write, steady state",
        "aged",
        "randwrite",
        "10s",
        70_000.0,
        PM9A3_DATASHEET,
    );
    // Samsung 990 PRO data sheet, 2 TB
    add(
        &mut p,
        "990pro",
        "sequential 128 KB read",
        "full",
        "read",
        "100ms",
        7450.0,
        SSD_990PRO_DATASHEET,
    );
    add(
        &mut p,
        "990pro",
        "sequential 128 KB write",
        "fresh",
        "write",
        "100ms",
        6900.0,
        SSD_990PRO_DATASHEET,
    );
    add(
        &mut p,
        "990pro",
        "random 4 KB read",
        "full",
        "randread",
        "100ms",
        1_400_000.0,
        SSD_990PRO_DATASHEET,
    );
    add(
        &mut p,
        "990pro",
        "random 4 KB write",
        "fresh",
        "randwrite",
        "100ms",
        1_550_000.0,
        SSD_990PRO_DATASHEET,
    );
    // Solidigm D5-P5336 product brief
    add(
        &mut p,
        "p5336",
        "sequential 128 KB read",
        "full",
        "read",
        "100ms",
        7400.0,
        P5336_BRIEF,
    );
    add(
        &mut p,
        "p5336",
        "sequential 128 KB write",
        "fresh",
        "write",
        "100ms",
        3200.0,
        P5336_BRIEF,
    );
    add(
        &mut p,
        "p5336",
        "random 4 KB read",
        "full",
        "randread",
        "100ms",
        930_000.0,
        P5336_BRIEF,
    );
    let finish = move |r: &crate::measure::Results| {
        let mut out = Vec::new();
        for x in &rows {
            let run = &r[x.id];
            let value = if x.unit == "IOPS" {
                run.iops(x.dir)
            } else {
                run.mbps(x.dir)
            };
            let row = Row::within(
                format!("{}, {}", x.device, x.what),
                value,
                x.target,
                TOL,
                x.unit,
            )
            .at(x.place);
            let row = match (x.device, x.what) {
                ("pm9a3", "sequential 128 KB write") if !row.pass => row.miss_because(
                    "the MQSim-E geometry (128 planes of 16 KiB pages at 650 us) programs 3.2 GB/s; \
                     the data sheet's write rates grow with capacity (1.5, 3.0 and 4.0 GB/s at \
                     0.96, 1.92 and 3.84 TB), so the 960 GB drive has fewer dies than that geometry.",
                ),
                _ => row,
            };
            out.push(row);
        }
        let fill = fill_points();
        Reproduction {
            study: "today-flash".into(),
            title: "Today's flash: PM9A3, 990 PRO and D5-P5336 data sheets".into(),
            setting: "fio, libaio, direct: sequential 128 KB at 4 threads x QD32, random 4 KB at 16 threads x QD32".into(),
            class: Class::Device,
            state_rule: "reads on a drive written once; writes on a fresh drive, except a datacenter drive's random writes, rated in steady state (aged by random overwrites, then a 10 s ramp before a 10 s window: SNIA SSS PTS)".into(),
            notes: vec![],
            rows: out,
            figures: vec![Figure {
                id: "today-flash-slc-cliff".into(),
                title: format!(
                    "990pro: sequential 1 MiB write bandwidth against bytes written, fresh to full (drive scaled 1/{FILL_SCALE}, bytes scaled back)"
                ),
                x_label: "bytes written (GB, full-size drive)".into(),
                y_label: "write bandwidth (GB/s)".into(),
                x_log: false,
                x_bytes: false,
                y_log: false,
                panels: vec![Panel {
                    title: "990pro".into(),
                    series: vec![Series {
                        label: "write bandwidth".into(),
                        kind: SeriesKind::Model,
                        points: fill,
                    }],
                }],
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
