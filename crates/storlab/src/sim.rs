//! `storlab sim`: split the arguments into storlab's own flags (defined once,
//! below) and fio's, build the system and the jobs, run, report.

use std::io::Write;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::report::{self, ReportOptions};
use storlab_workload::fio;

/// The job `storlab sim` runs when given none: 4 KB random reads, one
/// thread, queue depth 1, 100,000 IOs over 1 GiB.
pub const DEFAULT_JOB: &[&str] = &[
    "--name=randread-4k",
    "--rw=randread",
    "--bs=4k",
    "--iodepth=1",
    "--numjobs=1",
    "--size=1g",
    "--number_ios=100000",
];

/// storlab's own `sim` options; every other argument goes to the fio parser.
#[derive(Parser, Debug)]
#[command(
    name = "storlab sim",
    about = "Simulate fio jobs on a device model in virtual time",
    disable_help_flag = true
)]
pub struct SimArgs {
    /// Device preset name or TOML file (a file may `extends = "<preset>"`).
    #[arg(long, default_value = "moneta-spin")]
    pub device: String,
    /// Output format: normal (fio's terminal summary) or json (fio's layout).
    #[arg(long = "output-format", default_value = "normal")]
    pub output_format: String,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<std::path::PathBuf>,
    /// Seed for anything the jobs leave unseeded.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Override any configuration value: `--set pcie.controllers=8`.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Media technology (dram, sttm, pcm, pcm-lee, slc-nand).
    #[arg(long)]
    pub media: Option<String>,
    /// Array read latency, ns (once per row opened).
    #[arg(long = "media-read-ns")]
    pub media_read_ns: Option<u64>,
    /// Array write latency, ns.
    #[arg(long = "media-write-ns")]
    pub media_write_ns: Option<u64>,
    /// Memory controllers (1-8).
    #[arg(long)]
    pub controllers: Option<u32>,
    /// Row size in bytes.
    #[arg(long = "row-bytes")]
    pub row_bytes: Option<u64>,
    /// Scheduler buffers.
    #[arg(long)]
    pub buffers: Option<u32>,
    /// Bytes per scheduler buffer.
    #[arg(long = "buffer-bytes")]
    pub buffer_bytes: Option<u64>,
    /// PCIe lanes.
    #[arg(long = "link-lanes")]
    pub link_lanes: Option<u32>,
    /// File system in the path: none (the raw device), xfs, ext3, ext4,
    /// tmpfs or pmfs; with one, fio's `filename`, `nrfiles`, `size`,
    /// `direct`, `fallocate` and `overwrite` define the files.
    #[arg(long)]
    pub fs: Option<String>,
    /// File-system overhead per request, ns (read,write).
    #[arg(long = "fs-overhead-ns", value_delimiter = ',')]
    pub fs_overhead_ns: Vec<u64>,
    /// Run an application model (`storlab apps` lists them) as a job,
    /// beside any fio jobs given.
    #[arg(long)]
    pub app: Option<String>,
    /// The application's parameters: `name=value,...` (repeatable).
    #[arg(long = "app-set")]
    pub app_set: Vec<String>,
    /// Also look for presets in this directory.
    #[arg(long = "preset-dir")]
    pub preset_dir: Option<std::path::PathBuf>,
    /// Replay this block trace instead of fio jobs.
    #[arg(long)]
    pub trace: Option<std::path::PathBuf>,
    /// How to replay: timed (open loop at the recorded times), afap (as
    /// fast as possible with --iodepth outstanding), scaled:F (times / F),
    /// closed (a closed-loop trace from `storlab serve --record-format
    /// closed`: each request after those it waited for plus its think time).
    #[arg(long, default_value = "timed")]
    pub replay: String,
    /// Replayed requests are wrapped into the device when the trace's
    /// device is larger, aligned to this many bytes.
    #[arg(long = "trace-align", default_value_t = 4096)]
    pub trace_align: u64,
    #[command(flatten)]
    pub read: crate::trace::ReadArgs,
    /// Print help (fio takes no short options, so `-h` is storlab's).
    #[arg(long, short = 'h', action = clap::ArgAction::Help)]
    pub help: Option<bool>,
}

