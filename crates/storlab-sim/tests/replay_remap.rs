//! Address remapping: a trace recorded on a larger device replays wrapped
//! onto the model's capacity, keeping the alignment, and the report counts
//! the requests that were moved.

mod replay_support;

use replay_support::*;
use storlab_sim::engine::IoSource;
use storlab_sim::replay::{ReplayMode, ReplayOptions, TraceSource};
use storlab_trace::{open, Format, ReadOptions};

const MIB: &str = "device.capacity_bytes=1048576";

fn offsets(align: u64) -> Vec<(u64, u64)> {
    let reader = open(
        &data("beyond.msr.csv"),
        Some(Format::Msr),
        &ReadOptions::default(),
    )
    .unwrap();
    let (mut src, tally) = TraceSource::new(reader, 1 << 20, ReplayMode::Afap, align).unwrap();
    let out: Vec<(u64, u64)> = std::iter::from_fn(|| src.next_io())
        .map(|io| (io.offset, io.len))
        .collect();
    assert_eq!(tally.borrow().remapped, 3);
    out
}

#[test]
fn requests_past_the_end_wrap_aligned() {
    // beyond.msr.csv on a 1 MiB device: 0 fits; 1 MiB wraps to 0;
    // 3 MiB + 3584 wraps to 3584, aligned down; 1 MiB - 4 KiB + 8 KiB runs
    // past the end and moves back; 1 MiB - 8 KiB + 4 KiB fits
    assert_eq!(
        offsets(4096),
        [
            (0, 4096),
            (0, 4096),
            (0, 4096),
            (1040384, 8192),
            (1040384, 4096)
        ]
    );
    assert_eq!(
        offsets(512),
        [
            (0, 4096),
            (0, 4096),
            (3584, 4096),
            (1040384, 8192),
            (1040384, 4096)
        ]
    );
}

#[test]
fn replay_reports_remapped_count() {
    for align in [512, 4096] {
        let opts = ReplayOptions {
            align,
            ..ReplayOptions::default()
        };
        let r = try_replay(
            "null",
            &["device.latency_ns=1000", MIB],
            &data("beyond.msr.csv"),
            &opts,
        )
        .expect("wrapped trace replays");
        let j = &r.jobs[0];
        assert_eq!(j.storlab["trace"]["remapped"], 3);
        assert_eq!(j.storlab["trace"]["capacity_bytes"], 1 << 20);
        assert_eq!(j.storlab["trace"]["align_bytes"], align);
        assert_eq!(
            per_dir(j),
            [(3, 3 * 4096), (2, 4096 + 8192), (0, 0), (0, 0)],
            "lengths kept"
        );
        let summary = storlab_sim::replay::terminal_summary(j);
        assert!(summary.contains("5 requests, 3 remapped"), "{summary}");
    }
    // on the default 64 GiB the same trace fits
    let r = try_replay(
        "null",
        FIXED_1US,
        &data("beyond.msr.csv"),
        &ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(r.jobs[0].storlab["trace"]["remapped"], 0);
}

#[test]
fn a_real_model_accepts_the_wrapped_requests() {
    // a real array spreads addresses over its controllers by offset;
    // wrapped requests land on the 1 MiB it has
    let opts = ReplayOptions {
        mode: ReplayMode::Afap,
        iodepth: 2,
        ..ReplayOptions::default()
    };
    let r = try_replay("moneta-spin", &[MIB], &data("beyond.msr.csv"), &opts).unwrap();
    assert_eq!(r.jobs[0].rw_ios(), 5);
    assert_eq!(r.jobs[0].storlab["trace"]["remapped"], 3);
}
