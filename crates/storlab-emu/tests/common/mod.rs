//! Shared helpers for the integration tests: start a server on a temporary
//! unix socket, a small raw NBD client, and checks for external tools.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use storlab_emu::proto::*;
use storlab_emu::request::{encode_header, RequestHeader};
use storlab_emu::{spawn, ServeOptions, ServerHandle};
use storlab_model::devices::fixed::FixedLatency;
use storlab_model::Device;

#[path = "chain.rs"]
pub mod chain;
#[allow(unused_imports)] // not every test runs commands
pub use chain::run;

/// A running server on a socket in its own temporary directory.
pub struct TestServer {
    pub handle: Option<ServerHandle>,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    /// Held while the server runs (dropped last): a test that measures
    /// timing ([`alone`]) waits for every other test's server to stop.
    _share: Option<std::sync::RwLockReadGuard<'static, ()>>,
}

/// Servers running in this test binary: shared by each server, taken
/// whole by a test that measures timing.
static SERVERS: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    static ALONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Held by a test that measures timing: no other test's server runs
/// meanwhile. Tests run side by side, and two servers spinning for their
/// deadlines on a two-CPU machine measure the machine, not the server.
pub struct Alone(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>);

pub fn alone() -> Alone {
    let g = SERVERS.write().unwrap_or_else(|e| e.into_inner());
    ALONE.with(|a| a.set(true));
    Alone(g)
}

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.with(|a| a.set(false));
    }
}

impl TestServer {
    pub fn start(opts: ServeOptions, device: Box<dyn Device>) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("nbd.sock");
        let opts = ServeOptions {
            socket: Some(socket.clone()),
            ..opts
        };
        let share = if ALONE.with(|a| a.get()) {
            None
        } else {
            Some(SERVERS.read().unwrap_or_else(|e| e.into_inner()))
        };
        let handle = spawn(opts, device).expect("server starts");
        TestServer {
            handle: Some(handle),
            dir,
            socket,
            _share: share,
        }
    }

    /// A memory-backed server of `size` bytes with default options.
    pub fn of(size: u64, device: Box<dyn Device>) -> TestServer {
        Self::start(
            ServeOptions {
                size,
                ..ServeOptions::default()
            },
            device,
        )
    }

    /// A zero-latency memory-backed server of `size` bytes.
    pub fn memory(size: u64) -> TestServer {
        Self::of(size, Box::new(FixedLatency::new(0, size)))
    }

    pub fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket.display())
    }

    pub fn handle(&self) -> &ServerHandle {
        self.handle.as_ref().expect("running")
    }

    pub fn stop(mut self) -> storlab_emu::ServeReport {
        self.handle
            .take()
            .expect("running")
            .stop()
            .expect("clean stop")
    }
}

/// Fail (never skip) when a tool is missing, naming its Debian package.
pub fn require(tool: &str, package: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    assert!(found, "{tool} is not installed: install the Debian package `{package}` (apt-get install {package})");
}

/// A reply as the raw client sees it.
#[derive(Debug, PartialEq, Eq)]
pub struct Reply {
    pub handle: u64,
    pub error: u32,
    pub data: Vec<u8>,
    /// A block status reply's context id and (length, flags) extents.
    pub extents: Option<(u32, Vec<(u32, u32)>)>,
}

/// A minimal NBD client over a unix socket, for protocol tests.
pub struct RawClient {
    pub sock: UnixStream,
    pub structured: bool,
    pub size: u64,
    pub flags: u16,
    /// Metadata context ids the server selected.
    pub contexts: Vec<u32>,
}

