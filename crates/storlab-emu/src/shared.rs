//! What every thread of the server shares ([`Shared`]: the model, the
//! store, the counters, the limits), what the server hands the reactor
//! (a [`NewConn`]) and what the reactor hands the model and the recorder
//! (a [`Job`], a [`RecorderMsg`]). Below both the server and the reactor.

use std::collections::VecDeque;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use crate::clock::{Clock, WallClock};
use crate::driver::ModelDriver;
use crate::durability::{Durability, WriteSeq};
use crate::handshake::{ExportConfig, Negotiated};
use crate::report::{ClockReport, LimitsReport, ServeReport, Stats};
use crate::sock::Sock;

/// A connection whose handshake is done, handed to the reactor.
pub(crate) struct NewConn {
    pub(crate) id: u64,
    /// Who connected ([`Sock::peer_key`]).
    pub(crate) peer: u64,
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

/// The reactor's timing knobs (see [`ServeOptions`](crate::ServeOptions)).
pub(crate) struct Timing {
    pub(crate) spin_threshold_ns: u64,
    pub(crate) input_check_ns: u64,
    pub(crate) idle_poll_ns: u64,
    pub(crate) realtime: bool,
    pub(crate) wake_assist: bool,
}

/// The availability limits (see [`ServeOptions`](crate::ServeOptions)).
pub(crate) struct Limits {
    pub(crate) max_connections: usize,
    pub(crate) max_handshakes: usize,
    pub(crate) handshake_timeout: Duration,
    /// ns; `u64::MAX`: never.
    pub(crate) idle_timeout_ns: u64,
    pub(crate) conn_buffer: u64,
    /// What each connection may always hold: half the budget split
    /// evenly (`buffer / 2 / max_connections`).
    pub(crate) reserve: u64,
    /// What connections may hold past their reserves, together: the
    /// other half of the budget.
    pub(crate) pool: u64,
    /// The whole budget (`max_buffer`).
    pub(crate) buffer_total: u64,
    /// Largest piece of a trim or write-zeroes the model is given at
    /// once (the maximum payload: what one write could cost).
    pub(crate) zero_piece: u64,
}

/// What the limits did (for [`LimitsReport`]).
#[derive(Default)]
pub(crate) struct LimitCounters {
    pub(crate) refused: AtomicU64,
    pub(crate) evicted: AtomicU64,
    pub(crate) refused_at_go: AtomicU64,
    pub(crate) handshakes_cut: AtomicU64,
    pub(crate) handshake_timeouts: AtomicU64,
    pub(crate) idle_closed: AtomicU64,
    pub(crate) dropped_dead: AtomicU64,
    pub(crate) throttled: AtomicU64,
    pub(crate) buffered: AtomicU64,
    pub(crate) buffered_peak: AtomicU64,
    pub(crate) gone_work: AtomicU64,
    pub(crate) gone_work_peak: AtomicU64,
    pub(crate) memory_trims: AtomicU64,
    pub(crate) turns_cut: AtomicU64,
}

/// What every thread of the server shares.
pub(crate) struct Shared {
    pub(crate) clock: WallClock,
    /// The transport floor measured before serving.
    pub(crate) floor: Option<crate::report::LatencySummary>,
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
    /// Connections served (a serving slot taken: from the end of the
    /// handshake to the close).
    pub(crate) live_conns: AtomicUsize,
    /// Connections in their handshake.
    pub(crate) handshaking: AtomicUsize,
    /// Newcomers waiting for a serving slot: the reactor evicts one
    /// served connection for each.
    pub(crate) evict_wanted: AtomicUsize,
    /// Newcomers waiting for a serving slot, in arrival order (connection
    /// id, peer): the first as many as there are free slots take them, and
    /// no one arriving passes them, so clients that reconnect the moment
    /// they are evicted cannot win every freed slot from a newcomer.
    pub(crate) slot_waiters: Mutex<VecDeque<(u64, u64)>>,
    pub(crate) limits: Limits,
    pub(crate) limit_counters: LimitCounters,
    pub(crate) store_desc: String,
    pub(crate) started: Instant,
}

impl Shared {
    pub(crate) fn report(&self) -> ServeReport {
        let now = self.clock.now();
        self.data.collect_destaged();
        let (device, clamped, durability) = {
            let core = lock(&self.core);
            let dev = core.device();
            (
                dev.report(now),
                core.clamped_arrivals(),
                self.data.stats_with(&|o, l| dev.volatile_holds(o, l)),
            )
        };
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
            durability,
            device,
            clock,
        );
        r.transport_floor = self.floor.clone();
        let c = &self.limit_counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        r.limits = LimitsReport {
            refused_connections: get(&c.refused),
            evicted: get(&c.evicted),
            refused_at_go: get(&c.refused_at_go),
            handshakes_cut: get(&c.handshakes_cut),
            handshake_timeouts: get(&c.handshake_timeouts),
            idle_closed: get(&c.idle_closed),
            dropped_dead: get(&c.dropped_dead),
            throttled: get(&c.throttled),
            reply_buffer_bytes: get(&c.buffered),
            reply_buffer_peak_bytes: get(&c.buffered_peak),
            gone_work_bytes: get(&c.gone_work),
            gone_work_peak_bytes: get(&c.gone_work_peak),
            memory_trims: get(&c.memory_trims),
            turns_cut: get(&c.turns_cut),
        };
        r
    }

    pub(crate) fn power_cut(&self) -> io::Result<()> {
        let _w = self.gate.write().unwrap_or_else(|e| e.into_inner());
        self.epoch.fetch_add(1, Ordering::SeqCst);
        // What the model's volatile caches hold now is lost; what they
        // destaged is on the media.
        let core = lock(&self.core);
        let dev = core.device();
        self.data.power_cut_with(&|o, l| dev.volatile_holds(o, l))
    }

    pub(crate) fn wake_reactor(&self) {
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

pub(crate) enum RecorderMsg {
    /// A request whose reply was sent.
    Served(storlab_trace::closed::Served),
    Finish,
}

/// What a request left to do when its reply is released.
pub(crate) enum JobKind {
    /// A read: its data is read from the store as its reply is sent.
    Read,
    Write {
        /// The journal sequence numbers of the write's pieces (a large
        /// write is applied in pieces of `APPLY_CHUNK`): `first..=seq`.
        first: WriteSeq,
        seq: WriteSeq,
        fua: bool,
    },
    Flush {
        upto: WriteSeq,
    },
    /// A piece of a trim or write-zeroes (`len` bytes, journal sequence
    /// `seq`); the request's reply goes out with its `last` piece.
    ZeroPiece {
        seq: WriteSeq,
        len: u64,
        fua: bool,
        last: bool,
        /// When the request arrived (its reply's latency counts from
        /// then, not from its last piece's turn at the model).
        arrived: storlab_model::Nanos,
    },
}

/// A request in the model, waiting for its deadline.
pub(crate) struct Job {
    pub(crate) slot: usize,
    pub(crate) generation: u64,
    pub(crate) handle: u64,
    pub(crate) kind: JobKind,
    pub(crate) epoch: u64,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    /// The host-sync ticket the reply also waits for (FLUSH and FUA on a
    /// file store; 0: none).
    pub(crate) sync: u64,
    /// What it holds of the memory budget while in the model: a read's
    /// reply bytes, a trim or write-zeroes piece's length; 0 otherwise.
    pub(crate) reserved: u64,
}
