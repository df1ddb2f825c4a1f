//! A server and its client on one CPU (its own test binary: the test pins
//! its thread, and the server's threads inherit the pinning).

mod common;

use std::time::Instant;

use common::*;
use storlab_emu::ServeOptions;
use storlab_model::devices::fixed::FixedLatency;

/// Pin the calling thread (and the threads it starts) to one CPU it may
/// run on now.
fn pin_to_one_cpu() {
    // SAFETY: a zeroed cpu_set_t is valid; the calls read and write only
    // the set passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
            0
        );
        let cpu = (0..libc::CPU_SETSIZE as usize)
            .rfind(|&c| libc::CPU_ISSET(c, &set))
            .expect("some CPU");
        let mut one: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut one);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one),
            0
        );
    }
}

/// Median latency of `n` 4 KiB reads at queue depth 1 from a device of
/// `model_ns`.
fn median_latency(model_ns: u64, n: u64) -> u64 {
    let size = 16 << 20;
    let srv = TestServer::start(
        ServeOptions {
            size,
            // Four times the default: a spin for the next request would
            // stand out from the noise.
            idle_poll_ns: 200_000,
            ..Default::default()
        },
        Box::new(FixedLatency::new(model_ns, size)),
    );
    let mut c = RawClient::connect(&srv.socket, false);
    let mut lat = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        assert_eq!(c.read(i, (i % 4096) * 4096, 4096).error, 0);
        lat.push(t.elapsed().as_nanos() as u64);
    }
    c.disconnect();
    srv.stop();
    lat.sort_unstable();
    lat[lat.len() / 2]
}

#[test]
fn a_client_on_the_servers_only_cpu_is_not_held_off_by_its_spinning() {
    // The reactor spins for a queue-depth-1 client's next request (the
    // idle-poll window) when the client has a CPU of its own; on the
    // reactor's only CPU the client could not send it until the spin
    // ended, and every request took the whole window longer.
    pin_to_one_cpu();
    let floor = median_latency(0, 1500);
    let model_ns = 100_000;
    let timed = median_latency(model_ns, 1500);
    assert!(
        timed < floor + model_ns + 60_000,
        "median {} µs for a {} µs device on one CPU, {} µs at zero latency",
        timed / 1000,
        model_ns / 1000,
        floor / 1000
    );
}
