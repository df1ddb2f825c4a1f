//! Tests of the host stack.

use std::collections::BinaryHeap;

use crate::breakdown::Component;
use crate::device::{Nanos, Op};
use crate::devices::fixed::FixedLatency;
use crate::units::Rw;

use super::config::{validate, CompletionMode, FileSystem, HostConfig, Scheduler};
use super::io::{HostCx, HostIo, IoDone};
use super::jitter::Jitter;
use super::stack::Host;

/// The standard stack of the peer presets (docs/spec/pcie-arrays.md table), no
/// driver lock, interrupts.
fn cfg() -> HostConfig {
    HostConfig {
        cores: 8,
        syscall_entry_ns: Rw {
            read: 1950,
            write: 1980,
        },
        syscall_exit_ns: Rw {
            read: 1950,
            write: 1980,
        },
        file_system: FileSystem::None,
        xfs_ns: Rw { read: 0, write: 0 },
        block_queue_ns: Rw {
            read: 1740,
            write: 510,
        },
        scheduler: Scheduler::Bypass,
        scheduler_handoff_ns: 0,
        driver_tag_ns: Rw {
            read: 510,
            write: 440,
        },
        driver_lock: false,
        pio_word_ns: 385,
        issue_pio_words: 1,
        completion_pio_words: 2,
        copy_ns_per_kib: Rw { read: 0, write: 0 },
        completion: CompletionMode::Interrupt,
        spin_max_bytes: 0,
        interrupt_ns: 310,
        interrupt_cqe_ns: 0,
        coalesce_entries: 1,
        coalesce_time_100us: 0,
        sleep_ns: 2000,
        wakeup_ns: 4000,
        ghz: None,
        cpi: None,
        driver_instructions: None,
        spin_cpi: None,
        wakeup_spread: 0.0,
        interrupt_spread: 0.0,
        seed: None,
        cold_after_ns: 0,
        driver_memory_bytes: 0,
        cold_lines: 0,
        cold_miss_ns: 0,
        driver_worker_share: 0.0,
        max_request_bytes: 0,
    }
}

#[test]
fn a_long_sleep_finds_the_path_cold() {
    // 1,000 lines at 20 ns: 20 us more per wake-up after a sleep of
    // 1 ms or more, nothing after a shorter one
    let mut c = cfg();
    c.cold_after_ns = 1_000_000;
    c.cold_lines = 1000;
    c.cold_miss_ns = 20;
    let ios: Vec<_> = (0..4).map(|t| (t, 0)).collect();
    for (latency, extra) in [(200_000, 0), (5_000_000, 20_000)] {
        let (done, _) = run(c.clone(), 4, &ios, latency);
        assert!(
            done.iter()
                .all(|d| d.breakdown.get(Component::Wakeup) == 4000 + extra),
            "{latency} ns device: {:?}",
            done.iter()
                .map(|d| d.breakdown.get(Component::Wakeup))
                .collect::<Vec<_>>()
        );
    }
    // the refetch is stall time on the core, not instructions
    c.ghz = Some(2.0);
    c.cpi = Some(1.0);
    let (_, warm) = run(c.clone(), 4, &ios, 200_000);
    let (_, cold) = run(c.clone(), 4, &ios, 5_000_000);
    assert_eq!(
        warm.instructions_per_io(Op::Read),
        cold.instructions_per_io(Op::Read)
    );
    assert!(cold.cpu_ns_per_io(Op::Read) > warm.cpu_ns_per_io(Op::Read));
    // off by default: the same slow device, no extra
    let (done, _) = run(cfg(), 4, &ios, 5_000_000);
    assert!(done
        .iter()
        .all(|d| d.breakdown.get(Component::Wakeup) == 4000));
    // a cold path without its threshold is refused, naming the key
    c.cold_after_ns = 0;
    let e = validate(&c).expect_err("no threshold").to_string();
    assert!(e.contains("host.cold_after_ns"), "{e}");
}

