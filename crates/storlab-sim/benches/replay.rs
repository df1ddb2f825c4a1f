//! Trace replay speed, in requests per second of wall time (criterion's
//! `thrpt`, elements = requests), parsing included.
//!
//! ```text
//! cargo bench -p storlab-sim --bench replay                 # 10 M MSR lines
//! STORLAB_BENCH_LINES=1000000 cargo bench -p storlab-sim --bench replay
//! ```
//!
//! The MSR trace is generated under the system temporary directory on first
//! use (about 0.6 GB for 10 M lines) and reused; it is never part of the
//! repository. Three measurements over the same file:
//!
//! * `parse/msr`: the reader alone (the floor set by parsing);
//! * `afap/null`: replay on the zero-latency device (parsing + engine);
//! * `afap/moneta-spin`: replay through the Moneta model, iodepth 32 — the
//!   figure with a target: at least 1 M requests/s on one core;
//! * `fio/moneta-spin`: the same mix of requests from a fio job instead of
//!   the trace (no parsing, no pairing), for how much of the time is the
//!   model's.

use std::fs::File;
use std::hint::black_box;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::replay::{simulate_trace, ReplayMode, ReplayOptions};
use storlab_trace::{open, writer, Format, ReadOptions, TraceOp, TraceRecord, WriteOptions};

fn lines() -> u64 {
    std::env::var("STORLAB_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000)
}

/// A deterministic MSR-like stream (xorshift): 70 % reads, 4 to 32 KiB,
/// anywhere in 128 GiB (half of it past a 64 GiB device, so remapping is
/// on the path), a request every 0.1 to 20 µs, recorded response times.
fn requests(n: u64) -> impl Iterator<Item = TraceRecord> {
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut t: u64 = 0;
    (0..n).map(move |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        t += 100 + s % 20_000 / 100 * 100;
        TraceRecord {
            time_ns: t,
            op: if s % 10 < 3 {
                TraceOp::Write
            } else {
                TraceOp::Read
            },
            offset: (s >> 20) % (1 << 25) * 4096,
            len: 4096 << (s >> 60 & 3),
            device: 0,
            recorded_latency_ns: Some(10_000 + (s >> 40) % 5_000_000 / 100 * 100),
            stream: 0,
        }
    })
}

fn trace(n: u64) -> PathBuf {
    let path = std::env::temp_dir().join(format!("storlab-replay-bench-{n}.msr.csv"));
    if !path.exists() {
        eprintln!("generating {} ({n} MSR lines)…", path.display());
        let tmp = path.with_extension("partial");
        let mut w = writer(
            Format::Msr,
            BufWriter::with_capacity(1 << 20, File::create(&tmp).unwrap()),
            &WriteOptions::default(),
        );
        for r in requests(n) {
            w.record(&r).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        std::fs::rename(&tmp, &path).unwrap();
    }
    path
}

fn replay(device: &str, path: &Path, n: u64) -> u64 {
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, &[]).unwrap();
    let opts = ReplayOptions {
        mode: ReplayMode::Afap,
        iodepth: 32,
        format: Some(Format::Msr),
        ..ReplayOptions::default()
    };
    let r = simulate_trace(&cfg, &resolved, path, &opts, &mut |_, _| {}).unwrap();
    let ios = r.jobs[0].rw_ios();
    assert_eq!(ios, n, "every line replayed");
    ios
}

fn bench(c: &mut Criterion) {
    let n = lines();
    let path = trace(n);
    let mut g = c.benchmark_group(format!("replay-{n}"));
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(1));
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("parse/msr", |b| {
        b.iter(|| {
            let r = open(&path, Some(Format::Msr), &ReadOptions::default()).unwrap();
            let mut k = 0u64;
            for rec in r {
                black_box(rec.unwrap());
                k += 1;
            }
            assert_eq!(k, n);
        })
    });
    for device in ["null", "moneta-spin"] {
        g.bench_function(format!("afap/{device}"), |b| {
            b.iter(|| black_box(replay(device, &path, n)))
        });
    }
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), "moneta-spin", &[]).unwrap();
    let args: Vec<String> = [
        "--name=mix",
        "--rw=randrw",
        "--rwmixread=70",
        "--bssplit=4k/25:8k/25:16k/25:32k/25",
        "--ioengine=libaio",
        "--iodepth=32",
        "--norandommap",
        // number_ios, not the device's size, must end the job
        "--io_size=1000t",
        &format!("--number_ios={n}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let jobs = storlab_workload::fio::parse_cli_args(&args).unwrap();
    g.bench_function("fio/moneta-spin", |b| {
        b.iter(|| {
            let r = storlab_sim::run::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).unwrap();
            assert_eq!(r.jobs[0].rw_ios(), n);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
