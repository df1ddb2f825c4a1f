//! The NBD protocol as a raw client sees it: round trips, out-of-order
//! replies, error replies, hostile input, durability and power cuts.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::*;
use storlab_emu::proto::*;
use storlab_emu::{BlockSizes, ServeOptions, StoreSpec};
use storlab_model::devices::fixed::FixedLatency;

const MIB: u64 = 1 << 20;

#[test]
fn write_then_read_back_simple_and_structured() {
    let srv = TestServer::memory(64 * MIB);
    for structured in [false, true] {
        let mut c = RawClient::connect(&srv.socket, structured);
        assert_eq!(c.size, 64 * MIB);
        let flags = FLAG_HAS_FLAGS
            | FLAG_SEND_FLUSH
            | FLAG_SEND_FUA
            | FLAG_SEND_TRIM
            | FLAG_SEND_WRITE_ZEROES;
        assert_eq!(c.flags & flags, flags);
        assert_ne!(c.flags & FLAG_CAN_MULTI_CONN, 0);
        assert_eq!(c.flags & FLAG_SEND_DF != 0, structured);
        let data = pattern(structured as u8, 100_000);
        let off = 12_345 + structured as u64 * MIB;
        assert_eq!(c.write(1, off, &data, 0).error, 0);
        let r = c.read(2, off, data.len() as u32);
        assert_eq!((r.handle, r.error), (2, 0));
        assert!(r.data == data, "data read back differs");
        // Unwritten space reads as zeros.
        assert!(c.read(3, 40 * MIB, 4096).data.iter().all(|&b| b == 0));
        assert_eq!(c.flush(4).error, 0);
        c.disconnect();
    }
    let report = srv.stop();
    assert_eq!(report.ops[0].requests, 4);
    assert_eq!(report.protocol_errors, 0);
}

#[test]
fn trim_and_write_zeroes_read_back_as_zeros() {
    let srv = TestServer::memory(16 * MIB);
    let mut c = RawClient::connect(&srv.socket, true);
    c.write(1, 0, &vec![0xee; 3 * 4096], 0);
    c.send(CMD_TRIM, 0, 2, 0, 4096, &[]);
    assert_eq!(c.recv(|_| 0).error, 0);
    c.send(
        CMD_WRITE_ZEROES,
        CMD_FLAG_NO_HOLE | CMD_FLAG_FUA,
        3,
        4096 + 100,
        1000,
        &[],
    );
    assert_eq!(c.recv(|_| 0).error, 0);
    let r = c.read(4, 0, 3 * 4096).data;
    assert!(r[..4096].iter().all(|&b| b == 0));
    assert!(r[4096..4196].iter().all(|&b| b == 0xee));
    assert!(r[4196..5196].iter().all(|&b| b == 0));
    assert!(r[5196..].iter().all(|&b| b == 0xee));
}

#[test]
fn replies_come_back_in_completion_order() {
    let size = 64 * MIB;
    let srv = TestServer::of(size, Box::new(OffsetLatency(size)));
    let mut c = RawClient::connect(&srv.socket, true);
    // 40 ms, then 0 ms: the second must be answered first.
    c.send(CMD_READ, 0, 1, 40 * 4096, 512, &[]);
    c.send(CMD_READ, 0, 2, 0, 512, &[]);
    let t0 = Instant::now();
    let a = c.recv(|_| 512);
    let b = c.recv(|_| 512);
    assert_eq!((a.handle, b.handle), (2, 1));
    assert!(
        t0.elapsed() >= Duration::from_millis(35),
        "held for the model's deadline"
    );
}

#[test]
fn many_requests_in_flight() {
    let srv = TestServer::of(64 * MIB, Box::new(FixedLatency::new(200_000, 64 * MIB)));
    let mut c = RawClient::connect(&srv.socket, false);
    for i in 0..64u64 {
        c.send(CMD_WRITE, 0, i, i * 4096, 4096, &pattern(i as u8, 4096));
    }
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..64 {
        let r = c.recv(|_| 0);
        assert_eq!(r.error, 0);
        seen.insert(r.handle);
    }
    assert_eq!(seen.len(), 64);
    for i in 0..64u64 {
        c.send(CMD_READ, 0, 1000 + i, i * 4096, 4096, &[]);
    }
    for _ in 0..64 {
        let r = c.recv(|_| 4096);
        let i = r.handle - 1000;
        assert_eq!(r.data, pattern(i as u8, 4096));
    }
    let report = srv.stop();
    assert!(report.ops[1].model_latency.p50_ns >= 199_000);
}