/// Run `ios` (thread, submit time) of 4 KB reads on a device of fixed
/// `latency`; a thread's requests are all submitted at their times
/// (an asynchronous engine). Returns the finished requests and the host.
fn run(c: HostConfig, threads: u32, ios: &[(u32, Nanos)], latency: Nanos) -> (Vec<IoDone>, Host) {
    let dev = Box::new(FixedLatency::new(latency, 1 << 30));
    let mut host = Host::new(c, dev, threads);
    let mut cx = HostCx::default();
    let mut q = BinaryHeap::new();
    let mut seq = 0u64;
    let mut subs: Vec<(Nanos, usize)> = ios.iter().enumerate().map(|(i, &(_, t))| (t, i)).collect();
    subs.sort();
    let mut done = Vec::new();
    let mut next = 0;
    loop {
        let t_ev = q.peek().map(|&std::cmp::Reverse((t, _, _))| t);
        let t_sub = subs.get(next).map(|&(t, _)| t);
        match (t_sub, t_ev) {
            (Some(ts), te) if te.is_none_or(|te| ts <= te) => {
                let (_, i) = subs[next];
                next += 1;
                let io = HostIo {
                    id: i as u64,
                    thread: ios[i].0,
                    op: Op::Read,
                    offset: 4096 * i as u64,
                    len: 4096,
                    fua: false,
                    poll: false,
                    placement: None,
                };
                host.submit(ts, io, &mut cx);
            }
            (_, Some(_)) => {
                let std::cmp::Reverse((t, _, tok)) = q.pop().expect("an event");
                host.on_event(t, tok, &mut cx);
            }
            (None, None) => break,
            _ => unreachable!(),
        }
        for (t, tok) in cx.dev.wakeups.drain(..) {
            seq += 1;
            q.push(std::cmp::Reverse((t, seq, tok)));
        }
        done.append(&mut cx.done);
    }
    assert_eq!(done.len(), ios.len(), "every request finished");
    (done, host)
}

fn sum(done: &[IoDone], c: Component) -> u64 {
    done.iter().map(|d| d.breakdown.get(c)).sum()
}

#[test]
fn one_async_thread_reaps_ready_completions_without_a_context_switch_each() {
    // 16 requests from one thread at once, a fast device: completions
    // are ready while the thread is still submitting, so it reaps them
    // all after its last submission without ever sleeping
    let ios: Vec<_> = (0..16).map(|_| (0u32, 0)).collect();
    let (done, _) = run(cfg(), 1, &ios, 1_000);
    let wakeups = sum(&done, Component::Wakeup) / 4000;
    assert_eq!(wakeups, 0, "one thread, 16 requests");
    // a slow device: completions come as far apart as the submissions
    // were (4.6 us), and reaping one takes 1.95 us (no wake-up) or 5.95
    // us (with one): the thread sleeps between every other pair
    let (done, _) = run(cfg(), 1, &ios, 200_000);
    let wakeups = sum(&done, Component::Wakeup) / 4000;
    assert!(
        (1..=8).contains(&wakeups),
        "{wakeups} wake-ups for 16 requests of one thread"
    );
    // the time waiting for the busy thread is named so
    assert!(sum(&done, Component::ThreadWait) > 0);
    assert_eq!(sum(&done, Component::LockWait), 0, "no driver lock");
    assert_eq!(sum(&done, Component::SchedulerWait), 0, "no scheduler");
}

#[test]
fn synchronous_threads_pay_a_wakeup_per_request() {
    // 16 threads with one request each: every one sleeps and is woken
    let ios: Vec<_> = (0..16).map(|t| (t, 0)).collect();
    let (done, _) = run(cfg(), 16, &ios, 200_000);
    assert!(done
        .iter()
        .all(|d| d.breakdown.get(Component::Wakeup) == 4000));
    assert_eq!(sum(&done, Component::ThreadWait), 0);
}

