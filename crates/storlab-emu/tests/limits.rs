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

const SIZE: u64 = 1 << 30;
/// The largest request, scaled down from the 32 MiB so the tests
/// fit a shared CI machine (they run in debug builds; the budgets scale
/// with it: 2x per connection, 128x or 32x for all); the mechanism is the
/// same at any scale. `STORLAB_LIMITS_MIB=32` runs them at the issue's own
/// sizes (a 1 GiB budget in the memory test), as a one-off measurement:
/// `STORLAB_LIMITS_MIB=32 cargo test -p storlab-emu --test limits --
/// --nocapture --test-threads=1 memory_attacks fio_throughput`. Measured
/// so on 2026-11-29, twice (2 shared vCPUs, a load average of 13-15 from
/// other builds): newcomers served within 27 ms (168 ms in the flood),
/// fio kept 70-144 % of its rate alone in every attack (92-95 % with 4096
/// largest reads queued then gone, which gave 0 % when reads were copied
/// at arrival), RSS +1 MiB (reads then gone) and +461-477 MiB (slow
/// readers and half-sent writes) within a 1 GiB budget. Again with the
/// reply buffers counted by capacity (load average 20-23): fio 86-139 %,
/// newcomers within 98 ms, RSS +1, +512 and +673-728 MiB (small replies)
/// for 255, 576 and 768 MiB counted. With `malloc_trim` too (load average
/// 12-17), twice: fio 69-116 %, newcomers within 18 ms, RSS +1, +474-498
/// and +610-710 MiB for 255, 576 and 700-764 MiB counted, +0-32 MiB 5 s
/// after each attack.
fn big() -> u32 {
    static BIG: std::sync::LazyLock<u32> = std::sync::LazyLock::new(|| {
        std::env::var("STORLAB_LIMITS_MIB")
            .ok()
            .map(|v| {
                v.parse::<u32>()
                    .expect("STORLAB_LIMITS_MIB: a number of MiB")
            })
            .unwrap_or(4)
            << 20
    });
    *BIG
}

/// Options for these tests: no real-time spinning (tests run side by side
/// on two CPUs), requests and budgets scaled by 1/8.
fn opts() -> ServeOptions {
    ServeOptions {
        size: SIZE,
        realtime: false,
        wake_assist: false,
        block: storlab_emu::BlockSizes {
            maximum: big(),
            ..Default::default()
        },
        max_buffer_per_connection: 2 * big() as u64,
        max_buffer: 128 * big() as u64,
        ..ServeOptions::default()
    }
}

fn null_server(o: ServeOptions) -> TestServer {
    TestServer::start(o, Box::new(FixedLatency::new(0, SIZE)))
}

/// A fresh client connects, negotiates and reads 4 KiB; how long it took,
/// or why it failed (within `limit`: a refusal must be quick too). The
/// connect itself counts: it runs on a thread, and one that has not
/// connected, negotiated and read within `limit` fails (a unix connect to
/// a full backlog blocks).
fn probe(path: &Path, limit: Duration) -> Result<Duration, String> {
    let p = path.to_path_buf();
    within(limit, move |t| {
        let s =
            UnixStream::connect(&p).map_err(|e| format!("connect after {:?}: {e}", t.elapsed()))?;
        probe_on(s, t, limit, |s, d| s.set_read_timeout(Some(d)))
    })
}

/// [`probe`] over TCP.
fn probe_tcp(addr: std::net::SocketAddr, limit: Duration) -> Result<Duration, String> {
    within(limit, move |t| {
        let s = std::net::TcpStream::connect(addr)
            .map_err(|e| format!("connect after {:?}: {e}", t.elapsed()))?;
        probe_on(s, t, limit, |s, d| s.set_read_timeout(Some(d)))
    })
}

/// Run `f` (given its start) on a thread; its result, or a failure if it
/// has none within `limit` (the thread is left to end by itself).
fn within(
    limit: Duration,
    f: impl FnOnce(Instant) -> Result<Duration, String> + Send + 'static,
) -> Result<Duration, String> {
    let t = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f(t));
    });
    rx.recv_timeout(limit + Duration::from_millis(20))
        .unwrap_or_else(|_| Err(format!("nothing within {limit:?}")))
}

