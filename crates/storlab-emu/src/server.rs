//! The NBD server: listeners, a reader thread per connection that is also
//! its timer, power cuts, shutdown.
//!
//! A request's path: the connection's reader thread reads bytes, the
//! [`RequestStream`] turns them into requests (checked at the boundary),
//! the reader applies the data to the store (writes land at arrival; reads
//! copy at arrival), then locks the model and calls
//! [`ModelDriver::arrive`] with the time the bytes were read. A completion
//! already due (a zero-latency device) is replied to at once by the same
//! thread, with no hand-off.
//!
//! Readers are the timers: a reader with requests in flight does not block
//! in `read`; it waits for the model's next due time (any connection's
//! deadline or a device wake-up) with `ppoll` on its socket until the spin
//! window before it (at least `spin_threshold_ns`, widened when sleeps end
//! late), then spins on the TSC, checking its socket every
//! `input_check_ns`, and releases whatever is due. One waiter at a time
//! spins (the leader, which covers every connection); the others sleep on
//! their sockets and look again `safety_net_ns` after the next due time.
//! After a connection's last reply its reader polls the socket for
//! `idle_poll_ns` before sleeping, so a queue-depth-1 client's next request
//! is caught without a wake-up. So the thread that spins is one whose
//! client is waiting anyway, no hand-off to another thread is needed, and
//! nothing spins beyond a short idle poll when nothing is in flight. A
//! timer thread, once a millisecond, is only a safety net (a reader stuck
//! in a long copy).
//! Replies due together for one connection go out in one `send`, without
//! blocking; a client that does not read gets its replies queued for its
//! connection's writer thread, so no client can stall another.
//!
//! An emulated power cut takes the gate (a lock every request holds from
//! data access to submission, and every release holds while it commits
//! durability and sends), rolls the store back to the durable image and
//! bumps the power epoch: requests in flight at the cut get `EIO`.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use storlab_model::{DevRequest, Device, Nanos, Op};
use storlab_trace::{writer as trace_writer, TraceOp, TraceRecord, WriteOptions};

use crate::clock::{tighten_timer_slack, Clock, WallClock};
use crate::driver::{ModelDriver, Released};
use crate::durability::{Durability, WriteSeq};
use crate::error::EmuError;
use crate::handshake::{BlockSizes, ExportConfig, Handshake, Outcome};
use crate::proto::*;
use crate::report::{ClockReport, RecordReport, Sample, ServeReport, Stats};
use crate::request::{Command, Event, Limits, RequestStream};
use crate::store::{open_store, StoreSpec};

/// Everything `storlab serve` can be told.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Listen on this unix socket (a stale socket file is replaced).
    pub socket: Option<PathBuf>,
    /// Listen on this TCP address (port 0: any free port). With neither
    /// `socket` nor `listen`, the server listens on 127.0.0.1:10809.
    pub listen: Option<SocketAddr>,
    /// Allow a non-loopback `listen` address (the export has no
    /// authentication).
    pub allow_remote: bool,
    /// Export size in bytes; 0 means the device's capacity. Must not exceed
    /// it.
    pub size: u64,
    /// Where the data lives.
    pub store: StoreSpec,
    /// Refuse writes (`EPERM`), advertise `NBD_FLAG_READ_ONLY`.
    pub read_only: bool,
    /// The export's name (the empty default name is accepted too; an
    /// empty export name accepts any name).
    pub export_name: String,
    /// Free text shown by `nbdinfo` and `NBD_OPT_LIST`.
    pub description: String,
    /// Advertise `NBD_FLAG_CAN_MULTI_CONN`. True is correct here: there is
    /// one store and one durability journal for all connections, so a
    /// flush on any connection covers writes completed on every one.
    pub multi_conn: bool,
    /// Advertise `NBD_FLAG_ROTATIONAL` (a disk model).
    pub rotational: bool,
    /// Block size constraints (minimum 1 or a power of two up to 64 KiB).
    pub block: BlockSizes,
    /// Record every request served as a block trace (any format of
    /// `storlab-trace`; the stream is the connection, the latency is reply
    /// minus arrival).
    pub record: Option<RecordSpec>,
    /// A unix socket taking line commands: `powercut`, `stats`, `shutdown`.
    pub control: Option<PathBuf>,
    /// Handle SIGTERM and SIGINT (clean shutdown) and SIGUSR1 (power cut)
    /// while serving. For the binary; tests leave it off.
    pub handle_signals: bool,
    /// A waiting reader sleeps until at least this long before a
    /// deadline, then spins (a sleeping thread wakes tens of µs late; the
    /// window widens by itself to cover the late wake-ups it sees, up to
    /// 1 ms).
    pub spin_threshold_ns: u64,
    /// How often a spinning reader checks its socket for new requests (a
    /// new request's arrival time can be late by up to this).
    pub input_check_ns: u64,
    /// The safety-net timer releases replies this overdue when no reader
    /// did (a reader stuck in a long copy).
    pub safety_net_ns: u64,
    /// After a connection's last reply, its reader polls the socket this
    /// long before sleeping (one poller at a time; 0 = never).
    pub idle_poll_ns: u64,
    /// Largest volatile-cache journal (bytes) before the oldest writes are
    /// treated as written back.
    pub journal_limit: u64,
    /// Most simultaneous connections.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            socket: None,
            listen: None,
            allow_remote: false,
            size: 0,
            store: StoreSpec::Memory,
            read_only: false,
            export_name: "storlab".into(),
            description: "storlab emulated device".into(),
            multi_conn: true,
            rotational: false,
            block: BlockSizes::default(),
            record: None,
            control: None,
            handle_signals: false,
            spin_threshold_ns: 80_000,
            input_check_ns: 1_000,
            safety_net_ns: 100_000,
            idle_poll_ns: 50_000,
            journal_limit: 1 << 30,
            max_connections: 64,
        }
    }
}

