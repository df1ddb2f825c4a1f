//! The pieces of replay on their own: mode strings, the trace source's
//! issue times per mode, and the pairing of recorded with simulated
//! latencies when requests complete out of order.

use std::io::Cursor;

use storlab_model::Op;
use storlab_sim::engine::IoSource;
use storlab_sim::replay::{ReplayMode, TraceSource, OPEN_LOOP_IODEPTH};
use storlab_trace::{open_reader, Format, ReadOptions, TraceReader};

#[test]
fn mode_strings() {
    assert_eq!("timed".parse::<ReplayMode>().unwrap(), ReplayMode::Timed);
    assert_eq!(" AFAP ".parse::<ReplayMode>().unwrap(), ReplayMode::Afap);
    assert_eq!(
        "scaled:2.0".parse::<ReplayMode>().unwrap(),
        ReplayMode::Scaled(2.0)
    );
    assert_eq!(
        "scaled:0.25".parse::<ReplayMode>().unwrap(),
        ReplayMode::Scaled(0.25)
    );
    for m in [
        ReplayMode::Timed,
        ReplayMode::Afap,
        ReplayMode::Scaled(2.0),
        ReplayMode::Scaled(1.5),
    ] {
        assert_eq!(
            m.to_string().parse::<ReplayMode>().unwrap(),
            m,
            "{m} round-trips"
        );
    }
    for (bad, says) in [
        (
            "fast",
            "replay mode `fast`: expected timed, afap or scaled:<factor>",
        ),
        ("scaled", "give a speed-up factor, e.g. scaled:2.0"),
        ("scaled:", "must be a positive number"),
        ("scaled:0", "must be a positive number"),
        ("scaled:-2", "must be a positive number"),
        ("scaled:abc", "must be a positive number"),
        ("scaled:inf", "must be a positive number"),
        ("scaled:NaN", "must be a positive number"),
    ] {
        let e = bad
            .parse::<ReplayMode>()
            .err()
            .unwrap_or_else(|| panic!("`{bad}` must not parse"));
        assert!(e.to_string().contains(says), "`{bad}`: {e}");
    }
}

#[test]
fn depth_per_mode() {
    assert_eq!(ReplayMode::Afap.iodepth(7), 7);
    assert_eq!(ReplayMode::Timed.iodepth(7), OPEN_LOOP_IODEPTH);
    assert_eq!(ReplayMode::Scaled(3.0).iodepth(7), OPEN_LOOP_IODEPTH);
}

/// Four MSR requests at 0, 1, 3 and 7 µs: read (10 µs recorded), write
/// (20 µs), read (30 µs), write (40 µs).
const MSR: &str = "\
128166372000000000,h,0,Read,0,4096,100
128166372000000010,h,0,Write,4096,4096,200
128166372000000030,h,0,Read,8192,4096,300
128166372000000070,h,0,Write,0,512,400
";

fn reader(text: &str, format: Format) -> TraceReader {
    open_reader(
        Box::new(Cursor::new(text.as_bytes().to_vec())),
        "mem",
        Some(format),
        &ReadOptions::default(),
    )
    .unwrap()
}

fn issue_times(mode: ReplayMode) -> Vec<Option<u64>> {
    let (mut s, _) = TraceSource::new(reader(MSR, Format::Msr), 1 << 30, mode, 4096).unwrap();
    std::iter::from_fn(|| s.next_io()).map(|io| io.at).collect()
}

#[test]
fn issue_times_per_mode() {
    assert_eq!(
        issue_times(ReplayMode::Timed),
        [Some(0), Some(1000), Some(3000), Some(7000)]
    );
    assert_eq!(
        issue_times(ReplayMode::Scaled(2.0)),
        [Some(0), Some(500), Some(1500), Some(3500)]
    );
    assert_eq!(
        issue_times(ReplayMode::Scaled(0.5)),
        [Some(0), Some(2000), Some(6000), Some(14000)]
    );
    assert_eq!(issue_times(ReplayMode::Afap), [None; 4]);
}

#[test]
fn requests_are_the_records() {
    let (mut s, tally) =
        TraceSource::new(reader(MSR, Format::Msr), 1 << 30, ReplayMode::Afap, 4096).unwrap();
    let ios: Vec<_> = std::iter::from_fn(|| s.next_io())
        .map(|io| (io.op, io.offset, io.len, io.fua))
        .collect();
    assert_eq!(
        ios,
        [
            (Op::Read, 0, 4096, false),
            (Op::Write, 4096, 4096, false),
            (Op::Read, 8192, 4096, false),
            (Op::Write, 0, 512, false)
        ]
    );
    assert_eq!(tally.borrow().requests, 4);
    assert!(s.next_io().is_none(), "stays ended");
}

#[test]
fn out_of_order_completions_pair_with_their_own_request() {
    let (mut s, tally) =
        TraceSource::new(reader(MSR, Format::Msr), 1 << 30, ReplayMode::Timed, 4096).unwrap();
    for _ in 0..4 {
        s.next_io().unwrap();
    }
    // request 3 (write, 40 µs) finishes first, then 0 (read, 10 µs), 2
    // (read, 30 µs) and 1 (write, 20 µs)
    s.completed(3, 4_000);
    s.completed(0, 1_000);
    s.completed(2, 3_000);
    s.completed(1, 2_000);
    let t = tally.borrow();
    let read = &t.by_op[0];
    let write = &t.by_op[1];
    assert_eq!(
        (
            read.recorded.count(),
            read.recorded.min(),
            read.recorded.max()
        ),
        (2, 10_000, 30_000)
    );
    assert_eq!((read.simulated.min(), read.simulated.max()), (1_000, 3_000));
    assert_eq!(
        (write.recorded.min(), write.recorded.max()),
        (20_000, 40_000)
    );
    assert_eq!(
        (write.simulated.min(), write.simulated.max()),
        (2_000, 4_000)
    );
    assert_eq!(t.all().simulated.count(), 4);
    let j = t.recorded_json().unwrap();
    assert_eq!(j["requests"], 4);
    assert_eq!(j["simulated_over_recorded"]["mean"], 0.1);
}

#[test]
fn zero_length_requests_and_flushes() {
    // fio3: a zero-length read is not issued; a sync is a flush with no
    // address
    let text = "fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n1 /dev/x read 4096 0\n2 /dev/x sync 0 0\n3 /dev/x read 0 512\n";
    let (mut s, tally) =
        TraceSource::new(reader(text, Format::Fio3), 1 << 30, ReplayMode::Timed, 512).unwrap();
    let ios: Vec<_> = std::iter::from_fn(|| s.next_io())
        .map(|io| (io.op, io.offset, io.len))
        .collect();
    assert_eq!(ios, [(Op::Flush, 0, 0), (Op::Read, 0, 512)]);
    let t = tally.borrow();
    assert_eq!((t.requests, t.zero_length), (2, 1));
}

#[test]
fn a_reader_error_ends_the_source_and_is_kept() {
    let text = "128166372000000000,h,0,Read,0,4096,100\nnonsense\n128166372000000070,h,0,Write,0,512,400\n";
    let (mut s, tally) =
        TraceSource::new(reader(text, Format::Msr), 1 << 30, ReplayMode::Afap, 4096).unwrap();
    assert!(s.next_io().is_some());
    assert!(s.next_io().is_none(), "the error ends the source");
    let t = tally.borrow();
    let e = t.error.as_ref().expect("the error is kept");
    assert!(e.to_string().starts_with("mem:2:"), "{e}");
    assert_eq!(t.requests, 1);
}
