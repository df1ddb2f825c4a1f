//! `storlab app check`: the simulator's application model against the
//! real program on the emulated device (issue 57, item 3). Per device,
//! the real program runs on the emulator (`app run`'s machinery) and the
//! model runs in the simulator at the same scaled configuration (data
//! set scale, threads, amount of work, file system); the table puts side
//! by side the time per operation and the IO per operation (reads,
//! writes, flushes and bytes per transaction: the emulator's counts of
//! the requests the device served over the measured phase, the requests
//! the run's recording holds, against the requests the model's host stack
//! sent its device), and the ratio of time per operation of each device
//! over the first, model against real. A program that runs a number of
//! transactions runs twice per device, with twice the work the second
//! time, and its figures are the second run's beyond the first (what a
//! run pays once drops out). Disagreements beyond [`TOLERANCE`] are
//! listed.

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::opts::RunOpts;
use super::registry::find;
use super::run::{self, Report};
use super::teardown;

/// Model against real: a figure further apart than this is a
/// disagreement (the 25 %).
pub const TOLERANCE: f64 = 0.25;

/// Options of `storlab app check`.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckArgs {
    /// The real application (`storlab app list`) or its model's name
    /// (`oltp` for sysbench-oltp).
    pub app: String,
    /// Devices, comma separated; time ratios are over the first.
    #[arg(long, value_delimiter = ',', required = true)]
    pub devices: Vec<String>,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Per operation: time and IO.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct PerOp {
    /// Time per operation, ms.
    pub ms: f64,
    /// Device reads per operation.
    pub reads: f64,
    /// Device writes per operation.
    pub writes: f64,
    /// Flushes per operation.
    pub flushes: f64,
    /// Bytes read and written per operation.
    pub bytes: f64,
}

impl PerOp {
    fn fields(&self) -> [(&'static str, f64); 5] {
        [
            ("ms/op", self.ms),
            ("reads/op", self.reads),
            ("writes/op", self.writes),
            ("flushes/op", self.flushes),
            ("KiB/op", self.bytes / 1024.0),
        ]
    }
}

/// One device's real and modelled figures.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Row {
    /// The device.
    pub device: String,
    /// Operations of the real run's measured phase.
    pub operations: u64,
    /// The real program on the emulator.
    pub real: PerOp,
    /// The model in the simulator.
    pub model: PerOp,
    /// The real program's user-space CPU per operation on this host, µs,
    /// which the model ran with (its `cpu` parameter), when the program
    /// reports its CPU time; `None`: the model kept its own (calibrated on
    /// a study's host).
    pub cpu_us: Option<f64>,
}

/// A real program and its model: the model's name and the pairs that
/// give it the real run's configuration.
#[derive(Debug)]
struct Pairing {
    model: &'static str,
    /// Operations of a real run (its transactions).
    ops: fn(&Report) -> Option<u64>,
    /// The model's pairs for the real run.
    pairs: fn(&Report, u64, bool) -> Vec<String>,
    /// The model's parameter for its CPU per operation, µs, set to the
    /// real program's own user CPU per operation on this host when the
    /// program reports it: the model's default is calibrated on a study's
    /// host, whose CPU is not this one's, and the time ratios between
    /// devices compare the device's share of each operation only when
    /// both sides spend the same CPU on it.
    cpu: Option<&'static str>,
}

fn tx_work(r: &Report) -> Option<u64> {
    r.result.work.first().copied().filter(|n| *n > 0)
}

/// Postmark's transactions at `scale` (app/postmark.rs: 100,000 at
/// scale 1, at least 100).
fn postmark_tx(r: &Report) -> Option<u64> {
    Some(((100_000.0 * r.scale) as u64).max(100))
}

fn common(r: &Report, ops: u64) -> Vec<String> {
    vec![
        format!("scale={}", r.scale),
        format!("threads={}", r.threads),
        format!("transactions={ops}"),
    ]
}

