//! `storlab app run`: one application on one emulated device, from
//! `storlab serve` to teardown.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::kit::{missing, which, App, Measured, DEFAULT_DURATION};
use super::opts::{Attach, Ctx, RunOpts};
use super::registry::find;
use super::teardown::{self, Teardown, Undo};

/// Options of `storlab app run`.
#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// The application (`storlab app list`).
    pub app: String,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// The report of one run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// The application.
    pub app: String,
    /// The device preset.
    pub device: String,
    /// The file system.
    pub fs: String,
    /// The device size, bytes.
    pub size: u64,
    /// The data set scale.
    pub scale: f64,
    /// Threads.
    pub threads: u32,
    /// How the device was attached.
    pub attach: String,
    /// The application's result.
    pub result: Measured,
    /// Wall time of the measured phase, s.
    pub run_s: f64,
    /// Wall time of the preparation (mkfs, mount, load), s.
    pub prepare_s: f64,
    /// The emulator's statistics over the measured phase (the server's
    /// `stats`: per-op model latency and lateness, breakdown, transport
    /// floor).
    pub device_stats: Value,
    /// Where the device's figures are not to be trusted, and why.
    pub warnings: Vec<String>,
    /// The recorder's line from the server's final report.
    pub record: Option<String>,
}

/// Refuse to start without what loop devices and mounts need.
pub fn check_privileges() -> anyhow::Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    // CAP_SYS_ADMIN (bit 21) in the effective set also does.
    let eff = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_string()))
        })
        .and_then(|v| u64::from_str_radix(&v, 16).ok())
        .unwrap_or(0);
    if eff & (1 << 21) != 0 {
        return Ok(());
    }
    bail!(
        "storlab app run needs root (or CAP_SYS_ADMIN): it attaches the emulated device as a loop or NBD block device, makes a file system and mounts it; run it with sudo"
    )
}

