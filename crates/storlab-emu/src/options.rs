//! What the server can be told ([`ServeOptions`], [`RecordSpec`]) and how
//! it is told to stop ([`ShutdownHandle`]): the option types the server,
//! the probe and the recorders share (re-exported by [`crate::server`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::handshake::BlockSizes;
use crate::store::StoreSpec;

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
    /// Most connections served at once (in transmission phase). A slot
    /// is no lease for life: a client whose handshake ends when every slot
    /// is taken evicts a served connection (the one that sent nothing for
    /// longest of its own peer if that peer is served, else of the peer
    /// holding the most slots) and is served, waiting newcomers in arrival
    /// order; it is refused (end-of-file before the final reply) only if
    /// no slot frees within half a second.
    pub max_connections: usize,
    /// Most handshakes at once, slots of their own apart from the serving
    /// ones: clients that connect and say nothing hold these, never a
    /// serving slot. A client arriving when all are taken takes the slot
    /// of the handshake that has lasted longest, which is cut (a real
    /// client's handshake takes about a millisecond).
    pub max_handshakes: usize,
    /// The whole handshake must end within this (not each read): a client
    /// sending a byte at a time is cut when it runs out. Replies sent
    /// during the handshake must be taken within it too.
    pub handshake_timeout: Duration,
    /// Close a served connection that has sent nothing for this long
    /// while nothing of it is in flight or queued, or whose queued replies
    /// have not moved for this long (a client that stopped reading).
    /// `None`: never.
    pub idle_timeout: Option<Duration>,
    /// Most bytes one connection may hold in the server: replies queued,
    /// the replies of its reads in flight (reserved whole; their data is
    /// read as it is sent), a write's payload
    /// being received (reserved whole at its header) and the buffer kept
    /// for its next one. A request is admitted whole or not at all (one
    /// holding nothing always gets one); past it the server stops reading
    /// its requests until it takes its replies (back-pressure: nothing is
    /// dropped).
    pub max_buffer_per_connection: u64,
    /// The memory budget over all connections (what
    /// `max_buffer_per_connection` counts): half is split evenly, a
    /// reserve each connection may always hold (so one within it is never
    /// held back by others), the other half is a pool they share past
    /// their reserves. The total stays within it.
    pub max_buffer: u64,
    /// Allow a memory store (`StoreSpec::Memory`) whose export, with the
    /// buffer budget, is larger than half of this machine's RAM. Off by
    /// default: a memory store holds everything written in RAM, and an
    /// export written past RAM ends in the host's out-of-memory killer
    /// (the default 64 GiB of some presets against 24 GB here); use a
    /// file store or a smaller size instead.
    pub memory_over_ram: bool,
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
            max_handshakes: 16,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(60)),
            max_buffer_per_connection: 64 << 20,
            max_buffer: 1 << 30,
            memory_over_ram: false,
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
