//! Benchmark the emulator against `nbdkit memory` with fio's nbd engine.
//!
//! For each fio job (4 KiB randread and randwrite at iodepth 1 and 32,
//! numjobs 1 and 2) it measures, in the same run: `nbdkit memory` on a unix
//! socket, storlab with a zero-latency device (the transport floor) and
//! storlab with FixedLatency devices. It prints IOPS and latencies, ratios
//! against nbdkit, the mean latency minus the floor against the model's
//! latency, and the server's own lateness percentiles, after the host's
//! own stalls (`hoststall`: the lateness even a perfect server would show
//! here). nbdkit's delay filter (whole milliseconds only) runs at the
//! latencies it can give, its error taken against its own floor (`nbdkit
//! memory`) the same way. Before a write job
//! each server's export is written once (`--no-precondition` to skip).
//!
//! ```text
//! cargo run --release -p storlab-emu --example nbd_bench -- --runtime 5
//! cargo run --release -p storlab-emu --example nbd_bench -- --quick
//! ```
//! Needs fio (Debian package `fio`) and nbdkit (`nbdkit`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use storlab_emu::{hoststall, spawn, ServeOptions, ServeReport};
use storlab_model::devices::fixed::FixedLatency;

/// Emulator vs nbdkit benchmark.
#[derive(Parser)]
struct Args {
    /// Seconds per fio run.
    #[arg(long, default_value_t = 5)]
    runtime: u64,
    /// Model latencies to try, ns (0, the floor, is always run).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "20000,100000,1000000,10000000"
    )]
    latencies: Vec<u64>,
    /// Only iodepth 1 numjobs 1 and iodepth 32 numjobs 2.
    #[arg(long)]
    quick: bool,
    /// Only these rw modes.
    #[arg(long, value_delimiter = ',', default_value = "randread,randwrite")]
    rw: Vec<String>,
    /// Export size in MiB.
    #[arg(long, default_value_t = 1024)]
    size_mib: u64,
    /// Write the raw results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Seconds per run of the busy-polling client (0: skip that table).
    #[arg(long, default_value_t = 3)]
    spin_seconds: u64,
    /// Skip the fio table.
    #[arg(long)]
    no_fio: bool,
    /// Repetitions of every run (interleaved); the tables show medians.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Seconds to wait for a quiet machine before each run (0: don't).
    #[arg(long, default_value_t = 120)]
    quiet_wait: u64,
    /// Do not write the whole export once before a write job. By default
    /// both servers are preconditioned alike, as device benchmarks do:
    /// on a fresh sparse export most 4 KiB random writes fault in a new
    /// page (in a VM also a new host page), a cost that falls on a varying
    /// share of the writes as the IOPS change, so the floor would not
    /// match the runs it is subtracted from.
    #[arg(long)]
    no_precondition: bool,
    /// Seconds to spin on the clock first, measuring the host's own stalls
    /// (the lateness floor of any server here; 0: skip).
    #[arg(long, default_value_t = 3)]
    stall_seconds: u64,
    /// Also serve these presets (a real model with wake-ups); their model
    /// latency is the mean the server's report gives.
    #[arg(long)]
    preset: Vec<String>,
    /// Latencies to run nbdkit's delay filter at, ns (whole milliseconds:
    /// the filter takes nothing finer; the option alone, with no value,
    /// skips them).
    #[arg(
        long,
        value_delimiter = ',',
        num_args = 0..,
        default_value = "1000000,10000000"
    )]
    nbdkit_delays: Vec<u64>,
    /// Run nothing: print the tables again from a file `--json` wrote.
    #[arg(long, value_name = "FILE")]
    from_json: Option<PathBuf>,
}

enum Target {
    Fixed(u64),
    Preset(String),
}

impl Target {
    fn name(&self) -> String {
        match self {
            Target::Fixed(0) => "storlab floor".into(),
            Target::Fixed(l) => format!("storlab {}us", l / 1000),
            Target::Preset(p) => format!("storlab {p}"),
        }
    }

