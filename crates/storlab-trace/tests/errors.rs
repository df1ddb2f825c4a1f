//! Bad input: every problem is reported with the file and the line, or
//! skipped and counted when asked to.

use std::io::Cursor;
use std::path::Path;
use storlab_trace::{open, open_reader, Format, ReadOptions, TraceError, TraceRecord};

fn read_str(
    text: &str,
    format: Option<Format>,
    skip: bool,
) -> (Result<Vec<TraceRecord>, TraceError>, u64) {
    let opts = ReadOptions {
        skip_bad_lines: skip,
        ..ReadOptions::default()
    };
    let mut r = match open_reader(
        Box::new(Cursor::new(text.as_bytes().to_vec())),
        "input.txt",
        format,
        &opts,
    ) {
        Ok(r) => r,
        Err(e) => return (Err(e), 0),
    };
    let got = r.by_ref().collect::<Result<Vec<_>, _>>();
    (got, r.skipped())
}

/// Asserts the text fails at `line` with a message containing `needle`,
/// and that with skipping it yields `good` records and skips `bad` lines.
fn check(text: &str, format: Format, line: u64, needle: &str, good: usize, bad: u64) {
    let err = read_str(text, Some(format), false).0.unwrap_err();
    match &err {
        TraceError::Line { path, line: l, .. } => {
            assert_eq!(path, "input.txt");
            assert_eq!(*l, line, "{err}");
        }
        other => panic!("expected a line error, got {other}"),
    }
    let msg = err.to_string();
    assert!(msg.starts_with(&format!("input.txt:{line}: ")), "{msg}");
    assert!(msg.contains(needle), "`{needle}` not in: {msg}");
    let (got, skipped) = read_str(text, Some(format), true);
    let got = got.unwrap();
    assert_eq!((got.len(), skipped), (good, bad), "{format} with skipping");
}

#[test]
fn msr_garbage_and_time_going_back() {
    let text = "128166372003061629,hm,1,Read,3840000,4096,11720\n\
                this is not a record\n\
                128166372003061630,hm,1,Flip,0,4096,1\n\
                128166372003061600,hm,1,Write,0,4096,1\n\
                128166372003061700,hm,1,Write,0,4096,1\n";
    check(text, Format::Msr, 2, "expected 7 fields", 2, 3);
    let text = "128166372003061629,hm,1,Read,3840000,4096,11720\n\
                128166372003061600,hm,1,Write,0,4096,1\n";
    check(text, Format::Msr, 2, "timestamp goes backwards", 1, 1);
    check("-5,hm,1,Read,0,1,1\n", Format::Msr, 1, "negative", 0, 1);
    check(
        "5,hm,1,Read,0,1,1,extra\n",
        Format::Msr,
        1,
        "7 fields",
        0,
        1,
    );
    check("5,hm,1,Read,0,1,\n", Format::Msr, 1, "ResponseTime", 0, 1);
    check("5,hm,1,Read,0,1\n", Format::Msr, 1, "7 fields", 0, 1);
}

#[test]
fn disksim_problems() {
    check(
        "1.0 0 8 8 1\n0.5 0 8 8 1\n",
        Format::Disksim,
        2,
        "backwards",
        1,
        1,
    );
    check("-1.0 0 8 8 1\n", Format::Disksim, 1, "negative", 0, 1);
    check("1.0 0 8 8\n", Format::Disksim, 1, "5 fields", 0, 1);
    check("1.0 0 8 8 zz\n", Format::Disksim, 1, "flags", 0, 1);
    check(
        "1.0 0 99999999999999999999 8 1\n",
        Format::Disksim,
        1,
        "block",
        0,
        1,
    );
    check(
        "1.0 0 36028797018963968 8 1\n",
        Format::Disksim,
        1,
        "too large",
        0,
        1,
    );
}

#[test]
fn fio_problems() {
    let v3 = "fio version 3 iolog\n\
              0 f add\n\
              10 f read 0 4096\n\
              5 f read 0 4096\n\
              20 f wait 100 0\n\
              30 f frobnicate 0 1\n\
              40 f read 0\n\
              50 f write 0 4096\n";
    check(v3, Format::Fio3, 4, "backwards", 2, 4);
    let v2 = "fio version 2 iolog\nf add\nf read x 4096\nf read 0 4096\n";
    check(v2, Format::Fio2, 3, "bad offset", 1, 1);
    check(
        "fio version 3 iolog\nfio version 3 iolog\n",
        Format::Fio3,
        2,
        "repeated header",
        0,
        1,
    );
    check(
        "fio version 3 iolog\n-3 f read 0 1\n",
        Format::Fio3,
        2,
        "negative",
        0,
        1,
    );
    // A missing header cannot be skipped: without it the version is unknown.
    for skip in [false, true] {
        let err = read_str("f read 0 4096\n", Some(Format::Fio2), skip)
            .0
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("input.txt:1: expected the header"), "{err}");
    }
    let err = read_str("", Some(Format::Fio3), false)
        .0
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty"), "{err}");
}

