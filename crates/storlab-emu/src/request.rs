//! Transmission-phase requests: decoding, validation and a pure request
//! stream over bytes.
//!
//! The server checks range, alignment, size and flags here, once, at the
//! boundary ([`check`]); the store and the model below trust what they get.
//! [`RequestStream`] turns a byte stream into [`Event`]s (requests with their
//! payloads, error replies to send, disconnects) with no IO, so the fuzz
//! target and the server's reader share it.

use std::borrow::Cow;

use crate::proto::*;

/// A decoded request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    /// Command flags.
    pub flags: u16,
    /// Command type.
    pub typ: u16,
    /// The client's handle (cookie), echoed in the reply.
    pub handle: u64,
    /// Byte offset.
    pub offset: u64,
    /// Length in bytes.
    pub length: u32,
}

/// Decode a 28-byte request header; `None` for a bad magic (which ends the
/// connection: the stream cannot be resynchronised).
pub fn decode_header(b: &[u8; REQUEST_LEN]) -> Option<RequestHeader> {
    let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let u64_at = |i: usize| (u32_at(i) as u64) << 32 | u32_at(i + 4) as u64;
    if u32_at(0) != REQUEST_MAGIC {
        return None;
    }
    Some(RequestHeader {
        flags: u16::from_be_bytes([b[4], b[5]]),
        typ: u16::from_be_bytes([b[6], b[7]]),
        handle: u64_at(8),
        offset: u64_at(16),
        length: u32_at(24),
    })
}

/// Encode a request header (for tests and clients).
pub fn encode_header(h: &RequestHeader) -> [u8; REQUEST_LEN] {
    let mut b = [0u8; REQUEST_LEN];
    b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&h.flags.to_be_bytes());
    b[6..8].copy_from_slice(&h.typ.to_be_bytes());
    b[8..16].copy_from_slice(&h.handle.to_be_bytes());
    b[16..24].copy_from_slice(&h.offset.to_be_bytes());
    b[24..28].copy_from_slice(&h.length.to_be_bytes());
    b
}

/// What one connection may do, fixed at the end of its handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Export size in bytes.
    pub size: u64,
    /// Alignment of offset and length (1 = none).
    pub min_block: u32,
    /// Largest read or write payload.
    pub max_payload: u32,
    /// Writes, trims and write-zeroes get `EPERM`.
    pub read_only: bool,
    /// Structured replies were negotiated (`NBD_CMD_FLAG_DF` allowed).
    pub structured: bool,
    /// `base:allocation` was selected (`NBD_CMD_BLOCK_STATUS` allowed).
    pub block_status: bool,
}

/// A valid command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Read `len` bytes at `offset`.
    Read {
        /// Offset.
        offset: u64,
        /// Length.
        len: u32,
    },
    /// Write the payload at `offset`.
    Write {
        /// Offset.
        offset: u64,
        /// Length.
        len: u32,
        /// Durable before the reply.
        fua: bool,
    },
    /// Make every acknowledged write durable.
    Flush,
    /// Discard a range (reads back as zeros here).
    Trim {
        /// Offset.
        offset: u64,
        /// Length.
        len: u32,
        /// Durable before the reply.
        fua: bool,
    },
    /// Write zeros over a range.
    WriteZeroes {
        /// Offset.
        offset: u64,
        /// Length.
        len: u32,
        /// Durable before the reply.
        fua: bool,
        /// The client asked not to punch holes (it affects timing only).
        no_hole: bool,
    },
    /// Report which parts of a range hold data (`base:allocation`).
    BlockStatus {
        /// Offset.
        offset: u64,
        /// Length.
        len: u32,
        /// One extent is enough (`NBD_CMD_FLAG_REQ_ONE`).
        req_one: bool,
    },
    /// `NBD_CMD_DISC`: finish what is in flight, then close.
    Disconnect,
}

