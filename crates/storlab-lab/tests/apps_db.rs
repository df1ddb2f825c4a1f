//! The database application models (issue 41): the `apps-db` study's rows,
//! and every model on several device classes, deterministic, with the
//! device showing where the mechanisms say it must.

mod support;
use support::reproduce;

use storlab_lab::studies::apps_db::{app_spec, HASTE_DEVICES, NVMM_CONFIGS};

#[test]
fn apps_db_rows() {
    let (rep, _) = reproduce("apps-db");
    // HASTE: 2 Berkeley DB kinds x 6 devices; Table V: 4; NVMM: 5;
    // flash placement: 3
    assert_eq!(HASTE_DEVICES.len(), 6);
    assert_eq!(NVMM_CONFIGS.len(), 8);
    assert_eq!(rep.rows.len(), 12 + 4 + 5 + 3, "{:?}", rep.rows);
    assert!(rep.failures().is_empty(), "{:?}", rep.failures());
    // the flash disk cache, started warm, is above the disks
    let fc = rep
        .rows
        .iter()
        .find(|r| r.what.contains("flash as a disk cache"))
        .expect("the disk-cache row");
    assert!(fc.value.expect("a number") > 0.0, "{fc:?}");
    // the calibrated rows hold (their figure is an input)
    for r in rep
        .rows
        .iter()
        .filter(|r| r.what.starts_with("Moneta Table V"))
    {
        assert!(r.pass, "{r:?}");
    }
}

/// Small runs of each application (sizes scaled down for a debug build).
const SMALL: [(&str, &[&str]); 6] = [
    ("bdb-btree", &["scale=0.01", "cache=4m", "transactions=400"]),
    ("bdb-hash", &["scale=0.01", "cache=4m", "transactions=400"]),
    (
        "oltp",
        &["scale=0.01", "buffer_pool=16m", "transactions=60"],
    ),
    (
        "tpcc",
        &[
            "scale=0.01",
            "buffer_pool=16m",
            "transactions=60",
            "threads=8",
        ],
    ),
    (
        "ptfdb",
        &["scale=0.005", "shared_buffers=8m", "probes=4", "rows=20"],
    ),
    (
        "bionet",
        &["scale=0.005", "shared_buffers=8m", "depth=2", "rows=10"],
    ),
];

fn metric(dev: &str, ov: &[&str], app: &str, pairs: &[&str]) -> (f64, String) {
    let jobs = app_spec(dev, ov, app, pairs)
        .run_jobs()
        .expect("the app runs");
    let a = jobs
        .iter()
        .find_map(|j| j.app.clone())
        .expect("an app object");
    (a["metric"].as_f64().expect("a metric"), a.to_string())
}

#[test]
fn every_db_app_runs_on_every_device_class_deterministically() {
    // an NVM array, a flash SSD, a disk RAID, NVMM, DRAM memory
    let devices: [(&str, &[&str]); 5] = [
        ("moneta-balance", &[]),
        ("x25e", &["ssd.ftl.precondition=\"full\""]),
        ("raid-disk", &[]),
        ("nvmm-opt", &["host.file_system=\"pmfs\""]),
        ("dram-mem", &[]),
    ];
    for (app, pairs) in SMALL {
        for (dev, ov) in devices {
            let (m1, a1) = metric(dev, ov, app, pairs);
            let (_, a2) = metric(dev, ov, app, pairs);
            assert!(m1.is_finite() && m1 > 0.0, "{app} on {dev}: {m1}");
            assert_eq!(a1, a2, "{app} on {dev} is not deterministic");
        }
    }
}

#[test]
fn a_sync_per_commit_costs_more_on_disks_than_on_moneta() {
    // the IO-bound and sync-bound parts: a disk RAID is slower for every
    // database (rates lower, seconds higher)
    for (app, pairs) in SMALL {
        let (fast, _) = metric("moneta-balance", &[], app, pairs);
        let (slow, _) = metric("raid-disk", &[], app, pairs);
        let seconds = app == "ptfdb" || app == "bionet";
        if seconds {
            assert!(slow > fast, "{app}: raid-disk {slow} s, moneta {fast} s");
        } else {
            assert!(slow < fast, "{app}: raid-disk {slow}/s, moneta {fast}/s");
        }
    }
}

#[test]
fn a_larger_innodb_buffer_pool_hits_more_and_runs_faster_on_disks() {
    // misses are reads from the disk RAID and dirty victims are flushed
    // by the user threads: a pool 64 times larger must do better
    let run = |pool: &'static str| {
        let (m, a) = metric(
            "raid-disk",
            &[],
            "oltp",
            &["scale=0.01", "transactions=100", pool],
        );
        let v: serde_json::Value = serde_json::from_str(&a).expect("json");
        (m, v["model"]["pool_hit_ratio"].as_f64().expect("hit ratio"))
    };
    let (small, small_hits) = run("buffer_pool=256k");
    let (large, large_hits) = run("buffer_pool=16m");
    assert!(large_hits > small_hits, "{large_hits} <= {small_hits}");
    assert!(
        large > small,
        "16 MB pool {large} tx/s, 256 KB pool {small} tx/s"
    );
}