/// Where and how to record the requests served.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordSpec {
    /// Output file (created or truncated).
    pub path: PathBuf,
    /// Trace format.
    pub format: storlab_trace::Format,
    /// Requests are recorded when they complete, so out of arrival order by
    /// up to the longest latency; records later than this window are
    /// dropped (and counted).
    pub reorder_window_ns: u64,
}

impl RecordSpec {
    /// Record to `path` in `format` with a 1 s reorder window.
    pub fn new(path: impl Into<PathBuf>, format: storlab_trace::Format) -> Self {
        RecordSpec {
            path: path.into(),
            format,
            reorder_window_ns: 1_000_000_000,
        }
    }
}

/// Stops a running server from another thread (or a signal handler's
/// flag): the server finishes in-flight requests, syncs the store and
/// returns its report.
#[derive(Clone, Debug, Default)]
pub struct ShutdownHandle(Arc<AtomicBool>);

impl ShutdownHandle {
    /// A handle not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }
    /// Ask the server to stop.
    pub fn trigger(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// Whether stopping was asked for.
    pub fn is_triggered(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

// ---------------------------------------------------------------- signals

static SIGNALS: AtomicU32 = AtomicU32::new(0);
const SIG_STOP: u32 = 1;
const SIG_POWERCUT: u32 = 2;

extern "C" fn on_signal(sig: libc::c_int) {
    let bit = match sig {
        libc::SIGUSR1 => SIG_POWERCUT,
        _ => SIG_STOP,
    };
    // An atomic read-modify-write is async-signal-safe.
    SIGNALS.fetch_or(bit, Ordering::SeqCst);
}

/// Installs the handlers and puts the old ones back when dropped.
struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    fn install() -> io::Result<Self> {
        SIGNALS.store(0, Ordering::SeqCst);
        let mut old = Vec::new();
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGUSR1] {
            // SAFETY: we build a zeroed sigaction, set a handler that only
            // does an atomic RMW (async-signal-safe), and keep the previous
            // action to restore it; all pointers are to live locals.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &sa, &mut prev) != 0 {
                    return Err(io::Error::last_os_error());
                }
                old.push((sig, prev));
            }
        }
        Ok(SignalGuard { old })
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores an action previously returned by sigaction.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
    }
}

// ---------------------------------------------------------------- sockets

enum Sock {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Sock {
    fn fd(&self) -> RawFd {
        match self {
            Sock::Unix(s) => s.as_raw_fd(),
            Sock::Tcp(s) => s.as_raw_fd(),
        }
    }
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => (&*s).read(buf),
            Sock::Tcp(s) => (&*s).read(buf),
        }
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Unix(s) => s.set_read_timeout(t),
            Sock::Tcp(s) => s.set_read_timeout(t),
        }
    }
    fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Sock::Unix(s) => s.shutdown(how),
            Sock::Tcp(s) => s.shutdown(how),
        };
    }
    fn try_clone(&self) -> io::Result<Sock> {
        Ok(match self {
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
        })
    }
}

