//! Every parser meets arbitrary and half-valid input without panicking,
//! yields records that respect the reader's invariants, and ends after an
//! error. (The same entry points are fuzzed under `fuzz/`; this runs in the
//! normal test suite so CI exercises it.)

use proptest::prelude::*;
use std::io::Cursor;
use std::sync::Arc;
use storlab_trace::{
    blktrace::{Endian, RawTrace},
    blktrace_from_readers, detect, open_reader, remap, BlkEvent, Format, ReadOptions, RemapMode,
    TraceOp,
};

/// Reads everything and checks the invariants every reader promises.
fn exercise(bytes: &[u8], format: Option<Format>, skip: bool, issue: bool) {
    let opts = ReadOptions {
        skip_bad_lines: skip,
        blk_event: if issue {
            BlkEvent::Issue
        } else {
            BlkEvent::Queue
        },
        ..ReadOptions::default()
    };
    let Ok(mut r) = open_reader(Box::new(Cursor::new(bytes.to_vec())), "fuzz", format, &opts)
    else {
        return;
    };
    let mut last = 0;
    let mut first = true;
    let mut errors = 0;
    for item in r.by_ref().take(100_000) {
        match item {
            Ok(rec) => {
                assert_eq!(errors, 0, "a record after an error");
                if first {
                    assert_eq!(rec.time_ns, 0, "times are rebased to the first record");
                    first = false;
                }
                assert!(rec.time_ns >= last, "time went back: {rec:?}");
                last = rec.time_ns;
                if rec.op == TraceOp::Flush {
                    assert_eq!((rec.offset, rec.len), (0, 0));
                }
                assert!(rec.offset.checked_add(rec.len).is_some());
            }
            Err(e) => {
                errors += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(errors <= 1);
    if skip {
        assert_eq!(
            errors, 0,
            "with skipping, bad input is counted, not reported"
        );
    } else {
        assert_eq!(r.skipped(), 0);
    }
}

fn all_parsers(bytes: &[u8]) {
    let _ = detect(bytes);
    for skip in [false, true] {
        exercise(bytes, None, skip, false);
        for f in Format::ALL {
            exercise(bytes, Some(f), skip, false);
        }
        exercise(bytes, Some(Format::Blkparse), skip, true);
        exercise(bytes, Some(Format::Blktrace), skip, true);
    }
}

/// Tokens that appear in real traces, to build lines that get past the
/// first checks.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "8,0",
            "259,1",
            "Q",
            "D",
            "C",
            "R",
            "M",
            "W",
            "R",
            "WS",
            "FWS",
            "DS",
            "N",
            "FN",
            "RM",
            "+",
            "[kworker]",
            "[0]",
            "(cdb)",
            "0.000000001",
            "1.5",
            "-1",
            "read",
            "write",
            "trim",
            "sync",
            "wait",
            "add",
            "open",
            "close",
            "/dev/sda",
            "Read",
            "Write",
            "hm",
            "0",
            "1",
            "4096",
            "18446744073709551615",
            "99999999999999999999",
            "0x1f",
            "",
            ",",
            "fio version 3 iolog",
            "fio version 2 iolog",
            "CPU0",
            "(8,0):",
        ])
        .prop_map(str::to_string),
        (0u64..u64::MAX).prop_map(|v| v.to_string()),
        (0u32..100_000).prop_map(|v| format!("{}.{:09}", v / 1000, v)),
        "[ -~]{0,12}",
    ]
}

fn line(sep: &'static str) -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..12).prop_map(move |t| t.join(sep))
}

fn text() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(vec!["", "fio version 2 iolog\n", "fio version 3 iolog\n"]),
        prop::collection::vec(prop_oneof![line(" "), line(","), line("  ")], 0..30),
    )
        .prop_map(|(head, lines)| format!("{head}{}\n", lines.join("\n")).into_bytes())
}

