//! spec/targets.md, Moneta rows: each published figure with its tolerance.
//! Random accesses on the raw block device, XDD-style (workloads.md).

mod common;
use common::*;

#[test]
fn moneta_base_4k_read_latency_is_21us_62pct_software() {
    let s = qd1("moneta-base", &[], "randread", "4k", 2000);
    within(
        "moneta-base 4 KB read latency (us)",
        lat_us(&s, 0),
        21.0,
        0.10,
    );
    within(
        "moneta-base software share of a 4 KB read",
        software_share(&s, 0),
        0.62,
        0.10,
    );
}

#[test]
fn xfs_adds_4_to_6us_per_4k_access() {
    for (rw, d, published) in [("randread", 0, 4.2), ("randwrite", 1, 5.8)] {
        let raw = qd1("moneta-base", &[], rw, "4k", 1000);
        let xfs = qd1("moneta-base", &["host.file_system=\"xfs\""], rw, "4k", 1000);
        within(
            &format!("XFS extra latency, {rw} (us)"),
            lat_us(&xfs, d) - lat_us(&raw, d),
            published,
            0.25,
        );
    }
}

#[test]
fn nosched_saves_2us_and_quadruples_4k_bandwidth() {
    for (rw, d) in [("randread", 0), ("randwrite", 1)] {
        let base = qd1("moneta-base", &[], rw, "4k", 1000);
        let nosched = qd1("moneta-nosched", &[], rw, "4k", 1000);
        within(
            &format!("+NoSched latency saving, {rw} (us)"),
            lat_us(&base, d) - lat_us(&nosched, d),
            2.0,
            0.30,
        );
        let base = xdd("moneta-base", rw, "4k", 600);
        let nosched = xdd("moneta-nosched", rw, "4k", 600);
        within(
            &format!("+NoSched 4 KB bandwidth ratio, {rw}"),
            gbps(&nosched, d) / gbps(&base, d),
            4.0,
            0.30,
        );
    }
}

#[test]
fn atomic_saves_1us_and_adds_460mbs_for_4k_writes() {
    let n = qd1("moneta-nosched", &[], "randwrite", "4k", 1000);
    let a = qd1("moneta-atomic", &[], "randwrite", "4k", 1000);
    within(
        "+Atomic latency saving (us)",
        lat_us(&n, 1) - lat_us(&a, 1),
        1.0,
        0.30,
    );
    let n = xdd("moneta-nosched", "randwrite", "4k", 800);
    let a = xdd("moneta-atomic", "randwrite", "4k", 800);
    within(
        "+Atomic 4 KB write bandwidth gain (MB/s)",
        (gbps(&a, 1) - gbps(&n, 1)) * 1000.0,
        460.0,
        0.30,
    );
}

#[test]
fn spin_saves_6us_for_small_writes_and_adds_up_to_250mbs() {
    let a = qd1("moneta-atomic", &[], "randwrite", "512", 1000);
    let s = qd1("moneta-spin", &[], "randwrite", "512", 1000);
    within(
        "+Spin latency saving, 512 B writes (us)",
        lat_us(&a, 1) - lat_us(&s, 1),
        6.0,
        0.30,
    );
    // "up to +250 MB/s for 512 B-4 KB": the largest gain over that range
    let mut best: f64 = f64::MIN;
    for bs in ["512", "1k", "2k", "4k"] {
        for (rw, d) in [("randread", 0), ("randwrite", 1)] {
            let a = xdd("moneta-atomic", rw, bs, 500);
            let s = xdd("moneta-spin", rw, bs, 500);
            best = best.max((gbps(&s, d) - gbps(&a, d)) * 1000.0);
        }
    }
    within(
        "+Spin largest bandwidth gain, 512 B-4 KB (MB/s)",
        best,
        250.0,
        0.30,
    );
}

#[test]
fn spin_large_transfers_reach_the_2gbs_link() {
    for (rw, d) in [("randread", 0), ("randwrite", 1)] {
        let s = xdd("moneta-spin", rw, "512k", 40);
        let bw = gbps(&s, d);
        assert!(bw <= 2.0 + 1e-9, "{rw}: {bw} GB/s exceeds the 2 GB/s link");
        within(
            &format!("moneta-spin 512 KB {rw} bandwidth vs the link (GB/s)"),
            bw,
            2.0,
            0.10,
        );
    }
}

