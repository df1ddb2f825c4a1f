//! The key-value applications' study (`apps-kv`): no unexplained miss, its
//! rows, and the shape of its YCSB figure.

use storlab_lab::studies;

#[test]
fn apps_kv_reproduces_with_no_unexplained_miss() {
    let rep = studies::prepare("apps-kv")
        .expect("known")
        .run(&|| {})
        .expect("runs");
    let failures: Vec<String> = rep
        .failures()
        .iter()
        .map(|r| format!("{}: {} vs {}", r.what, r.published, r.model))
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
    // 5 NVMM-Opt/Raw + 2 Raw/SSD/HDD + 6 journaled; memcached has no
    // published figure, so no row
    assert_eq!(rep.rows.len(), 13);
    assert!(rep.rows.iter().all(|r| !r.what.contains("memcached")));
    let f = &rep.figures[0];
    assert_eq!(f.panels.len(), 2);
    for panel in &f.panels {
        assert_eq!(panel.series.len(), studies::apps_kv::CONFIGS.len());
        for s in &panel.series {
            assert_eq!(s.points.len(), 6, "{} {}", panel.title, s.label);
            assert!(
                s.points.iter().all(|p| p.1 > 0.0),
                "{} {}",
                panel.title,
                s.label
            );
        }
    }
    // FSYNC_SAFE: workload C (no writes) is the same on NVMM-Raw and
    // NVMM-Opt; with writes, SPF is ahead
    let fs = &f.panels[0];
    let raw = fs
        .series
        .iter()
        .find(|s| s.label == "NVMM-Raw")
        .expect("raw");
    let opt = fs
        .series
        .iter()
        .find(|s| s.label == "NVMM-Opt")
        .expect("opt");
    assert!((raw.points[2].1 / opt.points[2].1 - 1.0).abs() < 0.01);
    assert!(opt.points[0].1 > raw.points[0].1);
}

use serde_json::Value;
use storlab_lab::measure::Spec;
use storlab_lab::studies::apps_kv::app_spec;

fn app(spec: &Spec) -> Value {
    let jobs = spec.run_jobs().expect("runs");
    jobs[0].app.clone().expect("an app object")
}

fn metric(spec: &Spec) -> f64 {
    app(spec)["metric"].as_f64().expect("a metric")
}

/// Each key-value app on one preset of several classes (NVM array, flash
/// SSD, RAID, DRAM, NVMM), small: deterministic for a seed, and a metric
/// above zero.
#[test]
fn every_kv_app_runs_on_every_class_deterministically() {
    let devices = [
        ("moneta-balance", "xfs"),
        ("x25e", "ext4"),
        ("raid-disk", "xfs"),
        ("dram-mem", "tmpfs"),
        ("nvmm-wof", "pmfs"),
    ];
    let apps: Vec<(String, Vec<String>)> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .flat_map(|w| {
            ["fsync-safe", "journaled"].map(|m| {
                (
                    format!("ycsb-{w}"),
                    vec![
                        format!("mode={m}"),
                        "operations=100".into(),
                        "scale=0.2".into(),
                    ],
                )
            })
        })
        .chain([(
            "memcached".to_string(),
            vec!["requests=2000".to_string(), "scale=0.01".into()],
        )])
        .collect();
    for (dev, fs) in devices {
        for (name, pairs) in &apps {
            let s = app_spec(dev, fs, name, pairs);
            let (a, b) = (app(&s), app(&s));
            assert_eq!(a, b, "{name} on {dev} is not deterministic");
            assert!(a["metric"].as_f64().unwrap() > 0.0, "{name} on {dev}: {a}");
        }
    }
}

/// A sync per write costs more on a disk than on an NVM array, and the
/// same writes with no sync (journaled on tmpfs is device-free) are not
/// slower on DRAM than FSYNC_SAFE on the disk.
#[test]
fn fsync_safe_pays_the_device_and_spf_pays_only_dirty_pages() {
    let ops = ["mode=fsync-safe".to_string(), "operations=200".into()];
    let hdd = metric(&app_spec("hdd-7200", "ext4", "ycsb-a", &ops));
    let moneta = metric(&app_spec("moneta-balance", "xfs", "ycsb-a", &ops));
    assert!(moneta > 2.0 * hdd, "moneta {moneta} hdd {hdd}");
    // default msync flushes every line of the mapped files, SPF only the
    // written pages: NVMM-WOF (default, WOF) against NVMM-Opt (SPF, WOF)
    let wof = app(&app_spec("nvmm-wof", "pmfs", "ycsb-a", &ops));
    let opt = app(&app_spec("nvmm-opt", "pmfs", "ycsb-a", &ops));
    let lines = |v: &Value| v["model"]["nvmm_lines_flushed"].as_f64().unwrap();
    assert!(
        lines(&wof) > 100.0 * lines(&opt),
        "{} {}",
        lines(&wof),
        lines(&opt)
    );
    assert!(opt["metric"].as_f64().unwrap() > wof["metric"].as_f64().unwrap());
    // the msync's time is the device's in the time by layer
    assert!(wof["time_by_layer"]["device"]["share"].as_f64().unwrap() > 0.5);
}

/// JOURNALED: a write waits for the journal thread's next commit (a third
/// of journalCommitInterval): the wait is group commit time and shrinks
/// with the interval.
#[test]
fn journaled_writes_wait_for_the_timed_group_commit() {
    let run = |interval: &str| {
        app(&app_spec(
            "null",
            "xfs",
            "ycsb-a",
            &[
                "mode=journaled".into(),
                "operations=200".into(),
                format!("commit_interval={interval}"),
            ],
        ))
    };
    let (slow, fast) = (run("100ms"), run("10ms"));
    let gc = |v: &Value| {
        v["time_by_layer"]["group_commit"]["ns_per_op"]
            .as_f64()
            .unwrap()
    };
    // about half of a third of 100 ms per update, half of the ops update
    assert!(gc(&slow) > 5e6 && gc(&slow) < 20e6, "{}", gc(&slow));
    assert!(gc(&fast) < gc(&slow) / 3.0, "{} {}", gc(&fast), gc(&slow));
    let upd = &slow["operations"]["update"]["mean_ns"];
    assert!(upd.as_f64().unwrap() > 10e6, "{upd}");
}

/// memcached: gets are cheaper than sets, so the get-heavy ratio is not
/// slower; unknown ratios are refused naming the parameter.
#[test]
fn memcached_ratios_and_errors() {
    let run = |ratio: &str| {
        metric(&app_spec(
            "pdram",
            "pmfs",
            "memcached",
            &[
                format!("ratio={ratio}"),
                "requests=4000".into(),
                "llc=0".into(),
            ],
        ))
    };
    assert!(run("1:30") >= run("1:6"));
    let err = app_spec("pdram", "pmfs", "memcached", &["ratio=lots".into()])
        .run_jobs()
        .expect_err("refused");
    // the message with its causes
    let mut e = err.to_string();
    let mut src = std::error::Error::source(&err);
    while let Some(s) = src {
        e.push_str(&format!(": {s}"));
        src = s.source();
    }
    assert!(e.contains("ratio") && e.contains("1:30"), "{e}");
}