#[test]
fn hybrid_memory_faults_queue_on_the_flash() {
    // the same faults from 32 clients wait longer each than from 1 when
    // each holds the flash longer (hybrid_busy_us): they queue on one card
    let run = |threads: &'static str, busy: &'static str| {
        let (_, a) = metric(
            "raid-hdd2",
            &[],
            "tpcc",
            &[
                "scale=0.01",
                "buffer_pool=1m",
                "hybrid=128m",
                "transactions=200",
                threads,
                busy,
                "cpu_us=100",
            ],
        );
        let v: serde_json::Value = serde_json::from_str(&a).expect("json");
        let faults = v["model"]["hybrid_faults"].as_f64().expect("faults");
        let dev = v["time_by_layer"]["device"]["ns_per_op"]
            .as_f64()
            .expect("device time");
        (faults, dev)
    };
    let (f_idle, d_idle) = run("threads=32", "hybrid_busy_us=0");
    let (f_busy, d_busy) = run("threads=32", "hybrid_busy_us=200");
    assert!(f_idle > 100.0 && f_busy > 100.0, "{f_idle} {f_busy}");
    assert!(d_busy > 1.5 * d_idle, "busy {d_busy} ns/op, idle {d_idle}");
}

#[test]
fn a_berkeley_db_miss_writes_its_dirty_victim_back_in_the_steady_state() {
    // every transaction dirties the leaf it reads and the pool turns over
    // long before a checkpoint: a miss evicts a dirty page and writes it
    // (buffered pwrite) before reading, beside the log's writes
    for app in ["bdb-btree", "bdb-hash"] {
        let pairs = ["scale=0.01", "cache=4m", "transactions=400"];
        let jobs = app_spec("moneta-balance", &[], app, &pairs)
            .run_jobs()
            .expect("the app runs");
        let j = jobs.iter().find(|j| j.app.is_some()).expect("the app job");
        let a = j.app.as_ref().expect("an app object");
        let misses = a["model"]["pool_misses"].as_u64().expect("misses");
        let victims = a["model"]["victims_written"].as_u64().expect("victims");
        assert!(misses > 100, "{app}: {misses} misses");
        assert!(
            victims >= misses * 8 / 10 && victims <= misses,
            "{app}: {victims} dirty victims written for {misses} misses"
        );
        // the reads of the misses reach the device
        assert!(
            j.dirs[0].ios() >= misses * 8 / 10,
            "{app}: {} reads",
            j.dirs[0].ios()
        );
    }
}

#[test]
fn berkeley_db_victims_reach_the_device_at_the_rate_they_are_dirtied() {
    // the victims are buffered pwrites nobody syncs before the (60 s)
    // checkpoint; in the steady state the kernel's flusher writes back as
    // many pages as they dirty. The run starts with the page cache dirty
    // up to the background threshold, so writeback of the database file
    // follows the victims from the first one: beyond the log's own
    // writeback (one IO per log flush), about one page per victim
    let pairs = ["scale=0.01", "cache=4m", "transactions=400"];
    // a 16 MB page cache: its 10 % background threshold is 409 pages,
    // well inside the 40 MB database
    let ov = ["fs.page_cache_bytes=16777216"];
    let jobs = app_spec("moneta-balance", &ov, "bdb-btree", &pairs)
        .run_jobs()
        .expect("the app runs");
    let j = jobs.iter().find(|j| j.app.is_some()).expect("the app job");
    let a = j.app.as_ref().expect("an app object");
    let victims = a["model"]["victims_written"].as_f64().expect("victims");
    let at_start = a["model"]["page_cache_dirty_at_start"]
        .as_f64()
        .expect("dirty at start");
    assert_eq!(at_start, 409.0, "{a}");
    let flushes = a["group_commit"]["log_flushes"].as_f64().expect("flushes");
    let fs = &j.storlab["fs"];
    let wb_pages = fs["writeback_bytes"].as_f64().expect("writeback bytes") / 4096.0;
    let wb_ios = fs["writeback_writes"].as_f64().expect("writeback IOs");
    assert!(victims > 100.0, "{victims} victims");
    // the log's pages are written back by its fdatasyncs, one IO a flush
    // of at most two pages (an append that crosses a page); the rest are
    // the database's, about one IO a victim (a quarter of the
    // transactions, deletes of absent keys, dirty nothing: fewer victims
    // a miss, as many IOs a victim)
    let db_pages = wb_pages - 2.0 * flushes;
    assert!(
        db_pages >= 0.6 * victims && wb_ios - flushes >= 0.9 * victims,
        "{wb_pages} pages in {wb_ios} writeback IOs, {flushes} log flushes, {victims} victims"
    );
    // the dirty pages stay at the threshold: no more written than dirtied
    assert!(
        wb_pages <= victims + 2.0 * flushes + 64.0,
        "{wb_pages} pages"
    );
}

