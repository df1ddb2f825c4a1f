//! Device figures and latency spread (the sections 4 and 5): the
//! flash placement study's table 1 (its 160 GB PCIe flash card,
//! `placement-flash`, and a 7200 rpm disk, `hdd-7200`), the PSD study's
//! write/read gap, the SATA flash SSD's randomness penalty (`sata-ssd`)
//! and the PSD's depth for a 50/50 mix, the Moneta power figure, and the
//! spread of QD1 latencies that the NAND and PCM program variations give,
//! and the host's (wake-up and interrupt handler, `host.wakeup_spread`,
//! `host.interrupt_spread`); and the read tail under writes on every
//! flash and disk preset ([`super::read_tail`]).

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Run, Spec};
use crate::places::{MONETA_POWER, PLACEMENT_T1, PSD_FINDINGS};
use crate::report::{at_all, Class, Prepared, Reproduction, Row};
use crate::studies::psd::{at_depth, peer, qd1, with};

// the small flash devices, defined beside the PSD study's (the read-tail
// figure uses them too)
pub use crate::studies::psd::{SMALL_PLACEMENT, SMALL_SATA};

/// The host's wake-up and interrupt spread turned off.
pub const NO_HOST_SPREAD: &[&str] = &["host.wakeup_spread=0", "host.interrupt_spread=0"];

/// Mean completion latency of direction `d`, µs.
pub fn mean_us(r: &Run, d: usize) -> f64 {
    r.stats.dirs[d].clat().mean() / 1000.0
}

/// Queue depths of the 50/50 sweep on the PSD.
pub const MIX_DEPTHS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// Written once, sequentially.
fn full<'a>(ov: &[&'a str]) -> Vec<&'a str> {
    with(ov, &["ssd.ftl.precondition=\"full\""])
}

/// Large sequential transfers at depth: a device's bandwidth.
fn seq_bw(device: &str, overrides: &[&str], rw: &str) -> Spec {
    peer(
        device,
        overrides,
        &[
            &format!("--rw={rw}"),
            "--bs=1m",
            "--iodepth=16",
            "--size=2g",
            "--number_ios=400",
        ],
    )
}

/// QD1 4 KB random accesses on `hdd-7200` over the flash placement
/// study's 200 GB database (docs/spec/hybrid.md), 300 of them.
fn disk_qd1(overrides: &[&str], rw: &str) -> Spec {
    peer(
        "hdd-7200",
        overrides,
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--iodepth=1",
            "--size=200g",
            "--number_ios=300",
        ],
    )
}

/// p99 / p50 of the completion latency of direction `d`.
pub fn tail(r: &Run, d: usize) -> f64 {
    let c = r.stats.dirs[d].clat();
    c.percentile(99.0) as f64 / c.percentile(50.0).max(1) as f64
}

/// Standard deviation of direction `d`'s completion latency, µs.
pub fn stdev_us(r: &Run, d: usize) -> f64 {
    r.stats.dirs[d].clat().stddev() / 1000.0
}