#[test]
fn error_replies_keep_the_connection_usable() {
    let size = 16 * MIB;
    let srv = TestServer::start(
        ServeOptions {
            size,
            block: BlockSizes {
                minimum: 512,
                preferred: 4096,
                maximum: MIB as u32,
            },
            ..Default::default()
        },
        Box::new(FixedLatency::new(0, size)),
    );
    for structured in [false, true] {
        let mut c = RawClient::connect(&srv.socket, structured);
        let cases: Vec<(u16, u16, u64, u32, Vec<u8>, u32)> = vec![
            (CMD_READ, 0, size, 512, vec![], EINVAL), // read past the end
            (CMD_WRITE, 0, size - 512, 1024, vec![1; 1024], ENOSPC), // write past the end
            (CMD_TRIM, 0, u64::MAX - 511, 512, vec![], ENOSPC), // offset overflow
            (CMD_READ, 0, 100, 512, vec![], EINVAL),  // misaligned
            (CMD_WRITE, 0, 0, 700, vec![2; 700], EINVAL), // misaligned length
            (CMD_READ, 0, 0, 2 * MIB as u32, vec![], EOVERFLOW), // too big
            (
                CMD_WRITE,
                0,
                0,
                2 * MIB as u32,
                vec![3; 2 * MIB as usize],
                EOVERFLOW,
            ),
            (42, 0, 0, 512, vec![], EINVAL), // unknown command
            (CMD_READ, 1 << 12, 0, 512, vec![], EINVAL), // unknown flag
            (CMD_WRITE, CMD_FLAG_NO_HOLE, 0, 512, vec![4; 512], EINVAL), // flag not for writes
            (CMD_FLUSH, 0, 512, 0, vec![], EINVAL), // flush with an offset
            (CMD_READ, 0, 0, 0, vec![], EINVAL), // zero length
        ];
        for (i, (typ, flags, off, len, payload, errno)) in cases.into_iter().enumerate() {
            c.send(typ, flags, i as u64, off, len, &payload);
            let r = c.recv(|_| 0);
            assert_eq!(
                (r.handle, r.error),
                (i as u64, errno),
                "case {i} (structured={structured})"
            );
            assert!(r.data.is_empty());
        }
        // The stream is still in sync and nothing was written.
        let r = c.read(99, 0, 4096);
        assert_eq!(r.error, 0);
        assert!(
            r.data.iter().all(|&b| b == 0),
            "rejected writes must not write"
        );
        c.disconnect();
    }
    let report = srv.stop();
    assert_eq!(report.protocol_errors, 24);
}

#[test]
fn read_only_export_refuses_writes() {
    let srv = TestServer::start(
        ServeOptions {
            size: MIB,
            read_only: true,
            ..Default::default()
        },
        Box::new(FixedLatency::new(0, MIB)),
    );
    let mut c = RawClient::connect(&srv.socket, true);
    assert_ne!(c.flags & FLAG_READ_ONLY, 0);
    assert_eq!(c.flags & FLAG_SEND_TRIM, 0);
    assert_eq!(c.write(1, 0, &[1; 512], 0).error, EPERM);
    c.send(CMD_TRIM, 0, 2, 0, 512, &[]);
    assert_eq!(c.recv(|_| 0).error, EPERM);
    c.send(CMD_WRITE_ZEROES, 0, 3, 0, 512, &[]);
    assert_eq!(c.recv(|_| 0).error, EPERM);
    assert_eq!(c.read(4, 0, 512).error, 0);
    assert_eq!(c.flush(5).error, 0);
}

/// Another client keeps working while this one misbehaves.
fn assert_server_alive(srv: &TestServer) {
    let mut c = RawClient::connect(&srv.socket, false);
    assert_eq!(c.write(1, 4096, b"alive", 0).error, 0);
    assert_eq!(c.read(2, 4096, 5).data, b"alive");
    c.disconnect();
}

#[test]
fn hostile_clients_are_closed_and_others_keep_working() {
    let srv = TestServer::memory(4 * MIB);
    // Garbage instead of client flags.
    let mut s = RawClient::connect_raw(&srv.socket);
    s.write_all(&[0xff; 64]).expect("write");
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
    assert_eq!(sink.len(), 18, "only the greeting, then closed");
    // Bad request magic after a good handshake.
    let mut c = RawClient::connect(&srv.socket, false);
    c.sock.write_all(&[0u8; 28]).expect("write");
    let mut b = [0u8; 1];
    assert_eq!(c.sock.read(&mut b).expect("closed cleanly"), 0);
    // A truncated request, then the client vanishes mid-write.
    let mut c = RawClient::connect(&srv.socket, true);
    c.send(CMD_WRITE, 0, 1, 0, MIB as u32, &vec![7u8; 1000]);
    drop(c);
    // Hang up during the handshake.
    drop(RawClient::connect_raw(&srv.socket));
    // An oversized option is skipped with an error, then things go on.
    let mut s = RawClient::connect_raw(&srv.socket);
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).expect("greeting");
    s.write_all(&1u32.to_be_bytes()).expect("flags");
    let mut opt = IHAVEOPT.to_be_bytes().to_vec();
    opt.extend_from_slice(&77u32.to_be_bytes());
    opt.extend_from_slice(&(100_000u32).to_be_bytes());
    opt.extend_from_slice(&vec![1u8; 100_000]);
    s.write_all(&opt).expect("option");
    let (_, typ, _) = RawClient::opt_reply(&mut s);
    assert_eq!(typ, REP_ERR_TOO_BIG);
    assert_server_alive(&srv);
    // Nothing from the half-written request reached the store.
    let mut c = RawClient::connect(&srv.socket, false);
    assert!(c.read(1, 0, 1000).data.iter().all(|&b| b == 0));
    c.disconnect();
    let report = srv.stop();
    assert_eq!(report.protocol_violations, 1);
    assert!(report.handshake_failures >= 2);
}