/// `storlab app run`.
pub fn main(a: &RunArgs) -> anyhow::Result<()> {
    let app = find(&a.app)?;
    let rep = run(app, &a.opts)?;
    print!("{}", text(&rep));
    if let Some(p) = &a.json {
        let j = serde_json::to_string_pretty(&rep)?;
        std::fs::write(p, j + "\n").with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

/// Run `app` with `o` and take everything down; the report.
pub fn run(app: &dyn App, o: &RunOpts) -> anyhow::Result<Report> {
    check_privileges()?;
    if o.direct && app.name() != "postmark" {
        bail!("--direct applies to postmark only (the other applications choose their own IO)");
    }
    if let Some(s) = o.scale {
        if !(s > 0.0 && s.is_finite()) {
            bail!("--scale {s}: a positive number (1 = the study's size)");
        }
    }
    if !o.work.is_empty() && !app.timed() {
        bail!(
            "--work: {} does a fixed amount of work already (--scale sets it)",
            app.name()
        );
    }
    if o.work.contains(&0) {
        bail!("--work: amounts of work are positive");
    }
    if o.threads == 0 || o.threads > 1024 {
        bail!("--threads {}: between 1 and 1024", o.threads);
    }
    // the device's configuration is checked here, before anything is set
    // up, so a bad --device or --set reads as the server would say it and
    // not as a server that did not start
    o.check_device(o.device())?;
    let attach = match o.attach {
        Attach::Auto if Path::new("/dev/nbd0").exists() && which("nbd-client").is_some() => {
            Attach::Nbd
        }
        Attach::Auto => Attach::Nbdfuse,
        x => x,
    };
    let mut needs = app.needs();
    needs.push((
        if o.fs == "xfs" {
            "mkfs.xfs"
        } else {
            "mkfs.ext4"
        },
        if o.fs == "xfs" {
            "xfsprogs"
        } else {
            "e2fsprogs"
        },
    ));
    match attach {
        Attach::Nbd => needs.push(("nbd-client", "nbd-client")),
        _ => needs.extend([
            ("nbdfuse", "nbdfuse"),
            ("fusermount3", "fuse3"),
            ("losetup", "mount"),
        ]),
    }
    let miss = missing(&needs);
    if !miss.is_empty() {
        bail!(
            "{} needs programs that are not installed: {} (Debian: apt-get install {})",
            app.name(),
            miss.join(", "),
            needs
                .iter()
                .filter(|(p, _)| which(p).is_none())
                .map(|(_, k)| *k)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    if attach == Attach::Nbd && !Path::new("/dev/nbd0").exists() {
        bail!("--attach nbd: /dev/nbd0 is missing (modprobe nbd), use --attach nbdfuse");
    }
    teardown::install_signals()?;
    let mut td = Teardown::default();
    let result = session(app, o, attach, &mut td);
    td.run_all();
    let problems = std::mem::take(&mut td.problems);
    for p in &problems {
        eprintln!("storlab app: teardown: {p}");
    }
    let rep = result?;
    teardown::check_stop()?;
    Ok(rep)
}

fn session(
    app: &dyn App,
    o: &RunOpts,
    attach: Attach,
    td: &mut Teardown,
) -> anyhow::Result<Report> {
    let t_start = Instant::now();
    let tmp = tempfile::Builder::new()
        .prefix("storlab-app-")
        .tempdir()
        .context("creating the run's private directory")?
        .keep();
    td.push(Undo::RemoveDir(tmp.clone()));
    // database servers running as their own users reach their sockets
    // through it
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o711))?;
    let sock = tmp.join("nbd.sock");
    let ctl = tmp.join("control.sock");

    // the server
    let mut cmd = Command::new(exe_path()?);
    cmd.arg("serve")
        .args(["--device", o.device()])
        .args(["--size", &o.size.to_string()])
        .arg("--socket")
        .arg(&sock)
        .arg("--control")
        .arg(&ctl)
        .args(["--floor-probe", &o.floor_probe.to_string()]);
    if let Some(r) = &o.record {
        // closed by default: the trace `storlab sim --replay closed` runs
        let f = o.record_format.as_deref().unwrap_or("closed");
        cmd.arg("--record").arg(r).args(["--record-format", f]);
    }
    if let Some(d) = &o.preset_dir {
        cmd.arg("--preset-dir").arg(d);
    }
    for s in &o.set {
        cmd.args(["--set", s]);
    }
    // an application may leave the device idle for minutes (a build,
    // a think phase): never drop its connection for that
    cmd.args(["--idle-timeout", "off"]);
    let serve_log = tmp.join("serve.log");
    let mut server = teardown::spawn(
        td,
        "storlab serve",
        &mut cmd,
        &serve_log,
        Duration::from_secs(10),
    )?;
    // replace the plain kill by an orderly shutdown (the final report,
    // the recorded trace flushed)
    td.forget(server.token());
    let serve_token = td.push(Undo::StopServer {
        control: ctl.clone(),
        pgid: server.child.id() as i32,
    });
    {
        let end = Instant::now() + Duration::from_secs(120);
        while std::os::unix::net::UnixStream::connect(&ctl).is_err()
            || std::os::unix::net::UnixStream::connect(&sock).is_err()
        {
            if !server.running() {
                bail!(
                    "storlab serve --device {} did not start:\n{}",
                    o.device(),
                    teardown::tail(&serve_log, 20)
                );
            }
            if Instant::now() > end {
                bail!("storlab serve did not listen within 2 minutes");
            }
            teardown::sleep(Duration::from_millis(20))?;
        }
    }

    // the block device
    let dev = match attach {
        Attach::Nbd => attach_nbd(td, &tmp, &sock)?,
        _ => attach_nbdfuse(td, &tmp, &sock, o.size)?,
    };

    // the file system
    let mnt = tmp.join("mnt");
    std::fs::create_dir(&mnt)?;
    let mut mkfs = if o.fs == "xfs" {
        let mut c = Command::new("mkfs.xfs");
        c.args(["-q", "-f", &dev]);
        c
    } else {
        let mut c = Command::new("mkfs.ext4");
        // no lazy initialisation: it would write in the background of the
        // measured phase
        c.args([
            "-q",
            "-F",
            "-E",
            "lazy_itable_init=0,lazy_journal_init=0",
            &dev,
        ]);
        c
    };
    teardown::run(td, "mkfs", &mut mkfs, &tmp.join("mkfs.log"), None)?;
    let mut mount = Command::new("mount");
    if let Some(opts) = app.mount_options(o) {
        mount.args(["-o", &opts]);
    }
    mount.arg(&dev).arg(&mnt);
    td.push(Undo::Umount(mnt.clone()));
    teardown::run(td, "mount", &mut mount, &tmp.join("mount.log"), None)?;

    // the applications' temporary files stay in the private directory
    // (world-writable and sticky: the database servers' users write there)
    let scratch = tmp.join("scratch");
    std::fs::create_dir(&scratch)?;
    std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o1777))?;
    let scale = o.scale.unwrap_or(app.default_scale_for(o));
    let duration = o.duration.unwrap_or(DEFAULT_DURATION);
    let mut cx = Ctx {
        td,
        tmp: tmp.clone(),
        mnt: mnt.clone(),
        threads: o.threads,
        duration,
        scale,
        work: (!o.work.is_empty()).then(|| o.work.clone()),
    };
    app.prepare(&mut cx)?;
    // flush what preparing left dirty, then count only the measured phase
    teardown::run(
        cx.td,
        "sync",
        Command::new("sync").arg("-f").arg(&mnt),
        &tmp.join("sync.log"),
        None,
    )?;
    teardown::control_command(&ctl, "reset-stats")?;
    let prepare_s = t_start.elapsed().as_secs_f64();
    let t_run = Instant::now();
    // the transport floor under the run's own host load (issue 60: a
    // floor measured only at start misses the load that comes later)
    let sampler = (o.floor_probe > 0).then(|| FloorSampler::start(o.floor_probe.min(2000)));
    let result = app.run(&mut cx);
    let run_s = t_run.elapsed().as_secs_f64();
    let floors = sampler.map(FloorSampler::stop).unwrap_or_default();
    let result = result?;
    let stats_text = teardown::control_command(&ctl, "stats")?;
    let mut stats: Value = serde_json::from_str(stats_text.trim())
        .with_context(|| format!("the server's stats: {stats_text:?}"))?;
    if let Some(f) = floor_summary(&floors) {
        stats["transport_floor_during_run"] = f;
    }
    // take the stack down to the server (its final report names the
    // recorded trace), keep the private directory until read
    td.unwind_to(serve_token);
    let record = o.record.as_ref().and_then(|_| {
        std::fs::read_to_string(&serve_log)
            .ok()?
            .lines()
            .find(|l| l.trim_start().starts_with("recorded "))
            .map(|l| l.trim().to_string())
    });
    let warnings = warnings(&stats);
    Ok(Report {
        app: app.name().into(),
        device: o.device().to_string(),
        fs: o.fs.clone(),
        size: o.size,
        scale,
        threads: o.threads,
        attach: match attach {
            Attach::Nbd => "nbd (kernel client)".into(),
            _ => "nbdfuse + loop (direct IO)".into(),
        },
        result,
        run_s,
        prepare_s,
        device_stats: device_stats(&stats),
        warnings,
        record,
    })
}

