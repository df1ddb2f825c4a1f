//! Each peer preset against its rated figures: sequential bandwidth and
//! queue-depth-1 latency (docs/spec/peer-devices.md and the manufacturers'
//! datasheets), through the host stack with fio jobs.
//!
//! Tolerances, and why:
//! - Calibrated figures (the preset fits a parameter to them and says so):
//!   ±10%, which only checks that nothing else in the path (host, link,
//!   NAND, GC) limits the device below its calibrated bottleneck.
//! - Figures the model derives from other parameters: ±15% for bandwidth
//!   (zone rates, striping and link overheads compound), ±10% for a disk's
//!   positioning time (fitted seek curve plus the rotational average).
//! - Rated SSD latencies, compared with the device's share of the latency
//!   (the host stack removed, as the rating is for the drive): ±40% for the
//!   X25-E and +50% for the ioDrive. The manufacturers do not say how they
//!   measured (transfer size, pattern, host); the model's reads are bound by
//!   physics it takes from the spec (docs/spec/media.md: a 25 us SLC array read, plus
//!   the bus transfer), and its writes by the calibrated controller, so a
//!   rating that sits between a buffered write and a NAND read cannot be
//!   hit by both; the ioDrive's 26 us is barely above the array read alone.

mod support;
use support::*;

fn seq(device: &str, ov: &[&str], rw: &str, bs: &str, qd: u32, n: u32) -> Run {
    run(
        device,
        ov,
        &[
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            &format!("--iodepth={qd}"),
            &format!("--number_ios={n}"),
        ],
    )
}

fn qd1(device: &str, ov: &[&str], rw: &str, n: u32) -> Run {
    run(
        device,
        ov,
        &[
            &format!("--rw={rw}"),
            "--bs=4k",
            "--iodepth=1",
            &format!("--number_ios={n}"),
        ],
    )
}

#[test]
fn x25e_rated_figures() {
    let ov = full(SMALL_X25E);
    // Intel: 250 MB/s sequential reads, 170 MB/s sequential writes (calibrated)
    within(
        "X25-E sequential read MB/s",
        seq("x25e", &ov, "read", "128k", 4, 2000).mbps(0),
        250.0,
        0.10,
    );
    within(
        "X25-E sequential write MB/s",
        seq("x25e", SMALL_X25E, "write", "128k", 4, 2000).mbps(1),
        170.0,
        0.10,
    );
    // Intel: 35,000 random 4 KB read IOPS (calibrated)
    within(
        "X25-E random 4 KB read IOPS",
        seq("x25e", &ov, "randread", "4k", 32, 40000).iops(0),
        35000.0,
        0.10,
    );
    // Intel: 75 us read, 85 us write latency
    within(
        "X25-E QD1 read latency, device us",
        qd1("x25e", &ov, "randread", 2000).device_us(0),
        75.0,
        0.40,
    );
    within(
        "X25-E QD1 write latency, device us",
        qd1("x25e", &ov, "randwrite", 2000).device_us(1),
        85.0,
        0.40,
    );
}

#[test]
fn fusion_io_rated_figures() {
    let ov = full(SMALL_FUSION);
    // docs/spec/peer-devices.md: 750 MB/s reads, 500 MB/s writes (calibrated DMA rate)
    within(
        "ioDrive sequential read MB/s",
        seq("fusion-io", &ov, "read", "1m", 8, 600).mbps(0),
        750.0,
        0.10,
    );
    within(
        "ioDrive sequential write MB/s",
        seq("fusion-io", SMALL_FUSION, "write", "1m", 8, 600).mbps(1),
        500.0,
        0.10,
    );
    // docs/spec/peer-devices.md: 26 us read latency; the array read alone is 25 us
    let lat = qd1("fusion-io", &ov, "randread", 2000).device_us(0);
    eprintln!("ioDrive QD1 read latency, device us: model {lat:.2}, rated 26");
    assert!(
        (26.0..=39.0).contains(&lat),
        "ioDrive QD1 read latency {lat:.1} us, device; rated 26 us (+50%)"
    );
    // Tom's Hardware's reading of the datasheet: over 100,000 random 4 KB
    // IOPS. That is the card on Fusion-io's own host: part of its driver's
    // work runs on one worker thread per card (host.driver_worker_share),
    // on the preset's host (the Moneta study's 2.26 GHz cores) about 92k
    // a second (Table III). The card's hardware, without the worker's
    // bound, must reach the rating; with it, this host's rate.
    let job = [
        "--rw=randread",
        "--bs=4k",
        "--iodepth=16",
        "--numjobs=8",
        "--number_ios=10000",
    ];
    let mut card = ov.to_vec();
    card.push("host.driver_worker_share=0");
    let iops = run("fusion-io", &card, &job).iops(0);
    eprintln!("ioDrive random 4 KB read IOPS, card alone: model {iops:.0}, rated >100000");
    assert!(iops > 100_000.0, "ioDrive random 4 KB read IOPS {iops:.0}");
    let host = run("fusion-io", &ov, &job).iops(0);
    eprintln!("ioDrive random 4 KB read IOPS on the Moneta host: model {host:.0}");
    assert!(
        (80_000.0..100_000.0).contains(&host),
        "ioDrive random 4 KB read IOPS on the Moneta host {host:.0}"
    );
}

