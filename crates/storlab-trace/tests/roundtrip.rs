//! Writers and readers agree: what a writer writes, the reader of the same
//! format reads back (in the fields the format keeps); the same requests
//! written in every format read back the same; `convert` and `stats` on
//! known input.

use proptest::prelude::*;
use std::io::Cursor;
use storlab_trace::{
    convert, make_dev, open_reader, stats, writer, ConvertOptions, Format, OpSet, ReadOptions,
    TraceOp, TraceRecord, WriteOptions, WriteStats,
};

fn write_all(format: Format, recs: &[TraceRecord], opts: &WriteOptions) -> (Vec<u8>, WriteStats) {
    let mut out = Vec::new();
    let stats = {
        let mut w = writer(format, &mut out, opts);
        for r in recs {
            w.record(r).unwrap();
        }
        w.finish().unwrap();
        w.stats()
    };
    (out, stats)
}

fn read_all(format: Option<Format>, bytes: Vec<u8>) -> (Format, Vec<TraceRecord>) {
    let r = open_reader(
        Box::new(Cursor::new(bytes)),
        "mem",
        format,
        &ReadOptions::default(),
    )
    .unwrap();
    let f = r.format();
    (f, r.collect::<Result<Vec<_>, _>>().unwrap())
}

fn rebased(recs: &[TraceRecord]) -> Vec<TraceRecord> {
    let t0 = recs.first().map_or(0, |r| r.time_ns);
    recs.iter()
        .map(|r| TraceRecord {
            time_ns: r.time_ns - t0,
            ..*r
        })
        .collect()
}

/// Arrival gaps, ops, sizes, devices, latencies, pids; addresses are laid
/// out so that no two requests overlap (completion matching is then exact).
fn requests(
    ops: &'static [TraceOp],
    time_unit: u64,
    align: u64,
) -> impl Strategy<Value = Vec<TraceRecord>> {
    prop::collection::vec(
        (
            0u64..5_000_000,
            prop::sample::select(ops),
            0u64..(1 << 20),
            0u64..(1 << 20),
            0u32..3,
            prop::option::of(0u64..50_000_000),
            any::<u32>(),
        ),
        1..40,
    )
    .prop_map(move |v| {
        let mut t = 1_000_000_000u64;
        v.into_iter()
            .enumerate()
            .map(|(i, (gap, op, off, len, dev, lat, pid))| {
                t += gap / time_unit * time_unit;
                let flush = op == TraceOp::Flush;
                TraceRecord {
                    time_ns: t,
                    op,
                    offset: if flush {
                        0
                    } else {
                        ((i as u64) << 32) | (off / align * align)
                    },
                    len: if flush { 0 } else { len / align * align },
                    device: dev,
                    recorded_latency_ns: lat.map(|l| l / time_unit * time_unit),
                    stream: pid,
                }
            })
            .collect()
    })
}