/// `send(2)` with `MSG_NOSIGNAL` (a vanished client must not kill us with
/// SIGPIPE), optionally non-blocking.
fn send_raw(fd: RawFd, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | if nonblocking { libc::MSG_DONTWAIT } else { 0 };
    // SAFETY: `buf` is valid for `buf.len()` bytes; `fd` is an open socket
    // owned by the connection for as long as this call runs.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn send_all_blocking(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match send_raw(fd, buf, false) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

// ------------------------------------------------------------ connections

/// Most requests in flight on one connection before its reader waits.
const MAX_INFLIGHT: u64 = 4096;
/// Most reply bytes queued for a slow client before its reader waits.
const MAX_QUEUED: usize = 256 << 20;
/// Read buffer per connection.
const READ_BUF: usize = 256 << 10;

#[derive(Default)]
struct OutQueue {
    queue: VecDeque<Vec<u8>>,
    bytes: usize,
    busy: bool,
    closing: bool,
}

struct Conn {
    id: u64,
    sock: Sock,
    structured: bool,
    out: Mutex<OutQueue>,
    out_cv: Condvar,
    inflight: AtomicU64,
    dead: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Conn {
    /// Send one whole reply: at once if nothing is queued and the socket
    /// takes it, else via the writer thread. Never blocks on the client.
    fn send(&self, reply: Vec<u8>) {
        if self.dead.load(Ordering::Relaxed) {
            return;
        }
        let mut q = lock(&self.out);
        if !q.busy && q.queue.is_empty() {
            let mut off = 0;
            while off < reply.len() {
                match send_raw(self.sock.fd(), &reply[off..], true) {
                    Ok(n) => off += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        self.dead.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            }
            if off == reply.len() {
                return;
            }
            let rest = reply[off..].to_vec();
            q.bytes += rest.len();
            q.queue.push_back(rest);
        } else {
            q.bytes += reply.len();
            q.queue.push_back(reply);
        }
        self.out_cv.notify_one();
    }

    fn queued_bytes(&self) -> usize {
        lock(&self.out).bytes
    }

    /// The writer thread: blocking sends of what `send` could not finish.
    fn writer_loop(&self) {
        loop {
            let mut q = lock(&self.out);
            let buf = loop {
                if let Some(b) = q.queue.pop_front() {
                    break b;
                }
                if q.closing {
                    return;
                }
                q = self.out_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            };
            q.busy = true;
            drop(q);
            let ok = !self.dead.load(Ordering::Relaxed)
                && send_all_blocking(self.sock.fd(), &buf).is_ok();
            let mut q = lock(&self.out);
            q.bytes -= buf.len();
            q.busy = false;
            if !ok {
                self.dead.store(true, Ordering::Relaxed);
                q.bytes = 0;
                q.queue.clear();
            }
        }
    }

    /// An error reply: a structured error chunk (with a message) when
    /// structured replies were negotiated, else a simple reply (never with
    /// data, even for a read).
    fn error_reply(&self, errno: u32, handle: u64, message: &str) -> Vec<u8> {
        if self.structured {
            structured_error(errno, handle, message)
        } else {
            simple_reply(errno, handle)
        }
    }
}

// ------------------------------------------------------------------ core

enum JobKind {
    /// The reply buffer, with room for the header before the data.
    Read(Vec<u8>),
    Write {
        seq: WriteSeq,
        fua: bool,
    },
    Flush {
        upto: WriteSeq,
    },
}

struct Job {
    conn: Arc<Conn>,
    handle: u64,
    kind: JobKind,
    epoch: u64,
    offset: u64,
    len: u64,
}

/// What the statistics and the trace need of one reply sent.
struct Sent {
    op: Op,
    arrival: Nanos,
    at: Nanos,
    breakdown: storlab_model::Breakdown,
    errno: u32,
    bytes: u64,
    offset: u64,
    len: u64,
}

struct Shared {
    clock: WallClock,
    export: ExportConfig,
    core: Mutex<ModelDriver<Job>>,
    gate: RwLock<()>,
    epoch: AtomicU64,
    data: Durability,
    stats: Stats,
    timer: OnceLock<Thread>,
    next_id: AtomicU64,
    stopping: AtomicBool,
    timer_stop: AtomicBool,
    record: Option<mpsc::Sender<RecorderMsg>>,
    spin_threshold_ns: u64,
    input_check_ns: u64,
    safety_net_ns: u64,
    /// Decaying maximum of how late timed sleeps ended, ns.
    oversleep: AtomicU64,
    /// A waiter is spinning for the next due time.
    spinner: AtomicBool,
    /// The driver's next due time (u64::MAX: none), for spinners to see
    /// requests submitted by other threads.
    next_due: AtomicU64,
    idle_poll_ns: u64,
    store_desc: String,
    started: Instant,
}

impl Shared {
    fn report(&self) -> ServeReport {
        let now = self.clock.now();
        let (device, clamped) = {
            let core = lock(&self.core);
            (core.device().report(now), core.clamped_arrivals())
        };
        self.data.collect_destaged();
        let clock = ClockReport {
            source: self.clock.source(),
            tsc_hz: self.clock.tsc_hz(),
            drift_ns: self.clock.drift_ns(),
            spin_threshold_ns: self.spin_threshold(),
        };
        self.stats.report(
            self.started.elapsed().as_secs_f64(),
            self.export.size,
            self.store_desc.clone(),
            self.data.store().allocated_bytes(),
            clamped,
            self.data.stats(),
            device,
            clock,
        )
    }

    fn power_cut(&self) -> io::Result<()> {
        let _w = self.gate.write().unwrap_or_else(|e| e.into_inner());
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.data.power_cut()
    }

    /// Process the device's wake-ups and release every reply due now;
    /// returns the next due time.
    fn service(&self, released: &mut Vec<Released<Job>>) -> Option<Nanos> {
        let _gate = self.gate.read().unwrap_or_else(|e| e.into_inner());
        let next = {
            let mut core = lock(&self.core);
            let next = core.tick(self.clock.now(), released);
            self.next_due
                .store(next.unwrap_or(u64::MAX), Ordering::Release);
            next
        };
        self.release_all(released);
        next
    }

    /// Send finished requests' replies and account for them. Replies for
    /// the same connection go out in one `send` (a burst of deadlines costs
    /// one system call and one wake-up of the client, not one each).
    /// Called with the gate held (read).
    fn release_all(&self, released: &mut Vec<Released<Job>>) {
        if released.is_empty() {
            return;
        }
        let epoch = self.epoch.load(Ordering::SeqCst);
        let mut groups: Vec<(Arc<Conn>, Vec<u8>, Vec<Sent>)> = Vec::new();
        for Released {
            op,
            arrival,
            at,
            breakdown,
            job,
            ..
        } in released.drain(..)
        {
            let errno = if job.epoch != epoch { EIO } else { 0 };
            if errno == 0 {
                match job.kind {
                    JobKind::Flush { upto } => self.data.flush_released(upto),
                    JobKind::Write { seq, fua: true } => self.data.fua_released(seq),
                    _ => {}
                }
            }
            let handle = job.handle;
            let reply = match job.kind {
                JobKind::Read(mut b) if errno == 0 => {
                    if job.conn.structured {
                        let len = (8 + job.len) as u32;
                        write_structured_header(
                            &mut b,
                            REPLY_FLAG_DONE,
                            REPLY_TYPE_OFFSET_DATA,
                            handle,
                            len,
                        );
                        b[STRUCTURED_REPLY_LEN..STRUCTURED_READ_PREFIX]
                            .copy_from_slice(&job.offset.to_be_bytes());
                    } else {
                        write_simple_header(&mut b, 0, handle);
                    }
                    b
                }
                _ if errno != 0 => job
                    .conn
                    .error_reply(errno, handle, "power cut while in flight"),
                _ => simple_reply(0, handle),
            };
            let moves_data = matches!(op, Op::Read | Op::Write) && errno == 0;
            let sent = Sent {
                op,
                arrival,
                at,
                breakdown,
                errno,
                bytes: if moves_data { job.len } else { 0 },
                offset: job.offset,
                len: job.len,
            };
            match groups.iter_mut().find(|g| Arc::ptr_eq(&g.0, &job.conn)) {
                Some(g) => {
                    g.1.extend_from_slice(&reply);
                    g.2.push(sent);
                }
                None => groups.push((job.conn, reply, vec![sent])),
            }
        }
        for (conn, bytes, sent) in groups {
            let now = self.clock.now();
            conn.send(bytes);
            self.stats.record_all(sent.iter().map(|s| Sample {
                op: s.op,
                bytes: s.bytes,
                error: s.errno != 0,
                model_ns: s.at - s.arrival,
                late_ns: now.saturating_sub(s.at),
                breakdown: &s.breakdown,
            }));
            if let Some(rec) = &self.record {
                for s in &sent {
                    let op = [TraceOp::Read, TraceOp::Write, TraceOp::Trim, TraceOp::Flush]
                        [s.op.index()];
                    let _ = rec.send(RecorderMsg::Record(TraceRecord {
                        time_ns: s.arrival,
                        op,
                        offset: s.offset,
                        len: s.len,
                        device: 0,
                        recorded_latency_ns: Some(now.saturating_sub(s.arrival)),
                        stream: conn.id as u32,
                    }));
                }
            }
            conn.inflight.fetch_sub(sent.len() as u64, Ordering::SeqCst);
        }
    }
}

/// Carry out one valid request that arrived at `t`.
fn handle_request(
    shared: &Shared,
    conn: &Arc<Conn>,
    handle: u64,
    command: Command,
    payload: Vec<u8>,
    t: Nanos,
    released: &mut Vec<Released<Job>>,
) {
    let (op, offset, len, fua) = match command {
        Command::Read { offset, len } => (Op::Read, offset, len as u64, false),
        Command::Write { offset, len, fua } => (Op::Write, offset, len as u64, fua),
        Command::Trim { offset, len, fua } => (Op::Trim, offset, len as u64, fua),
        // Zeroing moves no data over the link: timed as a trim, unless the
        // client forbids holes, when the device really writes.
        Command::WriteZeroes {
            offset,
            len,
            fua,
            no_hole,
        } => (
            if no_hole { Op::Write } else { Op::Trim },
            offset,
            len as u64,
            fua,
        ),
        Command::Flush => (Op::Flush, 0, 0, false),
        Command::Disconnect => return,
    };
    let gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
    let epoch = shared.epoch.load(Ordering::SeqCst);
    let data = &shared.data;
    let kind = match command {
        Command::Read { offset, len } => {
            let hdr = if conn.structured {
                STRUCTURED_READ_PREFIX
            } else {
                SIMPLE_REPLY_LEN
            };
            let mut b = vec![0u8; hdr + len as usize];
            data.read(&mut b[hdr..], offset).map(|_| JobKind::Read(b))
        }
        Command::Write { offset, fua, .. } => data
            .write(&payload, offset, fua)
            .map(|seq| JobKind::Write { seq, fua }),
        Command::Trim { offset, len, fua }
        | Command::WriteZeroes {
            offset, len, fua, ..
        } => data
            .zero(offset, len as u64, fua)
            .map(|seq| JobKind::Write { seq, fua }),
        _ => data.flush_arrived().map(|upto| JobKind::Flush { upto }),
    };
    let kind = match kind {
        Ok(k) => k,
        Err(_) => {
            drop(gate);
            shared.stats.protocol_error();
            conn.send(conn.error_reply(EIO, handle, "store IO error"));
            return;
        }
    };
    conn.inflight.fetch_add(1, Ordering::SeqCst);
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let req = DevRequest {
        id,
        op,
        offset,
        len,
        fua,
    };
    let job = Job {
        conn: conn.clone(),
        handle,
        kind,
        epoch,
        offset,
        len,
    };
    {
        let mut core = lock(&shared.core);
        core.arrive(t, req, job, released);
        // Also release what fell due while this request was being read.
        let next = core.tick(shared.clock.now(), released);
        shared
            .next_due
            .store(next.unwrap_or(u64::MAX), Ordering::Release);
    }
    shared.release_all(released);
    drop(gate);
}

/// One connection, from the greeting to the close.
fn serve_connection(shared: Arc<Shared>, sock: Sock, id: u64) {
    tighten_timer_slack();
    shared.stats.connection();
    let _ = sock.set_read_timeout(Some(Duration::from_secs(30)));
    let mut hs = Handshake::new(shared.export.clone());
    if shared.stopping.load(Ordering::SeqCst) {
        hs.set_shutting_down();
    }
    let mut buf = vec![0u8; READ_BUF];
    let (mut lo, mut hi) = (0usize, 0usize);
    let outcome = loop {
        let out = hs.take_output();
        if !out.is_empty() && send_all_blocking(sock.fd(), &out).is_err() {
            shared.stats.handshake_failure();
            return;
        }
        if let Some(o) = hs.outcome() {
            break o.clone();
        }
        let n = match sock.read(&mut buf) {
            Ok(0) | Err(_) => {
                shared.stats.handshake_failure();
                return;
            }
            Ok(n) => n,
        };
        let used = hs.feed(&buf[..n]);
        (lo, hi) = (used, n);
    };
    let negotiated = match outcome {
        Outcome::Transmission(n) => n,
        Outcome::Aborted => {
            sock.shutdown(Shutdown::Both);
            return;
        }
        Outcome::Rejected(_) => {
            shared.stats.handshake_failure();
            sock.shutdown(Shutdown::Both);
            return;
        }
    };
    let _ = sock.set_read_timeout(None);
    let conn = Arc::new(Conn {
        id,
        sock,
        structured: negotiated.structured_replies,
        out: Mutex::new(OutQueue::default()),
        out_cv: Condvar::new(),
        inflight: AtomicU64::new(0),
        dead: AtomicBool::new(false),
    });
    let writer = {
        let c = conn.clone();
        thread::Builder::new()
            .name(format!("nbd-write-{id}"))
            .spawn(move || c.writer_loop())
    };
    let Ok(writer) = writer else {
        conn.sock.shutdown(Shutdown::Both);
        return;
    };
    let limits = Limits {
        size: shared.export.size,
        min_block: shared.export.block.minimum,
        max_payload: shared.export.block.maximum,
        read_only: shared.export.read_only,
        structured: conn.structured,
    };
    let mut stream = RequestStream::new(limits);
    let mut released = Vec::new();
    let mut t = shared.clock.now();
    'conn: loop {
        while lo < hi {
            let (used, ev) = stream.feed(&buf[lo..hi]);
            lo += used;
            match ev {
                None => {}
                Some(Event::Request {
                    command: Command::Disconnect,
                    ..
                }) => break 'conn,
                Some(Event::Request {
                    handle,
                    command,
                    payload,
                }) => {
                    while conn.inflight.load(Ordering::SeqCst) >= MAX_INFLIGHT
                        || conn.queued_bytes() > MAX_QUEUED
                    {
                        if conn.dead.load(Ordering::Relaxed) {
                            break 'conn;
                        }
                        shared.service(&mut released);
                        thread::sleep(Duration::from_micros(20));
                    }
                    handle_request(&shared, &conn, handle, command, payload, t, &mut released);
                }
                Some(Event::Error {
                    handle,
                    errno,
                    message,
                    ..
                }) => {
                    shared.stats.protocol_error();
                    conn.send(conn.error_reply(errno, handle, message));
                }
                Some(Event::Violation(_)) => {
                    shared.stats.protocol_violation();
                    break 'conn;
                }
            }
        }
        lo = 0;
        wait_for_input(&shared, &conn, &mut released);
        hi = match conn.sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(_) => break,
        };
        t = shared.clock.now();
    }
    // Finish what is in flight (replies still go out at their deadlines),
    // let the writer drain for a while, then close.
    drain_inflight(&shared, &conn, &mut released);
    let give_up = Instant::now() + Duration::from_secs(5);
    loop {
        let q = lock(&conn.out);
        if (q.queue.is_empty() && !q.busy)
            || conn.dead.load(Ordering::Relaxed)
            || Instant::now() > give_up
        {
            break;
        }
        drop(q);
        thread::sleep(Duration::from_millis(1));
    }
    conn.sock.shutdown(Shutdown::Both);
    lock(&conn.out).closing = true;
    conn.out_cv.notify_all();
    let _ = writer.join();
}

/// Wait until `fd` is readable or `timeout` passes; true if readable (or
/// closed or in error: the next `read` will tell).
fn wait_readable(fd: RawFd, timeout: Duration) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    n > 0
}

