//! hybrid.md, placement 1: flash as a disk cache over the study's array,
//! through the whole host path with fio jobs. A hot working set is read at
//! flash latency once cached; write-through writes are no faster than the
//! disks; write-back writes are as fast as the flash.

mod support;
use support::*;

/// 4 KB random accesses over a 64 MiB working set, 1 GiB of IO at queue
/// depth 8 (the set is read about 16 times over).
fn hot(device: &str, rw: &str) -> Run {
    run(
        device,
        &[],
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--size=64m",
            "--io_size=1g",
            "--norandommap",
            "--iodepth=8",
        ],
    )
}

#[test]
fn a_cached_working_set_reads_at_flash_speed() {
    let disks = hot("raid-hdd2", "randread");
    let flash = hot("fusion-io", "randread");
    let cached = hot("flash-cache-wt", "randread");
    let hits = cached.counter("tier_read_hit_ratio");
    assert!(hits > 0.9, "the set fits: hit ratio {hits}");
    let p50 = |r: &Run| r.stats.dirs[0].percentile(50.0) as f64;
    assert!(
        p50(&cached) < 1.5 * p50(&flash),
        "median read {} ns on the cache vs {} ns on flash",
        p50(&cached),
        p50(&flash)
    );
    assert!(
        cached.iops(0) > 10.0 * disks.iops(0),
        "cache {} IOPS vs disks {}",
        cached.iops(0),
        disks.iops(0)
    );
}

#[test]
fn write_through_gives_no_write_speed_up_and_write_back_does() {
    let disks = hot("raid-hdd2", "randrw");
    let wt = hot("flash-cache-wt", "randrw");
    let wb = hot("flash-cache-wb", "randrw");
    // write-through: every write waits for the disks
    assert!(
        wt.lat_us(1) >= 0.9 * disks.lat_us(1),
        "write-through writes {:.0} us vs the disks' {:.0} us",
        wt.lat_us(1),
        disks.lat_us(1)
    );
    assert_eq!(wt.counter("tier_writes_cached"), 0.0);
    // write-back: acknowledged from flash, destaged behind
    assert!(
        wb.lat_us(1) * 5.0 < wt.lat_us(1),
        "write-back writes {:.0} us vs write-through {:.0} us",
        wb.lat_us(1),
        wt.lat_us(1)
    );
    assert!(wb.counter("tier_destages") > 0.0);
    assert!(wb.total_mbps() > 5.0 * wt.total_mbps());
}

/// hybrid.md's thrash on the simulator: 16 threads each updating random
/// 64-byte entries of its own `per_thread` part; updates per second.
fn thrash(device: &str, overrides: &[&str], per_thread: &str) -> (f64, Run) {
    let r = sim(Spec::new(
        device,
        overrides,
        &[
            "--name=thrash",
            "--rw=randwrite",
            "--bs=64",
            &format!("--size={per_thread}"),
            &format!("--offset_increment={per_thread}"),
            "--numjobs=16",
            "--io_size=1m",
            "--norandommap",
        ],
    ));
    (r.iops(1), r)
}

#[test]
fn hybrid_memory_slows_as_the_working_set_outgrows_dram() {
    // 64 MiB of DRAM in front of the flash
    let small_dram = ["tier.cache_bytes=67108864"];
    let (dram, _) = thrash("dram-mem", &[], "16m");
    let (fits, f) = thrash("hybrid-mem", &small_dram, "2m");
    let (over, o) = thrash("hybrid-mem", &small_dram, "16m");
    assert!(
        fits < dram && over < fits,
        "DRAM {dram:.0}, fits {fits:.0}, 4x over {over:.0} updates/s"
    );
    assert!(fits > 5.0 * over, "fits {fits:.0} vs 4x over {over:.0}");
    // fitting: only first touches fault; over: most updates fault, and the
    // pages they dirtied are written back to flash (both directions used)
    let hit = |r: &Run| 1.0 - r.counter("tier_write_allocs") / r.stats.dirs[1].ios() as f64;
    assert!(hit(&f) > 0.9, "fits: {}", hit(&f));
    assert!(hit(&o) < 0.5, "over: {}", hit(&o));
    assert!(o.counter("tier_destages") > 0.5 * o.counter("tier_write_allocs"));
    // the flash sees the page-ins as reads and the write-backs as writes
    assert!(o.counter("backing.nand_reads") > 0.0);
    assert_eq!(
        o.counter("backing.host_units_written"),
        o.counter("tier_destages")
    );
}