    fn device(&self, size: u64) -> Box<dyn storlab_model::Device> {
        match self {
            Target::Fixed(l) => Box::new(FixedLatency::new(*l, size)),
            Target::Preset(name) => {
                use storlab_model::config::PresetStore;
                use storlab_model::system::SystemConfig;
                let set = [format!("device.capacity_bytes={size}")];
                let built = SystemConfig::load(&PresetStore::default(), name, &set)
                    .and_then(|(_, cfg)| cfg.build_device());
                match built {
                    Ok(d) => d,
                    Err(e) => {
                        eprintln!("error: preset {name}: {e}");
                        std::process::exit(2);
                    }
                }
            }
        }
    }
}

/// The busy-polling client's table: its settings and one row per model
/// latency (medians over the repetitions), the floor (0) first.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Spin {
    seconds: u64,
    reps: usize,
    rows: Vec<SpinRow>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct SpinRow {
    model_ns: u64,
    mean_us: f64,
    clat_p50_us: f64,
    clat_p99_us: f64,
    late_p50_us: f64,
    late_p99_us: f64,
}

fn spin_runs(a: &Args, dir: &Path, lats: &[u64]) -> Spin {
    let size = a.size_mib << 20;
    // Per latency, per repetition: (mean, p50, p99, late50, late99) in ns.
    let mut runs: Vec<Vec<[f64; 5]>> = vec![Vec::new(); lats.len()];
    for _ in 0..a.reps {
        for (i, &l) in lats.iter().enumerate() {
            let sock = dir.join("spin.sock");
            // STORLAB_BENCH_RECORD=DIR records what the server saw (MSR CSV).
            let record = std::env::var_os("STORLAB_BENCH_RECORD").map(|d| {
                let path = PathBuf::from(d).join(format!("spin-{l}.msr"));
                storlab_emu::RecordSpec::new(path, storlab_trace::Format::Msr)
            });
            let opts = ServeOptions {
                socket: Some(sock.clone()),
                size,
                record,
                ..ServeOptions::default()
            };
            let server = match spawn(opts, Box::new(FixedLatency::new(l, size))) {
                Ok(s) => s,
                Err(e) => {
                    // With the OS error behind it (the error's source).
                    eprintln!("error: {:#}", anyhow::Error::from(e));
                    std::process::exit(1);
                }
            };
            wait_quiet(Duration::from_secs(a.quiet_wait));
            let until = storlab_emu::probe::Until::Elapsed(Duration::from_secs(a.spin_seconds));
            let mut v = match storlab_emu::probe::busy_reads(&sock, until, size) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("error: spin client: {e}");
                    std::process::exit(1);
                }
            };
            let report = server.stop().unwrap_or_else(|e| {
                eprintln!("error: {e}");
                std::process::exit(1)
            });
            v.sort_unstable();
            let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
            let p50 = v.get(v.len() / 2).copied().unwrap_or(0) as f64;
            let p99 = v.get(v.len() * 99 / 100).copied().unwrap_or(0) as f64;
            let (l50, l99) = (report.lateness.p50_ns as f64, report.lateness.p99_ns as f64);
            runs[i].push([mean, p50, p99, l50, l99]);
        }
    }
    let rows = lats
        .iter()
        .enumerate()
        .map(|(i, &model_ns)| {
            let col = |k: usize| median(runs[i].iter().map(|r| r[k]).collect()) / 1000.0;
            SpinRow {
                model_ns,
                mean_us: col(0),
                clat_p50_us: col(1),
                clat_p99_us: col(2),
                late_p50_us: col(3),
                late_p99_us: col(4),
            }
        })
        .collect();
    Spin {
        seconds: a.spin_seconds,
        reps: a.reps,
        rows,
    }
}

