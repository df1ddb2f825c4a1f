//! The file-system study: every row either holds or misses for a stated
//! reason, the row count, and the shapes the mechanisms must give whatever
//! the tolerances: XFS costs random writes far more than reads, on the
//! fast devices far more than on the disks; ext3's i_mutex costs the fast
//! devices' sequential bandwidth far more than XFS, the disks' not.

mod support;
use support::reproduce;

#[test]
fn filesystems_rows_hold_or_say_why() {
    let (r, table) = reproduce("filesystems");
    assert_eq!(r.rows.len(), 21, "{table}");
    let row = |what: &str| {
        r.rows
            .iter()
            .find(|row| row.what == what)
            .unwrap_or_else(|| panic!("no row {what}"))
    };
    let value = |what: &str| row(what).value.expect("a numeric row");
    // random writes through XFS lose most of their bandwidth on the fast
    // devices, reads much less
    let w = value("ddr-dram, 4 KB random writes: XFS loses");
    let rd = value("ddr-dram, 4 KB random reads: XFS loses");
    assert!(w > 90.0 && rd < w, "writes {w}%, reads {rd}%");
    assert!(value("haste-dram, 4 KB random writes: XFS loses") > 50.0);
    // ext3's i_mutex (writes, and direct reads while they submit) costs
    // the fast devices far more than XFS; on the disk-bound RAID it
    // costs next to nothing (its mapping blocks are cached)
    let ext3 = value("fast devices (haste-dram, ddr-dram), sequential bandwidth through ext3");
    let xfs = -value("fast devices (haste-dram, ddr-dram), sequential bandwidth through XFS");
    assert!(
        ext3 > 40.0 && ext3 > 10.0 * xfs.max(0.1),
        "ext3 {ext3}%, XFS {xfs}%"
    );
    assert!(row("raid-disk, ext3 against XFS").pass, "{table}");
}

/// The SSD RAID's runs read flash, not the mapping table of a fresh
/// drive: the study's drives were in use and XDD wrote its files before
/// reading them (the study's module doc).
#[test]
fn ssd_raid_runs_read_flash() {
    use storlab_lab::studies::filesystems::{latency, xdd};
    for spec in [
        latency("raid-ssd", None, "randread", 20),
        latency("raid-ssd", Some("xfs"), "randread", 20),
        xdd("raid-ssd", None, "randrw"),
    ] {
        let run = spec.run().expect("the run");
        assert_eq!(
            run.counter_sum("unmapped_reads"),
            0.0,
            "{:?}: reads answered from the mapping table",
            spec.overrides
        );
        assert!(run.lat_us(0) > 0.0);
    }
}