impl SimArgs {
    /// The named convenience flags as `--set` overrides.
    pub fn overrides(&self) -> anyhow::Result<Vec<String>> {
        let mut o = Vec::new();
        if let Some(m) = &self.media {
            o.push(format!("media={m}"));
        }
        let pairs: [(&str, Option<String>); 8] = [
            ("media.read_ns", self.media_read_ns.map(|v| v.to_string())),
            ("media.write_ns", self.media_write_ns.map(|v| v.to_string())),
            ("pcie.controllers", self.controllers.map(|v| v.to_string())),
            ("pcie.row_bytes", self.row_bytes.map(|v| v.to_string())),
            ("pcie.buffers", self.buffers.map(|v| v.to_string())),
            (
                "pcie.buffer_bytes",
                self.buffer_bytes.map(|v| v.to_string()),
            ),
            ("pcie.link_lanes", self.link_lanes.map(|v| v.to_string())),
            (
                "host.file_system",
                self.fs.as_ref().map(|v| format!("{v:?}")),
            ),
        ];
        for (k, v) in pairs {
            if let Some(v) = v {
                o.push(format!("{k}={v}"));
            }
        }
        match self.fs_overhead_ns.as_slice() {
            [] => {}
            [both] => {
                o.push(format!("host.xfs_ns.read={both}"));
                o.push(format!("host.xfs_ns.write={both}"));
            }
            [r, w] => {
                o.push(format!("host.xfs_ns.read={r}"));
                o.push(format!("host.xfs_ns.write={w}"));
            }
            _ => anyhow::bail!("--fs-overhead-ns takes one value or read,write"),
        }
        o.extend(self.set.iter().cloned());
        Ok(o)
    }
}

/// Split `args` into (storlab's, fio's), using the flag definitions above.
pub fn split_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let cmd = SimArgs::command();
    let mut ours = vec!["storlab sim".to_string()];
    let mut fio = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        // `-h` is help: fio has no short options; only as the value of a
        // fio option given as `--key value` is it fio's
        let fio_value = i > 0
            && fio.last() == Some(&args[i - 1])
            && args[i - 1].starts_with("--")
            && !args[i - 1].contains('=');
        if a == "-h" && !fio_value {
            ours.push(a.clone());
            i += 1;
            continue;
        }
        let name = a
            .strip_prefix("--")
            .map(|r| r.split('=').next().unwrap_or(r));
        let known = name.and_then(|n| cmd.get_arguments().find(|x| x.get_long() == Some(n)));
        match known {
            Some(arg) => {
                ours.push(a.clone());
                let takes_value = arg.get_action().takes_values();
                if takes_value && !a.contains('=') && i + 1 < args.len() {
                    ours.push(args[i + 1].clone());
                    i += 1;
                }
            }
            None => fio.push(a.clone()),
        }
        i += 1;
    }
    (ours, fio)
}

/// The fio options storlab accepts, by what they do (`sim --help`): one
/// line each.
fn fio_options_help() -> String {
    format!(
        "fio options that change the simulation: {}\nfio options accepted without effect on a simulation: {}",
        fio::option_names(fio::OptionEffect::Simulated),
        fio::option_names(fio::OptionEffect::Recorded)
    )
}

/// The option nearest in spelling to `key` among `candidates`, if near
/// enough to be a typo of it.
fn nearest<'a>(key: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let key = key.to_ascii_lowercase();
    candidates
        .map(|c| (strsim::damerau_levenshtein(&key, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 4))
        .min_by_key(|&(d, c)| (d, c))
        .map(|(_, c)| c)
}

/// An unknown option on the command line, as a short error: its name, the
/// nearest storlab or fio option, and where the lists are (instead of the
/// list of every fio option).
fn unknown_option(e: fio::FioError) -> anyhow::Error {
    let fio::FioError::UnsupportedOption {
        location, option, ..
    } = &e
    else {
        return e.into();
    };
    if !location.is_cli {
        return e.into();
    }
    let cmd = SimArgs::command();
    let ours: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let fio_names = fio::supported_options();
    let guess = nearest(
        option,
        ours.iter()
            .copied()
            .chain(fio_names.iter().map(|(n, _)| *n)),
    );
    anyhow::anyhow!(
        "{location}: `--{option}` is neither a storlab nor a fio option{}; `storlab sim --help` lists both",
        guess.map(|g| format!(" (did you mean --{g}?)")).unwrap_or_default()
    )
}

