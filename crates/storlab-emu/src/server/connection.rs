//! A connection's handshake, on a thread of its own: blocking reads within
//! the handshake deadline, then the socket goes to the reactor if a
//! serving slot is free.

use std::io;
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::handshake::{Handshake, Negotiated, Outcome};
use crate::shared::{lock, NewConn, Shared};
use crate::sock::{send_all_blocking, Sock};

/// One connection's handshake, on its own thread (blocking, within the
/// handshake deadline); then the socket goes to the reactor, if a serving
/// slot is free.
pub(super) fn serve_connection(shared: Arc<Shared>, sock: Sock, id: u64, over: &AtomicBool) {
    shared.stats.connection();
    let outcome = handshake(&shared, &sock, id, over);
    shared.handshaking.fetch_sub(1, Ordering::SeqCst);
    // Over either way: the accept loop no longer counts it as a
    // handshake slot taken.
    over.store(true, Ordering::SeqCst);
    let Some((negotiated, leftover)) = outcome else {
        sock.shutdown(Shutdown::Both);
        return;
    };
    let _ = sock.set_read_timeout(None);
    let _ = sock.set_write_timeout(None);
    let peer = sock.peer_key();
    lock(&shared.incoming).push(NewConn {
        id,
        peer,
        sock,
        negotiated,
        leftover,
    });
    shared.wake_reactor();
}

/// Take a serving slot (false: all are taken).
fn try_serving_slot(shared: &Shared) -> bool {
    let max = shared.limits.max_connections;
    shared
        .live_conns
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .is_ok()
}

/// How long a newcomer waits for the slot an eviction frees before it is
/// refused after all (the reactor evicts within microseconds; this only
/// runs out when every connection is already on its way out).
const EVICT_WAIT: Duration = Duration::from_millis(500);

/// Take a serving slot; when all are taken, ask the reactor to evict a
/// served connection (the idlest of this client's own peer if that peer
/// is served, else of the peer holding the most slots) and take the slot
/// it frees. A slot is no lease for life:
/// clients that hold every slot silently, or send a byte now and then, or
/// reconnect the moment they are closed, cannot lock a newcomer out
/// (issue 59). Newcomers that wait are served in arrival order: the first
/// as many as there are free slots take them and none arriving passes
/// them (a slot an eviction freed went to whichever thread looked first,
/// and on a loaded machine the evicted clients, back within microseconds,
/// took them all for half a second). `me`: the connection's id; `peer`:
/// its peer's key. False: no slot came free in time.
fn take_serving_slot(shared: &Shared, me: u64, peer: u64) -> bool {
    {
        let mut waiting = lock(&shared.slot_waiters);
        if waiting.is_empty() && try_serving_slot(shared) {
            return true;
        }
        waiting.push_back((me, peer));
        ask_eviction(shared, waiting.len() - 1);
    }
    let start = Instant::now();
    let mut asked = start;
    loop {
        std::thread::sleep(Duration::from_micros(200));
        let mut waiting = lock(&shared.slot_waiters);
        // the first waiters take the free slots, as many as there are (a
        // waiter leaves the queue only here, so it is in it)
        let Some(place) = waiting.iter().position(|w| w.0 == me) else {
            return false;
        };
        if place < free_slots(shared) && try_serving_slot(shared) {
            waiting.remove(place);
            return true;
        }
        if start.elapsed() >= EVICT_WAIT || shared.stopping.load(Ordering::SeqCst) {
            waiting.retain(|w| w.0 != me);
            return false;
        }
        // The evictions asked for are done and the slots they freed went
        // to waiters ahead of this one: ask again (not more often than
        // every 5 ms).
        if asked.elapsed() >= Duration::from_millis(5) {
            asked = Instant::now();
            ask_eviction(shared, place);
        }
    }
}

/// Serving slots free now.
fn free_slots(shared: &Shared) -> usize {
    shared
        .limits
        .max_connections
        .saturating_sub(shared.live_conns.load(Ordering::SeqCst))
}

/// Ask the reactor for one more eviction for the waiter at `place` in the
/// queue (0: first) unless the slots that are free or being freed already
/// cover every waiter up to it: each eviction makes a slot for the first
/// waiter, and an evicted client that reconnects at once waits behind,
/// so asking for more would evict one connection after another (at last
/// every peer's) while the waiters are slow to take the slots.
fn ask_eviction(shared: &Shared, place: usize) {
    if free_slots(shared) + shared.evict_wanted.load(Ordering::SeqCst) <= place {
        shared.evict_wanted.fetch_add(1, Ordering::SeqCst);
        shared.wake_reactor();
    }
}

/// Run the handshake within the handshake deadline (the whole of it: each
/// read and send may take only what is left); on success, what was
/// negotiated and the bytes read past its end, with a serving slot taken
/// (given back when the reactor closes the connection).
fn handshake(
    shared: &Shared,
    sock: &Sock,
    id: u64,
    over: &AtomicBool,
) -> Option<(Negotiated, Vec<u8>)> {
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
        if ending && !take_serving_slot(shared, id, sock.peer_key()) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{ServeOptions, ShutdownHandle};
    use crate::server::Server;
    use storlab_model::devices::fixed::FixedLatency;

    /// Waiting newcomers take freed serving slots in arrival order, and
    /// one arriving while others wait queues behind them rather than
    /// taking a slot that comes free (the server is bound, not run: no
    /// reactor evicts, the test frees the slots itself).
    #[test]
    fn waiting_newcomers_take_freed_slots_in_arrival_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let opts = ServeOptions {
            socket: Some(dir.path().join("s")),
            size: 1 << 20,
            max_connections: 2,
            realtime: false,
            wake_assist: false,
            handle_signals: false,
            ..ServeOptions::default()
        };
        let dev = Box::new(FixedLatency::new(0, 1 << 20));
        let server = Server::bind(opts, dev, ShutdownHandle::new()).expect("bind");
        let shared = server.shared.clone();
        shared.live_conns.store(2, Ordering::SeqCst);
        let waiters = |n: usize| {
            let t = Instant::now();
            while lock(&shared.slot_waiters).len() != n {
                assert!(t.elapsed() < Duration::from_secs(5), "{n} waiters");
                std::thread::yield_now();
            }
        };
        let spawn = |peer: u64| {
            let s = shared.clone();
            std::thread::spawn(move || take_serving_slot(&s, peer, peer))
        };
        let first = spawn(1);
        waiters(1);
        let second = spawn(2);
        waiters(2);
        // a slot comes free: the first waiter takes it, the second waits
        shared.live_conns.fetch_sub(1, Ordering::SeqCst);
        assert!(first.join().expect("first"), "the first waiter is served");
        waiters(1);
        assert_eq!(lock(&shared.slot_waiters).front().map(|w| w.1), Some(2));
        shared.live_conns.fetch_sub(1, Ordering::SeqCst);
        assert!(
            second.join().expect("second"),
            "the second waiter is served"
        );
        // a newcomer that finds a slot free while another waits for it
        // does not pass that waiter (here one that never comes for it):
        // it waits its turn, and is refused when its wait runs out
        lock(&shared.slot_waiters).push_back((u64::MAX, 9));
        shared.live_conns.fetch_sub(1, Ordering::SeqCst);
        assert!(
            !take_serving_slot(&shared, 3, 3),
            "the newcomer passed a waiter"
        );
        assert_eq!(
            lock(&shared.slot_waiters)
                .iter()
                .map(|w| w.1)
                .collect::<Vec<_>>(),
            vec![9]
        );
        assert_eq!(shared.live_conns.load(Ordering::SeqCst), 1);
    }
}