const ALL: &[TraceOp] = &[TraceOp::Read, TraceOp::Write, TraceOp::Trim, TraceOp::Flush];
const RW: &[TraceOp] = &[TraceOp::Read, TraceOp::Write];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn fio3_round_trip(recs in requests(ALL, 1000, 1)) {
        let recs: Vec<_> = recs.iter().map(|r| TraceRecord {
            recorded_latency_ns: None, stream: 0, device: 0, ..*r }).collect();
        let (bytes, st) = write_all(Format::Fio3, &recs, &WriteOptions::default());
        prop_assert_eq!(st, WriteStats { written: recs.len() as u64, dropped: 0, inexact: 0 });
        let (f, got) = read_all(None, bytes);
        prop_assert_eq!(f, Format::Fio3);
        prop_assert_eq!(got, rebased(&recs));
    }

    #[test]
    fn fio2_round_trip_keeps_order_not_time(recs in requests(ALL, 1, 1)) {
        let recs: Vec<_> = recs.iter().map(|r| TraceRecord {
            recorded_latency_ns: None, stream: 0, ..*r }).collect();
        let (bytes, _) = write_all(Format::Fio2, &recs, &WriteOptions::default());
        let (_, got) = read_all(Some(Format::Fio2), bytes);
        // Devices are numbered by first appearance in fio logs.
        let mut seen = Vec::new();
        let expected: Vec<_> = recs.iter().map(|r| {
            if !seen.contains(&r.device) { seen.push(r.device); }
            let dev = seen.iter().position(|d| *d == r.device).unwrap() as u32;
            TraceRecord { time_ns: 0, device: dev, ..*r }
        }).collect();
        prop_assert_eq!(got, expected);
    }

    #[test]
    fn blkparse_round_trip(recs in requests(ALL, 1, 512)) {
        // Flush completions match first-in first-out per device, so keep
        // their latencies out of a test with random latencies.
        let recs: Vec<_> = recs.iter().map(|r| TraceRecord {
            device: make_dev(8 + r.device, 16 * r.device).unwrap(),
            recorded_latency_ns: if r.op == TraceOp::Flush { None } else { r.recorded_latency_ns },
            ..*r }).collect();
        for format in [Format::Blkparse, Format::Blktrace] {
            let (bytes, st) = write_all(format, &recs, &WriteOptions::default());
            prop_assert_eq!(st.written, recs.len() as u64);
            prop_assert_eq!(st.inexact, 0);
            let (f, got) = read_all(None, bytes);
            prop_assert_eq!(f, format);
            prop_assert_eq!(&got, &rebased(&recs), "{}", format);
        }
    }

    #[test]
    fn msr_round_trip(recs in requests(RW, 100, 1)) {
        let recs: Vec<_> = recs.iter().map(|r| TraceRecord {
            stream: 0,
            recorded_latency_ns: Some(r.recorded_latency_ns.unwrap_or(0)),
            ..*r }).collect();
        let (bytes, _) = write_all(Format::Msr, &recs, &WriteOptions::default());
        let (f, got) = read_all(None, bytes);
        prop_assert_eq!(f, Format::Msr);
        prop_assert_eq!(got, rebased(&recs));
    }

    #[test]
    fn disksim_round_trip(recs in requests(RW, 1, 512)) {
        let recs: Vec<_> = recs.iter().map(|r| TraceRecord {
            stream: 0, recorded_latency_ns: None, ..*r }).collect();
        let (bytes, _) = write_all(Format::Disksim, &recs, &WriteOptions::default());
        let (f, got) = read_all(None, bytes);
        prop_assert_eq!(f, Format::Disksim);
        prop_assert_eq!(got, rebased(&recs));
    }

    /// Records handed over out of order within the window come out sorted
    /// (ties kept in the order given).
    #[test]
    fn reorder_window_sorts(recs in requests(ALL, 1000, 512), seed in any::<u64>()) {
        let recs: Vec<_> = recs.iter().map(|r| TraceRecord {
            recorded_latency_ns: None, stream: 0, device: 0, ..*r }).collect();
        // Shuffle within blocks of 4 (bounded disorder).
        let mut shuffled = recs.clone();
        let mut s = seed;
        for chunk in shuffled.chunks_mut(4) {
            for i in (1..chunk.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                chunk.swap(i, (s >> 33) as usize % (i + 1));
            }
        }
        let span = recs.last().unwrap().time_ns - recs[0].time_ns;
        let opts = WriteOptions { reorder_window_ns: span + 1, ..WriteOptions::default() };
        let (bytes, _) = write_all(Format::Fio3, &shuffled, &opts);
        let (_, got) = read_all(None, bytes);
        let mut sorted = shuffled.clone();
        sorted.sort_by_key(|r| r.time_ns);
        prop_assert_eq!(got, rebased(&sorted));
    }
}

/// One request sequence, every format: each reads back the fields it keeps.
#[test]
fn every_format_agrees_on_the_same_requests() {
    let recs: Vec<TraceRecord> = (0..50u64)
        .map(|i| TraceRecord {
            time_ns: i * i * 7_000,
            op: if i % 3 == 0 {
                TraceOp::Write
            } else {
                TraceOp::Read
            },
            offset: (i * 7919 % 1000) * 4096,
            len: 4096 * (1 + i % 4),
            device: 0,
            recorded_latency_ns: Some(1000 + i * 100),
            stream: 0,
        })
        .collect();
    let key = |r: &TraceRecord| (r.time_ns, r.op, r.offset, r.len, r.device);
    let want: Vec<_> = recs.iter().map(key).collect();
    for format in Format::ALL {
        let (bytes, st) = write_all(format, &recs, &WriteOptions::default());
        assert_eq!(st.dropped, 0, "{format}");
        let (f, got) = read_all(None, bytes);
        assert_eq!(f, format);
        let got: Vec<_> = got.iter().map(key).collect();
        if format == Format::Fio2 {
            // No timestamps in version 2.
            let no_time: Vec<_> = want.iter().map(|k| (0, k.1, k.2, k.3, k.4)).collect();
            assert_eq!(got, no_time, "{format}");
        } else {
            assert_eq!(got, want, "{format}");
        }
    }
}