#[test]
fn options_list_info_abort_and_unknown() {
    let srv = TestServer::memory(MIB);
    let mut s = RawClient::connect_raw(&srv.socket);
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).expect("greeting");
    assert_eq!(
        u16::from_be_bytes([greet[16], greet[17]]),
        FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES
    );
    s.write_all(&1u32.to_be_bytes()).expect("flags");
    let opt = |o: u32, d: &[u8]| {
        let mut v = IHAVEOPT.to_be_bytes().to_vec();
        v.extend_from_slice(&o.to_be_bytes());
        v.extend_from_slice(&(d.len() as u32).to_be_bytes());
        v.extend_from_slice(d);
        v
    };
    s.write_all(&opt(OPT_LIST, &[])).expect("list");
    let (_, t, d) = RawClient::opt_reply(&mut s);
    assert_eq!(t, REP_SERVER);
    assert_eq!(&d[4..4 + 7], b"storlab");
    assert_eq!(RawClient::opt_reply(&mut s).1, REP_ACK);
    s.write_all(&opt(OPT_STARTTLS, &[])).expect("tls");
    assert_eq!(RawClient::opt_reply(&mut s).1, REP_ERR_UNSUP);
    let mut info = 7u32.to_be_bytes().to_vec();
    info.extend_from_slice(b"storlab");
    info.extend_from_slice(&2u16.to_be_bytes());
    info.extend_from_slice(&INFO_NAME.to_be_bytes());
    info.extend_from_slice(&INFO_DESCRIPTION.to_be_bytes());
    s.write_all(&opt(OPT_INFO, &info)).expect("info");
    let mut types = Vec::new();
    loop {
        let (_, t, d) = RawClient::opt_reply(&mut s);
        if t != REP_INFO {
            assert_eq!(t, REP_ACK);
            break;
        }
        types.push(u16::from_be_bytes([d[0], d[1]]));
    }
    assert_eq!(
        types,
        vec![INFO_EXPORT, INFO_NAME, INFO_DESCRIPTION, INFO_BLOCK_SIZE]
    );
    s.write_all(&opt(OPT_ABORT, &[])).expect("abort");
    assert_eq!(RawClient::opt_reply(&mut s).1, REP_ACK);
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(rest.is_empty());
}

#[test]
fn power_cut_loses_exactly_the_unflushed_writes_of_a_volatile_cache() {
    let size = 16 * MIB;
    let srv = TestServer::of(size, Box::new(Volatile(FixedLatency::new(10_000, size))));
    let mut a = RawClient::connect(&srv.socket, false);
    let mut b = RawClient::connect(&srv.socket, true);
    a.write(1, 0, &[1; 8192], 0);
    // A flush on the other connection covers it (CAN_MULTI_CONN).
    assert_eq!(b.flush(2).error, 0);
    a.write(3, 4096, &[2; 8192], 0); // unflushed, overlaps the flushed data
    a.write(4, MIB, &[3; 4096], CMD_FLAG_FUA); // durable by itself
    b.send(CMD_TRIM, 0, 5, 0, 4096, &[]); // unflushed trim
    assert_eq!(b.recv(|_| 0).error, 0);
    srv.handle().control().power_cut().expect("power cut");
    let r = a.read(6, 0, 12288).data;
    assert_eq!(r[..8192], [1; 8192][..], "flushed data survives");
    assert!(r[8192..].iter().all(|&x| x == 0), "unflushed write lost");
    assert_eq!(
        b.read(7, MIB, 4096).data,
        vec![3; 4096],
        "FUA write survives"
    );
    a.disconnect();
    b.disconnect();
    let report = srv.stop();
    assert_eq!(
        (report.durability.power_cuts, report.durability.lost_writes),
        (1, 2)
    );
}

#[test]
fn power_cut_loses_nothing_without_a_volatile_cache() {
    let srv = TestServer::memory(MIB);
    let mut c = RawClient::connect(&srv.socket, false);
    c.write(1, 0, &[5; 4096], 0);
    srv.handle().control().power_cut().expect("power cut");
    assert_eq!(c.read(2, 0, 4096).data, vec![5; 4096]);
}

#[test]
fn requests_in_flight_at_a_power_cut_fail_with_eio() {
    let size = MIB;
    let srv = TestServer::of(
        size,
        Box::new(Volatile(FixedLatency::new(300_000_000, size))),
    );
    let mut c = RawClient::connect(&srv.socket, false);
    c.send(CMD_WRITE, 0, 1, 0, 4096, &[9; 4096]);
    std::thread::sleep(Duration::from_millis(50));
    srv.handle().control().power_cut().expect("power cut");
    assert_eq!(c.recv(|_| 0).error, EIO);
    c.send(CMD_READ, 0, 2, 0, 4096, &[]);
    let r = c.recv(|_| 4096);
    assert!(
        r.data.iter().all(|&x| x == 0),
        "the in-flight write is gone"
    );
}

/// A 1 MiB server with a control socket (in the returned directory).
fn with_control(
    dev: Box<dyn storlab_model::Device>,
) -> (tempfile::TempDir, std::path::PathBuf, TestServer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctl = dir.path().join("ctl.sock");
    let srv = TestServer::start(
        ServeOptions {
            size: MIB,
            control: Some(ctl.clone()),
            ..Default::default()
        },
        dev,
    );
    (dir, ctl, srv)
}

