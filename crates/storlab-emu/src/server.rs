//! The NBD server: listeners, handshakes, the reactor that serves every
//! connection, power cuts, shutdown.
//!
//! A connection's handshake runs on a thread of its own (blocking reads
//! with a timeout; nothing timed happens there). Once in transmission
//! phase the socket goes to the reactor ([`crate::reactor`]): one thread
//! that reads requests from every connection, checks them at the boundary
//! ([`crate::request::RequestStream`]), applies their data to the store (writes land at
//! arrival; reads copy at arrival), submits them to the model with the
//! time their bytes were read ([`ModelDriver::arrive`]) and sends each
//! reply when its deadline comes, sleeping or spinning in between. A
//! zero-latency completion goes out in the same pass as its request, and
//! replies due together for one connection go out in one `send`.
//! A client that does not read gets its replies queued (the reactor never
//! blocks on a socket), so no client can stall another.
//!
//! An emulated power cut takes the gate (a lock the reactor holds from a
//! request's data access to its submission, and while it commits
//! durability and builds replies), rolls the store back to the durable
//! image and bumps the power epoch: requests in flight at the cut get
//! `EIO`.

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, RwLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use storlab_model::Device;
use storlab_trace::{writer as trace_writer, TraceRecord, WriteOptions};

use crate::clock::{Clock, WallClock};
use crate::driver::ModelDriver;
use crate::durability::Durability;
use crate::error::EmuError;
use crate::handshake::{BlockSizes, ExportConfig, Handshake, Negotiated, Outcome};
use crate::reactor::{self, Job};
use crate::report::{ClockReport, RecordReport, ServeReport, Stats};
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
    /// The reactor sleeps until at least this long before a due time,
    /// then spins (a sleeping thread wakes 15-30 µs late in a VM; the
    /// window widens by itself to cover the late wake-ups it sees, up to
    /// 1 ms).
    pub spin_threshold_ns: u64,
    /// How often the spinning reactor looks for new requests (a new
    /// request's arrival time can be late by up to this).
    pub input_check_ns: u64,
    /// Run the reactor thread `SCHED_FIFO` (lowest real-time priority)
    /// when the process may (`CAP_SYS_NICE`): a deadline then preempts a
    /// client that is using every core. Falls back to normal scheduling.
    pub realtime: bool,
    /// After a connection's last reply, expect its next request this long:
    /// idle CPUs poll meanwhile (wake assist on) or the reactor spins
    /// (assist off). 0 = never.
    pub idle_poll_ns: u64,
    /// Keep idle CPUs polling instead of halted from shortly before each
    /// deadline until the reply is out, and while a connection is expected
    /// to send its next request, with a 0 µs CPU latency request
    /// (`/dev/cpu_dma_latency`, needs root): a client's CPU woken from halt
    /// costs it 15-60 µs in a VM, which would add to every emulated
    /// latency (see the `assist` module).
    pub wake_assist: bool,
    /// Largest volatile-cache journal (bytes) before the oldest writes are
    /// treated as written back.
    pub journal_limit: u64,
    /// Most simultaneous connections.
    pub max_connections: usize,
    /// Before serving, measure the transport floor with this many
    /// zero-latency round trips (0: don't); the report shows it
    /// ([`crate::probe`]).
    pub floor_probe: usize,
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
            spin_threshold_ns: 30_000,
            input_check_ns: 1_000,
            realtime: true,
            idle_poll_ns: 50_000,
            wake_assist: true,
            journal_limit: 1 << 30,
            max_connections: 64,
            floor_probe: 0,
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
    /// Record a closed-loop trace (`storlab_trace::closed`: each request
    /// with its completion, think time and the requests it waited for)
    /// instead of `format`.
    pub closed: bool,
}

impl RecordSpec {
    /// Record to `path` in `format` with a 1 s reorder window.
    pub fn new(path: impl Into<PathBuf>, format: storlab_trace::Format) -> Self {
        RecordSpec {
            path: path.into(),
            format,
            reorder_window_ns: 1_000_000_000,
            closed: false,
        }
    }

