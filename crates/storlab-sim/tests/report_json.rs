//! The JSON writer: exact values, fio's key order (checked against a real
//! fio 3.33 run), agreement with fio on the same latency samples,
//! determinism, and parsing by serde_json and Python.

mod fio_peer;

use std::path::Path;
use std::process::{Command, Stdio};

use fio_peer::run_fio;
use serde_json::Value;
use storlab_model::{Breakdown, Component, Op};
use storlab_sim::report::{json_string, write_json, ReportOptions, FIO_PERCENTILES};
use storlab_sim::stats::{group, JobStats, Sampler};

/// 100 reads of 4 KiB with clat 1, 2, ..., 100 µs and slat 500 ns, over 1 s;
/// 10 syncs of 20 µs; a breakdown of 1 µs syscall + 9 µs media.
fn known_job() -> JobStats {
    let mut j = JobStats::new("known", 0);
    j.options = vec![
        ("rw".to_string(), "randread".to_string()),
        ("bs".to_string(), "4k".to_string()),
    ];
    let mut bd = Breakdown::default();
    bd.add(Component::Syscall, 1_000);
    bd.add(Component::Media, 9_000);
    for i in 1..=100u64 {
        j.record(Op::Read, 500, i * 1_000, 4096, &bd);
    }
    for _ in 0..10 {
        j.record(Op::Flush, 0, 20_000, 0, &Breakdown::default());
    }
    j.runtime_ns = [1_000_000_000, 0, 0];
    j.job_runtime_ns = 1_000_000_000;
    j.iodepth = 1;
    j.storlab =
        serde_json::json!({ "wear": { "unit": "line writes", "units": 4, "max": 3, "mean": 1.5 } });
    j
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("storlab's JSON parses")
}

fn within(got: u64, want: u64, rel: f64) -> bool {
    (got as f64 - want as f64).abs() <= want as f64 * rel + 1.0
}

