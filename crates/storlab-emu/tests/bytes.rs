//! Arbitrary bytes into the handshake and the request parser (the same
//! pure state machines the fuzz targets drive), and into a live server.

mod common;

use std::io::{Read, Write};

use common::*;
use proptest::prelude::*;
use storlab_emu::handshake::{BlockSizes, ExportConfig, Handshake, Outcome};
use storlab_emu::proto::*;
use storlab_emu::request::{
    allocation_extents, check, encode_header, Command, Event, Limits, RequestHeader, RequestStream,
    Verdict,
};

fn cfg() -> ExportConfig {
    ExportConfig {
        name: "e".into(),
        description: "d".into(),
        size: 1 << 20,
        read_only: false,
        multi_conn: true,
        rotational: false,
        block: BlockSizes::default(),
    }
}

fn limits(min_block: u32, read_only: bool, block_status: bool) -> Limits {
    Limits {
        size: 1 << 20,
        min_block,
        max_payload: 1 << 16,
        read_only,
        structured: true,
        block_status,
    }
}

/// Feed `input` split at `cuts`; returns (bytes used, output, outcome).
fn handshake(input: &[u8], cuts: &[usize]) -> (usize, Vec<u8>, Option<Outcome>) {
    let mut h = Handshake::new(cfg());
    let mut out = h.take_output();
    let mut used = 0;
    let mut pos = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    bounds.push(input.len());
    bounds.sort_unstable();
    for b in bounds {
        if b <= pos {
            continue;
        }
        let n = h.feed(&input[pos..b]);
        assert!(n <= b - pos);
        used += n;
        out.extend(h.take_output());
        if n < b - pos {
            // Stopped at the end of the handshake: the rest is not its.
            assert!(h.outcome().is_some());
            break;
        }
        pos = b;
    }
    (used, out, h.outcome().cloned())
}

fn stream<'a>(input: &'a [u8], cuts: &[usize], lim: Limits) -> (usize, Vec<Event<'a>>) {
    let mut s = RequestStream::new(lim);
    let mut events = Vec::new();
    let mut used = 0;
    let mut pos = 0;
    let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    bounds.push(input.len());
    bounds.sort_unstable();
    for b in bounds {
        while pos < b {
            let (n, ev) = s.feed(&input[pos..b]);
            pos += n;
            used += n;
            match ev {
                Some(e) => events.push(e),
                None if n == 0 => break,
                None => {}
            }
        }
        if s.is_closed() {
            break;
        }
        pos = b;
    }
    (used, events)
}

/// Bytes that look like a handshake often enough to get past the magic.
fn handshake_bytes() -> impl Strategy<Value = Vec<u8>> {
    let option = (0u32..12, prop::collection::vec(any::<u8>(), 0..40)).prop_map(|(o, d)| {
        let mut v = IHAVEOPT.to_be_bytes().to_vec();
        v.extend_from_slice(&o.to_be_bytes());
        v.extend_from_slice(&(d.len() as u32).to_be_bytes());
        v.extend(d);
        v
    });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        (
            0u32..4,
            prop::collection::vec(option, 0..6),
            prop::collection::vec(any::<u8>(), 0..20)
        )
            .prop_map(|(flags, opts, tail)| {
                let mut v = flags.to_be_bytes().to_vec();
                for o in opts {
                    v.extend(o);
                }
                v.extend(tail);
                v
            }),
    ]
}

