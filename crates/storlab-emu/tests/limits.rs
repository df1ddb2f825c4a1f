//! Availability: the five attacks of issue 44, scaled to seconds, each
//! against a zero-latency server on a unix socket; after (or during) each,
//! a fresh client must be served within a second. Then a load test: a
//! well-behaved fio client's throughput alone and under each attack.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{require, TestServer};
use storlab_emu::proto::*;
use storlab_emu::request::{encode_header, RequestHeader};
use storlab_emu::ServeOptions;
use storlab_model::devices::fixed::FixedLatency;

const MIB: u64 = 1 << 20;
const SIZE: u64 = 1 << 30;
/// The largest request, scaled down from the default 32 MiB with the
/// budgets (8 MiB per connection here, 64 MiB by default): these tests
/// run in debug builds, where copying 32 MiB takes the reactor a large
/// part of a second; the mechanism is the same at any scale.
const BIG: u32 = 4 << 20;

/// Options for these tests: no real-time spinning (tests run side by side
/// on two CPUs), requests and budgets scaled by 1/8.
fn opts() -> ServeOptions {
    ServeOptions {
        size: SIZE,
        realtime: false,
        wake_assist: false,
        block: storlab_emu::BlockSizes {
            maximum: BIG,
            ..Default::default()
        },
        max_buffer_per_connection: 2 * BIG as u64,
        max_buffer: 128 * BIG as u64,
        ..ServeOptions::default()
    }
}

fn null_server(o: ServeOptions) -> TestServer {
    TestServer::start(o, Box::new(FixedLatency::new(0, SIZE)))
}

/// A fresh client connects, negotiates and reads 4 KiB; how long it took,
/// or why it failed (within `limit`: a refusal must be quick too).
fn probe(path: &Path, limit: Duration) -> Result<Duration, String> {
    let t = Instant::now();
    let fail = |what: &str, e: std::io::Error| format!("{what} after {:?}: {e}", t.elapsed());
    let mut s = UnixStream::connect(path).map_err(|e| fail("connect", e))?;
    let left = || {
        limit
            .saturating_sub(t.elapsed())
            .max(Duration::from_millis(1))
    };
    s.set_read_timeout(Some(left()))
        .map_err(|e| fail("timeout", e))?;
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).map_err(|e| fail("greeting", e))?;
    s.write_all(&handshake_bytes()).map_err(|e| fail("go", e))?;
    loop {
        s.set_read_timeout(Some(left()))
            .map_err(|e| fail("timeout", e))?;
        let mut h = [0u8; 20];
        s.read_exact(&mut h).map_err(|e| fail("option reply", e))?;
        let typ = u32::from_be_bytes(h[12..16].try_into().expect("4"));
        let len = u32::from_be_bytes(h[16..20].try_into().expect("4"));
        let mut d = vec![0u8; len as usize];
        s.read_exact(&mut d).map_err(|e| fail("option data", e))?;
        match typ {
            REP_ACK => break,
            REP_INFO => {}
            other => return Err(format!("option reply {other:#x}")),
        }
    }
    s.write_all(&reads(1, 4096)).map_err(|e| fail("read", e))?;
    s.set_read_timeout(Some(left()))
        .map_err(|e| fail("timeout", e))?;
    let mut r = vec![0u8; SIMPLE_REPLY_LEN + 4096];
    s.read_exact(&mut r).map_err(|e| fail("reply", e))?;
    if r[4..8] != [0; 4] {
        return Err("read failed".into());
    }
    Ok(t.elapsed())
}

/// Probe until one succeeds; the time from `from` to that success.
fn served_within(path: &Path, from: Instant, limit: Duration) -> Duration {
    loop {
        match probe(path, Duration::from_secs(1)) {
            Ok(_) => return from.elapsed(),
            Err(e) => assert!(from.elapsed() < limit, "not served within {limit:?}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Connect and finish the handshake (or be refused), then say nothing.
fn idle_client(path: &Path) -> Option<UnixStream> {
    let mut s = UnixStream::connect(path).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).ok()?;
    s.write_all(&handshake_bytes()).ok()?;
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).ok()?;
        let typ = u32::from_be_bytes(h[12..16].try_into().ok()?);
        let len = u32::from_be_bytes(h[16..20].try_into().ok()?);
        let mut d = vec![0u8; len as usize];
        s.read_exact(&mut d).ok()?;
        match typ {
            REP_ACK => return Some(s),
            REP_INFO => {}
            _ => return None,
        }
    }
}

/// The handshake a client sends after the greeting: flags, `NBD_OPT_GO`.
fn handshake_bytes() -> Vec<u8> {
    let mut v = 3u32.to_be_bytes().to_vec();
    v.extend_from_slice(&IHAVEOPT.to_be_bytes());
    v.extend_from_slice(&OPT_GO.to_be_bytes());
    v.extend_from_slice(&6u32.to_be_bytes());
    v.extend_from_slice(&[0u8; 6]);
    v
}

/// Read requests for `n` × `len` bytes, back to back.
fn reads(n: u64, len: u32) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n {
        v.extend_from_slice(&encode_header(&RequestHeader {
            flags: 0,
            typ: CMD_READ,
            handle: i,
            offset: (i * len as u64) % (SIZE - len as u64),
            length: len,
        }));
    }
    v
}

