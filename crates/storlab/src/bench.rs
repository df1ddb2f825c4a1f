//! `storlab bench`: the simulator's speed, as simulated IOs per second of
//! wall time on one core, against a baseline measured in the same run.

use std::time::Instant;

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

/// Options.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Presets to measure.
    #[arg(long, value_delimiter = ',', default_value = "moneta-spin,haste-pcm")]
    pub devices: Vec<String>,
    /// Simulated IOs per thread.
    #[arg(long, default_value_t = 20000)]
    pub ios_per_thread: u64,
    /// Repetitions of every measurement, each a null-device run and the
    /// device's run after it; the median rate and the median of the
    /// pairs' ratios are reported (the runs are deterministic, so they
    /// differ only by the machine's noise).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Measure an application model instead of fio jobs: wall time of a
    /// simulated `--app-runtime` of it on each device (default devices
    /// raid-disk,moneta-spin), against the same run on the null device,
    /// and peak memory after a quarter and after the whole duration.
    #[arg(long)]
    pub app: Option<String>,
    /// Simulated duration of the application runs.
    #[arg(long, default_value = "60s")]
    pub app_runtime: String,
}

/// The median of `v` (the upper one of an even count; 0 when empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}

/// Runs of a device paired with runs of the null device.
struct Paired {
    /// Simulated IOs per wall second of the device, one per rep.
    rates: Vec<f64>,
    /// The null device's, each measured just before its pair.
    base: Vec<f64>,
    /// Each rep's rate over its own null run's.
    ratios: Vec<f64>,
    /// Simulated IOs and events of one run (the same in every run).
    ios: u64,
    events: u64,
}

/// `reps` pairs, each the null device's run and then `f`'s, so that the
/// pair sees the same machine: on a shared VM the rate of one run swings
/// by a third from minute to minute (steal time, frequency), and a
/// baseline measured once before every device's runs carried that swing
/// into every ratio (the same binary gave 0.41x and 0.57x for moneta-spin
/// in two invocations a minute apart). The ratio reported is the median
/// of the pairs' ratios.
fn paired(
    reps: u32,
    ios_per_thread: u64,
    mut f: impl FnMut(u64) -> anyhow::Result<(f64, u64, u64)>,
) -> anyhow::Result<Paired> {
    let mut p = Paired {
        rates: Vec::new(),
        base: Vec::new(),
        ratios: Vec::new(),
        ios: 0,
        events: 0,
    };
    for _ in 0..reps {
        let (b, _, _) = measure("null", ios_per_thread)?;
        let (r, ios, events) = f(ios_per_thread)?;
        p.base.push(b);
        p.rates.push(r);
        p.ratios.push(r / b);
        (p.ios, p.events) = (ios, events);
    }
    Ok(p)
}

/// One run of the null device whose time is not counted: the process's
/// first run pays for its heap's first growth (page faults) and the
/// core's climb to its clock, which made the first null runs up to a
/// third slower than later ones.
fn warm_up(ios_per_thread: u64) -> anyhow::Result<()> {
    measure("null", ios_per_thread).map(|_| ())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// One measurement: 16 jobs × iodepth 32 of 4 KB random reads.
fn measure(device: &str, ios_per_thread: u64) -> anyhow::Result<(f64, u64, u64)> {
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, &[])?;
    let args: Vec<String> = [
        "--name=bench",
        "--rw=randread",
        "--bs=4k",
        "--ioengine=libaio",
        "--iodepth=32",
        "--numjobs=16",
        "--norandommap",
        &format!("--number_ios={ios_per_thread}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let jobs = storlab_workload::fio::parse_cli_args(&args)?;
    let t0 = Instant::now();
    let r = storlab_apps::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})?;
    let wall = t0.elapsed().as_secs_f64();
    let ios: u64 = r.jobs.iter().map(|j| j.rw_ios()).sum();
    Ok((ios as f64 / wall, ios, r.events))
}

/// One application run: (wall seconds, simulated operations, metric).
fn measure_app(device: &str, app: &str, runtime: &str) -> anyhow::Result<(f64, u64, f64)> {
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, &[])?;
    let info = storlab_apps::find(app, "--app")?;
    // the run is bounded by its simulated time, not by the model's own
    // amount of work
    let mut pairs = vec![format!("runtime={runtime}")];
    if info.params.iter().any(|p| p.name == "transactions") {
        pairs.push("transactions=1000000000".into());
    }
    let jobs = storlab_workload::fio::parse_cli_args(&storlab_apps::job_args(app, &pairs))?;
    let t0 = Instant::now();
    let r = storlab_apps::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})?;
    let wall = t0.elapsed().as_secs_f64();
    let a = r
        .jobs
        .iter()
        .find_map(|j| j.app.clone())
        .ok_or_else(|| anyhow::anyhow!("{app}: no application result"))?;
    Ok((
        wall,
        a["operations_counted"].as_u64().unwrap_or(0),
        a["metric"].as_f64().unwrap_or(0.0),
    ))
}