#[test]
fn two_queues_add_75pct_on_mixed_traffic_using_71pct_of_the_two_way_link() {
    let spin = xdd("moneta-spin", "randrw", "512k", 60);
    let q2 = xdd("moneta-2q", "randrw", "512k", 60);
    within(
        "+2Q / +Spin, 50/50 mixed bandwidth",
        total_gbps(&q2) / total_gbps(&spin),
        1.75,
        0.20,
    );
    within(
        "+2Q share of the 4 GB/s two-way link",
        total_gbps(&q2) / 4.0,
        0.71,
        0.20,
    );
}

#[test]
fn balance_keeps_aggregate_bandwidth_and_unblocks_small_requests() {
    // aggregate bandwidth unchanged (pcie-arrays.md +Balance)
    let q2 = xdd("moneta-2q", "randrw", "512k", 40);
    let bal = xdd("moneta-balance", "randrw", "512k", 40);
    within(
        "+Balance / +2Q aggregate bandwidth",
        total_gbps(&bal) / total_gbps(&q2),
        1.0,
        0.05,
    );
    // fairness mix (workloads.md): four 4 KB readers beside four 512 KB readers
    let small = |dev: &str| {
        let jobs = run_jobs(
            dev,
            &[],
            &[
                "--name=small",
                "--rw=randread",
                "--bs=4k",
                "--numjobs=4",
                "--iodepth=1",
                "--number_ios=400",
                "--name=large",
                "--rw=randread",
                "--bs=512k",
                "--numjobs=4",
                "--iodepth=1",
                "--number_ios=40",
            ],
        );
        let mut s = jobs
            .iter()
            .find(|j| j.name == "small")
            .expect("small job")
            .clone();
        for j in jobs.iter().filter(|j| j.name == "small").skip(1) {
            s.merge(j);
        }
        s
    };
    let (q2, bal) = (small("moneta-2q"), small("moneta-balance"));
    let (m_q2, m_bal) = (q2.dirs[0].lat().mean(), bal.dirs[0].lat().mean());
    let (t_q2, t_bal) = (q2.dirs[0].percentile(99.0), bal.dirs[0].percentile(99.0));
    assert!(
        m_bal * 1.5 < m_q2,
        "+Balance should cut the small requests' mean latency: {m_bal:.0} ns vs {m_q2:.0} ns"
    );
    assert!(
        t_bal * 3 < t_q2,
        "+Balance should cut the small requests' p99: {t_bal} ns vs {t_q2} ns"
    );
}

#[test]
fn bandwidth_versus_size_large_near_link_small_software_bound_on_baseline() {
    let large = xdd("moneta-base", "randread", "512k", 30);
    within(
        "moneta-base 512 KB reads vs the link (GB/s)",
        gbps(&large, 0),
        2.0,
        0.10,
    );
    let small = xdd("moneta-base", "randread", "4k", 400);
    assert!(
        gbps(&small, 0) < 0.25 * 2.0,
        "4 KB on the baseline should be far below the link: {}",
        gbps(&small, 0)
    );
    let one = qd1("moneta-base", &[], "randread", "4k", 500);
    assert!(
        software_share(&one, 0) > 0.5,
        "4 KB on the baseline is software-bound"
    );
    // the 4-lane variant: large transfers approach its 1 GB/s link
    let x4 = xdd("moneta-spin-4x", "randread", "512k", 30);
    within(
        "moneta-spin-4x 512 KB reads vs its 1 GB/s link",
        gbps(&x4, 0),
        1.0,
        0.10,
    );
}

#[test]
fn more_controllers_hide_longer_media_latency() {
    // pcie-arrays.md hardware variant 6
    let slow = ["media.read_ns=12800"];
    let one = run(
        "moneta-spin",
        &[slow[0], "pcie.controllers=1"],
        &[
            "--name=x",
            "--rw=randread",
            "--bs=4k",
            "--numjobs=16",
            "--number_ios=300",
        ],
    );
    let eight = run(
        "moneta-spin",
        &[slow[0], "pcie.controllers=8"],
        &[
            "--name=x",
            "--rw=randread",
            "--bs=4k",
            "--numjobs=16",
            "--number_ios=300",
        ],
    );
    assert!(
        gbps(&eight, 0) > 3.0 * gbps(&one, 0),
        "8 controllers {} vs 1 controller {}",
        gbps(&eight, 0),
        gbps(&one, 0)
    );
}
