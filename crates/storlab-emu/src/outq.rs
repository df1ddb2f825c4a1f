//! Reply bytes waiting for a connection's socket.
//!
//! Replies are queued as buffers in order and sent with one vectored
//! `sendmsg` per flush. A large read reply stays in its own buffer: one
//! flat buffer would copy it when appended behind another reply, and move
//! what is left of it each time a slow socket took a part (a 16 MiB read
//! held every other connection's replies for milliseconds). Small replies
//! are appended to the last buffer, so a batch of them costs one buffer.
//! Written by hand: the queue is a few lines over `VecDeque`, and the send
//! needs `MSG_DONTWAIT | MSG_NOSIGNAL`, which `std`'s vectored writes do
//! not pass.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

/// Replies up to this size are appended to the last buffer.
const COALESCE: usize = 16 << 10;
/// Buffers handed to one `sendmsg`.
const IOVECS: usize = 64;
/// Most bytes one [`OutQueue::send`] hands the socket: a unix socket
/// whose reader keeps up takes a whole 16 MiB reply in one `sendmsg`, a
/// 3 ms copy during which no other reply goes out. The rest goes at the
/// next turn of the event loop (the socket still reports writable). At
/// 256 KiB, small replies beside 16 MiB reads were 28-94 µs late (p99);
/// at 64 KiB, 27-29 µs.
pub(crate) const SEND_MAX: usize = 64 << 10;

/// A connection's unsent reply bytes.
#[derive(Default)]
pub(crate) struct OutQueue {
    bufs: VecDeque<Vec<u8>>,
    /// Bytes of the front buffer already sent.
    front_off: usize,
    /// Bytes queued and not yet sent.
    queued: usize,
    /// An emptied small buffer kept for the next small replies.
    spare: Vec<u8>,
}

impl OutQueue {
    /// Bytes waiting.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queued == 0
    }

    /// Queue a copy of a small reply.
    pub(crate) fn push_slice(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.queued += bytes.len();
        if let Some(back) = self.bufs.back_mut() {
            if back.len() < COALESCE {
                back.extend_from_slice(bytes);
                return;
            }
        }
        let mut b = std::mem::take(&mut self.spare);
        b.extend_from_slice(bytes);
        self.bufs.push_back(b);
    }

    /// Queue a reply buffer, without copying it unless it is small.
    pub(crate) fn push_vec(&mut self, b: Vec<u8>) {
        if b.len() <= COALESCE && !self.bufs.is_empty() {
            self.push_slice(&b);
        } else if !b.is_empty() {
            self.queued += b.len();
            self.bufs.push_back(b);
        }
    }

    /// Drop everything queued (the socket failed).
    pub(crate) fn clear(&mut self) {
        self.bufs.clear();
        self.front_off = 0;
        self.queued = 0;
    }

    /// Send what the socket takes now, up to `SEND_MAX` bytes. `Ok(())`
    /// when that went or the socket is full; `Err` when it failed.
    pub(crate) fn send(&mut self, fd: RawFd) -> io::Result<()> {
        let mut budget = SEND_MAX;
        while self.queued > 0 && budget > 0 {
            let mut iov = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; IOVECS];
            let (mut n, mut take) = (0, 0);
            for (i, b) in self.bufs.iter().take(IOVECS).enumerate() {
                let part = if i == 0 { &b[self.front_off..] } else { &b[..] };
                let part = &part[..part.len().min(budget - take)];
                take += part.len();
                iov[n] = libc::iovec {
                    iov_base: part.as_ptr() as *mut libc::c_void,
                    iov_len: part.len(),
                };
                n += 1;
                if take == budget {
                    break;
                }
            }
            // SAFETY: zeroed msghdr is valid (no name, no control data).
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = n as _;
            // SAFETY: every iovec points into a buffer owned by `self.bufs`,
            // alive and unmoved for the call; `fd` is the connection's
            // open socket.
            let sent = unsafe { libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
            if sent < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => return Ok(()),
                    _ => return Err(e),
                }
            }
            self.advance(sent as usize);
            budget -= sent as usize;
        }
        Ok(())
    }

    fn advance(&mut self, mut n: usize) {
        self.queued -= n;
        while n > 0 {
            let Some(front) = self.bufs.front() else {
                break;
            };
            let left = front.len() - self.front_off;
            if n < left {
                self.front_off += n;
                return;
            }
            n -= left;
            self.front_off = 0;
            if let Some(mut b) = self.bufs.pop_front() {
                if b.capacity() <= 4 * COALESCE && self.spare.capacity() < b.capacity() {
                    b.clear();
                    self.spare = b;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn replies_arrive_whole_and_in_order_through_a_full_socket() {
        let (a, mut b) = UnixStream::pair().expect("pair");
        let mut q = OutQueue::default();
        let mut want = Vec::new();
        for i in 0..200u32 {
            // Small replies, then large ones among them.
            let len = if i % 50 == 7 {
                3 << 20
            } else {
                16 + (i as usize % 5) * 1000
            };
            let r: Vec<u8> = (0..len).map(|j| (i as usize * 31 + j) as u8).collect();
            want.extend_from_slice(&r);
            if i % 2 == 0 {
                q.push_vec(r);
            } else {
                q.push_slice(&r);
            }
        }
        assert_eq!(q.queued(), want.len());
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).expect("read");
            got
        });
        while !q.is_empty() {
            let before = q.queued();
            q.send(a.as_raw_fd()).expect("send");
            assert!(before - q.queued() <= SEND_MAX);
            std::thread::yield_now();
        }
        drop(a);
        let got = reader.join().expect("reader");
        assert_eq!(got.len(), want.len());
        assert!(got == want, "bytes differ");
    }

    #[test]
    fn a_failed_socket_is_an_error_and_clear_empties() {
        let (a, b) = UnixStream::pair().expect("pair");
        drop(b);
        let mut q = OutQueue::default();
        q.push_slice(&[1; 100]);
        assert!(q.send(a.as_raw_fd()).is_err());
        q.clear();
        assert!(q.is_empty());
        assert!(q.send(a.as_raw_fd()).is_ok());
    }
}
