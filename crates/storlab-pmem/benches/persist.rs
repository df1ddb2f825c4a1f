//! Criterion benchmarks of the runtime's building blocks: one persist per
//! flush mode, and a one-page SPF sync (the dirty-tracking round trip).
//! The study's experiment itself is `storlab pmem msync-bench`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use storlab_pmem::{cpu_features, FlushMode, Region, RegionOptions, SyncMode};

fn persist_one_line(c: &mut Criterion) {
    let mut g = c.benchmark_group("persist_64B");
    for mode in FlushMode::ALL {
        if !cpu_features().supports(mode) {
            continue;
        }
        let mut r = Region::map(&RegionOptions::memfd(1 << 20).flush_mode(mode)).expect("map");
        let mut i = 0u64;
        g.bench_function(mode.name(), |b| {
            b.iter(|| {
                let off = (i * 64) % (1 << 20);
                i += 1;
                r.as_mut_slice()[off as usize] = i as u8;
                r.persist(black_box(off), 64).expect("persist");
            })
        });
    }
    g.finish();
}

fn spf_sync_one_page(c: &mut Criterion) {
    let mut r = Region::map(
        &RegionOptions::memfd(16 << 20)
            .flush_mode(FlushMode::Clflush)
            .sync_mode(SyncMode::Spf),
    )
    .expect("map");
    let name = format!("spf_sync_16MiB_one_dirty_page_{}", r.tracking());
    let mut i = 0u64;
    c.bench_function(&name, |b| {
        b.iter(|| {
            let off = (i * 4096) % (16 << 20);
            i += 1;
            r.as_mut_slice()[off as usize] = i as u8;
            r.sync(0, 16 << 20).expect("sync");
        })
    });
}

criterion_group!(benches, persist_one_line, spf_sync_one_page);
criterion_main!(benches);