impl Shared {
    /// Sleep on `fd` (or just sleep) for `d`; learn how late sleeps end so
    /// the spin threshold covers them. True if `fd` became readable.
    fn sleep_on(&self, fd: Option<RawFd>, d: Duration) -> bool {
        let start = self.clock.now();
        let readable = match fd {
            Some(fd) => wait_readable(fd, d),
            None => {
                thread::sleep(d);
                false
            }
        };
        if !readable {
            let over = self
                .clock
                .now()
                .saturating_sub(start)
                .saturating_sub(d.as_nanos() as u64);
            // A slowly decaying maximum of recent oversleeps (racy updates
            // are fine): one late wake-up keeps the spin window wide for the
            // next few hundred sleeps.
            let est = self.oversleep.load(Ordering::Relaxed);
            self.oversleep
                .store(over.max(est - est / 256), Ordering::Relaxed);
        }
        readable
    }

    /// How long before a due time a waiter stops sleeping and spins.
    fn spin_threshold(&self) -> u64 {
        let est = self.oversleep.load(Ordering::Relaxed);
        (est + est / 4 + 10_000).clamp(self.spin_threshold_ns, 1_000_000)
    }

    fn try_lead(&self) -> bool {
        self.spinner
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    fn unlead(&self) {
        self.spinner.store(false, Ordering::Release);
    }
}

/// Before blocking in `read`: act as the timer (see the module docs) until
/// input arrives or nothing needs this thread. One waiter at a time spins
/// (the leader): it covers every connection's deadlines, and right after a
/// connection's last reply it also polls that connection's socket for
/// `idle_poll_ns` (a client at queue depth 1 sends its next request within
/// microseconds; catching it without a sleep and a wake-up keeps the
/// transport floor low and the same with and without model latency). The
/// other waiters sleep on their sockets and look again `safety_net_ns`
/// after the next due time, in case the leader was called away.
fn wait_for_input(shared: &Shared, conn: &Conn, released: &mut Vec<Released<Job>>) {
    let fd = Some(conn.sock.fd());
    // The idle poll counts from this connection's last reply.
    let mut idle_end: Option<Nanos> = None;
    loop {
        let next = shared.service(released);
        let mine = conn.inflight.load(Ordering::SeqCst) > 0;
        let now = shared.clock.now();
        let threshold = shared.spin_threshold();
        let due_soon = next.filter(|&d| d <= now + threshold);
        let idle_end = if mine {
            0
        } else {
            *idle_end.get_or_insert(now + shared.idle_poll_ns)
        };
        let idle_poll = !mine && now < idle_end;
        if due_soon.is_some() || idle_poll {
            if shared.try_lead() {
                let until = match (due_soon, next) {
                    (Some(d), _) => d,
                    (None, Some(d)) => idle_end.min(d - threshold),
                    (None, None) => idle_end,
                };
                let input = spin_until(shared, until, fd);
                shared.unlead();
                if input {
                    return;
                }
                continue;
            }
            if !mine {
                return;
            }
            let d = due_soon.unwrap_or(now).saturating_sub(now) + shared.safety_net_ns;
            if shared.sleep_on(fd, Duration::from_nanos(d)) {
                return;
            }
            continue;
        }
        if !mine {
            return;
        }
        let d = match next {
            Some(due) => due - now - threshold,
            // In flight but nothing scheduled (the device holds it until
            // some other event): look again soon.
            None => 200_000,
        };
        if shared.sleep_on(fd, Duration::from_nanos(d)) {
            return;
        }
    }
}

/// Spin until `until` or until something falls due (a request another
/// thread submitted may be due sooner); with `fd`, stop early (returning
/// true) when it is readable, checking every `input_check_ns`.
fn spin_until(shared: &Shared, until: Nanos, fd: Option<RawFd>) -> bool {
    let clock = &shared.clock;
    let mut check = clock.now() + shared.input_check_ns;
    loop {
        let now = clock.now();
        if now >= until || now >= shared.next_due.load(Ordering::Acquire) {
            return false;
        }
        if now >= check {
            if let Some(fd) = fd {
                if wait_readable(fd, Duration::ZERO) {
                    return true;
                }
            }
            check = now + shared.input_check_ns;
        }
        std::hint::spin_loop();
    }
}

/// After the connection closed: keep time for this connection's requests
/// still in flight (their replies go out, or are dropped, on time).
fn drain_inflight(shared: &Shared, conn: &Conn, released: &mut Vec<Released<Job>>) {
    while conn.inflight.load(Ordering::SeqCst) > 0 {
        let next = shared.service(released);
        let now = shared.clock.now();
        match next {
            Some(due) if due <= now + shared.spin_threshold() && shared.try_lead() => {
                spin_until(shared, due, None);
                shared.unlead();
            }
            Some(due) => {
                let d = due
                    .saturating_sub(now)
                    .saturating_sub(shared.spin_threshold())
                    .max(10_000);
                shared.sleep_on(None, Duration::from_nanos(d));
            }
            None => {
                shared.sleep_on(None, Duration::from_micros(200));
            }
        }
    }
}

/// The safety-net timer: every millisecond, releases what no reader did
/// (waiting readers already look again `safety_net_ns` after a deadline;
/// this covers a reader stuck in a long copy). Waking more often would
/// disturb the spinning threads on a small machine.
fn timer_loop(shared: Arc<Shared>) {
    let mut released = Vec::new();
    loop {
        let next = shared.service(&mut released);
        if shared.timer_stop.load(Ordering::SeqCst) && next.is_none() {
            return;
        }
        thread::park_timeout(Duration::from_millis(1));
    }
}

// ---------------------------------------------------------------- server

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    fn fd(&self) -> RawFd {
        match self {
            Listener::Unix(l, _) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        }
    }
    fn accept(&self) -> io::Result<Sock> {
        match self {
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                Ok(Sock::Unix(s))
            }
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                s.set_nonblocking(false)?;
                s.set_nodelay(true)?;
                Ok(Sock::Tcp(s))
            }
        }
    }
}

