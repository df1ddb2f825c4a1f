//! `storlab hybrid`: the hybrid-memory runtime's thrash benchmark.

use anyhow::Context;
use clap::Subcommand;
use storlab_emu::store::StoreSpec;
use storlab_hybrid::thrash::{self, ThrashOptions};
use storlab_hybrid::HybridConfig;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

#[derive(Subcommand)]
pub enum HybridCmd {
    /// The paging microbenchmark: an array in hybrid memory (pages in a
    /// bounded DRAM cache, the rest on the emulated device, moved on page
    /// faults and timed by the model); touch every page, then threads
    /// update random entries, each in its own part. Reports updates per
    /// second against plain DRAM.
    Thrash {
        /// Device preset or TOML file behind the DRAM.
        #[arg(long, default_value = "fusion-io")]
        device: String,
        /// Override a configuration value of the device: `--set ssd.nand.read_ns=[50000]`
        /// (`storlab devices show NAME` lists its keys; a key the device does not
        /// read is an error).
        #[arg(long = "set")]
        set: Vec<String>,
        /// Array size (fio's size syntax: 256m, 1g).
        #[arg(long, default_value = "256m")]
        size: String,
        /// DRAM the array may keep resident.
        #[arg(long, default_value = "64m")]
        dram: String,
        /// Updating threads.
        #[arg(long, default_value_t = 16)]
        threads: usize,
        /// Updates per thread.
        #[arg(long, default_value_t = 5000)]
        updates: u64,
        /// Seed of the random updates.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where the device's pages are kept: memory or file:PATH.
        #[arg(long, default_value = "memory")]
        store: String,
        /// Skip the plain-DRAM run (it needs the whole array in RAM).
        #[arg(long)]
        no_baseline: bool,
        /// normal or json.
        #[arg(long = "output-format", default_value = "normal")]
        output_format: String,
    },
}

fn size(flag: &str, v: &str) -> anyhow::Result<u64> {
    storlab_workload::fio::parse_size(v).map_err(|e| anyhow::anyhow!("--{flag} {v}: {e}"))
}

/// Run `storlab hybrid`.
pub fn run(cmd: &HybridCmd) -> anyhow::Result<()> {
    let HybridCmd::Thrash {
        device,
        set,
        size: size_arg,
        dram,
        threads,
        updates,
        seed,
        store,
        no_baseline,
        output_format,
    } = cmd;
    if !matches!(output_format.as_str(), "normal" | "json") {
        anyhow::bail!("--output-format={output_format}: supported formats are normal and json");
    }
    let store: StoreSpec = store.parse().map_err(|e| anyhow::anyhow!("--store: {e}"))?;
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), device, set)
        .with_context(|| format!("device '{device}'"))?;
    let dev = cfg
        .build_device()
        .with_context(|| format!("device '{device}'"))?;
    let o = ThrashOptions {
        config: HybridConfig {
            size_bytes: size("size", size_arg)?,
            dram_bytes: size("dram", dram)?,
            store,
        },
        threads: *threads,
        updates_per_thread: *updates,
        seed: *seed,
        baseline: !no_baseline,
    };
    let r = thrash::run(&o, dev)?;
    if output_format == "json" {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        let mib = |b: u64| b as f64 / 1048576.0;
        let s = &r.stats;
        println!(
            "thrash: {:.0} MiB array, {:.0} MiB DRAM, {} threads x {} updates, on {device}",
            mib(r.size_bytes),
            mib(r.dram_bytes),
            r.threads,
            r.updates_per_thread
        );
        println!(
            "  hybrid: {:.0} updates/s (touch {:.2} s, updates {:.2} s)",
            r.hybrid.updates_per_s, r.hybrid.touch_s, r.hybrid.update_s
        );
        if let (Some(d), Some(rel)) = (&r.dram, r.relative) {
            println!(
                "  DRAM:   {:.0} updates/s; hybrid runs at {rel:.4} of DRAM",
                d.updates_per_s
            );
        }
        println!(
            "  faults {} (zero fills {}, device reads {}); evictions written {}, clean {} ({} still zero); resident peak {} of {} pages",
            s.faults, s.zero_fills, s.device_reads, s.device_writes, s.clean_evictions, s.zero_evictions, s.resident_peak, s.dram_pages
        );
        println!(
            "  fault service {:.1} µs mean, p50 {:.1}, p99 {:.1}; the model's read {:.1} µs mean",
            s.fault_us.mean, s.fault_us.p50, s.fault_us.p99, s.model_read_us.mean
        );
    }
    if r.checksum != r.expected_checksum {
        anyhow::bail!(
            "data error: the array sums to {}, expected {}",
            r.checksum,
            r.expected_checksum
        );
    }
    Ok(())
}
