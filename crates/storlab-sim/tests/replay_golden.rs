//! Trace replay on a fixed-latency device, where every simulated time is
//! known exactly: request counts and bytes per direction, issue times in
//! each mode, the recorded-vs-simulated block, filters, and the report.

mod replay_support;

use replay_support::*;
use storlab_sim::replay::{ReplayMode, ReplayOptions};
use storlab_sim::report::{write_json, ReportOptions};
use storlab_trace::{open, ReadOptions, TraceOp};

/// golden.msr.csv: five requests at 0, 10, 20, 40 and 100 µs.
const LAST_NS: u64 = 100_000;
const LAT_NS: u64 = 1000;

#[test]
fn msr_counts_and_bytes_per_direction() {
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Timed, 32);
    assert_eq!(j.name, "golden.msr.csv");
    assert_eq!(j.group_id, 0);
    assert_eq!(
        per_dir(&j),
        [(3, 4096 + 4096 + 512), (2, 8192 + 4096), (0, 0), (0, 0)]
    );
    assert_eq!(
        j.dirs[0].lat().mean(),
        LAT_NS as f64,
        "the fixed device takes 1 µs"
    );
    assert_eq!(j.dirs[1].lat().max(), LAT_NS);
}

#[test]
fn timed_issues_at_recorded_times() {
    let (r, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Timed, 32);
    assert_eq!(j.job_runtime_ns, LAST_NS + LAT_NS);
    assert_eq!(r.sim_ns, LAST_NS + LAT_NS);
}

#[test]
fn timed_is_open_loop() {
    // 50 µs per request: the requests at 0, 10, 20 and 40 µs overlap instead
    // of waiting for each other, so the run ends 50 µs after the last issue
    let opts = ReplayOptions::default();
    let r = try_replay(
        "null",
        &["device.latency_ns=50000"],
        &data("golden.msr.csv"),
        &opts,
    )
    .unwrap();
    assert_eq!(r.jobs[0].job_runtime_ns, LAST_NS + 50_000);
    let afap = ReplayOptions {
        mode: ReplayMode::Afap,
        iodepth: 1,
        ..opts
    };
    let r = try_replay(
        "null",
        &["device.latency_ns=50000"],
        &data("golden.msr.csv"),
        &afap,
    )
    .unwrap();
    assert_eq!(
        r.jobs[0].job_runtime_ns,
        5 * 50_000,
        "closed loop at depth 1 serialises"
    );
}

#[test]
fn scaled_divides_times() {
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Scaled(2.0), 32);
    assert_eq!(j.job_runtime_ns, LAST_NS / 2 + LAT_NS);
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Scaled(0.5), 32);
    assert_eq!(j.job_runtime_ns, LAST_NS * 2 + LAT_NS);
}

#[test]
fn afap_depth_one_serialises_and_deeper_overlaps() {
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Afap, 1);
    assert_eq!(j.job_runtime_ns, 5 * LAT_NS);
    assert_eq!(j.iodepth, 1);
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Afap, 2);
    assert_eq!(j.job_runtime_ns, 3 * LAT_NS);
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Afap, 32);
    assert_eq!(
        j.job_runtime_ns, LAT_NS,
        "the fixed device runs any number at once"
    );
}

fn close(what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= want * 0.001 + 1e-9,
        "{what}: got {got}, want {want}"
    );
}

