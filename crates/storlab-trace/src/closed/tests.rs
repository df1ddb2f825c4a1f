//! Tests of closed-loop traces (`super`): the format, the writer, the inference.

use super::*;

fn served(stream: u32, op: TraceOp, arrival: u64, complete: u64, reply: u64) -> Served {
    Served {
        stream,
        op,
        offset: 4096,
        len: if op == TraceOp::Flush { 0 } else { 4096 },
        fua: false,
        arrival_ns: arrival,
        complete_ns: complete,
        reply_ns: reply,
    }
}

fn infer(reqs: &[Served]) -> Vec<ClosedRecord> {
    // replies in reply order
    let mut v = reqs.to_vec();
    v.sort_by_key(|s| s.reply_ns);
    let mut inf = Inference::new(1_000_000);
    let mut out = Vec::new();
    for s in v {
        inf.push(s, &mut out);
    }
    inf.finish(&mut out);
    out
}

#[test]
fn a_chain_with_think_time_is_one_thread_each_after_the_previous() {
    // QD1: arrive at 1000 + i*100, device takes 30, reply 5 later
    let reqs: Vec<Served> = (0..5)
        .map(|i| {
            let a = 1000 + i * 100;
            served(0, TraceOp::Read, a, a + 30, a + 35)
        })
        .collect();
    let out = infer(&reqs);
    assert_eq!(out.len(), 5);
    for (i, r) in out.iter().enumerate() {
        assert_eq!(r.thread, 0);
        assert_eq!(r.rank, i as u64);
        assert_eq!(r.after, i as u64);
        // the server's clock, not moved
        assert_eq!(r.arrival_ns, 1000 + i as u64 * 100);
        if i > 0 {
            // arrival minus the previous completion: 100 - 30
            assert_eq!(r.think_ns, 70);
        } else {
            assert_eq!(r.think_ns, 1000);
        }
    }
}

#[test]
fn concurrent_requests_take_slots_and_depend_only_on_completed_ones() {
    // two in flight at once, completing out of order
    let reqs = vec![
        served(0, TraceOp::Write, 0, 50, 50),
        served(0, TraceOp::Write, 10, 30, 30),
        // arrives after the second's reply, before the first's
        served(0, TraceOp::Read, 40, 60, 60),
        // a flush after everything: waits for all three
        served(0, TraceOp::Flush, 70, 90, 90),
    ];
    let out = infer(&reqs);
    let by_arrival: Vec<_> = out.iter().map(|r| (r.thread, r.rank, r.after)).collect();
    assert_eq!(by_arrival, vec![(0, 1, 0), (1, 0, 0), (1, 2, 1), (1, 3, 3)]);
    // the read's think time is from the second write's completion (30)
    assert_eq!(out[2].think_ns, 10);
    // the flush's from the latest completion among the three (60)
    assert_eq!(out[3].think_ns, 10);
}

#[test]
fn streams_are_independent_and_written_text_reads_back() {
    let reqs = vec![
        served(0, TraceOp::Read, 0, 10, 10),
        served(1, TraceOp::Read, 5, 15, 15),
        served(0, TraceOp::Read, 20, 30, 30),
        served(1, TraceOp::Read, 25, 35, 35),
    ];
    let out = infer(&reqs);
    let mut w = ClosedWriter::new(Vec::new(), &["test"]).unwrap();
    for r in &out {
        w.write(r).unwrap();
    }
    let text = w.finish().unwrap();
    let t = load_from(&text[..], "t").unwrap();
    assert_eq!(t.streams.len(), 2);
    assert_eq!(t.requests(), 4);
    assert_eq!(t.streams[1].1[1].after, 1);
    assert_eq!(t.streams[1].1[1].think_ns, 25 - 15);
    assert_eq!(t.recorded_span_ns(), 35);
}

#[test]
fn errors_name_the_file_and_line() {
    let bad = format!("{MAGIC} 1\n{COLUMNS}\n# c\n0 0 0 0 read 0 4096 0 0 10 10 0\n0 0 1 2 read 0 4096 0 20 30 30 10\n");
    let e = load_from(bad.as_bytes(), "x.trace")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("x.trace:5:"), "{e}");
    assert!(e.contains("after 2 > rank 1"), "{e}");
    let e = load_from(&b"storlab-closed 2\n"[..], "y")
        .unwrap_err()
        .to_string();
    assert!(e.contains("y:1:") && e.contains("version 2"), "{e}");
    let e = load_from(&b"0 1 2\n"[..], "z").unwrap_err().to_string();
    assert!(e.contains("not a closed-loop trace"), "{e}");
    let dup =
        format!("{MAGIC} 1\n{COLUMNS}\n0 0 0 0 read 0 1 0 0 1 1 0\n0 0 0 0 read 0 1 0 2 3 3 2\n");
    let e = load_from(dup.as_bytes(), "d").unwrap_err().to_string();
    assert!(e.contains("d:4") && e.contains("appears twice"), "{e}");
}
