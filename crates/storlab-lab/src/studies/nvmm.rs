//! The NVMM (PMEP) study, MSST 2015: msync of a mapped region on
//! non-volatile main memory with each cache-flush mode, and selective
//! persistence flushing (docs/spec/targets.md, "NVMM"; docs/spec/nvmm.md), on the simulator's
//! nvmm class. The same shapes on the host's own CPU are `storlab pmem
//! msync-bench`'s job.

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Spec};
use crate::places::NVMM_MSYNC;
use crate::report::{at_all, with_unit, Class, Prepared, Reproduction, Row};

/// The default flushing modes (`nvmm.m_flush`).
pub const MODES: [&str; 4] = ["clflush", "clflushopt", "clwb", "wof"];

/// Region sizes of the figure: 16 KiB to 64 MiB by fours, then 100 MB.
/// A job syncs after each write but the last (fio's `fsync=1` syncs
/// before the next write), so a region needs two 4 KB blocks or more to
/// be synced at all; the study's smallest regions (64 B) are below one
/// block.
pub fn regions() -> Vec<u64> {
    let mut v: Vec<u64> = (0..12)
        .map(|i| 16384u64 << (2 * i))
        .filter(|&r| r <= 64 << 20)
        .collect();
    v.push(100 << 20);
    v
}

/// "Write 4 KB, then msync (fio's fsync) the region" on `preset`, with
/// the region as the device; `extra` overrides (a flush mode).
pub fn sync_point(preset: &str, region: u64, extra: &[&str]) -> Spec {
    let cap = format!("device.capacity_bytes={region}");
    let mut ov = vec![cap.as_str()];
    ov.extend_from_slice(extra);
    Spec::new(
        preset,
        &ov,
        &[
            "--name=m",
            "--rw=randwrite",
            "--bs=4k",
            "--fsync=1",
            &format!("--size={}", region.max(4096)),
            "--number_ios=20",
        ],
    )
}

/// The same on a 7200 rpm disk, a file of `region` bytes: the write lands
/// in the disk's cache and the sync flushes it to the platter (what msync
/// costs on a disk). The presets' clflush cost per line is calibrated
/// against this at 10 MiB (`storlab_pmem::model::HDD_MSYNC_NS`).
pub fn disk_point(region: u64) -> Spec {
    Spec::new(
        "hdd-7200",
        &[],
        &[
            "--name=m",
            "--rw=randwrite",
            "--bs=4k",
            "--fsync=1",
            &format!("--size={region}"),
            "--number_ios=2000",
        ],
    )
}

fn mode(m: &str) -> String {
    format!("nvmm.m_flush=\"{m}\"")
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let curves: Vec<Vec<_>> = MODES
        .iter()
        .map(|m| {
            regions()
                .into_iter()
                .map(|rg| p.add(sync_point("nvmm-raw", rg, &[&mode(m)])))
                .collect()
        })
        .collect();
    let ten: Vec<_> = MODES
        .iter()
        .map(|m| {
            (
                p.add(sync_point("nvmm-raw", 10 << 20, &[&mode(m)])),
                p.add(sync_point("nvmm-raw", 100 << 20, &[&mode(m)])),
            )
        })
        .collect();
    let spf: Vec<_> = regions()
        .into_iter()
        .map(|rg| p.add(sync_point("nvmm-opt", rg, &[])))
        .collect();
    let spf_small = p.add(sync_point("nvmm-opt", 64 << 10, &[]));
    let spf_large = p.add(sync_point("nvmm-opt", 100 << 20, &[]));
    let wof_large = p.add(sync_point("nvmm-wof", 100 << 20, &[]));
    let over10: Vec<_> = ["clflush", "clflushopt"]
        .iter()
        .map(|m| (*m, p.add(sync_point("nvmm-raw", 11 << 20, &[&mode(m)]))))
        .collect();
    let disk = p.add(disk_point(11 << 20));
    let finish = move |r: &crate::measure::Results| {
        let mut rows = Vec::new();
        for (m, (small, large)) in MODES.iter().zip(&ten) {
            rows.push(Row::within(
                format!("{m}: msync cost, 100 MB / 10 MB region"),
                r[*large].sync_ns() / r[*small].sync_ns(),
                10.0,
                0.15,
                "x",
            ));
        }
        let (s, l) = (r[spf_small].sync_ns(), r[spf_large].sync_ns());
        rows.push(Row::holds(
            "SPF: msync cost, 100 MB / 64 KB region (1600x)",
            "nearly flat (< 100x)",
            format!("{:.1}x", l / s),
            l / s < 100.0,
        ));
        let default = r[wof_large].sync_ns();
        rows.push(Row::holds(
            "SPF against default flushing (nvmm-wof), 100 MB",
            "at least 20x cheaper",
            format!(
                "{:.0}x ({} vs {})",
                default / l,
                with_unit(l / 1e3, "µs"),
                with_unit(default / 1e3, "µs")
            ),
            default / l >= 20.0,
        ));
        let disk_ns = r[disk].sync_ns();
        for (m, id) in &over10 {
            let t = r[*id].sync_ns();
            rows.push(
                Row::holds(
                    format!("{m}: msync of an 11 MB region against a disk"),
                    "slower than msync on a disk (calibrated crossover: 10 MiB)",
                    format!(
                        "{} vs hdd-7200 {}",
                        with_unit(t / 1e6, "ms"),
                        with_unit(disk_ns / 1e6, "ms")
                    ),
                    t > disk_ns,
                )
                .input("flush_clflush_ns_per_line (with flush_clflushopt_ns_per_line, CALIBRATED to this crossover)"),
            );
        }
        let curve = |ids: &[crate::measure::RunId]| -> Vec<(f64, f64)> {
            regions()
                .iter()
                .zip(ids)
                .map(|(&rg, &id)| (rg as f64, r[id].sync_ns() / 1e3))
                .collect()
        };
        let mut series: Vec<Series> = MODES
            .iter()
            .zip(&curves)
            .map(|(m, ids)| Series {
                label: m.to_string(),
                kind: SeriesKind::Model,
                points: curve(ids),
            })
            .collect();
        series.push(Series {
            label: "SPF (nvmm-opt)".into(),
            kind: SeriesKind::Model,
            points: curve(&spf),
        });
        let rg = regions();
        series.push(Series {
            label: "msync on hdd-7200, 11 MB file".into(),
            kind: SeriesKind::Reference,
            points: vec![
                (rg[0] as f64, disk_ns / 1e3),
                (rg[rg.len() - 1] as f64, disk_ns / 1e3),
            ],
        });
        Reproduction {
            study: "nvmm".into(),
            title: "Zhang and Swanson, A Study of Application Performance with Non-Volatile Main Memory, MSST 2015".into(),
            setting: "Write 4 KB, then msync the mapped region (fio fsync=1), on the simulator's nvmm class.".into(),
            class: Class::Device,
            state_rule: "none needed: the region is mapped NVMM written in place; each msync follows one write".into(),
            notes: vec![],
            rows: at_all(rows, NVMM_MSYNC),
            figures: vec![Figure {
                id: "nvmm-msync".into(),
                title: "msync cost against region size, by flush mode".into(),
                x_label: "region (bytes)".into(),
                y_label: "µs per msync".into(),
                x_log: true,
                x_bytes: true,
                y_log: true,
                panels: vec![Panel { title: "write 4 KB, msync the region".into(), series }],
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
