//! Shared by the fuzz targets: read everything, check the invariants every
#![allow(dead_code)] // each target uses part of it
//! reader promises (no panic, times never go back, flushes have no
//! address, at most one error and nothing after it).

use std::io::Cursor;
use storlab_trace::{BlkEvent, Format, ReadOptions, TraceOp, TraceReader};

/// Options derived from the first input byte, so one corpus explores them.
pub fn options(flags: u8) -> ReadOptions {
    ReadOptions {
        skip_bad_lines: flags & 1 != 0,
        blk_event: if flags & 2 != 0 {
            BlkEvent::Issue
        } else {
            BlkEvent::Queue
        },
        reorder_window_ns: if flags & 4 != 0 { 0 } else { 1_000_000 },
        max_pending: if flags & 8 != 0 { 4 } else { 1 << 17 },
        ..ReadOptions::default()
    }
}

pub fn check(mut r: TraceReader, skip: bool) {
    let mut last = 0;
    let mut errors = 0;
    for item in r.by_ref().take(1 << 16) {
        match item {
            Ok(rec) => {
                assert_eq!(errors, 0);
                assert!(rec.time_ns >= last);
                last = rec.time_ns;
                if rec.op == TraceOp::Flush {
                    assert_eq!((rec.offset, rec.len), (0, 0));
                }
                assert!(rec.offset.checked_add(rec.len).is_some());
            }
            Err(e) => {
                assert!(!skip, "error while skipping: {e}");
                errors += 1;
            }
        }
    }
    assert!(errors <= 1);
}

pub fn run(data: &[u8], format: Option<Format>) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let opts = options(flags);
    let src = Box::new(Cursor::new(rest.to_vec()));
    if let Ok(r) = storlab_trace::open_reader(src, "fuzz", format, &opts) {
        check(r, opts.skip_bad_lines);
    }
}