#[test]
fn exact_values_for_known_samples() {
    let out = json_string(&[known_job()], &ReportOptions::default());
    let v = parse(&out);
    let r = &v["jobs"][0]["read"];
    assert_eq!(r["io_bytes"], 409_600);
    assert_eq!(r["io_kbytes"], 400);
    assert_eq!(r["bw_bytes"], 409_600);
    assert_eq!(r["bw"], 400);
    assert_eq!(r["iops"].as_f64(), Some(100.0));
    assert_eq!(r["runtime"], 1000);
    assert_eq!(r["total_ios"], 100);
    let c = &r["clat_ns"];
    assert_eq!(c["min"], 1_000);
    assert_eq!(c["max"], 100_000);
    assert_eq!(c["N"], 100);
    assert_eq!(c["mean"].as_f64(), Some(50_500.0));
    // Sample stddev of 1000·(1..=100): 1000·sqrt(100·101/12).
    let sd = 1000.0 * (100.0f64 * 101.0 / 12.0).sqrt();
    assert!(
        (c["stddev"].as_f64().unwrap() - sd).abs() < 1e-6,
        "{}",
        c["stddev"]
    );
    let s = &r["slat_ns"];
    assert_eq!(
        (s["min"].as_u64(), s["max"].as_u64()),
        (Some(500), Some(500))
    );
    assert_eq!(s["stddev"].as_f64(), Some(0.0));
    assert!(
        s.get("percentile").is_none(),
        "fio prints slat percentiles only on request"
    );
    let l = &r["lat_ns"];
    assert_eq!(
        (l["min"].as_u64(), l["max"].as_u64()),
        (Some(1_500), Some(100_500))
    );
    assert_eq!(l["mean"].as_f64(), Some(51_000.0));
    // Percentile p of 1..=100 µs is ceil(p) µs, within HDR precision.
    let p = c["percentile"].as_object().unwrap();
    assert_eq!(p.len(), 17);
    for q in FIO_PERCENTILES {
        let key = format!("{q:.6}");
        let want = (q.ceil() as u64) * 1_000;
        let got = p[&key].as_u64().unwrap();
        assert!(within(got, want, 0.001), "p{key}: got {got}, want {want}");
    }
    assert_eq!(
        p["99.990000"], 100_000,
        "top percentile clamps to the exact max"
    );
    // Latency buckets of 1..=100 µs in fio's edges.
    let us = &v["jobs"][0]["latency_us"];
    let want = [
        ("2", 1.0),
        ("4", 2.0),
        ("10", 6.0),
        ("20", 10.0),
        ("50", 30.0),
        ("100", 50.0),
        ("250", 1.0),
        ("500", 0.0),
    ];
    for (k, pct) in want {
        assert_eq!(us[k].as_f64(), Some(pct), "latency_us[{k}]");
    }
    let total: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|m| v["jobs"][0][m].as_object().unwrap().values())
        .map(|x| x.as_f64().unwrap())
        .sum();
    assert!((total - 100.0).abs() < 1e-9, "buckets sum to {total}");
    // Syncs: fio's shape, completion latency, percentiles.
    let sync = &v["jobs"][0]["sync"];
    assert_eq!(sync["total_ios"], 10);
    assert_eq!(sync["lat_ns"]["min"], 20_000);
    assert_eq!(sync["lat_ns"]["percentile"]["50.000000"], 20_000);
    // Job-level figures.
    let j = &v["jobs"][0];
    assert_eq!(j["jobname"], "known");
    assert_eq!(j["job options"]["rw"], "randread");
    assert_eq!(j["job_runtime"], 1000);
    assert_eq!(j["elapsed"], 1);
    assert_eq!(j["latency_depth"], 1);
    assert_eq!(j["storlab"]["wear"]["max"], 3);
    assert_eq!(
        v["fio version"],
        format!("storlab-{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(v["timestamp"], 0);
    assert_eq!(v["disk_util"], serde_json::json!([]));
    // fio's text layout: `"key" : value`, six decimals for doubles.
    assert!(out.contains("\n        \"iops\" : 100.000000,\n"), "{out}");
    assert!(out.starts_with("{\n  \"fio version\" : \"storlab-"));
    assert!(out.ends_with("\n}\n"));
}

#[test]
fn breakdown_ns_has_the_agreed_shape() {
    let j = known_job();
    let b = j.breakdown_ns();
    assert_eq!(b["read"]["syscall"].as_f64(), Some(1_000.0));
    assert_eq!(b["read"]["media"].as_f64(), Some(9_000.0));
    assert_eq!(b["read"].as_object().unwrap().len(), 20);
    // waits are named by the resource waited for
    for wait in [
        "thread_wait",
        "scheduler_wait",
        "worker_wait",
        "lock_wait",
        "core_wait",
    ] {
        assert_eq!(b["read"][wait].as_f64(), Some(0.0), "{wait}");
    }
    assert_eq!(b["sync"]["media"].as_f64(), Some(0.0));
    assert!(
        b.get("write").is_none(),
        "directions without IO are left out"
    );
}

/// Compare the key order of every object fio writes with ours at the same
/// path (option maps and disk_util excepted: their contents are the job's).
fn compare_keys(fio: &Value, ours: &Value, path: &str) {
    let (Value::Object(f), Value::Object(o)) = (fio, ours) else {
        if let (Value::Array(f), Value::Array(o)) = (fio, ours) {
            if let (Some(f0), Some(o0)) = (f.first(), o.first()) {
                compare_keys(f0, o0, &format!("{path}[0]"));
            }
        }
        return;
    };
    let fk: Vec<&str> = f
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "disk_util")
        .collect();
    let ok: Vec<&str> = o
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "disk_util" && *k != "storlab")
        .collect();
    assert_eq!(fk, ok, "keys of {path} differ from fio's");
    for (k, fv) in f {
        if matches!(k.as_str(), "job options" | "global options" | "disk_util") {
            continue;
        }
        compare_keys(fv, &o[k], &format!("{path}.{k}"));
    }
}