/// Run `storlab sim`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let (ours, fio_args) = split_args(args);
    let a = SimArgs::try_parse_from(&ours).map_err(|e| {
        // help and version go to stdout with success, like clap does
        if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp) {
            print!("{e}");
            println!("\nAny other option is a fio job option (--name=, --rw=, --bs=, ...) or a job file.");
            println!("\n{}", fio_options_help());
            std::process::exit(0);
        }
        anyhow::anyhow!("{e}")
    })?;
    let fmt = match a.output_format.as_str() {
        "normal" | "json" | "json+" => a.output_format.clone(),
        other => anyhow::bail!("--output-format={other}: supported formats are normal and json"),
    };
    let mut store = PresetStore::default();
    if let Some(d) = &a.preset_dir {
        store = store.with_dir(d);
    }
    let (resolved, cfg) = SystemConfig::load(&store, &a.device, &a.overrides()?)
        .with_context(|| format!("device '{}'", a.device))?;
    if let Some(trace) = &a.trace {
        return replay(&a, &cfg, &resolved, trace, &fio_args, &fmt);
    }
    let with_app: Vec<String>;
    let fio_args = match &a.app {
        Some(name) => {
            let info = storlab_apps::find(name, "--app")?;
            let params = storlab_apps::Params::parse(info, &a.app_set, "--app-set")?;
            // the lab's known misses for this model, where a user runs it
            if let Some(note) = storlab_lab::approws::miss_note(info.name) {
                eprintln!("{note}");
            }
            if let storlab_apps::AppKind::Memory(m) = storlab_apps::build(info, &params)? {
                return crate::paging::run_app(
                    &a.device,
                    a.seed,
                    a.output.as_deref(),
                    &store,
                    &cfg,
                    &resolved,
                    info,
                    &params,
                    *m,
                    &fmt,
                );
            }
            with_app = storlab_apps::job_args(name, &a.app_set)
                .into_iter()
                .chain(fio_args.iter().cloned())
                .collect();
            &with_app
        }
        None => {
            if !a.app_set.is_empty() {
                anyhow::bail!("--app-set: give the application with --app NAME");
            }
            &fio_args
        }
    };
    let default: Vec<String>;
    let fio_args = if fio_args.is_empty() {
        default = DEFAULT_JOB.iter().map(|s| s.to_string()).collect();
        &default
    } else {
        fio_args
    };
    let jobs = fio::parse_cli_args(fio_args).map_err(unknown_option)?;
    if jobs.jobs.is_empty() {
        anyhow::bail!("no jobs: give a job file or --name=<job> with its options");
    }
    for note in jobs.jobs.iter().filter_map(|j| j.depth_note()) {
        eprintln!("{note}");
    }
    let work = Expected::of(&jobs, cfg.device.capacity_bytes);
    let bar = match work {
        Expected::Unknown => progress_bar(),
        _ => progress_bar_share(),
    };
    let pre = preconditioning(&cfg);
    if let Some(kind) = &pre {
        bar.set_message(format!("preconditioning the drive ({kind})"));
    }
    let t0 = std::time::Instant::now();
    let mut ready = None;
    let mut progress = |done: u64, now: u64| {
        ready.get_or_insert_with(|| t0.elapsed());
        bar.set_message(format!("{done} IOs, {:.3} s simulated", now as f64 / 1e9));
        if let Some(share) = work.share(done, now) {
            bar.set_position((share * SHARE_STEPS as f64) as u64);
        }
        bar.tick();
    };
    let result = storlab_apps::simulate(&cfg, &resolved, &jobs, a.seed, &mut progress)?;
    bar.finish_and_clear();
    if let (Some(kind), Some(t)) = (pre, ready) {
        if !bar.is_hidden() {
            eprintln!(
                "preconditioning ({kind}) took {:.2} s of wall time (what it did: the device report's precondition_* counters)",
                t.as_secs_f64()
            );
        }
    }
    if let Some(note) = storlab_sim::run::unmapped_note(&result.jobs) {
        eprintln!("{note}");
    }
    let mut opts = ReportOptions {
        global_options: jobs.global_options.clone(),
        ..ReportOptions::default()
    };
    if let Some(list) = jobs.jobs.iter().find_map(|j| j.percentile_list.clone()) {
        opts.percentiles = list;
    }
    let mut out = output(&a)?;
    if fmt == "normal" {
        report::write_terminal(&result.jobs, &mut out, &opts)?;
    } else {
        report::write_json(&result.jobs, &mut out, &opts)?;
    }
    out.flush()?;
    // As fio: the report is complete, and a job that failed (an IO error,
    // max_latency exceeded, a zoned or placement option fio refuses) is
    // said on standard error and makes the exit status non-zero.
    let failed: Vec<&str> = result
        .jobs
        .iter()
        .filter_map(|j| j.error_detail.as_deref())
        .collect();
    for detail in &failed {
        eprintln!("fio: {detail}");
    }
    if !failed.is_empty() {
        anyhow::bail!(
            "{} job(s) failed (each said above, and in its report's error field)",
            failed.len()
        );
    }
    Ok(())
}