/// Send one control command and read the whole reply.
fn control_command(ctl: &std::path::Path, line: &str) -> String {
    let mut u = UnixStream::connect(ctl).expect("control");
    u.write_all(line.as_bytes()).expect("write");
    let mut out = String::new();
    u.read_to_string(&mut out).expect("read");
    out
}

#[test]
fn control_socket_commands() {
    let (_dir, ctl, srv) = with_control(Box::new(Volatile(FixedLatency::new(0, MIB))));
    let mut c = RawClient::connect(&srv.socket, false);
    c.write(1, 0, &[1; 512], 0);
    let cmd = |s: &str| control_command(&ctl, s);
    // A control client that says nothing holds up no one: the next
    // command is answered while it is still waiting, and it is answered
    // (an error, its line being empty) once its second is up.
    let mut idle = UnixStream::connect(&ctl).expect("control");
    assert_eq!(cmd("powercut\n"), "ok\n");
    idle.set_nonblocking(true).expect("nonblocking");
    let pending = idle.read(&mut [0u8; 64]);
    assert!(
        matches!(&pending, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the silent client was answered first: {pending:?}"
    );
    idle.set_nonblocking(false).expect("blocking");
    let mut out = String::new();
    idle.read_to_string(&mut out).expect("read");
    assert!(out.starts_with("error: unknown command"), "{out}");
    assert!(c.read(2, 0, 512).data.iter().all(|&x| x == 0));
    let stats: serde_json::Value = serde_json::from_str(&cmd("stats\n")).expect("json");
    assert_eq!(stats["durability"]["power_cuts"], 1);
    assert_eq!(stats["ops"][0]["requests"], 1, "one read so far");
    assert_eq!(stats["ops"][1]["requests"], 1, "one write so far");
    assert_eq!(cmd("reset-stats\n"), "ok\n");
    let stats: serde_json::Value = serde_json::from_str(&cmd("stats\n")).expect("json");
    assert_eq!(stats["ops"][0]["requests"], 0, "reset");
    assert_eq!(stats["ops"][0]["lateness"]["count"], 0, "reset");
    assert_eq!(stats["durability"]["power_cuts"], 1, "kept");
    c.read(3, 0, 512);
    let stats: serde_json::Value = serde_json::from_str(&cmd("stats\n")).expect("json");
    assert_eq!(stats["ops"][0]["requests"], 1, "counted after the reset");
    assert!(cmd("bogus\n").starts_with("error"));
    c.disconnect();
    assert_eq!(cmd("shutdown\n"), "ok\n");
    let report = srv.stop();
    assert_eq!(report.connections, 1);
}

#[test]
fn control_socket_answers_eight_at_once_and_queues_the_rest() {
    let (_dir, ctl, srv) = with_control(Box::new(FixedLatency::new(0, MIB)));
    let cmd = |s: &str| control_command(&ctl, s);
    // Eight silent clients take every control thread for their second;
    // NBD clients are served meanwhile.
    let t0 = Instant::now();
    let mut silent: Vec<UnixStream> = (0..8)
        .map(|_| UnixStream::connect(&ctl).expect("control"))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut c = RawClient::connect(&srv.socket, false);
    c.write(1, 0, &[7; 512], 0);
    assert!(c.read(2, 0, 512).data.iter().all(|&x| x == 7));
    c.disconnect();
    assert!(
        t0.elapsed().as_millis() < 900,
        "NBD waited for the control socket"
    );
    // A ninth command waits for a free thread, then is answered.
    let stats: serde_json::Value = serde_json::from_str(&cmd("stats\n")).expect("json");
    assert!(
        t0.elapsed().as_millis() >= 900,
        "answered while eight were busy: {:?}",
        t0.elapsed()
    );
    assert_eq!(stats["ops"][1]["requests"], 1, "one write");
    for s in &mut silent {
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read");
        assert!(out.starts_with("error: unknown command"), "{out}");
    }
    assert_eq!(cmd("reset-stats\n"), "ok\n", "free again");
    srv.stop();
}

#[test]
fn file_store_keeps_data_across_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let img = dir.path().join("disk.img");
    let size = 64 * MIB;
    let opts = || ServeOptions {
        size,
        store: StoreSpec::File(img.clone()),
        ..Default::default()
    };
    let srv = TestServer::start(opts(), Box::new(FixedLatency::new(0, size)));
    let mut c = RawClient::connect(&srv.socket, true);
    let data = pattern(42, 300_000);
    c.write(1, 5 * MIB + 3, &data, 0);
    c.disconnect();
    srv.stop(); // clean shutdown syncs the file
    assert_eq!(std::fs::metadata(&img).expect("image").len(), size);
    let srv = TestServer::start(opts(), Box::new(FixedLatency::new(0, size)));
    let mut c = RawClient::connect(&srv.socket, false);
    assert!(c.read(2, 5 * MIB + 3, data.len() as u32).data == data);
    c.disconnect();
}