fn exe_path() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("finding the storlab binary")
}

/// Does this build's `storlab serve` take `option`?
fn attach_nbd(td: &mut Teardown, tmp: &Path, sock: &Path) -> anyhow::Result<String> {
    // a free device: one without a connection (no pid in sysfs)
    let dev = (0..256)
        .map(|i| (format!("/dev/nbd{i}"), format!("/sys/block/nbd{i}/pid")))
        .find(|(d, pid)| Path::new(d).exists() && !Path::new(pid).exists())
        .map(|(d, _)| d)
        .ok_or_else(|| anyhow::anyhow!("no free /dev/nbdN device"))?;
    td.push(Undo::NbdDisconnect(dev.clone()));
    teardown::run(
        td,
        "nbd-client",
        // `-u`: the "host" is a unix socket; the server's unnamed export
        // accepts any name
        Command::new("nbd-client")
            .args(["-u", "-N", "storlab", "-b", "4096"])
            .arg(sock)
            .arg(&dev),
        &tmp.join("nbd-client.log"),
        Some(Duration::from_secs(30)),
    )?;
    // connected once the kernel knows the size
    let sysfs = format!("/sys/block/{}/size", dev.trim_start_matches("/dev/"));
    let end = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&sysfs)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        == 0
    {
        if Instant::now() > end {
            bail!("{dev} has no size 20 s after nbd-client connected it");
        }
        teardown::sleep(Duration::from_millis(20))?;
    }
    Ok(dev)
}

fn attach_nbdfuse(td: &mut Teardown, tmp: &Path, sock: &Path, size: u64) -> anyhow::Result<String> {
    let fuse = tmp.join("fuse");
    std::fs::create_dir(&fuse)?;
    let disk = fuse.join("disk");
    // one connection, as the kernel's client makes: the order of
    // requests on it is what a closed-loop recording infers the
    // application's dependencies from
    let mut cmd = Command::new("nbdfuse");
    cmd.args(["-C", "1"])
        .arg(&disk)
        .arg(format!("nbd+unix:///?socket={}", sock.display()));
    let mut p = teardown::spawn(
        td,
        "nbdfuse",
        &mut cmd,
        &tmp.join("nbdfuse.log"),
        Duration::from_secs(5),
    )?;
    td.push(Undo::FuseUnmount(fuse.clone()));
    let end = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&disk).map(|m| m.len()).unwrap_or(0) != size {
        if !p.running() {
            bail!("nbdfuse ended:\n{}", teardown::tail(&p.log, 20));
        }
        if Instant::now() > end {
            bail!("nbdfuse did not expose {} within 20 s", disk.display());
        }
        teardown::sleep(Duration::from_millis(20))?;
    }
    let out = teardown::run(
        td,
        "losetup",
        Command::new("losetup")
            .args(["--direct-io=on", "-f", "--show"])
            .arg(&disk),
        &tmp.join("losetup.log"),
        Some(Duration::from_secs(30)),
    )?;
    let dev = out.trim().to_string();
    if !dev.starts_with("/dev/loop") {
        bail!("losetup printed {dev:?}, not a loop device");
    }
    td.push(Undo::LoopDetach(dev.clone()));
    Ok(dev)
}