fn output(a: &SimArgs) -> anyhow::Result<Box<dyn Write>> {
    Ok(match &a.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("--output {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    })
}

/// `storlab sim --trace FILE`: replay a block trace.
fn replay(
    a: &SimArgs,
    cfg: &SystemConfig,
    resolved: &storlab_model::config::Resolved,
    trace: &std::path::Path,
    fio_args: &[String],
    fmt: &str,
) -> anyhow::Result<()> {
    use storlab_sim::replay::{simulate_trace, ReplayMode, ReplayOptions};
    if a.replay.trim().eq_ignore_ascii_case("closed") {
        return replay_closed(a, cfg, resolved, trace, fio_args, fmt);
    }
    let mode: ReplayMode = a
        .replay
        .parse()
        .map_err(|e| anyhow::anyhow!("--replay: {e}"))?;
    let mut iodepth = 32;
    for f in fio_args {
        match f.strip_prefix("--iodepth=") {
            Some(v) => iodepth = v.parse().with_context(|| format!("{f}: not a number"))?,
            None if f == "--iodepth" => anyhow::bail!("--iodepth: give its value as fio does, --iodepth=N (with --trace it sets the depth of --replay afap)"),
            None => anyhow::bail!("{f}: with --trace, the only fio option that applies is --iodepth=N (for --replay afap)"),
        }
    }
    let (format, read) = a.read.options()?;
    let opts = ReplayOptions {
        mode,
        iodepth,
        format,
        read,
        align: a.trace_align,
    };
    let bar = progress_bar();
    let mut progress = |done: u64, now: u64| {
        bar.set_message(format!(
            "{done} requests, {:.3} s simulated",
            now as f64 / 1e9
        ));
        bar.tick();
    };
    let result = simulate_trace(cfg, resolved, trace, &opts, &mut progress)?;
    bar.finish_and_clear();
    if let Some(note) = storlab_sim::run::unmapped_note(&result.jobs) {
        eprintln!("{note}");
    }
    let opts = ReportOptions::default();
    let mut out = output(a)?;
    if fmt == "normal" {
        report::write_terminal(&result.jobs, &mut out, &opts)?;
        for j in &result.jobs {
            write!(out, "{}", storlab_sim::replay::terminal_summary(j))?;
        }
    } else {
        report::write_json(&result.jobs, &mut out, &opts)?;
    }
    out.flush()?;
    Ok(())
}

/// `storlab sim --trace FILE --replay closed`: replay a closed-loop trace.
fn replay_closed(
    a: &SimArgs,
    cfg: &SystemConfig,
    resolved: &storlab_model::config::Resolved,
    trace: &std::path::Path,
    fio_args: &[String],
    fmt: &str,
) -> anyhow::Result<()> {
    use storlab_sim::replay::closed::{simulate_closed, terminal_summary, ClosedOptions};
    if let Some(f) = fio_args.first() {
        anyhow::bail!(
            "{f}: a closed-loop replay takes no fio option (its concurrency is the recording's)"
        );
    }
    let mut args = a.read.clone();
    if args.trace_format.as_deref() == Some("closed") {
        args.trace_format = None;
    }
    let (format, read) = args.options()?;
    if format.is_some() || read != storlab_trace::ReadOptions::default() {
        anyhow::bail!("--replay closed reads its own format: the trace format and filter options do not apply");
    }
    let bar = progress_bar();
    let mut progress = |done: u64, now: u64| {
        bar.set_message(format!(
            "{done} requests, {:.3} s simulated",
            now as f64 / 1e9
        ));
        bar.tick();
    };
    let opts = ClosedOptions {
        align: a.trace_align,
    };
    let result = simulate_closed(cfg, resolved, trace, &opts, &mut progress)?;
    bar.finish_and_clear();
    let ropts = ReportOptions::default();
    let mut out = output(a)?;
    if fmt == "normal" {
        report::write_terminal(&result.jobs, &mut out, &ropts)?;
        for j in &result.jobs {
            write!(out, "{}", terminal_summary(j))?;
        }
    } else {
        report::write_json(&result.jobs, &mut out, &ropts)?;
    }
    out.flush()?;
    Ok(())
}

/// The preconditioning of the configured drive, if any.
fn preconditioning(cfg: &storlab_model::SystemConfig) -> Option<String> {
    let ssd = cfg.ssd.as_ref()?;
    (ssd.ftl.precondition != storlab_model::devices::flash::ftl::Precondition::Fresh).then(|| {
        // the name the config takes (`aged-replay`, not `agedreplay`)
        serde_json::to_value(ssd.ftl.precondition)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    })
}

/// How much work a run of fio jobs has, as far as it is known before it
/// runs: what drives the progress bar (a job with no `size` works over the
/// whole device, which can take a while).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    /// An application job or a job with neither a size-bound end nor a
    /// runtime: a spinner.
    Unknown,
    /// Every job ends by size (or `number_ios`): about this many IOs.
    Ios(u64),
    /// Every job has a runtime: this much simulated time, the groups'
    /// longest jobs (`startdelay` + `ramp_time` + `runtime`) one after the
    /// other.
    Time(u64),
    /// Both known: a job ends at whichever comes first.
    Both(u64, u64),
}

/// Steps of the progress bar's length.
const SHARE_STEPS: u64 = 1000;

impl Expected {
    /// The expected work of `jobs` on a device of `capacity` bytes.
    pub fn of(jobs: &fio::JobFile, capacity: u64) -> Expected {
        if jobs.jobs.iter().any(|j| j.app.is_some()) {
            return Expected::Unknown;
        }
        let ios: Option<u64> = jobs
            .jobs
            .iter()
            .map(|j| j.expected_ios(capacity))
            .try_fold(0u64, |a, n| n.map(|n| a.saturating_add(n)));
        let mut time: Option<u64> = Some(0);
        let mut group = 0u64;
        for (i, j) in jobs.jobs.iter().enumerate() {
            if i > 0 && j.stonewall {
                time = time.map(|t| t.saturating_add(group));
                group = 0;
            }
            match j.runtime_ns {
                Some(r) => {
                    let whole = j
                        .startdelay_ns
                        .saturating_add(j.ramp_time_ns.unwrap_or(0))
                        .saturating_add(r);
                    group = group.max(whole);
                }
                None => time = None,
            }
        }
        let time = time.map(|t| t.saturating_add(group)).filter(|&t| t > 0);
        match (ios.filter(|&n| n > 0), time) {
            (Some(n), Some(t)) => Expected::Both(n, t),
            (Some(n), None) => Expected::Ios(n),
            (None, Some(t)) => Expected::Time(t),
            (None, None) => Expected::Unknown,
        }
    }

    /// The share of the work done after `done` IOs at simulated time
    /// `now` (below 1 until the run ends: the estimate may fall short).
    pub fn share(&self, done: u64, now: u64) -> Option<f64> {
        let by_ios = |n: u64| done as f64 / n as f64;
        let by_time = |t: u64| now as f64 / t as f64;
        let s = match *self {
            Expected::Unknown => return None,
            Expected::Ios(n) => by_ios(n),
            Expected::Time(t) => by_time(t),
            Expected::Both(n, t) => by_ios(n).max(by_time(t)),
        };
        Some(s.clamp(0.0, 0.999))
    }
}

/// A progress bar of the share of a run done, with the time left, on
/// stderr when it is a terminal; hidden otherwise.
pub fn progress_bar_share() -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(SHARE_STEPS);
        let style = indicatif::ProgressStyle::with_template(
            "{bar:40} {percent:>3}% ({elapsed}, about {eta} left) {msg}",
        )
        .expect("a valid progress template");
        b.set_style(style);
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    } else {
        indicatif::ProgressBar::hidden()
    }
}

/// A spinner on stderr when it is a terminal; hidden otherwise.
pub fn progress_bar() -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new_spinner();
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    } else {
        indicatif::ProgressBar::hidden()
    }
}

/// A progress bar of `len` steps on stderr when it is a terminal; hidden
/// otherwise.
pub fn progress_bar_len(len: u64, unit: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(len);
        let style = indicatif::ProgressStyle::with_template(&format!(
            "{{bar:40}} {{pos}}/{{len}} {unit} ({{elapsed}}, about {{eta}} left)"
        ))
        .expect("a valid progress template");
        b.set_style(style);
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    } else {
        indicatif::ProgressBar::hidden()
    }
}