#[test]
fn key_order_matches_a_real_fio_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.fio"),
        "[global]\nioengine=psync\nsize=256k\nbs=4k\nfilename=data\n\n[t]\nrw=randrw\nfsync=4\n",
    )
    .unwrap();
    let fio = parse(&run_fio(dir.path(), &["--output-format=json", "t.fio"]));
    assert!(fio["jobs"][0]["sync"]["lat_ns"].get("percentile").is_some());

    let mut j = known_job();
    j.record(Op::Write, 0, 3_000, 4096, &Breakdown::default());
    j.runtime_ns[1] = 1_000_000;
    let opts = ReportOptions {
        global_options: vec![("ioengine".to_string(), "psync".to_string())],
        ..ReportOptions::default()
    };
    let ours = parse(&json_string(&[j], &opts));
    compare_keys(&fio, &ours, "$");
    // Spot-check the paths tools read.
    for p in [
        "/jobs/0/read/clat_ns/percentile/99.000000",
        "/jobs/0/write/clat_ns/percentile/50.000000",
        "/jobs/0/latency_us/1000",
        "/jobs/0/latency_ms/>=2000",
        "/jobs/0/iodepth_level/>=64",
        "/jobs/0/sync/lat_ns/N",
    ] {
        assert!(fio.pointer(p).is_some(), "fio has {p}");
        assert!(ours.pointer(p).is_some(), "storlab lacks {p}");
    }
    assert_eq!(
        ours.as_object()
            .unwrap()
            .keys()
            .next_back()
            .map(String::as_str),
        Some("disk_util")
    );
    assert_eq!(
        ours["jobs"][0]
            .as_object()
            .unwrap()
            .keys()
            .next_back()
            .map(String::as_str),
        Some("storlab")
    );
}

/// Parse fio's per-IO latency log: (ns, ddir, bytes) per line.
fn read_log(path: &Path) -> Vec<(u64, u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<u64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (f[1], f[2], f[3])
        })
        .collect()
}

#[test]
fn agrees_with_fio_on_the_same_samples() {
    let dir = tempfile::tempdir().unwrap();
    let fio = parse(&run_fio(
        dir.path(),
        &[
            "--name=t",
            "--ioengine=psync",
            "--filename=data",
            "--size=512k",
            "--bs=4k",
            "--rw=randrw",
            "--write_lat_log=ll",
            "--output-format=json",
        ],
    ));
    let clat = read_log(&dir.path().join("ll_clat.1.log"));
    let lat = read_log(&dir.path().join("ll_lat.1.log"));
    assert_eq!(clat.len(), lat.len());
    assert!(clat.len() >= 100, "fio logged {} IOs", clat.len());
    let fj = &fio["jobs"][0];
    let mut j = JobStats::new("t", 0);
    for (&(c, dir, bytes), &(l, dir2, _)) in clat.iter().zip(&lat) {
        assert_eq!(dir, dir2);
        let op = if dir == 0 { Op::Read } else { Op::Write };
        j.record(op, l - c, c, bytes, &Breakdown::default());
    }
    for (d, name) in ["read", "write"].iter().enumerate() {
        j.runtime_ns[d] = fj[name]["runtime"].as_u64().unwrap() * 1_000_000;
    }
    let ours = parse(&json_string(&[j], &ReportOptions::default()));
    let oj = &ours["jobs"][0];
    for name in ["read", "write"] {
        let (f, o) = (&fj[name], &oj[name]);
        for k in [
            "io_bytes",
            "io_kbytes",
            "bw_bytes",
            "bw",
            "iops",
            "runtime",
            "total_ios",
        ] {
            assert_eq!(f[k], o[k], "{name}.{k}");
        }
        for lat in ["clat_ns", "lat_ns"] {
            let (f, o) = (&f[lat], &o[lat]);
            for k in ["min", "max", "N"] {
                assert_eq!(f[k], o[k], "{name}.{lat}.{k}");
            }
            for k in ["mean", "stddev"] {
                let (a, b) = (f[k].as_f64().unwrap(), o[k].as_f64().unwrap());
                assert!(
                    (a - b).abs() <= 1e-6 * a.abs() + 1e-6,
                    "{name}.{lat}.{k}: fio {a}, ours {b}"
                );
            }
        }
        // fio's buckets are ±1.6 % wide, ours ±0.1 %.
        let fp = f["clat_ns"]["percentile"].as_object().unwrap();
        let op = o["clat_ns"]["percentile"].as_object().unwrap();
        assert_eq!(fp.keys().collect::<Vec<_>>(), op.keys().collect::<Vec<_>>());
        for (k, fv) in fp {
            let (a, b) = (fv.as_u64().unwrap(), op[k].as_u64().unwrap());
            assert!(within(b, a, 0.02), "{name} p{k}: fio {a}, ours {b}");
        }
    }
    for m in ["latency_ns", "latency_us", "latency_ms"] {
        assert_eq!(fj[m], oj[m], "{m}");
    }
}