/// Probes of the transport floor while the application runs: one probe
/// (`requests` QD1 reads through a zero-latency server, the emulator's
/// own floor probe) at once, then one a second, until stopped.
struct FloorSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<Vec<f64>>,
}

impl FloorSampler {
    fn start(requests: u32) -> FloorSampler {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut means = Vec::new();
            let opts = storlab_emu::ServeOptions::default();
            while !flag.load(Ordering::Relaxed) {
                if let Ok(f) = storlab_emu::probe::transport_floor(&opts, requests as usize) {
                    means.push(f.mean_ns);
                }
                for _ in 0..20 {
                    if flag.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            means
        });
        FloorSampler { stop, thread }
    }

    fn stop(self) -> Vec<f64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The floors measured during the run: their median (the floor the
/// warnings use), lowest, highest and count.
fn floor_summary(means: &[f64]) -> Option<Value> {
    if means.is_empty() {
        return None;
    }
    let mut v = means.to_vec();
    v.sort_by(f64::total_cmp);
    Some(json!({
        "mean_ns": v[v.len() / 2],
        "min_ns": v[0],
        "max_ns": v[v.len() - 1],
        "probes": v.len(),
    }))
}

/// The transport floor of a run's statistics: the one measured during
/// the run when there is one, else the server's at start.
pub fn floor_ns(s: &Value) -> Option<f64> {
    s["transport_floor_during_run"]["mean_ns"]
        .as_f64()
        .or_else(|| s["transport_floor"]["mean_ns"].as_f64())
        .filter(|f| *f > 0.0)
}

/// The device-level figures kept from the server's statistics.
fn device_stats(s: &Value) -> Value {
    json!({
        "elapsed_s": s["elapsed_s"],
        "ops": s["ops"],
        "lateness": s["lateness"],
        "transport_floor": s["transport_floor"],
        "transport_floor_during_run": s["transport_floor_during_run"],
        "breakdown_mean_ns": s["breakdown_mean_ns"],
        "clock": s["clock"],
        "protocol_errors": s["protocol_errors"],
    })
}

/// A device latency below this many transport floors is mostly the
/// transport's: the emulator cannot make a request faster than the round
/// trip through NBD, FUSE and the loop device, so the application then
/// sees the host, not the modelled device.
pub const HONEST_FLOOR_RATIO: f64 = 2.0;

/// Warnings: model latencies too close to the transport floor, replies
/// late against their deadlines.
pub fn warnings(s: &Value) -> Vec<String> {
    let mut w = Vec::new();
    let floor = floor_ns(s);
    let ops = s["ops"].as_array().cloned().unwrap_or_default();
    for op in &ops {
        let n = op["requests"].as_u64().unwrap_or(0);
        let name = op["op"].as_str().unwrap_or("?");
        if n == 0 || name == "trim" {
            continue;
        }
        let model = op["model_latency"]["mean_ns"].as_f64().unwrap_or(0.0);
        if let Some(f) = floor {
            if model < f {
                w.push(format!(
                    "{name}: not usable: the device's mean latency ({:.1} us) is {:.1}x below the transport floor ({:.1} us): the application sees this host's NBD path, not the modelled device",
                    model / 1000.0,
                    f / model.max(1.0),
                    f / 1000.0
                ));
            } else if model < HONEST_FLOOR_RATIO * f {
                w.push(format!(
                    "{name}: the device's mean latency ({:.1} us) is only {:.2}x the transport floor ({:.1} us), under {HONEST_FLOOR_RATIO}x: the application sees this host's NBD path nearly as much as the modelled device",
                    model / 1000.0,
                    model / f,
                    f / 1000.0
                ));
            }
        }
        let late = op["lateness"]["p50_ns"].as_f64().unwrap_or(0.0);
        if model > 1000.0 && late > 0.25 * model {
            w.push(format!(
                "{name}: replies were late by {:.1} us at the median against a modelled {:.1} us: the host could not keep the device's timing",
                late / 1000.0,
                model / 1000.0
            ));
        }
    }
    if floor.is_none() {
        w.push("no transport floor measured (--floor-probe 0): the honesty of fast devices is not checked".into());
    }
    w
}

/// The report as text.
pub fn text(r: &Report) -> String {
    let mut s = String::new();
    let m = &r.result;
    s.push_str(&format!(
        "storlab app {} on {} ({}, {} GiB, {}; scale {}, {} threads)\n",
        r.app,
        r.device,
        r.fs,
        r.size >> 30,
        r.attach,
        r.scale,
        r.threads
    ));
    s.push_str(&format!(
        "  result: {:.2} {}  (measured phase {:.1} s, preparation {:.1} s)\n",
        m.value, m.unit, r.run_s, r.prepare_s
    ));
    for (k, v) in &m.extra {
        s.push_str(&format!("    {k}: {v:.2}\n"));
    }
    let st = &r.device_stats;
    s.push_str("  device (emulator, measured phase):\n");
    let us = |v: &Value| v.as_f64().unwrap_or(0.0) / 1000.0;
    for op in st["ops"].as_array().into_iter().flatten() {
        if op["requests"].as_u64().unwrap_or(0) == 0 {
            continue;
        }
        s.push_str(&format!(
            "    {:<5} n={:<8} MiB={:<9.1} model mean={:.1}us p99={:.1}us  late p50={:.2}us p99={:.2}us\n",
            op["op"].as_str().unwrap_or("?"),
            op["requests"],
            op["bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
            us(&op["model_latency"]["mean_ns"]),
            us(&op["model_latency"]["p99_ns"]),
            us(&op["lateness"]["p50_ns"]),
            us(&op["lateness"]["p99_ns"])
        ));
    }
    let l = &st["lateness"];
    s.push_str(&format!(
        "    lateness (reply - deadline): p50={:.2}us p99={:.2}us max={:.1}us\n",
        us(&l["p50_ns"]),
        us(&l["p99_ns"]),
        us(&l["max_ns"])
    ));
    if st["transport_floor"].is_object() {
        let f = &st["transport_floor"];
        s.push_str(&format!(
            "    transport floor: mean={:.2}us p99={:.2}us\n",
            us(&f["mean_ns"]),
            us(&f["p99_ns"])
        ));
    }
    let bd: Vec<String> = st["breakdown_mean_ns"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let v = p[1].as_f64()?;
            (v > 0.0).then(|| format!("{}={:.2}us", p[0].as_str().unwrap_or("?"), v / 1000.0))
        })
        .collect();
    if !bd.is_empty() {
        s.push_str(&format!("    breakdown (mean): {}\n", bd.join(" ")));
    }
    if let Some(rec) = &r.record {
        s.push_str(&format!("  {rec}\n"));
    }
    for w in &r.warnings {
        s.push_str(&format!("  warning: {w}\n"));
    }
    let _ = std::io::stdout().flush();
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::opts::parse_duration;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn a_device_near_the_floor_is_flagged() {
        let stats = |model: f64, late: u64| {
            json!({
                "transport_floor": {"mean_ns": 20_000.0},
                "ops": [{"op": "read", "requests": 10,
                         "model_latency": {"mean_ns": model},
                         "lateness": {"p50_ns": late}}],
            })
        };
        assert!(warnings(&stats(1_000_000.0, 100)).is_empty());
        let w = warnings(&stats(30_000.0, 100));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("1.50x the transport floor"), "{w:?}");
        // issue 60 item 2: a latency 100x below the floor is not "within 2x"
        let w = warnings(&stats(200.0, 100));
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("not usable")
                && w[0].contains("100.0x below")
                && !w[0].contains("within"),
            "{w:?}"
        );
        // issue 60: the floor measured during the run wins over the one
        // at start (here 10x higher: host load came later)
        let mut st = stats(100_000.0, 100);
        assert!(warnings(&st).is_empty());
        st["transport_floor_during_run"] =
            floor_summary(&[300_000.0, 200_000.0, 900_000.0]).unwrap();
        assert_eq!(floor_ns(&st), Some(300_000.0));
        let w = warnings(&st);
        assert!(w.len() == 1 && w[0].contains("3.0x below"), "{w:?}");
        let w = warnings(&stats(1_000_000.0, 400_000));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("late"), "{w:?}");
    }
}