#[test]
fn file_store_flush_and_fua_sync_the_host_off_the_serving_thread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let img = dir.path().join("disk.img");
    let size = 16 * MIB;
    let srv = TestServer::start(
        ServeOptions {
            size,
            store: StoreSpec::File(img.clone()),
            ..Default::default()
        },
        Box::new(Volatile(FixedLatency::new(0, size))),
    );
    let mut a = RawClient::connect(&srv.socket, false);
    let mut b = RawClient::connect(&srv.socket, true);
    a.write(1, 0, &[1; 8192], 0);
    assert_eq!(b.flush(2).error, 0);
    // Many flushes in flight at once: each reply waits for a sync that
    // started after it arrived; none is lost or doubled.
    for h in 10..42 {
        a.send(CMD_FLUSH, 0, h, 0, 0, &[]);
    }
    let mut handles: Vec<u64> = (10..42).map(|_| a.recv(|_| 0).handle).collect();
    handles.sort_unstable();
    assert_eq!(handles, (10..42).collect::<Vec<_>>());
    a.write(3, 4096, &[2; 8192], 0); // unflushed
    assert_eq!(a.write(4, MIB, &[3; 4096], CMD_FLAG_FUA).error, 0);
    srv.handle().control().power_cut().expect("power cut");
    let r = a.read(6, 0, 12288).data;
    assert!(r[..8192].iter().all(|&x| x == 1), "flushed data survives");
    assert!(r[8192..].iter().all(|&x| x == 0), "unflushed write lost");
    let r = b.read(7, MIB, 4096).data;
    assert!(r.iter().all(|&x| x == 3), "FUA write survives");
    a.disconnect();
    b.disconnect();
    let report = srv.stop();
    assert!(
        report.durability.host_syncs >= 3,
        "flush, FUA write and the batch of flushes each synced the host: {:?}",
        report.durability
    );
    assert!(
        report.durability.host_syncs <= 34,
        "{:?}",
        report.durability
    );
    let disk = std::fs::read(&img).expect("image");
    assert!(disk[..8192].iter().all(|&x| x == 1));
    assert!(disk[8192..12288].iter().all(|&x| x == 0));
    assert!(disk[MIB as usize..MIB as usize + 4096]
        .iter()
        .all(|&x| x == 3));
}

#[test]
fn memory_store_never_syncs_the_host() {
    let srv = TestServer::memory(MIB);
    let mut c = RawClient::connect(&srv.socket, false);
    c.write(1, 0, &[5; 4096], CMD_FLAG_FUA);
    assert_eq!(c.flush(2).error, 0);
    c.disconnect();
    assert_eq!(srv.stop().durability.host_syncs, 0);
}

#[test]
fn refuses_bad_options() {
    use storlab_emu::{spawn, EmuError};
    let dev = || Box::new(FixedLatency::new(0, MIB));
    let remote = ServeOptions {
        listen: Some("192.0.2.1:10809".parse().expect("addr")),
        size: MIB,
        ..Default::default()
    };
    assert!(matches!(
        spawn(remote, dev()),
        Err(EmuError::NonLoopback(_))
    ));
    let too_big = ServeOptions {
        listen: Some("127.0.0.1:0".parse().expect("addr")),
        size: 2 * MIB,
        ..Default::default()
    };
    assert!(matches!(spawn(too_big, dev()), Err(EmuError::Config(_))));
    let bad_block = ServeOptions {
        listen: Some("127.0.0.1:0".parse().expect("addr")),
        block: BlockSizes {
            minimum: 3,
            preferred: 4096,
            maximum: 4096,
        },
        ..Default::default()
    };
    assert!(matches!(spawn(bad_block, dev()), Err(EmuError::Config(_))));
    // A live server's socket is not stolen.
    let srv = TestServer::memory(MIB);
    let again = ServeOptions {
        socket: Some(srv.socket.clone()),
        size: MIB,
        ..Default::default()
    };
    assert!(matches!(spawn(again, dev()), Err(EmuError::SocketInUse(_))));
}

#[test]
fn tcp_listener_on_loopback() {
    use storlab_emu::spawn;
    let opts = ServeOptions {
        listen: Some("127.0.0.1:0".parse().expect("addr")),
        size: MIB,
        ..Default::default()
    };
    let h = spawn(opts, Box::new(FixedLatency::new(0, MIB))).expect("server");
    let addr = h.tcp_addr().expect("tcp");
    assert!(h.uri().starts_with("nbd://127.0.0.1:"));
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet).expect("greeting");
    assert_eq!(&greet[..8], b"NBDMAGIC");
    drop(s);
    h.stop().expect("stop");
}

#[test]
fn records_a_trace_that_storlab_trace_reads_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("served.blkparse");
    let srv = TestServer::start(
        ServeOptions {
            size: MIB,
            record: Some(storlab_emu::RecordSpec::new(
                &path,
                storlab_trace::Format::Blkparse,
            )),
            ..Default::default()
        },
        Box::new(FixedLatency::new(30_000, MIB)),
    );
    let mut c = RawClient::connect(&srv.socket, false);
    c.write(1, 4096, &[1; 8192], 0);
    c.read(2, 0, 512);
    c.flush(3);
    c.send(CMD_TRIM, 0, 4, 65536, 4096, &[]);
    c.recv(|_| 0);
    c.disconnect();
    let report = srv.stop();
    let rec = report.record.expect("record report");
    assert_eq!((rec.written, rec.dropped, rec.error), (4, 0, None));
    let opts = storlab_trace::ReadOptions::default();
    let read: Vec<_> = storlab_trace::open(&path, Some(storlab_trace::Format::Blkparse), &opts)
        .expect("open trace")
        .collect::<Result<_, _>>()
        .expect("read trace");
    let ops: Vec<_> = read.iter().map(|r| (r.op, r.offset, r.len)).collect();
    use storlab_trace::TraceOp::*;
    assert_eq!(
        ops,
        vec![
            (Write, 4096, 8192),
            (Read, 0, 512),
            (Flush, 0, 0),
            (Trim, 65536, 4096)
        ]
    );
    for r in &read[..2] {
        assert!(r.recorded_latency_ns.expect("latency") >= 30_000);
    }
}

