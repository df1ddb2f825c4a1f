//! Streaming: replaying a trace ten times longer must not need more memory.
//! A counting allocator measures the peak of live heap bytes during each
//! replay; a source that kept records (or per-request state past
//! completion) would grow by tens of bytes per request.

mod replay_support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use replay_support::*;
use storlab_sim::replay::{ReplayMode, ReplayOptions};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(now, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// An MSR trace of `n` requests, one every 2 µs, with varied sizes,
/// offsets (some past a 64 GiB device) and response times.
fn write_trace(path: &std::path::Path, n: u64) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    for i in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let op = if s & 1 == 0 { "Read" } else { "Write" };
        let offset = (s >> 8) % (1 << 27) * 4096;
        let len = 4096 << (s >> 60 & 3);
        let resp = 50 + (s >> 40) % 2000;
        writeln!(
            w,
            "{},h,0,{op},{offset},{len},{resp}",
            128_166_372_000_000_000 + i * 20
        )
        .unwrap();
    }
}

/// Peak live heap bytes above what was live before, while replaying.
fn peak_during(path: &std::path::Path, mode: ReplayMode) -> usize {
    let opts = ReplayOptions {
        mode,
        iodepth: 32,
        ..ReplayOptions::default()
    };
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let r = try_replay("null", FIXED_1US, path, &opts).expect("replay runs");
    let peak = PEAK.load(Relaxed) - base;
    assert!(r.jobs[0].rw_ios() > 0);
    drop(r);
    peak
}

#[test]
fn memory_does_not_grow_with_trace_length() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.msr.csv");
    let long = dir.path().join("long.msr.csv");
    // both well past the reader's largest buffer (1 MiB), so the buffers
    // are the same size in both runs
    write_trace(&short, 40_000);
    write_trace(&long, 400_000);
    for mode in [ReplayMode::Timed, ReplayMode::Afap] {
        let a = peak_during(&short, mode);
        let b = peak_during(&long, mode);
        // 360,000 more requests: keeping even one byte each would show
        assert!(
            b <= a + 64 * 1024,
            "{mode}: peak {a} bytes for 40k requests, {b} for 400k"
        );
        assert!(b < 8 << 20, "{mode}: {b} bytes peak");
    }
}
