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
    /// Bytes of read replies built for requests in flight.
    pub(super) reads_inflight: u64,
    /// What this connection adds to the reactor's `buffered` total.
    pub(super) accounted: u64,
    /// When it last sent bytes, and when its queued replies last moved.
    pub(super) last_input: Nanos,
    pub(super) last_progress: Nanos,
}

/// The reply-buffer budgets as one connection sees them.
#[derive(Clone, Copy)]
pub(super) struct Budget {
    /// Reply bytes buffered over every connection.
    pub(super) total: u64,
    pub(super) conn: u64,
    pub(super) global: u64,
    pub(super) fair_share: u64,
}

impl Conn {
    pub(super) fn fd(&self) -> RawFd {
        self.sock.fd()
    }

    /// Reply bytes this connection holds: queued, and read for its
    /// requests in flight.
    pub(super) fn buffered(&self) -> u64 {
        self.out.queued() as u64 + self.reads_inflight
    }

    /// Input is held back: too much in flight, or the reply-buffer
    /// budgets: its own, or the global one once it holds more than its
    /// fair share of it.
    pub(super) fn throttled(&self, b: Budget) -> bool {
        let own = self.buffered();
        // (Saturating: a budget taken before this connection's last
        // accounting may count less than it holds.)
        let total = b.total.saturating_sub(self.accounted) + own;
        self.inflight >= MAX_INFLIGHT || own >= b.conn || (total >= b.global && own >= b.fair_share)
    }

    pub(super) fn wanted_interest(&self, b: Budget) -> u32 {
        let mut ev = 0;
        if !self.closed_input && !self.throttled(b) {
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