#[test]
fn large_writes_applied_in_pieces_read_back_and_cut_as_one_request() {
    let size = 64 * MIB;
    let srv = TestServer::of(size, Box::new(Volatile(FixedLatency::new(10_000, size))));
    let mut c = RawClient::connect(&srv.socket, true);
    // Unaligned, several pieces and a ragged end, over data written before.
    let old = pattern(7, 3 * MIB as usize);
    assert_eq!(c.write(1, 0, &old, 0).error, 0);
    assert_eq!(c.flush(2).error, 0);
    let big = pattern(8, (MIB + 12_345) as usize);
    let off = 4096 * 3 + 17;
    assert_eq!(c.write(3, off, &big, 0).error, 0);
    let r = c.read(4, 0, 3 * MIB as u32).data;
    let mut want = old.clone();
    want[off as usize..off as usize + big.len()].copy_from_slice(&big);
    assert!(r == want, "a large write reads back as written");
    // A large FUA write is durable as a whole.
    let fua = pattern(9, (2 * MIB + 100) as usize);
    assert_eq!(c.write(5, 8 * MIB, &fua, CMD_FLAG_FUA).error, 0);
    srv.handle().control().power_cut().expect("power cut");
    assert!(
        c.read(6, 0, 3 * MIB as u32).data == old,
        "the unflushed large write is lost whole"
    );
    assert!(
        c.read(7, 8 * MIB, fua.len() as u32).data == fua,
        "the FUA large write survives whole"
    );
    c.disconnect();
    let report = srv.stop();
    assert_eq!(
        (report.durability.power_cuts, report.durability.lost_writes),
        (1, 1),
        "a write lost in pieces counts once"
    );
}

#[test]
fn large_writes_do_not_hold_back_other_connections_replies() {
    large_requests_do_not_hold_back_other_connections_replies(true);
}

#[test]
fn large_reads_do_not_hold_back_other_connections_replies() {
    large_requests_do_not_hold_back_other_connections_replies(false);
}

fn large_requests_do_not_hold_back_other_connections_replies(write: bool) {
    // One connection keeps writing (or reading) 16 MiB at a time while
    // another reads 4 KiB at queue depth 1 from a 100 µs device: small
    // reads fall due while the large request's data is copied (1.6-16 ms
    // in one piece), and must still go out on time.
    let _alone = alone();
    let size = 64 * MIB;
    let srv = TestServer::of(size, Box::new(FixedLatency::new(100_000, size)));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let writer = {
        let (socket, stop, done) = (srv.socket.clone(), stop.clone(), done.clone());
        std::thread::spawn(move || {
            let mut w = RawClient::connect(&socket, false);
            let data = pattern(3, 16 * MIB as usize);
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let off = (n % 3) * 16 * MIB;
                if write {
                    assert_eq!(w.write(n, off, &data, 0).error, 0);
                } else {
                    assert_eq!(w.read(n, off, data.len() as u32).error, 0);
                }
                n += 1;
                done.store(n, std::sync::atomic::Ordering::Relaxed);
            }
            w.disconnect();
            n
        })
    };
    let mut r = RawClient::connect(&srv.socket, false);
    // 1.5 s, and at least 3 large requests: on a loaded host the writer
    // (building its 16 MiB in a debug build) got none done in 1.5 s. At
    // most 30 s (the asserts below then say what was missing).
    let start = Instant::now();
    let mut reads = 0u64;
    while start.elapsed() < Duration::from_millis(1500)
        || (done.load(std::sync::atomic::Ordering::Relaxed) < 3
            && start.elapsed() < Duration::from_secs(30))
    {
        assert_eq!(r.read(reads, 60 * MIB, 4096).error, 0);
        reads += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().expect("writer");
    r.disconnect();
    let report = srv.stop();
    assert!(
        writes >= 3 && reads > 1000,
        "{writes} writes, {reads} reads"
    );
    let late = &report.lateness;
    assert!(
        late.p99_ns < 250_000,
        "replies waited for large requests' data: lateness p99 {} µs, max {} µs",
        late.p99_ns / 1000,
        late.max_ns / 1000
    );
}

/// `base:allocation` extents of `[offset, offset + len)`, checked to be a
/// well-formed reply to handle 9 for the context selected.
fn extents(c: &mut RawClient, offset: u64, len: u32, flags: u16) -> Vec<(u32, u32)> {
    let r = c.block_status(9, offset, len, flags);
    assert_eq!((r.handle, r.error), (9, 0), "{r:?}");
    let (id, ext) = r.extents.expect("a block status chunk");
    assert_eq!(vec![id], c.contexts);
    assert!(!ext.is_empty());
    assert!(ext.iter().map(|e| e.0 as u64).sum::<u64>() <= len as u64);
    ext
}

