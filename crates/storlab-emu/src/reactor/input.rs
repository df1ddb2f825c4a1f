//! Input: new connections, reading a socket, and turning its bytes into
//! requests submitted to the model.

use std::io;
use std::sync::atomic::Ordering;

use storlab_model::{DevRequest, Nanos};

use crate::clock::Clock;
use crate::driver::ModelDriver;
use crate::outq::OutQueue;
use crate::proto::*;
use crate::request::{Command, Event, Limits, RequestStream};
use crate::shared::{lock, Job, JobKind, NewConn};

use super::conn::{epoll_ctl, Conn};
use super::data::{prepare, timing_of};
use super::state::Reactor;

/// Read buffer per connection.
const READ_BUF: usize = 256 << 10;
/// Most bytes taken from a socket by one `recv`.
const RECV_MAX: usize = 32 << 10;
/// How long the reactor spins for the rest of a request partly read
/// before it sleeps (a client stalled mid-request costs no more CPU).
const PARTIAL_SPIN_NS: Nanos = 20_000;
/// One turn of a connection's input (issue 59): at most this many
/// requests, and requests using at most this many bytes of input (the
/// request that crosses it is the last), are taken from its buffer per
/// readiness event; the rest waits in the buffer for the connection's next
/// turn, after every other connection ready has had one
/// (`Conn::backlog`; the reactor does not sleep while one waits). Before,
/// one event took everything a connection had buffered: a 32 KiB `recv`
/// of small reads is 1170 requests, so 64 clients flooding small reads
/// held a newcomer's first request for more than a second (a debug build
/// on a loaded machine). libuv bounds its per-event work the same way
/// (`uv__read` in `src/unix/stream.c`: at most `count = 32` reads per
/// readable event, "Prevent loop starvation when the data comes in as fast
/// as (or faster than) we can read it"); the bytes match one `recv`
/// (`RECV_MAX`), so a turn copies no more than one read brings in. Replies
/// are bounded per turn already (`outq::SEND_MAX`). The reactor's epoll is
/// level-triggered, and a connection with a backlog has its `EPOLLIN`
/// interest off (`Conn::wanted_interest`): it is not read further until
/// its buffer is worked off, and is polled again when it is.
pub(super) const TURN_REQUESTS: u32 = 32;
const TURN_BYTES: usize = RECV_MAX;
/// Replies due during a batch of input are sent once they have waited
/// this long (a batch of replies costs one `send`, a reply alone one too).
const BATCH_NS: u64 = 5_000;