/// Bind a unix socket, replacing a stale socket file but never a live
/// server's socket or a file that is not a socket.
fn bind_unix(path: &Path) -> Result<UnixListener, EmuError> {
    if let Ok(md) = std::fs::symlink_metadata(path) {
        if !md.file_type().is_socket() {
            return Err(EmuError::Config(format!(
                "{} exists and is not a socket",
                path.display()
            )));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(EmuError::SocketInUse(path.to_path_buf()));
        }
        std::fs::remove_file(path)
            .map_err(|e| EmuError::io(format!("removing stale socket {}", path.display()), e))?;
    }
    let l = UnixListener::bind(path)
        .map_err(|e| EmuError::io(format!("binding {}", path.display()), e))?;
    l.set_nonblocking(true)
        .map_err(|e| EmuError::io("set_nonblocking", e))?;
    Ok(l)
}

fn validate(opts: &ServeOptions, capacity: u64) -> Result<u64, EmuError> {
    let size = if opts.size == 0 { capacity } else { opts.size };
    if size == 0 {
        return Err(EmuError::Config("export size is zero".into()));
    }
    if size > capacity {
        return Err(EmuError::Config(format!(
            "size {size} exceeds the device's capacity {capacity}"
        )));
    }
    let b = opts.block;
    let pow2 = |x: u32| x.is_power_of_two();
    if !pow2(b.minimum) || b.minimum > 65536 {
        return Err(EmuError::Config(format!(
            "minimum block size {} must be a power of two up to 64 KiB",
            b.minimum
        )));
    }
    if !pow2(b.preferred) || b.preferred < b.minimum {
        return Err(EmuError::Config(format!(
            "preferred block size {} must be a power of two >= the minimum",
            b.preferred
        )));
    }
    if b.maximum < b.preferred || !b.maximum.is_multiple_of(b.minimum) || b.maximum > (1 << 30) {
        return Err(EmuError::Config(format!(
            "maximum block size {} must be a multiple of the minimum, >= the preferred and <= 1 GiB",
            b.maximum
        )));
    }
    if opts.export_name.len() > 4096 || opts.description.len() > 4096 {
        return Err(EmuError::Config(
            "export name and description must be at most 4096 bytes".into(),
        ));
    }
    Ok(size)
}