/// The busy-polling table's lines: each latency's mean and p50 minus the
/// floor's, and the mean's error against the model.
fn spin_lines(spin: &Spin) -> Vec<String> {
    let mut out = vec![
        format!(
            "busy-polling client, QD1 4 KiB randread ({} s per run, median of {}): the server's latency without client wake-ups",
            spin.seconds, spin.reps
        ),
        format!(
            "{:<15} {:>9} {:>9} {:>9} {:>10} {:>7} {:>9} {:>8} {:>8}",
            "model", "mean", "p50", "p99", "mean-floor", "err%", "p50-floor", "late50", "late99"
        ),
    ];
    let floor = spin.rows.iter().find(|r| r.model_ns == 0);
    for r in &spin.rows {
        let (minus, err, p50minus) = match floor {
            Some(f) if r.model_ns > 0 => {
                let model_us = r.model_ns as f64 / 1000.0;
                (
                    format!("{:.2}", r.mean_us - f.mean_us),
                    format!(
                        "{:+.2}",
                        (r.mean_us - f.mean_us - model_us) / model_us * 100.0
                    ),
                    format!("{:.2}", r.clat_p50_us - f.clat_p50_us),
                )
            }
            _ => ("-".into(), "-".into(), "-".into()),
        };
        out.push(format!(
            "{:<15} {:>9.2} {:>9.2} {:>9.2} {:>10} {:>7} {:>9} {:>8.2} {:>8.2}",
            if r.model_ns == 0 {
                "floor (0 us)".to_string()
            } else {
                format!("{} us", r.model_ns / 1000)
            },
            r.mean_us,
            r.clat_p50_us,
            r.clat_p99_us,
            minus,
            err,
            p50minus,
            r.late_p50_us,
            r.late_p99_us
        ));
    }
    out
}

fn print_spin(spin: &Spin) {
    println!();
    for line in spin_lines(spin) {
        println!("{line}");
    }
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Row {
    job: String,
    /// "nbdkit" or "storlab": each server's errors are taken against its
    /// own zero-latency floor.
    server: String,
    target: String,
    model_ns: Option<u64>,
    iops: f64,
    lat_mean_us: f64,
    clat_p50_us: f64,
    clat_p99_us: f64,
    late_p50_us: Option<f64>,
    late_p99_us: Option<f64>,
}

/// (busy, total) jiffies of all CPUs from /proc/stat.
fn cpu_jiffies() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let Some(line) = text.lines().next() else {
        return (0, 0);
    };
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// Wait (up to `max`) until the machine is quiet: under 10% of all CPUs
/// busy over one second. Benchmarks on a shared 2-CPU machine mean nothing
/// while another job compiles. Returns the busy fraction last seen.
fn wait_quiet(max: Duration) -> f64 {
    if max.is_zero() {
        return 0.0;
    }
    let end = Instant::now() + max;
    loop {
        let (b0, t0) = cpu_jiffies();
        std::thread::sleep(Duration::from_secs(1));
        let (b1, t1) = cpu_jiffies();
        let busy = (b1 - b0) as f64 / (t1 - t0).max(1) as f64;
        if busy < 0.10 || Instant::now() > end {
            if busy >= 0.10 {
                eprintln!(
                    "warning: the machine stayed busy ({:.0}% CPU): this run is noisy",
                    busy * 100.0
                );
            }
            return busy;
        }
    }
}

fn need(tool: &str, package: &str) {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        eprintln!("error: {tool} is missing: install the Debian package {package}");
        std::process::exit(2);
    }
}

fn wait_for_socket(p: &Path) {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if std::os::unix::net::UnixStream::connect(p).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("error: nothing listens on {}", p.display());
    std::process::exit(1);
}

struct Job {
    rw: String,
    qd: u32,
    nj: u32,
}

impl Job {
    fn name(&self) -> String {
        format!("{} qd{} nj{}", self.rw, self.qd, self.nj)
    }
}

