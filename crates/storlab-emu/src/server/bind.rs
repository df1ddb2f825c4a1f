//! Binding a server: options checked, listeners bound, the store opened,
//! the recorder started, the transport floor measured; a [`Server`]
//! ready to run.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use storlab_model::Device;

use crate::clock::WallClock;
use crate::driver::ModelDriver;
use crate::durability::Durability;
use crate::error::EmuError;
use crate::handshake::ExportConfig;
use crate::options::{ServeOptions, ShutdownHandle};
use crate::report::{LatencySummary, RecordReport, Stats};
use crate::shared::{LimitCounters, Limits, Shared, Timing};
use crate::store::open_store;

use super::control::ServerControl;
use super::listen::{bind_unix, Listener};
use super::record::start_recorder;
use super::signals::SignalGuard;

/// How the transport floor is measured: `crate::probe::transport_floor`
/// (passed in by the caller, as the probe itself serves with a [`Server`]).
pub(crate) type FloorProbe = fn(&ServeOptions, usize) -> Result<LatencySummary, EmuError>;

/// A bound server, ready to [`Server::run`].
pub struct Server {
    pub(super) shared: Arc<Shared>,
    pub(super) listeners: Vec<Listener>,
    pub(super) control: Option<(UnixListener, PathBuf)>,
    /// Control commands being answered now (at most [`MAX_CONTROL`](super::control::MAX_CONTROL)).
    pub(super) control_busy: Arc<AtomicUsize>,
    /// The signal handlers, from `bind` on (a SIGTERM while binding or
    /// probing stops the server cleanly once it runs).
    pub(super) signals: Option<SignalGuard>,
    pub(super) shutdown: ShutdownHandle,
    pub(super) recorder: Option<JoinHandle<RecordReport>>,
    pub(super) uris: Vec<String>,
    pub(super) tcp_addr: Option<SocketAddr>,
    pub(super) memory_note: String,
}

