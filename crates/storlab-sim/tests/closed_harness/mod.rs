//! The closed-loop cross-check, shared by the test (`tests/closed_loop.rs`)
//! and the benchmark that makes the README's table
//! (`examples/closed_crosscheck.rs`): run an application against the
//! emulator on a device while recording a closed-loop trace, predict its
//! run time on another device with the simulator, and compare with the
//! run on that device.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use storlab_emu::{spawn, RecordSpec, ServeOptions};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::replay::closed::{predict, ClosedOptions, Prediction};

pub const MIB: u64 = 1 << 20;

/// An application: what runs against the emulated device.
#[derive(Clone, Debug)]
pub enum App {
    /// fio's nbd engine straight on the export: random 4 KiB reads and
    /// writes (70 % reads) at queue depth 1 with `think_us` of think time
    /// after each, `ios` requests.
    FioThink { ios: u64, think_us: u64 },
    /// sqlite3 on XFS over nbdfuse + loop: `rows` inserts, each its own
    /// transaction, `PRAGMA synchronous=FULL` (rollback journal).
    Sqlite { rows: u64 },
    /// tar/cp/sync on XFS over nbdfuse + loop: unpack `files` files of
    /// `kib` KiB, sync, copy the tree, sync, drop caches, tar it, sync.
    TarCp { files: u64, kib: u64 },
    /// postmark on XFS over nbdfuse + loop, then sync.
    Postmark { files: u64, transactions: u64 },
}

impl App {
    /// A short name for tables.
    pub fn name(&self) -> String {
        match self {
            App::FioThink { ios, think_us } => format!("fio randrw QD1 think {think_us}us x{ios}"),
            App::Sqlite { rows } => format!("sqlite3 FULL inserts x{rows} (xfs)"),
            App::TarCp { files, kib } => format!("tar/cp/sync {files}x{kib}KiB (xfs)"),
            App::Postmark {
                files,
                transactions,
            } => format!("postmark {files} files {transactions} tx (xfs)"),
        }
    }

    fn needs_fs(&self) -> bool {
        !matches!(self, App::FioThink { .. })
    }
}

/// One run on the emulator.
#[derive(Clone, Debug)]
pub struct Run {
    pub device: String,
    pub trace: PathBuf,
    /// The trace's span: first arrival to last device completion, s.
    pub span_s: f64,
    /// The application's own wall time (the whole session for the file
    /// system applications: attach, mkfs, mount, run, unmount), s.
    pub wall_s: f64,
    pub requests: u64,
}

/// Fail (never skip) when a tool is missing, naming its Debian package.
pub fn require(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    assert!(found, "{tool} is not installed: install the Debian package `{package}` (apt-get install {package})");
}

pub fn config(device: &str) -> SystemConfig {
    SystemConfig::load(&PresetStore::default(), device, &[])
        .unwrap_or_else(|e| panic!("preset {device}: {e}"))
        .1
}

/// Run `app` against the emulator on `device` (an export of `size`
/// bytes), recording a closed-loop trace in `dir`.
pub fn record(device: &str, app: &App, size: u64, dir: &Path) -> Run {
    prepare(app, dir);
    let cfg = config(device);
    let dev = cfg
        .build_device_in(&PresetStore::default())
        .unwrap_or_else(|e| panic!("building {device}: {e}"));
    let trace = dir.join(format!("{device}.trace"));
    let socket = dir.join(format!("{device}.sock"));
    let handle = spawn(
        ServeOptions {
            socket: Some(socket.clone()),
            size,
            record: Some(RecordSpec::closed(&trace)),
            ..ServeOptions::default()
        },
        dev,
    )
    .expect("server starts");
    let uri = format!("nbd+unix:///?socket={}", socket.display());
    let t0 = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if app.needs_fs() {
            fs_session(&uri, size, dir, app);
        } else {
            run_fio(&uri, app, dir);
        }
    }));
    let wall_s = t0.elapsed().as_secs_f64();
    let report = handle.stop().expect("clean stop");
    if let Err(p) = outcome {
        std::panic::resume_unwind(p);
    }
    let rec = report.record.expect("a record report");
    assert!(rec.error.is_none(), "recorder: {:?}", rec.error);
    let t = storlab_trace::closed::load(&trace).expect("the recorded trace loads");
    Run {
        device: device.to_string(),
        span_s: t.recorded_span_ns() as f64 / 1e9,
        wall_s,
        requests: t.requests(),
        trace,
    }
}

fn run_fio(uri: &str, app: &App, dir: &Path) {
    require("fio", "fio");
    let App::FioThink { ios, think_us } = app else {
        unreachable!()
    };
    let out = dir.join("fio.json");
    run(Command::new("fio").args([
        "--name=app",
        "--ioengine=nbd",
        &format!("--uri={uri}"),
        "--rw=randrw",
        "--rwmixread=70",
        "--bs=4k",
        "--size=64m",
        "--iodepth=1",
        "--randrepeat=1",
        &format!("--thinktime={think_us}"),
        &format!("--number_ios={ios}"),
        "--output-format=json",
        &format!("--output={}", out.display()),
    ]));
}