/// The real program `name`'s model, or why it has none.
fn pairing(name: &str) -> anyhow::Result<(&'static str, Pairing)> {
    Ok(match name {
        "bdb-btree" | "bdb-hash" => (
            if name == "bdb-btree" { "bdb-btree" } else { "bdb-hash" },
            Pairing {
                model: if name == "bdb-btree" { "bdb-btree" } else { "bdb-hash" },
                ops: tx_work,
                // bdb-bench's memory pool is 64 MB (app/bdb.rs passes 64)
                pairs: |r, n, _| {
                    let mut v = common(r, n);
                    v.push("cache=64m".into());
                    v
                },
                cpu: Some("cpu_us"),
            },
        ),
        "postmark" => (
            "postmark",
            Pairing {
                model: "postmark",
                ops: postmark_tx,
                // the real run's files and blocks (app/postmark.rs); its
                // `--direct` mounts the file system `sync,dirsync`
                // (Postmark has no O_DIRECT switch), the model's `sync=1`
                pairs: |r, _, direct| {
                    vec![
                        format!("scale={}", r.scale),
                        format!("size_hi={}", super::postmark::largest_file(r.scale)),
                        format!("block={}", super::postmark::BLOCK),
                        "direct=0".to_string(),
                        format!("sync={}", u8::from(direct)),
                    ]
                },
                // (postmark's own user CPU, getrusage around the run, is
                // under the clock's tick at these scales: 0.0 µs a
                // transaction measured at scale 0.002, so the model keeps
                // its calibrated CPU)
                cpu: None,
            },
        ),
        "sysbench-oltp" | "oltp" => (
            "sysbench-oltp",
            Pairing {
                model: "oltp",
                ops: tx_work,
                // the real server's configuration (app/sysbench.rs:
                // MariaDB 10.11, innodb_flush_method=O_DIRECT, a 256 MB
                // pool), so that both sides sync, preallocate and buffer
                // their files alike
                pairs: |r, n, _| {
                    let mut v = common(r, n);
                    v.extend([
                        "server=mariadb-10.11".to_string(),
                        "flush_method=o_direct".to_string(),
                        "buffer_pool=256m".to_string(),
                    ]);
                    v
                },
                cpu: Some("cpu_us"),
            },
        ),
        "sqlite" => (
            "sqlite",
            Pairing {
                model: "sqlite",
                ops: tx_work,
                pairs: |r, n, _| {
                    vec![format!("scale={}", r.scale), format!("transactions={n}")]
                },
                cpu: Some("cpu_us"),
            },
        ),
        "build" => bail!(
            "build: the real program builds Brotli's C sources, the model (`storlab apps show build`) a Linux kernel: not the same work, so no per-operation comparison"
        ),
        "pgbench" => (
            "pgbench",
            Pairing {
                model: "pgbench",
                ops: tx_work,
                // the real cluster runs PostgreSQL's defaults, as the
                // model's do (shared_buffers 128 MB, checkpoints every
                // 5 min)
                pairs: |r, n, _| common(r, n),
                cpu: Some("cpu_us"),
            },
        ),
        "rocksdb" => (
            "rocksdb",
            Pairing {
                model: "rocksdb",
                // per put: db_bench runs as many gets after them
                // (app/rocksdb.rs: --reads defaults to --writes), which
                // find the keys in the memtable
                ops: tx_work,
                pairs: |r, n, _| {
                    vec![
                        format!("scale={}", r.scale),
                        format!("threads={}", r.threads),
                        format!("writes={n}"),
                        format!("reads={n}"),
                    ]
                },
                cpu: None,
            },
        ),
        _ => {
            // an unknown name: app run's error lists the real programs
            find(name)?;
            bail!("{name}: no model to check it against")
        }
    })
}

/// Per operation of the operations a run of `n2` did beyond a run of
/// `n1` (`a` and `b` their figures per operation): what is paid once per
/// run (opening, closing) drops out.
fn difference(a: &PerOp, n1: u64, b: &PerOp, n2: u64) -> PerOp {
    let (n1, n2) = (n1 as f64, n2 as f64);
    let d = |x: f64, y: f64| ((y * n2 - x * n1) / (n2 - n1)).max(0.0);
    PerOp {
        ms: d(a.ms, b.ms),
        reads: d(a.reads, b.reads),
        writes: d(a.writes, b.writes),
        flushes: d(a.flushes, b.flushes),
        bytes: d(a.bytes, b.bytes),
    }
}

/// The real run's figures per operation over its measured phase.
fn real_per_op(r: &Report, ops: u64) -> PerOp {
    let n = ops.max(1) as f64;
    let mut p = PerOp {
        ms: 1000.0 * r.run_s / n,
        ..PerOp::default()
    };
    for op in r.device_stats["ops"].as_array().into_iter().flatten() {
        let k = op["requests"].as_f64().unwrap_or(0.0) / n;
        let b = op["bytes"].as_f64().unwrap_or(0.0) / n;
        match op["op"].as_str().unwrap_or("") {
            "read" => {
                p.reads += k;
                p.bytes += b;
            }
            "write" => {
                p.writes += k;
                p.bytes += b;
            }
            "flush" => p.flushes += k,
            _ => {}
        }
    }
    p
}

