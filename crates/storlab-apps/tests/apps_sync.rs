//! Issue 57: the databases' syncs reach the device as the real programs'
//! do on XFS. InnoDB commits with fsync(2) (innodb_flush_method's default),
//! whose log write changed the file's timestamps, so XFS forces its own log
//! with each: a pre-flush, the log write and a post-flush, two device
//! flushes a commit, as `storlab app run sysbench-oltp` counts on the real
//! server (docs/apps.md). A sync with nothing to force would be one.

mod common;

use serde_json::Value;

/// The job's `app` and `fs` objects for `name` with `pairs` on `device`.
fn run(device: &str, name: &str, pairs: &str) -> (Value, Value) {
    let j = common::app_job(device, name, pairs);
    (j["app"].clone(), j["storlab"]["fs"].clone())
}

#[test]
fn innodb_commits_force_xfs_log_two_flushes_a_sync() {
    let (app, fs) = run(
        "raid-disk",
        "oltp",
        "db=64m,buffer_pool=256m,transactions=400",
    );
    let flushes = fs["flushes"].as_f64().expect("the fs layer counts flushes");
    let journal = fs["journal_writes"].as_f64().unwrap();
    let commits = app["operations_counted"].as_f64().unwrap();
    assert!(commits > 0.0, "{app}");
    // every log sync forces XFS's log: one journal write and two flushes
    // each (the page flusher's syncs add a few of their own)
    assert!(journal > 0.0, "{fs}");
    assert!(
        flushes >= 1.8 * journal,
        "two flushes a forced log: {flushes} flushes, {journal} journal writes"
    );
    assert!(
        flushes > 1.2 * commits.min(journal),
        "{flushes} flushes for {commits} transactions"
    );
}

/// MariaDB 10.11 (`server=mariadb-10.11`, the real server `storlab app
/// check sysbench-oltp` runs) syncs with fdatasync, writes its redo log
/// with O_DIRECT and makes it with posix_fallocate: only a commit whose
/// write reaches a block not yet written converts an unwritten extent and
/// forces XFS's log; the others flush the device's cache alone. So there
/// are fewer journal writes than commits, each one a conversion, and one
/// flush a commit plus two a forced log. MySQL 5.6's fsync forces the log
/// at every commit its write changed the timestamps for.
#[test]
fn mariadb_commits_force_xfs_log_only_for_a_conversion() {
    let pairs = "db=64m,buffer_pool=256m,transactions=400,threads=1,flush_method=o_direct";
    let (app, fs) = run(
        "raid-disk",
        "oltp",
        &format!("{pairs},server=mariadb-10.11"),
    );
    let flushes = fs["flushes"].as_f64().expect("flushes");
    let journal = fs["journal_writes"].as_f64().unwrap();
    let conversions = fs["conversions"]
        .as_f64()
        .expect("the log's conversions are counted");
    let syncs = app["group_commit"]["log_flushes"].as_f64().unwrap();
    assert!(syncs > 0.0, "{app}");
    assert!(
        journal < 0.95 * syncs && journal > 0.0,
        "{journal} journal writes for {syncs} log syncs"
    );
    assert!(
        (conversions - journal).abs() <= 0.05 * journal + 2.0,
        "each forced log carries a conversion: {conversions} conversions, {journal} journal writes"
    );
    // a sync that forced the log: two flushes; one that did not: one
    assert!(
        flushes < 1.98 * syncs && flushes >= syncs,
        "{flushes} flushes for {syncs} syncs"
    );
    let (_, fs56) = run("raid-disk", "oltp", pairs);
    assert!(
        fs56.get("conversions").is_none(),
        "MySQL 5.6 writes its log out: {fs56}"
    );
    assert!(
        fs56["journal_writes"].as_f64().unwrap() > journal,
        "fsync forces the log more often: {fs56}"
    );
}

/// Berkeley DB's random inserts and deletes of uniformly random keys keep
/// half the key space stored, so a quarter of the transactions delete a
/// key that is not there: they log nothing, and a transaction without log
/// records commits without writing or syncing the log (txn/txn.c,
/// `__txn_commit`). With one thread (no group commit) the log syncs are
/// the logging transactions, about 0.75 a transaction, as the real
/// program's fdatasyncs are (`storlab app check bdb-btree --threads 1`,
/// docs/apps.md); a model that logged every delete would sync once each.
#[test]
fn berkeley_db_deletes_that_find_nothing_commit_without_a_log_sync() {
    for name in ["bdb-btree", "bdb-hash"] {
        let (app, _) = run(
            "raid-disk",
            name,
            "db=8m,cache=64m,threads=1,transactions=2000",
        );
        let gc = &app["group_commit"];
        let (commits, flushes) = (
            gc["commits"].as_f64().unwrap(),
            gc["log_flushes"].as_f64().unwrap(),
        );
        let noop = app["model"]["deletes_not_found"].as_f64().unwrap();
        assert_eq!(commits + noop, 2000.0, "{name}: {app}");
        let share = noop / 2000.0;
        assert!(
            (0.21..0.29).contains(&share),
            "{name}: {share} of the transactions found nothing: {app}"
        );
        // one thread: every logging commit leads its own flush
        assert_eq!(flushes, commits, "{name}: {gc}");
    }
}

/// Group commit: when a flush ends, the first waiter it does not cover
/// leads the next flush once it has woken, and it writes every record
/// appended by then (Berkeley DB's `__log_flush_int` hands the woken
/// waiter DB_COMMIT_FLUSH and it flushes to the log's end). Two threads
/// whose transactions take a few µs of CPU: with a host that wakes a
/// thread at once, the other thread is still computing when the leader
/// starts, so every logging commit has a flush of its own; with a wake-up
/// longer than a transaction's CPU, the other thread's next commit
/// reaches the log while the leader wakes and rides its flush.
#[test]
fn a_woken_group_commit_leader_takes_the_records_appended_while_it_woke() {
    let pairs = "db=8m,cache=64m,threads=2,transactions=2000,cpu_us=5";
    let flushes_per_commit = |wakeup: &str| {
        let j = common::app_job_set(
            "fusion-io",
            "bdb-btree",
            pairs,
            &[wakeup, "host.wakeup_spread=0"],
        );
        let gc = &j["app"]["group_commit"];
        gc["log_flushes"].as_f64().unwrap() / gc["commits"].as_f64().unwrap()
    };
    let prompt = flushes_per_commit("host.wakeup_ns=0");
    let slow = flushes_per_commit("host.wakeup_ns=100000");
    assert!(
        prompt > 0.9,
        "a flush a commit with an instant wake-up: {prompt}"
    );
    assert!(
        slow < 0.75 * prompt,
        "commits appended while the leader woke ride its flush: {slow} against {prompt}"
    );
}
