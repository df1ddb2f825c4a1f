//! The event loop: wait, read what is readable, send what is due, close
//! what is finished; stopping; idle connections; held replies.

use std::sync::atomic::Ordering;

use storlab_model::Nanos;

use crate::clock::Clock;
use crate::durability::SyncState;
use crate::shared::lock;

use super::conn::Budget;
use super::state::Reactor;

/// How often idle connections are looked for.
const IDLE_SCAN_NS: Nanos = 20_000_000;
/// The epoll token of the wake-up eventfd (connections use their slot).
const WAKE_TOKEN: u64 = u64::MAX;
/// Most one `malloc_trim` a second (`Reactor::give_back_memory`).
const TRIM_EVERY_NS: Nanos = 1_000_000_000;
/// How long a stopping server keeps trying to deliver queued replies.
const GIVE_UP_NS: u64 = 1_000_000_000;

impl Reactor {
    pub(super) fn run(&mut self) {
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; 64];
        loop {
            self.service();
            if self.shared.reactor_stop.load(Ordering::Acquire) {
                self.accept_new();
                let now = self.shared.clock.now();
                if self.give_up_at.is_none() {
                    // Stop reading: every connection sees end-of-file.
                    for c in self.conns.iter().flatten() {
                        c.sock.shutdown(std::net::Shutdown::Read);
                    }
                }
                let give_up = *self.give_up_at.get_or_insert(now + GIVE_UP_NS);
                if now > give_up {
                    for c in self.conns.iter_mut().flatten() {
                        if c.inflight == 0 {
                            c.dead = true;
                        }
                    }
                    self.reap();
                }
                if self.conns.iter().all(Option::is_none) {
                    return;
                }
            }
            let n = self.wait(&mut events);
            for ev in &events[..n] {
                let (flags, token) = (ev.events, ev.u64);
                if token == WAKE_TOKEN {
                    self.drain_wake();
                    self.accept_new();
                    self.evict_for_newcomers();
                    continue;
                }
                let slot = token as usize;
                if flags & (libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0 {
                    // The client is gone: what it sent and we have not
                    // read is dropped unread (4096 queued 32 MiB reads of
                    // a client that left used to be served to nobody for
                    // a minute), and so is what is queued for it.
                    self.kill(slot);
                    continue;
                }
                if flags & libc::EPOLLIN as u32 != 0 {
                    self.read_input(slot);
                }
                if flags & libc::EPOLLOUT as u32 != 0 {
                    self.flush(slot);
                }
            }
            self.flush_dirty();
            self.reap();
        }
    }

    /// Release what is due, send it, and note the next due time.
    pub(super) fn service(&mut self) {
        let now = self.shared.clock.now();
        if self.next_due.is_some_and(|d| d <= now) {
            let shared = self.shared.clone();
            let _gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
            let next = lock(&shared.core).tick(now, &mut self.released);
            self.next_due = next;
            self.release_all();
            self.flush_dirty();
        }
        self.recheck_held();
        self.pump_zero();
        self.flush_dirty();
        self.evict_for_newcomers();
        self.resume_throttled();
        self.give_back_memory(now);
        if now >= self.idle_scanned + IDLE_SCAN_NS {
            self.idle_scanned = now;
            self.expire_idle(now);
        }
        self.reap();
    }

    /// The budgets as they stand.
    pub(super) fn budget(&self) -> Budget {
        let l = &self.shared.limits;
        Budget {
            // Work of clients gone still in the model holds the pool.
            over_total: self.over_total + self.gone_work,
            conn: l.conn_buffer,
            reserve: l.reserve,
            pool: l.pool,
        }
    }