fn probe_on<S: Read + Write>(
    mut s: S,
    t: Instant,
    limit: Duration,
    timeout: impl Fn(&S, Duration) -> std::io::Result<()>,
) -> Result<Duration, String> {
    let fail = |what: &str, e: std::io::Error| format!("{what} after {:?}: {e}", t.elapsed());
    let left = || {
        limit
            .saturating_sub(t.elapsed())
            .max(Duration::from_millis(1))
    };
    timeout(&s, left()).map_err(|e| fail("timeout", e))?;
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).map_err(|e| fail("greeting", e))?;
    s.write_all(&handshake_bytes()).map_err(|e| fail("go", e))?;
    loop {
        timeout(&s, left()).map_err(|e| fail("timeout", e))?;
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
    timeout(&s, left()).map_err(|e| fail("timeout", e))?;
    let mut r = vec![0u8; SIMPLE_REPLY_LEN + 4096];
    s.read_exact(&mut r).map_err(|e| fail("reply", e))?;
    if r[4..8] != [0; 4] {
        return Err("read failed".into());
    }
    Ok(t.elapsed())
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

/// A connection's turn is bounded (at most 32 requests per readiness
/// event); the rest of its input waits in its buffer, not read again from
/// the socket, and must still be served without any more input arriving
/// (epoll reports nothing for bytes already read: the reactor must come
/// back to them by itself).
#[test]
fn a_batch_longer_than_a_turn_is_served_whole() {
    let srv = null_server(opts());
    let mut c = idle_client(&srv.socket).expect("connects");
    let n = 4000u64;
    // 112 KB of requests in one write, then nothing more.
    c.write_all(&reads(n, 512)).expect("sent");
    // Within 5 s (0.2 s in a debug build on a loaded machine; a reactor
    // that never came back to the backlog, or never re-armed the socket,
    // answers 32 and then nothing).
    let t = Instant::now();
    c.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut seen = vec![false; n as usize];
    let mut r = vec![0u8; SIMPLE_REPLY_LEN + 512];
    for i in 0..n {
        c.read_exact(&mut r)
            .unwrap_or_else(|e| panic!("reply {i} of {n}: {e}"));
        assert_eq!(r[4..8], [0; 4], "reply {i} failed");
        let handle = u64::from_be_bytes(r[8..16].try_into().expect("8"));
        assert!(!seen[handle as usize], "handle {handle} twice");
        seen[handle as usize] = true;
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let l = srv.handle().control().report().limits;
    // The batch took several turns (a recv brings at most 32 KiB, 1170
    // requests; a turn takes 32).
    assert!(l.turns_cut >= n / 32 - 2, "{l:?}");
    srv.stop();
}

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
    // A newcomer behind 500 connections' handshakes (each started on a
    // thread and cut) within 1 s: no other test's server shares the CPUs
    // meanwhile (beside the other tests and a lab reproduce loop, once
    // its greeting took 1.03 s).
    let _alone = common::alone();
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
    send_some(&mut c, &reads(4096, big()), Duration::from_millis(500));
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
    send_some(&mut c, &reads(64, big()), Duration::from_millis(500));
    std::thread::sleep(Duration::from_millis(500));
    probe(&srv.socket, Duration::from_secs(1)).expect("others served");
    let l = srv.handle().control().report().limits;
    let b = big() as u64;
    assert!(l.reply_buffer_peak_bytes >= b, "it buffered: {l:?}");
    // Its own budget, never crossed: a request is admitted whole or not.
    assert!(l.reply_buffer_peak_bytes <= 2 * b, "{l:?}");
    assert!(l.throttled > 0);
    drop(c);
    srv.stop();

    // Eight connections: the global budget (4 largest requests; half of
    // it split into 64 reserves, half shared).
    let srv = null_server(ServeOptions {
        max_buffer: 4 * b,
        ..opts()
    });
    let mut cs: Vec<UnixStream> = (0..8)
        .map(|_| idle_client(&srv.socket).expect("connects"))
        .collect();
    for c in &mut cs {
        send_some(c, &reads(8, big()), Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    probe(&srv.socket, Duration::from_secs(1)).expect("others served");
    let l = srv.handle().control().report().limits;
    // At worst the budget (and one request more, admitted to a
    // connection holding nothing while the shared half was empty).
    assert!(l.reply_buffer_peak_bytes <= 5 * b, "{l:?}");
    assert!(l.reply_buffer_peak_bytes < 8 * 2 * b, "{l:?}");
    drop(cs);
    srv.stop();
}

// ------------------------- issue 59: attack first, a newcomer during it

/// The process's resident memory (`VmRSS` of `/proc/self/status`), bytes.
/// The server runs in this process (the tests take the binary alone).
fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .expect("VmRSS");
    kib << 10
}

/// Samples the resident memory every 10 ms until `peak` is asked.
struct RssWatch {
    stop: Arc<AtomicBool>,
    h: JoinHandle<u64>,
}

impl RssWatch {
    fn start() -> RssWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            let mut peak = rss();
            while !s.load(Ordering::SeqCst) {
                peak = peak.max(rss());
                std::thread::sleep(Duration::from_millis(10));
            }
            peak
        });
        RssWatch { stop, h }
    }
    fn peak(self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.h.join().expect("rss watch")
    }
}

