//! Serving: the accept loop (listeners and the control socket), the
//! reactor and host-sync threads, and shutdown.

use std::net::Shutdown;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crate::error::EmuError;
use crate::reactor;
use crate::report::{RecordReport, ServeReport};
use crate::shared::RecorderMsg;
use crate::sock::Sock;

use super::bind::Server;
use super::connection::serve_connection;
use super::control::{ServerControl, MAX_CONTROL};
use super::listen::Listener;
use super::signals::{SIGNALS, SIG_POWERCUT, SIG_STOP};

impl Server {
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
        // The accept loop (and the handshake and control threads it
        // starts) runs at a higher weight when the server may raise its
        // scheduling (`realtime`): a flood of connections from ordinary
        // processes then cannot keep it from draining the backlog, which a
        // legitimate client's non-blocking connect finds full otherwise
        // (libnbd gives up at once). Accepting costs a few system calls a
        // connection, so the weight takes little from anyone.
        let nice = shared.timing.realtime.then(raise_weight).flatten();
        // The control socket is served on a thread of its own, apart from
        // the data path: a connection flood keeping this loop busy cannot
        // delay `stats` or `powercut` (issue 59).
        let control_stop = Arc::new(AtomicBool::new(false));
        let control_thread = match self.control.as_ref().map(|(l, _)| l.try_clone()) {
            Some(Ok(l)) => {
                let (ctl, busy, stop) = (
                    self.control(),
                    self.control_busy.clone(),
                    control_stop.clone(),
                );
                thread::Builder::new()
                    .name("nbd-control".into())
                    .spawn(move || serve_control(l, ctl, busy, stop))
                    .ok()
            }
            _ => None,
        };
        // Connections still in their handshake, oldest first: (socket,
        // thread, cut to make room, handshake over: set by the thread once
        // the client is in, so a finished one is never cut).
        let mut conns: Vec<Handshaking> = Vec::new();
        let mut next_conn = 0u64;
        let mut fds: Vec<libc::pollfd> = self
            .listeners
            .iter()
            .map(|l| l.fd())
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
                    // Accept in a loop, a bounded batch per listener and
                    // turn, so a flood on one listener neither starves the
                    // other nor keeps this loop from forgetting finished
                    // handshakes. A newcomer is never refused here: when
                    // the serving slots are full, it evicts one at the end
                    // of its handshake (`connection::take_serving_slot`).
                    for _ in 0..ACCEPT_BATCH {
                        let Ok(sock) = l.accept() else { break };
                        if peer_gone(&sock) {
                            // Connected and gone already (a flood): no
                            // thread, no greeting.
                            shared.stats.connection();
                            shared.stats.handshake_failure();
                            continue;
                        }
                        let lim = &shared.limits;
                        // Handshake slots are apart from serving slots, so
                        // silent clients fill only those; when all are
                        // taken, the handshake that has lasted longest is
                        // cut for the newcomer (a real client's handshake
                        // takes a millisecond, so slow or silent ones go
                        // first, and cannot lock newcomers out).
                        let cuttable = |c: &&mut Handshaking| !c.2 && !c.3.load(Ordering::SeqCst);
                        let mut in_hs = conns.iter_mut().filter(cuttable).count();
                        if in_hs >= lim.max_handshakes {
                            // Handshakes whose client already hung up (a
                            // flood's connect-and-close) hold no slot:
                            // they end as soon as their thread runs. Only
                            // live ones count, so a flood never cuts a
                            // real client's handshake.
                            for c in conns.iter_mut().filter(cuttable) {
                                if peer_gone(&c.0) {
                                    c.2 = true;
                                    in_hs -= 1;
                                }
                            }
                        }
                        if in_hs >= lim.max_handshakes {
                            // The peer (process or address) with the most
                            // handshakes open loses its oldest: a flood of
                            // slow or silent handshakes from one peer cuts
                            // its own, never another client's.
                            let mut per_peer = std::collections::BTreeMap::<u64, usize>::new();
                            for c in conns.iter_mut().filter(cuttable) {
                                let p = *c.4.get_or_insert_with(|| c.0.peer_key());
                                *per_peer.entry(p).or_default() += 1;
                            }
                            let most = per_peer.values().copied().max().unwrap_or(0);
                            let victim = conns.iter_mut().filter(cuttable).find(|c| {
                                c.4.and_then(|p| per_peer.get(&p)).copied() == Some(most)
                            });
                            if let Some(old) = victim {
                                old.0.shutdown(Shutdown::Both);
                                old.2 = true;
                                shared
                                    .limit_counters
                                    .handshakes_cut
                                    .fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        let Ok(watch) = sock.try_clone() else {
                            continue;
                        };
                        next_conn += 1;
                        let s = shared.clone();
                        let id = next_conn;
                        let over = Arc::new(AtomicBool::new(false));
                        let o = over.clone();
                        shared.handshaking.fetch_add(1, Ordering::SeqCst);
                        match thread::Builder::new()
                            .name(format!("nbd-hs-{id}"))
                            .spawn(move || serve_connection(s, sock, id, &o))
                        {
                            Ok(h) => conns.push((watch, h, false, over, None)),
                            Err(_) => {
                                shared.handshaking.fetch_sub(1, Ordering::SeqCst);
                                watch.shutdown(Shutdown::Both);
                            }
                        }
                    }
                }
            }
            // Handshake threads end quickly; forget the finished ones
            // (their sockets are the reactor's now, or closed).
            conns.retain(|(_, h, _, _, _)| !h.is_finished());
        }
        // Stop: handshakes in progress end, connections see end-of-file
        // (the reactor shuts their input), their in-flight requests
        // finish, they close, the reactor ends; then the store is synced.
        shared.stopping.store(true, Ordering::SeqCst);
        control_stop.store(true, Ordering::SeqCst);
        if let Some(h) = control_thread {
            let _ = h.join();
        }
        for (s, _, _, _, _) in &conns {
            // Both ways: a handshake blocked sending to a client that does
            // not read ends at once too.
            s.shutdown(Shutdown::Both);
        }
        for (_, h, _, _, _) in conns {
            let _ = h.join();
        }
        shared.reactor_stop.store(true, Ordering::SeqCst);
        shared.wake_reactor();
        let _ = reactor.join();
        if let Some((tid, before)) = nice {
            // SAFETY: resets this thread's nice value.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, before) };
        }
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

