//! The closed-loop cross-check as a benchmark (the README's table): each
//! application runs against the emulator on each device while a
//! closed-loop trace is recorded; every recording is replayed by the
//! simulator on every other device and the predicted run time compared
//! with that device's own run.
//!
//! ```text
//! cargo run --release -p storlab-sim --example closed_crosscheck -- \
//!     [--apps fio,sqlite,tar,postmark] [--devices raid-disk,fusion-io,moneta-spin] \
//!     [--reps 3] [--keep DIR [--reuse]]
//! ```
//!
//! `--reuse` takes the recordings already in the `--keep` directory
//! instead of running the applications again.
//!
//! Each application runs `--reps` times on each device (the machine's load
//! moves a run's think time): every recording on one device predicts every
//! run on another, and the table gives the medians, the spread of the
//! actual runs, and the median error. The "(again)" rows predict the other
//! runs on the same device: only the machine's noise differs, the floor
//! under every other figure.
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
                files: 1000,
                transactions: 4000,
            },
            other => panic!("unknown application {other} (fio, sqlite, tar, postmark)"),
        })
        .collect();
    let devices: Vec<String> = get("--devices", "raid-disk,fusion-io,moneta-spin")
        .split(',')
        .map(str::to_string)
        .collect();
    let reuse = args.iter().any(|a| a == "--reuse");
    let reps: usize = get("--reps", "3").parse().expect("--reps: a number");
    let keep = args
        .iter()
        .position(|a| a == "--keep")
        .and_then(|i| args.get(i + 1));
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = keep.map_or_else(|| tmp.path().to_path_buf(), std::path::PathBuf::from);
    println!("| application | recorded on | predicted for | predicted (s) | actual (s) | actual runs (s) | error | error range | ignoring the device |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|");
    for (k, app) in apps.iter().enumerate() {
        // runs[device][rep]
        let runs: Vec<Vec<Run>> = devices
            .iter()
            .map(|d| {
                (0..reps)
                    .map(|rep| {
                        let dir = base.join(format!("app{k}")).join(format!("rep{rep}"));
                        std::fs::create_dir_all(&dir).expect("mkdir");
                        let r = if reuse {
                            let trace = dir.join(format!("{d}.trace"));
                            let t = storlab_trace::closed::load(&trace)
                                .unwrap_or_else(|e| panic!("--reuse: {e}"));
                            Run {
                                device: d.clone(),
                                trace,
                                span_s: t.recorded_span_ns() as f64 / 1e9,
                                wall_s: f64::NAN,
                                requests: t.requests(),
                            }
                        } else {
                            record(d, app, 512 * MIB, &dir)
                        };
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
                    .collect()
            })
            .collect();
        for from in &runs {
            for to in &runs {
                let same = from[0].device == to[0].device;
                if same && reps < 2 {
                    continue;
                }
                // every recording on `from` predicts every run on `to` (on
                // the same device: every other run)
                let mut predicted = Vec::new();
                let mut errors = Vec::new();
                let mut naive = Vec::new();
                for (i, f) in from.iter().enumerate() {
                    let p = check(f, &to[0]).prediction.runtime_s;
                    predicted.push(p);
                    for (j, t) in to.iter().enumerate() {
                        if same && i == j {
                            continue;
                        }
                        errors.push(p / t.span_s - 1.0);
                        naive.push(f.span_s / t.span_s - 1.0);
                    }
                }
                let actual: Vec<f64> = to.iter().map(|r| r.span_s).collect();
                let (lo, hi) = actual
                    .iter()
                    .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
                let (elo, ehi) = errors
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
                println!(
                    "| {} | {} | {}{} | {:.3} | {:.3} | {:.3}-{:.3} | {:+.0} % | {:+.0} to {:+.0} % | {:+.0} % |",
                    app.name(),
                    from[0].device,
                    to[0].device,
                    if same { " (again)" } else { "" },
                    median(&mut predicted),
                    median(&mut actual.clone()),
                    lo,
                    hi,
                    median(&mut errors) * 100.0,
                    elo * 100.0,
                    ehi * 100.0,
                    median(&mut naive) * 100.0
                );
            }
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
