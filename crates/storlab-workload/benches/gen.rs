//! Speed of the fio IO generator: ns per `next_io` for common job shapes,
//! against a baseline measured in the same run (a bare xorshift step, the
//! least any random-offset generator must do).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use storlab_workload::fio::parse_job_str;
use storlab_workload::gen::JobThread;

const JOBS: &[(&str, &str)] = &[
    (
        "randread",
        "[j]\nrw=randread\nbs=4k\nsize=16g\ntime_based\nruntime=1h\n",
    ),
    (
        "randrw-bssplit",
        "[j]\nrw=randrw\nbssplit=4k/50:64k/50\nsize=16g\ntime_based\nruntime=1h\n",
    ),
    (
        "zipf",
        "[j]\nrw=randread\nbs=4k\nsize=16g\nrandom_distribution=zipf:1.2\ntime_based\nruntime=1h\n",
    ),
    (
        "seqwrite-fsync",
        "[j]\nrw=write\nbs=4k\nsize=16g\nfsync=8\n",
    ),
];

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("next_io");
    g.bench_function("baseline_xorshift", |b| {
        let mut x = 0x9e3779b97f4a7c15u64;
        b.iter(|| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            black_box(x)
        })
    });
    for (name, text) in JOBS {
        let f = parse_job_str("bench.fio", text).expect("job parses");
        let mut t = JobThread::new(&f.jobs[0], 0, 1 << 40, 1).expect("thread");
        g.bench_function(*name, |b| b.iter(|| black_box(t.next_io())));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