impl Reactor {
    /// Take the connections whose handshake finished.
    pub(super) fn accept_new(&mut self) {
        let new: Vec<NewConn> = std::mem::take(&mut *lock(&self.shared.incoming));
        for nc in new {
            let slot = match self.conns.iter().position(Option::is_none) {
                Some(i) => i,
                None => {
                    self.conns.push(None);
                    self.conns.len() - 1
                }
            };
            let limits = Limits {
                size: self.shared.export.size,
                min_block: self.shared.export.block.minimum,
                max_payload: self.shared.export.block.maximum,
                read_only: self.shared.export.read_only,
                structured: nc.negotiated.structured_replies,
                block_status: nc.negotiated.block_status,
            };
            let mut buf = vec![0u8; READ_BUF.max(nc.leftover.len())];
            buf[..nc.leftover.len()].copy_from_slice(&nc.leftover);
            let generation = self.next_generation;
            self.next_generation += 1;
            let interest = libc::EPOLLIN as u32;
            if epoll_ctl(
                self.epfd,
                libc::EPOLL_CTL_ADD,
                nc.sock.fd(),
                interest,
                slot as u64,
            )
            .is_err()
            {
                nc.sock.shutdown(std::net::Shutdown::Both);
                self.shared.live_conns.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let hi = nc.leftover.len();
            self.conns[slot] = Some(Conn {
                id: nc.id,
                peer: nc.peer,
                generation,
                sock: nc.sock,
                structured: nc.negotiated.structured_replies,
                stream: RequestStream::new(limits),
                buf,
                lo: 0,
                hi,
                out: OutQueue::default(),
                sent: Vec::new(),
                inflight: 0,
                closed_input: false,
                dead: false,
                interest,
                idle_until: 0,
                partial_until: 0,
                reads_inflight: 0,
                accounted: 0,
                blocked_cost: 0,
                zero_queue: Default::default(),
                zero_inflight: 0,
                last_input: self.shared.clock.now(),
                last_progress: self.shared.clock.now(),
            });
            if hi > 0 {
                self.process_input(slot);
            }
        }
    }

    /// One `recv` on a readable connection, then its requests.
    pub(super) fn read_input(&mut self, slot: usize) {
        let budget = self.budget();
        let now = self.shared.clock.now();
        let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        if c.closed_input || c.throttled(budget) {
            self.update_interest(slot);
            return;
        }
        if c.backlog() {
            // Requests from its last read wait in the buffer: those first,
            // one turn's worth (no more read from the socket meanwhile).
            self.process_input(slot);
            return;
        }
        if c.lo > 0 {
            c.buf.copy_within(c.lo..c.hi, 0);
            c.hi -= c.lo;
            c.lo = 0;
        }
        let fd = c.fd();
        // At most `RECV_MAX` per read: copying a large batch of writes out
        // of the socket takes tens of µs, during which replies fall due.
        let end = (c.hi + RECV_MAX).min(c.buf.len());
        if end == c.hi {
            // Nothing consumed yet (cannot happen: the stream takes every
            // byte unless throttled); a zero-length recv would read as EOF.
            return;
        }
        let room = &mut c.buf[c.hi..end];
        // SAFETY: `room` is valid writable memory of its length; the fd is
        // the connection's open socket.
        let n = unsafe { libc::recv(fd, room.as_mut_ptr().cast(), room.len(), libc::MSG_DONTWAIT) };
        match n {
            0 => c.closed_input = true,
            n if n > 0 => {
                c.hi += n as usize;
                c.last_input = now;
            }
            _ => {
                let e = io::Error::last_os_error();
                if !matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) {
                    c.closed_input = true;
                }
            }
        }
        self.process_input(slot);
        let budget = self.budget();
        if let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) {
            // Clients send a write's header and its payload in two system
            // calls (libnbd does): the rest of a request partly read is
            // microseconds away, too soon to sleep for.
            c.partial_until = if c.stream.mid_request() && !c.closed_input && !c.throttled(budget) {
                self.shared.clock.now() + PARTIAL_SPIN_NS
            } else {
                0
            };
        }
    }

    /// Turn buffered bytes into requests until the buffer runs out, the
    /// connection is throttled, or its turn is over (`TURN_REQUESTS`,
    /// `TURN_BYTES`: the rest is its backlog, taken at its next turn).
    pub(super) fn process_input(&mut self, slot: usize) {
        let shared = self.shared.clone();
        let gate = shared.gate.read().unwrap_or_else(|e| e.into_inner());
        let epoch = shared.epoch.load(Ordering::SeqCst);
        let mut core = lock(&shared.core);
        let mut submitted = false;
        // The input buffer is out of the connection while its requests are
        // handled: a write's payload is borrowed from it, not copied.
        let Some(input) = self
            .conns
            .get_mut(slot)
            .and_then(Option::as_mut)
            .map(|c| std::mem::take(&mut c.buf))
        else {
            return;
        };
        let (mut taken, mut taken_bytes) = (0u32, 0usize);
        loop {
            // A long batch (many writes in one read) must not hold back
            // replies: release what fell due, and send replies held longer
            // than `BATCH_NS`, between requests.
            self.release_between(&mut core);
            let budget = self.budget();
            let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                break;
            };
            if c.lo >= c.hi || c.dead || c.stream.is_closed() {
                break;
            }
            if taken >= TURN_REQUESTS || taken_bytes >= TURN_BYTES {
                // Its turn is over: the rest waits for its next one.
                self.shared
                    .limit_counters
                    .turns_cut
                    .fetch_add(1, Ordering::Relaxed);
                break;
            }
            // The memory the next request needs (a read's reply, a
            // write's payload) is admitted by the budget before any of it
            // is read; otherwise the connection is not read until it is.
            let hdr = super::data::reply_header_len(c.structured) as u64;
            let cost = c.stream.next_cost(&input[c.lo..c.hi], hdr);
            let held = |c: &Conn| {
                !c.stream.gathering() && (c.throttled(budget) || !c.admits(budget, cost))
            };
            if held(c) && c.stream.spare_bytes() > 0 {
                // The buffer kept for the next large write goes first (it
                // could otherwise keep this request out for good).
                c.stream.drop_spare();
                self.account(slot);
                continue;
            }
            if held(c) {
                c.blocked_cost = cost;
                self.shared
                    .limit_counters
                    .throttled
                    .fetch_add(1, Ordering::Relaxed);
                break;
            }
            c.blocked_cost = 0;
            let (used, ev) = c.stream.feed(&input[c.lo..c.hi]);
            c.lo += used;
            taken_bytes += used;
            taken += u32::from(ev.is_some());
            match ev {
                None => {}
                Some(Event::Request {
                    command: Command::Disconnect,
                    ..
                }) => {
                    c.closed_input = true;
                    c.lo = c.hi;
                    break;
                }
                Some(Event::Request {
                    handle,
                    command:
                        Command::BlockStatus {
                            offset,
                            len,
                            req_one,
                        },
                    ..
                }) => {
                    // Answered at arrival from the store's allocation
                    // (writes land at arrival, so it covers every write
                    // received before it): it is the host's metadata, not a
                    // device command, so it costs no device time.
                    shared.stats.block_status();
                    let ext = self.allocation(&mut core, offset, len, req_one);
                    let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                        break;
                    };
                    match ext {
                        Ok(ext) => {
                            let r = block_status_reply(handle, META_BASE_ALLOCATION_ID, &ext);
                            c.out.push_vec(r);
                        }
                        Err(_) => c.store_error(&shared, handle),
                    }
                    self.dirty.push(slot);
                }
                Some(Event::Request {
                    handle,
                    command: command @ (Command::Trim { .. } | Command::WriteZeroes { .. }),
                    ..
                }) => {
                    let (op, offset, len, fua) = timing_of(command);
                    self.queue_zero(
                        &mut core,
                        slot,
                        handle,
                        (offset, len, fua, op == storlab_model::Op::Write),
                        epoch,
                    );
                    submitted = true;
                }
                Some(Event::Request {
                    handle,
                    command,
                    payload,
                }) => {
                    let lead = match self.copy_leading_pieces(&mut core, command, &payload) {
                        Ok(lead) => lead,
                        Err(()) => {
                            if let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) {
                                c.store_error(&shared, handle);
                            }
                            self.dirty.push(slot);
                            continue;
                        }
                    };
                    let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
                        break;
                    };
                    let job = prepare(
                        &shared,
                        core.device(),
                        c,
                        slot,
                        handle,
                        command,
                        lead,
                        epoch,
                    );
                    if let std::borrow::Cow::Owned(v) = payload {
                        // A payload that came in pieces was gathered in a
                        // buffer of the stream's: give it back for the next
                        // one (a fresh 16 MiB buffer per write is 4096 page
                        // faults on the reactor's thread).
                        c.stream.recycle(v);
                    }
                    let Some(job) = job else {
                        self.dirty.push(slot);
                        continue;
                    };
                    let (op, offset, len, fua) = timing_of(command);
                    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
                    c.inflight += 1;
                    if let JobKind::Read = job.kind {
                        // Its reply's memory, reserved (`Conn::admits`).
                        c.reads_inflight += job.reserved;
                    }
                    let req = DevRequest {
                        id,
                        op,
                        offset,
                        len,
                        fua,
                        // NBD has no placement directive
                        placement: None,
                    };
                    // The request reaches the model when its data access is
                    // done: the server's own work is transport (it is in the
                    // zero-latency floor too), the model's latency comes
                    // after it.
                    let t = shared.clock.now();
                    core.arrive(t, req, job, &mut self.released);
                    self.next_due = core.next_due();
                    submitted = true;
                }
                Some(Event::Error {
                    handle,
                    errno,
                    message,
                    ..
                }) => {
                    shared.stats.protocol_error();
                    let r = c.error_reply(errno, handle, message);
                    c.out.push_slice(&r);
                    self.dirty.push(slot);
                }
                Some(Event::Violation(_)) => {
                    shared.stats.protocol_violation();
                    c.closed_input = true;
                    c.lo = c.hi;
                    break;
                }
            }
        }
        let budget = self.budget();
        if let Some(c) = self.conns.get_mut(slot).and_then(Option::as_mut) {
            c.buf = input;
            // The buffer kept for the next large write goes back when the
            // connection is past its reserve and the pool is half used.
            if c.buffered() > budget.reserve && budget.over_total > budget.pool / 2 {
                c.stream.drop_spare();
            }
        }
        if submitted {
            // Also release what fell due while the batch was read.
            self.next_due = core.tick(shared.clock.now(), &mut self.released);
        }
        drop(core);
        self.release_all();
        drop(gate);
        self.flush_dirty();
        self.update_interest(slot);
    }

    /// Between requests of a batch (and pieces of a large write): release
    /// what fell due, and send replies held longer than `BATCH_NS`.
    pub(super) fn release_between(&mut self, core: &mut ModelDriver<Job>) {
        let now = self.shared.clock.now();
        if self.next_due.is_some_and(|d| d <= now) {
            self.next_due = core.tick(now, &mut self.released);
        }
        if self
            .released
            .first()
            .is_some_and(|r| now >= r.at + BATCH_NS)
        {
            self.release_all();
            self.flush_dirty();
        }
    }
}