impl Server {
    /// [`Server::bind`], the transport floor measured (when
    /// `opts.floor_probe` asks) by `probe`.
    pub(crate) fn bind_with(
        opts: ServeOptions,
        device: Box<dyn Device>,
        shutdown: ShutdownHandle,
        probe: FloorProbe,
    ) -> Result<Server, EmuError> {
        let size = validate(&opts, device.capacity())?;
        let memory_note = memory_note(&opts, size, device.capacity());
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
            super::listen::deepen_backlog(std::os::fd::AsRawFd::as_raw_fd(&l));
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
            n => Some(probe(&opts, n)?),
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
            handshaking: AtomicUsize::new(0),
            evict_wanted: AtomicUsize::new(0),
            slot_waiters: Mutex::new(std::collections::VecDeque::new()),
            limits: Limits {
                max_connections: opts.max_connections,
                max_handshakes: opts.max_handshakes,
                handshake_timeout: opts.handshake_timeout,
                idle_timeout_ns: opts
                    .idle_timeout
                    .map_or(u64::MAX, |t| t.as_nanos().min(u64::MAX as u128) as u64),
                conn_buffer: opts.max_buffer_per_connection,
                reserve: opts.max_buffer / 2 / opts.max_connections as u64,
                pool: opts.max_buffer - opts.max_buffer / 2,
                buffer_total: opts.max_buffer,
                zero_piece: u64::from(opts.block.maximum).max(1 << 20),
            },
            limit_counters: LimitCounters::default(),
            store_desc: opts.store.to_string(),
            started: Instant::now(),
        });
        Ok(Server {
            shared,
            listeners,
            control,
            control_busy: Arc::new(AtomicUsize::new(0)),
            signals,
            shutdown,
            recorder,
            uris,
            tcp_addr,
            memory_note,
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

    /// What the server may hold in memory for its clients (the memory
    /// store's data and the buffer budget), for saying at start.
    pub fn memory_note(&self) -> &str {
        &self.memory_note
    }

    /// A control handle (power cuts, reports, shutdown).
    pub fn control(&self) -> ServerControl {
        ServerControl {
            shared: self.shared.clone(),
            shutdown: self.shutdown.clone(),
        }
    }
}

fn validate(opts: &ServeOptions, capacity: u64) -> Result<u64, EmuError> {
    const GIB: f64 = (1u64 << 30) as f64;
    let size = if opts.size == 0 {
        default_size(opts, capacity, ram_bytes())
    } else {
        opts.size
    };
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
    if opts.max_connections == 0 || opts.max_handshakes == 0 {
        return Err(EmuError::Config(
            "max_connections (--max-connections) and max_handshakes (--max-handshakes) must be at least 1".into(),
        ));
    }
    if opts.handshake_timeout.is_zero() {
        return Err(EmuError::Config(
            "handshake_timeout must be more than 0".into(),
        ));
    }
    if opts.idle_timeout.is_some_and(|t| t.is_zero()) {
        return Err(EmuError::Config(
            "idle_timeout (--idle-timeout) must be more than 0 (None, or `off`, turns it off)"
                .into(),
        ));
    }
    if opts.max_buffer_per_connection < u64::from(b.maximum)
        || opts.max_buffer < opts.max_buffer_per_connection
    {
        return Err(EmuError::Config(format!(
            "max_buffer_per_connection (--max-buffer-per-connection, {} B) must hold one largest request ({} B), and max_buffer (--max-buffer, {} B) at least that",
            opts.max_buffer_per_connection, b.maximum, opts.max_buffer
        )));
    }
    if opts.export_name.len() > 4096 || opts.description.len() > 4096 {
        return Err(EmuError::Config(
            "export name and description must be at most 4096 bytes".into(),
        ));
    }
    // Where it will listen is checked first: a memory refusal should not
    // hide a wrong address.
    if let Some(a) = opts
        .listen
        .filter(|a| !a.ip().is_loopback() && !opts.allow_remote)
    {
        return Err(EmuError::NonLoopback(a));
    }
    check_memory(opts, size, ram_bytes())?;
    Ok(size)
}

/// This machine's RAM (`MemTotal` of `/proc/meminfo`), if known.
pub(crate) fn ram_bytes() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// The share of RAM a memory store and the buffers may take together
/// unless `memory_over_ram` says otherwise.
pub(crate) const RAM_SHARE: (u64, u64) = (1, 2);

/// The memory the server may hold for its clients: the memory store's
/// data (at most the export) and the buffer budget; refused past
/// [`RAM_SHARE`] of `ram` unless told.
fn check_memory(opts: &ServeOptions, size: u64, ram: Option<u64>) -> Result<(), EmuError> {
    const GIB: f64 = (1u64 << 30) as f64;
    let (Some(ram), crate::store::StoreSpec::Memory) = (ram, &opts.store) else {
        return Ok(());
    };
    let want = size.saturating_add(opts.max_buffer);
    let share = ram / RAM_SHARE.1 * RAM_SHARE.0;
    if want > share && !opts.memory_over_ram {
        return Err(EmuError::Config(format!(
            "a memory store of {:.1} GiB plus the {:.1} GiB buffer budget (--max-buffer) is more than half of this machine's RAM ({:.1} GiB): use a file store (--store file:PATH), a smaller --size, or --memory-over-ram to allow it",
            size as f64 / GIB,
            opts.max_buffer as f64 / GIB,
            ram as f64 / GIB
        )));
    }
    Ok(())
}

/// The export when no size is given: the device's capacity, except that
/// a memory store (unless `memory_over_ram`) exports at most what fits in
/// [`RAM_SHARE`] of `ram` beside the buffer budget, in whole MiB, so that
/// `storlab serve --device D` runs on any machine; [`memory_note`] says
/// when the export was cut.
fn default_size(opts: &ServeOptions, capacity: u64, ram: Option<u64>) -> u64 {
    match (ram, &opts.store) {
        (Some(ram), crate::store::StoreSpec::Memory) if !opts.memory_over_ram => {
            let share = ram / RAM_SHARE.1 * RAM_SHARE.0;
            let room = share.saturating_sub(opts.max_buffer) >> 20 << 20;
            capacity.min(room)
        }
        _ => capacity,
    }
}

/// What the server may hold in memory for its clients, said at start.
pub(crate) fn memory_note(opts: &ServeOptions, size: u64, capacity: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let ram = ram_bytes().map_or_else(String::new, |r| format!(" (RAM {:.1} GiB)", r as f64 / GIB));
    let store = match &opts.store {
        crate::store::StoreSpec::Memory if opts.size == 0 && size < capacity => {
            format!(
                "memory store up to {:.1} GiB (the export is cut to half this machine's RAM less --max-buffer; give --size, a file store or --memory-over-ram for more)",
                size as f64 / GIB
            )
        }
        crate::store::StoreSpec::Memory => {
            format!("memory store up to {:.1} GiB", size as f64 / GIB)
        }
        crate::store::StoreSpec::File(_) => "file store (page cache only)".to_string(),
    };
    format!(
        "memory: {store} + buffers up to {:.2} GiB (--max-buffer: replies, payloads being received){ram}",
        opts.max_buffer as f64 / GIB
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_store_past_half_the_ram_is_refused_unless_told() {
        let opts = ServeOptions {
            max_buffer: 1 << 30,
            ..ServeOptions::default()
        };
        let ram = Some(24u64 << 30);
        let err = check_memory(&opts, 64 << 30, ram).unwrap_err().to_string();
        assert!(err.contains("--memory-over-ram"), "{err}");
        assert!(check_memory(&opts, 8 << 30, ram).is_ok());
        let told = ServeOptions {
            memory_over_ram: true,
            ..opts.clone()
        };
        assert!(check_memory(&told, 64 << 30, ram).is_ok());
        let file = ServeOptions {
            store: crate::store::StoreSpec::File("/tmp/x".into()),
            ..opts
        };
        assert!(check_memory(&file, 64 << 30, ram).is_ok());
    }

    #[test]
    fn with_no_size_a_memory_store_exports_what_fits_beside_the_budget() {
        let opts = ServeOptions {
            max_buffer: 1 << 30,
            ..ServeOptions::default()
        };
        let ram = Some(24u64 << 30);
        // 64 GiB device on 24 GiB: half the RAM less the budget, 11 GiB
        let size = default_size(&opts, 64 << 30, ram);
        assert_eq!(size, 11 << 30);
        assert!(check_memory(&opts, size, ram).is_ok());
        assert!(memory_note(&opts, size, 64 << 30).contains("the export is cut"));
        // a device that fits keeps its capacity, and says nothing of a cut
        assert_eq!(default_size(&opts, 8 << 30, ram), 8 << 30);
        assert!(!memory_note(&opts, 8 << 30, 8 << 30).contains("cut"));
        // told, or a file store: the capacity
        let told = ServeOptions {
            memory_over_ram: true,
            ..opts.clone()
        };
        assert_eq!(default_size(&told, 64 << 30, ram), 64 << 30);
        assert_eq!(default_size(&opts, 64 << 30, None), 64 << 30);
    }
}