#[test]
fn hdd_rated_figures() {
    // Hitachi spec: 8.2 ms average seek + 4.17 ms average rotational latency
    let r = qd1("hdd-7200", &[], "randread", 1500);
    within(
        "HDD QD1 random read latency, ms",
        r.lat_us(0) / 1000.0,
        8.2 + 4.17,
        0.10,
    );
    // outer-zone sustained rate about 105 MB/s (the preset's estimate)
    within(
        "HDD sequential read MB/s (outer zone)",
        seq("hdd-7200", &[], "read", "1m", 4, 400).mbps(0),
        105.0,
        0.15,
    );
    within(
        "HDD sequential write MB/s (outer zone)",
        seq("hdd-7200", &[], "write", "1m", 4, 400).mbps(1),
        105.0,
        0.15,
    );
    // software is a sliver of a disk's latency (docs/spec/pcie-arrays.md: about 1% for the disk array)
    assert!(
        r.software_share(0) < 0.02,
        "software share {:.4}",
        r.software_share(0)
    );
}

#[test]
fn raid_ssd_rated_figures() {
    let ov = with(SMALL_RAID_SSD, &["raid.member_set=[\"device.capacity_bytes=536870912\", \"ssd.nand.blocks_per_plane=64\", \"ssd.ftl.precondition=\\\"full\\\"\"]"]);
    // docs/spec/peer-devices.md: about 1 GB/s peak for the four drives (4 x 250 MB/s)
    within(
        "RAID-SSD sequential read MB/s",
        seq("raid-ssd", &ov, "read", "1m", 8, 1000).mbps(0),
        1000.0,
        0.15,
    );
    within(
        "RAID-SSD sequential write MB/s",
        seq("raid-ssd", SMALL_RAID_SSD, "write", "1m", 8, 1000).mbps(1),
        680.0,
        0.15,
    );
    // one 4 KB access touches one drive: the drive's latency plus md's remap
    let raid = qd1("raid-ssd", &ov, "randread", 2000);
    let one = qd1("x25e", &full(SMALL_X25E), "randread", 2000);
    within(
        "RAID-SSD vs X25-E QD1 read latency",
        raid.lat_us(0) / one.lat_us(0),
        1.0,
        0.02,
    );
    within(
        "RAID-SSD QD1 read latency, device us",
        raid.device_us(0),
        75.0,
        0.40,
    );
    // docs/spec/pcie-arrays.md: software is 17% of the SSD array's latency
    within(
        "RAID-SSD software share",
        raid.software_share(0),
        0.17,
        0.50,
    );
}

#[test]
fn raid_disk_rated_figures() {
    // four disks' outer-zone rate, through the 3ware's 1 GB/s link
    within(
        "RAID-disk sequential read MB/s",
        seq("raid-disk", &[], "read", "1m", 8, 800).mbps(0),
        4.0 * 105.0,
        0.15,
    );
    // (4 GB, so the 256 MB write-back cache adds little to the disks' rate)
    within(
        "RAID-disk sequential write MB/s",
        seq("raid-disk", &[], "write", "1m", 8, 4000).mbps(1),
        4.0 * 105.0,
        0.15,
    );
    // a random 4 KB read costs one disk's positioning plus the controller
    let r = qd1("raid-disk", &[], "randread", 1500);
    within(
        "RAID-disk QD1 random read latency, ms",
        r.lat_us(0) / 1000.0,
        8.2 + 4.17,
        0.10,
    );
    // docs/spec/pcie-arrays.md: software is about 1% of the disk array's latency
    assert!(
        r.software_share(0) < 0.02,
        "software share {:.4}",
        r.software_share(0)
    );
    // the controller's write-back cache acknowledges random writes at once
    let w = qd1("raid-disk", &[], "randwrite", 1000);
    assert!(
        w.lat_us(1) < 100.0,
        "RAID-disk QD1 write latency {:.1} us (cached)",
        w.lat_us(1)
    );
}

#[test]
fn micron_psd_moves_4k_blocks_at_its_link_and_ranks() {
    // no rated figures in the spec; what the parameters imply: of the 12
    // ranks, one per board (3) may program at once (the program budget,
    // ssd.nand.programs_per_channel = 1), so 4 KB programs in 120 us bound
    // writes near 100 MB/s; reads are bound by the boards' share of the
    // PCIe x8 link (2 GB/s)
    let w = run(
        "micron-psd",
        &[],
        &[
            "--rw=write",
            "--bs=128k",
            "--iodepth=16",
            "--numjobs=4",
            "--size=1g",
            "--number_ios=2000",
        ],
    );
    within(
        "PSD sequential write MB/s",
        w.mbps(1),
        3.0 * 4096.0 / 0.000_121 / 1e6,
        0.15,
    );
    let r = run(
        "micron-psd",
        &[],
        &[
            "--rw=read",
            "--bs=128k",
            "--iodepth=16",
            "--numjobs=4",
            "--size=1g",
            "--number_ios=2000",
        ],
    );
    within("PSD sequential read MB/s", r.mbps(0), 2000.0, 0.15);
}
