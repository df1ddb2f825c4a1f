//! `storlab bench`'s ratio to the null device: each device run is paired
//! with a null-device run just before it, and the ratio reported is the
//! median of the pairs' own ratios (a baseline measured once, first, had
//! carried the machine's swing into every ratio: issue 61).

use std::process::Command;

fn bench(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .arg("bench")
        .args(args)
        .arg("--json")
        .output()
        .expect("run storlab bench");
    assert!(
        out.status.success(),
        "storlab bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench --json prints JSON")
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

#[test]
fn every_device_run_has_its_own_null_run_and_the_ratio_is_the_pairs_median() {
    let v = bench(&[
        "--devices",
        "ddr-dram,moneta-spin",
        "--reps",
        "3",
        "--ios-per-thread",
        "400",
    ]);
    let rows = v["results"].as_array().expect("results");
    assert_eq!(rows.len(), 2, "{v}");
    let mut nulls = Vec::new();
    for r in rows {
        let per_rep: Vec<f64> = r["ratio_to_null_device_per_rep"]
            .as_array()
            .expect("per-rep ratios")
            .iter()
            .map(|x| x.as_f64().expect("a number"))
            .collect();
        assert_eq!(per_rep.len(), 3, "one ratio a rep: {r}");
        assert!(per_rep.iter().all(|&x| x > 0.0 && x.is_finite()), "{r}");
        let ratio = r["ratio_to_null_device"].as_f64().expect("ratio");
        assert_eq!(ratio, median(&per_rep), "the median of the pairs: {r}");
        let null = r["null_device_ios_per_wall_s"].as_f64().expect("null rate");
        assert!(null > 0.0, "{r}");
        nulls.push(null);
        // the same deterministic run every rep: 16 jobs x 400 reads
        assert_eq!(r["simulated_ios"].as_u64(), Some(16 * 400), "{r}");
        assert!(r["events"].as_u64().unwrap_or(0) > 0, "{r}");
    }
    let base = v["baseline_null_device_ios_per_wall_s"]
        .as_f64()
        .expect("baseline");
    let (lo, hi) = nulls
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    // the baseline is the median of every null run: between the devices'
    // own medians' extremes at most as far as one run's swing
    assert!(base > 0.0 && base >= lo * 0.5 && base <= hi * 2.0, "{v}");
}

#[test]
fn an_application_run_is_paired_with_null_runs_too() {
    for app in ["bdb-btree", "build"] {
        paired_app(app);
    }
}

/// `storlab bench --app APP` runs (bounded by its time, whatever the
/// application's own amount of work) with a null run beside each rep.
fn paired_app(app: &str) {
    let v = bench(&[
        "--app",
        app,
        "--devices",
        "ddr-dram",
        "--reps",
        "2",
        "--app-runtime",
        "50ms",
        "--ios-per-thread",
        "400",
    ]);
    let r = &v["results"][0];
    let per_rep = r["ratio_to_null_device_fio_per_rep"]
        .as_array()
        .expect("per-rep ratios");
    assert_eq!(per_rep.len(), 2, "{v}");
    assert!(r["operations"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(
        r["ratio_to_null_device_fio"].as_f64().unwrap_or(0.0) > 0.0,
        "{v}"
    );
}