fn opt_bytes(o: u32, data: &[u8]) -> Vec<u8> {
    let mut v = IHAVEOPT.to_be_bytes().to_vec();
    v.extend_from_slice(&o.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

impl RawClient {
    pub fn connect_raw(path: &Path) -> UnixStream {
        let s = UnixStream::connect(path).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        s
    }

    /// Handshake with `NBD_OPT_GO` (and structured replies if asked).
    pub fn connect(path: &Path, structured: bool) -> RawClient {
        Self::connect_with(path, structured, &[])
    }

    /// Handshake with structured replies, `NBD_OPT_SET_META_CONTEXT` for
    /// `queries` (the ids of the contexts selected are returned), then
    /// `NBD_OPT_GO`.
    pub fn connect_meta(path: &Path, queries: &[&str]) -> (RawClient, Vec<u32>) {
        let c = Self::connect_with(path, true, queries);
        let ids = c.contexts.clone();
        (c, ids)
    }

    fn connect_with(path: &Path, structured: bool, queries: &[&str]) -> RawClient {
        let mut s = Self::connect_raw(path);
        let mut greet = [0u8; 18];
        s.read_exact(&mut greet).expect("greeting");
        assert_eq!(&greet[..8], b"NBDMAGIC");
        s.write_all(&3u32.to_be_bytes()).expect("flags");
        if structured {
            s.write_all(&opt_bytes(OPT_STRUCTURED_REPLY, &[]))
                .expect("opt");
            let (_, typ, _) = Self::opt_reply(&mut s);
            assert_eq!(typ, REP_ACK);
        }
        let mut contexts = Vec::new();
        if !queries.is_empty() {
            let mut d = 0u32.to_be_bytes().to_vec();
            d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
            for q in queries {
                d.extend_from_slice(&(q.len() as u32).to_be_bytes());
                d.extend_from_slice(q.as_bytes());
            }
            s.write_all(&opt_bytes(OPT_SET_META_CONTEXT, &d))
                .expect("opt");
            loop {
                let (_, typ, data) = Self::opt_reply(&mut s);
                match typ {
                    REP_META_CONTEXT => {
                        contexts.push(u32::from_be_bytes(data[..4].try_into().expect("4")))
                    }
                    REP_ACK => break,
                    other => panic!("unexpected option reply {other:#x}"),
                }
            }
        }
        let mut go = 0u32.to_be_bytes().to_vec();
        go.extend_from_slice(&1u16.to_be_bytes());
        go.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        s.write_all(&opt_bytes(OPT_GO, &go)).expect("go");
        let (mut size, mut flags) = (0, 0);
        loop {
            let (_, typ, data) = Self::opt_reply(&mut s);
            match typ {
                REP_INFO if u16::from_be_bytes([data[0], data[1]]) == INFO_EXPORT => {
                    size = u64::from_be_bytes(data[2..10].try_into().expect("8 bytes"));
                    flags = u16::from_be_bytes([data[10], data[11]]);
                }
                REP_INFO => {}
                REP_ACK => break,
                other => panic!("unexpected option reply {other:#x}"),
            }
        }
        RawClient {
            sock: s,
            structured,
            size,
            flags,
            contexts,
        }
    }

    pub fn opt_reply(s: &mut UnixStream) -> (u32, u32, Vec<u8>) {
        let mut h = [0u8; 20];
        s.read_exact(&mut h).expect("option reply");
        assert_eq!(
            u64::from_be_bytes(h[..8].try_into().expect("8")),
            REPLY_MAGIC_OPT
        );
        let len = u32::from_be_bytes(h[16..20].try_into().expect("4")) as usize;
        let mut d = vec![0u8; len];
        s.read_exact(&mut d).expect("option data");
        (
            u32::from_be_bytes(h[8..12].try_into().expect("4")),
            u32::from_be_bytes(h[12..16].try_into().expect("4")),
            d,
        )
    }

    pub fn send(
        &mut self,
        typ: u16,
        flags: u16,
        handle: u64,
        offset: u64,
        length: u32,
        payload: &[u8],
    ) {
        let h = RequestHeader {
            flags,
            typ,
            handle,
            offset,
            length,
        };
        let mut b = encode_header(&h).to_vec();
        b.extend_from_slice(payload);
        self.sock.write_all(&b).expect("send request");
    }

    /// Read one reply; `read_len` is the data length expected if it is a
    /// successful simple reply to a read (simple replies carry no length).
    pub fn recv(&mut self, read_len: impl Fn(u64) -> usize) -> Reply {
        let mut m = [0u8; 4];
        self.sock.read_exact(&mut m).expect("reply magic");
        match u32::from_be_bytes(m) {
            SIMPLE_REPLY_MAGIC => {
                let mut r = [0u8; 12];
                self.sock.read_exact(&mut r).expect("simple reply");
                let error = u32::from_be_bytes(r[..4].try_into().expect("4"));
                let handle = u64::from_be_bytes(r[4..12].try_into().expect("8"));
                let mut data = vec![0u8; if error == 0 { read_len(handle) } else { 0 }];
                self.sock.read_exact(&mut data).expect("read data");
                Reply {
                    handle,
                    error,
                    data,
                    extents: None,
                }
            }
            STRUCTURED_REPLY_MAGIC => {
                let mut data = Vec::new();
                let mut error = 0;
                let mut extents = None;
                loop {
                    let mut r = [0u8; 16];
                    self.sock.read_exact(&mut r).expect("chunk header");
                    let flags = u16::from_be_bytes([r[0], r[1]]);
                    let typ = u16::from_be_bytes([r[2], r[3]]);
                    let handle = u64::from_be_bytes(r[4..12].try_into().expect("8"));
                    let len = u32::from_be_bytes(r[12..16].try_into().expect("4")) as usize;
                    let mut p = vec![0u8; len];
                    self.sock.read_exact(&mut p).expect("chunk payload");
                    match typ {
                        REPLY_TYPE_OFFSET_DATA => data.extend_from_slice(&p[8..]),
                        REPLY_TYPE_ERROR => {
                            error = u32::from_be_bytes(p[..4].try_into().expect("4"))
                        }
                        REPLY_TYPE_NONE => {}
                        REPLY_TYPE_BLOCK_STATUS => {
                            assert_eq!(len % 8, 4, "block status payload length");
                            let u =
                                |i: usize| u32::from_be_bytes(p[i..i + 4].try_into().expect("4"));
                            let ext = (4..len).step_by(8).map(|i| (u(i), u(i + 4))).collect();
                            extents = Some((u(0), ext));
                        }
                        t => panic!("unexpected chunk type {t:#x}"),
                    }
                    if flags & REPLY_FLAG_DONE != 0 {
                        return Reply {
                            handle,
                            error,
                            data,
                            extents,
                        };
                    }
                    // Chunks of one reply could interleave with others; the
                    // server sends each reply whole, so this loop is enough.
                    let mut m2 = [0u8; 4];
                    self.sock.read_exact(&mut m2).expect("next chunk magic");
                    assert_eq!(u32::from_be_bytes(m2), STRUCTURED_REPLY_MAGIC);
                }
            }
            other => panic!("bad reply magic {other:#x}"),
        }
    }

    pub fn write(&mut self, handle: u64, offset: u64, data: &[u8], flags: u16) -> Reply {
        self.send(CMD_WRITE, flags, handle, offset, data.len() as u32, data);
        self.recv(|_| 0)
    }

    pub fn read(&mut self, handle: u64, offset: u64, len: u32) -> Reply {
        self.send(CMD_READ, 0, handle, offset, len, &[]);
        self.recv(|_| len as usize)
    }

    pub fn block_status(&mut self, handle: u64, offset: u64, len: u32, flags: u16) -> Reply {
        self.send(CMD_BLOCK_STATUS, flags, handle, offset, len, &[]);
        self.recv(|_| 0)
    }

    pub fn flush(&mut self, handle: u64) -> Reply {
        self.send(CMD_FLUSH, 0, handle, 0, 0, &[]);
        self.recv(|_| 0)
    }

    pub fn disconnect(mut self) {
        self.send(CMD_DISC, 0, 0, 0, 0, &[]);
        let mut b = [0u8; 1];
        // The server closes after finishing what was in flight.
        let _ = self.sock.read(&mut b);
    }
}

/// A deterministic pattern for offset `off`.
pub fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Wraps a device and gives it a volatile write cache.
pub struct Volatile<D>(pub D);

impl<D: Device> Device for Volatile<D> {
    fn submit(
        &mut self,
        now: storlab_model::Nanos,
        req: storlab_model::DevRequest,
        cx: &mut storlab_model::Cx,
    ) {
        self.0.submit(now, req, cx)
    }
    fn on_event(&mut self, now: storlab_model::Nanos, token: u64, cx: &mut storlab_model::Cx) {
        self.0.on_event(now, token, cx)
    }
    fn capacity(&self) -> u64 {
        self.0.capacity()
    }
    fn volatile_write_cache(&self) -> bool {
        true
    }
    /// Its cache never destages on its own: only flushes and FUA make
    /// writes durable.
    fn volatile_holds(&self, _offset: u64, _len: u64) -> bool {
        true
    }
    fn report(&self, now: storlab_model::Nanos) -> storlab_model::DeviceReport {
        self.0.report(now)
    }
}

/// Latency chosen by the request's offset: `offset / 4096` milliseconds
/// (so a test can make a later request finish first).
pub struct OffsetLatency(pub u64);

impl Device for OffsetLatency {
    fn submit(
        &mut self,
        now: storlab_model::Nanos,
        req: storlab_model::DevRequest,
        cx: &mut storlab_model::Cx,
    ) {
        let at = now + req.offset / 4096 * 1_000_000;
        cx.complete(storlab_model::Completion {
            id: req.id,
            at,
            breakdown: Default::default(),
            status: 0,
        });
    }
    fn on_event(&mut self, _now: storlab_model::Nanos, _token: u64, _cx: &mut storlab_model::Cx) {}
    fn capacity(&self) -> u64 {
        self.0
    }
    fn report(&self, _now: storlab_model::Nanos) -> storlab_model::DeviceReport {
        storlab_model::DeviceReport::default()
    }
}
