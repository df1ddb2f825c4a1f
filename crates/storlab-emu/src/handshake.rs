//! The fixed-newstyle NBD handshake as a pure state machine over bytes.
//!
//! [`Handshake::new`] queues the server's greeting; the caller sends
//! [`Handshake::take_output`], feeds what the client sends to
//! [`Handshake::feed`] (which says how many bytes it used: bytes after the
//! end of the handshake belong to the transmission phase), and repeats
//! until [`Handshake::outcome`] is set. No IO and no clock inside, so the
//! fuzz target and the server run the same code.
//!
//! Supported options: `NBD_OPT_EXPORT_NAME`, `GO`, `INFO`, `LIST`,
//! `ABORT`, `STRUCTURED_REPLY`, and `LIST_META_CONTEXT` and
//! `SET_META_CONTEXT` with the one context the protocol defines,
//! `base:allocation` (for `NBD_CMD_BLOCK_STATUS`). Others get
//! `NBD_REP_ERR_UNSUP` (STARTTLS too: no TLS). An option longer than [`MAX_OPTION_LEN`] is skipped and
//! answered `NBD_REP_ERR_TOO_BIG`; a bad magic, unknown client flags, an
//! unknown export chosen by `EXPORT_NAME` (which cannot carry an error) or
//! more than [`MAX_OPTIONS`] options end the session.

use crate::proto::*;

/// Longest option payload accepted (longer ones are skipped and refused).
pub const MAX_OPTION_LEN: u32 = 64 * 1024;
/// Most options one client may send before the server gives up on it.
pub const MAX_OPTIONS: u32 = 1024;

/// Block size constraints advertised with `NBD_INFO_BLOCK_SIZE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockSizes {
    /// Requests must be aligned to this (1 = any byte; or 512).
    pub minimum: u32,
    /// Size for efficient IO.
    pub preferred: u32,
    /// Largest read or write payload.
    pub maximum: u32,
}

impl Default for BlockSizes {
    fn default() -> Self {
        BlockSizes {
            minimum: 1,
            preferred: 4096,
            maximum: 32 << 20,
        }
    }
}

/// What the server offers: one export.
#[derive(Clone, Debug)]
pub struct ExportConfig {
    /// Its name; the empty name (the default export) is accepted too.
    pub name: String,
    /// Free text for `NBD_INFO_DESCRIPTION` and `NBD_OPT_LIST`.
    pub description: String,
    /// Size in bytes.
    pub size: u64,
    /// Writes get `EPERM`.
    pub read_only: bool,
    /// Advertise `NBD_FLAG_CAN_MULTI_CONN`.
    pub multi_conn: bool,
    /// Advertise `NBD_FLAG_ROTATIONAL`.
    pub rotational: bool,
    /// Block size constraints.
    pub block: BlockSizes,
}

impl ExportConfig {
    /// Transmission flags for a client that did (or did not) negotiate
    /// structured replies.
    pub fn transmission_flags(&self, structured: bool) -> u16 {
        let mut f = FLAG_HAS_FLAGS | FLAG_SEND_FLUSH;
        if self.read_only {
            f |= FLAG_READ_ONLY;
        } else {
            f |= FLAG_SEND_FUA | FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES | FLAG_SEND_FAST_ZERO;
        }
        if structured {
            f |= FLAG_SEND_DF;
        }
        if self.multi_conn {
            f |= FLAG_CAN_MULTI_CONN;
        }
        if self.rotational {
            f |= FLAG_ROTATIONAL;
        }
        f
    }

    /// The empty (default) name always selects the export; when the export
    /// itself has no name, any name does (one export: a client's URI path
    /// should not matter).
    fn accepts_name(&self, name: &[u8]) -> bool {
        name.is_empty() || self.name.is_empty() || name == self.name.as_bytes()
    }
}

/// What the client and server agreed on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// Structured replies are in use.
    pub structured_replies: bool,
    /// `base:allocation` was selected: `NBD_CMD_BLOCK_STATUS` is allowed.
    pub block_status: bool,
    /// Transmission flags sent.
    pub flags: u16,
}