#[path = "../../../storlab-emu/tests/common/chain.rs"]
mod chain;
use chain::{run, Chain};

/// What an application needs before the device is attached (made outside
/// the recording, so its time does not count).
fn prepare(app: &App, dir: &Path) {
    if let App::TarCp { files, kib } = app {
        let src = dir.join("src.tar");
        if src.exists() {
            return;
        }
        let tree = dir.join("tree");
        let _ = std::fs::create_dir_all(tree.join("src"));
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for f in 0..*files {
            let data: Vec<u8> = (0..kib * 1024)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            std::fs::write(tree.join("src").join(format!("f{f}")), data).expect("writing the tree");
        }
        run(Command::new("tar")
            .arg("cf")
            .arg(&src)
            .arg("-C")
            .arg(&tree)
            .arg("src"));
    }
}

/// nbdfuse (one connection) → loop device with direct IO → XFS → the
/// application → unmount, as `storlab app run` attaches a device.
fn fs_session(uri: &str, size: u64, dir: &Path, app: &App) {
    require("nbdfuse", "nbdfuse");
    require("fusermount3", "fuse3");
    require("mkfs.xfs", "xfsprogs");
    let conns = std::env::var("STORLAB_NBDFUSE_CONNECTIONS").unwrap_or_else(|_| "1".into());
    let (mut chain, _loopdev, mnt) = Chain::attach_xfs(uri, size, dir, &conns, &["-q", "-K"]);
    match app {
        App::Sqlite { rows } => {
            require("sqlite3", "sqlite3");
            let mut sql = String::from(
                "PRAGMA synchronous=FULL; PRAGMA journal_mode=DELETE;\
                 CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);\n",
            );
            for i in 0..*rows {
                sql += &format!("INSERT INTO t(v) VALUES('{:0>200}');\n", i);
            }
            sql += "SELECT count(*) FROM t;\n";
            let script = dir.join("inserts.sql");
            std::fs::write(&script, sql).expect("writing the SQL");
            let out = run(Command::new("sh").arg("-c").arg(format!(
                "sqlite3 {} < {}",
                mnt.join("t.db").display(),
                script.display()
            )));
            assert!(out.contains(&rows.to_string()), "sqlite3: {out}");
        }
        App::TarCp { .. } => {
            let src = dir.join("src.tar");
            let m = mnt.display();
            run(Command::new("sh").arg("-c").arg(format!(
                "set -e; tar xf {} -C {m}; sync -f {m}; cp -r {m}/src {m}/copy; sync -f {m}; \
                 echo 3 > /proc/sys/vm/drop_caches; tar cf {m}/all.tar -C {m} copy; sync -f {m}",
                src.display()
            )));
        }
        App::Postmark {
            files,
            transactions,
        } => {
            require("postmark", "postmark");
            let cfg = dir.join("postmark.cfg");
            std::fs::write(
                &cfg,
                format!(
                    "set location {}\nset number {files}\nset transactions {transactions}\n\
                     set size 512 65536\nset seed 42\nrun\nquit\n",
                    mnt.display()
                ),
            )
            .expect("writing the postmark configuration");
            run(Command::new("sh").arg("-c").arg(format!(
                "cd {} && postmark {} > /dev/null && sync -f {}",
                dir.display(),
                cfg.display(),
                mnt.display()
            )));
        }
        App::FioThink { .. } => unreachable!(),
    }
    run(Command::new("umount").arg(&mnt));
    chain.mnt = None;
    drop(chain);
}

/// The prediction of `from`'s trace on `to`, and its error against `to`'s
/// own run.
#[derive(Clone, Debug)]
pub struct Check {
    pub from: String,
    pub to: String,
    pub prediction: Prediction,
    /// The real run time on `to` (its trace's span), s.
    pub actual_s: f64,
    /// `prediction.runtime_s / actual_s - 1`.
    pub error: f64,
    /// Taking the recorded run time on `from` as the prediction: the error
    /// of assuming the device does not matter.
    pub naive_error: f64,
}

pub fn check(from: &Run, to: &Run) -> Check {
    let p = predict(&from.trace, &config(&to.device), &ClosedOptions::default())
        .unwrap_or_else(|e| panic!("predicting {} on {}: {e}", from.device, to.device));
    Check {
        from: from.device.clone(),
        to: to.device.clone(),
        actual_s: to.span_s,
        error: p.runtime_s / to.span_s - 1.0,
        naive_error: from.span_s / to.span_s - 1.0,
        prediction: p,
    }
}
