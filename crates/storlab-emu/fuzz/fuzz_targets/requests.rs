//! Fuzz the transmission-phase request parser: arbitrary bytes after a
//! handshake must never panic, pieces must not matter, and whatever is
//! accepted must lie inside the export and obey the block-size rules.
//! Payloads that arrive in pieces are gathered in a recycled buffer.
#![no_main]

use std::borrow::Cow;

use libfuzzer_sys::fuzz_target;
use storlab_emu::request::{Command, Event, Limits, RequestStream};

fn run(data: &[u8], piece: usize, lim: Limits) -> Vec<Event<'_>> {
    let mut s = RequestStream::new(lim);
    let mut events = Vec::new();
    for chunk in data.chunks(piece.max(1)) {
        let mut pos = 0;
        while pos < chunk.len() {
            let (n, ev) = s.feed(&chunk[pos..]);
            pos += n;
            match ev {
                // A payload gathered from pieces: keep a copy and give the
                // buffer back, as the server does, so the next payload is
                // gathered in it (stale bytes would differ from the run
                // in one piece).
                Some(Event::Request {
                    handle,
                    command,
                    payload: Cow::Owned(v),
                }) => {
                    events.push(Event::Request {
                        handle,
                        command,
                        payload: Cow::Owned(v.clone()),
                    });
                    s.recycle(v);
                }
                Some(e) => events.push(e),
                None => break,
            }
        }
        if s.is_closed() {
            break;
        }
    }
    events
}

fuzz_target!(|data: &[u8]| {
    let (&first, rest) = match data.split_first() {
        Some(x) => x,
        None => return,
    };
    let lim = Limits {
        size: 1 << 24,
        min_block: if first & 1 == 0 { 1 } else { 512 },
        max_payload: 1 << 16,
        read_only: first & 2 != 0,
        structured: first & 4 != 0,
        block_status: first & 8 != 0,
    };
    let whole = run(rest, usize::MAX, lim);
    assert_eq!(whole, run(rest, (first >> 4) as usize + 1, lim));
    for e in &whole {
        if let Event::Request {
            command, payload, ..
        } = e
        {
            let (off, len) = match *command {
                Command::Read { offset, len }
                | Command::Write { offset, len, .. }
                | Command::Trim { offset, len, .. }
                | Command::WriteZeroes { offset, len, .. } => (offset, len as u64),
                Command::BlockStatus { offset, len, .. } => {
                    assert!(lim.block_status);
                    (offset, len as u64)
                }
                Command::Flush | Command::Disconnect => (0, 0),
            };
            assert!(off + len <= lim.size);
            assert!(off % lim.min_block as u64 == 0 && len % lim.min_block as u64 == 0);
            if let Command::Write { len, .. } = command {
                assert_eq!(payload.len(), *len as usize);
                assert!(!lim.read_only);
            }
        }
    }
});