#[test]
fn writers_count_what_they_cannot_hold() {
    let recs = [
        TraceRecord {
            time_ns: 150,
            op: TraceOp::Trim,
            offset: 0,
            len: 4096,
            device: 0,
            recorded_latency_ns: None,
            stream: 0,
        },
        TraceRecord {
            time_ns: 1_000,
            op: TraceOp::Read,
            offset: 100,
            len: 4096,
            device: 0,
            recorded_latency_ns: None,
            stream: 0,
        },
    ];
    let st = |f| write_all(f, &recs, &WriteOptions::default()).1;
    assert_eq!(
        st(Format::Msr),
        WriteStats {
            written: 1,
            dropped: 1,
            inexact: 0
        }
    );
    assert_eq!(
        st(Format::Disksim),
        WriteStats {
            written: 1,
            dropped: 1,
            inexact: 1
        }
    );
    assert_eq!(
        st(Format::Blkparse),
        WriteStats {
            written: 2,
            dropped: 0,
            inexact: 1
        }
    );
    assert_eq!(
        st(Format::Fio3),
        WriteStats {
            written: 2,
            dropped: 0,
            inexact: 1
        }
    );
    assert_eq!(
        st(Format::Fio2),
        WriteStats {
            written: 2,
            dropped: 0,
            inexact: 2
        }
    );
    // The misaligned read is widened to whole sectors: 0 + 9.
    let (bytes, _) = write_all(Format::Blkparse, &recs, &WriteOptions::default());
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains("  Q   R 0 + 9 [storlab]"), "{text}");
}

#[test]
fn out_of_order_records_are_refused_without_a_window() {
    let r = |t| TraceRecord {
        time_ns: t,
        op: TraceOp::Read,
        offset: 0,
        len: 512,
        device: 0,
        recorded_latency_ns: None,
        stream: 0,
    };
    for f in Format::ALL {
        let mut out = Vec::new();
        let mut w = writer(f, &mut out, &WriteOptions::default());
        w.record(&r(10)).unwrap();
        let e = w.record(&r(5)).unwrap_err().to_string();
        assert!(e.contains("reorder_window_ns"), "{f}: {e}");
        assert!(
            e.contains(&format!("writing a {f} trace, record 1")),
            "{f}: {e}"
        );
    }
    let mut out = Vec::new();
    let opts = WriteOptions {
        reorder_window_ns: 100,
        ..WriteOptions::default()
    };
    let mut w = writer(Format::Fio3, &mut out, &opts);
    w.record(&r(1_000)).unwrap();
    w.record(&r(2_000)).unwrap();
    let e = w.record(&r(500)).unwrap_err().to_string();
    assert!(e.contains("reorder window"), "{e}");
}

#[test]
fn blkparse_writer_output_is_what_blkparse_prints() {
    let recs = [TraceRecord {
        time_ns: 1_500_000_123,
        op: TraceOp::Write,
        offset: 4096,
        len: 8192,
        device: make_dev(259, 0).unwrap(),
        recorded_latency_ns: Some(20_000),
        stream: 4242,
    }];
    let (bytes, _) = write_all(Format::Blkparse, &recs, &WriteOptions::default());
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        "259,0    0        1     1.500000123  4242  Q   W 8 + 16 [storlab]\n\
         259,0    0        2     1.500020123  4242  C   W 8 + 16 [0]\n"
    );
}