/// Write the whole export once, sequentially in 1 MiB requests, before a
/// write job (see `Args::no_precondition`).
fn precondition(uri: &str, job: &Job, a: &Args) {
    if a.no_precondition || job.rw.contains("read") {
        return;
    }
    let status = Command::new("fio")
        .args([
            "--name=precondition",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            "--rw=write",
            "--bs=1M",
            "--iodepth=4",
            &format!("--size={}M", a.size_mib),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("error: fio failed preconditioning {uri}");
        std::process::exit(1);
    }
}

fn fio(uri: &str, job: &Job, a: &Args, out: &Path) -> (f64, f64, f64, f64) {
    let (runtime, size_mib) = (a.runtime, a.size_mib);
    wait_quiet(Duration::from_secs(a.quiet_wait));
    let status = Command::new("fio")
        .args([
            "--name=bench",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            &format!("--rw={}", job.rw),
            "--bs=4k",
            &format!("--iodepth={}", job.qd),
            &format!("--numjobs={}", job.nj),
            &format!("--runtime={runtime}"),
            "--time_based",
            &format!("--size={size_mib}M"),
            "--group_reporting",
            "--output-format=json",
            &format!("--output={}", out.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("error: fio failed on {uri} ({})", job.name());
        std::process::exit(1);
    }
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let dir = if job.rw.contains("read") {
        "read"
    } else {
        "write"
    };
    let d = &v["jobs"][0][dir];
    let f = |x: &serde_json::Value| x.as_f64().unwrap_or(f64::NAN);
    (
        f(&d["iops"]),
        f(&d["lat_ns"]["mean"]) / 1000.0,
        f(&d["clat_ns"]["percentile"]["50.000000"]) / 1000.0,
        f(&d["clat_ns"]["percentile"]["99.000000"]) / 1000.0,
    )
}

/// `nbdkit memory`, behind the delay filter when `delay_ns` is not 0.
fn nbdkit(dir: &Path, size_mib: u64, delay_ns: u64) -> (Child, PathBuf) {
    let sock = dir.join("nbdkit.sock");
    // A killed nbdkit leaves its socket file behind.
    let _ = std::fs::remove_file(&sock);
    let mut cmd = Command::new("nbdkit");
    cmd.args(["-f", "-U"]).arg(&sock);
    if delay_ns > 0 {
        cmd.arg("--filter=delay");
    }
    cmd.args(["memory", &format!("{size_mib}M")]);
    if delay_ns > 0 {
        let ms = delay_ns / 1_000_000;
        cmd.args([format!("rdelay={ms}ms"), format!("wdelay={ms}ms")]);
    }
    let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let Ok(child) = child else {
        eprintln!("error: cannot start nbdkit (Debian package nbdkit)");
        std::process::exit(2);
    };
    wait_for_socket(&sock);
    (child, sock)
}

fn main() {
    // End quietly when the reader of the tables goes away (`| head`), as
    // `storlab` does; the servers it starts send with MSG_NOSIGNAL.
    // SAFETY: resetting a signal's disposition at startup, before any
    // thread exists, has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let a = Args::parse();
    if let Some(p) = &a.from_json {
        let saved = saved_run(p);
        if let Some(stalls) = &saved.host_stalls {
            println!("{}", stalls.summary());
        }
        if !saved.rows.is_empty() {
            print_table(&saved.rows);
        }
        if let Some(spin) = &saved.busy_poll {
            print_spin(spin);
        }
        return;
    }
    // A --json path that cannot be written fails now, not after the run;
    // a file made only to check is removed again, so a run stopped early
    // leaves no empty "saved run" behind.
    if let Some(p) = &a.json {
        let existed = p.exists();
        let open = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p);
        if let Err(e) = open {
            eprintln!("error: --json {}: {e}", p.display());
            std::process::exit(1);
        }
        if !existed {
            let _ = std::fs::remove_file(p);
        }
    }
    need("fio", "fio");
    need("nbdkit", "nbdkit");
    let dir = tempfile::tempdir().unwrap_or_else(|e| {
        eprintln!("error: tempdir: {e}");
        std::process::exit(1)
    });
    let out = dir.path().join("fio.json");
    let size = a.size_mib << 20;
    let mut jobs = Vec::new();
    for rw in &a.rw {
        for (qd, nj) in [(1, 1), (1, 2), (32, 1), (32, 2)] {
            if a.quick && !matches!((qd, nj), (1, 1) | (32, 2)) {
                continue;
            }
            jobs.push(Job {
                rw: rw.clone(),
                qd,
                nj,
            });
        }
    }
    let mut nbdkit_lats = vec![0u64];
    for &d in &a.nbdkit_delays {
        if d == 0 || d % 1_000_000 != 0 {
            eprintln!("error: --nbdkit-delays: {d} ns is not a whole number of milliseconds above 0 (nbdkit's delay filter takes milliseconds)");
            std::process::exit(2);
        }
        nbdkit_lats.push(d);
    }
    let stalls = (a.stall_seconds > 0).then(|| {
        wait_quiet(Duration::from_secs(a.quiet_wait));
        let p = hoststall::probe(Duration::from_secs(a.stall_seconds), true);
        println!("{}", p.summary());
        p
    });
    let mut rows: Vec<Row> = Vec::new();
    let mut lats = vec![0u64];
    lats.extend(a.latencies.iter().copied().filter(|&l| l > 0));
    if a.no_fio {
        jobs.clear();
    }
    let mut targets: Vec<Target> = lats.iter().map(|&l| Target::Fixed(l)).collect();
    targets.extend(a.preset.iter().map(|p| Target::Preset(p.clone())));
    for t in &targets {
        // Fail early on a bad preset name.
        drop(t.device(size));
    }
    for (job, _rep) in jobs.iter().flat_map(|j| (0..a.reps).map(move |r| (j, r))) {
        for &delay in &nbdkit_lats {
            let (mut child, sock) = nbdkit(dir.path(), a.size_mib, delay);
            let uri = format!("nbd+unix:///?socket={}", sock.display());
            precondition(&uri, job, &a);
            let (iops, lat, p50, p99) = fio(&uri, job, &a, &out);
            let _ = child.kill();
            let _ = child.wait();
            rows.push(Row {
                job: job.name(),
                server: "nbdkit".into(),
                target: match delay {
                    0 => "nbdkit memory".into(),
                    d => format!("nbdkit delay {}ms", d / 1_000_000),
                },
                model_ns: Some(delay),
                iops,
                lat_mean_us: lat,
                clat_p50_us: p50,
                clat_p99_us: p99,
                late_p50_us: None,
                late_p99_us: None,
            });
        }
        for target in &targets {
            let sock = dir.path().join("storlab.sock");
            let opts = ServeOptions {
                socket: Some(sock.clone()),
                size,
                ..ServeOptions::default()
            };
            let server = match spawn(opts, target.device(size)) {
                Ok(s) => s,
                Err(e) => {
                    // With the OS error behind it (the error's source).
                    eprintln!("error: {:#}", anyhow::Error::from(e));
                    std::process::exit(1);
                }
            };
            let uri = format!("nbd+unix:///?socket={}", sock.display());
            precondition(&uri, job, &a);
            // The lateness columns cover the measured job only.
            server.control().reset_stats();
            let (iops, lat, p50, p99) = fio(&uri, job, &a, &out);
            let report: ServeReport = match server.stop() {
                Ok(r) => r,
                Err(e) => {
                    // With the OS error behind it (the error's source).
                    eprintln!("error: {:#}", anyhow::Error::from(e));
                    std::process::exit(1);
                }
            };
            let op = if job.rw.contains("read") { 0 } else { 1 };
            let model_ns = match target {
                Target::Fixed(l) => *l,
                Target::Preset(_) => report.ops[op].model_latency.mean_ns.round() as u64,
            };
            rows.push(Row {
                job: job.name(),
                server: "storlab".into(),
                target: target.name(),
                model_ns: Some(model_ns),
                iops,
                lat_mean_us: lat,
                clat_p50_us: p50,
                clat_p99_us: p99,
                late_p50_us: Some(report.lateness.p50_ns as f64 / 1000.0),
                late_p99_us: Some(report.lateness.p99_ns as f64 / 1000.0),
            });
        }
    }
    let rows = median_rows(rows);
    if !rows.is_empty() {
        print_table(&rows);
    }
    let busy_poll = (a.spin_seconds > 0).then(|| spin_runs(&a, dir.path(), &lats));
    if let Some(spin) = &busy_poll {
        print_spin(spin);
    }
    if let Some(p) = &a.json {
        let saved = Saved {
            host_stalls: stalls,
            rows,
            busy_poll,
        };
        let written = serde_json::to_string_pretty(&saved)
            .map_err(|e| e.to_string())
            .and_then(|text| std::fs::write(p, text).map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("error: --json {}: {e}", p.display());
            std::process::exit(1);
        }
    }
}

/// What `--json` writes and `--from-json` reads. Files written before the
/// busy-polling table was kept have no `busy_poll`.
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    host_stalls: Option<hoststall::StallProbe>,
    rows: Vec<Row>,
    #[serde(default)]
    busy_poll: Option<Spin>,
}

/// A file `--json` wrote; a clear message and exit 1 if it cannot be read
/// or is not such a file.
fn saved_run(p: &Path) -> Saved {
    load_saved(p).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    })
}

