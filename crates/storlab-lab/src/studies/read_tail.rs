//! The read tail under writes (issue 58 item 5): on every flash and disk
//! preset, one reader thread at queue depth 1 (4 KB random reads), alone
//! and beside eight writer threads (4 KB random writes, QD1 each); its
//! completion-latency percentiles, as fio reports them for the reader's
//! job, in a figure of the devices study.
//!
//! The device's state, one rule for every preset: flash is written once
//! (reads touch the flash); a write-back cache in front of disks (the
//! drive's own or a RAID controller's) is first filled by a stonewalled
//! group of the same writers writing twice its size, so the measured
//! writers run against a cache that destages (as any run longer than the
//! cache's fill time does); the measured group runs for a fixed time.
//!
//! The zoned drive (`zn540`) takes writes only at a zone's write pointer,
//! so its "written once" is a stonewalled sequential fill of the first
//! zone's writable capacity, which the reader then reads (inside it, as
//! any host may); its writers write as fio's `zonemode=zbd` makes random
//! writes, at the write pointers of zones of their own (each writer its
//! own 4 GiB, `offset_increment`, and one open zone, eight in all under
//! the drive's 14). The datacenter and consumer NVMe drives are measured
//! at their presets' capacities: the model's flash state is sized by what
//! is written, not by the drive.

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Results, RunId, Spec};
use crate::studies::psd::{SMALL_FUSION, SMALL_PLACEMENT, SMALL_SATA, SMALL_X25E};

/// Writer threads beside the reader.
pub const WRITERS: u32 = 8;

/// The percentiles drawn.
pub const PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

/// One preset's runs.
pub struct TailRuns {
    /// The preset.
    pub device: &'static str,
    /// The reader alone.
    pub alone: RunId,
    /// The reader beside the writers.
    pub under: RunId,
}

/// A preset, its overrides (small flash, written once), the measured
/// time and the fill writes per writer thread (0: no write-back cache
/// to fill; else twice the cache over [`WRITERS`] threads of 4 KB).
struct Dev {
    name: &'static str,
    overrides: Vec<String>,
    size: &'static str,
    runtime: &'static str,
    fill_ios: u32,
    /// A zoned drive: filled and written as [the module](self) says.
    zoned: bool,
}

fn written(ov: &[&str]) -> Vec<String> {
    ov.iter()
        .map(|s| s.to_string())
        .chain(["ssd.ftl.precondition=\"full\"".to_string()])
        .collect()
}

/// Fill writes per writer thread for a cache of `mib` MiB: twice it.
const fn fill(mib: u32) -> u32 {
    2 * mib * 256 / WRITERS
}

fn devices() -> Vec<Dev> {
    let flash = |name, overrides| Dev {
        name,
        overrides,
        size: "1g",
        runtime: "200ms",
        fill_ios: 0,
        zoned: false,
    };
    let disk = |name, fill_ios| Dev {
        name,
        overrides: Vec::new(),
        size: "8g",
        runtime: "4s",
        fill_ios,
        zoned: false,
    };
    vec![
        flash("x25e", written(SMALL_X25E)),
        flash("sata-ssd", written(SMALL_SATA)),
        flash("fusion-io", written(SMALL_FUSION)),
        flash("placement-flash", written(SMALL_PLACEMENT)),
        flash("raid-ssd", crate::studies::peers::raid_ssd("full")),
        flash("micron-psd", Vec::new()),
        flash("pm9a3", written(&[])),
        flash("990pro", written(&[])),
        flash("p5336", written(&[])),
        Dev {
            zoned: true,
            ..flash("zn540", Vec::new())
        },
        // the drive's 32 MB buffer (hdd-7200's cache_bytes)
        disk("hdd-7200", fill(32)),
        disk("raid-hdd2", fill(32)),
        disk("flash-cache-wt", fill(32)),
        disk("flash-cache-wb", fill(32)),
        // the 3ware's 256 MB (raid-disk's cache_bytes)
        disk("raid-disk", fill(256)),
        disk("raid-disk-16k", fill(256)),
    ]
}