enum RecorderMsg {
    Record(TraceRecord),
    Finish,
}

/// Create the trace file and start the thread that writes it (file IO
/// stays off the reply path).
fn start_recorder(
    spec: &RecordSpec,
) -> Result<(mpsc::Sender<RecorderMsg>, JoinHandle<RecordReport>), EmuError> {
    let file = File::create(&spec.path)
        .map_err(|e| EmuError::io(format!("creating {}", spec.path.display()), e))?;
    let (tx, rx) = mpsc::channel::<RecorderMsg>();
    let spec = spec.clone();
    let handle = thread::Builder::new()
        .name("nbd-record".into())
        .spawn(move || {
            let opts = WriteOptions {
                reorder_window_ns: spec.reorder_window_ns,
                ..WriteOptions::default()
            };
            let mut w = trace_writer(spec.format, BufWriter::new(file), &opts);
            let mut report = RecordReport {
                path: spec.path.clone(),
                format: spec.format.to_string(),
                written: 0,
                dropped: 0,
                inexact: 0,
                error: None,
            };
            let mut late = 0;
            while let Ok(RecorderMsg::Record(r)) = rx.recv() {
                if w.record(&r).is_err() {
                    late += 1;
                }
            }
            if let Err(e) = w.finish() {
                report.error = Some(e.to_string());
            }
            let st = w.stats();
            report.written = st.written;
            report.dropped = st.dropped + late;
            report.inexact = st.inexact;
            report
        })
        .map_err(|e| EmuError::io("spawning the recorder thread", e))?;
    Ok((tx, handle))
}