#[test]
fn waits_for_the_scheduler_and_the_lock_are_told_apart() {
    let ios: Vec<_> = (0..8).map(|t| (t, 0)).collect();
    let mut c = cfg();
    c.scheduler = Scheduler::SingleQueue;
    c.scheduler_handoff_ns = 2000;
    let (done, _) = run(c, 8, &ios, 10_000);
    assert!(sum(&done, Component::SchedulerWait) > 0);
    assert_eq!(sum(&done, Component::LockWait), 0);
    let mut c = cfg();
    c.driver_lock = true;
    let (done, _) = run(c, 8, &ios, 10_000);
    assert!(sum(&done, Component::LockWait) > 0);
    assert_eq!(sum(&done, Component::SchedulerWait), 0);
}

#[test]
fn the_driver_worker_serialises_its_share_and_keeps_the_instructions() {
    // 10,000 driver instructions at 1 instruction per ns: 10 us per
    // read; half of it on the worker thread
    let mut c = cfg();
    c.ghz = Some(1.0);
    c.cpi = Some(1.0);
    c.driver_instructions = Some(Rw {
        read: 10_000,
        write: 10_000,
    });
    // 64 synchronous threads at once, 8 cores, a fast device
    let ios: Vec<_> = (0..64).map(|t| (t, 0)).collect();
    let last = |done: &[IoDone]| done.iter().map(|d| d.at).max().unwrap_or(0);
    let (plain, h0) = run(c.clone(), 64, &ios, 1_000);
    c.driver_worker_share = 0.5;
    validate(&c).expect("a valid worker");
    let (work, h1) = run(c.clone(), 64, &ios, 1_000);
    // one worker takes the 64 requests one after the other: the last
    // finishes no sooner than 64 x (5 us + tag + PIO) after the start
    let per = 5_000 + 510 + 385;
    assert!(last(&work) >= 64 * per, "{} ns", last(&work));
    assert!(last(&work) > last(&plain), "the worker is the bottleneck");
    // the wait for the worker is named, the core time is the same
    assert!(sum(&work, Component::WorkerWait) > 0);
    assert_eq!(sum(&plain, Component::WorkerWait), 0);
    assert_eq!(sum(&work, Component::LockWait), 0);
    assert_eq!(
        sum(&work, Component::Driver),
        sum(&plain, Component::Driver)
    );
    assert_eq!(
        h0.instructions_per_io(Op::Read),
        h1.instructions_per_io(Op::Read)
    );
    // one request alone pays no more than without the worker
    let (a, _) = run(c.clone(), 1, &[(0, 0)], 1_000);
    c.driver_worker_share = 0.0;
    let (b, _) = run(c.clone(), 1, &[(0, 0)], 1_000);
    assert_eq!(a[0].clat_ns + a[0].slat_ns, b[0].clat_ns + b[0].slat_ns);
    // bad values are refused, naming the key
    for (share, sched, instr, lock) in [
        (1.5, Scheduler::Bypass, true, false),
        (f64::NAN, Scheduler::Bypass, true, false),
        (0.5, Scheduler::SingleQueue, true, false),
        (0.5, Scheduler::Bypass, false, false),
        (0.5, Scheduler::Bypass, true, true),
    ] {
        let mut bad = c.clone();
        bad.driver_worker_share = share;
        bad.scheduler = sched;
        bad.driver_lock = lock;
        if !instr {
            bad.driver_instructions = None;
        }
        let e = validate(&bad).expect_err("refused").to_string();
        assert!(e.contains("host.driver_worker_share"), "{e}");
    }
}

