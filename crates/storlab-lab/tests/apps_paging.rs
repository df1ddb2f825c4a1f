//! The apps-paging study: NPB and DGEMM paging with 8 GB of DRAM (64 MiB
//! at the study's 1/128 scale) on each swap device.

mod support;
use support::reproduce;

use storlab_lab::studies::apps_paging;

#[test]
fn apps_paging_rows_and_figure() {
    let (rep, _) = reproduce("apps-paging");
    // disk RAID smallest and largest, SSD RAID, Fusion-io, HASTE, DDR;
    // Table V's five Moneta figures
    assert_eq!(rep.rows.len(), 2 + 2 + 2 + 5, "{:?}", rep.rows);
    assert!(rep.failures().is_empty(), "{:?}", rep.failures());
    let f = &rep.figures[0];
    let series = &f.panels[0].series;
    assert_eq!(series.len(), apps_paging::DEVICES.len());
    let of = |label: &str| {
        series
            .iter()
            .find(|s| s.label == label)
            .expect("series")
            .points
            .iter()
            .map(|p| p.1)
            .collect::<Vec<f64>>()
    };
    let disk = of("disk RAID");
    let ssd = of("SSD RAID");
    let haste = of("HASTE PCM");
    for p in 0..apps_paging::NPB {
        // paging slows every NPB program, the disk RAID most
        assert!(haste[p] > 1.0, "{p}: {haste:?}");
        assert!(
            disk[p] > ssd[p] && ssd[p] > haste[p],
            "{p}: {disk:?} {ssd:?} {haste:?}"
        );
    }
}
