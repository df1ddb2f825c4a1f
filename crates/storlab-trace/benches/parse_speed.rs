//! Parse speed of the trace readers, in lines (records) per second.
//!
//! ```text
//! cargo bench -p storlab-trace --bench parse_speed            # 10 M MSR lines
//! STORLAB_BENCH_LINES=1000000 cargo bench -p storlab-trace --bench parse_speed
//! ```
//!
//! The traces are generated under the system temporary directory on first
//! use (the MSR one is about 0.6 GB for 10 M lines) and reused afterwards;
//! they are never part of the repository. The goal: parsing must be far
//! faster than 1 M lines/s per core, because the whole replay, simulator
//! included, must sustain at least 1 M requests/s.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;
use storlab_trace::{
    make_dev, open, stats, writer, Format, ReadOptions, TraceOp, TraceRecord, WriteOptions,
};

/// A deterministic stream of plausible requests (xorshift, no I/O).
fn requests(n: u64) -> impl Iterator<Item = TraceRecord> {
    let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut t: u64 = 0;
    (0..n).map(move |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        t += 100 + s % 20_000;
        TraceRecord {
            time_ns: t,
            op: if s & 3 == 0 {
                TraceOp::Write
            } else {
                TraceOp::Read
            },
            offset: (s >> 20) % (1 << 28) * 4096,
            len: 4096 << (s >> 60 & 3),
            device: make_dev(8, 0).unwrap(),
            recorded_latency_ns: Some(10_000 + (s >> 40) % 5_000_000 / 100 * 100),
            stream: 1000 + (s >> 50 & 7) as u32,
        }
    })
}

fn generate(path: &Path, format: Format, n: u64) {
    if path.exists() {
        return;
    }
    eprintln!("generating {} ({n} records of {format})…", path.display());
    let tmp = path.with_extension("partial");
    let out = BufWriter::with_capacity(1 << 20, File::create(&tmp).unwrap());
    let mut w = writer(format, out, &WriteOptions::default());
    for r in requests(n) {
        w.record(&r).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    std::fs::rename(&tmp, path).unwrap();
}

fn lines_in(path: &Path) -> u64 {
    let data = std::fs::read(path).unwrap();
    memchr_count(&data)
}

fn memchr_count(data: &[u8]) -> u64 {
    data.iter().filter(|b| **b == b'\n').count() as u64
}

fn bench(name: &str, path: &Path, format: Format, lines: Option<u64>) {
    let opts = ReadOptions::default();
    let mut best = f64::MAX;
    let mut records = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let r = open(path, Some(format), &opts).unwrap();
        records = 0;
        for rec in r {
            let rec = rec.unwrap();
            records += 1;
            std::hint::black_box(rec);
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    let size = std::fs::metadata(path).unwrap().len() as f64;
    let lines = lines.unwrap_or(records);
    println!(
        "{name:<10} {records:>10} records {lines:>10} lines  {:>7.3} s  {:>6.1} M lines/s  {:>6.1} M records/s  {:>6.0} MB/s",
        best,
        lines as f64 / best / 1e6,
        records as f64 / best / 1e6,
        size / best / 1e6
    );
}

fn main() {
    // `cargo bench` passes `--bench`; ignore arguments.
    let n: u64 = std::env::var("STORLAB_BENCH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let dir = std::env::temp_dir();
    let file = |ext: &str| -> PathBuf { dir.join(format!("storlab-bench-{n}.{ext}")) };

    let msr = file("msr.csv");
    generate(&msr, Format::Msr, n);
    bench("msr", &msr, Format::Msr, None);

    // Smaller runs of the other formats, for comparison.
    let m = (n / 10).max(1);
    let file = |ext: &str| -> PathBuf { dir.join(format!("storlab-bench-{m}.{ext}")) };
    for (format, ext) in [
        (Format::Fio3, "fio3"),
        (Format::Disksim, "disksim"),
        (Format::Blkparse, "blkparse"),
        (Format::Blktrace, "blktrace.0"),
    ] {
        let p = file(ext);
        generate(&p, format, m);
        let lines = (format != Format::Blktrace).then(|| lines_in(&p));
        bench(format.name(), &p, format, lines);
    }

    let start = Instant::now();
    let s = stats(open(&msr, Some(Format::Msr), &ReadOptions::default()).unwrap()).unwrap();
    println!(
        "stats over msr: {} records in {:.3} s",
        s.count,
        start.elapsed().as_secs_f64()
    );
}
