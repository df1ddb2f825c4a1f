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
