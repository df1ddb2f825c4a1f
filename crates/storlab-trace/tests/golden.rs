//! Small hand-written traces of each text format, with the records we
//! expect written out by hand from reading the files.

use std::path::PathBuf;
use storlab_trace::{open, BlkEvent, Format, ReadOptions, TraceOp, TraceRecord};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn read(name: &str, format: Option<Format>, opts: &ReadOptions) -> (Format, Vec<TraceRecord>) {
    let r = open(&data(name), format, opts).unwrap();
    let f = r.format();
    (f, r.collect::<Result<Vec<_>, _>>().unwrap())
}

fn rec(
    time_ns: u64,
    op: TraceOp,
    offset: u64,
    len: u64,
    device: u32,
    lat: Option<u64>,
    stream: u32,
) -> TraceRecord {
    TraceRecord {
        time_ns,
        op,
        offset,
        len,
        device,
        recorded_latency_ns: lat,
        stream,
    }
}

use TraceOp::*;

#[test]
fn fio2_sample() {
    let (f, got) = read("sample.fio2", None, &ReadOptions::default());
    assert_eq!(f, Format::Fio2);
    assert_eq!(
        got,
        vec![
            rec(0, Write, 0, 4096, 0, None, 0),
            rec(0, Read, 4096, 8192, 0, None, 0),
            // `wait 500` (µs) moves time on; `wait 50` is below fio's 100 µs
            // floor and is discarded.
            rec(500_000, Trim, 1_048_576, 65536, 1, None, 0),
            rec(500_000, Flush, 0, 0, 0, None, 0),
            rec(500_000, Flush, 0, 0, 1, None, 0),
        ]
    );
}

#[test]
fn fio3_sample() {
    let (f, got) = read("sample.fio3", None, &ReadOptions::default());
    assert_eq!(f, Format::Fio3);
    // Timestamps are µs; the first request (118) is time 0.
    assert_eq!(
        got,
        vec![
            rec(0, Read, 4096, 4096, 0, None, 0),
            rec(187_000, Write, 0, 8192, 0, None, 0),
            rec(187_000, Trim, 65536, 131_072, 0, None, 0),
            rec(1_382_000, Flush, 0, 0, 0, None, 0),
        ]
    );
}

#[test]
fn forcing_iolog_follows_the_header() {
    let (f, got) = read(
        "sample.fio2",
        Some("iolog".parse().unwrap()),
        &ReadOptions::default(),
    );
    assert_eq!(f, Format::Fio2);
    assert_eq!(got.len(), 5);
}

#[test]
fn msr_sample() {
    let (f, got) = read("sample.msr.csv", None, &ReadOptions::default());
    assert_eq!(f, Format::Msr);
    // Filetime ticks are 100 ns: 65324 ticks after the first = 6.5324 ms.
    assert_eq!(
        got,
        vec![
            rec(0, Read, 3_840_000, 4096, 1, Some(1_172_000), 0),
            rec(6_532_400, Write, 7_834_624, 8192, 1, Some(4_516_000), 0),
            rec(7_837_100, Read, 0, 512, 0, Some(10_000), 0),
            rec(
                1_332_052_600,
                Write,
                3_840_000,
                65536,
                1,
                Some(12_005_700),
                0
            ),
        ]
    );
}

#[test]
fn msr_disk_selection_keeps_original_times_without_rebase() {
    let opts = ReadOptions {
        disk: Some(0),
        rebase_time: false,
        ..ReadOptions::default()
    };
    let (_, got) = read("sample.msr.csv", None, &opts);
    assert_eq!(got, vec![rec(7_837_100, Read, 0, 512, 0, Some(10_000), 0)]);
    let opts = ReadOptions {
        disk: Some(0),
        ..ReadOptions::default()
    };
    let (_, got) = read("sample.msr.csv", None, &opts);
    assert_eq!(got[0].time_ns, 0);
}

#[test]
fn disksim_sample() {
    let (f, got) = read("sample.disksim", None, &ReadOptions::default());
    assert_eq!(f, Format::Disksim);
    // Times are ms; blocks and sizes 512-byte sectors; flags hex, bit 0 = read.
    assert_eq!(
        got,
        vec![
            rec(0, Read, 524_288, 4096, 0, None, 0),
            rec(250_000, Write, 1_048_576, 8192, 0, None, 0),
            rec(1_500_000, Read, 0, 512, 1, None, 0),
            rec(12_000_001, Read, 51_200, 4096, 0, None, 0),
        ]
    );
}

const SDA: u32 = 8 << 20;
const SDB: u32 = (8 << 20) | 16;

#[test]
fn blkparse_sample_queue_events() {
    let (f, got) = read("sample.blkparse", None, &ReadOptions::default());
    assert_eq!(f, Format::Blkparse);
    assert_eq!(
        got,
        vec![
            // Q at 0, C at 193910.
            rec(0, Write, 1_749_528_576, 4096, SDA, Some(193_910), 4162),
            // Two bios back-merged into one request (D 2048 + 512); its
            // completion at 410 µs completes both.
            rec(100_000, Read, 1_048_576, 131_072, SDA, Some(310_000), 5001),
            rec(101_000, Read, 1_179_648, 131_072, SDA, Some(309_000), 5001),
            // Empty flush on 8,16, completed by `C FWS 0 [0]`.
            rec(200_000, Flush, 0, 0, SDB, Some(220_000), 77),
            // Discard.
            rec(
                300_000,
                Trim,
                2_097_152,
                1_048_576,
                SDA,
                Some(9_000_000),
                900
            ),
            // Never completed.
            rec(10_000_000, Read, 511_488, 4096, SDA, None, 1234),
        ]
    );
}

#[test]
fn blkparse_sample_issue_events() {
    let opts = ReadOptions {
        blk_event: BlkEvent::Issue,
        rebase_time: false,
        ..ReadOptions::default()
    };
    let (_, got) = read("sample.blkparse", None, &opts);
    assert_eq!(
        got,
        vec![
            rec(12_040, Write, 1_749_528_576, 4096, SDA, Some(181_870), 4162),
            rec(110_000, Read, 1_048_576, 262_144, SDA, Some(300_000), 5001),
            rec(201_000, Flush, 0, 0, SDB, Some(219_000), 77),
        ]
    );
    // Rebased (the default), the first issue is at 0.
    let opts = ReadOptions {
        blk_event: BlkEvent::Issue,
        ..ReadOptions::default()
    };
    let (_, got) = read("sample.blkparse", None, &opts);
    assert_eq!(
        got.iter().map(|r| r.time_ns).collect::<Vec<_>>(),
        vec![0, 97_960, 188_960]
    );
}

#[test]
fn filters_by_op_and_window() {
    let opts = ReadOptions {
        ops: "read,trim".parse().unwrap(),
        start_ns: Some(100_500),
        end_ns: Some(10_000_000),
        rebase_time: false,
        ..ReadOptions::default()
    };
    let r = open(&data("sample.blkparse"), None, &opts).unwrap();
    let mut r = r;
    let got: Vec<_> = r.by_ref().map(|x| x.unwrap()).collect();
    assert_eq!(
        got.iter().map(|r| (r.time_ns, r.op)).collect::<Vec<_>>(),
        vec![(101_000, Read), (300_000, Trim)]
    );
    // Left out: the write (op), the first read (before the window), the
    // flush (op); the read at exactly end_ns stops reading.
    assert_eq!(r.filtered(), 3);
    assert_eq!(r.skipped(), 0);
}