/// The model on `device` with `pairs`: its figures per operation, the
/// `ops` operations the real run's figures are divided by (Postmark's
/// transactions: its model also counts the pool's creates and deletes
/// and each transaction's two requests apart).
fn model_per_op(
    o: &RunOpts,
    device: &str,
    model: &str,
    pairs: &[String],
    ops: u64,
) -> anyhow::Result<PerOp> {
    use storlab_model::config::PresetStore;
    let mut store = PresetStore::default();
    if let Some(d) = &o.preset_dir {
        store = store.with_dir(d);
    }
    let mut set = o.set.clone();
    set.push(format!("host.file_system=\"{}\"", o.fs));
    // the real program's file system is made on an export of --size
    // bytes, the device's first: so is the model's
    set.push(format!("fs.size_bytes={}", o.size));
    // and it is this host's XFS, which logs with delayed logging (Linux
    // 2.6.39 and later), not the studies' 2.6 XFS the model defaults to
    set.push("fs.delayed_logging=true".to_string());
    let (resolved, cfg) = storlab_model::SystemConfig::load(&store, device, &set)
        .with_context(|| format!("device '{device}'"))?;
    let jobs = storlab_workload::fio::parse_cli_args(&storlab_apps::job_args(model, pairs))?;
    let r = storlab_apps::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})?;
    let j = r.jobs.first().context("the model's run has no job")?;
    let app = j
        .app
        .as_ref()
        .context("the model's run has no application")?;
    let n = ops.max(1) as f64;
    let secs = app["elapsed_ns"].as_f64().unwrap_or(0.0) / 1e9;
    // what the device was asked for, as the emulator counts the real
    // program's requests: below the file system (page writeback, its
    // journal, page-cache misses), not the application's file requests
    let dr = &j.storlab["host_software"]["device_requests"];
    let f = |k: &str| dr[k].as_f64().unwrap_or(0.0);
    Ok(PerOp {
        ms: 1000.0 * secs / n,
        reads: f("read") / n,
        writes: f("write") / n,
        flushes: f("flush") / n,
        bytes: (f("read_bytes") + f("write_bytes")) / n,
    })
}

/// `model / real - 1`, or `None` when both are negligible.
pub fn error(model: f64, real: f64) -> Option<f64> {
    if model.abs() < 1e-9 && real.abs() < 1e-9 {
        return None;
    }
    Some(model / real.max(1e-12) - 1.0)
}