/// How a handshake ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Go on to the transmission phase.
    Transmission(Negotiated),
    /// The client aborted (`NBD_OPT_ABORT`); close after sending the ack.
    Aborted,
    /// Protocol violation: close the connection.
    Rejected(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    ClientFlags,
    OptionHeader,
    OptionData { option: u32, len: usize },
    Discard { option: u32, remaining: u64 },
    Finished,
}

/// The server side of one handshake.
#[derive(Debug)]
pub struct Handshake {
    cfg: ExportConfig,
    state: State,
    buf: Vec<u8>,
    out: Vec<u8>,
    no_zeroes: bool,
    structured: bool,
    /// `base:allocation` selected by `NBD_OPT_SET_META_CONTEXT`.
    allocation_context: bool,
    options: u32,
    shutting_down: bool,
    outcome: Option<Outcome>,
}

fn be_u16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

impl Handshake {
    /// Start a handshake; the greeting is queued as output.
    pub fn new(cfg: ExportConfig) -> Self {
        let mut out = Vec::with_capacity(18);
        out.extend_from_slice(&INIT_PASSWD.to_be_bytes());
        out.extend_from_slice(&IHAVEOPT.to_be_bytes());
        out.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
        Handshake {
            cfg,
            state: State::ClientFlags,
            buf: Vec::new(),
            out,
            no_zeroes: false,
            structured: false,
            allocation_context: false,
            options: 0,
            shutting_down: false,
            outcome: None,
        }
    }

    /// From now on, refuse options (other than `ABORT`) with
    /// `NBD_REP_ERR_SHUTDOWN`.
    pub fn set_shutting_down(&mut self) {
        self.shutting_down = true;
    }