#[test]
fn recorded_vs_simulated() {
    let (_, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Timed, 32);
    let r = &j.storlab["recorded"];
    assert_eq!(r["requests"], 5);
    // ResponseTime 100, 200, 300, 400, 1000 ticks of 100 ns
    close(
        "recorded mean",
        r["recorded_ns"]["mean"].as_f64().unwrap(),
        40_000.0,
    );
    close(
        "recorded p50",
        r["recorded_ns"]["p50"].as_f64().unwrap(),
        30_000.0,
    );
    close(
        "recorded p99",
        r["recorded_ns"]["p99"].as_f64().unwrap(),
        100_000.0,
    );
    assert_eq!(r["recorded_ns"]["max"].as_f64(), Some(100_000.0));
    for k in ["mean", "p50", "p99", "max"] {
        assert_eq!(r["simulated_ns"][k].as_f64(), Some(1000.0), "simulated {k}");
    }
    close(
        "ratio of means",
        r["simulated_over_recorded"]["mean"].as_f64().unwrap(),
        0.025,
    );
    close(
        "ratio of maxima",
        r["simulated_over_recorded"]["max"].as_f64().unwrap(),
        0.01,
    );
    // by operation: reads 10, 30, 100 µs; writes 20, 40 µs
    assert_eq!(r["read"]["requests"], 3);
    close(
        "read mean",
        r["read"]["recorded_ns"]["mean"].as_f64().unwrap(),
        140_000.0 / 3.0,
    );
    assert_eq!(r["write"]["requests"], 2);
    close(
        "write mean",
        r["write"]["recorded_ns"]["mean"].as_f64().unwrap(),
        30_000.0,
    );
    assert!(r.get("trim").is_none() && r.get("flush").is_none());
}

#[test]
fn no_recorded_block_without_recorded_times() {
    // fio iologs record no response times
    let (_, j) = replay_fixed(&trace_sample("sample.fio3"), ReplayMode::Timed, 32);
    assert!(j.storlab.get("recorded").is_none(), "{}", j.storlab);
    assert!(j.storlab.get("trace").is_some());
}