/// A file `--json` wrote.
fn load_saved(p: &Path) -> Result<Saved, String> {
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_str::<Saved>(&text)
        .map_err(|e| format!("{}: not a file nbd_bench --json wrote: {e}", p.display()))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// One row per (job, target): the median of each column over repetitions.
fn median_rows(rows: Vec<Row>) -> Vec<Row> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in &rows {
        let k = (r.job.clone(), r.server.clone(), r.target.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(job, server, target)| {
            let g: Vec<&Row> = rows
                .iter()
                .filter(|r| r.job == job && r.target == target)
                .collect();
            let m = |f: &dyn Fn(&Row) -> f64| median(g.iter().map(|r| f(r)).collect());
            let mo = |f: &dyn Fn(&Row) -> Option<f64>| {
                let v: Vec<f64> = g.iter().filter_map(|r| f(r)).collect();
                if v.is_empty() {
                    None
                } else {
                    Some(median(v))
                }
            };
            Row {
                job,
                server,
                target,
                model_ns: mo(&|r| r.model_ns.map(|x| x as f64)).map(|x| x as u64),
                iops: m(&|r| r.iops),
                lat_mean_us: m(&|r| r.lat_mean_us),
                clat_p50_us: m(&|r| r.clat_p50_us),
                clat_p99_us: m(&|r| r.clat_p99_us),
                late_p50_us: mo(&|r| r.late_p50_us),
                late_p99_us: mo(&|r| r.late_p99_us),
            }
        })
        .collect()
}

/// The same operation at queue depth 1 with one job: `randread qd32 nj2`
/// -> `randread qd1 nj1`.
fn single(job: &str) -> String {
    job.split(' ')
        .map(|w| match w {
            w if w.starts_with("qd") => "qd1",
            w if w.starts_with("nj") => "nj1",
            w => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The columns `lat-floor`, `err%` and `err1%` of row `r` ("-" where they
/// do not apply).
fn errors(rows: &[Row], r: &Row) -> (String, String, String) {
    let err = |got: f64, l: u64| {
        let l = l as f64 / 1000.0;
        (got - l) / l * 100.0
    };
    let zero = |b: &&Row, job: &str| b.job == job && b.model_ns == Some(0);
    let floor = rows
        .iter()
        .find(|b| zero(b, &r.job) && b.server == r.server);
    // The per-request transport cost: one request at a time from one
    // client, so it waits for no other request and no CPU. (With two
    // jobs at queue depth 1 the zero-latency run is CPU-bound, three
    // busy threads on two CPUs here, and its mean measures that
    // contention, which a device with latency relieves.)
    let floor1 = rows
        .iter()
        .find(|b| zero(b, &single(&r.job)) && b.server == r.server);
    match (r.model_ns, floor) {
        (Some(l), Some(f)) if l >= 1000 && r.model_ns != f.model_ns => {
            let m = r.lat_mean_us - f.lat_mean_us;
            // Against the per-request floor; `hidden` when the
            // device's latency is below the transport's own queueing
            // at this depth (closed loop: the zero-latency run's
            // latency is outstanding requests / its IOPS), so fio's
            // queue, not the device, should set the latency: then
            // fio's mean against that run's, which shows what the
            // emulator's waiting costs clients short of CPU.
            let deep = !r.job.split(' ').any(|w| w == "qd1");
            let e1 = match floor1 {
                Some(_) if deep && (l as f64 / 1000.0) < f.lat_mean_us => {
                    let q = (r.lat_mean_us - f.lat_mean_us) / f.lat_mean_us * 100.0;
                    format!("hidden{:+}", q.round() as i64)
                }
                Some(f1) => format!("{:+.1}", err(r.lat_mean_us - f1.lat_mean_us, l)),
                None => "-".into(),
            };
            (format!("{m:.1}"), format!("{:+.1}", err(m, l)), e1)
        }
        _ => ("-".into(), "-".into(), "-".into()),
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<18} {:<22} {:>9} {:>7} {:>9} {:>8} {:>8} {:>9} {:>9} {:>7} {:>10} {:>8} {:>8}",
        "job",
        "target",
        "IOPS",
        "xnbdkit",
        "lat_mean",
        "p50",
        "p99",
        "p50/nbdk",
        "lat-floor",
        "err%",
        "err1%",
        "late50",
        "late99"
    );
    for r in rows {
        let base = rows
            .iter()
            .find(|b| b.job == r.job && b.model_ns == Some(0) && b.server == "nbdkit");
        let ratio = base.map(|b| r.iops / b.iops).unwrap_or(f64::NAN);
        let p50r = base
            .map(|b| r.clat_p50_us / b.clat_p50_us)
            .unwrap_or(f64::NAN);
        let (minus, e, e1) = errors(rows, r);
        let opt = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
        println!(
            "{:<18} {:<22} {:>9.0} {:>7.2} {:>9.1} {:>8.1} {:>8.1} {:>9.2} {:>9} {:>7} {:>10} {:>8} {:>8}",
            r.job,
            r.target,
            r.iops,
            ratio,
            r.lat_mean_us,
            r.clat_p50_us,
            r.clat_p99_us,
            p50r,
            minus,
            e,
            e1,
            opt(r.late_p50_us),
            opt(r.late_p99_us)
        );
    }
    println!("(latencies in µs; lat-floor = mean fio latency minus the same server's zero-latency floor at the same depth; err% against the model latency; err1% = mean minus the per-request transport cost (the zero-latency floor at queue depth 1 with one job) against the model, `hidden` where the model latency is below the zero-latency run's own queueing at that depth, with fio's mean against that run's in %; late = server's reply time minus deadline)");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(job: &str, model_ns: u64, lat_mean_us: f64) -> Row {
        Row {
            job: job.into(),
            server: "storlab".into(),
            target: format!("storlab {}us", model_ns / 1000),
            model_ns: Some(model_ns),
            iops: 1.0,
            lat_mean_us,
            clat_p50_us: lat_mean_us,
            clat_p99_us: lat_mean_us,
            late_p50_us: None,
            late_p99_us: None,
        }
    }

    #[test]
    fn errors_take_one_clients_floor_and_show_hidden_queueing() {
        let rows = [
            row("randread qd1 nj1", 0, 10.0),
            row("randread qd1 nj2", 0, 25.0),
            row("randread qd32 nj2", 0, 300.0),
            row("randread qd1 nj1", 20_000, 32.0),
            row("randread qd1 nj2", 20_000, 34.0),
            row("randread qd32 nj2", 20_000, 450.0),
            row("randread qd32 nj2", 1_000_000, 1030.0),
        ];
        let e = |i: usize| errors(&rows, &rows[i]);
        // one client: its own floor, err% and err1% agree
        assert_eq!(e(3), ("22.0".into(), "+10.0".into(), "+10.0".into()));
        // two clients at QD1: err% against their CPU-bound floor, err1%
        // against one client's
        assert_eq!(e(4), ("9.0".into(), "-55.0".into(), "+20.0".into()));
        // 20 µs is below the 300 µs of queueing at QD64: fio's mean
        // against the zero-latency run's
        assert_eq!(e(5).2, "hidden+50");
        // 1 ms is not: against one client's floor
        assert_eq!(e(6).2, "+2.0");
        // floors themselves have no errors
        assert_eq!(e(0), ("-".into(), "-".into(), "-".into()));
    }

    #[test]
    fn the_saved_runs_the_readme_quotes_load_with_every_baseline() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("results");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).expect("results/") {
            let p = entry.expect("entry").path();
            let rows = load_saved(&p).unwrap_or_else(|e| panic!("{e}")).rows;
            files += 1;
            // every job has its nbdkit baseline and its zero-latency floor,
            // and every storlab row with a model latency gets an error
            for r in &rows {
                let has = |server: &str| {
                    rows.iter()
                        .any(|b| b.job == r.job && b.server == server && b.model_ns == Some(0))
                };
                assert!(
                    has("nbdkit") && has("storlab"),
                    "{}: {}",
                    p.display(),
                    r.job
                );
                if r.server == "storlab" && r.model_ns.is_some_and(|m| m > 0) {
                    assert_ne!(errors(&rows, r).2, "-", "{}: {}", p.display(), r.target);
                }
            }
        }
        assert!(files >= 1, "no saved runs in {}", dir.display());
        assert!(load_saved(&dir).is_err(), "a directory is not a saved run");
    }

    #[test]
    fn the_busy_polling_table_is_kept_and_measured_from_its_floor() {
        let spin_row = |model_ns: u64, mean_us: f64| SpinRow {
            model_ns,
            mean_us,
            clat_p50_us: mean_us - 1.0,
            clat_p99_us: mean_us * 2.0,
            late_p50_us: 0.25,
            late_p99_us: 1.5,
        };
        let saved = Saved {
            host_stalls: None,
            rows: vec![row("randread qd1 nj1", 0, 10.0)],
            busy_poll: Some(Spin {
                seconds: 3,
                reps: 5,
                rows: vec![spin_row(0, 8.0), spin_row(20_000, 28.5)],
            }),
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("run.json");
        std::fs::write(&p, serde_json::to_string(&saved).expect("json")).expect("write");
        let back = load_saved(&p).expect("a file --json wrote loads");
        assert_eq!(back.busy_poll, saved.busy_poll);
        let lines = spin_lines(back.busy_poll.as_ref().expect("kept"));
        assert!(
            lines[0].contains("3 s per run, median of 5"),
            "{}",
            lines[0]
        );
        // 28.5 - 8.0 = 20.5 µs against 20 µs: +2.50 %
        let l20: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(l20[..2], ["20", "us"]);
        assert_eq!(l20[5..8], ["20.50", "+2.50", "20.50"]);
        assert!(lines[2].starts_with("floor (0 us)") && lines[2].contains(" - "));
        // a file saved before the table was kept still loads, without it
        let old = r#"{"host_stalls": null, "rows": []}"#;
        std::fs::write(&p, old).expect("write");
        assert_eq!(load_saved(&p).expect("old file").busy_poll, None);
    }

    #[test]
    fn single_is_queue_depth_one_with_one_job() {
        assert_eq!(single("randwrite qd32 nj2"), "randwrite qd1 nj1");
        assert_eq!(single("randread qd1 nj1"), "randread qd1 nj1");
    }
}