    /// Bytes to send to the client, taken out.
    pub fn take_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }

    /// The outcome once the handshake has ended.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// How many more bytes the current step needs at least (a read-size
    /// hint; 0 once finished).
    pub fn wants(&self) -> usize {
        match self.state {
            State::ClientFlags => 4 - self.buf.len(),
            State::OptionHeader => 16 - self.buf.len(),
            State::OptionData { len, .. } => len - self.buf.len(),
            State::Discard { remaining, .. } => remaining.min(1 << 16) as usize,
            State::Finished => 0,
        }
    }

    /// Consume client bytes; returns how many were used. Stops at the end of
    /// the handshake (the rest belongs to the transmission phase).
    pub fn feed(&mut self, mut input: &[u8]) -> usize {
        let start = input.len();
        while !input.is_empty() && self.state != State::Finished {
            match self.state {
                State::Discard { option, remaining } => {
                    let n = (remaining.min(input.len() as u64)) as usize;
                    input = &input[n..];
                    let remaining = remaining - n as u64;
                    if remaining == 0 {
                        self.error(option, REP_ERR_TOO_BIG, "option too long");
                        self.state = State::OptionHeader;
                    } else {
                        self.state = State::Discard { option, remaining };
                    }
                }
                _ => {
                    let need = self.wants();
                    let n = need.min(input.len());
                    self.buf.extend_from_slice(&input[..n]);
                    input = &input[n..];
                    if n == need {
                        let data = std::mem::take(&mut self.buf);
                        self.step(&data);
                    }
                }
            }
        }
        start - input.len()
    }

    fn finish(&mut self, outcome: Outcome) {
        self.outcome = Some(outcome);
        self.state = State::Finished;
    }

    fn step(&mut self, data: &[u8]) {
        match self.state {
            State::ClientFlags => {
                let flags = be_u32(data);
                if flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
                    return self.finish(Outcome::Rejected("unknown client flags"));
                }
                self.no_zeroes = flags & FLAG_C_NO_ZEROES != 0;
                self.state = State::OptionHeader;
            }
            State::OptionHeader => {
                if be_u64(data) != IHAVEOPT {
                    return self.finish(Outcome::Rejected("bad option magic"));
                }
                self.options += 1;
                if self.options > MAX_OPTIONS {
                    return self.finish(Outcome::Rejected("too many options"));
                }
                let option = be_u32(&data[8..]);
                let len = be_u32(&data[12..]);
                if len > MAX_OPTION_LEN {
                    if option == OPT_EXPORT_NAME {
                        return self.finish(Outcome::Rejected("export name too long"));
                    }
                    self.state = State::Discard {
                        option,
                        remaining: len as u64,
                    };
                } else if len == 0 {
                    self.state = State::OptionHeader;
                    self.option(option, &[]);
                } else {
                    self.state = State::OptionData {
                        option,
                        len: len as usize,
                    };
                }
            }
            State::OptionData { option, .. } => {
                self.state = State::OptionHeader;
                self.option(option, data);
            }
            State::Discard { .. } | State::Finished => {}
        }
    }

    fn ack(&mut self, option: u32) {
        put_option_reply(&mut self.out, option, REP_ACK, &[]);
    }

    fn error(&mut self, option: u32, reply: u32, message: &str) {
        put_option_reply(&mut self.out, option, reply, message.as_bytes());
    }

    fn info(&mut self, option: u32, typ: u16, payload: &[u8]) {
        let mut d = Vec::with_capacity(2 + payload.len());
        d.extend_from_slice(&typ.to_be_bytes());
        d.extend_from_slice(payload);
        put_option_reply(&mut self.out, option, REP_INFO, &d);
    }

    fn option(&mut self, option: u32, data: &[u8]) {
        if self.shutting_down && option != OPT_ABORT && option != OPT_EXPORT_NAME {
            return self.error(option, REP_ERR_SHUTDOWN, "server shutting down");
        }
        match option {
            OPT_EXPORT_NAME => {
                if !self.cfg.accepts_name(data) {
                    return self.finish(Outcome::Rejected("unknown export"));
                }
                let flags = self.cfg.transmission_flags(self.structured);
                self.out.extend_from_slice(&self.cfg.size.to_be_bytes());
                self.out.extend_from_slice(&flags.to_be_bytes());
                if !self.no_zeroes {
                    self.out.extend_from_slice(&[0u8; 124]);
                }
                let n = self.negotiated(flags);
                self.finish(Outcome::Transmission(n));
            }
            OPT_ABORT => {
                self.ack(option);
                self.finish(Outcome::Aborted);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    return self.error(option, REP_ERR_INVALID, "NBD_OPT_LIST takes no data");
                }
                let name = self.cfg.name.as_bytes();
                let mut d = Vec::with_capacity(4 + name.len() + self.cfg.description.len());
                d.extend_from_slice(&(name.len() as u32).to_be_bytes());
                d.extend_from_slice(name);
                d.extend_from_slice(self.cfg.description.as_bytes());
                put_option_reply(&mut self.out, option, REP_SERVER, &d);
                self.ack(option);
            }
            OPT_INFO | OPT_GO => self.info_or_go(option, data),
            OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    return self.error(
                        option,
                        REP_ERR_INVALID,
                        "NBD_OPT_STRUCTURED_REPLY takes no data",
                    );
                }
                self.structured = true;
                self.ack(option);
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => self.meta_context(option, data),
            OPT_STARTTLS => self.error(option, REP_ERR_UNSUP, "TLS is not supported"),
            _ => self.error(option, REP_ERR_UNSUP, "option not supported"),
        }
    }

    fn info_or_go(&mut self, option: u32, data: &[u8]) {
        // u32 name length, name, u16 count, count * u16 information types.
        let parsed = (|| {
            let nlen = be_u32(data.get(..4)?) as usize;
            let name = data.get(4..4usize.checked_add(nlen)?)?;
            let rest = &data[4 + nlen..];
            let count = be_u16(rest.get(..2)?) as usize;
            let reqs = &rest[2..];
            if reqs.len() != count * 2 {
                return None;
            }
            let reqs: Vec<u16> = reqs.chunks_exact(2).map(be_u16).collect();
            Some((name, reqs))
        })();
        let Some((name, reqs)) = parsed else {
            return self.error(option, REP_ERR_INVALID, "malformed NBD_OPT_INFO/GO");
        };
        if !self.cfg.accepts_name(name) {
            return self.error(option, REP_ERR_UNKNOWN, "no such export");
        }
        let asked_block = reqs.contains(&INFO_BLOCK_SIZE);
        if self.cfg.block.minimum > 1 && !asked_block && option == OPT_INFO {
            return self.error(
                option,
                REP_ERR_BLOCK_SIZE_REQD,
                "ask for NBD_INFO_BLOCK_SIZE",
            );
        }
        let flags = self.cfg.transmission_flags(self.structured);
        let mut export = [0u8; 10];
        export[..8].copy_from_slice(&self.cfg.size.to_be_bytes());
        export[8..].copy_from_slice(&flags.to_be_bytes());
        self.info(option, INFO_EXPORT, &export);
        if reqs.contains(&INFO_NAME) {
            let n = self.cfg.name.clone();
            self.info(option, INFO_NAME, n.as_bytes());
        }
        if reqs.contains(&INFO_DESCRIPTION) && !self.cfg.description.is_empty() {
            let d = self.cfg.description.clone();
            self.info(option, INFO_DESCRIPTION, d.as_bytes());
        }
        // Always sent: clients that did not ask ignore it (as qemu does).
        let b = self.cfg.block;
        let mut bs = [0u8; 12];
        bs[..4].copy_from_slice(&b.minimum.to_be_bytes());
        bs[4..8].copy_from_slice(&b.preferred.to_be_bytes());
        bs[8..].copy_from_slice(&b.maximum.to_be_bytes());
        self.info(option, INFO_BLOCK_SIZE, &bs);
        self.ack(option);
        if option == OPT_GO {
            let n = self.negotiated(flags);
            self.finish(Outcome::Transmission(n));
        }
    }

    fn negotiated(&self, flags: u16) -> Negotiated {
        Negotiated {
            structured_replies: self.structured,
            block_status: self.structured && self.allocation_context,
            flags,
        }
    }

    /// `NBD_OPT_LIST_META_CONTEXT` and `NBD_OPT_SET_META_CONTEXT`: u32
    /// export name length, name, u32 query count, then each query as a u32
    /// length and a string. LIST with no query lists every context; a
    /// namespace alone (`base:`) lists its contexts. SET selects
    /// `base:allocation` if asked for by name, replacing any earlier
    /// selection (an error leaves none selected).
    fn meta_context(&mut self, option: u32, data: &[u8]) {
        if option == OPT_SET_META_CONTEXT {
            self.allocation_context = false;
        }
        if !self.structured {
            return self.error(
                option,
                REP_ERR_INVALID,
                "negotiate structured replies before metadata contexts",
            );
        }
        let parsed = (|| {
            let nlen = be_u32(data.get(..4)?) as usize;
            let name = data.get(4..4usize.checked_add(nlen)?)?;
            let mut rest = &data[4 + nlen..];
            let count = be_u32(rest.get(..4)?) as usize;
            rest = &rest[4..];
            let mut queries = Vec::new();
            for _ in 0..count {
                let qlen = be_u32(rest.get(..4)?) as usize;
                queries.push(rest.get(4..4usize.checked_add(qlen)?)?);
                rest = &rest[4 + qlen..];
            }
            rest.is_empty().then_some((name, queries))
        })();
        let Some((name, queries)) = parsed else {
            return self.error(option, REP_ERR_INVALID, "malformed metadata context option");
        };
        if !self.cfg.accepts_name(name) {
            return self.error(option, REP_ERR_UNKNOWN, "no such export");
        }
        // A query names a namespace, a colon, then a context (or nothing:
        // every context of the namespace, when listing).
        if queries
            .iter()
            .any(|q| q.len() > 4096 || !q.contains(&b':') || std::str::from_utf8(q).is_err())
        {
            return self.error(option, REP_ERR_INVALID, "malformed metadata context query");
        }
        let full = META_BASE_ALLOCATION.as_bytes();
        let matches = if option == OPT_LIST_META_CONTEXT {
            queries.is_empty() || queries.iter().any(|q| *q == full || *q == b"base:")
        } else {
            queries.contains(&full)
        };
        if matches {
            // LIST's ids are reserved (zero); SET's name the context in
            // block status replies.
            let id = if option == OPT_SET_META_CONTEXT {
                self.allocation_context = true;
                META_BASE_ALLOCATION_ID
            } else {
                0
            };
            let mut d = Vec::with_capacity(4 + full.len());
            d.extend_from_slice(&id.to_be_bytes());
            d.extend_from_slice(full);
            put_option_reply(&mut self.out, option, REP_META_CONTEXT, &d);
        }
        self.ack(option);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> ExportConfig {
        ExportConfig {
            name: "dev".into(),
            description: "test".into(),
            size: 1 << 20,
            read_only: false,
            multi_conn: true,
            rotational: false,
            block: BlockSizes::default(),
        }
    }

    fn opt(o: u32, data: &[u8]) -> Vec<u8> {
        let mut v = IHAVEOPT.to_be_bytes().to_vec();
        v.extend_from_slice(&o.to_be_bytes());
        v.extend_from_slice(&(data.len() as u32).to_be_bytes());
        v.extend_from_slice(data);
        v
    }

    fn go(name: &str, reqs: &[u16]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(reqs.len() as u16).to_be_bytes());
        for r in reqs {
            d.extend_from_slice(&r.to_be_bytes());
        }
        opt(OPT_GO, &d)
    }

    /// Option replies in `out` as (option, type, data).
    fn replies(mut out: &[u8]) -> Replies {
        let mut v = Vec::new();
        while out.len() >= 20 {
            assert_eq!(be_u64(out), REPLY_MAGIC_OPT);
            let len = be_u32(&out[16..]) as usize;
            v.push((
                be_u32(&out[8..]),
                be_u32(&out[12..]),
                out[20..20 + len].to_vec(),
            ));
            out = &out[20 + len..];
        }
        assert!(out.is_empty());
        v
    }

    #[test]
    fn greeting_then_go() {
        let mut h = Handshake::new(cfg());
        let g = h.take_output();
        assert_eq!(g.len(), 18);
        assert_eq!(be_u64(&g), INIT_PASSWD);
        let mut input = 3u32.to_be_bytes().to_vec();
        input.extend(opt(OPT_STRUCTURED_REPLY, &[]));
        input.extend(go("", &[INFO_BLOCK_SIZE]));
        input.extend_from_slice(b"rest");
        let used = h.feed(&input);
        assert_eq!(used, input.len() - 4);
        let r = replies(&h.take_output());
        assert_eq!(r[0].1, REP_ACK);
        assert_eq!(r[1].1, REP_INFO);
        assert_eq!(be_u16(&r[1].2), INFO_EXPORT);
        assert_eq!(be_u64(&r[1].2[2..]), 1 << 20);
        assert_eq!(r[2].1, REP_INFO);
        assert_eq!(be_u16(&r[2].2), INFO_BLOCK_SIZE);
        assert_eq!(r[3].1, REP_ACK);
        match h.outcome() {
            Some(Outcome::Transmission(n)) => {
                assert!(n.structured_replies);
                assert!(n.flags & FLAG_SEND_DF != 0);
                assert!(n.flags & FLAG_CAN_MULTI_CONN != 0);
            }
            o => panic!("{o:?}"),
        }
    }

    fn meta(o: u32, name: &str, queries: &[&str]) -> Vec<u8> {
        let mut d = (name.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(name.as_bytes());
        d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            d.extend_from_slice(&(q.len() as u32).to_be_bytes());
            d.extend_from_slice(q.as_bytes());
        }
        opt(o, &d)
    }

    /// Option replies as (option, type, data).
    type Replies = Vec<(u32, u32, Vec<u8>)>;

    /// Feed `options` after the client flags; the option replies and the
    /// outcome.
    fn negotiate(options: &[Vec<u8>]) -> (Replies, Option<Outcome>) {
        let mut h = Handshake::new(cfg());
        h.take_output();
        let mut input = 1u32.to_be_bytes().to_vec();
        for o in options {
            input.extend_from_slice(o);
        }
        h.feed(&input);
        (replies(&h.take_output()), h.outcome().cloned())
    }

    fn block_status_allowed(o: Option<Outcome>) -> bool {
        match o {
            Some(Outcome::Transmission(n)) => n.block_status,
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn base_allocation_is_listed_and_selected() {
        let sr = opt(OPT_STRUCTURED_REPLY, &[]);
        let (r, _) = negotiate(&[
            sr.clone(),
            meta(OPT_LIST_META_CONTEXT, "dev", &[]),
            meta(OPT_LIST_META_CONTEXT, "", &["base:"]),
            meta(OPT_LIST_META_CONTEXT, "dev", &["x-other:thing"]),
        ]);
        let types: Vec<u32> = r.iter().map(|x| x.1).collect();
        assert_eq!(
            types,
            vec![
                REP_ACK,
                REP_META_CONTEXT,
                REP_ACK,
                REP_META_CONTEXT,
                REP_ACK,
                REP_ACK
            ]
        );
        assert_eq!(be_u32(&r[1].2), 0, "listed ids are reserved zero");
        assert_eq!(&r[1].2[4..], META_BASE_ALLOCATION.as_bytes());

        let (r, o) = negotiate(&[
            sr.clone(),
            meta(
                OPT_SET_META_CONTEXT,
                "dev",
                &["x-other:thing", "base:allocation"],
            ),
            go("dev", &[]),
        ]);
        assert_eq!(r[1].1, REP_META_CONTEXT);
        assert_eq!(be_u32(&r[1].2), META_BASE_ALLOCATION_ID);
        assert_eq!(r[2].1, REP_ACK);
        assert!(block_status_allowed(o));
    }

    #[test]
    fn block_status_needs_structured_replies_and_a_selection() {
        // No structured replies: SET is refused and nothing is selected.
        let (r, o) = negotiate(&[
            meta(OPT_SET_META_CONTEXT, "dev", &["base:allocation"]),
            go("dev", &[]),
        ]);
        assert_eq!(r[0].1, REP_ERR_INVALID);
        assert!(!block_status_allowed(o));
        let sr = opt(OPT_STRUCTURED_REPLY, &[]);
        // A later SET that selects nothing replaces the earlier one.
        let (r, o) = negotiate(&[
            sr.clone(),
            meta(OPT_SET_META_CONTEXT, "dev", &["base:allocation"]),
            meta(OPT_SET_META_CONTEXT, "dev", &["base:"]),
            go("dev", &[]),
        ]);
        assert_eq!(r[3].1, REP_ACK, "{r:?}");
        assert!(!block_status_allowed(o));
        // Errors: unknown export, malformed data, a query with no namespace.
        let mut trailing = meta(OPT_SET_META_CONTEXT, "dev", &["base:allocation"]);
        trailing.push(0);
        let len = be_u32(&trailing[12..]) + 1;
        trailing[12..16].copy_from_slice(&len.to_be_bytes());
        let (r, o) = negotiate(&[
            sr.clone(),
            meta(OPT_SET_META_CONTEXT, "dev", &["base:allocation"]),
            meta(OPT_SET_META_CONTEXT, "other", &["base:allocation"]),
            meta(OPT_SET_META_CONTEXT, "dev", &["base:allocation"]),
            trailing,
            meta(OPT_LIST_META_CONTEXT, "dev", &["allocation"]),
            opt(OPT_SET_META_CONTEXT, &[0, 0, 0, 3, b'd']),
            go("dev", &[]),
        ]);
        let types: Vec<u32> = r.iter().map(|x| x.1).collect();
        assert_eq!(
            types[..8],
            [
                REP_ACK,
                REP_META_CONTEXT,
                REP_ACK,
                REP_ERR_UNKNOWN,
                REP_META_CONTEXT,
                REP_ACK,
                REP_ERR_INVALID,
                REP_ERR_INVALID
            ]
        );
        assert_eq!(types[8], REP_ERR_INVALID);
        assert!(!block_status_allowed(o), "an error clears the selection");
    }

    #[test]
    fn byte_at_a_time_equals_all_at_once() {
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend(opt(OPT_LIST, &[]));
        input.extend(opt(99, b"xyz"));
        input.extend(go("nope", &[]));
        input.extend(opt(OPT_EXPORT_NAME, b"dev"));
        let mut a = Handshake::new(cfg());
        a.feed(&input);
        let mut b = Handshake::new(cfg());
        for byte in &input {
            b.feed(std::slice::from_ref(byte));
        }
        assert_eq!(a.take_output(), b.take_output());
        assert_eq!(a.outcome(), b.outcome());
        assert!(matches!(a.outcome(), Some(Outcome::Transmission(_))));
    }

    #[test]
    fn unknown_export_and_bad_lengths_are_errors_not_closes() {
        let mut h = Handshake::new(cfg());
        h.take_output();
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend(go("other", &[]));
        input.extend(opt(OPT_GO, &[0, 0, 0, 9, 1]));
        input.extend(opt(OPT_LIST, b"x"));
        h.feed(&input);
        let r = replies(&h.take_output());
        assert_eq!(
            r.iter().map(|x| x.1).collect::<Vec<_>>(),
            vec![REP_ERR_UNKNOWN, REP_ERR_INVALID, REP_ERR_INVALID]
        );
        assert!(h.outcome().is_none());
    }

    #[test]
    fn oversized_option_is_skipped() {
        let mut h = Handshake::new(cfg());
        h.take_output();
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend(opt(42, &vec![7u8; MAX_OPTION_LEN as usize + 1]));
        input.extend(opt(OPT_ABORT, &[]));
        assert_eq!(h.feed(&input), input.len());
        let r = replies(&h.take_output());
        assert_eq!(r[0].1, REP_ERR_TOO_BIG);
        assert_eq!(r[1].1, REP_ACK);
        assert_eq!(h.outcome(), Some(&Outcome::Aborted));
    }

    #[test]
    fn bad_magic_and_flags_close() {
        let mut h = Handshake::new(cfg());
        h.feed(&8u32.to_be_bytes());
        assert_eq!(
            h.outcome(),
            Some(&Outcome::Rejected("unknown client flags"))
        );
        let mut h = Handshake::new(cfg());
        let mut input = 0u32.to_be_bytes().to_vec();
        input.extend_from_slice(&[0u8; 16]);
        h.feed(&input);
        assert_eq!(h.outcome(), Some(&Outcome::Rejected("bad option magic")));
    }

    #[test]
    fn an_unnamed_export_accepts_any_name() {
        let mut c = cfg();
        c.name = String::new();
        let mut h = Handshake::new(c);
        h.take_output();
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend(go("whatever", &[]));
        h.feed(&input);
        assert!(matches!(h.outcome(), Some(Outcome::Transmission(_))));
    }

    #[test]
    fn export_name_without_zeroes() {
        let mut h = Handshake::new(cfg());
        h.take_output();
        let mut input = 3u32.to_be_bytes().to_vec();
        input.extend(opt(OPT_EXPORT_NAME, b""));
        h.feed(&input);
        let out = h.take_output();
        assert_eq!(out.len(), 10);
        assert_eq!(be_u64(&out), 1 << 20);
    }

    #[test]
    fn info_requires_block_size_when_minimum_is_large() {
        let mut c = cfg();
        c.block.minimum = 512;
        let mut h = Handshake::new(c);
        h.take_output();
        let mut input = 1u32.to_be_bytes().to_vec();
        let mut g = go("", &[]);
        g[11] = OPT_INFO as u8;
        input.extend(g);
        h.feed(&input);
        assert_eq!(replies(&h.take_output())[0].1, REP_ERR_BLOCK_SIZE_REQD);
    }
}
