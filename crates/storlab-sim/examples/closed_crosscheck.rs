//! The closed-loop cross-check as a benchmark (the README's table): each
//! application runs against the emulator on each device while a
//! closed-loop trace is recorded; every recording is replayed by the
//! simulator on every other device and the predicted run time compared
//! with that device's own run.
//!
//! ```text
//! cargo run --release -p storlab-sim --example closed_crosscheck -- \
//!     [--apps fio,sqlite,tar,postmark] [--devices raid-disk,fusion-io,moneta-spin] \
//!     [--repeat] [--keep DIR]
//! ```
//!
//! `--repeat` runs each application a second time on each device and
//! predicts that run from the first: the error of a prediction where only
//! the machine's noise differs (the floor under every other figure).
//!
//! The file-system applications need root (nbdfuse, a loop device, mkfs,
//! mount), like `storlab app run`.

#[path = "../tests/closed_harness/mod.rs"]
mod closed_harness;

use closed_harness::*;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let apps: Vec<App> = get("--apps", "fio,sqlite,tar,postmark")
        .split(',')
        .map(|a| match a {
            "fio" => App::FioThink {
                ios: 2000,
                think_us: 100,
            },
            "sqlite" => App::Sqlite { rows: 300 },
            "tar" => App::TarCp {
                files: 200,
                kib: 64,
            },
            "postmark" => App::Postmark {
                files: 500,
                transactions: 2000,
            },
            other => panic!("unknown application {other} (fio, sqlite, tar, postmark)"),
        })
        .collect();
    let devices: Vec<String> = get("--devices", "raid-disk,fusion-io,moneta-spin")
        .split(',')
        .map(str::to_string)
        .collect();
    let repeat = args.iter().any(|a| a == "--repeat");
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1));
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = keep.map_or_else(|| tmp.path().to_path_buf(), std::path::PathBuf::from);
    println!("| application | recorded on | predicted for | predicted (s) | actual (s) | error | ignoring the device |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for (k, app) in apps.iter().enumerate() {
        let dir = base.join(format!("app{k}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let runs: Vec<Run> = devices
            .iter()
            .map(|d| {
                let r = record(d, app, 512 * MIB, &dir);
                eprintln!(
                    "{}: {} on {d}: {} requests, span {:.4} s, wall {:.3} s",
                    app.name(),
                    r.trace.display(),
                    r.requests,
                    r.span_s,
                    r.wall_s
                );
                r
            })
            .collect();
        // the noise floor: the same device again, predicted from the first
        // run (nothing but the machine changed)
        let mut again = Vec::new();
        if repeat {
            let d = dir.join("again");
            std::fs::create_dir_all(&d).expect("mkdir");
            for r in &runs {
                let a = record(&r.device, app, 512 * MIB, &d);
                eprintln!("  again on {}: span {:.4} s", a.device, a.span_s);
                again.push((r, a));
            }
        }
        for (from, to) in &again {
            let c = check(from, to);
            println!(
                "| {} | {} | {} (again) | {:.4} | {:.4} | {:+.1} % | {:+.1} % |",
                app.name(),
                c.from,
                c.to,
                c.prediction.runtime_s,
                c.actual_s,
                c.error * 100.0,
                c.naive_error * 100.0
            );
        }
        for from in &runs {
            for to in &runs {
                if from.device == to.device {
                    continue;
                }
                let c = check(from, to);
                println!(
                    "| {} | {} | {} | {:.4} | {:.4} | {:+.1} % | {:+.1} % |",
                    app.name(),
                    c.from,
                    c.to,
                    c.prediction.runtime_s,
                    c.actual_s,
                    c.error * 100.0,
                    c.naive_error * 100.0
                );
            }
        }
    }
}