/// Average power of the components whose names start with `prefix`, W.
pub fn power_w(r: &Run, prefix: &str) -> f64 {
    r.storlab["power"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|p| {
                    p["component"]
                        .as_str()
                        .is_some_and(|c| c.starts_with(prefix))
                })
                .filter_map(|p| p["avg_w"].as_f64())
                .sum()
        })
        .unwrap_or(0.0)
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    // table 1: the flash card (written, so reads touch the flash)
    let card = full(SMALL_PLACEMENT);
    let fr = p.add(qd1("placement-flash", &card, "randread", 2000));
    let fw = p.add(qd1("placement-flash", &card, "randwrite", 2000));
    let fbr = p.add(seq_bw("placement-flash", &card, "read"));
    let fbw = p.add(seq_bw("placement-flash", &card, "write"));
    // table 1: the disk, random over the study's 200 GB database
    // (docs/spec/hybrid.md); its write latency with the write cache off (the
    // table's 9 ms is the platter's, as for reads)
    let dr = p.add(disk_qd1(&[], "randread"));
    let dw = p.add(disk_qd1(&["disk.write_cache=false"], "randwrite"));
    let dbr = p.add(seq_bw("hdd-7200", &[], "read"));
    // the same table's sequential writes: the same setting (cache off)
    let dbw = p.add(seq_bw("hdd-7200", &["disk.write_cache=false"], "write"));
    // PSD: write against read at QD1 and over the depth sweep
    let psd_r = p.add(qd1("micron-psd", &[], "randread", 2000));
    let psd_w = p.add(qd1("micron-psd", &[], "randwrite", 2000));
    let psd_depth: Vec<_> = MIX_DEPTHS
        .iter()
        .map(|&q| {
            (
                p.add(at_depth("micron-psd", &[], "randread", q)),
                p.add(at_depth("micron-psd", &[], "randwrite", q)),
            )
        })
        .collect();
    // SATA SSD: random against sequential, reads (written drive) and
    // writes (random on an aged drive, sequential on a full one), at QD1
    // and at the NCQ depth
    let sata = full(SMALL_SATA);
    let aged = with(SMALL_SATA, &["ssd.ftl.precondition=\"aged\""]);
    let sata_pairs: Vec<_> = [1u32, 32]
        .iter()
        .flat_map(|&q| {
            let rr = p.add(at_depth("sata-ssd", &sata, "randread", q));
            let sr = p.add(at_depth("sata-ssd", &sata, "read", q));
            let rw = p.add(at_depth("sata-ssd", &aged, "randwrite", q));
            let sw = p.add(at_depth("sata-ssd", &sata, "write", q));
            [(q, "read", rr, sr, 0), (q, "write", rw, sw, 1)]
        })
        .collect();
    // PSD: 50/50 mix over queue depths
    let mix: Vec<_> = MIX_DEPTHS
        .iter()
        .map(|&q| {
            p.add(peer(
                "micron-psd",
                &[],
                &[
                    "--rw=randrw",
                    "--rwmixread=50",
                    "--bs=4k",
                    "--size=1g",
                    &format!("--iodepth={q}"),
                    "--number_ios=20000",
                ],
            ))
        })
        .collect();
    // Moneta power: the full design, random 8 KB writes, 16 threads; and
    // the array nearly idle (two writes 100 ms apart)
    let pw = p.add(Spec::xdd("moneta-balance", &[], "randwrite", "8k", 2000));
    let idle = p.add(Spec::new(
        "moneta-balance",
        &[],
        &[
            "--name=idle",
            "--rw=randwrite",
            "--bs=8k",
            "--number_ios=2",
            "--thinktime=100000",
        ],
    ));
    // the read tail under writes on every flash and disk preset
    let tails = super::read_tail::plan(&mut p);
    // host spread: moneta-base (a PCM array of fixed timing behind the
    // baseline stack, so any spread is the host's), QD1 4 KB reads with
    // the preset's wake-up and interrupt spread and without it
    let finish = move |r: &crate::measure::Results| {
        let mut rows = vec![
            Row::within(
                "placement-flash, QD1 4 KB random read latency",
                r[fr].lat_us(0),
                47.0,
                0.25,
                "µs",
            ),
            Row::within(
                "placement-flash, QD1 4 KB random write latency",
                r[fw].lat_us(1),
                15.0,
                0.25,
                "µs",
            )
            .input(
                "driver_tag_ns (host.driver_tag_ns, CALIBRATED against this figure: the driver's \
                 own work; the 47 µs read is the prediction)",
            ),
            Row::within(
                "placement-flash, 1 MB sequential reads at depth 16",
                r[fbr].gbps(0),
                3.0,
                0.25,
                "GB/s",
            )
            .input("link_bytes_per_s (ssd.link_bytes_per_s.read, the card's DMA rate set to table 1)"),
            Row::within(
                "placement-flash, 1 MB sequential writes at depth 16",
                r[fbw].gbps(1),
                2.6,
                0.25,
                "GB/s",
            )
            .input("link_bytes_per_s (ssd.link_bytes_per_s.write, the card's DMA rate set to table 1)"),
            Row::within(
                "hdd-7200, QD1 4 KB random read latency over 200 GB",
                r[dr].lat_us(0) / 1000.0,
                9.0,
                0.25,
                "ms",
            ),
            Row::within(
                "hdd-7200, QD1 4 KB random write latency over 200 GB (write cache off)",
                r[dw].lat_us(1) / 1000.0,
                9.0,
                0.25,
                "ms",
            ),
            Row::within(
                "hdd-7200, 1 MB sequential reads at depth 16",
                r[dbr].mbps(0),
                112.0,
                0.25,
                "MB/s",
            ),
            Row::within(
                "hdd-7200, 1 MB sequential writes at depth 16 (write cache off)",
                r[dbw].mbps(1),
                45.0,
                0.25,
                "MB/s",
            )
            .input(
                "write_through_staging (disk.write_through_staging, CALIBRATED against this figure: the choice between \
                 the model's two behaviours of a write-through write; off, each 512 KB command \
                 (Linux 2.6's max_sectors_kb) loses a revolution and the rate is the drive's \
                 mechanics)",
            ),
        ];
        // PSD: the largest write / read latency ratio over QD1 and depths
        let mut ratios = vec![(1u32, r[psd_w].lat_us(1) / r[psd_r].lat_us(0))];
        for (&q, &(rd, wr)) in MIX_DEPTHS.iter().zip(&psd_depth) {
            ratios.push((q, r[wr].lat_us(1) / r[rd].lat_us(0)));
        }
        let (q_max, max_ratio) =
            ratios
                .iter()
                .copied()
                .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
        rows.push(
            Row::within(
                "micron-psd, 4 KB write / read latency, largest over queue depths",
                max_ratio,
                19.0,
                0.25,
                "x",
            )
            .model_note(&format!("(at QD{q_max})"))
            // at depth the ratio is the read rate over the write rate
            // (Little): reads run at the one fio thread's software rate (up to
            // the link), writes at three boards' one program at a time
            // (ssd.nand.programs_per_channel); the thread's speed is the one
            // host figure not published
            .at(PSD_FINDINGS)
            .input("syscall_entry_ns (micron-psd.toml: the host's software factor 0.22, CALIBRATED on this figure)"),
        );
        // SATA SSD: the largest random / sequential latency ratio
        let mut worst = (0u32, "", 0.0);
        for &(q, what, rand, seq, d) in &sata_pairs {
            let x = r[rand].lat_us(d) / r[seq].lat_us(d);
            if x > worst.2 {
                worst = (q, what, x);
            }
        }
        rows.push(
            Row::within(
                "sata-ssd, random / sequential latency, largest over queue depths",
                worst.2,
                6.0,
                0.25,
                "x",
            )
            .model_note(&format!("({} at QD{})", worst.1, worst.0))
            .at(PSD_FINDINGS),
        );
        // PSD: the depth at which the 50/50 mix reaches 99 % of its peak
        let bw: Vec<f64> = mix.iter().map(|&id| r[id].total_mbps()).collect();
        let peak = bw.iter().copied().fold(0.0, f64::max);
        let at = MIX_DEPTHS
            .iter()
            .zip(&bw)
            .find(|(_, &b)| b >= 0.99 * peak)
            .map(|(&q, _)| q)
            .unwrap_or(0);
        rows.push(
            Row::holds(
                "micron-psd, 4 KB 50/50 mix: first depth at 99 % of peak bandwidth",
                "only at QD64",
                format!(
                    "QD{at} (peak {peak:.0} MB/s; QD32 {:.0}, QD64 {:.0})",
                    bw[5], bw[6]
                ),
                at == 64,
            )
            .at(PSD_FINDINGS),
        );
        // Moneta power
        let total = power_w(&r[pw], "");
        let memory = power_w(&r[pw], "media");
        let mem_idle = power_w(&r[idle], "media");
        rows.push(
            Row::within(
                "moneta-balance, random 8 KB writes, 16 threads: total power",
                total,
                3.47,
                0.25,
                "W",
            )
            .at(MONETA_POWER),
        );
        rows.push(
            Row::within(
                "moneta-balance, same run: memory (PCM array, row buffers, background)",
                memory,
                0.4,
                0.25,
                "W",
            )
            .at(MONETA_POWER),
        );
        rows.push(
            Row::within(
                "moneta-balance, memory power idle",
                mem_idle,
                0.13,
                0.25,
                "W",
            )
            .at(MONETA_POWER)
            .input(
                "dies_per_controller (power.dies_per_controller, CALIBRATED against this figure)",
            ),
        );
        Reproduction {
            study: "devices".into(),
            title: "Device figures: flash placement table 1, PSD and SATA SSD findings, Moneta power".into(),
            class: Class::Device,
            state_rule: crate::studies::psd::STATE_RULE.into(),
            notes: vec![],
            setting: "fio with libaio, 4 KB QD1 latencies and 1 MB depth-16 bandwidths; flash written before reads; moneta-balance power under 16 XDD threads.".into(),
            rows: at_all(rows, PLACEMENT_T1),
            figures: vec![super::read_tail::figure(r, &tails), Figure {
                id: "devices-psd-mix".into(),
                title: "micron-psd, 4 KB random 50/50 mix: bandwidth against queue depth (the study: 99 % of peak only at 64)".into(),
                x_label: "iodepth".into(),
                y_label: "MB/s (reads + writes)".into(),
                x_log: true,
                x_bytes: false,
                y_log: false,
                panels: vec![Panel {
                    title: "50/50".into(),
                    series: vec![Series {
                        label: "micron-psd".into(),
                        kind: SeriesKind::Model,
                        points: MIX_DEPTHS
                            .iter()
                            .zip(&bw)
                            .map(|(&q, &b)| (q as f64, b))
                            .collect(),
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
