//! spec/targets.md, HASTE and DDR rows: one thread, random 4 KB, raw device.

mod common;
use common::*;

#[test]
fn haste_latency_is_15_to_16us_nearly_equal_across_media() {
    let mut all = Vec::new();
    for dev in ["haste-dram", "haste-sttm", "haste-pcm"] {
        for (rw, d) in [("randread", 0), ("randwrite", 1)] {
            let l = lat_us(&qd1(dev, &[], rw, "4k", 500), d);
            within(&format!("{dev} {rw} latency (us)"), l, 15.5, 0.15);
            all.push(l);
        }
    }
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(
        hi / lo < 1.05,
        "HASTE latencies should be nearly equal across media: {all:?}"
    );
}

#[test]
fn ddr_dram_is_3us() {
    for (rw, d) in [("randread", 0), ("randwrite", 1)] {
        within(
            &format!("ddr-dram {rw} latency (us)"),
            lat_us(&qd1("ddr-dram", &[], rw, "4k", 500), d),
            3.0,
            0.20,
        );
    }
}

#[test]
fn ddr_nvm_above_dram_writes_more_than_reads() {
    let dram = [
        lat_us(&qd1("ddr-dram", &[], "randread", "4k", 300), 0),
        lat_us(&qd1("ddr-dram", &[], "randwrite", "4k", 300), 1),
    ];
    for dev in ["ddr-sttm", "ddr-pcm"] {
        let r = lat_us(&qd1(dev, &[], "randread", "4k", 300), 0) - dram[0];
        let w = lat_us(&qd1(dev, &[], "randwrite", "4k", 300), 1) - dram[1];
        assert!(
            r > 0.0 && w > r,
            "{dev}: read +{r:.3} us, write +{w:.3} us over ddr-dram"
        );
    }
}

#[test]
fn media_latency_sweep_hurts_ddr_much_more_than_haste() {
    let lat = |dev: &str, ns: u64| {
        let o = format!("media.read_ns={ns}");
        lat_us(&qd1(dev, &[&o], "randread", "4k", 200), 0)
    };
    let mut ns = 25u64;
    let mut crossed = false;
    let (h0, d0) = (lat("haste-dram", 25), lat("ddr-dram", 25));
    while ns <= 51_200 {
        let (h, d) = (lat("haste-dram", ns), lat("ddr-dram", ns));
        if ns >= 1600 {
            assert!(
                d - d0 > 2.0 * (h - h0),
                "at {ns} ns: DDR +{:.1} us vs HASTE +{:.1} us",
                d - d0,
                h - h0
            );
        }
        crossed |= d > h;
        ns *= 2;
    }
    assert!(
        crossed,
        "for slow enough media DDR-attached latency should exceed the PCIe array's"
    );
}