    /// Once what clients hold has fallen by a sixteenth of the budget
    /// (64 MiB of the default 1 GiB) since its high mark, at most once a
    /// second: ask the allocator to give the freed memory back. glibc's
    /// malloc keeps what a thread freed in that thread's arena, returning
    /// only the top of its heap (`malloc_trim(3)`): reply buffers of 16-32
    /// KiB freed after an attack stayed resident (+211 MiB idle after the
    /// small-reply and slow-reader attacks at a 1 GiB budget). `malloc_trim`
    /// returns the free pages of every arena (`madvise(MADV_DONTNEED)`).
    /// It runs on a thread of its own: returning about 1 GiB took 108
    /// `madvise` calls and 0.33 s (under strace; the longest call 33 ms),
    /// which the reactor's replies must not wait out (the reactor waits
    /// only if it allocates in an arena while that arena is trimmed).
    pub(super) fn give_back_memory(&mut self, now: Nanos) {
        let drop = self.shared.limits.buffer_total / 16;
        if self.trim_mark.saturating_sub(self.buffered) < drop.max(1)
            || now < self.trimmed_at + TRIM_EVERY_NS
        {
            return;
        }
        self.trim_mark = self.buffered;
        self.trimmed_at = now;
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: malloc_trim only releases free memory of the
            // allocator's arenas; it takes no pointer of ours.
            let trim = || unsafe {
                libc::malloc_trim(0);
            };
            // (No thread to be had: the memory stays until the next time.)
            let _ = std::thread::Builder::new()
                .name("nbd-trim".into())
                .spawn(trim);
        }
        self.shared
            .limit_counters
            .memory_trims
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Bring the global count of buffered reply bytes up to date with
    /// connection `slot`'s.
    pub(super) fn account(&mut self, slot: usize) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let now = c.buffered();
        let reserve = self.shared.limits.reserve;
        let over = |b: u64| b.saturating_sub(reserve);
        self.buffered = self.buffered - c.accounted + now;
        self.over_total = self.over_total.saturating_sub(over(c.accounted)) + over(now);
        c.accounted = now;
        self.trim_mark = self.trim_mark.max(self.buffered);
        let lc = &self.shared.limit_counters;
        lc.buffered.store(self.buffered, Ordering::Relaxed);
        lc.buffered_peak.fetch_max(self.buffered, Ordering::Relaxed);
    }

    /// Connection `slot`'s client is gone.
    pub(super) fn kill(&mut self, slot: usize) {
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if c.lo < c.hi || c.inflight > 0 || !c.out.is_empty() {
            self.shared
                .limit_counters
                .dropped_dead
                .fetch_add(1, Ordering::Relaxed);
        }
        c.kill();
        self.account(slot);
    }

    /// Close the connections idle past the idle timeout: nothing sent,
    /// nothing in flight or queued; or queued replies not taken.
    pub(super) fn expire_idle(&mut self, now: Nanos) {
        let t = self.shared.limits.idle_timeout_ns;
        if t == u64::MAX {
            return;
        }
        for slot in 0..self.conns.len() {
            let Some(c) = self.conns[slot].as_mut() else {
                continue;
            };
            if c.dead {
                continue;
            }
            if c.out.is_empty() {
                // Nothing waits to be taken: the stuck clock starts when
                // something does.
                c.last_progress = now;
            }
            let silent =
                c.inflight == 0 && c.out.is_empty() && now.saturating_sub(c.last_input) > t;
            let stuck = !c.out.is_empty() && now.saturating_sub(c.last_progress) > t;
            if silent || stuck {
                self.shared
                    .limit_counters
                    .idle_closed
                    .fetch_add(1, Ordering::Relaxed);
                c.kill();
                self.account(slot);
            }
        }
    }

    /// Newcomers wait for serving slots: close one served connection for
    /// each, the one that sent nothing for longest of the newcomer's own
    /// peer (process or address) if it is served, else of the peer holding
    /// the most slots (issue 59: 64 clients holding every slot, silent,
    /// dribbling a byte now and then, or reconnecting the moment they are
    /// closed, locked everyone else out; on a loaded machine the
    /// reconnecting ones, evicting for each other, at last evicted fio's
    /// connection, the only other peer's).
    pub(super) fn evict_for_newcomers(&mut self) {
        let shared = self.shared.clone();
        let wanted = &shared.evict_wanted;
        if wanted.load(Ordering::SeqCst) == 0 {
            return;
        }
        // Connections whose handshake ended are candidates too.
        self.accept_new();
        let now = self.shared.clock.now();
        let mut per_peer: std::collections::BTreeMap<u64, usize> = Default::default();
        for c in self.conns.iter().flatten().filter(|c| !c.dead) {
            *per_peer.entry(c.peer).or_default() += 1;
        }
        // The waiters' peers, first first: the k-th eviction of this round
        // is taken as the k-th waiter's (the counts are all the reactor
        // is told, so this is a close guess, not a record).
        let waiters: Vec<u64> = lock(&shared.slot_waiters)
            .iter()
            .map(|&(_, peer)| peer)
            .collect();
        let mut evicted = 0;
        while wanted.load(Ordering::SeqCst) > evicted {
            // A waiter whose peer is served gives way to itself: that
            // peer's idlest connection goes (clients reconnecting the
            // moment they are closed then churn among their own slots and
            // never push out another peer's). One whose peer holds none
            // evicts from the peer holding the most, if that peer holds at
            // least as many as its own would with it and its waiters ahead
            // of it in.
            let waiter = waiters.get(evicted).copied();
            let own = waiter.filter(|p| per_peer.get(p).is_some_and(|&n| n > 0));
            let floor = waiter.map_or(0, |p| {
                1 + waiters[..evicted].iter().filter(|&&q| q == p).count()
            });
            let victim = self
                .conns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| c.as_ref().filter(|c| !c.dead).map(|c| (i, c)))
                .filter(|(_, c)| match own {
                    Some(p) => c.peer == p,
                    None => per_peer.get(&c.peer).copied().unwrap_or(0) >= floor,
                })
                .max_by_key(|(_, c)| {
                    (
                        per_peer.get(&c.peer).copied().unwrap_or(0),
                        now.saturating_sub(c.last_input),
                    )
                })
                .map(|(i, c)| (i, c.peer));
            let Some((slot, peer)) = victim else {
                // Nothing to evict (all on their way out): the newcomers
                // take the slots those free, or are refused in time.
                wanted.store(0, Ordering::SeqCst);
                break;
            };
            // (a peer giving way to its own waiter keeps its count: the
            // slot is its waiter's; when its served connections run out,
            // its further waiters evict nothing of another peer's)
            if own.is_none() {
                if let Some(n) = per_peer.get_mut(&peer) {
                    *n -= 1;
                }
            }
            self.shared
                .limit_counters
                .evicted
                .fetch_add(1, Ordering::Relaxed);
            self.kill(slot);
            evicted += 1;
            if evicted >= wanted.load(Ordering::SeqCst) {
                break;
            }
        }
        // The slots are free (reaped) before the newcomers are told their
        // evictions are done: one that finds no slot then asks again.
        self.reap();
        let _ = wanted.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            Some(n.saturating_sub(evicted))
        });
    }

    /// Connections still sending requests.
    pub(super) fn live(&self) -> usize {
        self.conns
            .iter()
            .flatten()
            .filter(|c| !c.closed_input)
            .count()
    }

    /// Release the held replies whose host sync has ended.
    pub(super) fn recheck_held(&mut self) {
        if self.held.is_empty() {
            return;
        }
        let data = &self.shared.data;
        let mut i = 0;
        while i < self.held.len() {
            if data.sync_state(self.held[i].job.sync) == SyncState::Pending {
                i += 1;
            } else {
                self.released.push(self.held.swap_remove(i));
            }
        }
        if !self.released.is_empty() {
            let shared = self.shared.clone();
            let _gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
            self.release_all();
            drop(_gate);
            self.flush_dirty();
        }
    }
}
