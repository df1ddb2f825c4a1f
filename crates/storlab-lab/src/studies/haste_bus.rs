//! NVM on the memory bus and the copying CPU (HASTE study, SC 2010, Fig.
//! 4-7; docs/spec/ddr-nvm.md): the DDR-attached RAM disk's bandwidth with 16 threads
//! (XDD's six tests), what STT-MRAM and PCM timing cost its 4 MB writes,
//! the media latency at which its 4 KB latency overtakes HASTE's, where a
//! HASTE-DRAM access spends its time, and main memory's latency and
//! bandwidth as the flash placement study's Table 1 gives them (docs/spec/media.md).

use storlab_model::breakdown::Component;

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Run, Spec};
use crate::places::{HASTE_BUS, HASTE_LATENCY, PLACEMENT_T1};
use crate::report::{at_all, Class, Prepared, Reproduction, Row};
use crate::studies::haste_ddr::sweep_point;

/// XDD's six tests (docs/spec/workloads.md, jobs/xdd-*.fio): fio `rw`, block size.
pub const XDD: [(&str, &str); 6] = [
    ("read", "4m"),
    ("write", "4m"),
    ("rw", "4m"),
    ("randread", "4k"),
    ("randwrite", "4k"),
    ("randrw", "4k"),
];

/// Media read latencies of the crossover sweep, ns: from DRAM's 25 ns past
/// the study's 1600 ns limit for DDR attachment.
pub const CROSSOVER_NS: [u64; 10] = [25, 50, 100, 200, 400, 600, 800, 1000, 1200, 1600];

/// One of XDD's tests on `device`: 16 threads, one synchronous request
/// each (psync), direct IO on the raw device, 50/50 for the mixes. The
/// runs are short (8 requests of 4 MB, 400 of 4 KB per thread): the
/// device's state does not change with time, so a longer run gives the
/// same bandwidth.
pub fn xdd(device: &str, rw: &str, bs: &str) -> Spec {
    let n = if bs == "4m" { 8 } else { 400 };
    Spec::new(
        device,
        &[],
        &[
            "--name=xdd",
            &format!("--rw={rw}"),
            "--rwmixread=50",
            &format!("--bs={bs}"),
            "--numjobs=16",
            "--iodepth=1",
            "--direct=1",
            "--ioengine=psync",
            "--size=1g",
            "--norandommap",
            &format!("--number_ios={n}"),
        ],
    )
}

/// Where two latency curves over the same x cross: the first x at which
/// `above` is no longer below `below`, interpolated linearly between
/// sweep points; `None` when it stays below.
pub fn crossover(xs: &[f64], above: &[f64], below: &[f64]) -> Option<f64> {
    let d: Vec<f64> = above.iter().zip(below).map(|(a, b)| a - b).collect();
    if d.first().is_some_and(|&d0| d0 >= 0.0) {
        return xs.first().copied();
    }
    (1..d.len())
        .find(|&i| d[i] >= 0.0)
        .map(|i| xs[i - 1] + (xs[i] - xs[i - 1]) * (-d[i - 1]) / (d[i] - d[i - 1]))
}