/// A connection in its handshake: its socket, its thread, whether it was
/// cut to make room, whether its handshake is over (set by the thread),
/// and its peer (`Sock::peer_key`, asked when a cut needs it).
type Handshaking = (Sock, JoinHandle<()>, bool, Arc<AtomicBool>, Option<u64>);

/// Connections accepted from one listener per turn of the accept loop.
const ACCEPT_BATCH: usize = 256;

/// The control socket's thread: each command on a thread of its own (a
/// client slow to send its line holds up no other), at most
/// [`MAX_CONTROL`] at once; later clients wait in the listener's backlog.
fn serve_control(
    l: UnixListener,
    ctl: ServerControl,
    busy: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    let mut pfd = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    while !stop.load(Ordering::SeqCst) {
        if busy.load(Ordering::SeqCst) >= MAX_CONTROL {
            thread::sleep(std::time::Duration::from_millis(5));
            continue;
        }
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, 20) };
        if n <= 0 {
            continue;
        }
        while busy.load(Ordering::SeqCst) < MAX_CONTROL {
            let Ok((s, _)) = l.accept() else { break };
            busy.fetch_add(1, Ordering::SeqCst);
            let (c, b) = (ctl.clone(), busy.clone());
            let spawned = thread::Builder::new()
                .name("nbd-control-cmd".into())
                .spawn(move || {
                    c.answer(s);
                    b.fetch_sub(1, Ordering::SeqCst);
                });
            if spawned.is_err() {
                busy.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// The client at the other end of `s` hung up (or reset).
fn peer_gone(s: &Sock) -> bool {
    let mut p = libc::pollfd {
        fd: s.fd(),
        events: libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no waiting.
    let n = unsafe { libc::poll(&mut p, 1, 0) };
    n > 0 && p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0
}

/// Raise the calling thread's scheduling weight (nice -10) when allowed;
/// its thread id and former nice value, to restore.
fn raise_weight() -> Option<(libc::id_t, libc::c_int)> {
    // SAFETY: plain system calls on the calling thread.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let before = libc::getpriority(libc::PRIO_PROCESS, tid);
        (libc::setpriority(libc::PRIO_PROCESS, tid, before.min(0) - 10) == 0)
            .then_some((tid, before))
    }
}
