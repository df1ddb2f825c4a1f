//! `next_io` allocates nothing, so memory cannot grow with the number of
//! IOs. (Its speed is measured by `cargo bench -p storlab-workload`.)

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::no_env;
use storlab_workload::fio::parse_job_str_with_env;
use storlab_workload::gen::JobThread;

/// Counts the allocations of the current thread only (the test harness
/// allocates on its own threads meanwhile).
struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> usize {
    ALLOCS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const JOBS: &[&str] = &[
    "rw=randread bs=4k",
    "rw=randrw rwmixread=70 bssplit=4k/50:64k/30:1m/20",
    "rw=rw bsrange=4k-64k",
    "rw=randwrite fsync=8 random_distribution=zipf:1.2",
    "rw=randread random_distribution=pareto:0.2",
    "rw=randread random_distribution=normal:10",
    "rw=randread random_distribution=zoned:60/10:30/20:10/70",
    "rw=randtrimwrite bs=16k",
    "rw=randread:8 percentage_random=50 blockalign=512",
];

fn thread(body: &str) -> JobThread {
    let text = format!(
        "[t]\n{}\nsize=64g\ntime_based\nruntime=1\n",
        body.replace(' ', "\n")
    );
    let jf = parse_job_str_with_env("alloc.fio", &text, &no_env).unwrap();
    JobThread::new(&jf.jobs[0], 0, 1 << 40, 1).unwrap()
}

#[test]
fn next_io_does_not_allocate() {
    for body in JOBS {
        let mut t = thread(body);
        // Several passes of a small random map too.
        let before = allocs();
        let mut sum = 0u64;
        for _ in 0..200_000 {
            sum = sum.wrapping_add(t.next_io().map_or(0, |io| io.offset));
        }
        let after = allocs();
        assert_eq!(after - before, 0, "{body}: {} allocations", after - before);
        assert_ne!(sum, 0);
    }
    let text = "[t]\nrw=randread\nbs=4k\nsize=64k\nio_size=64m\n";
    let jf = parse_job_str_with_env("alloc.fio", text, &no_env).unwrap();
    let mut t = JobThread::new(&jf.jobs[0], 0, 1 << 30, 1).unwrap();
    let before = allocs();
    let mut n = 0;
    while t.next_io().is_some() {
        n += 1;
    }
    assert_eq!(n, 16384, "1024 passes of 16 blocks");
    assert_eq!(allocs() - before, 0);
}