/// `storlab bench --app NAME`.
fn run_app(a: &BenchArgs, app: &str) -> anyhow::Result<()> {
    let ns = storlab_workload::fio::parse_time(&a.app_runtime, 1_000_000)
        .map_err(|e| anyhow::anyhow!("--app-runtime: {e}"))?;
    let quarter = format!("{}us", ns / 4000);
    let full = format!("{}us", ns / 1000);
    let devices: Vec<String> = if a.devices == ["moneta-spin", "haste-pcm"] {
        vec!["raid-disk".into(), "moneta-spin".into()]
    } else {
        a.devices.clone()
    };
    // baseline: the fio benchmark on the null device, measured in this run
    // (each application run paired with a null-device run, as `run` does)
    warm_up(a.ios_per_thread)?;
    let mut rows = Vec::new();
    let mut all_base = Vec::new();
    for d in &devices {
        let rss0 = peak_rss_kib();
        let (wq, nq, _) = measure_app(d, app, &quarter)?;
        let rss1 = peak_rss_kib();
        let mut runs = Vec::new();
        let mut ratios = Vec::new();
        for _ in 0..a.reps {
            let (b, _, _) = measure("null", a.ios_per_thread)?;
            let run = measure_app(d, app, &full)?;
            all_base.push(b);
            ratios.push(run.1 as f64 / run.0 / b);
            runs.push(run);
        }
        runs.sort_by(|x, y| x.0.total_cmp(&y.0));
        let (wall, ops, metric) = runs[runs.len() / 2];
        let rss2 = peak_rss_kib();
        rows.push(serde_json::json!({
            "device": d,
            "app": app,
            "simulated_s": ns as f64 / 1e9,
            "wall_s": wall,
            "operations": ops,
            "metric": metric,
            "wall_s_quarter_run": wq,
            "operations_quarter_run": nq,
            "ops_per_wall_s": ops as f64 / wall,
            "ratio_to_null_device_fio": median(&ratios),
            "ratio_to_null_device_fio_per_rep": ratios,
            "peak_rss_kib_after_quarter_run": rss1.max(rss0),
            "peak_rss_kib_after_full_run": rss2,
            "repetitions": a.reps,
        }));
    }
    let base = median(&all_base);
    let out = serde_json::json!({"app": app, "baseline_null_device_fio_ios_per_wall_s": base, "results": rows});
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "baseline (fio 4 KB randread on the null device, same run): {:.2} M simulated IO/s per wall second (median of {})",
            base / 1e6,
            a.reps
        );
        for r in &rows {
            println!(
                "{:<14} {:>7.2} s wall for {} simulated ({} operations, {:.3} M/s, {:.3}x the baseline's rate); peak RSS {} KiB after a quarter, {} KiB after all",
                r["device"].as_str().unwrap_or(""),
                r["wall_s"].as_f64().unwrap_or(0.0),
                a.app_runtime,
                r["operations"],
                r["ops_per_wall_s"].as_f64().unwrap_or(0.0) / 1e6,
                r["ratio_to_null_device_fio"].as_f64().unwrap_or(0.0),
                r["peak_rss_kib_after_quarter_run"],
                r["peak_rss_kib_after_full_run"],
            );
        }
    }
    Ok(())
}

/// Run the benchmark.
pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    if let Some(app) = &a.app {
        return run_app(a, app);
    }
    // baseline: the same engine and workload on the zero-latency device (no
    // host cost, no device model work), measured in this same run
    warm_up(a.ios_per_thread)?;
    let mut rows = Vec::new();
    let mut all_base = Vec::new();
    for d in &a.devices {
        let rss0 = peak_rss_kib();
        let (small, _, _) = measure(d, a.ios_per_thread / 4)?;
        let rss1 = peak_rss_kib();
        let p = paired(a.reps, a.ios_per_thread, |n| measure(d, n))?;
        let rss2 = peak_rss_kib();
        all_base.extend_from_slice(&p.base);
        rows.push(serde_json::json!({
            "device": d,
            "workload": "4 KB randread, 16 jobs x iodepth 32",
            "simulated_ios": p.ios,
            "events": p.events,
            "sim_ios_per_wall_s": median(&p.rates),
            "repetitions": a.reps,
            "sim_ios_per_wall_s_quarter_run": small,
            "ratio_to_null_device": median(&p.ratios),
            "ratio_to_null_device_per_rep": p.ratios,
            "null_device_ios_per_wall_s": median(&p.base),
            "peak_rss_kib_after_quarter_run": rss1.max(rss0),
            "peak_rss_kib_after_full_run": rss2,
        }));
    }
    let base = median(&all_base);
    let out = serde_json::json!({"baseline_null_device_ios_per_wall_s": base, "results": rows});
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "baseline (null device, same workload): {:.2} M simulated IO/s per wall second (medians of {} runs)",
            base / 1e6,
            a.reps
        );
        for r in out["results"].as_array().into_iter().flatten() {
            println!(
                "{:<14} {:>6.2} M IO/s  ({:.2}x the null-device baseline)  peak RSS {} KiB after {} IOs, {} KiB after a quarter",
                r["device"].as_str().unwrap_or(""),
                r["sim_ios_per_wall_s"].as_f64().unwrap_or(0.0) / 1e6,
                r["ratio_to_null_device"].as_f64().unwrap_or(0.0),
                r["peak_rss_kib_after_full_run"],
                r["simulated_ios"],
                r["peak_rss_kib_after_quarter_run"],
            );
        }
    }
    Ok(())
}
