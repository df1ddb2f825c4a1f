//! The file-system study: every row either holds or misses for a stated
//! reason, the row count, and the shapes the mechanisms must give whatever
//! the tolerances: XFS costs random writes far more than reads, on the
//! fast devices far more than on the disks.

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
}
