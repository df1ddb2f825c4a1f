//! Today's Optane SSD rows (issue 62): the lab's Axboe row expresses
//! t/io_uring's setup as fio's options (`--ioengine=io_uring --hipri
//! --fixedbufs --registerfiles`). fio's `hipri` must poll as the host's
//! polled completion does (no interrupt, no wake-up), and the recorded
//! fixed buffers and registered files must not change the timing.

mod common;

use storlab_model::breakdown::Component;
use storlab_sim::stats::JobStats;

use common::jobs;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn qd1(overrides: &[&str], extra: &[&str]) -> JobStats {
    let mut fio = vec![
        "--name=qd1",
        "--rw=randread",
        "--bs=512",
        "--iodepth=1",
        "--size=4g",
        "--number_ios=500",
    ];
    fio.extend_from_slice(extra);
    jobs("optane-p5800x", &s(overrides), &fio).remove(0)
}

#[test]
fn fio_hipri_polls_as_the_hosts_polled_completion_and_skips_interrupt_and_wakeup() {
    let irq = qd1(&[], &["--ioengine=io_uring"]);
    let hipri = qd1(&[], &["--ioengine=io_uring", "--hipri"]);
    let t_io_uring = qd1(
        &[],
        &[
            "--ioengine=io_uring",
            "--hipri",
            "--fixedbufs",
            "--registerfiles",
        ],
    );
    let spin = qd1(&["host.completion=\"spin\""], &[]);
    let mean = |j: &JobStats| j.dirs[0].lat().mean();
    let part = |j: &JobStats, c: Component| j.dirs[0].breakdown_sum().get(c);
    for j in [&hipri, &t_io_uring, &spin] {
        assert_eq!(part(j, Component::Interrupt), 0);
        assert_eq!(part(j, Component::Wakeup), 0);
    }
    assert!(part(&irq, Component::Interrupt) > 0);
    assert!(part(&irq, Component::Wakeup) > 0);
    assert_eq!(mean(&hipri), mean(&spin), "hipri polls as completion=spin");
    assert_eq!(
        mean(&t_io_uring),
        mean(&hipri),
        "recorded options cost nothing"
    );
    // the interrupt path pays the handler and the wake-up on top
    assert!(
        mean(&irq) > mean(&hipri) + 2000.0,
        "interrupt {} polled {}",
        mean(&irq),
        mean(&hipri)
    );
}