/// What to do with a request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Carry it out (for a write, `length` payload bytes follow).
    Accept(Command),
    /// Reply with an error; skip `discard` payload bytes first.
    Reject {
        /// NBD error value.
        errno: u32,
        /// Why, for humans (sent in structured error chunks).
        message: &'static str,
        /// Payload bytes that follow the header and must be skipped.
        discard: u32,
    },
}

/// Check a request against the connection's limits (proto.md's error
/// rules: unknown command or flag `EINVAL`, read-only `EPERM`, write past
/// the end `ENOSPC`, read (or block status) past the end `EINVAL`,
/// misaligned `EINVAL`, payload over the maximum `EOVERFLOW`; block status
/// without a selected context `EINVAL`, and allowed on a read-only export
/// and for any length, as it moves no data).
pub fn check(h: &RequestHeader, lim: &Limits) -> Verdict {
    let payload = if h.typ == CMD_WRITE { h.length } else { 0 };
    let reject = |errno, message| Verdict::Reject {
        errno,
        message,
        discard: payload,
    };
    let allowed_flags = match h.typ {
        CMD_READ if lim.structured => CMD_FLAG_FUA | CMD_FLAG_DF,
        CMD_READ | CMD_WRITE | CMD_TRIM | CMD_FLUSH | CMD_DISC => CMD_FLAG_FUA,
        CMD_WRITE_ZEROES => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE | CMD_FLAG_FAST_ZERO,
        CMD_BLOCK_STATUS if lim.block_status => CMD_FLAG_REQ_ONE,
        CMD_BLOCK_STATUS => {
            return reject(EINVAL, "block status without a selected metadata context")
        }
        _ => return reject(EINVAL, "unknown command"),
    };
    if h.flags & !allowed_flags != 0 {
        return reject(EINVAL, "flag not valid for this command");
    }
    let fua = h.flags & CMD_FLAG_FUA != 0;
    let (offset, len) = (h.offset, h.length);
    match h.typ {
        CMD_DISC => return Verdict::Accept(Command::Disconnect),
        CMD_FLUSH => {
            if offset != 0 || len != 0 {
                return reject(EINVAL, "flush offset and length must be zero");
            }
            return Verdict::Accept(Command::Flush);
        }
        _ => {}
    }
    let writes = h.typ != CMD_READ && h.typ != CMD_BLOCK_STATUS;
    if len == 0 {
        return reject(EINVAL, "zero-length request");
    }
    if (h.typ == CMD_READ || h.typ == CMD_WRITE) && len > lim.max_payload {
        return reject(EOVERFLOW, "request longer than the maximum block size");
    }
    let mb = lim.min_block.max(1) as u64;
    if !offset.is_multiple_of(mb) || !(len as u64).is_multiple_of(mb) {
        return reject(EINVAL, "request not aligned to the minimum block size");
    }
    let past_end = match offset.checked_add(len as u64) {
        Some(end) => end > lim.size,
        None => true,
    };
    if past_end {
        return if writes {
            reject(ENOSPC, "request past the end")
        } else {
            reject(EINVAL, "read past the end")
        };
    }
    if writes && lim.read_only {
        return reject(EPERM, "export is read-only");
    }
    Verdict::Accept(match h.typ {
        CMD_READ => Command::Read { offset, len },
        CMD_WRITE => Command::Write { offset, len, fua },
        CMD_TRIM => Command::Trim { offset, len, fua },
        CMD_BLOCK_STATUS => Command::BlockStatus {
            offset,
            len,
            req_one: h.flags & CMD_FLAG_REQ_ONE != 0,
        },
        _ => Command::WriteZeroes {
            offset,
            len,
            fua,
            no_hole: h.flags & CMD_FLAG_NO_HOLE != 0,
        },
    })
}

/// Most extents in one block status reply (the reply may cover less than
/// asked, as the protocol allows; the client asks again for the rest).
pub const MAX_EXTENTS: usize = 16384;

