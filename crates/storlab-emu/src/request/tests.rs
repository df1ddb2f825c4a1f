//! Tests of the request decoding, checks and stream (`super`).

use super::*;

fn lim() -> Limits {
    Limits {
        size: 1 << 20,
        min_block: 1,
        max_payload: 1 << 16,
        read_only: false,
        structured: true,
        block_status: true,
    }
}

fn hdr(typ: u16, flags: u16, offset: u64, length: u32) -> RequestHeader {
    RequestHeader {
        flags,
        typ,
        handle: 7,
        offset,
        length,
    }
}

fn errno(v: Verdict) -> u32 {
    match v {
        Verdict::Reject { errno, .. } => errno,
        Verdict::Accept(c) => panic!("accepted {c:?}"),
    }
}

#[test]
fn error_rules() {
    let l = lim();
    assert_eq!(errno(check(&hdr(9, 0, 0, 1), &l)), EINVAL);
    assert_eq!(errno(check(&hdr(CMD_READ, 1 << 9, 0, 1), &l)), EINVAL);
    assert_eq!(
        errno(check(&hdr(CMD_READ, 0, (1 << 20) - 1, 2), &l)),
        EINVAL
    );
    assert_eq!(
        errno(check(&hdr(CMD_WRITE, 0, (1 << 20) - 1, 2), &l)),
        ENOSPC
    );
    assert_eq!(errno(check(&hdr(CMD_TRIM, 0, u64::MAX, 2), &l)), ENOSPC);
    assert_eq!(
        errno(check(&hdr(CMD_READ, 0, 0, (1 << 16) + 1), &l)),
        EOVERFLOW
    );
    assert_eq!(errno(check(&hdr(CMD_FLUSH, 0, 1, 0), &l)), EINVAL);
    assert_eq!(errno(check(&hdr(CMD_READ, 0, 0, 0), &l)), EINVAL);
    let ro = Limits {
        read_only: true,
        ..l
    };
    assert_eq!(errno(check(&hdr(CMD_WRITE, 0, 0, 1), &ro)), EPERM);
    let aligned = Limits {
        min_block: 512,
        ..l
    };
    assert_eq!(errno(check(&hdr(CMD_READ, 0, 1, 512), &aligned)), EINVAL);
    assert!(matches!(
        check(&hdr(CMD_READ, 0, 512, 512), &aligned),
        Verdict::Accept(_)
    ));
    // Large trims have no payload: no size limit.
    assert!(matches!(
        check(&hdr(CMD_TRIM, 1, 0, 1 << 20), &l),
        Verdict::Accept(Command::Trim { fua: true, .. })
    ));
    let nodf = Limits {
        structured: false,
        ..l
    };
    assert_eq!(
        errno(check(&hdr(CMD_READ, CMD_FLAG_DF, 0, 1), &nodf)),
        EINVAL
    );
}

#[test]
fn allocation_extents_alternate_and_cover_the_range() {
    let hole = STATE_HOLE | STATE_ZERO;
    // Data at [4096, 8192) and [12288, 16384) (touching extents merge).
    let data = [(4096, 2048), (6144, 2048), (12288, 4096)];
    assert_eq!(
        allocation_extents(&data, 0, 20480, false),
        vec![
            (4096, hole),
            (4096, 0),
            (4096, hole),
            (4096, 0),
            (4096, hole)
        ]
    );
    assert_eq!(
        allocation_extents(&data, 5000, 2000, false),
        vec![(2000, 0)]
    );
    assert_eq!(
        allocation_extents(&data, 0, 20480, true),
        vec![(4096, hole)]
    );
    assert_eq!(allocation_extents(&[], 7, 1, false), vec![(1, hole)]);
    // Many small extents: capped, in order from the offset.
    let many: Vec<(u64, u64)> = (0..3 * MAX_EXTENTS as u64)
        .map(|i| (i * 8192, 4096))
        .collect();
    let e = allocation_extents(&many, 0, u32::MAX, false);
    assert_eq!(e.len(), MAX_EXTENTS);
    assert_eq!(e[0], (4096, 0));
    assert_eq!(e[1], (4096, hole));
}

#[test]
fn allocation_extents_in_slices_equal_all_at_once() {
    let data: Vec<(u64, u64)> = vec![(4096, 8192), (20000, 5), (65536, 1 << 20)];
    let (offset, len) = (1000u64, 3u32 << 20);
    for req_one in [false, true] {
        let whole = allocation_extents(&data, offset, len, req_one);
        for slice in [1u64, 777, 4096, 1 << 20, u64::MAX] {
            let mut a = AllocationExtents::new(offset, len, req_one);
            let mut scans = 0;
            while let Some((pos, n)) = a.next_slice(slice) {
                let inside: Vec<(u64, u64)> = data
                    .iter()
                    .filter(|&&(o, l)| o < pos + n && o + l > pos)
                    .map(|&(o, l)| (o.max(pos), (o + l).min(pos + n) - o.max(pos)))
                    .collect();
                a.add(n, &inside);
                scans += 1;
            }
            assert_eq!(a.finish(), whole, "slice {slice} req_one {req_one}");
            if req_one && slice >= 1 << 20 {
                // The first extent ends in the first slice: done.
                assert_eq!(scans, 1);
            }
        }
    }
}

