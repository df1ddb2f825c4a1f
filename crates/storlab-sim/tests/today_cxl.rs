//! Today's CXL expander (issue 62): its bandwidth under Intel MLC's
//! traffic of two reads to a write is set by the link's device-to-host
//! direction, which carries each read's data slots and response header
//! and each write's completion header, while the host-to-device direction
//! carries the read requests and the write data (CXL 2.0's 68-byte flits
//! of four 16-byte slots).

mod common;

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::stats::JobStats;

use common::jobs;

/// Bytes read and written by every thread over the longest runtime,
/// bytes per ns (GB/s).
fn total_gbps(js: &[JobStats]) -> f64 {
    let bytes: u64 = js
        .iter()
        .map(|j| j.dirs[0].io_bytes() + j.dirs[1].io_bytes())
        .sum();
    let t = js
        .iter()
        .flat_map(|j| j.runtime_ns)
        .max()
        .expect("a job")
        .max(1);
    bytes as f64 / t as f64
}

fn run(mix: &[&str], overrides: &[String]) -> f64 {
    let mut fio = vec![
        "--name=mlc",
        "--bs=4k",
        "--iodepth=1",
        "--numjobs=16",
        "--norandommap",
        "--size=1g",
        "--number_ios=3000",
    ];
    fio.extend_from_slice(mix);
    total_gbps(&jobs("cxl-type3", overrides, &fio))
}

#[test]
fn two_reads_to_a_write_are_bound_by_the_device_to_host_flits() {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), "cxl-type3", &[]).expect("preset");
    let c = cfg.cxl.expect("a CXL preset");
    let link = (c.link_lanes as u64 * c.lane_bytes_per_s) as f64 / 1e9;
    let slot = c.flit_bytes as f64 / c.slots_per_flit as f64;
    let data = (c.line_bytes / c.slot_bytes) as f64;
    // per three lines: two reads' data and headers and one write's
    // completion header come back to the host
    let to_host =
        2.0 * (data + c.response_header_slots.read as f64) + c.response_header_slots.write as f64;
    let bound = link * 3.0 * c.line_bytes as f64 / (to_host * slot);
    let mixed = run(&["--rw=randrw", "--rwmixread=67"], &[]);
    assert!(
        (mixed - bound).abs() / bound < 0.05,
        "2:1 mix {mixed:.1} GB/s, device-to-host bound {bound:.1} GB/s"
    );
    // reads alone fill that direction with data and headers only: the
    // writes' data rides the other direction, so the mix moves more
    let reads = run(&["--rw=randread"], &[]);
    let read_bound = link * c.line_bytes as f64 / ((data + 1.0) * slot);
    assert!(
        (reads - read_bound).abs() / read_bound < 0.05,
        "reads {reads:.1} GB/s, bound {read_bound:.1} GB/s"
    );
    assert!(mixed > reads * 1.2, "mix {mixed:.1} reads {reads:.1}");
    // twice the lanes, twice the rate (the DRAM behind it still has room)
    let x16 = run(
        &["--rw=randrw", "--rwmixread=67"],
        &["cxl.link_lanes=16".to_string()],
    );
    assert!(
        x16 > mixed * 1.6,
        "x16 {x16:.1} GB/s against x8 {mixed:.1} GB/s"
    );
}