/// blktrace records with valid magic and random fields, then corrupted or
/// cut at random.
fn binary() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(
            (
                0u64..1_000_000,
                any::<u64>(),
                any::<u32>(),
                prop::sample::select(vec![1u32, 2, 6, 7, 8, 0, 13]),
                any::<u16>(),
                0u32..4,
                0u16..40,
                any::<bool>(),
            ),
            0..40,
        ),
        any::<bool>(),
        prop::option::of((any::<usize>(), any::<u8>())),
        prop::option::of(any::<usize>()),
    )
        .prop_map(|(recs, big, corrupt, cut)| {
            let endian = if big { Endian::Big } else { Endian::Little };
            let mut out = Vec::new();
            let mut t = 0u64;
            for (gap, sector, bytes, act, cats, dev, pdu, back) in recs {
                t = if back { t.saturating_sub(gap) } else { t + gap };
                let rec = RawTrace {
                    magic: 0x6561_7407,
                    time: t,
                    sector: sector % (1 << 40),
                    bytes: bytes % (1 << 20),
                    action: act | (cats as u32) << 16,
                    device: dev,
                    pdu_len: pdu,
                    ..RawTrace::default()
                };
                out.extend_from_slice(&rec.encode(endian));
                out.resize(out.len() + pdu as usize, 0xab);
            }
            if let (Some((at, b)), false) = (corrupt, out.is_empty()) {
                let i = at % out.len();
                out[i] ^= b | 1;
            }
            if let (Some(at), false) = (cut, out.is_empty()) {
                out.truncate(at % out.len());
            }
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        all_parsers(&bytes);
    }

    #[test]
    fn token_soup(bytes in text()) {
        all_parsers(&bytes);
    }

    #[test]
    fn blktrace_records(bytes in binary(), other in binary()) {
        all_parsers(&bytes);
        for skip in [false, true] {
            let opts = ReadOptions {
                skip_bad_lines: skip,
                reorder_window_ns: 10_000,
                ..ReadOptions::default()
            };
            let inputs: Vec<(Arc<str>, Box<dyn std::io::BufRead + Send>)> = vec![
                ("a".into(), Box::new(Cursor::new(bytes.clone()))),
                ("b".into(), Box::new(Cursor::new(other.clone()))),
            ];
            let mut last = 0;
            let mut r = blktrace_from_readers(inputs, &opts);
            for rec in r.by_ref() {
                match rec {
                    Ok(rec) => { prop_assert!(rec.time_ns >= last); last = rec.time_ns; }
                    Err(_) => break,
                }
            }
            prop_assert!(r.next().is_none());
        }
    }

    #[test]
    fn remap_wrap_stays_inside_and_aligned(
        offset in any::<u64>(), len in 0u64..(1 << 40),
        capacity in 0u64..(1 << 50), align_bits in 0u32..20,
    ) {
        let align = 1u64 << align_bits;
        match remap(offset, len, capacity, RemapMode::Wrap { align }) {
            None => prop_assert!(capacity < align),
            Some((o, l)) => {
                prop_assert_eq!(o % align, 0);
                prop_assert!(o + l <= capacity);
                prop_assert_eq!(l, len.min(capacity / align * align));
                // Requests that already fit, aligned, are left alone.
                if offset % align == 0 && offset.checked_add(len).is_some_and(|e| e <= capacity / align * align) {
                    prop_assert_eq!((o, l), (offset, len));
                }
            }
        }
    }

    #[test]
    fn remap_reject_keeps_fitting_requests(offset in any::<u64>(), len in any::<u64>(), capacity in any::<u64>()) {
        let r = remap(offset, len, capacity, RemapMode::Reject);
        let fits = offset.checked_add(len).is_some_and(|e| e <= capacity) && (offset < capacity || len == 0);
        prop_assert_eq!(r, fits.then_some((offset, len)));
    }
}

/// Hands out at most `step` bytes per read, to move line and record
/// boundaries across buffer refills.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step).min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn outcome(
    r: Box<dyn std::io::BufRead + Send>,
    format: Format,
) -> Result<(Vec<String>, u64), String> {
    let opts = ReadOptions {
        skip_bad_lines: true,
        ..ReadOptions::default()
    };
    let mut r = open_reader(r, "x", Some(format), &opts).map_err(|e| e.to_string())?;
    let out = r.by_ref().map(|x| format!("{x:?}")).collect();
    Ok((out, r.skipped()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// How the input is split into reads changes nothing.
    #[test]
    fn read_boundaries_do_not_matter(
        name in prop::sample::select(vec![
            "sample.fio2", "sample.fio3", "sample.msr.csv", "sample.disksim",
            "sample.blkparse", "fixture-by-blkparse.txt",
        ]),
        step in 1usize..64,
        garbage in prop::option::of(("[ -~]{0,300}", any::<prop::sample::Index>())),
    ) {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
        let mut data = std::fs::read(path).unwrap();
        if let Some((g, at)) = garbage {
            let i = at.index(data.len());
            data.splice(i..i, g.into_bytes());
        }
        let format = detect(&std::fs::read(
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name),
        ).unwrap()).unwrap();
        let whole = outcome(Box::new(Cursor::new(data.clone())), format);
        let trickled = outcome(
            Box::new(std::io::BufReader::with_capacity(1, Trickle { data, pos: 0, step })),
            format,
        );
        prop_assert_eq!(whole, trickled);
    }
}