/// Send as much of `bytes` as the server takes within `within`.
fn send_some(s: &mut UnixStream, bytes: &[u8], within: Duration) {
    let _ = s.set_write_timeout(Some(within));
    let _ = s.write_all(bytes);
}

// ------------------------------------------------------------- attacks

#[test]
fn a_newcomer_evicts_the_idlest_when_every_slot_is_taken() {
    let srv = null_server(ServeOptions {
        idle_timeout: Some(Duration::from_secs(2)),
        ..opts()
    });
    let idle: Vec<UnixStream> = (0..64).filter_map(|_| idle_client(&srv.socket)).collect();
    assert_eq!(idle.len(), 64, "64 serving slots");
    // Every serving slot is taken: a newcomer is served at once all the
    // same, in the slot of the connection idle longest (the first).
    let t = Instant::now();
    let took = probe(&srv.socket, Duration::from_secs(1)).expect("served");
    assert!(took < Duration::from_secs(1), "served after {took:?}");
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut b = [0u8; 1];
    assert!(
        matches!(first.read(&mut b), Ok(0) | Err(_)),
        "the idlest client was closed"
    );
    // After the idle timeout the other idle clients are gone too.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut r = srv.handle().control().report();
    while r.limits.idle_closed + r.limits.evicted < 64 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        r = srv.handle().control().report();
    }
    assert_eq!(r.limits.evicted, 1, "{:?}", r.limits);
    assert_eq!(r.limits.idle_closed, 63, "{:?}", r.limits);
    assert!(t.elapsed() > Duration::from_secs(2), "idle timeout kept");
    drop(idle);
    srv.stop();
}

#[test]
fn a_handshake_ending_when_the_serving_slots_are_taken_evicts() {
    let srv = null_server(ServeOptions {
        max_connections: 1,
        ..opts()
    });
    // A starts its handshake (reads the greeting, says nothing yet).
    let mut a = UnixStream::connect(&srv.socket).expect("connect");
    a.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut greet = [0u8; 18];
    a.read_exact(&mut greet).expect("greeting");
    // B takes the only serving slot.
    let mut b = idle_client(&srv.socket).expect("B is served");
    // A finishes its handshake: B, idle, is evicted and A is in.
    a.write_all(&handshake_bytes()).expect("go");
    let mut reply = [0u8; 20];
    a.read_exact(&mut reply).expect("A is acknowledged");
    b.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    let mut one = [0u8; 1];
    assert!(matches!(b.read(&mut one), Ok(0) | Err(_)), "B was closed");
    let l = srv.handle().control().report().limits;
    assert_eq!((l.evicted, l.refused_at_go), (1, 0), "{l:?}");
    srv.stop();
}