/// The mean breakdown of a run's reads, ns, by component.
fn part(run: &Run, comps: &[Component]) -> f64 {
    let b = run.stats.dirs[0].mean_breakdown_ns();
    comps.iter().map(|&c| b[c as usize]).sum()
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let six: Vec<_> = XDD
        .iter()
        .map(|&(rw, bs)| p.add(xdd("ddr-dram", rw, bs)))
        .collect();
    let writes: Vec<_> = ["ddr-dram", "ddr-sttm", "ddr-pcm"]
        .iter()
        .map(|d| p.add(xdd(d, "write", "4m")))
        .collect();
    let lat4k = p.add(Spec::qd1("ddr-dram", &[], "randread", "4k", 500));
    let haste = p.add(Spec::qd1("haste-dram", &[], "randread", "4k", 500));
    let sweep: Vec<Vec<_>> = ["ddr-dram", "haste-dram"]
        .iter()
        .map(|d| {
            CROSSOVER_NS
                .iter()
                .map(|&ns| p.add(sweep_point(d, ns)))
                .collect()
        })
        .collect();
    let mem_lat = p.add(Spec::qd1("dram-mem", &[], "randread", "64", 1000));
    let mem_bw = p.add(Spec::new(
        "dram-mem",
        &[],
        &[
            "--name=bw",
            "--rw=randread",
            "--bs=64k",
            "--numjobs=16",
            "--ioengine=libaio",
            "--iodepth=8",
            "--size=1g",
            "--norandommap",
            "--number_ios=200",
        ],
    ));
    let finish = move |r: &crate::measure::Results| {
        let mut rows = Vec::new();
        let bws: Vec<f64> = six.iter().map(|&id| r[id].total_gbps()).collect();
        let k4 = bws[3..].iter().fold(0.0f64, |a, &b| a.max(b));
        let m4 = bws[..3].iter().fold(0.0f64, |a, &b| a.max(b));
        let (best, &peak) = bws
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .expect("six tests");
        rows.push(
            Row::within(
                "ddr-dram peak bandwidth, best of XDD's six tests, 16 threads",
                peak,
                7.1,
                0.25,
                "GB/s",
            )
            .model_note(&format!("({} {})", XDD[best].1, XDD[best].0))
            .miss_because(format!(
                "the 4 KB tests are bound by the host's software ({k4:.1} GB/s) and the 4 MB \
                 copies by the RAM disk's channels ({m4:.1} GB/s); see note [ddr-peak]."
            )),
        );
        let w: Vec<f64> = writes.iter().map(|&id| r[id].gbps(1)).collect();
        // published as points ("4 % below", "42 % below"), scored as
        // points; the tolerance is ten points of the ratio either way
        rows.push(Row::within(
            "ddr-sttm 4 MB write bandwidth over ddr-dram's (4% below)",
            w[1] / w[0],
            0.96,
            0.10 / 0.96,
            "x",
        ));
        rows.push(Row::within(
            "ddr-pcm 4 MB write bandwidth over ddr-dram's (42% below)",
            w[2] / w[0],
            0.58,
            0.10 / 0.58,
            "x",
        ));
        rows.push(
            Row::within(
                "ddr-dram 4 KB read latency (kept)",
                r[lat4k].lat_us(0),
                3.0,
                0.20,
                "µs",
            )
            .at(HASTE_LATENCY)
            .input("syscall_entry_ns (with syscall_exit_ns and block_queue_ns: ddr-dram's host costs, CALIBRATED on this figure)"),
        );
        let xs: Vec<f64> = CROSSOVER_NS.iter().map(|&n| n as f64).collect();
        let curve = |k: usize| -> Vec<f64> { sweep[k].iter().map(|&id| r[id].lat_us(0)).collect() };
        let (ddr, hst) = (curve(0), curve(1));
        let cross = crossover(&xs, &ddr, &hst);
        rows.push(Row::within(
            "media latency at which ddr-dram's 4 KB read latency overtakes haste-dram's",
            cross.unwrap_or(f64::NAN),
            800.0,
            0.30,
            "ns",
        ));
        let run = &r[haste];
        use Component::*;
        let total = part(run, &storlab_model::breakdown::COMPONENTS);
        let pcie = part(run, &[Link, Pio, Interrupt]);
        let inter = part(run, &[DeviceQueue, Interconnect, Controller]);
        let mem = part(run, &[Media]);
        let device = pcie + inter + mem;
        rows.push(Row::within(
            "haste-dram 4 KB read: device service (PCIe, PIO, interrupt, HASTE inside)",
            device / 1000.0,
            6.4,
            0.25,
            "µs",
        ));
        rows.push(Row::within(
            "haste-dram 4 KB read: PCIe transfer, PIO and interrupt",
            pcie / 1000.0,
            6.0,
            0.25,
            "µs",
        ));
        rows.push(
            Row::within(
                "haste-dram 4 KB read: interconnect and buffering inside HASTE",
                inter,
                125.0,
                0.25,
                "ns",
            )
            .input("controller_latency_ns (pcie.controller_latency_ns: 125 ns less the ring's 88 ns round trip)"),
        );
        rows.push(
            Row::within(
                "haste-dram 4 KB read: the memory access",
                mem,
                280.0,
                0.25,
                "ns",
            )
            .input("memory_latency_ns (pcie.memory_latency_ns: 280 ns less DRAM's 25 ns row open)"),
        );
        // The study's "280 ns (about 4.5 % of the total)" is 4.4 % of the
        // 6.4 µs device path and 1.75 % of the 16 µs access: its total here
        // is the device path's.
        rows.push(Row::within(
            "haste-dram 4 KB read: memory share of the device path (\"about 4.5 % of the total\": 280 ns of 6.4 µs)",
            mem / device * 100.0,
            4.5,
            0.25,
            "%",
        ));
        rows.push(Row::within(
            "haste-dram 4 KB read: operating-system share of the latency",
            (total - device) / total * 100.0,
            63.0,
            0.25,
            "%",
        ));
        rows.push(
            Row::within(
                "dram-mem access latency (64 B, one thread)",
                r[mem_lat].lat_us(0) * 1000.0,
                51.0,
                0.25,
                "ns",
            )
            .at(PLACEMENT_T1),
        );
        rows.push(
            Row::within(
                "dram-mem bandwidth (64 KB reads, 16 threads)",
                r[mem_bw].gbps(0),
                13.0,
                0.25,
                "GB/s",
            )
            .at(PLACEMENT_T1)
            .input("bandwidth_bytes_per_s (device.bandwidth_bytes_per_s = 13 GB/s)"),
        );
        let points =
            |v: &[f64]| -> Vec<(f64, f64)> { xs.iter().copied().zip(v.iter().copied()).collect() };
        Reproduction {
            study: "haste-bus".into(),
            title: "Caulfield et al., Understanding the Impact of Emerging Non-Volatile Memories, SC 2010: NVM on the memory bus".into(),
            setting: "ddr-* presets: XDD's six tests with 16 threads (psync, direct IO, raw device), 4 MB writes on each medium; one thread at queue depth 1 for latencies; the haste-dram breakdown of one 4 KB read; dram-mem measured by fio (Table 1 of the flash placement study).".into(),
            class: Class::Device,
            state_rule: "none needed: the memory media are written in place and the runs use the raw device".into(),
            notes: vec![("ddr-peak".into(), "the 4 KB tests are bound by the host's software: 8 cores each finish a 4 KB \
                 request per 3 µs of core time (the single-thread latency the host costs are \
                 calibrated to), (see the row), and the 4 MB copies by the RAM disk's channels (one \
                 socket's 3 of 6, which carry every RAM-disk line and half the user buffers' \
                 lines), (see the row). Nothing on the memory side brings 16 threads to 7.1 GB/s: \
                 DDR3 timings (refresh tRFC 110 ns every tREFI 7.8 µs, 1.4 %; a write-to-read \
                 turnaround, tWTR + CWL + BL/2, about 26 ns, and read-to-write about 13 ns per \
                 batch of some 16 bursts, about 14 %; tFAW's four activates per 37.5 ns when \
                 32 streams keep closing each other's rows) give about 0.7 of the peak, the \
                 bus_efficiency used; the channels are then half busy in the 4 KB read test, \
                 which adds some 5 ns of queueing to an 85 ns line (M/D/1, 9 ns a line per \
                 channel); QPI (5.86 GT/s, about 9 GB/s of lines a direction) carries the \
                 remote socket's half, 5.5 GB/s; a core's 10 fill buffers, shared by its two \
                 hyperthreads, are not what limits a copy (its store buffer, 32 entries, or 16 \
                 a thread with both running, keeps 4 lines in flight a core either way). 7.1 GB/s \
                 means about 4.6 µs of core time per 4 KB request with 16 threads against 3 µs \
                 with one: threads slowing each other in the kernel (the process's mmap_sem, \
                 taken twice by each direct IO's get_user_pages, and the page-table lock of \
                 the buffers' pte page, cache lines that bounce between the sockets), which \
                 belongs to the host model (host.rs) and is not there".into())],
            rows: at_all(rows, HASTE_BUS),
            figures: vec![Figure {
                id: "haste-bus-crossover".into(),
                title: "4 KB read latency against media read latency: the copying CPU against the PCIe array".into(),
                x_label: "media read latency (ns)".into(),
                y_label: "µs".into(),
                x_log: true,
                x_bytes: false,
                y_log: false,
                panels: vec![Panel {
                    title: "DDR bus (ddr-dram) vs PCIe array (haste-dram)".into(),
                    series: vec![
                        Series { label: "ddr-dram".into(), kind: SeriesKind::Model, points: points(&ddr) },
                        Series { label: "haste-dram".into(), kind: SeriesKind::Model, points: points(&hst) },
                    ],
                }],
            }],
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}

#[cfg(test)]
mod tests {
    use super::crossover;

    #[test]
    fn crossover_interpolates_between_points() {
        let xs = [0.0, 10.0, 20.0];
        assert_eq!(
            crossover(&xs, &[1.0, 3.0, 5.0], &[2.0, 2.0, 2.0]),
            Some(5.0)
        );
        assert_eq!(crossover(&xs, &[1.0, 1.0, 1.0], &[2.0, 2.0, 2.0]), None);
        assert_eq!(
            crossover(&xs, &[3.0, 3.0, 3.0], &[2.0, 2.0, 2.0]),
            Some(0.0)
        );
    }
}