/// Control of a running server from another thread.
#[derive(Clone)]
pub struct ServerControl {
    shared: Arc<Shared>,
    shutdown: ShutdownHandle,
}

impl ServerControl {
    /// Emulate a power cut now: acknowledged writes the device would lose
    /// are discarded, requests in flight fail with `EIO`, and the server
    /// keeps serving the post-crash image.
    pub fn power_cut(&self) -> Result<(), EmuError> {
        self.shared
            .power_cut()
            .map_err(|e| EmuError::io("power cut", e))
    }
    /// The report so far.
    pub fn report(&self) -> ServeReport {
        self.shared.report()
    }
    /// Ask the server to stop.
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }
}

/// A bound server, ready to [`Server::run`].
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<Listener>,
    control: Option<(UnixListener, PathBuf)>,
    handle_signals: bool,
    max_connections: usize,
    shutdown: ShutdownHandle,
    recorder: Option<JoinHandle<RecordReport>>,
    uris: Vec<String>,
    tcp_addr: Option<SocketAddr>,
}

impl Server {
    /// Check options, open the store and bind the listeners. Clients can
    /// connect as soon as this returns (they are served once `run` starts).
    pub fn bind(
        opts: ServeOptions,
        device: Box<dyn Device>,
        shutdown: ShutdownHandle,
    ) -> Result<Server, EmuError> {
        let size = validate(&opts, device.capacity())?;
        let mut listeners = Vec::new();
        let mut uris = Vec::new();
        let mut tcp_addr = None;
        let name = &opts.export_name;
        if let Some(p) = &opts.socket {
            listeners.push(Listener::Unix(bind_unix(p)?, p.clone()));
            uris.push(format!("nbd+unix:///{name}?socket={}", p.display()));
        }
        let listen = match (&opts.socket, opts.listen) {
            (_, Some(a)) => Some(a),
            (None, None) => Some(SocketAddr::from(([127, 0, 0, 1], 10809))),
            (Some(_), None) => None,
        };
        if let Some(addr) = listen {
            if !addr.ip().is_loopback() && !opts.allow_remote {
                return Err(EmuError::NonLoopback(addr));
            }
            let l =
                TcpListener::bind(addr).map_err(|e| EmuError::io(format!("binding {addr}"), e))?;
            l.set_nonblocking(true)
                .map_err(|e| EmuError::io("set_nonblocking", e))?;
            let local = l.local_addr().map_err(|e| EmuError::io("local_addr", e))?;
            uris.push(format!("nbd://{local}/{name}"));
            tcp_addr = Some(local);
            listeners.push(Listener::Tcp(l));
        }
        let control = match &opts.control {
            Some(p) => Some((bind_unix(p)?, p.clone())),
            None => None,
        };
        let store = open_store(&opts.store, size, opts.read_only)
            .map_err(|e| EmuError::io(format!("opening store {}", opts.store), e))?;
        let (record, recorder) = match &opts.record {
            Some(spec) => {
                let (tx, handle) = start_recorder(spec)?;
                (Some(tx), Some(handle))
            }
            None => (None, None),
        };
        let volatile = device.volatile_write_cache();
        let export = ExportConfig {
            name: opts.export_name.clone(),
            description: opts.description.clone(),
            size,
            read_only: opts.read_only,
            multi_conn: opts.multi_conn,
            rotational: opts.rotational,
            block: opts.block,
        };
        let shared = Arc::new(Shared {
            clock: WallClock::new(Duration::from_millis(30)),
            export,
            core: Mutex::new(ModelDriver::new(device)),
            gate: RwLock::new(()),
            epoch: AtomicU64::new(0),
            data: Durability::new(store, volatile, opts.journal_limit),
            stats: Stats::new(),
            timer: OnceLock::new(),
            next_id: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            timer_stop: AtomicBool::new(false),
            record,
            spin_threshold_ns: opts.spin_threshold_ns,
            input_check_ns: opts.input_check_ns,
            safety_net_ns: opts.safety_net_ns,
            oversleep: AtomicU64::new(0),
            spinner: AtomicBool::new(false),
            next_due: AtomicU64::new(u64::MAX),
            idle_poll_ns: opts.idle_poll_ns,
            store_desc: opts.store.to_string(),
            started: Instant::now(),
        });
        Ok(Server {
            shared,
            listeners,
            control,
            handle_signals: opts.handle_signals,
            max_connections: opts.max_connections,
            shutdown,
            recorder,
            uris,
            tcp_addr,
        })
    }

    /// NBD URIs clients can use (`nbd+unix:///name?socket=...`,
    /// `nbd://addr/name`).
    pub fn uris(&self) -> &[String] {
        &self.uris
    }

    /// The bound TCP address, if listening on TCP.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }

    /// A control handle (power cuts, reports, shutdown).
    pub fn control(&self) -> ServerControl {
        ServerControl {
            shared: self.shared.clone(),
            shutdown: self.shutdown.clone(),
        }
    }