/// Request streams: mostly well-formed headers with arbitrary fields.
fn request_bytes() -> impl Strategy<Value = Vec<u8>> {
    let req = (
        0u16..9,
        any::<u16>(),
        any::<u64>(),
        0u64..(2 << 20),
        0u32..(80 << 10),
        any::<bool>(),
    )
        .prop_map(|(typ, flags, handle, offset, length, small)| {
            let flags = if small { flags & 0x1f } else { flags };
            let h = RequestHeader {
                flags,
                typ,
                handle,
                offset,
                length: if small { length % 9000 } else { length },
            };
            let mut v = encode_header(&h).to_vec();
            if typ == CMD_WRITE {
                v.extend(vec![0xa5u8; h.length.min(70_000) as usize]);
            }
            v
        });
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        prop::collection::vec(req, 0..8).prop_map(|r| r.concat()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn handshake_never_panics_and_ignores_chunking(
        input in handshake_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let whole = handshake(&input, &[]);
        let split = handshake(&input, &cuts);
        prop_assert_eq!(&whole, &split);
        if whole.2.is_none() {
            prop_assert_eq!(whole.0, input.len());
        }
    }

    #[test]
    fn request_stream_never_panics_and_ignores_chunking(
        input in request_bytes(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
        min_block in prop::sample::select(vec![1u32, 512]),
        read_only: bool,
        block_status: bool,
    ) {
        let lim = limits(min_block, read_only, block_status);
        let whole = stream(&input, &[], lim);
        let split = stream(&input, &cuts, lim);
        prop_assert_eq!(&whole, &split);
        for e in &whole.1 {
            if let Event::Request { command, payload, .. } = e {
                // What is accepted is inside the export and obeys the rules.
                let (off, len) = match *command {
                    Command::Read { offset, len } | Command::Write { offset, len, .. }
                    | Command::Trim { offset, len, .. } | Command::WriteZeroes { offset, len, .. } => (offset, len),
                    Command::BlockStatus { offset, len, .. } => {
                        prop_assert!(block_status);
                        (offset, len)
                    }
                    Command::Flush | Command::Disconnect => (0, 0),
                };
                prop_assert!(off + len as u64 <= lim.size);
                prop_assert!(off % min_block as u64 == 0 && len % min_block == 0);
                if let Command::Write { len, .. } = command {
                    prop_assert_eq!(payload.len(), *len as usize);
                    prop_assert!(!read_only);
                }
            }
        }
    }

    #[test]
    fn check_accepts_only_valid_requests(
        typ in 0u16..10, flags: u16, offset: u64, length: u32, read_only: bool,
        block_status: bool,
    ) {
        let lim = limits(512, read_only, block_status);
        let h = RequestHeader { flags, typ, handle: 1, offset, length };
        if let Verdict::Accept(c) = check(&h, &lim) {
            match c {
                Command::Disconnect => prop_assert_eq!(typ, CMD_DISC),
                Command::Flush => prop_assert!(offset == 0 && length == 0),
                _ => {
                    prop_assert!(length > 0 && offset.checked_add(length as u64).is_some());
                    prop_assert!(offset + length as u64 <= lim.size);
                    prop_assert!(!read_only || typ == CMD_READ || typ == CMD_BLOCK_STATUS);
                    prop_assert!(block_status || typ != CMD_BLOCK_STATUS);
                }
            }
        } else if let Verdict::Reject { discard, .. } = check(&h, &lim) {
            prop_assert_eq!(discard, if typ == CMD_WRITE { length } else { 0 });
        }
    }
}

proptest! {
    /// Block status extents tile the range from its offset, alternate
    /// between data and holes, and put every data byte in a data extent.
    #[test]
    fn allocation_extents_tile_the_range(
        gaps in prop::collection::vec((0u64..5000, 1u64..5000), 0..40),
        offset in 0u64..3000,
        len in 1u32..150_000,
        req_one: bool,
    ) {
        // Sorted, disjoint data extents from (gap, length) pairs, clipped
        // to the range as a store reports them.
        let (end, mut pos, mut data) = (offset + len as u64, 0u64, Vec::new());
        for (g, l) in gaps {
            let (s, e) = ((pos + g).max(offset), (pos + g + l).min(end));
            if s < e {
                data.push((s, e - s));
            }
            pos += g + l;
        }
        let ext = allocation_extents(&data, offset, len, req_one);
        prop_assert!(!ext.is_empty());
        prop_assert!(!req_one || ext.len() == 1);
        let total: u64 = ext.iter().map(|e| e.0 as u64).sum();
        if req_one {
            prop_assert!(total <= len as u64);
        } else {
            prop_assert_eq!(total, len as u64);
        }
        prop_assert!(ext.windows(2).all(|w| w[0].1 != w[1].1 && w[0].0 > 0));
        let mut at = offset;
        for (l, f) in ext {
            let (s, e) = (at, at + l as u64);
            let has_data = data.iter().any(|&(o, dl)| o < e && o + dl > s);
            let all_data = data.iter().filter(|&&(o, dl)| o < e && o + dl > s)
                .map(|&(o, dl)| (o + dl).min(e) - o.max(s)).sum::<u64>() == e - s;
            if f == 0 {
                prop_assert!(all_data, "data extent {s}..{e} over a hole");
            } else {
                prop_assert_eq!(f, STATE_HOLE | STATE_ZERO);
                prop_assert!(!has_data, "hole {s}..{e} over data");
            }
            at = e;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Garbage on the wire, before or after a handshake: the server closes
    /// or answers, never dies, and serves the next client.
    #[test]
    fn live_server_survives_garbage(input in request_bytes(), after_handshake: bool, meta: bool) {
        let srv = TestServer::memory(1 << 20);
        if after_handshake {
            // With base:allocation selected, block status requests in the
            // garbage are served too.
            let mut c = if meta {
                RawClient::connect_meta(&srv.socket, &["base:allocation"]).0
            } else {
                RawClient::connect(&srv.socket, true)
            };
            let _ = c.sock.write_all(&input);
            let _ = c.sock.shutdown(std::net::Shutdown::Write);
            let mut sink = Vec::new();
            let _ = c.sock.read_to_end(&mut sink);
        } else {
            let mut s = RawClient::connect_raw(&srv.socket);
            let _ = s.write_all(&input);
            let _ = s.shutdown(std::net::Shutdown::Write);
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
        let mut c = RawClient::connect(&srv.socket, false);
        prop_assert_eq!(c.write(1, 0, b"fine", 0).error, 0);
        prop_assert_eq!(c.read(2, 0, 4).data, b"fine".to_vec());
        c.disconnect();
        srv.stop();
    }
}