    /// Record a closed-loop trace to `path` with a 1 s reorder window.
    pub fn closed(path: impl Into<PathBuf>) -> Self {
        RecordSpec {
            closed: true,
            ..RecordSpec::new(path, storlab_trace::Format::Fio3)
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

pub(crate) enum Sock {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Sock {
    pub(crate) fn fd(&self) -> RawFd {
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
    pub(crate) fn shutdown(&self, how: Shutdown) {
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
pub(crate) fn send_raw(fd: RawFd, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
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

/// A connection whose handshake is done, handed to the reactor.
pub(crate) struct NewConn {
    pub(crate) id: u64,
    pub(crate) sock: Sock,
    /// Structured replies, block status.
    pub(crate) negotiated: Negotiated,
    /// Bytes read past the end of the handshake (the first requests).
    pub(crate) leftover: Vec<u8>,
}

/// Lock a mutex, ignoring poisoning (a panicking holder leaves data
/// that is still consistent here: counters, queues, the model).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

// ------------------------------------------------------------------ core

/// The reactor's timing knobs (see [`ServeOptions`]).
pub(crate) struct Timing {
    pub(crate) spin_threshold_ns: u64,
    pub(crate) input_check_ns: u64,
    pub(crate) idle_poll_ns: u64,
    pub(crate) realtime: bool,
    pub(crate) wake_assist: bool,
}

/// What every thread of the server shares.
pub(crate) struct Shared {
    pub(crate) clock: WallClock,
    /// The transport floor measured before serving.
    floor: Option<crate::report::LatencySummary>,
    pub(crate) export: ExportConfig,
    pub(crate) core: Mutex<ModelDriver<Job>>,
    /// Held (read) by the reactor from a request's data access to its
    /// submission and while releasing; a power cut takes it (write).
    pub(crate) gate: RwLock<()>,
    pub(crate) epoch: AtomicU64,
    pub(crate) data: Durability,
    pub(crate) stats: Stats,
    pub(crate) next_id: AtomicU64,
    pub(crate) stopping: AtomicBool,
    pub(crate) record: Option<mpsc::Sender<RecorderMsg>>,
    pub(crate) timing: Timing,
    /// The reactor's current spin window, ns (for the report).
    pub(crate) window_ns: AtomicU64,
    /// The reactor runs `SCHED_FIFO`.
    pub(crate) realtime_active: AtomicBool,
    /// Why the wake assist is off (`None`: on).
    pub(crate) assist_off: Mutex<Option<String>>,
    /// Times the wake assist switched idle CPUs to polling.
    pub(crate) assist_switches: Arc<AtomicU64>,
    /// Connections whose handshake finished, for the reactor to take.
    pub(crate) incoming: Mutex<Vec<NewConn>>,
    /// An eventfd in the reactor's epoll set: new connections, stop.
    pub(crate) wake: OwnedFd,
    /// The reactor's epoll set.
    pub(crate) epoll: OwnedFd,
    pub(crate) reactor_stop: AtomicBool,
    /// Connections accepted and not yet closed (handshaking or served).
    pub(crate) live_conns: AtomicUsize,
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
            spin_threshold_ns: self.window_ns.load(Ordering::Relaxed),
            realtime: self.realtime_active.load(Ordering::Relaxed),
            wake_assist: lock(&self.assist_off)
                .clone()
                .map_or_else(|| "on".to_string(), |why| format!("off: {why}")),
            wake_assist_switches: self.assist_switches.load(Ordering::Relaxed),
        };
        let mut r = self.stats.report(
            self.started.elapsed().as_secs_f64(),
            self.export.size,
            self.store_desc.clone(),
            self.data.store().allocated_bytes(),
            clamped,
            self.data.stats(),
            device,
            clock,
        );
        r.transport_floor = self.floor.clone();
        r
    }

    fn power_cut(&self) -> io::Result<()> {
        let _w = self.gate.write().unwrap_or_else(|e| e.into_inner());
        self.epoch.fetch_add(1, Ordering::SeqCst);
        self.data.power_cut()
    }

    fn wake_reactor(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from `one` to the eventfd we own.
        unsafe {
            libc::write(
                self.wake.as_raw_fd(),
                (&one as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
    }
}

/// One connection's handshake, on its own thread (blocking, with a
/// timeout); then the socket goes to the reactor.
fn serve_connection(shared: Arc<Shared>, sock: Sock, id: u64) {
    shared.stats.connection();
    let outcome = handshake(&shared, &sock);
    match outcome {
        Some((negotiated, leftover)) => {
            let _ = sock.set_read_timeout(None);
            lock(&shared.incoming).push(NewConn {
                id,
                sock,
                negotiated,
                leftover,
            });
            shared.wake_reactor();
        }
        None => {
            sock.shutdown(Shutdown::Both);
            shared.live_conns.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Run the handshake; on success, what was negotiated and the bytes read
/// past its end.
fn handshake(shared: &Shared, sock: &Sock) -> Option<(Negotiated, Vec<u8>)> {
    let _ = sock.set_read_timeout(Some(Duration::from_secs(30)));
    let mut hs = Handshake::new(shared.export.clone());
    if shared.stopping.load(Ordering::SeqCst) {
        hs.set_shutting_down();
    }
    let mut buf = vec![0u8; 64 << 10];
    let (mut lo, mut hi) = (0usize, 0usize);
    let outcome = loop {
        let out = hs.take_output();
        if !out.is_empty() && send_all_blocking(sock.fd(), &out).is_err() {
            shared.stats.handshake_failure();
            return None;
        }
        if let Some(o) = hs.outcome() {
            break o.clone();
        }
        let n = match sock.read(&mut buf) {
            Ok(0) | Err(_) => {
                shared.stats.handshake_failure();
                return None;
            }
            Ok(n) => n,
        };
        let used = hs.feed(&buf[..n]);
        (lo, hi) = (used, n);
    };
    match outcome {
        Outcome::Transmission(n) => Some((n, buf[lo..hi].to_vec())),
        Outcome::Aborted => None,
        Outcome::Rejected(_) => {
            shared.stats.handshake_failure();
            None
        }
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
    const GIB: f64 = (1u64 << 30) as f64;
    let size = if opts.size == 0 { capacity } else { opts.size };
    if size == 0 {
        return Err(EmuError::Config("export size is zero".into()));
    }
    if size > capacity {
        return Err(EmuError::Config(format!(
            "size {size} B ({:.1} GiB) exceeds the device's capacity, {capacity} B ({:.1} GiB)",
            size as f64 / GIB,
            capacity as f64 / GIB
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

pub(crate) enum RecorderMsg {
    /// A request whose reply was sent.
    Served(storlab_trace::closed::Served),
    Finish,
}

/// Create the trace file and start the thread that writes it (file IO
/// stays off the reply path).
fn start_recorder(
    spec: &RecordSpec,
) -> Result<(mpsc::Sender<RecorderMsg>, JoinHandle<RecordReport>), EmuError> {
    let file = File::create(&spec.path)
        .map_err(|e| EmuError::io(format!("creating {}", spec.path.display()), e))?;
    if spec.closed {
        return crate::closedrec::start(spec, file);
    }
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
            while let Ok(RecorderMsg::Served(s)) = rx.recv() {
                let r = TraceRecord {
                    time_ns: s.arrival_ns,
                    op: s.op,
                    offset: s.offset,
                    len: s.len,
                    device: 0,
                    recorded_latency_ns: Some(s.reply_ns.saturating_sub(s.arrival_ns)),
                    stream: s.stream,
                };
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
    /// Forget the requests served so far: later reports count only the
    /// requests that follow (connections, durability and device counters
    /// are kept).
    pub fn reset_stats(&self) {
        self.shared.stats.reset_requests();
    }
    /// Ask the server to stop.
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    /// Answer one control-socket connection: read one line (at most 256
    /// bytes, within one second in all), run it, write the reply.
    fn answer(&self, s: UnixStream) {
        const LIMIT: Duration = Duration::from_secs(1);
        let start = Instant::now();
        let _ = s.set_nonblocking(false);
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while line.len() < 256 {
            let Some(left) = LIMIT.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) else {
                break;
            };
            let _ = s.set_read_timeout(Some(left));
            match (&s).read(&mut byte) {
                Ok(1) if byte[0] != b'\n' => line.push(byte[0]),
                _ => break,
            }
        }
        let reply = match String::from_utf8_lossy(&line).trim() {
            "powercut" => match self.power_cut() {
                Ok(()) => "ok\n".to_string(),
                Err(e) => format!("error: {e}\n"),
            },
            "stats" => serde_json::to_string(&self.report())
                .map(|j| j + "\n")
                .unwrap_or_default(),
            "reset-stats" => {
                self.reset_stats();
                "ok\n".to_string()
            }
            "shutdown" => {
                self.shutdown();
                "ok\n".to_string()
            }
            other => format!(
                "error: unknown command {other:?} (powercut, stats, reset-stats, shutdown)\n"
            ),
        };
        // A client that never reads gets the rest of its second (at least
        // 0.1 s, for a reply computed late in it), no more.
        let left = LIMIT
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(100));
        let _ = s.set_write_timeout(Some(left));
        let _ = (&s).write_all(reply.as_bytes());
    }
}

/// Control-socket commands answered at once; further connections wait
/// in the listener's backlog until one is done.
const MAX_CONTROL: usize = 8;

/// A bound server, ready to [`Server::run`].
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<Listener>,
    control: Option<(UnixListener, PathBuf)>,
    /// Control commands being answered now (at most [`MAX_CONTROL`]).
    control_busy: Arc<AtomicUsize>,
    /// The signal handlers, from `bind` on (a SIGTERM while binding or
    /// probing stops the server cleanly once it runs).
    signals: Option<SignalGuard>,
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
        let signals = if opts.handle_signals {
            Some(
                SignalGuard::install()
                    .map_err(|e| EmuError::io("installing signal handlers", e))?,
            )
        } else {
            None
        };
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
        // SAFETY: plain system calls creating descriptors we own (closed
        // by `Server`'s drop or when the reactor ends).
        let epfd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if epfd < 0 {
            return Err(EmuError::io("epoll_create1", io::Error::last_os_error()));
        }
        // SAFETY: as above.
        let wake_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake_fd < 0 {
            let e = io::Error::last_os_error();
            // SAFETY: closes the epoll fd created above.
            unsafe { libc::close(epfd) };
            return Err(EmuError::io("eventfd", e));
        }
        // SAFETY: both descriptors were just created and are owned here.
        let (epoll, wake) = unsafe { (OwnedFd::from_raw_fd(epfd), OwnedFd::from_raw_fd(wake_fd)) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: u64::MAX,
        };
        // SAFETY: registers the eventfd in the epoll set; `ev` is valid.
        if unsafe { libc::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, wake_fd, &mut ev) } < 0 {
            return Err(EmuError::io("epoll_ctl", io::Error::last_os_error()));
        }
        // Last, once every option and resource checked out: a client that
        // connects meanwhile waits in the listen backlog (its handshake
        // starts with `run`), so nothing competes with the probe.
        let floor = match opts.floor_probe {
            0 => None,
            n => Some(crate::probe::transport_floor(&opts, n)?),
        };
        let shared = Arc::new(Shared {
            floor,
            clock: WallClock::new(Duration::from_millis(30)),
            export,
            core: Mutex::new(ModelDriver::new(device)),
            gate: RwLock::new(()),
            epoch: AtomicU64::new(0),
            data: Durability::new(store, volatile, opts.journal_limit),
            stats: Stats::new(),
            next_id: AtomicU64::new(1),
            stopping: AtomicBool::new(false),
            record,
            timing: Timing {
                spin_threshold_ns: opts.spin_threshold_ns,
                input_check_ns: opts.input_check_ns,
                idle_poll_ns: opts.idle_poll_ns,
                realtime: opts.realtime,
                wake_assist: opts.wake_assist,
            },
            window_ns: AtomicU64::new(opts.spin_threshold_ns),
            realtime_active: AtomicBool::new(false),
            assist_off: Mutex::new(Some("not started".into())),
            assist_switches: Arc::new(AtomicU64::new(0)),
            incoming: Mutex::new(Vec::new()),
            wake,
            epoll,
            reactor_stop: AtomicBool::new(false),
            live_conns: AtomicUsize::new(0),
            store_desc: opts.store.to_string(),
            started: Instant::now(),
        });
        Ok(Server {
            shared,
            listeners,
            control,
            control_busy: Arc::new(AtomicUsize::new(0)),
            signals,
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
    pub fn run(mut self) -> Result<ServeReport, EmuError> {
        let signals = self.signals.take();
        let shared = self.shared.clone();
        let reactor = {
            let s = shared.clone();
            thread::Builder::new()
                .name("nbd-reactor".into())
                .spawn(move || reactor::run(s))
                .map_err(|e| EmuError::io("spawning the reactor thread", e))?
        };
        // FLUSH and FUA sync a file store on this worker, not on the
        // reactor (an `fdatasync` takes milliseconds).
        let syncer = if shared.data.needs_host_sync() {
            let s = shared.clone();
            Some(
                thread::Builder::new()
                    .name("nbd-sync".into())
                    .spawn(move || s.data.run_host_syncs(|| s.wake_reactor()))
                    .map_err(|e| {
                        shared.reactor_stop.store(true, Ordering::SeqCst);
                        shared.wake_reactor();
                        EmuError::io("spawning the host-sync thread", e)
                    })?,
            )
        } else {
            None
        };
        // Connections still in their handshake: (socket, thread).
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
            // The control listener is left out of the poll while all its
            // threads are busy (a negative fd is ignored), so clients past
            // the limit wait their turn instead of spinning this loop.
            if let Some((l, _)) = &self.control {
                let full = self.control_busy.load(Ordering::SeqCst) >= MAX_CONTROL;
                fds[self.listeners.len()].fd = if full { -1 } else { l.as_raw_fd() };
            }
            // SAFETY: `fds` is a valid array of pollfd of the given length.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20) };
            if n > 0 {
                for (i, l) in self.listeners.iter().enumerate() {
                    if fds[i].revents == 0 {
                        continue;
                    }
                    while let Ok(sock) = l.accept() {
                        if shared.live_conns.load(Ordering::SeqCst) >= self.max_connections {
                            sock.shutdown(Shutdown::Both);
                            continue;
                        }
                        let Ok(watch) = sock.try_clone() else {
                            continue;
                        };
                        next_conn += 1;
                        let s = shared.clone();
                        let id = next_conn;
                        shared.live_conns.fetch_add(1, Ordering::SeqCst);
                        match thread::Builder::new()
                            .name(format!("nbd-hs-{id}"))
                            .spawn(move || serve_connection(s, sock, id))
                        {
                            Ok(h) => conns.push((watch, h)),
                            Err(_) => {
                                shared.live_conns.fetch_sub(1, Ordering::SeqCst);
                                watch.shutdown(Shutdown::Both);
                            }
                        }
                    }
                }
                if let Some((l, _)) = &self.control {
                    if fds[self.listeners.len()].revents != 0 {
                        // Each command on its own thread: a control client
                        // that is slow to send its line must not hold up
                        // accepting NBD connections or stopping.
                        // At most MAX_CONTROL at once; later clients wait
                        // in the listener's backlog (see above).
                        while self.control_busy.load(Ordering::SeqCst) < MAX_CONTROL {
                            let Ok((s, _)) = l.accept() else { break };
                            let busy = self.control_busy.clone();
                            busy.fetch_add(1, Ordering::SeqCst);
                            let ctl = self.control();
                            let spawned = thread::Builder::new().name("nbd-control".into()).spawn(
                                move || {
                                    ctl.answer(s);
                                    busy.fetch_sub(1, Ordering::SeqCst);
                                },
                            );
                            if spawned.is_err() {
                                self.control_busy.fetch_sub(1, Ordering::SeqCst);
                            }
                        }
                    }
                }
            }
            // Handshake threads end quickly; forget the finished ones
            // (their sockets are the reactor's now, or closed).
            conns.retain(|(_, h)| !h.is_finished());
        }
        // Stop: handshakes in progress end, connections see end-of-file
        // (the reactor shuts their input), their in-flight requests
        // finish, they close, the reactor ends; then the store is synced.
        shared.stopping.store(true, Ordering::SeqCst);
        for (s, _) in &conns {
            s.shutdown(Shutdown::Read);
        }
        for (_, h) in conns {
            let _ = h.join();
        }
        shared.reactor_stop.store(true, Ordering::SeqCst);
        shared.wake_reactor();
        let _ = reactor.join();
        shared.data.stop_host_syncs();
        if let Some(h) = syncer {
            let _ = h.join();
        }
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