#[test]
fn trace_block_and_options() {
    let opts = ReplayOptions {
        mode: ReplayMode::Scaled(2.0),
        read: ReadOptions {
            disk: Some(0),
            ..ReadOptions::default()
        },
        ..ReplayOptions::default()
    };
    let r = try_replay("null", FIXED_1US, &data("golden.msr.csv"), &opts).unwrap();
    let j = &r.jobs[0];
    let t = &j.storlab["trace"];
    assert_eq!(t["format"], "msr");
    assert_eq!(t["replay"], "scaled:2.0");
    assert_eq!(t["requests"], 4);
    assert_eq!(t["filtered"], 1, "the disk-1 request");
    assert_eq!(t["remapped"], 0);
    assert_eq!(t["disk"], 0);
    let opt = |k: &str| {
        j.options
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(opt("trace_format"), Some("msr"));
    assert_eq!(opt("replay"), Some("scaled:2.0"));
    assert_eq!(opt("trace_disk"), Some("0"));
    assert_eq!(opt("iodepth"), Some("1048576"), "open loop");
    assert!(opt("trace").unwrap().ends_with("golden.msr.csv"));
    // the rest of the usual storlab object is there too
    for k in ["device", "breakdown_ns", "utilisation", "simulated_ns"] {
        assert!(j.storlab.get(k).is_some(), "storlab.{k} missing");
    }
}

#[test]
fn filters_by_operation_and_time() {
    let opts = ReplayOptions {
        read: ReadOptions {
            ops: "write".parse().unwrap(),
            ..ReadOptions::default()
        },
        ..ReplayOptions::default()
    };
    let r = try_replay("null", FIXED_1US, &data("golden.msr.csv"), &opts).unwrap();
    assert_eq!(per_dir(&r.jobs[0]), [(0, 0), (2, 12288), (0, 0), (0, 0)]);
    assert_eq!(r.jobs[0].storlab["recorded"]["requests"], 2);
    // the window [15 µs, 50 µs) holds the requests at 20 and 40 µs; times
    // are rebased to the first one, so the run lasts 20 µs + 1 µs
    let opts = ReplayOptions {
        read: ReadOptions {
            start_ns: Some(15_000),
            end_ns: Some(50_000),
            ..ReadOptions::default()
        },
        ..ReplayOptions::default()
    };
    let r = try_replay("null", FIXED_1US, &data("golden.msr.csv"), &opts).unwrap();
    assert_eq!(per_dir(&r.jobs[0]), [(1, 4096), (1, 4096), (0, 0), (0, 0)]);
    assert_eq!(r.jobs[0].job_runtime_ns, 20_000 + LAT_NS);
}

/// What the trace reader itself says: requests and bytes per direction,
/// the last request's time, and (count, mean) of recorded latencies.
fn expected(path: &std::path::Path) -> ([(u64, u64); 4], u64, u64, f64) {
    let mut dirs = [(0, 0); 4];
    let (mut last, mut n, mut sum) = (0, 0, 0u64);
    for r in open(path, None, &ReadOptions::default()).unwrap() {
        let r = r.unwrap();
        let d = match r.op {
            TraceOp::Read => 0,
            TraceOp::Write => 1,
            TraceOp::Trim => 2,
            TraceOp::Flush => 3,
        };
        if r.len == 0 && d != 3 {
            continue;
        }
        dirs[d].0 += 1;
        dirs[d].1 += r.len;
        last = r.time_ns;
        if let Some(l) = r.recorded_latency_ns {
            n += 1;
            sum += l;
        }
    }
    (
        dirs,
        last,
        n,
        if n > 0 { sum as f64 / n as f64 } else { 0.0 },
    )
}

#[test]
fn every_format_replays_what_the_reader_reads() {
    for name in [
        "sample.msr.csv",
        "sample.fio2",
        "sample.fio3",
        "sample.blkparse",
        "sample.disksim",
    ] {
        let path = trace_sample(name);
        let (dirs, last, n, mean) = expected(&path);
        let (r, j) = replay_fixed(&path, ReplayMode::Timed, 32);
        assert_eq!(
            per_dir(&j),
            dirs,
            "{name}: requests and bytes per direction"
        );
        assert_eq!(
            j.job_runtime_ns,
            last + LAT_NS,
            "{name}: timed ends 1 µs after the last request"
        );
        assert_eq!(r.sim_ns, last + LAT_NS, "{name}");
        let rec = &j.storlab["recorded"];
        if n == 0 {
            assert!(rec.is_null(), "{name}: nothing recorded, no block");
        } else {
            assert_eq!(rec["requests"], n, "{name}");
            close(name, rec["recorded_ns"]["mean"].as_f64().unwrap(), mean);
        }
        let total: u64 = dirs.iter().map(|d| d.0).sum();
        let (_, j) = replay_fixed(&path, ReplayMode::Afap, 1);
        assert_eq!(
            j.job_runtime_ns,
            total * LAT_NS,
            "{name}: afap at depth 1 serialises"
        );
    }
}

#[test]
fn blkparse_completions_are_recorded_latencies() {
    let (_, j) = replay_fixed(&trace_sample("sample.blkparse"), ReplayMode::Timed, 32);
    assert!(
        j.storlab["recorded"]["requests"].as_u64().unwrap() > 0,
        "{}",
        j.storlab
    );
}

#[test]
fn json_report_and_terminal_summary() {
    let (r, j) = replay_fixed(&data("golden.msr.csv"), ReplayMode::Timed, 32);
    let mut out = Vec::new();
    write_json(&r.jobs, &mut out, &ReportOptions::default()).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "golden.msr.csv");
    assert_eq!(job["read"]["total_ios"], 3);
    assert_eq!(job["write"]["io_bytes"], 12288);
    assert_eq!(job["storlab"]["recorded"]["requests"], 5);
    assert_eq!(job["job options"]["replay"], "timed");
    let s = storlab_sim::replay::terminal_summary(&j);
    assert!(s.contains("5 requests, 0 remapped"), "{s}");
    assert!(
        s.contains("recorded") && s.contains("simulated") && s.contains("0.025"),
        "{s}"
    );
}

#[test]
fn replay_is_deterministic_on_a_real_model() {
    let opts = ReplayOptions {
        mode: ReplayMode::Afap,
        iodepth: 4,
        ..ReplayOptions::default()
    };
    let json = || {
        let r = try_replay("moneta-spin", &[], &data("golden.msr.csv"), &opts).unwrap();
        let mut out = Vec::new();
        write_json(&r.jobs, &mut out, &ReportOptions::default()).unwrap();
        out
    };
    assert_eq!(json(), json());
}