/// The `base:allocation` extents of a block status request, built from
/// the store's data extents one slice of the range at a time (so a large
/// range can be scanned in pieces, with other work between): data is 0,
/// the gaps between are holes that read as zeros. At most one extent with
/// `req_one`, [`MAX_EXTENTS`] otherwise; never empty for a range that is
/// not.
#[derive(Debug)]
pub struct AllocationExtents {
    out: Vec<(u32, u32)>,
    limit: usize,
    pos: u64,
    end: u64,
}

impl AllocationExtents {
    /// For `[offset, offset + len)`.
    pub fn new(offset: u64, len: u32, req_one: bool) -> Self {
        AllocationExtents {
            out: Vec::new(),
            limit: if req_one { 1 } else { MAX_EXTENTS },
            pos: offset,
            end: offset + len as u64,
        }
    }

    /// The next slice to scan, at most `slice` bytes: `None` when the
    /// range is done or the extents wanted are complete (one more has
    /// begun).
    pub fn next_slice(&self, slice: u64) -> Option<(u64, u64)> {
        (self.pos < self.end && self.out.len() <= self.limit)
            .then(|| (self.pos, (self.end - self.pos).min(slice.max(1))))
    }

    /// Account for the slice of `n` bytes at the current position, whose
    /// data extents (in order, inside it) are `data`.
    pub fn add(&mut self, n: u64, data: &[(u64, u64)]) {
        let end = (self.pos + n).min(self.end);
        for &(o, l) in data {
            let (s, e) = (o.max(self.pos), o.saturating_add(l).min(end));
            if s >= e {
                continue;
            }
            self.push(s - self.pos, STATE_HOLE | STATE_ZERO);
            self.push(e - s, 0);
            self.pos = e;
        }
        self.push(end - self.pos, STATE_HOLE | STATE_ZERO);
        self.pos = end;
    }

    fn push(&mut self, l: u64, flags: u32) {
        if l == 0 {
            return;
        }
        // Lengths add up to at most the request's, a u32.
        match self.out.last_mut() {
            Some((ol, of)) if *of == flags => *ol += l as u32,
            _ => self.out.push((l as u32, flags)),
        }
    }

    /// The extents, from the request's offset.
    pub fn finish(mut self) -> Vec<(u32, u32)> {
        self.out.truncate(self.limit);
        self.out
    }
}

/// [`AllocationExtents`] of a whole range at once.
pub fn allocation_extents(
    data: &[(u64, u64)],
    offset: u64,
    len: u32,
    req_one: bool,
) -> Vec<(u32, u32)> {
    let mut a = AllocationExtents::new(offset, len, req_one);
    a.add(len as u64, data);
    a.finish()
}

/// Something the request stream produced. A write's payload is borrowed
/// from the input when one `feed` held all of it (no copy on the hot
/// path) and owned when it arrived in pieces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A valid request; `payload` holds a write's data (empty otherwise).
    Request {
        /// The client's handle.
        handle: u64,
        /// The command.
        command: Command,
        /// Write data.
        payload: Cow<'a, [u8]>,
    },
    /// An invalid request, its payload skipped: send this error.
    Error {
        /// The client's handle.
        handle: u64,
        /// NBD error value.
        errno: u32,
        /// Why.
        message: &'static str,
        /// Command type, for the reply form (reads need structured errors).
        typ: u16,
    },
    /// Bad magic: the stream is lost, close the connection.
    Violation(&'static str),
}

impl Event<'_> {
    /// The same event owning its payload (to keep it past the input).
    pub fn into_owned(self) -> Event<'static> {
        match self {
            Event::Request {
                handle,
                command,
                payload,
            } => Event::Request {
                handle,
                command,
                payload: Cow::Owned(payload.into_owned()),
            },
            Event::Error {
                handle,
                errno,
                message,
                typ,
            } => Event::Error {
                handle,
                errno,
                message,
                typ,
            },
            Event::Violation(m) => Event::Violation(m),
        }
    }
}