#[test]
fn table_v_runs_berkeley_db_oltp_and_ptfdb_as_the_command_line_does() {
    // the lab's Table V cell and `storlab sim --app NAME --device D` with
    // the same pairs run the same configuration: the same metric
    let pairs = [
        "scale=0.01",
        "transactions=300",
        "cache=4m",
        "buffer_pool=16m",
        "shared_buffers=8m",
        "probes=4",
        "rows=20",
    ];
    let set: Vec<String> = vec![pairs.join(",")];
    let devices = vec!["moneta-balance".to_string()];
    let t = storlab_lab::tablev::run(&devices, &set, &|| {}).expect("runs");
    for (label, app) in [
        ("Berkeley-DB BTree", "bdb-btree"),
        ("Berkeley-DB HashTable", "bdb-hash"),
        ("OLTP", "oltp"),
        ("PTFDB", "ptfdb"),
    ] {
        let (b, cells) = t
            .rows
            .iter()
            .find(|(b, _)| b.label == label)
            .expect("a Table V row");
        let lab = cells[0].unwrap_or_else(|| panic!("{label}: {:?}", t.notes));
        let info = storlab_apps::find(app, "test").expect("the app");
        let mine: Vec<&str> = pairs
            .iter()
            .copied()
            .filter(|p| {
                let k = p.split('=').next().unwrap_or("");
                storlab_apps::COMMON_PARAMS
                    .iter()
                    .chain(info.params)
                    .any(|d| d.name == k)
            })
            .collect();
        let (cli, _) = metric("moneta-balance", &[], app, &mine);
        assert!(matches!(b.what, storlab_lab::tablev::What::App(a) if a == app));
        assert!(
            (lab - cli).abs() <= 1e-9 * cli.abs(),
            "{label}: lab {lab}, command line {cli}"
        );
    }
}

/// The NVMM study's TPC-C figures cannot hold together with the stand-in
/// SSD and HDD whatever the CPU per transaction (note [msync]): where
/// NVMM-Raw runs 1.8x the SSD it is several times 28x the HDD, and where
/// it falls 10 % below DRAM (near its bandwidth cap, its 1/8 of DRAM's
/// bandwidth) it is far above 1.8x the SSD.
#[test]
fn nvmm_tpcc_figures_need_a_different_ssd_to_hdd_ratio_than_the_stand_ins() {
    use storlab_model::config::PresetStore;
    use storlab_model::SystemConfig;
    let store = PresetStore::default();
    let info = storlab_apps::find("tpcc", "test").unwrap();
    let run = |label: &str, cpu_us: u32| {
        let (_, dev, fs) = *NVMM_CONFIGS
            .iter()
            .find(|c| c.0 == label)
            .expect("a configuration");
        let mut set = vec![format!("host.file_system=\"{fs}\""), "host.cores=16".into()];
        if fs != "ext4" {
            set.push("device.capacity_bytes=17179869184".into());
        }
        let (resolved, cfg) = SystemConfig::load(&store, dev, &set).expect("preset");
        let pairs = vec!["transactions=3000".to_string(), format!("cpu_us={cpu_us}")];
        storlab_apps::simulate_app(&cfg, &resolved, info, &pairs, "test", 1).unwrap()
    };
    // the CPU that gives the study's NVMM over SSD
    let (n, s, h) = (run("NVMM-Raw", 3000), run("SSD", 3000), run("HDD", 3000));
    assert!((1.35..=2.25).contains(&(n / s)), "NVMM/SSD {}", n / s);
    assert!(n / h > 2.0 * 28.0, "NVMM/HDD {}", n / h);
    // a CPU low enough for NVMM-Raw to fall below DRAM: bandwidth-bound
    let (n, d, s) = (run("NVMM-Raw", 700), run("DRAM", 700), run("SSD", 700));
    assert!(1.0 - n / d > 0.075, "NVMM {n} DRAM {d}");
    assert!(n / s > 2.0 * 1.8, "NVMM/SSD {}", n / s);
    // and the bandwidth is what caps it: PM-BW (bandwidth alone) runs
    // where NVMM-Raw does, PM-Lat (read latency alone) near DRAM
    let (bw, lat) = (run("PM-BW", 700), run("PM-Lat", 700));
    assert!(
        (bw / n - 1.0).abs() < 0.1 && lat > 1.2 * bw,
        "PM-BW {bw} PM-Lat {lat} NVMM {n}"
    );
}