#[test]
fn block_status_reports_where_data_is() {
    let hole = STATE_HOLE | STATE_ZERO;
    for store in ["memory", "file"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let spec = if store == "file" {
            StoreSpec::File(dir.path().join("disk.img"))
        } else {
            StoreSpec::Memory
        };
        let size = 16 * MIB;
        let srv = TestServer::start(
            ServeOptions {
                size,
                store: spec,
                ..Default::default()
            },
            Box::new(FixedLatency::new(1000, size)),
        );
        let (mut c, ids) = RawClient::connect_meta(&srv.socket, &["x-none:x", "base:allocation"]);
        assert_eq!(ids, vec![META_BASE_ALLOCATION_ID], "{store}");
        assert_eq!(
            extents(&mut c, 0, size as u32, 0),
            vec![(size as u32, hole)]
        );
        assert_eq!(c.write(1, MIB, &[7u8; 4096], 0).error, 0);
        assert_eq!(c.write(2, 3 * MIB + 10, &[8u8; 100], 0).error, 0);
        let e = extents(&mut c, 0, 8 * MIB as u32, 0);
        // Whatever the store's granularity, the written bytes are in data
        // extents, the first MiB and the end are holes, and holes read as
        // zeros.
        let mut pos = 0u64;
        for &(l, f) in &e {
            let (s, end) = (pos, pos + l as u64);
            for w in [MIB, 3 * MIB + 10] {
                if (s..end).contains(&w) {
                    assert_eq!(f, 0, "{store}: {w} in a hole: {e:?}");
                }
            }
            if f == hole {
                assert!(c.read(3, s, l.min(1 << 16)).data.iter().all(|&b| b == 0));
            }
            pos = end;
        }
        assert_eq!(pos, 8 * MIB, "{store}: {e:?}");
        assert_eq!(e[0], (MIB as u32, hole), "{store}: {e:?}");
        assert_eq!(e.last().expect("extents").1, hole, "{store}: {e:?}");
        // One extent when asked for one; from an offset inside data.
        assert_eq!(
            extents(&mut c, 0, 8 * MIB as u32, CMD_FLAG_REQ_ONE),
            vec![(MIB as u32, hole)]
        );
        assert_eq!(extents(&mut c, MIB + 100, 200, 0), vec![(200, 0)]);
        // A trimmed page is a hole again.
        c.send(CMD_TRIM, 0, 4, MIB, 4096, &[]);
        assert_eq!(c.recv(|_| 0).error, 0);
        assert_eq!(
            extents(&mut c, 0, 2 * MIB as u32, 0),
            vec![(2 * MIB as u32, hole)]
        );
        // Past the end and zero-length are errors; the connection goes on.
        assert_eq!(c.block_status(5, size - 4096, 8192, 0).error, EINVAL);
        assert_eq!(c.block_status(6, 0, 0, 0).error, EINVAL);
        assert_eq!(c.read(7, MIB, 4096).data, vec![0u8; 4096]);
        c.disconnect();
        // Without a selected context block status is refused.
        let mut plain = RawClient::connect(&srv.socket, true);
        assert!(plain.contexts.is_empty());
        let r = plain.block_status(1, 0, 4096, 0);
        assert_eq!((r.error, r.extents), (EINVAL, None));
        assert_eq!(plain.read(2, 3 * MIB + 10, 100).data, vec![8u8; 100]);
        plain.disconnect();
        let report = srv.stop();
        // Five answered; three refused at the boundary.
        assert_eq!(report.block_status_queries, 5, "{store}");
        assert_eq!(report.protocol_errors, 3, "{store}");
        // Answered without the model: only reads, writes and the trim
        // were timed.
        let timed: u64 = report.ops.iter().map(|o| o.requests).sum();
        assert_eq!(timed, 2 + 3 + 1 + 1 + 1, "{store}: {:?}", report.ops);
    }
}

#[test]
fn the_transport_floor_is_measured_before_serving_when_asked() {
    let size = 16 * MIB;
    let leftovers = || {
        let prefix = format!("storlab-floor-{}-", std::process::id());
        std::fs::read_dir(std::env::temp_dir())
            .expect("temp dir")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .count()
    };
    let srv = TestServer::start(
        ServeOptions {
            size,
            floor_probe: 500,
            ..Default::default()
        },
        Box::new(FixedLatency::new(50_000, size)),
    );
    // The probe's server is gone and its socket directory removed.
    assert_eq!(leftovers(), 0);
    let mut c = RawClient::connect(&srv.socket, false);
    assert_eq!(c.read(1, 0, 4096).error, 0);
    c.disconnect();
    let report = srv.stop();
    let fl = report.transport_floor.clone().expect("a floor");
    assert_eq!(fl.count, 500);
    assert!(
        fl.mean_ns > 0.0 && fl.p50_ns <= fl.p99_ns && fl.p99_ns <= fl.max_ns,
        "{fl:?}"
    );
    // Only the client's read was served by this server (the probe's
    // reads went to its own).
    assert_eq!(report.ops[0].requests, 1);
    assert!(format!("{report}").contains("transport floor"));
    let plain = TestServer::memory(size).stop();
    assert_eq!(plain.transport_floor, None);
    assert!(!format!("{plain}").contains("transport floor"));
}

