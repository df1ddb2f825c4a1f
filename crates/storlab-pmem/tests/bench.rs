//! msync-bench as a library: a short run's rows, counts, JSON and table.
//! (Timing shapes are checked by running the benchmark, not here.)

use storlab_pmem::{
    cpu_features, msync_bench, FlushMode, MsyncBenchOptions, TrackingKind, MSYNC_BENCH_FLAGS,
};

fn modes_flag() -> String {
    let mut m: Vec<&str> = FlushMode::ALL
        .into_iter()
        .filter(|m| cpu_features().supports(*m))
        .map(|m| m.name())
        .collect();
    m.push("disk");
    m.join(",")
}

#[test]
fn a_short_run_reports_every_row_with_exact_line_counts() {
    let dir = tempfile::tempdir().unwrap();
    let modes = modes_flag();
    let disk_dir = dir.path().display().to_string();
    for tracking in ["auto", "mprotect"] {
        let o = MsyncBenchOptions::parse(&[
            ("modes", modes.as_str()),
            ("sync", "default,spf"),
            ("sizes", "64,4k,64k"),
            ("wbarrier-ns", "100"),
            ("reps", "20"),
            ("tracking", tracking),
            ("disk-dir", disk_dir.as_str()),
        ])
        .unwrap();
        let r = msync_bench(&o).unwrap();
        let n_flush = modes.split(',').count() - 1;
        assert_eq!(r.results.len(), n_flush * 2 * 3 + 3);
        if tracking == "mprotect" {
            assert_eq!(r.dirty_tracking, TrackingKind::Mprotect);
        }
        for row in &r.results {
            assert_eq!(row.reps, 20);
            assert!(row.median_ns > 0 && row.p99_ns >= row.median_ns, "{row:?}");
            let want = match (row.sync.as_str(), row.size_bytes) {
                ("fdatasync", _) => None,
                ("default", s) => Some(s / 64),
                ("spf", 64) => Some(1),        // sub-page: the range's line
                ("spf", _) => Some(4096 / 64), // the one written page
                _ => unreachable!(),
            };
            assert_eq!(row.lines_flushed, want, "{row:?}");
            if row.sync == "spf" {
                assert_eq!(row.dirty_pages, Some(1), "{row:?}");
            }
        }
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "the disk file is removed"
        );

        let j = r.to_json();
        assert!(j["cpu_model"].is_string());
        let rows = j["results"].as_array().unwrap();
        for key in [
            "mode",
            "sync",
            "size_bytes",
            "median_ns",
            "p99_ns",
            "lines_flushed",
        ] {
            assert!(rows.iter().all(|r| r.get(key).is_some()), "{key}");
        }
        assert_eq!(j["config"]["sizes"], serde_json::json!([64, 4096, 65536]));
        assert!(j["capabilities"]["not_emulated"].as_array().unwrap().len() >= 2);

        let mut table = Vec::new();
        r.write_table(&mut table).unwrap();
        let t = String::from_utf8(table).unwrap();
        assert!(
            t.contains("median_us") && t.contains("fdatasync") && t.contains("64K"),
            "{t}"
        );
    }
}

#[test]
fn flags_are_defined_once_with_defaults_that_parse() {
    let pairs: Vec<(&str, &str)> = MSYNC_BENCH_FLAGS
        .iter()
        .map(|f| (f.name, f.default))
        .collect();
    let o = MsyncBenchOptions::parse(&pairs).unwrap();
    assert_eq!(o.sizes, vec![64, 4096, 65536, 1 << 20, 10 << 20, 100 << 20]);
    assert_eq!(o.wbarrier_ns, 1000);
    assert!(MSYNC_BENCH_FLAGS.iter().all(|f| !f.help.is_empty()));
}