/// The comparison as text, with its disagreements.
pub fn text(app: &str, model: &str, rows: &[Row], failed: &[(String, String)]) -> String {
    let w = rows
        .iter()
        .map(|r| r.device.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut s = format!(
        "{app}: the real program on the emulator against the model `{model}` in the simulator, per operation (real / model)\n"
    );
    s.push_str(&format!(
        "{:<w$}  {:>19}  {:>15}  {:>15}  {:>15}  {:>17}  {:>15}\n",
        "device", "ms/op", "reads/op", "writes/op", "flushes/op", "KiB/op", "time ratio"
    ));
    let base = rows.first();
    for r in rows {
        let f = r.real.fields();
        let m = r.model.fields();
        let ratio = |x: &PerOp, b: &PerOp| x.ms / b.ms.max(1e-12);
        let (rr, mr) = base.map_or((1.0, 1.0), |b| {
            (ratio(&r.real, &b.real), ratio(&r.model, &b.model))
        });
        s.push_str(&format!(
            "{:<w$}  {:>9.3} / {:<7.3}  {:>6.2} / {:<6.2}  {:>6.2} / {:<6.2}  {:>6.2} / {:<6.2}  {:>7.1} / {:<7.1}  {:>6.2} / {:<6.2}\n",
            r.device, f[0].1, m[0].1, f[1].1, m[1].1, f[2].1, m[2].1, f[3].1, m[3].1, f[4].1, m[4].1, rr, mr
        ));
    }
    for r in rows {
        if let Some(c) = r.cpu_us {
            s.push_str(&format!(
                "{}: the model ran with the real program's user CPU, {c:.1} µs an operation on this host\n",
                r.device
            ));
        }
    }
    let d = disagreements(rows);
    if d.is_empty() && !rows.is_empty() {
        s.push_str(&format!(
            "model and real agree within {:.0} % on every figure above\n",
            TOLERANCE * 100.0
        ));
    }
    for x in d {
        s.push_str(&format!("disagreement: {x}\n"));
    }
    for (dev, e) in failed {
        s.push_str(&format!("not run on {dev}: {e}\n"));
    }
    s
}

/// Every figure where model and real differ by more than [`TOLERANCE`]:
/// IO per operation on each device, and the time ratio over the first
/// device.
pub fn disagreements(rows: &[Row]) -> Vec<String> {
    let mut v = Vec::new();
    for r in rows {
        for ((name, real), (_, model)) in r.real.fields().iter().zip(r.model.fields()).skip(1) {
            // a figure under 0.05 per operation on both sides is noise
            if real.abs() < 0.05 && model.abs() < 0.05 && *name != "KiB/op" {
                continue;
            }
            if real.abs() < 1e-9 {
                v.push(format!(
                    "{}: {name} model {model:.2} against real none",
                    r.device
                ));
            } else if let Some(e) = error(model, *real).filter(|e| e.abs() > TOLERANCE) {
                v.push(format!(
                    "{}: {name} model {model:.2} against real {real:.2} ({:+.0} %)",
                    r.device,
                    e * 100.0
                ));
            }
        }
    }
    if let Some(b) = rows.first() {
        for r in rows.iter().skip(1) {
            let rr = r.real.ms / b.real.ms.max(1e-12);
            let mr = r.model.ms / b.model.ms.max(1e-12);
            if let Some(e) = error(mr, rr).filter(|e| e.abs() > TOLERANCE) {
                v.push(format!(
                    "{} over {}: time per operation ratio model {mr:.2} against real {rr:.2} ({:+.0} %)",
                    r.device,
                    b.device,
                    e * 100.0
                ));
            }
        }
    }
    v
}

/// `storlab app check`.
pub fn main(a: &CheckArgs) -> anyhow::Result<()> {
    let (real_name, p) = pairing(&a.app)?;
    let app = find(real_name)?;
    // every name is checked before anything runs
    if let Some(d) = &a.opts.device {
        bail!("--device {d}: app check runs on the devices of --devices (comma separated)");
    }
    if a.opts.record.is_some() {
        bail!("--record: app check records nothing; use `storlab app run --record` per device");
    }
    for dev in &a.devices {
        a.opts.check_device(dev)?;
    }
    storlab_apps::find(p.model, "storlab app check")?;
    run::check_privileges()?;
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    // the same work on every device: the first device's transactions
    let mut work: Vec<u64> = a.opts.work.clone();
    for dev in &a.devices {
        let mut o = a.opts.clone();
        o.device = Some(dev.clone());
        if app.timed() {
            o.work = work.clone();
        }
        eprintln!("storlab app check: {real_name} on {dev} (real program on the emulator)");
        let r = run::run(app, &o);
        teardown::check_stop()?;
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                failed.push((dev.clone(), format!("{e:#}")));
                continue;
            }
        };
        let Some(ops) = (p.ops)(&r) else {
            failed.push((dev.clone(), "the real run counted no operations".into()));
            continue;
        };
        if app.timed() && work.is_empty() {
            work = vec![ops];
        }
        eprintln!(
            "storlab app check: {} on {dev} (model, {ops} operations)",
            p.model
        );
        // a timed program's run opens and closes what it runs on (Berkeley
        // DB's environment, its recovery and final pool flush; a server's
        // connections) inside its measured phase: run it again with twice
        // the work and count what the extra work did, the steady state
        // the model is
        // the real program's user CPU per operation (of the extra work,
        // for a timed program), when it reports its CPU time
        let mut cpu_us = r.result.cpu_user_s.map(|c| 1e6 * c / ops as f64);
        let real = if app.timed() {
            let mut o2 = o.clone();
            o2.work = vec![2 * ops];
            eprintln!(
                "storlab app check: {real_name} on {dev} (real program, {} operations, for the difference)",
                2 * ops
            );
            let r2 = run::run(app, &o2);
            teardown::check_stop()?;
            match r2.map(|r2| {
                let n2 = (p.ops)(&r2).unwrap_or(0);
                (r2, n2)
            }) {
                Ok((r2, n2)) if n2 > ops => {
                    // the program times its CPU over its transactions only
                    // (open and close are outside), so both runs count,
                    // pooled: the kernel splits CPU time into user and
                    // system by its timer ticks, a few a run
                    cpu_us = r
                        .result
                        .cpu_user_s
                        .zip(r2.result.cpu_user_s)
                        .map(|(c1, c2)| 1e6 * (c1 + c2) / (ops + n2) as f64);
                    difference(&real_per_op(&r, ops), ops, &real_per_op(&r2, n2), n2)
                }
                Ok((_, n2)) => {
                    failed.push((
                        dev.clone(),
                        format!("the longer real run counted {n2} operations, not more than {ops}"),
                    ));
                    continue;
                }
                Err(e) => {
                    failed.push((dev.clone(), format!("the longer real run: {e:#}")));
                    continue;
                }
            }
        } else {
            real_per_op(&r, ops)
        };
        let mut pairs = (p.pairs)(&r, ops, a.opts.direct);
        let cpu_us = p.cpu.and(cpu_us);
        if let (Some(param), Some(c)) = (p.cpu, cpu_us) {
            pairs.push(format!("{param}={c:.3}"));
        }
        let model = match model_per_op(&a.opts, dev, p.model, &pairs, ops) {
            Ok(m) => m,
            Err(e) => {
                failed.push((dev.clone(), format!("the model: {e:#}")));
                continue;
            }
        };
        rows.push(Row {
            device: dev.clone(),
            operations: ops,
            real,
            model,
            cpu_us,
        });
    }
    print!("{}", text(real_name, p.model, &rows, &failed));
    if let Some(path) = &a.json {
        let j = json!({
            "app": real_name,
            "model": p.model,
            "tolerance": TOLERANCE,
            "rows": rows,
            "disagreements": disagreements(&rows),
            "failed": failed.iter().map(|(d, e)| json!({"device": d, "error": e})).collect::<Vec<Value>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&j)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if rows.is_empty() {
        bail!("{real_name} ran on none of the devices");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(dev: &str, ms: f64, reads: f64, mreads: f64, mms: f64) -> Row {
        let p = |ms, reads| PerOp {
            ms,
            reads,
            writes: 1.0,
            flushes: 1.0,
            bytes: 8192.0,
        };
        Row {
            device: dev.into(),
            operations: 10,
            real: p(ms, reads),
            model: p(mms, mreads),
            cpu_us: None,
        }
    }

    #[test]
    fn the_difference_of_two_runs_leaves_out_what_a_run_pays_once() {
        // 1 write and 4 KiB a transaction, and 300 writes and 24 MB that
        // every run pays once (its open and close)
        let run = |n: f64| PerOp {
            ms: (5.0 * n + 1000.0) / n,
            reads: 0.0,
            writes: (n + 300.0) / n,
            flushes: 0.8,
            bytes: (4096.0 * n + 24e6) / n,
        };
        let d = difference(&run(400.0), 400, &run(800.0), 800);
        for (got, want) in [
            (d.ms, 5.0),
            (d.writes, 1.0),
            (d.flushes, 0.8),
            (d.bytes, 4096.0),
        ] {
            assert!((got - want).abs() < 1e-6, "{got} against {want}: {d:?}");
        }
        assert_eq!(d.reads, 0.0);
    }

    #[test]
    fn disagreements_name_the_device_the_figure_and_the_ratio() {
        let rows = vec![row("a", 10.0, 1.0, 1.1, 5.0), row("b", 5.0, 1.0, 2.0, 2.5)];
        let d = disagreements(&rows);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].starts_with("b: reads/op"), "{d:?}");
        // the time ratio: real 0.5, model 0.1
        let rows = vec![row("a", 10.0, 1.0, 1.0, 5.0), row("b", 5.0, 1.0, 1.0, 0.5)];
        let d = disagreements(&rows);
        assert!(d.len() == 1 && d[0].contains("ratio"), "{d:?}");
        assert!(text("x", "y", &rows, &[]).contains("disagreement: b over a"));
    }

    #[test]
    fn only_programs_with_a_like_model_pair() {
        assert_eq!(pairing("oltp").unwrap().1.model, "oltp");
        assert!(pairing("build").is_err());
        assert_eq!(pairing("sqlite").unwrap().1.model, "sqlite");
        assert_eq!(pairing("rocksdb").unwrap().1.model, "rocksdb");
        assert_eq!(pairing("pgbench").unwrap().1.model, "pgbench");
        assert!(pairing("nope").is_err());
    }
}