#[test]
fn output_is_byte_identical_for_identical_input() {
    let mk = || {
        let mut j = known_job();
        let mut s = Sampler::new(Sampler::FIO_DEFAULT_INTERVAL_NS, 0);
        for i in 0..5_000u64 {
            j.record(
                Op::Write,
                100,
                7_000 + (i * 7_919) % 90_000,
                8192,
                &Breakdown::default(),
            );
            s.observe(i * 400_000, &mut j);
        }
        j.runtime_ns[1] = 2_000_000_000;
        j.storlab["breakdown_ns"] = j.breakdown_ns();
        j
    };
    let opts = ReportOptions::default();
    let a = json_string(&[mk(), mk()], &opts);
    let b = json_string(&[mk(), mk()], &opts);
    assert_eq!(a, b);
    let mut w = Vec::new();
    write_json(&[mk(), mk()], &mut w, &opts).unwrap();
    assert_eq!(w, a.as_bytes());
    let v = parse(&a);
    assert!(v["jobs"][0]["write"]["bw_samples"].as_u64().unwrap() >= 3);
}

#[test]
fn python_reads_the_fields_fio_tools_use() {
    let mut j = known_job();
    j.name = "quote\" back\\slash\nnewline".to_string();
    let out = json_string(&[j.clone()], &ReportOptions::default());
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json,sys; d=json.load(sys.stdin); j=d['jobs'][0]; \
             print(j['read']['clat_ns']['percentile']['99.000000'], j['read']['iops'], \
             j['jobname'] == 'quote\" back\\\\slash\\nnewline', d['fio version'])",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 is needed to check the JSON ({e})"));
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(out.as_bytes())
        .unwrap();
    let res = child.wait_with_output().unwrap();
    assert!(res.status.success(), "python could not read the report");
    let line = String::from_utf8(res.stdout).unwrap();
    let want = format!(
        "{} 100.0 True storlab-{}\n",
        j.dirs[0].percentile(99.0),
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(line, want);
}

#[test]
fn group_reporting_merges_like_fio() {
    let mut a = JobStats::new("a", 0);
    let mut b = JobStats::new("a", 0);
    let mut c = JobStats::new("c", 1);
    let bd = Breakdown::default();
    for i in 0..100u64 {
        a.record(Op::Read, 0, 1_000 + i, 4096, &bd);
        b.record(Op::Read, 0, 5_000 + i, 4096, &bd);
        c.record(Op::Write, 0, 9_000, 4096, &bd);
    }
    a.runtime_ns[0] = 1_000_000_000;
    b.runtime_ns[0] = 2_000_000_000;
    c.runtime_ns[1] = 1_000_000_000;
    a.dirs[0].add_rate_sample(100, 25);
    b.dirs[0].add_rate_sample(300, 75);
    let g = group(&[a, b, c]);
    assert_eq!(g.len(), 2);
    let m = &g[0];
    assert_eq!((m.name.as_str(), m.members), ("a", 2));
    assert_eq!(
        m.runtime_ns[0], 2_000_000_000,
        "runtime is the longest member's"
    );
    let r = &m.dirs[0];
    assert_eq!(r.ios(), 200);
    assert_eq!((r.clat().min(), r.clat().max()), (1_000, 5_099));
    assert_eq!(r.clat().mean(), 3_049.5);
    assert!(within(r.percentile(50.0), 1_099, 0.001));
    assert!(within(r.percentile(51.0), 5_001, 0.001));
    assert_eq!(r.bw_samples().mean(), 400.0, "bandwidth samples add up");
    assert_eq!(r.iops_samples().max(), 100);
    let v = parse(&json_string(&g, &ReportOptions::default()));
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 200);
    assert_eq!(v["jobs"][0]["read"]["bw"], 200 * 4 / 2);
    assert_eq!(v["jobs"][1]["jobname"], "c");
    assert_eq!(v["jobs"][1]["groupid"], 1);
}

#[test]
fn rare_buckets_and_depths_use_fios_floors() {
    let mut j = JobStats::new("f", 0);
    for _ in 0..99_999 {
        j.record(Op::Read, 0, 500, 512, &Breakdown::default());
        j.depth.mark_depth(1);
    }
    j.record(Op::Read, 0, 3_000_000_000, 512, &Breakdown::default());
    j.depth.mark_depth(64);
    j.runtime_ns[0] = 1;
    let v = parse(&json_string(&[j], &ReportOptions::default()));
    let job = &v["jobs"][0];
    assert_eq!(job["latency_ms"][">=2000"].as_f64(), Some(0.01));
    assert_eq!(job["latency_ns"]["750"].as_f64(), Some(99.999));
    assert_eq!(job["iodepth_level"][">=64"].as_f64(), Some(0.1));
    assert_eq!(
        job["read"]["runtime"], 1,
        "a nonzero runtime is at least 1 ms"
    );
}

