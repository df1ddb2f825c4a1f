//! Fuzz the NBD handshake state machine: arbitrary client bytes, fed in
//! arbitrary pieces, must never panic, and the pieces must not matter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use storlab_emu::handshake::{BlockSizes, ExportConfig, Handshake, Outcome};

fn cfg(min: u32) -> ExportConfig {
    ExportConfig {
        name: "fuzz".into(),
        description: "fuzz export".into(),
        size: 1 << 30,
        read_only: min > 1,
        multi_conn: true,
        rotational: false,
        block: BlockSizes {
            minimum: min,
            preferred: 4096,
            maximum: 1 << 25,
        },
    }
}

fn run(data: &[u8], piece: usize, min: u32) -> (usize, Vec<u8>, String) {
    let mut h = Handshake::new(cfg(min));
    let mut out = h.take_output();
    let mut used = 0;
    for chunk in data.chunks(piece.max(1)) {
        let n = h.feed(chunk);
        assert!(n <= chunk.len());
        used += n;
        out.extend(h.take_output());
        if n < chunk.len() {
            break;
        }
    }
    // Block status (a structured reply) only with structured replies.
    if let Some(Outcome::Transmission(n)) = h.outcome() {
        assert!(!n.block_status || n.structured_replies);
    }
    (used, out, format!("{:?}", h.outcome()))
}

fuzz_target!(|data: &[u8]| {
    let (&first, rest) = match data.split_first() {
        Some(x) => x,
        None => return,
    };
    let min = if first & 1 == 0 { 1 } else { 512 };
    let whole = run(rest, usize::MAX, min);
    let pieces = run(rest, (first >> 1) as usize + 1, min);
    assert_eq!(whole, pieces);
});
