//! The paging study: thrash through Linux's swap path on each device
//! (64 MiB of DRAM standing for the study's 8 GB; see `studies::paging`).

mod support;
use support::reproduce;

use storlab_lab::studies::paging;

#[test]
fn paging_rows_and_curves() {
    let (rep, _) = reproduce("paging");
    // slowdowns (disk RAID; SSD RAID, Fusion-io; PCM and STTM on DDR and
    // in HASTE), HASTE's three levelling rates, the ordering
    assert_eq!(rep.rows.len(), 1 + 2 + 4 + 3 + 1, "{:?}", rep.rows);
    let f = &rep.figures[0];
    let series = &f.panels[0].series;
    assert_eq!(series.len(), paging::DEVICES.len());
    for s in series {
        let y: Vec<f64> = s.points.iter().map(|p| p.1).collect();
        assert_eq!(y.len(), paging::RATIOS.len(), "{}", s.label);
        // an array half of DRAM does not page: DRAM speed
        assert!(y[0] > 0.95, "{}: {y:?}", s.label);
        // beyond DRAM every device pages, orders of magnitude slower
        assert!(y[2] < 0.01, "{}: {y:?}", s.label);
        // and the larger the array, the slower (more faults per update)
        assert!(y.windows(2).all(|w| w[1] < w[0]), "{}: {y:?}", s.label);
    }
    // the RAM disks page at the study's 516-683x: reclaim's shootdowns
    // (unmapping and clearing young bits) in the anon_vma lock bound them
    for name in ["ddr-pcm", "ddr-sttm"] {
        let row = rep
            .rows
            .iter()
            .find(|r| r.what.starts_with(name))
            .expect("DDR row");
        assert!(row.pass, "{row:?}");
    }
    // the ordering row decides on figures: it must hold
    let order = rep
        .rows
        .iter()
        .find(|r| r.what.starts_with("ordering"))
        .expect("ordering row");
    assert!(order.pass, "{order:?}");
}

#[test]
fn the_haste_configurations_page_alike() {
    // the media differ by tens of ns on a path of hundreds of µs
    let r: Vec<f64> = ["haste-dram", "haste-pcm", "haste-sttm"]
        .iter()
        .map(|d| paging::run(Some(d), 4.0).expect("runs").accesses_per_s)
        .collect();
    let (lo, hi) = r
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    assert!(hi / lo < 1.05, "{r:?}");
}
