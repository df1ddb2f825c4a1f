//! The `devices` study: flash placement table 1, the PSD and SATA SSD
//! findings, the Moneta power figure and the latency-spread rows, each
//! published number a row; and the PSD's 50/50 depth curve.

mod support;
use support::reproduce;

use storlab_lab::studies::devices;

#[test]
fn devices_rows_and_psd_mix_curve() {
    let (r, _) = reproduce("devices");
    assert_eq!(r.rows.len(), 18, "every published number of the sections");
    // inputs are only the card's rated bandwidths, its driver's host cost
    // (calibrated on the 15 µs write), the calibrated idle memory power,
    // the PSD host's software factor (calibrated on the 19x write / read gap)
    // and the disk's write-through staging (chosen on its 45 MB/s writes)
    let inputs: Vec<&str> = r
        .rows
        .iter()
        .filter(|x| x.input.is_some())
        .map(|x| x.what.as_str())
        .collect();
    assert_eq!(inputs.len(), 6, "{inputs:?}");
    // the read latency is then a prediction, and holds
    let read = r
        .rows
        .iter()
        .find(|x| x.what == "placement-flash, QD1 4 KB random read latency")
        .expect("placement read row");
    assert!(read.pass && read.input.is_none(), "{}", read.model);
    // the disk with its write cache off takes a write's data only when it
    // starts the command (disk.write_through_staging off, the model test in
    // peer_devices.rs): each 512 KB piece of a 1 MB write loses about a
    // revolution (8.3 ms beside 4.7 ms of transfer), so it writes a
    // sequential stream at about a third of its read rate
    let val = |w: &str| {
        r.rows
            .iter()
            .find(|x| x.what.starts_with(w))
            .and_then(|x| x.value)
            .expect(w)
    };
    let (rd, wr) = (
        val("hdd-7200, 1 MB sequential reads"),
        val("hdd-7200, 1 MB sequential writes"),
    );
    assert!(
        wr > 0.25 * rd && wr < 0.5 * rd,
        "writes {wr} MB/s against reads {rd} MB/s"
    );
    // the spread rows hold: a QD1 latency is no longer one number
    for row in r.rows.iter().filter(|x| x.what.contains("p99 / p50")) {
        assert!(row.pass, "{}: {}", row.what, row.model);
    }
    // the 50/50 curve: one point per depth, rising to a plateau (more
    // depth never costs more than queueing noise)
    let f = &r.figures[0];
    let s = f.series("50/50", "micron-psd").expect("the curve");
    let xs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
    let want: Vec<f64> = devices::MIX_DEPTHS.iter().map(|&q| q as f64).collect();
    assert_eq!(xs, want);
    for w in s.points.windows(2) {
        assert!(w[1].1 >= w[0].1 * 0.98, "{:?}", s.points);
    }
    assert!(
        s.points[7].1 > 2.0 * s.points[0].1,
        "depth helps: {:?}",
        s.points
    );
}

#[test]
fn moneta_power_components_add_up() {
    use storlab_lab::measure::{Plan, Spec};
    let mut p = Plan::new();
    let id = p.add(Spec::xdd("moneta-balance", &[], "randwrite", "8k", 200));
    let r = p.run(&|| {}).expect("runs");
    let run = &r[id];
    let total = devices::power_w(run, "");
    let parts = ["scheduler", "ring", "memory_controller", "pcie", "media"]
        .iter()
        .map(|c| devices::power_w(run, c))
        .sum::<f64>();
    assert!((total - parts).abs() < 1e-9, "{total} vs {parts}");
    // the memory share is the PCM's: array, row buffers, background
    let mem = devices::power_w(run, "media");
    assert!(mem > 0.0 && mem < total / 2.0, "{mem} of {total}");
}
