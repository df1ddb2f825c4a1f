//! Bad input and bad options: a garbage line fails the replay naming the
//! file and line; with `skip_bad_lines` the replay runs and reports the
//! count; options that cannot work are refused before anything runs.

mod replay_support;

use replay_support::*;
use storlab_sim::replay::{ReplayError, ReplayMode, ReplayOptions};
use storlab_trace::{Format, ReadOptions};

#[test]
fn garbage_line_names_file_and_line() {
    for format in [None, Some(Format::Msr)] {
        let opts = ReplayOptions {
            format,
            ..ReplayOptions::default()
        };
        let err = try_replay("null", FIXED_1US, &data("garbage.msr.csv"), &opts)
            .err()
            .expect("a bad line fails the replay");
        assert!(matches!(err, ReplayError::Trace(_)), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains("garbage.msr.csv:3:"), "names file:line: {msg}");
        assert!(
            msg.contains("this is not a trace line"),
            "quotes the line: {msg}"
        );
    }
}

#[test]
fn skip_bad_lines_runs_and_reports_the_count() {
    let opts = ReplayOptions {
        read: ReadOptions {
            skip_bad_lines: true,
            ..ReadOptions::default()
        },
        ..ReplayOptions::default()
    };
    let r = try_replay("null", FIXED_1US, &data("garbage.msr.csv"), &opts).expect("skipping runs");
    let j = &r.jobs[0];
    assert_eq!(j.storlab["trace"]["skipped_lines"], 1);
    assert_eq!(j.storlab["trace"]["requests"], 3);
    assert_eq!(per_dir(j), [(1, 4096), (2, 8192 + 4096), (0, 0), (0, 0)]);
    assert!(j
        .options
        .iter()
        .any(|(k, v)| k == "skip_bad_lines" && v == "1"));
    let s = storlab_sim::replay::terminal_summary(j);
    assert!(s.contains("1 bad lines skipped"), "{s}");
}

#[test]
fn missing_file_names_it() {
    let err = try_replay(
        "null",
        FIXED_1US,
        &data("no-such.msr.csv"),
        &ReplayOptions::default(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("no-such.msr.csv"), "{err}");
}

#[test]
fn nothing_to_replay_is_an_error() {
    let opts = ReplayOptions {
        read: ReadOptions {
            disk: Some(7),
            ..ReadOptions::default()
        },
        ..ReplayOptions::default()
    };
    let err = try_replay("null", FIXED_1US, &data("golden.msr.csv"), &opts)
        .err()
        .unwrap();
    assert!(
        matches!(err, ReplayError::Empty { filtered: 5, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("golden.msr.csv: no requests to replay (5 left out by the filters"),
        "{err}"
    );
}

#[test]
fn impossible_options_are_refused() {
    let cases: [(ReplayOptions, &str); 4] = [
        (
            ReplayOptions {
                align: 3000,
                ..ReplayOptions::default()
            },
            "alignment 3000 is not a power of two",
        ),
        (
            ReplayOptions {
                align: 0,
                ..ReplayOptions::default()
            },
            "alignment 0 is not a power of two",
        ),
        (
            ReplayOptions {
                mode: ReplayMode::Afap,
                iodepth: 0,
                ..ReplayOptions::default()
            },
            "iodepth must be at least 1",
        ),
        (
            ReplayOptions {
                mode: ReplayMode::Scaled(-1.0),
                ..ReplayOptions::default()
            },
            "must be a positive number",
        ),
    ];
    for (opts, want) in cases {
        let err = try_replay("null", FIXED_1US, &data("golden.msr.csv"), &opts)
            .err()
            .expect(want);
        assert!(err.to_string().contains(want), "{err} should say {want}");
    }
    let err = try_replay(
        "null",
        &["device.capacity_bytes=4096"],
        &data("golden.msr.csv"),
        &ReplayOptions {
            align: 8192,
            ..ReplayOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(
        err.to_string()
            .contains("alignment 8192 is larger than the device (4096 bytes)"),
        "{err}"
    );
}

#[test]
fn an_unknown_format_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("noise.txt");
    std::fs::write(&p, "hello\nworld\n").unwrap();
    let err = try_replay("null", FIXED_1US, &p, &ReplayOptions::default())
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .contains("noise.txt: cannot tell the trace format"),
        "{err}"
    );
}
