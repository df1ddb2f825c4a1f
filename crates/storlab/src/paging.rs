//! `storlab paging`: a memory workload (thrash by default) through the
//! simulator's model of Linux's swap path (`storlab_model::swap`), on a
//! preset with a `[swap]` table whose swap device is any preset, beside the
//! same workload with enough DRAM.

use anyhow::Context;
use serde_json::json;
use storlab_model::config::PresetStore;
use storlab_model::swap::{self, MemReport, MemWorkload, Pattern};
use storlab_model::SystemConfig;

const PAGE: u64 = 4096;

fn size(v: &str) -> Result<u64, String> {
    storlab_workload::fio::parse_size(v).map_err(|e| e.to_string())
}

/// Options.
#[derive(clap::Args, Debug)]
pub struct PagingArgs {
    /// Preset with a `[swap]` table: its DRAM (a fixed device) and its
    /// swap path.
    #[arg(long, default_value = "swap-linux")]
    device: String,
    /// The swap device: any preset (sets `swap.device`; default: the
    /// preset's own).
    #[arg(long)]
    swap_device: Option<String>,
    /// Override a configuration value: `--set swap.page_cluster=0`.
    #[arg(long = "set")]
    set: Vec<String>,
    /// DRAM (page frames). Scaled down from the studies' 8 GB by default
    /// so a run takes seconds; the array size is what matters, relative
    /// to it.
    #[arg(long, value_parser = size, default_value = "64m")]
    dram: u64,
    /// The array: all threads' parts together.
    #[arg(long, value_parser = size, default_value = "256m")]
    array: u64,
    /// Swap area (default: 8 x DRAM, at least the array).
    #[arg(long, value_parser = size)]
    swap: Option<u64>,
    /// Threads, each updating its own part of the array.
    #[arg(long, default_value_t = 16)]
    threads: u32,
    /// Accesses per thread after every page has been touched.
    #[arg(long, default_value_t = 4096)]
    accesses: u64,
    /// Which page a thread accesses next: `uniform` (thrash), `sequential`
    /// (a sweep), or `hot:P:A` (a fraction A of the accesses to the first
    /// fraction P of the part's pages).
    #[arg(long, default_value = "uniform")]
    pattern: String,
    /// Fraction of the accesses that store (dirty the page).
    #[arg(long, default_value_t = 1.0)]
    write_fraction: f64,
    /// Computation after each access, ns.
    #[arg(long, default_value_t = 100)]
    cpu_ns: u64,
    /// Seed of the access pattern.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn pattern(s: &str) -> anyhow::Result<Pattern> {
    Ok(match s {
        "uniform" => Pattern::Uniform,
        "sequential" => Pattern::Sequential,
        _ => {
            let parts: Vec<&str> = s.split(':').collect();
            match parts.as_slice() {
                ["hot", p, a] => Pattern::Hot {
                    pages: p.parse().with_context(|| format!("--pattern {s}: P"))?,
                    accesses: a.parse().with_context(|| format!("--pattern {s}: A"))?,
                },
                _ => anyhow::bail!("--pattern {s}: one of uniform, sequential, hot:P:A"),
            }
        }
    })
}

fn system(a: &PagingArgs, dram: u64, swap_bytes: u64) -> anyhow::Result<SystemConfig> {
    let mut o = vec![
        format!("device.capacity_bytes={dram}"),
        format!("swap.swap_bytes={swap_bytes}"),
    ];
    if let Some(d) = &a.swap_device {
        o.push(format!("swap.device={d:?}"));
    }
    o.extend(a.set.iter().cloned());
    Ok(SystemConfig::load(&PresetStore::default(), &a.device, &o)?.1)
}

/// Run `storlab paging`.
pub fn run(a: &PagingArgs) -> anyhow::Result<()> {
    if a.threads == 0 {
        anyhow::bail!("--threads must be at least 1");
    }
    let pages_per_thread = a.array / PAGE / a.threads as u64;
    if pages_per_thread == 0 {
        anyhow::bail!(
            "--array {} gives no page to each of {} threads",
            a.array,
            a.threads
        );
    }
    let w = MemWorkload {
        threads: a.threads,
        pages_per_thread,
        accesses: a.accesses,
        pattern: pattern(&a.pattern)?,
        write_fraction: a.write_fraction,
        cpu_ns: a.cpu_ns,
        seed: a.seed,
    };
    let swap_bytes = a.swap.unwrap_or((8 * a.dram).max(a.array));
    let store = PresetStore::default();
    let sys = system(a, a.dram, swap_bytes)?;
    let paged = swap::run(&sys, &store, &w).with_context(|| format!("on {}", a.device))?;
    // enough DRAM: the array and the watermarks twice over
    let roomy = system(a, 2 * a.array + a.dram, swap_bytes)?;
    let dram = swap::run(&roomy, &store, &w).context("with enough DRAM")?;
    let relative = paged.accesses_per_s / dram.accesses_per_s;
    let device = sys
        .swap
        .as_ref()
        .map(|s| s.device.clone())
        .unwrap_or_default();
    if a.json {
        let out = json!({
            "device": a.device,
            "swap_device": device,
            "dram_bytes": a.dram,
            "array_bytes": pages_per_thread * PAGE * a.threads as u64,
            "paged": paged,
            "enough_dram": dram,
            "relative_to_enough_dram": relative,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_report(a, &device, &paged, &dram, relative);
    }
    Ok(())
}

fn print_report(a: &PagingArgs, device: &str, p: &MemReport, d: &MemReport, relative: f64) {
    println!(
        "paging: {} threads, {} array over {} of DRAM, swap on {device}",
        a.threads,
        human(a.array),
        human(a.dram)
    );
    println!(
        "  paged:       {:>12.0} accesses/s  ({} major faults, {} minor)",
        p.accesses_per_s, p.major_faults, p.minor_faults
    );
    println!("  enough DRAM: {:>12.0} accesses/s", d.accesses_per_s);
    println!(
        "  relative:    {relative:.3e} ({:.0}x slower)",
        1.0 / relative.max(f64::MIN_POSITIVE)
    );
}

fn human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} B"),
    }
}

/// `storlab sim --app NAME` for a paging program (NPB, DGEMM, thrash):
/// its access stream through the swap path with the device as the swap
/// device, beside the same stream with enough DRAM.
#[allow(clippy::too_many_arguments)]
pub fn run_app(
    _a: &crate::sim::SimArgs,
    _store: &PresetStore,
    _cfg: &SystemConfig,
    _resolved: &storlab_model::config::Resolved,
    info: &storlab_sim::apps::AppInfo,
    _params: &storlab_sim::apps::Params,
    _app: storlab_sim::apps::MemoryApp,
    _fmt: &str,
) -> anyhow::Result<()> {
    // the paging programs' registry entries and this runner land together
    anyhow::bail!(
        "{}: paging programs are not wired to `storlab sim` yet",
        info.name
    )
}