/// Which of a direction's latency series carry percentiles.
fn percentile_series(dir: &Value) -> [bool; 3] {
    ["slat_ns", "clat_ns", "lat_ns"].map(|k| dir[k].get("percentile").is_some())
}

/// `clat_percentiles` and `lat_percentiles` select the series with
/// percentiles as in fio: checked against fio itself on the same options.
#[test]
fn percentile_options_select_series_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = storlab_model::config::PresetStore::default();
    let (resolved, cfg) = storlab_model::SystemConfig::load(&store, "moneta-spin", &[]).unwrap();
    for extra in [
        vec![],
        vec!["--lat_percentiles=1", "--clat_percentiles=0"],
        vec!["--lat_percentiles=1"],
    ] {
        let mut args = vec!["--name=p", "--rw=randread", "--size=1m"];
        args.extend(&extra);
        let owned: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let jobs = storlab_workload::fio::parse_cli_args(&owned).unwrap();
        let r = storlab_sim::run::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).unwrap();
        let ours: Value =
            serde_json::from_str(&json_string(&r.jobs, &ReportOptions::default())).unwrap();
        let mut fio_args = vec!["--ioengine=null", "--output-format=json"];
        fio_args.extend(&args);
        let theirs: Value = serde_json::from_str(&run_fio(dir.path(), &fio_args)).unwrap();
        let [_, c, l] = percentile_series(&ours["jobs"][0]["read"]);
        let [_, fc, fl] = percentile_series(&theirs["jobs"][0]["read"]);
        assert_eq!((c, l), (fc, fl), "clat/lat percentiles with {extra:?}");
    }
}

/// A synchronous engine (fio's default, psync, among them) caps the depth
/// at 1 while `latency_depth` keeps the `iodepth` written; an asynchronous
/// one keeps `iodepth` in flight. Checked against fio itself.
#[test]
fn synchronous_engines_cap_the_queue_depth_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let store = storlab_model::config::PresetStore::default();
    let (resolved, cfg) = storlab_model::SystemConfig::load(&store, "moneta-spin", &[]).unwrap();
    // (engine option, whether depth 8 is reached)
    for (engine, deep) in [
        (None, false),
        (Some("--ioengine=psync"), false),
        (Some("--ioengine=null"), true),
    ] {
        let mut args = vec![
            "--name=q",
            "--rw=randread",
            "--size=1m",
            "--iodepth=8",
            "--filename=q.dat",
        ];
        args.extend(engine);
        let owned: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let jobs = storlab_workload::fio::parse_cli_args(&owned).unwrap();
        assert_eq!(
            jobs.jobs[0]
                .depth_note()
                .is_some_and(|n| n.contains("capped at 1")),
            !deep,
            "{engine:?}: fio's note"
        );
        let r = storlab_sim::run::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).unwrap();
        let ours: Value =
            serde_json::from_str(&json_string(&r.jobs, &ReportOptions::default())).unwrap();
        let mut fio_args = vec!["--output-format=json"];
        fio_args.extend(&args);
        let out = run_fio(dir.path(), &fio_args);
        // fio prints its note on the same stream, before the JSON.
        let theirs: Value = serde_json::from_str(&out[out.find('{').unwrap()..]).unwrap();
        assert_eq!(
            out.contains("capped at 1"),
            !deep,
            "{engine:?}: fio's own note (fio printed {})",
            &out[..out.find('{').unwrap()]
        );
        for (who, v) in [("storlab", &ours), ("fio", &theirs)] {
            assert_eq!(
                v["jobs"][0]["latency_depth"], 8,
                "{who} {engine:?}: latency_depth"
            );
        }
        // fio's null engine completes every IO at once, so fio's own depth
        // levels say nothing here; ours come from a device that takes time.
        let levels = &ours["jobs"][0]["iodepth_level"];
        let (at1, at8) = (levels["1"].as_f64().unwrap(), levels["8"].as_f64().unwrap());
        if deep {
            assert!(at8 > 50.0, "{engine:?}: depth 8 for {at8}% of IOs");
        } else {
            assert_eq!((at1, at8), (100.0, 0.0), "{engine:?}: depth levels");
        }
    }
}