    /// Serve until the shutdown handle (or SIGTERM/SIGINT when handling
    /// signals, or the control socket's `shutdown`) says stop; then finish
    /// in-flight requests, sync the store and return the report.
    pub fn run(self) -> Result<ServeReport, EmuError> {
        let signals = if self.handle_signals {
            Some(
                SignalGuard::install()
                    .map_err(|e| EmuError::io("installing signal handlers", e))?,
            )
        } else {
            None
        };
        let shared = self.shared.clone();
        let timer = {
            let s = shared.clone();
            thread::Builder::new()
                .name("nbd-timer".into())
                .spawn(move || timer_loop(s))
                .map_err(|e| EmuError::io("spawning the timer thread", e))?
        };
        let _ = shared.timer.set(timer.thread().clone());
        let mut conns: Vec<(Sock, JoinHandle<()>)> = Vec::new();
        let mut next_conn = 0u64;
        let mut fds: Vec<libc::pollfd> = self
            .listeners
            .iter()
            .map(|l| l.fd())
            .collect::<Vec<_>>()
            .into_iter()
            .chain(self.control.iter().map(|(l, _)| l.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        loop {
            let sigs = if signals.is_some() {
                SIGNALS.swap(0, Ordering::SeqCst)
            } else {
                0
            };
            if sigs & SIG_POWERCUT != 0 {
                let _ = shared.power_cut();
            }
            if sigs & SIG_STOP != 0 || self.shutdown.is_triggered() {
                break;
            }
            // SAFETY: `fds` is a valid array of pollfd of the given length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20) };
            if n > 0 {
                for (i, l) in self.listeners.iter().enumerate() {
                    if fds[i].revents == 0 {
                        continue;
                    }
                    while let Ok(sock) = l.accept() {
                        conns.retain(|(_, h)| !h.is_finished());
                        if conns.len() >= self.max_connections {
                            sock.shutdown(Shutdown::Both);
                            continue;
                        }
                        let Ok(watch) = sock.try_clone() else {
                            continue;
                        };
                        next_conn += 1;
                        let s = shared.clone();
                        let id = next_conn;
                        match thread::Builder::new()
                            .name(format!("nbd-conn-{id}"))
                            .spawn(move || serve_connection(s, sock, id))
                        {
                            Ok(h) => conns.push((watch, h)),
                            Err(_) => watch.shutdown(Shutdown::Both),
                        }
                    }
                }
                if let Some((l, _)) = &self.control {
                    if fds[self.listeners.len()].revents != 0 {
                        while let Ok((s, _)) = l.accept() {
                            self.control_command(s);
                        }
                    }
                }
            }
            conns.retain(|(_, h)| !h.is_finished());
        }
        // Stop: readers see end-of-file, finish their in-flight requests
        // and close; then the timer stops and the store is synced.
        shared.stopping.store(true, Ordering::SeqCst);
        for (s, _) in &conns {
            s.shutdown(Shutdown::Read);
        }
        for (_, h) in conns {
            let _ = h.join();
        }
        shared.timer_stop.store(true, Ordering::SeqCst);
        if let Some(t) = shared.timer.get() {
            t.unpark();
        }
        let _ = timer.join();
        let sync = shared.data.sync();
        if let Some(rec) = &shared.record {
            let _ = rec.send(RecorderMsg::Finish);
        }
        let record = self.recorder.map(|h| {
            h.join()
                .unwrap_or_else(|_| RecordReport::failed("recorder panicked"))
        });
        for l in &self.listeners {
            if let Listener::Unix(_, p) = l {
                let _ = std::fs::remove_file(p);
            }
        }
        if let Some((_, p)) = &self.control {
            let _ = std::fs::remove_file(p);
        }
        drop(signals);
        sync.map_err(|e| EmuError::io("syncing the store at shutdown", e))?;
        let mut report = shared.report();
        report.record = record;
        Ok(report)
    }

    fn control_command(&self, s: UnixStream) {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while line.len() < 256 {
            match (&s).read(&mut byte) {
                Ok(1) if byte[0] != b'\n' => line.push(byte[0]),
                _ => break,
            }
        }
        let reply = match String::from_utf8_lossy(&line).trim() {
            "powercut" => match self.shared.power_cut() {
                Ok(()) => "ok\n".to_string(),
                Err(e) => format!("error: {e}\n"),
            },
            "stats" => serde_json::to_string(&self.shared.report())
                .map(|j| j + "\n")
                .unwrap_or_default(),
            "shutdown" => {
                self.shutdown.trigger();
                "ok\n".to_string()
            }
            other => format!("error: unknown command {other:?} (powercut, stats, shutdown)\n"),
        };
        let _ = (&s).write_all(reply.as_bytes());
    }
}

/// Serve `device` over NBD until shut down; returns the report.
pub fn serve(
    opts: ServeOptions,
    device: Box<dyn Device>,
    shutdown: ShutdownHandle,
) -> Result<ServeReport, EmuError> {
    Server::bind(opts, device, shutdown)?.run()
}

/// A server running on its own thread (for tests and benchmarks).
pub struct ServerHandle {
    control: ServerControl,
    uris: Vec<String>,
    tcp_addr: Option<SocketAddr>,
    thread: Option<JoinHandle<Result<ServeReport, EmuError>>>,
}

/// Bind and start serving on a new thread; stop with [`ServerHandle::stop`].
pub fn spawn(opts: ServeOptions, device: Box<dyn Device>) -> Result<ServerHandle, EmuError> {
    let server = Server::bind(opts, device, ShutdownHandle::new())?;
    let control = server.control();
    let uris = server.uris().to_vec();
    let tcp_addr = server.tcp_addr();
    let thread = thread::Builder::new()
        .name("nbd-server".into())
        .spawn(move || server.run())
        .map_err(|e| EmuError::io("spawning the server thread", e))?;
    Ok(ServerHandle {
        control,
        uris,
        tcp_addr,
        thread: Some(thread),
    })
}

impl ServerHandle {
    /// The first URI (the unix socket's when there is one).
    pub fn uri(&self) -> &str {
        self.uris.first().map(String::as_str).unwrap_or("")
    }
    /// All URIs.
    pub fn uris(&self) -> &[String] {
        &self.uris
    }
    /// The bound TCP address, if any.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }
    /// Control (power cut, report).
    pub fn control(&self) -> &ServerControl {
        &self.control
    }
    /// Stop the server and return its final report.
    pub fn stop(mut self) -> Result<ServeReport, EmuError> {
        self.control.shutdown();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            _ => Err(EmuError::Config("server thread panicked".into())),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.control.shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