#[test]
fn an_asynchronous_thread_does_not_wait_for_the_driver_worker() {
    // all 20 us of driver work on the worker: one thread submitting 64
    // requests at once runs only ~6 us of its own per request, so the
    // worker (20.9 us with the tag and PIO) sets the pace, not the sum
    let mut c = cfg();
    c.ghz = Some(1.0);
    c.cpi = Some(1.0);
    c.driver_instructions = Some(Rw {
        read: 20_000,
        write: 20_000,
    });
    c.driver_worker_share = 1.0;
    let ios: Vec<_> = (0..64).map(|_| (0u32, 0)).collect();
    let (done, _) = run(c.clone(), 1, &ios, 30_000);
    let last = done.iter().map(|d| d.at).max().unwrap_or(0);
    let worker = 20_000 + 510 + 385;
    assert!(last >= 64 * worker, "{last} ns");
    assert!(last < 64 * (worker + 1_500), "the thread waited: {last} ns");
    // polling threads wait for the worker too, and none holds a core
    // meanwhile: 16 of them on 8 cores all finish
    c.completion = CompletionMode::Spin;
    c.spin_max_bytes = 4096;
    c.driver_worker_share = 0.5;
    let ios: Vec<_> = (0..16).map(|t| (t, 0)).collect();
    let (done, _) = run(c, 16, &ios, 30_000);
    assert!(sum(&done, Component::WorkerWait) > 0);
}

