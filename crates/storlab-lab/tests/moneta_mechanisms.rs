//! Moneta behaviour beyond docs/spec/targets.md's rows (those are `storlab lab
//! reproduce moneta`, checked in `reproductions.rs`): +Balance's fairness,
//! the shape of the bandwidth curves, and more controllers hiding slow
//! media (docs/spec/pcie-arrays.md).

mod support;
use support::*;

#[test]
fn balance_keeps_aggregate_bandwidth_and_unblocks_small_requests() {
    // aggregate bandwidth unchanged (docs/spec/pcie-arrays.md +Balance)
    let q2 = sim(Spec::xdd("moneta-2q", &[], "randrw", "512k", 40));
    let bal = sim(Spec::xdd("moneta-balance", &[], "randrw", "512k", 40));
    within(
        "+Balance / +2Q aggregate bandwidth",
        bal.total_gbps() / q2.total_gbps(),
        1.0,
        0.05,
    );
    // fairness mix (docs/spec/workloads.md): four 4 KB readers beside four 512 KB readers
    let small = |dev: &str| {
        let jobs = Spec::new(
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
        )
        .run_jobs()
        .expect("simulation runs");
        let small: Vec<_> = jobs.into_iter().filter(|j| j.name == "small").collect();
        assert_eq!(small.len(), 4, "four small-request threads");
        Run::merged(&small)
    };
    let (q2, bal) = (small("moneta-2q"), small("moneta-balance"));
    let (m_q2, m_bal) = (
        q2.stats.dirs[0].lat().mean(),
        bal.stats.dirs[0].lat().mean(),
    );
    let (t_q2, t_bal) = (
        q2.stats.dirs[0].percentile(99.0),
        bal.stats.dirs[0].percentile(99.0),
    );
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
    let large = sim(Spec::xdd("moneta-base", &[], "randread", "512k", 30));
    within(
        "moneta-base 512 KB reads vs the link (GB/s)",
        large.gbps(0),
        2.0,
        0.10,
    );
    let small = sim(Spec::xdd("moneta-base", &[], "randread", "4k", 400));
    assert!(
        small.gbps(0) < 0.25 * 2.0,
        "4 KB on the baseline should be far below the link: {}",
        small.gbps(0)
    );
    let one = sim(Spec::qd1("moneta-base", &[], "randread", "4k", 500));
    assert!(
        one.software_share(0) > 0.5,
        "4 KB on the baseline is software-bound"
    );
    // the 4-lane variant: large transfers approach its 1 GB/s link
    let x4 = sim(Spec::xdd("moneta-spin-4x", &[], "randread", "512k", 30));
    within(
        "moneta-spin-4x 512 KB reads vs its 1 GB/s link",
        x4.gbps(0),
        1.0,
        0.10,
    );
}

#[test]
fn more_controllers_hide_longer_media_latency() {
    // docs/spec/pcie-arrays.md hardware variant 6
    let job = [
        "--name=x",
        "--rw=randread",
        "--bs=4k",
        "--numjobs=16",
        "--number_ios=300",
    ];
    let slow = "media.read_ns=12800";
    let one = sim(Spec::new(
        "moneta-spin",
        &[slow, "pcie.controllers=1"],
        &job,
    ));
    let eight = sim(Spec::new(
        "moneta-spin",
        &[slow, "pcie.controllers=8"],
        &job,
    ));
    assert!(
        eight.gbps(0) > 3.0 * one.gbps(0),
        "8 controllers {} vs 1 controller {}",
        eight.gbps(0),
        one.gbps(0)
    );
}