fn spec(d: &Dev, writers: bool) -> Spec {
    let ov: Vec<&str> = d.overrides.iter().map(|s| s.as_str()).collect();
    let size = format!("--size={}", d.size);
    let runtime = format!("--runtime={}", d.runtime);
    let mut fio: Vec<String> = ["--direct=1", "--bs=4k", "--iodepth=1", &size]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let filled = (writers && d.fill_ios > 0) || d.zoned;
    if writers && d.fill_ios > 0 {
        fio.extend([
            "--name=fill".to_string(),
            "--rw=randwrite".to_string(),
            format!("--numjobs={WRITERS}"),
            format!("--number_ios={}", d.fill_ios),
        ]);
    }
    if d.zoned {
        // the first zone's writable capacity, sequentially from its start
        fio.extend(
            [
                "--name=fill",
                "--rw=write",
                "--bs=128k",
                "--offset=0",
                "--size=1077m",
            ]
            .map(String::from),
        );
    }
    fio.extend([
        "--name=reader".to_string(),
        "--rw=randread".to_string(),
        runtime.clone(),
        "--time_based".to_string(),
    ]);
    if d.zoned {
        fio.extend(["--bs=4k", "--offset=0", "--size=1g"].map(String::from));
    }
    if filled {
        fio.push("--stonewall".to_string());
    }
    if writers {
        fio.extend([
            "--name=writer".to_string(),
            "--rw=randwrite".to_string(),
            format!("--numjobs={WRITERS}"),
            runtime,
            "--time_based".to_string(),
        ]);
        if d.zoned {
            fio.extend(
                [
                    "--zonemode=zbd",
                    "--max_open_zones=1",
                    "--offset=4g",
                    "--offset_increment=4g",
                    "--size=4g",
                ]
                .map(String::from),
            );
        }
    }
    let fio: Vec<&str> = fio.iter().map(|s| s.as_str()).collect();
    Spec::new(d.name, &ov, &fio).only("reader")
}

/// Add the runs to `p`.
pub fn plan(p: &mut Plan) -> Vec<TailRuns> {
    devices()
        .iter()
        .map(|d| TailRuns {
            device: d.name,
            alone: p.add(spec(d, false)),
            under: p.add(spec(d, true)),
        })
        .collect()
}

/// The reader's completion-latency percentile `q` of run `id`, µs.
pub fn read_pct_us(r: &Results, id: RunId, q: f64) -> f64 {
    r[id].stats.dirs[0].percentile(q) as f64 / 1000.0
}

/// Percentile `q` as its nines, `-log10(1 - q/100)` (p50 0.30, p90 1,
/// p99 2), so the tail spreads along the axis.
fn nines(q: f64) -> f64 {
    -(1.0 - q / 100.0).log10()
}

/// The figure: a panel per preset, the reader's percentiles alone and
/// under writes.
pub fn figure(r: &Results, runs: &[TailRuns]) -> Figure {
    let series = |label: &str, id: RunId| Series {
        label: label.into(),
        kind: SeriesKind::Model,
        points: PERCENTILES
            .iter()
            .map(|&q| (nines(q), read_pct_us(r, id, q)))
            .collect(),
    };
    Figure {
        id: "devices-read-tail".into(),
        title: format!(
            "QD1 4 KB random read latency percentiles, alone and beside {WRITERS} random writers (QD1 each), every flash and disk preset"
        ),
        x_label: "nines of the percentile (1 = p90, 2 = p99, 3 = p99.9)".into(),
        y_label: "read completion latency (µs)".into(),
        x_log: false,
        x_bytes: false,
        y_log: true,
        panels: runs
            .iter()
            .map(|t| Panel {
                title: t.device.into(),
                series: vec![
                    series("reads alone", t.alone),
                    series("reads under writes", t.under),
                ],
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use storlab_model::config::PresetStore;
    use storlab_model::SystemConfig;

    /// A block device of flash or disks: a drive, an array of them, or a
    /// cache tier whose cache is one (not a memory over one).
    fn flash_or_disk(store: &PresetStore, name: &str) -> bool {
        let (_, cfg) = SystemConfig::load(store, name, &[]).expect("preset loads");
        cfg.swap.is_none()
            && (cfg.ssd.is_some()
                || cfg.disk.is_some()
                || cfg.raid.is_some()
                || cfg
                    .tier
                    .as_ref()
                    .is_some_and(|t| flash_or_disk(store, &t.cache)))
    }

    #[test]
    fn every_flash_and_disk_preset_has_a_panel() {
        let store = PresetStore::default();
        let panels: Vec<&str> = super::devices().iter().map(|d| d.name).collect();
        let want: Vec<String> = store
            .list()
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| flash_or_disk(&store, n))
            .collect();
        assert!(want.len() >= 16, "{want:?}");
        for n in &want {
            assert!(panels.contains(&n.as_str()), "{n} has no read-tail panel");
        }
        for p in &panels {
            assert!(
                want.iter().any(|n| n == p),
                "{p} is not a flash or disk preset"
            );
        }
    }
}
