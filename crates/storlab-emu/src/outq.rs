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
//!
//! A large read's data is not in the queue: a [`LazyRead`] holds its
//! header and where its data is, and the data is read from the store a
//! piece at a time (at most [`SEND_MAX`]) just before the socket takes
//! it (issue 59: a client queueing 4096 reads of 32 MiB and leaving made
//! the server allocate, clear and fill 32 MiB per read for nobody, and a
//! client that never reads held the filled buffers). What a read costs
//! the server is then what its client takes.

use std::collections::VecDeque;
use std::io;
use std::os::fd::RawFd;

use crate::proto::*;

/// Replies up to this size are appended to the last buffer; reads up to
/// this size are filled when released, into that buffer (a lazy read
/// ends a `sendmsg`'s batch, which small replies should not).
pub(crate) const COALESCE: usize = 16 << 10;
/// Buffers handed to one `sendmsg`.
const IOVECS: usize = 64;
/// Most bytes one [`OutQueue::send`] hands the socket: a unix socket
/// whose reader keeps up takes a whole 16 MiB reply in one `sendmsg`, a
/// 3 ms copy during which no other reply goes out. The rest goes at the
/// next turn of the event loop (the socket still reports writable). At
/// 256 KiB, small replies beside 16 MiB reads were 28-94 µs late (p99);
/// at 64 KiB, 27-29 µs.
pub(crate) const SEND_MAX: usize = 64 << 10;

