//! Properties of closed-loop traces: the reader never panics, and whatever
//! a server serves, in whatever order its replies go out and however small
//! the reorder window, the inferred trace loads, and each request's
//! `after` is exactly the number of its stream's replies sent before it
//! arrived.

use proptest::prelude::*;
use storlab_trace::closed::{load_from, ClosedWriter, Inference, Served, COLUMNS, MAGIC};
use storlab_trace::TraceOp;

proptest! {
    #[test]
    fn reader_never_panics(body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut text = format!("{MAGIC} 1\n{COLUMNS}\n").into_bytes();
        text.extend_from_slice(&body);
        let _ = load_from(&text[..], "p");
        let _ = load_from(&body[..], "p");
    }

    #[test]
    fn inferred_traces_load_and_count_exactly(
        reqs in proptest::collection::vec((0u32..3, 0u64..5_000, 1u64..3_000, 0u64..500), 1..120),
        window in prop_oneof![Just(0u64), Just(1_000u64), Just(1_000_000_000u64)],
    ) {
        // per stream, arrivals in order; each served with some latency and
        // some lateness
        let mut t = [0u64; 3];
        let mut served: Vec<Served> = reqs
            .iter()
            .map(|&(stream, gap, lat, late)| {
                t[stream as usize] += gap;
                let a = t[stream as usize];
                Served {
                    stream,
                    op: if gap % 5 == 0 { TraceOp::Flush } else { TraceOp::Write },
                    offset: gap * 4096,
                    len: if gap % 5 == 0 { 0 } else { 4096 },
                    fua: gap % 7 == 0,
                    arrival_ns: a,
                    complete_ns: a + lat,
                    reply_ns: a + lat + late,
                }
            })
            .collect();
        // the reactor sends replies in time order
        served.sort_by_key(|s| s.reply_ns);
        let mut inf = Inference::new(window);
        let mut out = Vec::new();
        for s in &served {
            inf.push(*s, &mut out);
        }
        inf.finish(&mut out);
        prop_assert_eq!(out.len(), served.len());
        prop_assert_eq!(inf.stats().inexact, 0);
        let mut w = ClosedWriter::new(Vec::new(), &[]).unwrap();
        for r in &out {
            w.write(r).unwrap();
        }
        let text = w.finish().unwrap();
        let trace = load_from(&text[..], "p").map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(trace.requests(), served.len() as u64);
        let base = served.iter().map(|s| s.arrival_ns).min().unwrap();
        for (stream, recs) in &trace.streams {
            for r in recs {
                let a = r.arrival_ns + base;
                let expect = served
                    .iter()
                    .filter(|s| s.stream == *stream && s.reply_ns.max(s.complete_ns) < a)
                    .count() as u64;
                prop_assert_eq!(r.after, expect);
            }
        }
    }
}
