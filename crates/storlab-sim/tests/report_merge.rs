//! Merging is exact: one thread that records every request reports the
//! same figures as two threads that split the requests and are merged.

use proptest::prelude::*;
use storlab_model::{Breakdown, Component, Op};
use storlab_sim::report::{json_string, ReportOptions};
use storlab_sim::stats::JobStats;

fn ops() -> impl Strategy<Value = Vec<(u8, u64, u64, u32, bool)>> {
    prop::collection::vec(
        (
            0u8..4,
            0u64..5_000,
            0u64..50_000_000_000,
            1u32..1 << 20,
            any::<bool>(),
        ),
        1..300,
    )
}

proptest! {
    // Each case writes six full reports; debug builds make them slow.
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn split_and_merged_equals_whole(reqs in ops()) {
        let mut whole = JobStats::new("j", 0);
        let mut a = JobStats::new("j", 0);
        let mut b = JobStats::new("j", 0);
        for j in [&mut whole, &mut a, &mut b] {
            j.set_percentiles(true, true, true);
        }
        for &(op, slat, clat, bytes, left) in &reqs {
            let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][op as usize];
            let mut bd = Breakdown::default();
            bd.add(Component::Media, clat);
            bd.add(Component::Syscall, slat);
            whole.record(op, slat, clat, u64::from(bytes), &bd);
            let part = if left { &mut a } else { &mut b };
            part.record(op, slat, clat, u64::from(bytes), &bd);
        }
        for j in [&mut whole, &mut a, &mut b] {
            j.runtime_ns = [3_000_000_000, 2_000_000_000, 1_000_000_000];
            j.job_runtime_ns = 3_000_000_000;
        }
        a.merge(&b);
        a.members = 1;
        a.job_runtime_ns = whole.job_runtime_ns;
        for p in [1.0, 50.0, 99.0, 99.99] {
            prop_assert_eq!(a.dirs[0].percentile(p), whole.dirs[0].percentile(p));
        }
        prop_assert_eq!(a.dirs[1].lat().moments(), whole.dirs[1].lat().moments());
        prop_assert_eq!(a.sync.breakdown_sum(), whole.sync.breakdown_sum());
        let opts = ReportOptions::default();
        prop_assert_eq!(json_string(&[a], &opts), json_string(&[whole], &opts));
    }
}
