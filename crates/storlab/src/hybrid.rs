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
        /// Update phases timed on each memory (each a sample; the report
        /// gives their mean and spread, and warns when a phase is shorter
        /// than 10 ms or the samples spread more than 25 %).
        #[arg(long, default_value_t = 3)]
        repeats: u32,
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
        repeats,
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
        repeats: *repeats,
    };
    let r = thrash::run(&o, dev).map_err(|e| match e {
        // the library's fields are the command's flags
        storlab_hybrid::HybridError::Config { field, message } => {
            let (flag, given) = match field {
                "size_bytes" => ("--size", size_arg.clone()),
                "dram_bytes" => ("--dram", dram.clone()),
                "threads" => ("--threads", threads.to_string()),
                "repeats" => ("--repeats", repeats.to_string()),
                other => return anyhow::anyhow!("{other}: {message}"),
            };
            anyhow::anyhow!("{flag} {given}: {message}")
        }
        e => e.into(),
    })?;
    for w in &r.warnings {
        eprintln!("storlab: warning: {w}");
    }
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
        let phase = |p: &thrash::Phase| {
            format!(
                "{:.0} updates/s (mean of {}: {:.0} to {:.0}, spread {:.0} %; touch {:.2} s, shortest update phase {:.2} ms)",
                p.updates_per_s,
                p.samples.len(),
                p.min_updates_per_s,
                p.max_updates_per_s,
                p.spread * 100.0,
                p.touch_s,
                p.shortest_s * 1e3
            )
        };
        println!("  hybrid: {}", phase(&r.hybrid));
        if let (Some(d), Some(rel), Some([lo, hi])) = (&r.dram, r.relative, r.relative_range) {
            println!("  DRAM:   {}", phase(d));
            println!("  hybrid runs at {rel:.4} of DRAM (the samples allow {lo:.4} to {hi:.4})");
        }
        if !r.warnings.is_empty() {
            println!(
                "  {} warning(s) on standard error: these figures may differ from run to run",
                r.warnings.len()
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
