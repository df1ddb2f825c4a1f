//! One connection in transmission phase as the reactor keeps it: its
//! input buffer, request stream, queued replies and budgets.

use std::io;
use std::os::unix::io::RawFd;

use storlab_model::{Nanos, Op};

use crate::outq::OutQueue;
use crate::proto::*;
use crate::request::RequestStream;
use crate::shared::Shared;
use crate::sock::Sock;

/// Most requests in flight on one connection before its input waits.
const MAX_INFLIGHT: u64 = 4096;

/// What the statistics and the trace need of one reply queued.
pub(super) struct Sent {
    pub(super) op: Op,
    pub(super) arrival: Nanos,
    pub(super) at: Nanos,
    pub(super) breakdown: storlab_model::Breakdown,
    pub(super) errno: u32,
    pub(super) bytes: u64,
    pub(super) offset: u64,
    pub(super) len: u64,
    /// A write with forced unit access (for the closed-loop recorder).
    pub(super) fua: bool,
}

/// One connection in transmission phase.
pub(super) struct Conn {
    pub(super) id: u64,
    /// Who connected (`Sock::peer_key`): eviction picks the peer holding
    /// the most slots first.
    pub(super) peer: u64,
    pub(super) generation: u64,
    pub(super) sock: Sock,
    pub(super) structured: bool,
    pub(super) stream: RequestStream,
    pub(super) buf: Vec<u8>,
    pub(super) lo: usize,
    pub(super) hi: usize,
    /// Reply bytes not yet sent.
    pub(super) out: OutQueue,
    /// Replies in `out` (from the last flush on) waiting to be accounted.
    pub(super) sent: Vec<Sent>,
    pub(super) inflight: u64,
    /// No more input: end of file, `NBD_CMD_DISC`, a violation or an
    /// error.
    pub(super) closed_input: bool,
    /// The socket failed: replies are dropped.
    pub(super) dead: bool,
    /// The epoll interest currently registered.
    pub(super) interest: u32,
    /// The idle-poll window after this connection's last reply: while no
    /// request is in flight, spin for the next one until then.
    pub(super) idle_until: Nanos,
    /// A request is partly read: spin for the rest until then (0: don't).
    pub(super) partial_until: Nanos,
    /// Bytes of the read replies of requests in flight (reserved: their
    /// data is read as the replies are sent).
    pub(super) reads_inflight: u64,
    /// What this connection adds to the reactor's `buffered` total.
    pub(super) accounted: u64,
    /// The memory the next request needs, which the budget did not admit
    /// yet (0: none waiting): its input is not read until it is.
    pub(super) blocked_cost: u64,
    /// Trim and write-zeroes pieces waiting for the model (see
    /// `Reactor::submit_zero_pieces`), and the bytes of such pieces in it.
    pub(super) zero_queue: std::collections::VecDeque<ZeroPiece>,
    pub(super) zero_inflight: u64,
    /// When it last sent bytes, and when its queued replies last moved.
    pub(super) last_input: Nanos,
    pub(super) last_progress: Nanos,
}

/// One piece of a trim or write-zeroes, waiting for its turn at the
/// model.
pub(super) struct ZeroPiece {
    pub(super) handle: u64,
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) fua: bool,
    /// Timed as a write (write-zeroes with `NO_HOLE`), not as a trim.
    pub(super) write: bool,
    /// The request's last piece: its reply goes out when this completes.
    pub(super) last: bool,
    /// The request's first piece's journal sequence (once applied).
    pub(super) first: Option<crate::durability::WriteSeq>,
    /// The epoch the request arrived in, and when.
    pub(super) epoch: u64,
    pub(super) arrived: Nanos,
}

/// The memory budget as one connection sees it: every connection may
/// hold its `reserve`; past it, connections share the `pool`. So the
/// total never exceeds `max_connections × reserve + pool`, the budget,
/// and a connection within its reserve is never held by others.
#[derive(Clone, Copy)]
pub(super) struct Budget {
    /// Bytes held past their reserves, over every connection.
    pub(super) over_total: u64,
    pub(super) conn: u64,
    pub(super) reserve: u64,
    pub(super) pool: u64,
}

