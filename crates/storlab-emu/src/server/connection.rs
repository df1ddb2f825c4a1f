//! A connection's handshake, on a thread of its own: blocking reads within
//! the handshake deadline, then the socket goes to the reactor if a
//! serving slot is free.

use std::io;
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::handshake::{Handshake, Negotiated, Outcome};
use crate::shared::{lock, NewConn, Shared};
use crate::sock::{send_all_blocking, Sock};

/// One connection's handshake, on its own thread (blocking, within the
/// handshake deadline); then the socket goes to the reactor, if a serving
/// slot is free.
pub(super) fn serve_connection(shared: Arc<Shared>, sock: Sock, id: u64, over: &AtomicBool) {
    shared.stats.connection();
    let outcome = handshake(&shared, &sock, over);
    shared.handshaking.fetch_sub(1, Ordering::SeqCst);
    let Some((negotiated, leftover)) = outcome else {
        sock.shutdown(Shutdown::Both);
        return;
    };
    let _ = sock.set_read_timeout(None);
    let _ = sock.set_write_timeout(None);
    lock(&shared.incoming).push(NewConn {
        id,
        sock,
        negotiated,
        leftover,
    });
    shared.wake_reactor();
}

/// Take a serving slot (false: all are taken).
fn take_serving_slot(shared: &Shared) -> bool {
    let max = shared.limits.max_connections;
    shared
        .live_conns
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// Run the handshake within the handshake deadline (the whole of it: each
/// read and send may take only what is left); on success, what was
/// negotiated and the bytes read past its end, with a serving slot taken
/// (given back when the reactor closes the connection).
fn handshake(shared: &Shared, sock: &Sock, over: &AtomicBool) -> Option<(Negotiated, Vec<u8>)> {
    let deadline = Instant::now() + shared.limits.handshake_timeout;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    };
    let timed_out = || {
        shared
            .limit_counters
            .handshake_timeouts
            .fetch_add(1, Ordering::Relaxed);
        shared.stats.handshake_failure();
    };
    let mut hs = Handshake::new(shared.export.clone());
    if shared.stopping.load(Ordering::SeqCst) {
        hs.set_shutting_down();
    }
    let mut buf = vec![0u8; 64 << 10];
    let (mut lo, mut hi) = (0usize, 0usize);
    let outcome = loop {
        let out = hs.take_output();
        let ending = matches!(hs.outcome(), Some(Outcome::Transmission(_)));
        if ending {
            // In: never cut to make room from now on.
            over.store(true, Ordering::SeqCst);
        }
        if ending && !take_serving_slot(shared) {
            // Every serving slot was taken while this client negotiated:
            // close before the final reply, so it never believes it is in.
            shared
                .limit_counters
                .refused_at_go
                .fetch_add(1, Ordering::Relaxed);
            return None;
        }
        if !out.is_empty() {
            let Some(t) = left() else {
                if ending {
                    shared.live_conns.fetch_sub(1, Ordering::SeqCst);
                }
                timed_out();
                return None;
            };
            let _ = sock.set_write_timeout(Some(t));
            if send_all_blocking(sock.fd(), &out).is_err() {
                if ending {
                    shared.live_conns.fetch_sub(1, Ordering::SeqCst);
                }
                if left().is_none() {
                    timed_out();
                } else {
                    shared.stats.handshake_failure();
                }
                return None;
            }
        }
        if let Some(o) = hs.outcome() {
            break o.clone();
        }
        let Some(t) = left() else {
            timed_out();
            return None;
        };
        let _ = sock.set_read_timeout(Some(t));
        let n = match sock.read(&mut buf) {
            Ok(0) => {
                shared.stats.handshake_failure();
                return None;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                timed_out();
                return None;
            }
            Err(_) => {
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