#[test]
fn the_floor_client_reports_an_error_reply_instead_of_waiting_for_data() {
    use storlab_emu::probe::{busy_reads, Until};
    let srv = TestServer::memory(MIB);
    let ok = busy_reads(&srv.socket, Until::Requests(50), MIB).expect("reads inside");
    assert_eq!(ok.len(), 50);
    // Offsets past the end get EINVAL replies, which carry no data.
    let e = busy_reads(&srv.socket, Until::Requests(50), 1 << 40).expect_err("reads past the end");
    assert!(e.to_string().contains("EINVAL"), "{e}");
    srv.stop();
}

#[test]
fn block_status_over_many_store_slices() {
    let hole = STATE_HOLE | STATE_ZERO;
    let size = 512 * MIB;
    let srv = TestServer::memory(size);
    let (mut c, _) = RawClient::connect_meta(&srv.socket, &["base:allocation"]);
    // Data in slices far apart; the first extent spans two slices.
    for (h, off) in [(1, 100 * MIB), (2, 300 * MIB - 4096), (3, 300 * MIB)] {
        assert_eq!(c.write(h, off, &[1u8; 4096], 0).error, 0);
    }
    let mib = MIB as u32;
    assert_eq!(
        extents(&mut c, 0, 512 * mib, 0),
        vec![
            (100 * mib, hole),
            (4096, 0),
            (200 * mib - 8192, hole),
            (8192, 0),
            (212 * mib - 4096, hole)
        ]
    );
    assert_eq!(
        extents(&mut c, 0, 512 * mib, CMD_FLAG_REQ_ONE),
        vec![(100 * mib, hole)]
    );
    c.disconnect();
    srv.stop();
}

/// Every byte a connection sends until end of file or `quiet` without
/// any.
fn read_until_quiet(s: &mut std::os::unix::net::UnixStream, quiet: Duration) -> Vec<u8> {
    s.set_read_timeout(Some(quiet)).expect("timeout");
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

#[test]
fn a_read_reply_queued_at_a_power_cut_never_carries_data_from_after_it() {
    // A read's data is read from the store as its reply is sent. Replies
    // completed before a power cut and still queued for a client that had
    // not taken them carry the data as it was before the cut, or fail
    // with EIO (nothing of them sent yet), or the connection ends in the
    // middle of one (part sent): never the data after the cut.
    let size = 16 * MIB;
    let srv = TestServer::of(size, Box::new(Volatile(FixedLatency::new(0, size))));
    let before = pattern(7, MIB as usize);
    for (i, structured) in [false, true].into_iter().enumerate() {
        let mut c = RawClient::connect(&srv.socket, structured);
        // Unflushed on a volatile cache: lost at the cut.
        let off = i as u64 * 2 * MIB;
        assert_eq!(c.write(1, off, &before, 0).error, 0);
        // Four 1 MiB reads, released at once (a zero-latency device); the
        // socket takes a part of the first.
        for h in 0..4 {
            c.send(CMD_READ, 0, 10 + h, off, MIB as u32, &[]);
        }
        std::thread::sleep(Duration::from_millis(300));
        srv.handle().control().power_cut().expect("power cut");
        let got = read_until_quiet(&mut c.sock, Duration::from_secs(2));
        let (mut at, mut data_bytes, mut errors) = (0, 0, 0);
        let be32 = |b: &[u8]| u32::from_be_bytes(b[..4].try_into().expect("4"));
        while at < got.len() {
            let (error, data_at) = if structured {
                let typ = u16::from_be_bytes([got[at + 6], got[at + 7]]);
                let len = be32(&got[at + 16..]) as usize;
                if typ == REPLY_TYPE_ERROR {
                    assert_eq!(be32(&got[at + 20..]), EIO);
                    at += STRUCTURED_REPLY_LEN + len;
                    errors += 1;
                    continue;
                }
                assert_eq!(typ, REPLY_TYPE_OFFSET_DATA);
                (0, at + STRUCTURED_READ_PREFIX)
            } else {
                (be32(&got[at + 4..]), at + SIMPLE_REPLY_LEN)
            };
            if error != 0 {
                assert_eq!(error, EIO);
                at += SIMPLE_REPLY_LEN;
                errors += 1;
                continue;
            }
            let end = (data_at + MIB as usize).min(got.len());
            assert!(
                got[data_at..end] == before[..end - data_at],
                "a reply carried data from after the cut (structured: {structured})"
            );
            data_bytes += end - data_at;
            at = end;
        }
        // The cut came between the replies' completion and their sending:
        // some of them went as errors or the connection ended in one.
        assert!(
            data_bytes < 4 * MIB as usize,
            "{data_bytes} bytes, {errors} errors"
        );
        // The write is gone: what the replies would have read now.
        let mut d = RawClient::connect(&srv.socket, false);
        assert!(d.read(2, off, MIB as u32).data.iter().all(|&x| x == 0));
        d.disconnect();
    }
}