/// Why a lazy read's data could not be had: the NBD error and a message.
pub(crate) type FillError = (u32, &'static str);

/// Reads a lazy read's data: `(epoch, store offset, buffer)`; fills every
/// byte of the buffer, or fails.
pub(crate) type Fill<'a> = &'a mut dyn FnMut(u64, u64, &mut [u8]) -> Result<(), FillError>;

/// A read reply whose data is read from the store as the socket takes it.
pub(crate) struct LazyRead {
    /// The reply's header: a simple reply's, or a structured
    /// `OFFSET_DATA` chunk's with the offset after it.
    head: [u8; STRUCTURED_READ_PREFIX],
    head_len: usize,
    offset: u64,
    len: usize,
    /// The power epoch the read completed in: its data must come from it.
    epoch: u64,
    handle: u64,
    structured: bool,
    /// Data read and not yet sent (`piece` holds the data from `piece_at`
    /// on): what a short send left is not read again.
    piece: Vec<u8>,
    piece_at: usize,
}

impl LazyRead {
    /// The successful reply to read `handle` of `len` bytes at `offset`,
    /// completed in power epoch `epoch`.
    pub(crate) fn new(structured: bool, handle: u64, offset: u64, len: u32, epoch: u64) -> Self {
        let mut head = [0u8; STRUCTURED_READ_PREFIX];
        let head_len = if structured {
            write_structured_header(
                &mut head,
                REPLY_FLAG_DONE,
                REPLY_TYPE_OFFSET_DATA,
                handle,
                len + 8,
            );
            head[STRUCTURED_REPLY_LEN..].copy_from_slice(&offset.to_be_bytes());
            STRUCTURED_READ_PREFIX
        } else {
            write_simple_header(&mut head, 0, handle);
            SIMPLE_REPLY_LEN
        };
        LazyRead {
            head,
            head_len,
            offset,
            len: len as usize,
            epoch,
            handle,
            structured,
            piece: Vec::new(),
            piece_at: 0,
        }
    }

    /// The reply's header.
    pub(crate) fn head(&self) -> &[u8] {
        &self.head[..self.head_len]
    }

    fn total(&self) -> usize {
        self.head_len + self.len
    }

    /// Up to `want` bytes of the data from `pos` on, read now if not
    /// already (at most `SEND_MAX` at once).
    fn data(&mut self, pos: usize, want: usize, fill: Fill<'_>) -> Result<&[u8], FillError> {
        let cached = self.piece_at..self.piece_at + self.piece.len();
        if !cached.contains(&pos) {
            let n = want.min(SEND_MAX);
            if self.piece.len() < n {
                self.piece.resize(n, 0);
            } else {
                self.piece.truncate(n);
            }
            fill(self.epoch, self.offset + pos as u64, &mut self.piece)?;
            self.piece_at = pos;
        }
        let s = pos - self.piece_at;
        let n = (self.piece.len() - s).min(want);
        Ok(&self.piece[s..s + n])
    }

    /// The error reply sent instead when nothing of this one was sent.
    fn error_reply(&self, (errno, message): FillError) -> Vec<u8> {
        if self.structured {
            structured_error(errno, self.handle, message)
        } else {
            simple_reply(errno, self.handle)
        }
    }
}

/// One queued reply (or several small ones).
enum Part {
    Bytes(Vec<u8>),
    Read(LazyRead),
}

impl Part {
    fn len(&self) -> usize {
        match self {
            Part::Bytes(b) => b.len(),
            Part::Read(r) => r.total(),
        }
    }
}

/// A connection's unsent reply bytes.
#[derive(Default)]
pub(crate) struct OutQueue {
    bufs: VecDeque<Part>,
    /// Bytes of the front part already sent.
    front_off: usize,
    /// Bytes queued and not yet sent.
    queued: usize,
    /// The memory the queue holds for its replies ([`OutQueue::held`]):
    /// the capacity of every byte buffer (what a slow socket took of the
    /// front one is still held), and the unsent bytes of lazy reads.
    held: usize,
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

    /// Bytes of memory the queued replies hold: what the memory budget
    /// counts (issue 59: counting the bytes to send instead missed the
    /// room a reply buffer grew into: small replies of crafted sizes
    /// leave a buffer's capacity up to twice its length, and 64 clients
    /// not reading such replies held 1130 MiB at a 1 GiB budget). A lazy
    /// read counts its unsent bytes: the client owes them, and what it
    /// does not take must hold its connection back as a queued reply
    /// would. Not counted: the emptied buffer kept for the next small
    /// replies (at most `4 × COALESCE`) and a lazy read's data piece (at
    /// most `SEND_MAX`, the front one or two reads): a fixed amount per
    /// connection, and 0 when nothing is queued.
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// The buffer small replies are appended to, with its capacity now:
    /// the last one if it is small, else a new one.
    fn tail(&mut self) -> (&mut Vec<u8>, usize) {
        let small = matches!(self.bufs.back(), Some(Part::Bytes(b)) if b.len() < COALESCE);
        if !small {
            let b = std::mem::take(&mut self.spare);
            self.held += b.capacity();
            self.bufs.push_back(Part::Bytes(b));
        }
        match self.bufs.back_mut() {
            Some(Part::Bytes(b)) => {
                let cap = b.capacity();
                (b, cap)
            }
            _ => unreachable!("a bytes part was just ensured"),
        }
    }

    /// Queue a copy of a small reply.
    pub(crate) fn push_slice(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.queued += bytes.len();
        let (t, cap) = self.tail();
        t.extend_from_slice(bytes);
        let grown = t.capacity() - cap;
        self.held += grown;
    }

    /// Queue a reply buffer, without copying it unless it is small.
    pub(crate) fn push_vec(&mut self, b: Vec<u8>) {
        if b.len() <= COALESCE && !self.bufs.is_empty() {
            self.push_slice(&b);
        } else if !b.is_empty() {
            self.queued += b.len();
            self.held += b.capacity();
            self.bufs.push_back(Part::Bytes(b));
        }
    }

    /// Queue a small reply of `head` and `len` bytes that `fill` writes
    /// (every one of them) in place; nothing is queued if it fails.
    pub(crate) fn push_filled<E>(
        &mut self,
        head: &[u8],
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let (t, cap) = self.tail();
        let start = t.len();
        t.extend_from_slice(head);
        t.resize(start + head.len() + len, 0);
        let filled = fill(&mut t[start + head.len()..]);
        if filled.is_err() {
            t.truncate(start);
        }
        // (Grown even when it failed: the capacity stays with the buffer.)
        let (grown, emptied) = (t.capacity() - cap, t.is_empty());
        self.held += grown;
        match filled {
            Ok(()) => self.queued += head.len() + len,
            Err(_) if emptied => {
                // A buffer holding nothing to send is not left queued
                // (it would count as held with nothing to take it out).
                if let Some(Part::Bytes(b)) = self.bufs.pop_back() {
                    self.held -= b.capacity();
                    if b.capacity() <= 4 * COALESCE && self.spare.capacity() < b.capacity() {
                        self.spare = b;
                    }
                }
            }
            Err(_) => {}
        }
        filled
    }

    /// Queue a read reply whose data is read as it is sent.
    pub(crate) fn push_read(&mut self, r: LazyRead) {
        self.queued += r.total();
        self.held += r.total();
        self.bufs.push_back(Part::Read(r));
    }

    /// Drop everything queued (the socket failed).
    pub(crate) fn clear(&mut self) {
        self.bufs.clear();
        self.front_off = 0;
        self.queued = 0;
        self.held = 0;
    }

    /// Send what the socket takes now, up to `SEND_MAX` bytes, reading
    /// lazy reads' data with `fill` as it goes. `Ok(())` when that went or
    /// the socket is full; `Err` when the socket failed, or a read's data
    /// could not be had once part of its reply was sent (a read that
    /// fails before is replaced by its error reply).
    pub(crate) fn send(&mut self, fd: RawFd, fill: Fill<'_>) -> io::Result<()> {
        let mut budget = SEND_MAX;
        while self.queued > 0 && budget > 0 {
            let mut iov = [libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            }; IOVECS];
            let (mut n, mut take) = (0, 0);
            let mut failed = None;
            let mut add = |part: &[u8], n: &mut usize, take: &mut usize| {
                let part = &part[..part.len().min(budget - *take)];
                *take += part.len();
                iov[*n] = libc::iovec {
                    iov_base: part.as_ptr() as *mut libc::c_void,
                    iov_len: part.len(),
                };
                *n += 1;
            };
            for (i, p) in self.bufs.iter_mut().enumerate() {
                if n + 2 > IOVECS || take == budget {
                    break;
                }
                let skip = if i == 0 { self.front_off } else { 0 };
                match p {
                    Part::Bytes(b) => add(&b[skip..], &mut n, &mut take),
                    Part::Read(r) => {
                        if skip < r.head_len {
                            let head = &r.head[skip..r.head_len];
                            add(head, &mut n, &mut take);
                        }
                        let pos = skip.saturating_sub(r.head_len);
                        let want = (r.len - pos).min(budget - take);
                        if want > 0 {
                            match r.data(pos, want, &mut *fill) {
                                Ok(d) => add(d, &mut n, &mut take),
                                Err(e) => failed = Some((i, e)),
                            }
                        }
                        // The data read is in this part's own buffer: one
                        // lazy read per `sendmsg`.
                        break;
                    }
                }
            }
            if let Some((i, e)) = failed {
                if i == 0 && self.front_off > 0 {
                    return Err(io::Error::other(e.1));
                }
                // Nothing of it went: its error reply goes instead.
                if let Some(Part::Read(r)) = self.bufs.get(i) {
                    let err = r.error_reply(e);
                    self.queued = self.queued - r.total() + err.len();
                    self.held = self.held - r.total() + err.capacity();
                    self.bufs[i] = Part::Bytes(err);
                }
                continue;
            }
            // SAFETY: zeroed msghdr is valid (no name, no control data).
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = iov.as_mut_ptr();
            msg.msg_iovlen = n as _;
            // SAFETY: every iovec points into a buffer owned by `self.bufs`
            // (a part's bytes, a lazy read's header or data piece), alive
            // and unmoved for the call; `fd` is the connection's open
            // socket.
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
            if let Part::Read(_) = front {
                // A lazy read's sent bytes are no longer held.
                self.held -= n.min(left);
            }
            if n < left {
                self.front_off += n;
                return;
            }
            n -= left;
            self.front_off = 0;
            if let Some(Part::Bytes(mut b)) = self.bufs.pop_front() {
                self.held -= b.capacity();
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

    fn no_fill(_: u64, _: u64, _: &mut [u8]) -> Result<(), FillError> {
        panic!("no lazy read queued")
    }

    /// The byte a test store holds at `at`.
    fn byte(at: u64) -> u8 {
        (at * 7 + at / 4093) as u8
    }

    fn pattern(_: u64, at: u64, buf: &mut [u8]) -> Result<(), FillError> {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = byte(at + i as u64);
        }
        Ok(())
    }

    /// What the queue holds, counted from its parts.
    fn held_now(q: &OutQueue) -> usize {
        q.bufs
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                Part::Bytes(b) => b.capacity(),
                Part::Read(r) => r.total() - if i == 0 { q.front_off } else { 0 },
            })
            .sum()
    }

    /// Issue 59: small replies of crafted sizes leave a buffer's capacity
    /// nearly twice its length; the budget counts the capacity.
    #[test]
    fn the_memory_held_counts_what_reply_buffers_grew_into() {
        let mut q = OutQueue::default();
        let ok = |b: &mut [u8]| -> Result<(), ()> {
            b.fill(7);
            Ok(())
        };
        // A buffer's worth: an 8 KiB read, a 16-byte reply, 16 reads of
        // 512 bytes: 16672 bytes in a buffer grown to 32832.
        for _ in 0..100 {
            q.push_filled(&[1; SIMPLE_REPLY_LEN], 8192, ok).unwrap();
            q.push_slice(&[2; SIMPLE_REPLY_LEN]);
            for _ in 0..16 {
                q.push_filled(&[3; SIMPLE_REPLY_LEN], 512, ok).unwrap();
            }
            assert_eq!(q.held(), held_now(&q));
        }
        assert!(
            q.held() as f64 > 1.9 * q.queued() as f64,
            "held {} for {} queued",
            q.held(),
            q.queued()
        );
        // A failed fill leaves nothing held for it.
        let before = q.held();
        let mut fresh = OutQueue::default();
        assert!(fresh
            .push_filled(&[1; SIMPLE_REPLY_LEN], 4096, |_| Err(()))
            .is_err());
        assert_eq!((fresh.held(), fresh.queued()), (0, 0));
        assert!(q.push_filled(&[1; 16], 4096, |_| Err(())).is_err());
        assert_eq!(q.held(), held_now(&q));
        assert!(q.held() >= before);
    }

    /// Whatever the socket takes at a time, the memory held is what the
    /// parts hold, and nothing once everything went.
    #[test]
    fn the_memory_held_follows_sends_and_ends_at_zero() {
        let (a, mut b) = UnixStream::pair().expect("pair");
        let mut q = OutQueue::default();
        for i in 0..300u32 {
            match i % 4 {
                0 => q.push_read(LazyRead::new(i % 8 == 0, u64::from(i), 4096, 70_000 + i, 0)),
                1 => q.push_vec(vec![1; 20_000 + i as usize]),
                2 => q.push_slice(&[2; 40]),
                _ => q
                    .push_filled(&[3; SIMPLE_REPLY_LEN], 512 * (i as usize % 9), |d| {
                        d.fill(3);
                        Ok::<(), ()>(())
                    })
                    .unwrap(),
            }
            assert_eq!(q.held(), held_now(&q));
        }
        let mut fail_some = |e: u64, at: u64, buf: &mut [u8]| {
            if at % 3 == 1 {
                Err((EIO, "store IO error"))
            } else {
                pattern(e, at, buf)
            }
        };
        let reader = std::thread::spawn(move || {
            let mut sink = [0u8; 7919];
            while b.read(&mut sink).map(|n| n > 0).unwrap_or(false) {}
        });
        while !q.is_empty() {
            if q.send(a.as_raw_fd(), &mut fail_some).is_err() {
                q.clear();
            }
            assert_eq!(q.held(), held_now(&q));
            std::thread::yield_now();
        }
        assert_eq!(q.held(), 0);
        drop(a);
        reader.join().expect("reader");
    }

    #[test]
    fn lazy_reads_arrive_whole_and_in_order_among_other_replies() {
        let (a, mut b) = UnixStream::pair().expect("pair");
        let mut q = OutQueue::default();
        let mut want = Vec::new();
        for i in 0..40u32 {
            if i % 3 == 0 {
                let (off, len) = (u64::from(i) * 1_000_003, 100_000 + i * 7919);
                let structured = i % 2 == 0;
                let r = LazyRead::new(structured, u64::from(i), off, len, 5);
                want.extend_from_slice(&r.head[..r.head_len]);
                want.extend((0..u64::from(len)).map(|j| byte(off + j)));
                q.push_read(r);
            } else {
                let r = vec![i as u8; 16 + i as usize];
                want.extend_from_slice(&r);
                q.push_slice(&r);
            }
        }
        assert_eq!(q.queued(), want.len());
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            b.read_to_end(&mut got).expect("read");
            got
        });
        let mut read = 0usize;
        let mut fill = |e: u64, at: u64, buf: &mut [u8]| {
            assert_eq!(e, 5, "a read's data comes from its epoch");
            read += buf.len();
            pattern(e, at, buf)
        };
        while !q.is_empty() {
            q.send(a.as_raw_fd(), &mut fill).expect("send");
            std::thread::yield_now();
        }
        drop(a);
        let got = reader.join().expect("reader");
        assert_eq!(got.len(), want.len());
        assert!(got == want, "bytes differ");
        // Every byte of data read once, whatever the socket took at a time.
        let data: usize = (0..40u32)
            .filter(|i| i % 3 == 0)
            .map(|i| 100_000 + i as usize * 7919)
            .sum();
        assert_eq!(read, data);
    }

    #[test]
    fn a_lazy_read_costs_what_the_client_takes() {
        // A client that never reads: of a 32 MiB reply, only what the
        // socket holds is read from the store.
        let (a, _b) = UnixStream::pair().expect("pair");
        let mut q = OutQueue::default();
        q.push_read(LazyRead::new(false, 1, 0, 32 << 20, 0));
        let mut read = 0usize;
        let mut fill = |e: u64, at: u64, buf: &mut [u8]| {
            read += buf.len();
            pattern(e, at, buf)
        };
        for _ in 0..100 {
            q.send(a.as_raw_fd(), &mut fill).expect("send");
        }
        let sent = (32 << 20) + SIMPLE_REPLY_LEN - q.queued();
        assert!(sent < 8 << 20, "a unix socket took {sent} bytes");
        assert!(read <= sent + SEND_MAX, "read {read} for {sent} sent");
        // Dropped unsent: nothing more is read.
        q.clear();
        assert!(q.is_empty());
    }

    #[test]
    fn a_read_that_fails_before_it_is_sent_becomes_its_error_reply() {
        let (a, mut b) = UnixStream::pair().expect("pair");
        let mut q = OutQueue::default();
        q.push_slice(&[9; 20]);
        q.push_read(LazyRead::new(false, 77, 4096, 1 << 20, 1));
        q.push_read(LazyRead::new(true, 78, 4096, 1 << 20, 1));
        let mut fail = |_: u64, _: u64, _: &mut [u8]| Err((EIO, "power cut while in flight"));
        while !q.is_empty() {
            q.send(a.as_raw_fd(), &mut fail).expect("send");
        }
        drop(a);
        let mut got = Vec::new();
        b.read_to_end(&mut got).expect("read");
        let mut want = vec![9; 20];
        want.extend(simple_reply(EIO, 77));
        want.extend(structured_error(EIO, 78, "power cut while in flight"));
        assert_eq!(got, want);
    }

    #[test]
    fn a_read_that_fails_part_sent_fails_the_connection() {
        let (a, _b) = UnixStream::pair().expect("pair");
        let mut q = OutQueue::default();
        q.push_read(LazyRead::new(false, 1, 0, 16 << 20, 0));
        q.send(a.as_raw_fd(), &mut pattern).expect("first piece");
        assert!(q.queued() < (16 << 20) + SIMPLE_REPLY_LEN);
        let mut fail = |_: u64, _: u64, _: &mut [u8]| Err((EIO, "store IO error"));
        assert!(q.send(a.as_raw_fd(), &mut fail).is_err());
    }

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
            q.send(a.as_raw_fd(), &mut no_fill).expect("send");
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
        assert!(q.send(a.as_raw_fd(), &mut no_fill).is_err());
        q.clear();
        assert!(q.is_empty());
        assert!(q.send(a.as_raw_fd(), &mut no_fill).is_ok());
    }
}