#[test]
fn silent_connections_do_not_lock_newcomers_out() {
    let srv = null_server(opts());
    let silent: Vec<UnixStream> = (0..500)
        .map(|_| UnixStream::connect(&srv.socket).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let took = probe(&srv.socket, Duration::from_secs(1)).expect("served");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let r = srv.handle().control().report();
    assert!(r.limits.handshakes_cut >= 400, "{:?}", r.limits);
    drop(silent);
    srv.stop();
}

#[test]
fn the_whole_handshake_has_a_deadline() {
    let srv = null_server(ServeOptions {
        handshake_timeout: Duration::from_secs(1),
        ..opts()
    });
    let stop = Arc::new(AtomicBool::new(false));
    let bytes = handshake_bytes();
    // 8 clients sending their handshake a byte every 100 ms (it needs 3 s).
    let slow: Vec<JoinHandle<Option<Duration>>> = (0..8)
        .map(|_| {
            let (p, b) = (srv.socket.clone(), bytes.clone());
            std::thread::spawn(move || {
                let mut s = UnixStream::connect(&p).ok()?;
                let t = Instant::now();
                let mut greet = [0u8; 18];
                s.read_exact(&mut greet).ok()?;
                for byte in b {
                    if s.write_all(&[byte]).is_err() {
                        return Some(t.elapsed());
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                // Sent it all: the server answered (it should have cut us).
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut b = [0u8; 1];
                match s.read(&mut b) {
                    Ok(0) | Err(_) => Some(t.elapsed()),
                    Ok(_) => None,
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    probe(&srv.socket, Duration::from_secs(1)).expect("served meanwhile");
    for h in slow {
        let cut = h.join().expect("thread").expect("cut by the deadline");
        assert!(cut < Duration::from_millis(1800), "cut after {cut:?}");
    }
    stop.store(true, Ordering::SeqCst);
    let r = srv.handle().control().report();
    assert_eq!(r.limits.handshake_timeouts, 8, "{:?}", r.limits);
    srv.stop();
}

#[test]
fn work_for_a_client_that_left_is_dropped() {
    let srv = null_server(opts());
    let mut c = idle_client(&srv.socket).expect("connects");
    // 4096 reads of the largest size queued, then the client leaves
    // without reading a reply.
    send_some(&mut c, &reads(4096, BIG), Duration::from_millis(500));
    std::thread::sleep(Duration::from_millis(500));
    drop(c);
    let t = Instant::now();
    let took = probe(&srv.socket, Duration::from_secs(1)).expect("served");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let r = srv.handle().control().report();
    assert_eq!(r.limits.dropped_dead, 1, "{:?}", r.limits);
    // A handful of the reads were ever served (the budget's worth).
    assert!(r.ops[0].requests < 20, "{} reads served", r.ops[0].requests);
    let stop = Instant::now();
    srv.stop();
    assert!(
        stop.elapsed() < Duration::from_secs(2),
        "stopped in {:?}",
        stop.elapsed()
    );
    assert!(t.elapsed() < Duration::from_secs(3));
}

#[test]
fn replies_a_client_does_not_read_stay_within_the_budgets() {
    // One connection: its own budget (2 largest requests).
    let srv = null_server(opts());
    let mut c = idle_client(&srv.socket).expect("connects");
    send_some(&mut c, &reads(64, BIG), Duration::from_millis(500));
    std::thread::sleep(Duration::from_millis(500));
    probe(&srv.socket, Duration::from_secs(1)).expect("others served");
    let l = srv.handle().control().report().limits;
    let big = BIG as u64;
    assert!(l.reply_buffer_peak_bytes >= big, "it buffered: {l:?}");
    // Its own budget, never crossed: a request is admitted whole or not.
    assert!(l.reply_buffer_peak_bytes <= 2 * big, "{l:?}");
    assert!(l.throttled > 0);
    drop(c);
    srv.stop();

    // Eight connections: the global budget (4 largest requests; half of
    // it split into 64 reserves, half shared).
    let srv = null_server(ServeOptions {
        max_buffer: 4 * big,
        ..opts()
    });
    let mut cs: Vec<UnixStream> = (0..8)
        .map(|_| idle_client(&srv.socket).expect("connects"))
        .collect();
    for c in &mut cs {
        send_some(c, &reads(8, BIG), Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    probe(&srv.socket, Duration::from_secs(1)).expect("others served");
    let l = srv.handle().control().report().limits;
    // At worst the budget (and one request more, admitted to a
    // connection holding nothing while the shared half was empty).
    assert!(l.reply_buffer_peak_bytes <= 5 * big, "{l:?}");
    assert!(l.reply_buffer_peak_bytes < 8 * 2 * big, "{l:?}");
    drop(cs);
    srv.stop();
}

// ----------------------------------------------------------- load test

/// An attack running until `stop`.
type Attack = fn(PathBuf, Arc<AtomicBool>);

fn attack_idle(p: PathBuf, stop: Arc<AtomicBool>) {
    let mut held = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        // Keep every serving slot wanted: as the idle timeout closes some,
        // take them again.
        if let Some(c) = idle_client(&p) {
            held.push(c);
        } else {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn attack_silent(p: PathBuf, stop: Arc<AtomicBool>) {
    let mut held = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        if held.len() < 500 {
            if let Ok(s) = UnixStream::connect(&p) {
                held.push(s);
            }
        } else {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn attack_slow_bytes(p: PathBuf, stop: Arc<AtomicBool>) {
    let bytes = handshake_bytes();
    let hs: Vec<JoinHandle<()>> = (0..64)
        .map(|_| {
            let (p, b, stop) = (p.clone(), bytes.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let Ok(mut s) = UnixStream::connect(&p) else {
                        std::thread::sleep(Duration::from_millis(100));
                        continue;
                    };
                    // A byte every 100 ms; cut (or done), it comes back
                    // at the same pace.
                    for &byte in &b {
                        std::thread::sleep(Duration::from_millis(100));
                        if stop.load(Ordering::SeqCst) || s.write_all(&[byte]).is_err() {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
}

fn attack_leave(p: PathBuf, stop: Arc<AtomicBool>) {
    let rq = reads(4096, BIG);
    while !stop.load(Ordering::SeqCst) {
        let Some(mut c) = idle_client(&p) else {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        };
        send_some(&mut c, &rq, Duration::from_millis(200));
        std::thread::sleep(Duration::from_millis(300));
    }
}

fn attack_no_read(p: PathBuf, stop: Arc<AtomicBool>) {
    let rq = reads(64, BIG);
    let mut cs: Vec<UnixStream> = (0..8).filter_map(|_| idle_client(&p)).collect();
    for c in &mut cs {
        send_some(c, &rq, Duration::from_millis(50));
    }
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// fio's 4 KiB random reads at queue depth 4 for `secs` after a second of
/// ramp (not counted): IOPS.
fn fio_iops(uri: &str, secs: u32) -> Result<f64, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("fio.json");
    let o = Command::new("fio")
        .current_dir(dir.path())
        .args([
            "--name=load",
            "--ioengine=nbd",
            &format!("--uri={uri}"),
            "--rw=randread",
            "--bs=4k",
            "--iodepth=4",
            "--size=256M",
            "--time_based",
            "--ramp_time=1",
            &format!("--runtime={secs}"),
            "--output-format=json",
        ])
        .arg(format!("--output={}", out.display()))
        .output()
        .expect("fio runs");
    if !o.status.success() {
        return Err(format!(
            "fio failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("fio output")).expect("json");
    Ok(v["jobs"][0]["read"]["iops"].as_f64().expect("iops"))
}

/// fio's throughput alone and under each attack, on a 50 µs device (a
/// fast SSD; replies wait for deadlines, so the server's spare time is
/// what the attacks compete for). Held means at least a quarter of alone,
/// the hostile-clients issue's bar: the attackers share the machine's two
/// CPUs with fio and the server (500 sockets, 64 threads dribbling bytes,
/// 4 MiB reads copied), and CI runs other work beside them, so some loss
/// is the machine's, not the server's (a loaded clean-clone run gave 45 %
/// in the not-reading attack where a quiet one gives 60-100 %); a lock-out
/// or a stall shows as near zero.
/// The load test's idle timeout.
const IDLE: Duration = Duration::from_secs(3);

#[test]
fn fio_throughput_is_held_under_each_attack() {
    require("fio", "fio");
    let _alone = common::alone();
    let srv = TestServer::start(
        ServeOptions {
            // fio itself is closed as idle if the host stops it for the
            // idle timeout (it sends nothing meanwhile): on a loaded CI
            // machine a 1 s timeout closed it (connection reset) in the
            // not-reading attack. 3 s is longer than any such pause seen,
            // and the attacks still shed within the test.
            idle_timeout: Some(IDLE),
            handshake_timeout: Duration::from_secs(1),
            realtime: true,
            wake_assist: true,
            ..opts()
        },
        Box::new(FixedLatency::new(50_000, SIZE)),
    );
    let uri = srv.uri();
    let secs = 3;
    let alone = fio_iops(&uri, secs).expect("fio alone");
    let attacks: [(&str, Attack); 5] = [
        ("64 idle clients", attack_idle),
        ("500 silent connections", attack_silent),
        ("64 slow-byte handshakes", attack_slow_bytes),
        ("4096 x 4 MiB reads, then gone", attack_leave),
        ("8 clients not reading 4 MiB reads", attack_no_read),
    ];
    let mut lines = vec![format!("alone: {alone:.0} IOPS")];
    let mut worst = f64::MAX;
    for (name, attack) in attacks {
        // fio connects first (a client holding its connection; every
        // serving slot the attack then takes refuses newcomers), and
        // counts from one second in, once the attack is on.
        let fio = {
            let u = uri.clone();
            std::thread::spawn(move || fio_iops(&u, secs))
        };
        let ctl = srv.handle().control();
        let before = ctl.report().ops[0].requests;
        let t = Instant::now();
        while ctl.report().ops[0].requests < before + 100 && t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let h = {
            let (p, s) = (srv.socket.clone(), stop.clone());
            std::thread::spawn(move || attack(p, s))
        };
        let iops = fio.join().expect("fio ran");
        stop.store(true, Ordering::SeqCst);
        let _ = h.join();
        let iops = match iops {
            Ok(v) => v,
            Err(e) => {
                lines.push(format!("{name}: {e} ({:?})", ctl.report().limits));
                0.0
            }
        };
        lines.push(format!(
            "{name}: {iops:.0} IOPS ({:.0} %)",
            100.0 * iops / alone
        ));
        worst = worst.min(iops / alone);
        // Let the server shed the attack's connections.
        std::thread::sleep(IDLE + Duration::from_millis(200));
    }
    eprintln!(
        "fio 4 KiB randread QD4, 50 µs device:\n  {}",
        lines.join("\n  ")
    );
    assert!(worst >= 0.25, "fio's throughput fell: {}", lines.join("; "));
    srv.stop();
}
