//! Serving: the accept loop (listeners and the control socket), the
//! reactor and host-sync threads, and shutdown.

use std::net::Shutdown;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

use crate::error::EmuError;
use crate::reactor;
use crate::report::{RecordReport, ServeReport};
use crate::shared::RecorderMsg;
use crate::sock::Sock;

use super::bind::Server;
use super::connection::serve_connection;
use super::control::MAX_CONTROL;
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
        // Connections still in their handshake, oldest first: (socket,
        // thread, cut to make room, handshake over: set by the thread once
        // the client is in, so a finished one is never cut).
        let mut conns: Vec<(Sock, JoinHandle<()>, bool, Arc<AtomicBool>)> = Vec::new();
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
                        // A client arriving when every serving slot is
                        // taken is closed at once (end-of-file before the
                        // greeting), never left waiting.
                        let lim = &shared.limits;
                        if shared.live_conns.load(Ordering::SeqCst) >= lim.max_connections {
                            shared
                                .limit_counters
                                .refused
                                .fetch_add(1, Ordering::Relaxed);
                            sock.shutdown(Shutdown::Both);
                            continue;
                        }
                        // Handshake slots are apart from serving slots, so
                        // silent clients fill only those; when all are
                        // taken, the handshake that has lasted longest is
                        // cut for the newcomer (a real client's handshake
                        // takes a millisecond, so slow or silent ones go
                        // first, and cannot lock newcomers out).
                        let cuttable = |c: &&mut (Sock, JoinHandle<()>, bool, Arc<AtomicBool>)| {
                            !c.2 && !c.3.load(Ordering::SeqCst)
                        };
                        let in_hs = conns.iter_mut().filter(cuttable).count();
                        if in_hs >= lim.max_handshakes {
                            if let Some(old) = conns.iter_mut().find(cuttable) {
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
                            Ok(h) => conns.push((watch, h, false, over)),
                            Err(_) => {
                                shared.handshaking.fetch_sub(1, Ordering::SeqCst);
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
            conns.retain(|(_, h, _, _)| !h.is_finished());
        }
        // Stop: handshakes in progress end, connections see end-of-file
        // (the reactor shuts their input), their in-flight requests
        // finish, they close, the reactor ends; then the store is synced.
        shared.stopping.store(true, Ordering::SeqCst);
        for (s, _, _, _) in &conns {
            // Both ways: a handshake blocked sending to a client that does
            // not read ends at once too.
            s.shutdown(Shutdown::Both);
        }
        for (_, h, _, _) in conns {
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