/// `n` newcomers, 100 ms apart, while an attack runs: each must connect,
/// negotiate and read within a second; the slowest's time.
fn newcomers_during(srv: &TestServer, n: usize, what: &str) -> Duration {
    let mut worst = Duration::ZERO;
    for i in 0..n {
        let took = probe(&srv.socket, Duration::from_secs(1)).unwrap_or_else(|e| {
            let l = srv.handle().control().report().limits;
            panic!("{what}: newcomer {i} not served within 1 s: {e} ({l:?})")
        });
        worst = worst.max(took);
        std::thread::sleep(Duration::from_millis(100));
    }
    worst
}

/// An attack on its own threads until dropped.
struct Running {
    stop: Arc<AtomicBool>,
    h: Option<JoinHandle<()>>,
}

impl Running {
    fn start(p: &Path, attack: Attack) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (p.to_path_buf(), stop.clone());
        let h = std::thread::spawn(move || attack(p, s));
        Running { stop, h: Some(h) }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.h.take() {
            let _ = h.join();
        }
    }
}

/// How 64 slot holders behave once in.
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// Say nothing.
    Silent,
    /// Send a request header a byte at a time, one every 500 ms (the
    /// issue's 30 s, scaled: never idle long enough to be closed).
    Dribble,
    /// Say nothing, and connect again the moment they are closed.
    Reconnect,
}