impl Conn {
    pub(super) fn fd(&self) -> RawFd {
        self.sock.fd()
    }

    /// Bytes this connection holds in the server's memory: replies queued
    /// (the buffers they are in, `OutQueue::held`), the replies reserved
    /// for its reads in flight, and the payload of a write being received
    /// (reserved whole) or the buffer kept for the next one.
    pub(super) fn buffered(&self) -> u64 {
        self.out.held() as u64 + self.reads_inflight + self.stream.held_bytes()
    }

    /// Whether the budget admits `cost` more bytes for this connection:
    /// within its own budget, and within its reserve or the shared pool.
    /// A connection holding nothing always gets one request once the pool
    /// is unused (`b.over_total` includes the work of clients gone still
    /// in the model, which ends when the device does).
    pub(super) fn admits(&self, b: Budget, cost: u64) -> bool {
        if self.inflight >= MAX_INFLIGHT {
            return false;
        }
        let own = self.buffered();
        let after = own + cost;
        if own == 0 {
            // (With the pool unused it is admitted even when larger than
            // the pool, so a small budget never stops a connection for
            // good.)
            return after <= b.reserve
                || b.over_total + (after - b.reserve) <= b.pool
                || b.over_total == 0;
        }
        if after > b.conn {
            return false;
        }
        if after <= b.reserve {
            return true;
        }
        let shared =
            b.over_total.saturating_sub(own.saturating_sub(b.reserve)) + (after - b.reserve);
        shared <= b.pool
    }

    /// Input is held back: too much in flight, the next request's memory
    /// not admitted, or more held than the budget allows now.
    /// The rest of a payload being gathered is always read: its memory
    /// was reserved when its header was.
    pub(super) fn throttled(&self, b: Budget) -> bool {
        if self.stream.gathering() {
            return false;
        }
        !self.admits(b, self.blocked_cost)
    }

    /// Input read and not yet taken, left for the connection's next turn
    /// (`reactor::input::TURN_REQUESTS`) or held by the budget.
    pub(super) fn backlog(&self) -> bool {
        self.lo < self.hi && !self.closed_input && !self.dead && !self.stream.is_closed()
    }

    pub(super) fn wanted_interest(&self, b: Budget) -> u32 {
        let mut ev = 0;
        // Not read while its backlog waits: it is taken first, a turn at
        // a time (level-triggered epoll reports the socket again once the
        // interest is back on).
        if !self.closed_input && !self.throttled(b) && !self.backlog() {
            ev |= libc::EPOLLIN as u32;
        }
        if !self.dead && !self.out.is_empty() {
            ev |= libc::EPOLLOUT as u32;
        }
        ev
    }

    pub(super) fn error_reply(&self, errno: u32, handle: u64, message: &str) -> Vec<u8> {
        if self.structured {
            structured_error(errno, handle, message)
        } else {
            simple_reply(errno, handle)
        }
    }

    /// Queue the error reply of a request the store failed.
    pub(super) fn store_error(&mut self, shared: &Shared, handle: u64) {
        shared.stats.protocol_error();
        let r = self.error_reply(EIO, handle, "store IO error");
        self.out.push_slice(&r);
    }

    /// Done with: the client is gone (its requests in flight are
    /// forgotten: their replies are dropped when released), or it sent its
    /// last request and has every reply.
    pub(super) fn finished(&self) -> bool {
        self.dead || (self.closed_input && self.inflight == 0 && self.out.is_empty())
    }

    /// The client is gone (hung up, reset, or a send failed): drop what it
    /// sent and was not yet read, and everything queued for it.
    pub(super) fn kill(&mut self) {
        self.dead = true;
        self.closed_input = true;
        self.lo = self.hi;
        self.out.clear();
        self.zero_queue.clear();
        self.stream.drop_payload();
    }
}

pub(super) fn epoll_ctl(
    epfd: RawFd,
    op: libc::c_int,
    fd: RawFd,
    events: u32,
    token: u64,
) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: token };
    // SAFETY: `ev` is a valid epoll_event; the kernel copies it.
    if unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
