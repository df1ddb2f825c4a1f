//! `storlab paging`: a memory workload (thrash by default) through the
//! simulator's model of Linux's swap path (`storlab_model::host::swap`), on a
//! preset with a `[swap]` table whose swap device is any preset, beside the
//! same workload with enough DRAM.

use anyhow::Context;
use serde_json::json;
use std::io::Write;
use storlab_model::config::PresetStore;

use storlab_apps::paging::{self, PagingRun};
use storlab_apps::MemoryApp;
use storlab_model::host::swap::{MemWorkload, Pattern};
use storlab_model::SystemConfig;
use storlab_sim::report::ReportOptions;

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
    /// (a sweep), `zigzag` (sweeps forward and back), or `hot:P:A` (a
    /// fraction A of the accesses to the first fraction P of the part's
    /// pages).
    #[arg(long, default_value = "uniform")]
    pattern: String,
    /// Fraction of the accesses that store (dirty the page).
    #[arg(long, default_value_t = 1.0)]
    write_fraction: f64,
    /// Computation after each access, ns.
    #[arg(long, default_value_t = 100)]
    cpu_ns: u64,
    /// DRAM bytes an access's computation reads (a store writes them back
    /// too), shared against the swap preset's `swap.dram_bytes_per_s`:
    /// 64 (one cache line, thrash's integer update); 4096 for a program
    /// that runs over the whole page.
    #[arg(long, default_value_t = 64)]
    access_bytes: u64,
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
        "zigzag" => Pattern::Zigzag,
        _ => {
            let parts: Vec<&str> = s.split(':').collect();
            match parts.as_slice() {
                ["hot", p, a] => Pattern::Hot {
                    pages: p.parse().with_context(|| format!("--pattern {s}: P"))?,
                    accesses: a.parse().with_context(|| format!("--pattern {s}: A"))?,
                },
                _ => anyhow::bail!("--pattern {s}: one of uniform, sequential, zigzag, hot:P:A"),
            }
        }
    })
}

/// Run `storlab paging`: the workload as a paging program (one
/// instruction an access: the metric is accesses per second), run by
/// the same code as `storlab sim --app` ([`storlab_apps::paging::run`]).
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
    let app = MemoryApp {
        workload: MemWorkload {
            threads: a.threads,
            pages_per_thread,
            accesses: a.accesses,
            pattern: pattern(&a.pattern)?,
            write_fraction: a.write_fraction,
            cpu_ns: a.cpu_ns,
            bytes_per_access: a.access_bytes,
            seed: a.seed,
        },
        dram_bytes: a.dram,
        instructions_per_access: 1.0,
    };
    let store = PresetStore::default();
    // the swap area: --swap, or 8 x DRAM (at least the array)
    let swap_bytes = a.swap.unwrap_or((8 * a.dram).max(a.array));
    let mut set = vec![format!("swap.swap_bytes={swap_bytes}")];
    if let Some(d) = &a.swap_device {
        set.push(format!("swap.device={d:?}"));
    }
    set.extend(a.set.iter().cloned());
    let sys = paging::swap_system(&store, &a.device, a.dram, swap_bytes, &set)
        .with_context(|| format!("on {}", a.device))?;
    let sc = sys
        .swap
        .as_ref()
        .context("the preset has no [swap] table")?;
    let device = sc.device.clone();
    let (_, dc) = SystemConfig::load(&store, &device, &sc.device_set)
        .with_context(|| format!("swap device {device}"))?;
    let r = paging::run(&store, &a.device, &app, &dc, &set, a.seed)
        .with_context(|| format!("on {}", a.device))?;
    if a.json {
        let out = json!({
            "device": a.device,
            "swap_device": device,
            "dram_bytes": a.dram,
            "array_bytes": pages_per_thread * PAGE * a.threads as u64,
            "paged": r.paged,
            "enough_dram": r.enough,
            "relative_to_enough_dram": r.relative,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "paging: {} threads, {} array over {} of DRAM, swap on {device}",
            a.threads,
            human(a.array),
            human(a.dram)
        );
        print_runs(&mut std::io::stdout().lock(), "accesses/s", &r)?;
    }
    Ok(())
}

/// The paged and enough-DRAM figures and their ratio, in `unit`.
fn print_runs(out: &mut dyn Write, unit: &str, r: &PagingRun) -> std::io::Result<()> {
    let p = &r.paged;
    writeln!(
        out,
        "  paged:       {:>14} {unit}  ({} major faults, {} minor; {} pages read, {} written)",
        plain(r.metric),
        p.major_faults,
        p.minor_faults,
        p.pages_read,
        p.pages_written
    )?;
    writeln!(out, "  enough DRAM: {:>14} {unit}", plain(r.metric_enough))?;
    writeln!(
        out,
        "  relative:    {} ({:.1}x slower)",
        plain(r.relative),
        1.0 / r.relative.max(f64::MIN_POSITIVE)
    )
}

/// A rate as people read it: four significant digits, no exponent
/// (`46781` for 4.6781e4, `0.0004234` for 4.234e-4).
fn plain(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let digits = x.abs().log10().floor() as i32;
    let decimals = (3 - digits).max(0) as usize;
    format!("{x:.decimals$}")
}

fn human(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} B"),
    }
}

/// `storlab sim --app NAME` for a paging program (NPB, DGEMM, thrash):
/// its access stream through the swap path (`swap-linux`) with the
/// `--device` preset (and its `--set` overrides) as the swap device,
/// beside the same stream with enough DRAM. The report is fio's layout
/// with one job, the program, whose `app` object carries the metric
/// paged and with enough DRAM. `device`, `seed` and `output` are `storlab
/// sim`'s `--device`, `--seed` and `--output`.
#[allow(clippy::too_many_arguments)]
pub fn run_app(
    device: &str,
    seed: u64,
    output: Option<&std::path::Path>,
    store: &PresetStore,
    cfg: &SystemConfig,
    _resolved: &storlab_model::config::Resolved,
    info: &storlab_apps::AppInfo,
    params: &storlab_apps::Params,
    app: MemoryApp,
    fmt: &str,
) -> anyhow::Result<()> {
    let r = paging::run(store, paging::SWAP_PRESET, &app, cfg, &[], seed)
        .with_context(|| format!("{} paging to {}", info.name, device))?;
    let mut out: Box<dyn std::io::Write> = match output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("--output {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    if fmt == "normal" {
        let w = &app.workload;
        writeln!(
            out,
            "{}: {} threads, {} footprint over {} of DRAM, swap on {} ({:?})",
            info.name,
            w.threads,
            human(w.threads as u64 * w.pages_per_thread * PAGE),
            human(app.dram_bytes),
            device,
            w.pattern
        )?;
        print_runs(&mut out, info.unit, &r)?;
        out.flush()?;
    } else {
        let j = paging::job_stats(info.name, 0, info, params, &app, &r);
        storlab_sim::report::write_json(&[j], &mut out, &ReportOptions::default())?;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn rates_print_without_an_exponent() {
        assert_eq!(super::plain(46781.0), "46781");
        assert_eq!(super::plain(4.6781), "4.678");
        assert_eq!(super::plain(0.00042341), "0.0004234");
        assert_eq!(super::plain(0.0), "0");
    }
}