#[test]
fn block_status_rules() {
    let l = Limits {
        read_only: true,
        ..lim()
    };
    // Any length up to the end, read-only or not: no data moves.
    assert_eq!(
        check(&hdr(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 0, 1 << 20), &l),
        Verdict::Accept(Command::BlockStatus {
            offset: 0,
            len: 1 << 20,
            req_one: true
        })
    );
    assert_eq!(
        errno(check(&hdr(CMD_BLOCK_STATUS, 0, 1, 1 << 20), &l)),
        EINVAL
    );
    assert_eq!(errno(check(&hdr(CMD_BLOCK_STATUS, 0, 0, 0), &l)), EINVAL);
    assert_eq!(
        errno(check(&hdr(CMD_BLOCK_STATUS, CMD_FLAG_FUA, 0, 1), &l)),
        EINVAL
    );
    let unselected = Limits {
        block_status: false,
        ..l
    };
    assert_eq!(
        errno(check(&hdr(CMD_BLOCK_STATUS, 0, 0, 1), &unselected)),
        EINVAL
    );
    assert_eq!(
        errno(check(&hdr(CMD_READ, CMD_FLAG_REQ_ONE, 0, 1), &l)),
        EINVAL
    );
}

#[test]
fn mid_request_while_a_header_or_payload_is_incomplete() {
    let mut write = encode_header(&hdr(CMD_WRITE, 0, 0, 4)).to_vec();
    write.extend_from_slice(b"data");
    let read = encode_header(&hdr(CMD_READ, 0, 0, 4));
    let mut s = RequestStream::new(lim());
    assert!(!s.mid_request());
    // Header, then payload, in pieces (as libnbd sends a write).
    for (piece, mid) in [(10, true), (REQUEST_LEN, true), (REQUEST_LEN + 2, true)] {
        let mut s = RequestStream::new(lim());
        let (n, ev) = s.feed(&write[..piece]);
        assert_eq!((n, ev), (piece, None));
        assert_eq!(s.mid_request(), mid, "after {piece} bytes");
        let (_, ev) = s.feed(&write[piece..]);
        assert!(matches!(ev, Some(Event::Request { .. })));
        assert!(!s.mid_request());
    }
    // A read is whole with its header; a rejected write's payload is
    // still to be skipped.
    let (_, ev) = s.feed(&read);
    assert!(matches!(ev, Some(Event::Request { .. })));
    assert!(!s.mid_request());
    let bad = encode_header(&hdr(CMD_WRITE, 1 << 7, 0, 5));
    let (_, ev) = s.feed(&bad);
    assert!(ev.is_none());
    assert!(s.mid_request());
}

#[test]
fn payload_is_lent_when_whole_and_owned_when_split() {
    let mut input = encode_header(&hdr(CMD_WRITE, 0, 0, 4)).to_vec();
    input.extend_from_slice(b"data");
    let mut s = RequestStream::new(lim());
    let (n, ev) = s.feed(&input);
    assert_eq!(n, input.len());
    let Some(Event::Request { payload, .. }) = ev else {
        panic!("expected a request, got {ev:?}");
    };
    assert!(matches!(payload, Cow::Borrowed(b"data")));
    // The same request cut inside the payload (and inside the header).
    for cut in [10, REQUEST_LEN + 1] {
        let mut s = RequestStream::new(lim());
        let (n, ev) = s.feed(&input[..cut]);
        assert_eq!((n, ev), (cut, None));
        let (m, ev) = s.feed(&input[cut..]);
        assert_eq!(n + m, input.len());
        let Some(Event::Request { payload, .. }) = ev else {
            panic!("expected a request, got {ev:?}");
        };
        assert_eq!(&payload[..], b"data");
        assert_eq!(matches!(payload, Cow::Owned(_)), cut > REQUEST_LEN);
    }
}

#[test]
fn a_recycled_payload_buffer_gathers_the_next_payload_afresh() {
    let mut s = RequestStream::new(lim());
    let mut first = None;
    for (i, body) in [&b"0123456789"[..], b"abc", b"ABCDEFGHIJKL"]
        .iter()
        .enumerate()
    {
        let mut input = encode_header(&hdr(CMD_WRITE, 0, 0, body.len() as u32)).to_vec();
        input.extend_from_slice(body);
        let (n, ev) = s.feed(&input[..REQUEST_LEN + 1]);
        assert_eq!((n, ev), (REQUEST_LEN + 1, None));
        let (_, ev) = s.feed(&input[REQUEST_LEN + 1..]);
        let Some(Event::Request {
            payload: Cow::Owned(v),
            ..
        }) = ev
        else {
            panic!("expected an owned payload, got {ev:?}");
        };
        assert_eq!(&v[..], *body, "payload {i}");
        let ptr = v.as_ptr();
        match i {
            0 => first = Some(ptr),
            1 => assert_eq!(Some(ptr), first, "the 10-byte buffer fits 3"),
            _ => assert_ne!(Some(ptr), first, "12 bytes do not fit in 10"),
        }
        s.recycle(v);
    }
}

#[test]
fn stream_skips_rejected_write_payloads() {
    let mut s = RequestStream::new(lim());
    let mut input = encode_header(&hdr(CMD_WRITE, 1 << 7, 0, 5)).to_vec();
    input.extend_from_slice(b"hello");
    input.extend_from_slice(&encode_header(&hdr(CMD_WRITE, 0, 0, 3)));
    input.extend_from_slice(b"abc");
    let (n, ev) = s.feed(&input);
    assert!(matches!(ev, Some(Event::Error { errno: EINVAL, .. })));
    let (m, ev) = s.feed(&input[n..]);
    assert_eq!(n + m, input.len());
    assert_eq!(
        ev,
        Some(Event::Request {
            handle: 7,
            command: Command::Write {
                offset: 0,
                len: 3,
                fua: false
            },
            payload: Cow::Borrowed(b"abc")
        })
    );
}

#[test]
fn bad_magic_closes() {
    let mut s = RequestStream::new(lim());
    let (_, ev) = s.feed(&[0u8; 28]);
    assert_eq!(ev, Some(Event::Violation("bad request magic")));
    assert!(s.is_closed());
    assert_eq!(s.feed(&[1, 2, 3]), (0, None));
}
