//! Issue 57: the pgbench and RocksDB models' logs and background work
//! follow the programs' mechanisms: PostgreSQL rewrites its partly filled
//! WAL page at every commit and logs whole pages after a checkpoint;
//! RocksDB's synced puts force the file system's log for their WAL's new
//! size, and its memtables become L0 tables that compaction merges.

mod common;

use serde_json::Value;

/// The job's `app`, `fs` and device-request objects for `name` with
/// `pairs` on `device`.
fn run(device: &str, name: &str, pairs: &str) -> (Value, Value, Value) {
    let j = common::app_job(device, name, pairs);
    (
        j["app"].clone(),
        j["storlab"]["fs"].clone(),
        j["storlab"]["host_software"]["device_requests"].clone(),
    )
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

#[test]
fn pgbench_commits_rewrite_the_wal_page_and_sync_once() {
    let (app, fs, dev) = run(
        "raid-disk",
        "pgbench",
        "scale=0.02,transactions=600,threads=1",
    );
    let n = f(&app, "operations_counted");
    assert_eq!(n, 600.0, "{app}");
    let model = &app["model"];
    // a transaction's WAL: its records, a few hundred bytes
    let wal = f(model, "wal_bytes") / n;
    assert!(
        (300.0..1000.0).contains(&wal),
        "{wal} B of WAL a transaction"
    );
    // each commit writes the WAL page it ends in (8 KiB; two when it
    // crosses a page), so bytes written a transaction are about one page
    // and not the records' size, and a commit is one flush: the WAL is
    // recycled (allocated), so fdatasync forces no file-system log
    let wb = f(&dev, "write_bytes") / n;
    assert!(
        (8192.0..8192.0 * 1.3).contains(&wb),
        "{wb} B written a transaction"
    );
    let flushes = f(&dev, "flush") / n;
    assert!(
        (0.95..1.1).contains(&flushes),
        "{flushes} flushes a transaction"
    );
    // (the file system's log is written only when its in-core buffer
    // fills with the writes' timestamp updates, not by the commits)
    assert!(f(&fs, "journal_writes") < 0.02 * n, "{fs}");
    // pgbench -i's tables are full (fillfactor 100): the first update on
    // a page moves its row; no checkpoint in a short run, so no page
    // images
    assert!(f(model, "cold_updates") > 0.5 * n, "{model}");
    assert_eq!(f(model, "full_page_images"), 0.0, "{model}");
    assert_eq!(f(model, "checkpoints"), 0.0, "{model}");
}

#[test]
fn pgbench_checkpoints_bring_full_page_images_and_data_syncs() {
    // a checkpoint every 2 s of a run that lasts longer: after each, the
    // first change to a page logs the page, so the WAL per transaction
    // grows many times over, and the checkpointer writes the dirty
    // buffers and fsyncs the data files
    let base = "scale=0.02,threads=2,transactions=4000";
    let (app0, _, dev0) = run("fusion-io", "pgbench", base);
    let (app1, fs1, dev1) = run(
        "fusion-io",
        "pgbench",
        &format!("{base},checkpoint_timeout=1s,completion_target=0.5"),
    );
    let (m0, m1) = (&app0["model"], &app1["model"]);
    assert!(f(m1, "checkpoints") >= 1.0, "{m1}");
    assert!(f(m1, "full_page_images") > 100.0, "{m1}");
    assert!(
        f(m1, "wal_bytes") > 2.0 * f(m0, "wal_bytes"),
        "{m0} against {m1}"
    );
    assert!(
        f(&dev1, "write") > f(&dev0, "write"),
        "{dev0} against {dev1}"
    );
    assert!(f(&fs1, "writeback_writes") > 0.0, "{fs1}");
}

#[test]
fn rocksdb_synced_puts_force_the_log_for_the_wal_size() {
    let (app, fs, dev) = run(
        "raid-disk",
        "rocksdb",
        "scale=0.01,writes=500,reads=500,threads=1",
    );
    let n = f(&app, "operations_counted");
    assert_eq!(n, 500.0, "{app}");
    // the WAL page written, then a log force (its write with a pre-flush
    // and a post-flush): two writes and two flushes a put
    let w = f(&dev, "write") / n;
    let fl = f(&dev, "flush") / n;
    assert!((1.9..2.2).contains(&w), "{w} writes a put");
    assert!((1.9..2.2).contains(&fl), "{fl} flushes a put");
    assert!(f(&fs, "size_updates") > 0.9 * n, "{fs}");
    // unsynced puts only reach the page cache
    let (_, _, dev0) = run(
        "raid-disk",
        "rocksdb",
        "scale=0.01,writes=500,reads=500,threads=1,sync=0",
    );
    assert!(f(&dev0, "flush") < 0.05 * n, "{dev0}");
}

#[test]
fn rocksdb_memtables_flush_to_l0_and_compact_into_l1() {
    // small memtables: 256 KiB each, so 20,000 unsynced puts fill ten
    // of them; L0 reaches the trigger and compaction merges it into L1
    let (app, _, dev) = run(
        "fusion-io",
        "rocksdb",
        "scale=0.01,writes=20000,reads=2000,threads=1,sync=0,write_buffer_size=256k,target_file_size=1m,cache_size=0",
    );
    let m = &app["model"];
    assert!(f(m, "memtable_flushes") >= 8.0, "{m}");
    assert!(f(m, "compactions") >= 1.0, "{m}");
    let levels = m["level_bytes"].as_array().unwrap();
    assert!(
        levels[1].as_f64().unwrap() > 0.0,
        "L1 holds the merged tables: {m}"
    );
    // what compaction read it had written before, and it wrote what it
    // merged
    assert!(f(m, "compaction_read_bytes") > 0.0 && f(m, "compaction_write_bytes") > 0.0);
    // gets search tables: some read a block from a file
    assert!(f(m, "block_reads") > 0.0, "{m}");
    assert!(
        f(&dev, "write_bytes") > f(m, "compaction_write_bytes") * 0.5,
        "{dev}"
    );
}

#[test]
fn delayed_logging_writes_the_log_only_when_forced_or_full() {
    // buffered Postmark syncs nothing: the studies' 2.6 XFS writes each
    // in-core log buffer as it fills, with a flush; with delayed logging
    // (Linux 2.6.39 and later) the committed items stay in memory
    let pairs = "scale=0.002";
    let old = common::app_job("raid-disk", "postmark", pairs);
    let new = common::app_job_set("raid-disk", "postmark", pairs, &["fs.delayed_logging=true"]);
    let jw = |j: &Value| f(&j["storlab"]["fs"], "journal_writes");
    assert!(jw(&old) > 10.0, "{}", old["storlab"]["fs"]);
    assert_eq!(jw(&new), 0.0, "{}", new["storlab"]["fs"]);
    // a forced log is written all the same: RocksDB's synced puts
    let r = common::app_job_set(
        "raid-disk",
        "rocksdb",
        "scale=0.01,writes=300,reads=0",
        &["fs.delayed_logging=true"],
    );
    assert!(jw(&r) >= 290.0, "{}", r["storlab"]["fs"]);
}

#[test]
fn a_file_system_on_the_first_gigabyte_keeps_a_disk_s_seeks_short() {
    // the XFS log lies in the middle of the file system: on a whole 1 TB
    // disk half a terabyte from the files, on its first GiB (a partition,
    // app check's export) 0.5 GiB away; RocksDB's synced puts go between
    // the two
    let pairs = "scale=0.01,writes=300,reads=0";
    let ms = |set: &[&str]| {
        let j = common::app_job_set("hdd-7200", "rocksdb", pairs, set);
        f(&j["app"], "elapsed_ns") / f(&j["app"], "operations_counted") / 1e6
    };
    let whole = ms(&[]);
    let part = ms(&["fs.size_bytes=1073741824"]);
    assert!(
        part < 0.8 * whole,
        "{part} ms a put on 1 GiB, {whole} ms on the whole disk"
    );
}

#[test]
fn a_data_set_beyond_the_device_is_refused_by_name_not_allocated() {
    // 1.6 billion accounts (a 230 TB heap) on a 4 TB array: an error
    // naming the application and the fix, before any per-page state is
    // allocated for it
    use storlab_model::config::PresetStore;
    use storlab_model::SystemConfig;
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), "raid-disk", &[]).expect("preset loads");
    for (app, pairs) in [
        ("pgbench", "scale_factor=16777216,transactions=10"),
        ("sqlite", "rows=1099511627776,transactions=10"),
    ] {
        let jobs = storlab_workload::fio::parse_cli_args(&storlab_apps::job_args(
            app,
            &[pairs.to_string()],
        ))
        .expect("job args parse");
        let Err(e) = storlab_apps::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}) else {
            panic!("{app}: a data set beyond the device ran");
        };
        let e = e.to_string();
        assert!(e.contains(app) && e.contains("does not fit"), "{e}");
    }
}