#[derive(Clone, Debug)]
enum StreamState {
    Header,
    Payload {
        handle: u64,
        command: Command,
        len: usize,
    },
    Discard {
        handle: u64,
        errno: u32,
        message: &'static str,
        typ: u16,
        remaining: u32,
    },
    Closed,
}

/// Bytes in, events out: the transmission-phase reader with no IO.
#[derive(Debug)]
pub struct RequestStream {
    limits: Limits,
    state: StreamState,
    buf: Vec<u8>,
    /// A payload buffer given back ([`RequestStream::recycle`]), reused
    /// for the next payload that fits.
    spare: Vec<u8>,
}

impl RequestStream {
    /// A stream for a connection with these limits.
    pub fn new(limits: Limits) -> Self {
        RequestStream {
            limits,
            state: StreamState::Header,
            buf: Vec::with_capacity(REQUEST_LEN),
            spare: Vec::new(),
        }
    }

    /// Give back the buffer of a payload that came in pieces (an owned
    /// [`Event::Request`] payload), to gather the next one in: large
    /// writes then reuse one buffer instead of mapping fresh memory each.
    /// A connection keeps the largest such buffer until it closes: at most
    /// the export's maximum payload per connection.
    pub fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() > self.spare.capacity() {
            buf.clear();
            self.spare = buf;
        }
    }

    /// Bytes of memory this stream holds for its connection: a payload
    /// being gathered (its whole length: it was reserved at its header)
    /// or the buffer kept for the next one.
    pub fn held_bytes(&self) -> u64 {
        let gathering = match self.state {
            StreamState::Payload { len, .. } => len.max(self.buf.capacity()),
            _ => 0,
        };
        (gathering + self.spare.capacity()) as u64
    }

    /// Let go of the buffer kept for the next payload (the memory budget
    /// wants it back).
    pub fn drop_spare(&mut self) {
        self.spare = Vec::new();
    }

    /// Bytes of the buffer kept for the next payload.
    pub fn spare_bytes(&self) -> u64 {
        self.spare.capacity() as u64
    }

    /// True while a write's payload is being gathered (its memory was
    /// reserved whole at its header).
    pub fn gathering(&self) -> bool {
        matches!(self.state, StreamState::Payload { .. })
    }

    /// The client is gone: let go of a payload half received and the
    /// spare buffer.
    pub fn drop_payload(&mut self) {
        if matches!(self.state, StreamState::Payload { .. }) {
            self.buf = Vec::new();
            self.state = StreamState::Closed;
        }
        self.spare = Vec::new();
    }

    /// The memory the next request in `input` needs, when its header is
    /// there and nothing of it was taken yet: a read's reply (`reply_hdr`
    /// bytes of header and the data), a write's payload unless `input`
    /// holds all of it (then it is lent, not copied). 0 otherwise (a
    /// header taken in pieces is charged once parsed: its payload is then
    /// held, and the connection is not read past it).
    pub fn next_cost(&self, input: &[u8], reply_hdr: u64) -> u64 {
        if self.mid_request() || !matches!(self.state, StreamState::Header) {
            return 0;
        }
        let Some(hb) = input.get(..REQUEST_LEN) else {
            return 0;
        };
        let Some(h) = decode_header(hb.try_into().expect("REQUEST_LEN bytes")) else {
            return 0;
        };
        match check(&h, &self.limits) {
            Verdict::Accept(Command::Read { len, .. }) => reply_hdr + u64::from(len),
            Verdict::Accept(Command::Write { len, .. })
                if input.len() - REQUEST_LEN < len as usize =>
            {
                u64::from(len)
            }
            _ => 0,
        }
    }

    /// The connection's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// True once a violation was seen (further input is ignored).
    pub fn is_closed(&self) -> bool {
        matches!(self.state, StreamState::Closed)
    }

    /// True while a request is partly read: its header or its payload
    /// has begun and the rest is still to come.
    pub fn mid_request(&self) -> bool {
        !self.buf.is_empty()
            || matches!(
                self.state,
                StreamState::Payload { .. } | StreamState::Discard { .. }
            )
    }

    /// Consume bytes until one event is complete or the input runs out;
    /// returns the bytes used and the event, if any.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> (usize, Option<Event<'a>>) {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match &mut self.state {
                StreamState::Closed => return (used, None),
                StreamState::Header => {
                    let mut hb = [0u8; REQUEST_LEN];
                    if self.buf.is_empty() && rest.len() >= REQUEST_LEN {
                        hb.copy_from_slice(&rest[..REQUEST_LEN]);
                        used += REQUEST_LEN;
                    } else {
                        let n = (REQUEST_LEN - self.buf.len()).min(rest.len());
                        if n == 0 {
                            return (used, None);
                        }
                        self.buf.extend_from_slice(&rest[..n]);
                        used += n;
                        if self.buf.len() < REQUEST_LEN {
                            return (used, None);
                        }
                        hb.copy_from_slice(&self.buf);
                        self.buf.clear();
                    }
                    let Some(h) = decode_header(&hb) else {
                        self.state = StreamState::Closed;
                        return (used, Some(Event::Violation("bad request magic")));
                    };
                    match check(&h, &self.limits) {
                        Verdict::Accept(command @ Command::Write { len, .. }) => {
                            let len = len as usize;
                            if input.len() - used >= len {
                                // The whole payload is here: lend it.
                                let payload = &input[used..used + len];
                                return (
                                    used + len,
                                    Some(Event::Request {
                                        handle: h.handle,
                                        command,
                                        payload: Cow::Borrowed(payload),
                                    }),
                                );
                            }
                            self.buf = if self.spare.capacity() >= len {
                                std::mem::take(&mut self.spare)
                            } else {
                                Vec::with_capacity(len)
                            };
                            self.state = StreamState::Payload {
                                handle: h.handle,
                                command,
                                len,
                            };
                        }
                        Verdict::Accept(command) => {
                            return (
                                used,
                                Some(Event::Request {
                                    handle: h.handle,
                                    command,
                                    payload: Cow::Borrowed(&[]),
                                }),
                            );
                        }
                        Verdict::Reject {
                            errno,
                            message,
                            discard,
                        } => {
                            let ev = Event::Error {
                                handle: h.handle,
                                errno,
                                message,
                                typ: h.typ,
                            };
                            if discard == 0 {
                                return (used, Some(ev));
                            }
                            self.state = StreamState::Discard {
                                handle: h.handle,
                                errno,
                                message,
                                typ: h.typ,
                                remaining: discard,
                            };
                        }
                    }
                }
                StreamState::Payload {
                    handle,
                    command,
                    len,
                } => {
                    let n = (*len - self.buf.len()).min(rest.len());
                    self.buf.extend_from_slice(&rest[..n]);
                    used += n;
                    if self.buf.len() < *len {
                        return (used, None);
                    }
                    let ev = Event::Request {
                        handle: *handle,
                        command: *command,
                        payload: Cow::Owned(std::mem::take(&mut self.buf)),
                    };
                    self.state = StreamState::Header;
                    return (used, Some(ev));
                }
                StreamState::Discard {
                    handle,
                    errno,
                    message,
                    typ,
                    remaining,
                } => {
                    let n = (*remaining as usize).min(rest.len());
                    used += n;
                    *remaining -= n as u32;
                    if *remaining > 0 {
                        return (used, None);
                    }
                    let ev = Event::Error {
                        handle: *handle,
                        errno: *errno,
                        message,
                        typ: *typ,
                    };
                    self.state = StreamState::Header;
                    return (used, Some(ev));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
