//! Zoned flash (issue 63): the ZN540-class drive's zone rules, the errors
//! it returns in fio's `error` field, fio's zonemode=zbd host handling
//! with its open-zone limit, and write amplification 1.0 when the host
//! resets whole zones.

mod common;

use common::counter;

use storlab_sim::stats::JobStats;

const MIB: u64 = 1 << 20;

fn jobs(overrides: &[String], fio: &[&str]) -> Vec<JobStats> {
    common::jobs("zn540", overrides, fio)
}

/// zn540 shrunk: `zones` zones of 64 MiB with 32 MiB writable, blocks of
/// 64 pages (1 MiB, so a zone fills one block on each of the 32 planes),
/// `blocks` a plane. The open and active limits stay the preset's (14).
fn small(zones: u64, blocks: u64) -> Vec<String> {
    vec![
        format!("device.capacity_bytes={}", zones * 64 * MIB),
        format!("ssd.zns.zone_bytes={}", 64 * MIB),
        format!("ssd.zns.zone_capacity_bytes={}", 32 * MIB),
        format!("ssd.nand.blocks_per_plane={blocks}"),
        "ssd.nand.pages_per_block=64".to_string(),
    ]
}

#[test]
fn zbd_random_writes_keep_to_the_drives_open_zone_limit() {
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=zr",
            "--rw=randwrite",
            "--bs=16k",
            "--iodepth=8",
            "--ioengine=libaio",
            "--direct=1",
            "--zonemode=zbd",
            "--io_size=256m",
        ],
    )[0];
    assert_eq!(j.error, 0, "{:?}", j.error_detail);
    assert_eq!(j.dirs[1].io_bytes(), 256 * MIB);
    // fio's write-zone set reached the drive's limit and never passed it
    assert_eq!(counter(j, "zone_open_max_seen"), 14.0);
    assert_eq!(counter(j, "zone_errors"), 0.0);
}

#[test]
fn a_max_open_zones_above_the_drives_is_fios_einval() {
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=zr",
            "--rw=randwrite",
            "--bs=16k",
            "--zonemode=zbd",
            "--max_open_zones=20",
            "--io_size=16m",
        ],
    )[0];
    assert_eq!(j.error, 22);
    let detail = j.error_detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("max_open_zones (20) is larger than max (14)"),
        "{detail}"
    );
    assert_eq!(j.dirs[1].io_bytes(), 0);
    // a limit within the drive's runs
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=zr",
            "--rw=randwrite",
            "--bs=16k",
            "--zonemode=zbd",
            "--max_open_zones=4",
            "--io_size=64m",
        ],
    )[0];
    assert_eq!(j.error, 0);
    assert_eq!(counter(j, "zone_open_max_seen"), 4.0);
}

#[test]
fn writes_that_break_the_zone_rules_get_the_drives_error() {
    // random writes without zonemode=zbd: not at the write pointer, Zone
    // Invalid Write, which Linux returns as EIO
    let j = &jobs(
        &small(64, 128),
        &["--name=r", "--rw=randwrite", "--bs=4k", "--size=256m"],
    )[0];
    assert_eq!(j.error, 5, "{:?}", j.error_detail);
    assert!(j
        .error_detail
        .as_deref()
        .unwrap()
        .contains("Input/output error"));
    // 4 KiB at the start of one zone after another: the fifteenth zone
    // would be the fifteenth active one, Too Many Active Zones (EOVERFLOW)
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=z",
            "--rw=write",
            "--bs=4k",
            "--zonemode=strided",
            "--zonesize=4k",
            "--zonerange=64m",
            "--size=4g",
        ],
    )[0];
    assert_eq!(j.error, 75, "{:?}", j.error_detail);
    assert_eq!(j.dirs[1].io_bytes(), 14 * 4096);
}

#[test]
fn whole_zone_resets_keep_write_amplification_at_one() {
    // 1 GiB of zone capacity on 2 GiB of flash, written six times over in
    // sequence: fio resets each zone before it writes it again, and the
    // drive erases whole blocks without moving a page
    let j = &jobs(
        &small(32, 64),
        &[
            "--name=zs",
            "--rw=write",
            "--bs=128k",
            "--iodepth=4",
            "--ioengine=libaio",
            "--direct=1",
            "--zonemode=zbd",
            "--io_size=6g",
        ],
    )[0];
    assert_eq!(j.error, 0, "{:?}", j.error_detail);
    assert!(counter(j, "zone_resets") >= 150.0);
    assert!(counter(j, "erases") > 1000.0, "{}", counter(j, "erases"));
    assert_eq!(counter(j, "gc_units_moved"), 0.0);
    assert_eq!(counter(j, "write_amplification"), 1.0);
}
