//! Helpers for the peer-device tests: run fio arguments on a preset through
//! the same path as `storlab sim`, and read the results and the device's
//! counters.
#![allow(dead_code)]

use serde_json::Value;
use storlab_model::breakdown::COMPONENTS;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::run::simulate;
use storlab_sim::stats::JobStats;

/// A small X25-E (512 MiB of 640 MiB flash): same timings, quick to
/// precondition.
pub const SMALL_X25E: &[&str] = &[
    "device.capacity_bytes=536870912",
    "ssd.nand.blocks_per_plane=64",
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

/// One run: all jobs merged, and the `storlab` block of the first.
pub struct Run {
    pub stats: JobStats,
    pub storlab: Value,
}

impl Run {
    /// Mean latency of direction `d` (0 read, 1 write), µs.
    pub fn lat_us(&self, d: usize) -> f64 {
        self.stats.dirs[d].lat().mean() / 1000.0
    }
    /// Mean latency minus host software, µs (the device's share).
    pub fn device_us(&self, d: usize) -> f64 {
        let b = self.stats.dirs[d].mean_breakdown_ns();
        COMPONENTS
            .iter()
            .filter(|c| !c.is_software())
            .map(|&c| b[c as usize])
            .sum::<f64>()
            / 1000.0
    }
    /// Share of direction `d`'s latency spent in host software.
    pub fn software_share(&self, d: usize) -> f64 {
        let b = self.stats.dirs[d].mean_breakdown_ns();
        let total: f64 = b.iter().sum();
        COMPONENTS
            .iter()
            .filter(|c| c.is_software())
            .map(|&c| b[c as usize])
            .sum::<f64>()
            / total
    }
    /// Bandwidth of direction `d`, MB/s (10^6 bytes).
    pub fn mbps(&self, d: usize) -> f64 {
        self.stats.dirs[d].io_bytes() as f64 / self.stats.runtime_ns[d].max(1) as f64 * 1000.0
    }
    /// Read + write bandwidth, MB/s.
    pub fn total_mbps(&self) -> f64 {
        let t = self.stats.runtime_ns[0]
            .max(self.stats.runtime_ns[1])
            .max(1) as f64;
        (self.stats.dirs[0].io_bytes() + self.stats.dirs[1].io_bytes()) as f64 / t * 1000.0
    }
    /// IOPS of direction `d`.
    pub fn iops(&self, d: usize) -> f64 {
        self.stats.dirs[d].ios() as f64 / self.stats.runtime_ns[d].max(1) as f64 * 1e9
    }
    /// A device counter by name (0 when absent).
    pub fn counter(&self, name: &str) -> f64 {
        self.storlab["counters"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == name))
            .and_then(|c| c["value"].as_f64())
            .unwrap_or(0.0)
    }
}

/// Run fio command-line arguments on `device` with `overrides`, with
/// fio's libaio engine (the depth a job asks for is the depth it gets).
pub fn run(device: &str, overrides: &[&str], fio: &[&str]) -> Run {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &ov).expect("preset loads");
    let mut args: Vec<String> = vec!["--name=peer".into(), "--ioengine=libaio".into()];
    args.extend(fio.iter().map(|s| s.to_string()));
    let jobs = storlab_workload::fio::parse_cli_args(&args).expect("fio args parse");
    let r = simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).expect("simulation runs");
    let mut stats = r.jobs[0].clone();
    for j in &r.jobs[1..] {
        stats.merge(j);
    }
    let storlab = r.jobs[0].storlab.clone();
    Run { stats, storlab }
}

/// `x` within `rel` of `target`, or fail with both.
pub fn within(what: &str, x: f64, target: f64, rel: f64) {
    let (lo, hi) = (target * (1.0 - rel), target * (1.0 + rel));
    eprintln!("{what}: model {x:.2}, rated {target}");
    assert!(
        x >= lo && x <= hi,
        "{what}: model {x:.2}, rated {target} ±{:.0}% = [{lo:.2}, {hi:.2}]",
        rel * 100.0
    );
}

/// Concatenate override lists.
pub fn with<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b.iter()).copied().collect()
}