#[test]
fn blkparse_problems() {
    let good = "  8,0    3        1     0.000000000  4162  Q   W 8 + 8 [x]\n";
    check(
        &format!("{good}  8,0    3        2     0.000000000  4162  Q   Z 8 + 8 [x]\n"),
        Format::Blkparse,
        2,
        "rwbs",
        1,
        1,
    );
    check(
        &format!("  8,0    3        2     1.000000000  4162  Q   W 8 + 8 [x]\n{good}"),
        Format::Blkparse,
        2,
        "backwards",
        1,
        1,
    );
    check(
        &format!("{good}hello there\n{good}"),
        Format::Blkparse,
        2,
        "not a blkparse event line",
        2,
        1,
    );
    check(
        "  8,0    3        1     0.0000000001  4162  Q   W 8 + 8 [x]\n",
        Format::Blkparse,
        1,
        "bad time",
        0,
        1,
    );
    check(
        "  8,0    3        1     0.000000001  4162  Q   W 8 + [x]\n",
        Format::Blkparse,
        1,
        "sector count",
        0,
        1,
    );
    check(
        "  9999,0    3        1     0.000000001  4162  Q   W 8 + 1 [x]\n",
        Format::Blkparse,
        1,
        "not a blkparse event line",
        0,
        1,
    );
}

#[test]
fn wrong_format_forced_fails_on_the_first_line() {
    let msr = "128166372003061629,hm,1,Read,3840000,4096,11720\n";
    for f in [Format::Disksim, Format::Blkparse] {
        let err = read_str(msr, Some(f), false).0.unwrap_err().to_string();
        assert!(err.starts_with("input.txt:1: "), "{f}: {err}");
    }
    let err = read_str(msr, Some(Format::Blktrace), false)
        .0
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("input.txt: byte offset 0: not a blktrace record"),
        "{err}"
    );
}

#[test]
fn undetectable_input_and_missing_files() {
    let err = read_str("what is this\n", None, false).0.unwrap_err();
    assert!(matches!(err, TraceError::UnknownFormat { .. }));
    assert!(err.to_string().contains("input.txt"), "{err}");
    let err = read_str("", None, false).0.unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let err = open(
        Path::new("/nonexistent/trace.csv"),
        None,
        &ReadOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, TraceError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/trace.csv"), "{err}");
    let err = "csv".parse::<Format>().unwrap_err().to_string();
    assert!(err.contains("unknown trace format `csv`"), "{err}");
}

#[test]
fn overlong_lines_are_bad_lines_not_memory() {
    let long = "1".repeat(100_000);
    let text = format!("0.0 0 8 8 1\n{long}\n1.0 0 8 8 1\n");
    check(&text, Format::Disksim, 2, "too long", 2, 1);
}

#[test]
fn reader_stops_after_an_error() {
    let opts = ReadOptions::default();
    let text = "0.0 0 8 8 1\nbad\n1.0 0 8 8 1\n";
    let mut r = open_reader(
        Box::new(Cursor::new(text.as_bytes().to_vec())),
        "x",
        Some(Format::Disksim),
        &opts,
    )
    .unwrap();
    assert!(r.next().unwrap().is_ok());
    assert!(r.next().unwrap().is_err());
    assert!(r.next().is_none());
}

/// A request whose end does not fit in 64 bits is a bad line in every
/// format that gives byte offsets and lengths (found by the proptest in
/// `arbitrary.rs`: fio's iolog took one).
#[test]
fn requests_ending_past_2_to_the_64_are_bad_lines() {
    let max = u64::MAX;
    check(
        &format!("fio version 3 iolog\n0 d add\n0 d open\n1 d read 0 4096\n2 d read {max} 1\n"),
        Format::Fio3,
        5,
        "beyond 2^64",
        1,
        1,
    );
    check(
        &format!(
            "128166372003061629,hm,1,Read,0,4096,1\n128166372003061630,hm,1,Read,{max},4096,1\n"
        ),
        Format::Msr,
        2,
        "beyond 2^64",
        1,
        1,
    );
}