#[test]
fn a_busy_wait_counts_at_its_own_cpi() {
    let mut c = cfg();
    c.ghz = Some(2.0);
    c.cpi = Some(1.0);
    c.completion = CompletionMode::Spin;
    c.spin_max_bytes = 4096;
    let (_, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
    let at_cpi = host.instructions_per_io(Op::Read).expect("counted");
    // the core time includes the 50 us the thread spun
    let cpu = host.cpu_ns_per_io(Op::Read).expect("a read finished");
    assert!(cpu >= 50_000.0, "{cpu}");
    assert_eq!(at_cpi, 2.0 * cpu);
    // the same loop at 4 cycles per instruction: 0.5 instead of 2 per ns
    c.spin_cpi = Some(4.0);
    let (_, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
    assert_eq!(host.cpu_ns_per_io(Op::Read), Some(cpu), "same time");
    let slow = host.instructions_per_io(Op::Read).expect("counted");
    assert!(
        (at_cpi - slow - 50_000.0 * 1.5).abs() < 1.0,
        "{at_cpi} -> {slow}"
    );
    // a sleeping thread has no busy wait: spin_cpi changes nothing
    c.completion = CompletionMode::Interrupt;
    let (_, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
    let cpu = host.cpu_ns_per_io(Op::Read).expect("a read finished");
    assert_eq!(host.instructions_per_io(Op::Read), Some(2.0 * cpu));
    // spin_cpi needs a clock
    c.ghz = None;
    assert!(validate(&c).is_err());
}

#[test]
fn instructions_are_core_time_at_the_clock_and_cpi() {
    let mut c = cfg();
    c.ghz = Some(2.0);
    c.cpi = Some(1.0);
    let (done, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
    let base = host.cpu_ns_per_io(Op::Read).expect("a read finished");
    // entry, block, tag, PIO, switch-out, interrupt (+2 PIO), wake, exit
    let expect = 1950 + 1740 + 510 + 385 + 2000 + 310 + 770 + 4000 + 1950;
    assert_eq!(base, expect as f64);
    assert_eq!(host.instructions_per_io(Op::Read), Some(2.0 * base));
    assert_eq!(host.cpu_ns_per_io(Op::Write), None);
    assert_eq!(done[0].breakdown.get(Component::Driver), 510);
    // a driver's own 3,000 instructions take 1,500 ns at 2 per ns
    c.driver_instructions = Some(Rw {
        read: 3000,
        write: 0,
    });
    let (done, host) = run(c, 1, &[(0, 0)], 50_000);
    assert_eq!(done[0].breakdown.get(Component::Driver), 510 + 1500);
    assert_eq!(
        host.instructions_per_io(Op::Read),
        Some(2.0 * base + 3000.0)
    );
}

#[test]
fn no_clock_no_instructions() {
    let (_, host) = run(cfg(), 1, &[(0, 0)], 50_000);
    assert!(host.cpu_ns_per_io(Op::Read).is_some());
    assert_eq!(host.instructions_per_io(Op::Read), None);
}

#[test]
fn driver_instructions_need_a_clock_and_a_cpi() {
    let mut c = cfg();
    c.driver_instructions = Some(Rw {
        read: 1000,
        write: 1000,
    });
    let e = validate(&c).expect_err("refused").to_string();
    assert!(e.contains("host.driver_instructions"), "{e}");
    c.ghz = Some(2.26);
    c.cpi = Some(1.67);
    validate(&c).expect("accepted");
    c.cpi = Some(0.0);
    let e = validate(&c).expect_err("refused").to_string();
    assert!(e.contains("host.cpi"), "{e}");
}

#[test]
fn spread_keeps_the_mean_and_gives_a_tail() {
    // 400 synchronous threads, one request each: every one is woken
    let ios: Vec<_> = (0..400).map(|t| (t, 0)).collect();
    let mut c = cfg();
    c.cores = 4096;
    c.wakeup_spread = 0.5;
    c.interrupt_spread = 0.3;
    c.seed = Some(7);
    let (done, _) = run(c.clone(), 400, &ios, 200_000);
    let w: Vec<u64> = done
        .iter()
        .map(|d| d.breakdown.get(Component::Wakeup))
        .collect();
    let mean = w.iter().sum::<u64>() as f64 / w.len() as f64;
    // standard error of the mean: 0.5 x 4000 / sqrt(400) = 100 ns
    assert!((mean - 4000.0).abs() < 400.0, "mean wake-up {mean}");
    // the floor is the context switch itself: 4000 x (1 - 0.5)
    assert!(w.iter().all(|&x| x >= 2000), "{w:?}");
    let max = *w.iter().max().expect("some");
    assert!(max > 8000, "an exponential tail: max {max}");
    let irq: Vec<u64> = done
        .iter()
        .map(|d| d.breakdown.get(Component::Interrupt))
        .collect();
    assert!(irq.iter().any(|&x| x != irq[0]), "interrupts vary");
    assert!(irq.iter().all(|&x| x >= 217), "floor 310 x 0.7");
    // the same seed gives the same draws; another seed others
    let (again, _) = run(c.clone(), 400, &ios, 200_000);
    assert_eq!(
        done.iter().map(|d| d.clat_ns).collect::<Vec<_>>(),
        again.iter().map(|d| d.clat_ns).collect::<Vec<_>>()
    );
    c.seed = Some(8);
    let (other, _) = run(c, 400, &ios, 200_000);
    assert_ne!(
        done.iter().map(|d| d.clat_ns).collect::<Vec<_>>(),
        other.iter().map(|d| d.clat_ns).collect::<Vec<_>>()
    );
}

#[test]
fn the_run_seed_reaches_the_spread_unless_the_host_names_one() {
    let mut c = cfg();
    c.wakeup_spread = 1.0;
    let draws = |c: &HostConfig, run_seed: Option<u64>| {
        let dev = Box::new(FixedLatency::new(1000, 1 << 30));
        let mut h = Host::new(c.clone(), dev, 1);
        if let Some(s) = run_seed {
            h.seed_spread(s);
        }
        let j = h.jitter.as_mut().expect("spread on");
        (0..8).map(|_| j.wakeup()).collect::<Vec<_>>()
    };
    assert_ne!(draws(&c, Some(1)), draws(&c, Some(2)));
    assert_eq!(draws(&c, Some(1)), draws(&c, Some(1)));
    c.seed = Some(5);
    assert_eq!(draws(&c, Some(1)), draws(&c, Some(2)), "host.seed wins");
    // off: nothing to draw
    c.wakeup_spread = 0.0;
    let h = Host::new(c, Box::new(FixedLatency::new(1000, 1 << 30)), 1);
    assert!(h.jitter.is_none());
}

#[test]
fn spreads_outside_zero_to_one_are_refused() {
    let mut c = cfg();
    c.wakeup_spread = 1.5;
    let e = validate(&c).expect_err("refused").to_string();
    assert!(e.contains("host.wakeup_spread"), "{e}");
    c.wakeup_spread = 0.5;
    c.interrupt_spread = -0.1;
    let e = validate(&c).expect_err("refused").to_string();
    assert!(e.contains("host.interrupt_spread"), "{e}");
    c.interrupt_spread = 0.3;
    validate(&c).expect("accepted");
}

#[test]
fn exponential_draws_have_the_exponential_mean_and_tail() {
    let mut c = cfg();
    c.wakeup_spread = 1.0;
    let mut j = Jitter::new(&c, 3).expect("spread on");
    let n = 400_000;
    let xs: Vec<f64> = (0..n).map(|_| j.exp1()).collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    assert!((mean - 1.0).abs() < 0.01, "mean {mean}");
    // P(E > ln 100) = 1 %; beyond the table's last bin, ln 256
    let p99 = xs.iter().filter(|&&x| x > 100f64.ln()).count() as f64 / n as f64;
    assert!((p99 - 0.01).abs() < 0.001, "P(E > 4.6) = {p99}");
    let tail = xs.iter().filter(|&&x| x > 7.0).count() as f64 / n as f64;
    assert!(tail > 0.0005 && tail < 0.0013, "P(E > 7) = {tail}");
    assert!(xs.iter().all(|&x| x >= 0.0 && x.is_finite()));
}

// issue 62: NVMe interrupt coalescing (feature 08h) holds a lone
// completion's interrupt for the aggregation time, and at depth handles
// several entries per interrupt, paying the interrupt's entry once.
#[test]
fn interrupt_coalescing_delays_a_lone_io_and_saves_cpu_at_depth() {
    let mut c = cfg();
    c.interrupt_ns = 1000;
    c.interrupt_cqe_ns = 300;
    let mut co = c.clone();
    co.coalesce_entries = 8;
    co.coalesce_time_100us = 1;
    // one request: the threshold is never reached, the time runs out
    let (off, _) = run(c.clone(), 1, &[(0, 0)], 10_000);
    let (on, _) = run(co.clone(), 1, &[(0, 0)], 10_000);
    assert_eq!(on[0].at - off[0].at, 100_000);
    assert_eq!(
        on[0].breakdown.get(Component::Interrupt),
        off[0].breakdown.get(Component::Interrupt) + 100_000
    );
    // 64 requests of one thread in flight: 8 interrupts instead of 64
    let ios: Vec<_> = (0..64).map(|_| (0u32, 0)).collect();
    let (_, h_off) = run(c.clone(), 1, &ios, 10_000);
    let (done, h_on) = run(co.clone(), 1, &ios, 10_000);
    let (cpu_off, cpu_on) = (
        h_off.cpu_ns_per_io(Op::Read).expect("done"),
        h_on.cpu_ns_per_io(Op::Read).expect("done"),
    );
    // 7 of every 8 entries skip the interrupt's 700 ns entry
    assert!(
        (cpu_off - cpu_on - 700.0 * 7.0 / 8.0).abs() < 1.0,
        "{cpu_off} -> {cpu_on}"
    );
    assert_eq!(done.len(), 64);
    // off unless both fields are set, and a threshold beyond NVMe's
    // 8-bit field is refused by name
    co.coalesce_time_100us = 0;
    let (same, _) = run(co.clone(), 1, &[(0, 0)], 10_000);
    assert_eq!(same[0].at, off[0].at);
    co.coalesce_entries = 300;
    let e = validate(&co).expect_err("refused").to_string();
    assert!(e.contains("host.coalesce_entries"), "{e}");
}