/// 64 threads, each holding a serving slot as `how` says, until `stop`.
fn hold_slots(p: &Path, stop: &Arc<AtomicBool>, how: Hold) {
    let hs: Vec<JoinHandle<()>> = (0..64)
        .map(|i| {
            let (p, stop) = (p.to_path_buf(), stop.clone());
            std::thread::spawn(move || {
                let header = reads(1, 4096);
                let mut once = false;
                while !stop.load(Ordering::SeqCst) {
                    if once && !matches!(how, Hold::Reconnect) {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    }
                    let Some(mut c) = idle_client(&p) else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    once = true;
                    let _ = c.set_read_timeout(Some(Duration::from_millis(50)));
                    let mut k = i;
                    let mut last = Instant::now();
                    let mut buf = [0u8; 8192];
                    while !stop.load(Ordering::SeqCst) {
                        if matches!(how, Hold::Dribble)
                            && last.elapsed() > Duration::from_millis(500)
                        {
                            last = Instant::now();
                            if c.write_all(&header[k % header.len()..][..1]).is_err() {
                                break;
                            }
                            k += 1;
                        }
                        match c.read(&mut buf) {
                            Ok(0) => break,
                            Ok(_) => {}
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => break,
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

fn attack_hold_silent(p: PathBuf, stop: Arc<AtomicBool>) {
    hold_slots(&p, &stop, Hold::Silent)
}
fn attack_hold_dribble(p: PathBuf, stop: Arc<AtomicBool>) {
    hold_slots(&p, &stop, Hold::Dribble)
}
fn attack_hold_reconnect(p: PathBuf, stop: Arc<AtomicBool>) {
    hold_slots(&p, &stop, Hold::Reconnect)
}

/// Issue 59, failure 1: 64 clients that finish the handshake hold every
/// serving slot (silent, dribbling a byte now and then, or reconnecting
/// the moment they are closed); a newcomer arriving during it is served
/// within a second, every time.
#[test]
fn slot_holders_cannot_lock_a_newcomer_out() {
    let attacks: [(&str, Attack); 3] = [
        ("silent", attack_hold_silent),
        ("dribbling", attack_hold_dribble),
        ("reconnecting", attack_hold_reconnect),
    ];
    for (name, attack) in attacks {
        let srv = null_server(opts());
        let run = Running::start(&srv.socket, attack);
        // Until every slot is taken (the attack's 64 are in).
        let t = Instant::now();
        while srv.handle().control().report().connections < 64
            && t.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(300));
        let worst = newcomers_during(&srv, 5, name);
        eprintln!("64 {name} slot holders: slowest newcomer {worst:?}");
        drop(run);
        srv.stop();
    }
}

/// Run `connect` `per_s` times a second (in bursts of 100) until `stop`.
fn at_rate(stop: &AtomicBool, per_s: u64, mut connect: impl FnMut()) {
    let t = Instant::now();
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        for _ in 0..100 {
            connect();
        }
        n += 100;
        let due = Duration::from_secs_f64(n as f64 / per_s as f64);
        if let Some(wait) = due.checked_sub(t.elapsed()) {
            std::thread::sleep(wait);
        }
    }
}

/// Two threads connecting and closing 6000 times a second each on the
/// unix socket (the flood: about 12 k a second from two
/// processes).
fn flood_unix(p: PathBuf, stop: Arc<AtomicBool>) {
    let hs: Vec<JoinHandle<()>> = (0..2)
        .map(|_| {
            let (p, stop) = (p.clone(), stop.clone());
            std::thread::spawn(move || {
                at_rate(&stop, 6000, || drop(UnixStream::connect(&p)));
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
}

/// A control-socket command's answer and how long it took (within a
/// second, or a failure).
fn control(path: &Path, cmd: &'static str) -> Result<Duration, String> {
    let p = path.to_path_buf();
    within(Duration::from_secs(1), move |t| {
        let mut s = UnixStream::connect(&p).map_err(|e| format!("connect: {e}"))?;
        s.set_read_timeout(Some(Duration::from_secs(1)))
            .map_err(|e| e.to_string())?;
        s.write_all(format!("{cmd}\n").as_bytes())
            .map_err(|e| format!("send: {e}"))?;
        let mut out = String::new();
        s.read_to_string(&mut out)
            .map_err(|e| format!("answer: {e}"))?;
        if out.is_empty() || out.starts_with("error") {
            return Err(format!("{cmd}: {out:?}"));
        }
        Ok(t.elapsed())
    })
}

/// Issue 59, failure 2: a connection flood (connect and close as fast as
/// the threads go, on the unix socket and over TCP) leaves room for a
/// newcomer on either, and the control socket answers within a second.
#[test]
fn a_connection_flood_leaves_room_for_newcomers_and_the_control_socket() {
    let _alone = common::alone();
    let dir = tempfile::tempdir().expect("tempdir");
    let ctl = dir.path().join("control.sock");
    let srv = null_server(ServeOptions {
        listen: Some("127.0.0.1:0".parse().expect("addr")),
        control: Some(ctl.clone()),
        // As `storlab serve` runs by default: the accept loop at its
        // higher weight. At normal weight, on a host loaded 7 times over
        // (a lab loop and builds beside the tests), draining the 4096
        // connections queued ahead of a newcomer took 650-690 ms of the
        // 1 s allowed.
        realtime: true,
        ..opts()
    });
    let tcp = srv.handle().tcp_addr().expect("tcp");
    let unix = Running::start(&srv.socket, flood_unix);
    let stop = Arc::new(AtomicBool::new(false));
    let tcp_flood: Vec<JoinHandle<()>> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            // (The TCP flood: about 31 k a second.)
            std::thread::spawn(move || {
                at_rate(&stop, 16_000, || drop(std::net::TcpStream::connect(tcp)));
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (mut worst_unix, mut worst_tcp, mut worst_ctl) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for i in 0..10 {
        let u = probe(&srv.socket, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("unix newcomer {i} during the flood: {e}"));
        let t = probe_tcp(tcp, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("TCP newcomer {i} during the flood: {e}"));
        let c = control(&ctl, if i == 5 { "powercut" } else { "stats" })
            .unwrap_or_else(|e| panic!("control command {i} during the flood: {e}"));
        worst_unix = worst_unix.max(u);
        worst_tcp = worst_tcp.max(t);
        worst_ctl = worst_ctl.max(c);
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    for h in tcp_flood {
        let _ = h.join();
    }
    drop(unix);
    let r = srv.handle().control().report();
    eprintln!(
        "connection flood ({} connections): slowest newcomer unix {worst_unix:?}, TCP {worst_tcp:?}, control {worst_ctl:?}",
        r.connections
    );
    assert!(
        r.connections > 1000,
        "a flood: {} connections",
        r.connections
    );
    assert_eq!(r.durability.power_cuts, 1);
    srv.stop();
}

/// 4 threads (the attack is one such loop), each: connect, queue
/// 4096 of the largest reads, leave, again.
fn attack_leave_many(p: PathBuf, stop: Arc<AtomicBool>) {
    leave_loop(p, stop, 4096, Duration::from_millis(100));
}

/// 4 threads, each in a loop: connect, queue `n` of the largest reads,
/// wait `linger`, leave, again.
fn leave_loop(p: PathBuf, stop: Arc<AtomicBool>, n: u64, linger: Duration) {
    let rq = Arc::new(reads(n, big()));
    let hs: Vec<JoinHandle<()>> = (0..4)
        .map(|_| {
            let (p, stop, rq) = (p.clone(), stop.clone(), rq.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let Some(mut c) = idle_client(&p) else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    send_some(&mut c, &rq, Duration::from_millis(200));
                    std::thread::sleep(linger);
                }
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
}

/// Per slow client: one largest write (offset 0), then 64 largest reads
/// whose replies it never takes; per slow writer: half of one largest
/// write. 60 of each, until `stop`.
fn attack_slow_memory(p: PathBuf, stop: Arc<AtomicBool>) {
    let big_buf = Arc::new(vec![0x5au8; big() as usize]);
    let hs: Vec<JoinHandle<()>> = (0..120)
        .map(|i| {
            let (p, stop, buf) = (p.clone(), stop.clone(), big_buf.clone());
            std::thread::spawn(move || {
                let Some(mut c) = idle_client(&p) else {
                    return;
                };
                let w = encode_header(&RequestHeader {
                    flags: 0,
                    typ: CMD_WRITE,
                    handle: 1 << 40,
                    offset: 0,
                    length: big(),
                });
                // (The payload is sent from one buffer all threads share:
                // the resident memory measured is the server's.)
                send_some(&mut c, &w, Duration::from_secs(2));
                if i % 2 == 0 {
                    send_some(&mut c, &buf, Duration::from_secs(2));
                    send_some(&mut c, &reads(64, big()), Duration::from_secs(2));
                } else {
                    send_some(&mut c, &buf[..big() as usize / 2], Duration::from_secs(2));
                }
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
}

/// 64 clients not reading small replies whose sizes leave each reply
/// buffer's capacity twice its length (an 8 KiB read, a flush, an 8 KiB
/// read: 16432 bytes in a buffer grown to 32832), sent
/// until the server stops reading them: the budget fills with replies
/// and must count the memory they are in, not the bytes to send.
fn attack_small_replies(p: PathBuf, stop: Arc<AtomicBool>) {
    let one = |typ, len| {
        encode_header(&RequestHeader {
            flags: 0,
            typ,
            handle: 1,
            offset: if typ == CMD_FLUSH { 0 } else { 4096 },
            length: len,
        })
    };
    let mut pat = one(CMD_READ, 8192).to_vec();
    pat.extend_from_slice(&one(CMD_FLUSH, 0));
    pat.extend_from_slice(&one(CMD_READ, 8192));
    let burst = Arc::new(pat.repeat(256));
    let hs: Vec<JoinHandle<()>> = (0..64)
        .map(|_| {
            let (p, stop, burst) = (p.clone(), stop.clone(), burst.clone());
            std::thread::spawn(move || {
                let Some(mut c) = idle_client(&p) else {
                    return;
                };
                let _ = c.set_write_timeout(Some(Duration::from_millis(200)));
                while !stop.load(Ordering::SeqCst) && c.write_all(&burst).is_ok() {}
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        })
        .collect();
    for h in hs {
        let _ = h.join();
    }
}

/// The memory budget of the memory tests (scaled like the requests).
fn budget() -> u64 {
    32 * big() as u64
}
/// The bar: resident memory within the budget plus 256 MiB at its
/// sizes, scaled like the requests (32 MiB at the default 4 MiB). The
/// server's fixed costs (a 256 KiB read buffer and up to two 64 KiB read
/// pieces per connection, the threads) do not scale; measured at 4 MiB,
/// 2026-11-29: +2-13, +51-67 and +63-74 MiB for 31, 72 and 71-82 MiB
/// counted (a 128 MiB budget).
fn rss_overhead() -> u64 {
    (256 << 20) / 32 * (big() as u64 >> 20)
}

/// Issue 59, failures 3 and 4: clients that queue the largest reads and
/// leave, in a loop; slow readers and half-sent writes. A newcomer during
/// each is served within a second, and the server's resident memory stays
/// within the budget plus 256 MiB.
#[test]
fn memory_attacks_stay_within_the_budget_and_leave_room() {
    let _alone = common::alone();
    let attacks: [(&str, Attack); 3] = [
        (
            "4096 largest reads, then gone, x4 in a loop",
            attack_leave_many,
        ),
        (
            "60 slow readers and 60 half-sent writes",
            attack_slow_memory,
        ),
        ("64 clients not reading small replies", attack_small_replies),
    ];
    for (name, attack) in attacks {
        let srv = null_server(ServeOptions {
            max_connections: 128,
            max_buffer: budget(),
            ..opts()
        });
        // The store's page pool and the reactor's buffers, first.
        probe(&srv.socket, Duration::from_secs(5)).expect("served");
        std::thread::sleep(Duration::from_millis(200));
        let base = rss();
        let watch = RssWatch::start();
        let run = Running::start(&srv.socket, attack);
        // Newcomers while the attack is still being sent and parsed (the
        // small-reply flood takes seconds to parse in a debug build on a
        // loaded machine): the reactor serves a connection a bounded turn
        // of its input at a time, so theirs is read between the
        // flooders' turns (before, a newcomer waited more than 1 s while
        // the flood was parsed, each flooder's whole buffer per turn).
        std::thread::sleep(Duration::from_millis(100));
        let report = || srv.handle().control().report().limits;
        let at_first = report();
        let during = newcomers_during(&srv, 5, name);
        let cut_during = report().turns_cut - at_first.turns_cut;
        // Then until the attack has taken what it can: the buffered bytes
        // stop growing; newcomers again at its peak.
        let buffered = || report().reply_buffer_bytes;
        let until = Instant::now() + Duration::from_secs(30);
        let mut last = buffered();
        while Instant::now() < until {
            std::thread::sleep(Duration::from_millis(500));
            let now = buffered();
            if now <= last {
                break;
            }
            last = now;
        }
        let worst = newcomers_during(&srv, 5, name).max(during);
        let peak = watch.peak();
        let l = srv.handle().control().report().limits;
        drop(run);
        // Once the attackers are gone, what they held goes back to the
        // system (`malloc_trim`, at most once a second): within 5 s.
        let until = Instant::now() + Duration::from_secs(5);
        let mut after = rss();
        while after > base + rss_overhead() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(100));
            after = rss();
        }
        let grew = peak.saturating_sub(base);
        eprintln!(
            "{name}: slowest newcomer {worst:?} ({during:?} while {} MiB of {} were buffered, {cut_during} turns cut meanwhile), RSS +{} MiB over {} MiB before (budget {} MiB), buffered peak {} MiB, +{} MiB after ({} trims)",
            at_first.reply_buffer_bytes >> 20,
            l.reply_buffer_peak_bytes >> 20,
            grew >> 20,
            base >> 20,
            budget() >> 20,
            l.reply_buffer_peak_bytes >> 20,
            after.saturating_sub(base) >> 20,
            srv.handle().control().report().limits.memory_trims
        );
        assert!(
            l.reply_buffer_peak_bytes <= budget(),
            "{name}: {} MiB buffered, past the {} MiB budget",
            l.reply_buffer_peak_bytes >> 20,
            budget() >> 20
        );
        // What the budget counted covers what the server held: resident
        // memory grew by at most that and a fixed overhead, so within the
        // budget and the overhead.
        assert!(
            grew <= l.reply_buffer_peak_bytes + rss_overhead(),
            "{name}: RSS grew {} MiB, past the {} MiB the budget counted + {} MiB",
            grew >> 20,
            l.reply_buffer_peak_bytes >> 20,
            rss_overhead() >> 20
        );
        // (Without `malloc_trim`, +51 and +81 MiB stayed at 4 MiB.)
        assert!(
            after <= base + rss_overhead(),
            "{name}: RSS +{} MiB 5 s after the attack",
            after.saturating_sub(base) >> 20
        );
        srv.stop();
    }
}

/// A device that does one thing at a time at 1 GiB/s (20 µs plus the
/// transfer), in arrival order: what a request costs in device time is
/// its size.
struct Bandwidth {
    busy_until: storlab_model::Nanos,
    capacity: u64,
}

impl storlab_model::Device for Bandwidth {
    fn submit(
        &mut self,
        now: storlab_model::Nanos,
        req: storlab_model::DevRequest,
        cx: &mut storlab_model::Cx,
    ) {
        let start = now.max(self.busy_until);
        self.busy_until = start + 20_000 + req.len * 1_000_000_000 / (1 << 30);
        cx.complete(storlab_model::Completion {
            id: req.id,
            at: self.busy_until,
            breakdown: Default::default(),
            status: 0,
        });
    }
    fn on_event(&mut self, _: storlab_model::Nanos, _: u64, _: &mut storlab_model::Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, _: storlab_model::Nanos) -> storlab_model::DeviceReport {
        storlab_model::DeviceReport::default()
    }
}

/// Queue-depth-1 4 KiB reads on a fresh connection for `windows` windows
/// of `secs` each: the best window's rate, per second. The best window,
/// not the mean: on a shared CI machine other jobs take the CPUs for
/// tenths of a second at a time, and a one-window rate alone ranged
/// 4,151-18,214 IOPS over six runs of the same build (load average 14),
/// so a quarter of it was no bar at all; a client starved by the server
/// is slow in every window, the machine's noise only in some.
fn qd1_iops(path: &Path, windows: u32, secs: f64) -> f64 {
    let mut c = idle_client(path).expect("connects");
    let mut r = vec![0u8; SIMPLE_REPLY_LEN + 4096];
    // A reply later than this is a failure (a stalled window is only
    // slow: it ends with its last reply).
    let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
    let mut best = 0.0f64;
    for _ in 0..windows {
        let t = Instant::now();
        let mut n = 0u64;
        while t.elapsed().as_secs_f64() < secs {
            if c.write_all(&reads(1, 4096)).is_err() || c.read_exact(&mut r).is_err() {
                return best;
            }
            n += 1;
        }
        best = best.max(n as f64 / t.elapsed().as_secs_f64());
    }
    best
}

/// Issue 59, failure 5: 16 write-zeroes of 2 GiB with `NO_HOLE` (448
/// bytes) from a client that leaves at once buy no more than their share
/// of the device: a client arriving during it connects within a second
/// and keeps at least a quarter of its throughput alone.
#[test]
fn huge_write_zeroes_buy_no_more_than_their_share_of_the_device() {
    // Its throughput alone and during the attack are compared: no other
    // test's server (the fio load test's attacks) may run in between.
    let _alone = common::alone();
    let size = 4u64 << 30;
    let srv = TestServer::start(
        ServeOptions {
            size,
            memory_over_ram: true,
            ..opts()
        },
        Box::new(Bandwidth {
            busy_until: 0,
            capacity: size,
        }),
    );
    let alone = qd1_iops(&srv.socket, 4, 0.25);
    let mut a = idle_client(&srv.socket).expect("attacker connects");
    let mut zeroes = Vec::new();
    for i in 0..16u64 {
        zeroes.extend_from_slice(&encode_header(&RequestHeader {
            flags: CMD_FLAG_NO_HOLE,
            typ: CMD_WRITE_ZEROES,
            handle: i,
            offset: 0,
            length: 2 << 30,
        }));
    }
    assert_eq!(zeroes.len(), 448);
    a.write_all(&zeroes).expect("sent");
    std::thread::sleep(Duration::from_millis(100));
    drop(a);
    let connect = probe(&srv.socket, Duration::from_secs(1)).expect("a newcomer is served in 1 s");
    let during = qd1_iops(&srv.socket, 8, 0.25);
    eprintln!(
        "16 x 2 GiB NO_HOLE write-zeroes: newcomer served in {connect:?}, {during:.0} IOPS against {alone:.0} alone ({:.0} %)",
        100.0 * during / alone
    );
    assert!(
        during >= alone / 4.0,
        "{during:.0} IOPS during, {alone:.0} alone"
    );
    // The piece the leaver had in the model held the pool until it ended.
    let l = srv.handle().control().report().limits;
    assert!(l.gone_work_peak_bytes <= u64::from(big()), "{l:?}");
    assert_eq!(l.gone_work_bytes, 0, "{l:?}");
    srv.stop();
}

/// 4 threads, each in a loop: connect, queue 64 of the largest reads,
/// leave once they are in the model (30 ms), again.
fn attack_reads_then_leave(p: PathBuf, stop: Arc<AtomicBool>) {
    leave_loop(p, stop, 64, Duration::from_millis(30));
}

/// Issue 59, device time left by clients gone: reads already in the
/// model keep their device time when their client leaves (nothing can
/// withdraw them without changing the model's answer for everyone else),
/// so they hold the memory budget until they end. Clients queueing the
/// largest reads and leaving, in a loop, on a device doing one thing at a
/// time, then leave at most the budget's worth of reads in it (0.25 s of
/// this device at the default size): a newcomer's read waits behind that,
/// not behind everything every attacker ever queued (seconds more for
/// each second of attack when the budget forgot a connection's reads at
/// its close).
#[test]
fn reads_of_clients_gone_hold_the_budget_until_the_device_ends_them() {
    let _alone = common::alone();
    let budget = 64 * big() as u64;
    let srv = TestServer::start(
        ServeOptions {
            max_buffer: budget,
            max_buffer_per_connection: budget / 2,
            ..opts()
        },
        Box::new(Bandwidth {
            busy_until: 0,
            capacity: SIZE,
        }),
    );
    let run = Running::start(&srv.socket, attack_reads_then_leave);
    std::thread::sleep(Duration::from_secs(2));
    let worst = newcomers_during(&srv, 5, "the largest reads, then gone");
    let l = srv.handle().control().report().limits;
    drop(run);
    eprintln!(
        "largest reads then gone, on a 1 GiB/s device: slowest newcomer {worst:?}, work of clients gone peaked at {} MiB (budget {} MiB)",
        l.gone_work_peak_bytes >> 20,
        budget >> 20
    );
    assert!(l.gone_work_peak_bytes > 0, "no client left work: {l:?}");
    assert!(l.gone_work_peak_bytes <= budget, "{l:?}");
    // Once the device has ended it (at most the budget's worth: 0.25 s),
    // none is left counted: the pool is whole again.
    let until = Instant::now() + Duration::from_secs(10);
    let left = || srv.handle().control().report().limits.gone_work_bytes;
    while left() > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(left(), 0, "work of clients gone still counted 10 s after");
    srv.stop();
}

/// Issue 59, failure 6: a trim larger than the volatile-cache journal
/// leaves other clients' unflushed writes to the model as a small trim
/// does (here a cache that never destages: they are all lost at a cut).
#[test]
fn a_trim_larger_than_the_cache_loosens_no_power_cut() {
    for trim in [512u64 << 20, 2 << 30] {
        let size = 3u64 << 30;
        let srv = TestServer::start(
            ServeOptions {
                size,
                journal_limit: 1 << 30,
                ..opts()
            },
            Box::new(common::Volatile(FixedLatency::new(0, size))),
        );
        let mut a = common::RawClient::connect(&srv.socket, false);
        let mut b = common::RawClient::connect(&srv.socket, false);
        for i in 0..16u64 {
            let r = a.write(i, i * 4096, &[0xa5; 4096], 0);
            assert_eq!(r.error, 0);
        }
        b.send(CMD_TRIM, 0, 99, 1 << 30, trim as u32, &[]);
        assert_eq!(b.recv(|_| 0).error, 0, "trim of {trim} B");
        srv.handle().control().power_cut().expect("cut");
        let kept = (0..16u64)
            .filter(|&i| a.read(100 + i, i * 4096, 4096).data[0] == 0xa5)
            .count();
        let d = srv.handle().control().report().durability;
        eprintln!(
            "after a {} MiB trim: {kept} of 16 unflushed writes kept",
            trim >> 20
        );
        assert_eq!(kept, 0, "a {} MiB trim: {d:?}", trim >> 20);
        assert_eq!(d.lost_writes, 17, "{d:?}");
        srv.stop();
    }
}

/// The buffer a connection keeps for its next large write counts in its
/// budget, and goes when a request would not fit beside it: a largest
/// write then a largest read on one connection (8 MiB budget: the kept
/// 4 MiB buffer and the read's 4 MiB reply do not fit together) are both
/// served.
#[test]
fn a_kept_write_buffer_never_keeps_a_read_out() {
    let srv = null_server(opts());
    let mut c = common::RawClient::connect(&srv.socket, false);
    let data = common::pattern(3, big() as usize);
    for round in 0..3u64 {
        assert_eq!(c.write(round, 0, &data, 0).error, 0, "write {round}");
        let r = c.read(10 + round, 0, big());
        assert_eq!(r.error, 0, "read {round}");
        assert!(r.data == data, "read {round} returns the write");
    }
    srv.stop();
}

// ----------------------------------------------------------- load test

/// An attack running until `stop`.
type Attack = fn(PathBuf, Arc<AtomicBool>);

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

fn attack_no_read(p: PathBuf, stop: Arc<AtomicBool>) {
    let rq = reads(64, big());
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
/// what the attacks compete for). Each attack starts first and fio
/// connects during it (issue 59: fio connecting before the attack missed
/// every lock-out). Held means at least a quarter of alone,
/// the hostile-clients issue's bar: the attackers share the machine's two
/// CPUs with fio and the server (500 sockets, 64 threads dribbling bytes,
/// the largest writes received), and CI runs other work beside them, so some loss
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
    let attacks: [(&str, Attack); 10] = [
        ("64 silent slot holders", attack_hold_silent),
        ("64 slot holders dribbling a byte", attack_hold_dribble),
        ("64 slot holders reconnecting", attack_hold_reconnect),
        ("a connection flood", flood_unix),
        ("500 silent connections", attack_silent),
        ("64 slow-byte handshakes", attack_slow_bytes),
        (
            "4096 largest reads, then gone, x4 in a loop",
            attack_leave_many,
        ),
        ("60 slow readers, 60 half-sent writes", attack_slow_memory),
        ("8 clients not reading the largest reads", attack_no_read),
        ("64 clients flooding small requests", attack_small_replies),
    ];
    let mut lines = vec![format!("alone: {alone:.0} IOPS")];
    let mut worst = f64::MAX;
    for (name, attack) in attacks {
        // The attack first; once it is on, a newcomer (the probe, then
        // fio) arrives during it.
        // (Two seconds: on a loaded host the 120 memory attackers take
        // that long to send what they hold.)
        let run = Running::start(&srv.socket, attack);
        std::thread::sleep(Duration::from_secs(2));
        let connect = probe(&srv.socket, Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{name}: a newcomer is not served within 1 s: {e}"));
        let iops = fio_iops(&uri, secs);
        let ctl = srv.handle().control();
        drop(run);
        let iops = match iops {
            Ok(v) => v,
            Err(e) => {
                lines.push(format!("{name}: {e} ({:?})", ctl.report().limits));
                0.0
            }
        };
        lines.push(format!(
            "{name}: newcomer served in {:.1} ms, fio {iops:.0} IOPS ({:.0} %)",
            connect.as_secs_f64() * 1000.0,
            100.0 * iops / alone
        ));
        worst = worst.min(iops / alone);
        // Let the server shed what is left of the attack.
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!(
        "fio 4 KiB randread QD4, 50 µs device:\n  {}",
        lines.join("\n  ")
    );
    assert!(worst >= 0.25, "fio's throughput fell: {}", lines.join("; "));
    srv.stop();
}