fn data(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn convert_blkparse_to_fio3_and_msr() {
    let mut out = Vec::new();
    let s = convert(
        &data("sample.blkparse"),
        None,
        &mut out,
        Format::Fio3,
        &ConvertOptions::default(),
    )
    .unwrap();
    assert_eq!(s.input_format, Format::Blkparse);
    assert_eq!(s.records_read, 6);
    assert_eq!(
        s.written,
        WriteStats {
            written: 6,
            dropped: 0,
            inexact: 0
        }
    );
    let text = String::from_utf8(out).unwrap();
    let dev = 8 << 20;
    assert_eq!(
        text,
        format!(
            "fio version 3 iolog\n\
             0 storlab-dev{dev} add\n\
             0 storlab-dev{dev} open\n\
             0 storlab-dev{dev} write 1749528576 4096\n\
             100 storlab-dev{dev} read 1048576 131072\n\
             101 storlab-dev{dev} read 1179648 131072\n\
             200 storlab-dev8388624 add\n\
             200 storlab-dev8388624 open\n\
             200 storlab-dev8388624 sync 0 0\n\
             300 storlab-dev{dev} trim 2097152 1048576\n\
             10000 storlab-dev{dev} read 511488 4096\n\
             10000 storlab-dev{dev} close\n\
             10000 storlab-dev8388624 close\n"
        )
    );
    // To MSR, with only reads kept by the filter.
    let mut out = Vec::new();
    let opts = ConvertOptions {
        read: ReadOptions {
            ops: OpSet::of(&[TraceOp::Read]),
            ..ReadOptions::default()
        },
        ..ConvertOptions::default()
    };
    let s = convert(
        &data("sample.blkparse"),
        Some(Format::Blkparse),
        &mut out,
        Format::Msr,
        &opts,
    )
    .unwrap();
    assert_eq!((s.records_read, s.filtered), (3, 3));
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        "116444736000000000,storlab,8388608,Read,1048576,131072,3100"
    );
}

#[test]
fn stats_of_a_known_trace() {
    let text = "0.000 0 0 8 1\n\
                0.010 0 8 8 1\n\
                0.030 0 100 16 0\n\
                0.030 0 16 8 1\n\
                0.100 1 116 16 0\n\
                1.100 0 116 2 0\n";
    let r = open_reader(
        Box::new(Cursor::new(text.as_bytes().to_vec())),
        "mem",
        None,
        &ReadOptions::default(),
    )
    .unwrap();
    let s = stats(r).unwrap();
    assert_eq!(s.count, 6);
    assert_eq!(s.bytes, 29_696);
    assert_eq!((s.read.count, s.read.bytes), (3, 12_288));
    assert_eq!((s.write.count, s.write.bytes), (3, 17_408));
    assert_eq!((s.trim.count, s.flush.count), (0, 0));
    let hist: Vec<_> = s
        .size_histogram
        .iter()
        .map(|b| (b.min_bytes, b.max_bytes, b.count))
        .collect();
    assert_eq!(
        hist,
        vec![(1024, 2047, 1), (4096, 8191, 3), (8192, 16383, 2)]
    );
    // Sequential: the 2nd and 4th reads follow the previous read; the last
    // write follows the previous write on device 0.
    assert_eq!(s.sequential_fraction, 0.5);
    // Gaps 10, 20, 0, 70, 1000 µs.
    assert_eq!(s.interarrival.samples, 5);
    assert_eq!(s.interarrival.mean_ns, 220_000.0);
    assert_eq!(s.interarrival.p50_ns, 20_000);
    assert_eq!(s.interarrival.p99_ns, 1_000_000);
    assert_eq!(s.interarrival.max_ns, 1_000_000);
    assert_eq!(s.recorded_latency, None);
    assert_eq!(s.duration_ns, 1_100_000);
    assert_eq!(
        (s.min_offset, s.max_end, s.address_span_bytes),
        (0, 67_584, 67_584)
    );
    assert_eq!(s.devices, 2);
    let table = s.to_string();
    assert!(table.contains("requests        6"), "{table}");
    assert!(table.contains("sequential      50.0 %"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
    assert_eq!(json["read"]["bytes"], 12_288);
    assert_eq!(json["interarrival"]["p50_ns"], 20_000);
}

/// A zero-length read keeps its place through both blktrace forms (found by
/// the proptest above: the binary reader used to drop it).
#[test]
fn zero_length_read_survives_blktrace() {
    let recs = vec![TraceRecord {
        time_ns: 1_000_000_000,
        op: TraceOp::Read,
        offset: 0,
        len: 0,
        device: make_dev(8, 0).unwrap(),
        recorded_latency_ns: None,
        stream: 0,
    }];
    for format in [Format::Blkparse, Format::Blktrace] {
        let (bytes, _) = write_all(format, &recs, &WriteOptions::default());
        let (_, got) = read_all(None, bytes);
        assert_eq!(got, rebased(&recs), "{format}");
    }
}
