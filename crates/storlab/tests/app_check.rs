//! `storlab app check` (issue 57, item 3): the model against the real
//! program on the emulator, IO per operation side by side.

mod app_common;

use app_common::*;

/// Run `app check APP` on raid-disk and hdd-7200 at a small scale with
/// `threads` threads; the JSON comparison.
fn check(s: &Scratch, app: &str, threads: &str, extra: &[&str]) -> serde_json::Value {
    check_on(s, app, "raid-disk,hdd-7200", threads, extra)
}

/// [`check`] on `devices` (comma separated).
fn check_on(
    s: &Scratch,
    app: &str,
    devices: &str,
    threads: &str,
    extra: &[&str],
) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let j = dir.path().join("check.json");
    let js = j.display().to_string();
    let mut args = vec![
        "app",
        "check",
        app,
        "--devices",
        devices,
        "--size",
        "1G",
        "--floor-probe",
        "200",
        "--threads",
        threads,
        "--json",
        &js,
    ];
    args.extend_from_slice(extra);
    let out = s.run(&args);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("ms/op") && text.contains("reads/op"),
        "{text}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&j).expect("the json")).expect("json");
    assert_eq!(
        v["rows"].as_array().map(Vec::len),
        Some(devices.split(',').count()),
        "{v}"
    );
    v
}

/// Model against real within 25 % (or both under 0.05 a transaction).
fn agrees(v: &serde_json::Value, field: &str) -> Vec<String> {
    let mut bad = Vec::new();
    for r in v["rows"].as_array().unwrap() {
        let (re, mo) = (
            r["real"][field].as_f64().unwrap(),
            r["model"][field].as_f64().unwrap(),
        );
        if re < 0.05 && mo < 0.05 {
            continue;
        }
        if (mo / re.max(1e-12) - 1.0).abs() > 0.25 {
            bad.push(format!(
                "{} {field}: model {mo:.3} real {re:.3}",
                r["device"]
            ));
        }
    }
    bad
}

/// Row `k`'s time per operation over the first row's, model against real,
/// within 25 %.
fn time_ratio_agrees(v: &serde_json::Value, k: usize) {
    let rows = v["rows"].as_array().unwrap();
    let ratio =
        |side: &str| rows[k][side]["ms"].as_f64().unwrap() / rows[0][side]["ms"].as_f64().unwrap();
    let (re, mo) = (ratio("real"), ratio("model"));
    assert!(
        (mo / re - 1.0).abs() <= 0.25,
        "time ratio {} over {}: model {mo:.3}, real {re:.3}\n{v}",
        rows[k]["device"],
        rows[0]["device"]
    );
}

#[test]
fn bdb_btree_io_and_time_per_transaction_model_against_real() {
    let s = Scratch::new();
    // one thread: no group commit, whose sharing of syncs between threads
    // depends on how fast this host wakes a waiting committer
    let v = check_on(
        &s,
        "bdb-btree",
        "raid-disk,fusion-io,hdd-7200",
        "1",
        &["--scale", "0.001", "--work", "400"],
    );
    for r in v["rows"].as_array().unwrap() {
        assert!(r["real"]["flushes"].as_f64().unwrap() > 0.1, "{r}");
        assert!(r["model"]["flushes"].as_f64().unwrap() > 0.1, "{r}");
        // bdb-bench times its own CPU over its transactions, and the
        // model ran with it (a few to a few tens of µs here, where the
        // Moneta calibration's is 537)
        let cpu = r["cpu_us"].as_f64().expect("the real program's CPU");
        assert!(cpu > 0.0 && cpu < 200.0, "{r}");
    }
    // flushes per transaction agree: a quarter of the transactions delete
    // a key that is not there and commit without a log sync, in the real
    // program (about 0.80 a transaction measured) and in the model (0.86,
    // with XFS's log forces for the log file's new blocks); a model that
    // synced every transaction is 1.11, 40 % off. Writes and bytes agree:
    // one log page written a sync (real 0.80 writes and 3.4 KiB, model
    // 0.86 and 3.3, measured 2026-12-01), now that the real run's close
    // leaves its pool's dirty pages to recovery (DB_NOSYNC) instead of
    // writing more of them the more transactions ran
    for field in ["flushes", "writes", "bytes"] {
        let bad = agrees(&v, field);
        assert!(
            bad.is_empty(),
            "bdb-btree model disagrees with the real program: {bad:?}\n{v}"
        );
    }
    // and the time, each transaction's CPU this host's on both sides: one
    // disk's flush against the disk RAID's (measured 2026-12-01:
    // hdd-7200 over raid-disk 1.00 / 1.02). The Fusion-io's 0.3 ms
    // flush gave 0.05 / 0.05 over raid-disk on a quiet host, but its real
    // time carries this host's wake-ups: beside two CPU-bound processes
    // the real ratio was 0.08-0.12 (docs/apps.md), so it is not held here
    time_ratio_agrees(&v, 2);
    s.assert_clean();
}

#[test]
fn sqlite_io_per_transaction_agrees_with_the_real_program() {
    // the SQLite model follows the pager's commit with journal_mode=DELETE
    // and synchronous=FULL (journal created, header and original pages,
    // two journal syncs and its directory's, the database's pages and
    // sync, the journal unlinked): writes, flushes and bytes per
    // transaction agree with sqlite3 on the emulator (measured
    // 2026-12-01: writes 5.67 / 5.66, flushes 4.33 / 5.33, KiB 29.4 /
    // 33.0)
    let s = Scratch::new();
    let v = check(&s, "sqlite", "1", &["--scale", "0.02", "--work", "120"]);
    for r in v["rows"].as_array().unwrap() {
        assert!(r["real"]["flushes"].as_f64().unwrap() > 2.0, "{r}");
        assert!(r["model"]["writes"].as_f64().unwrap() > 2.0, "{r}");
        // the sqlite3 shells' user CPU over the inserts, which the model
        // ran with (56-146 us a transaction measured 2026-12-01, a
        // shell's start spread over its batch of 50)
        let cpu = r["cpu_us"].as_f64().expect("the real program's CPU");
        assert!(cpu > 0.0 && cpu < 5000.0, "{r}");
    }
    for field in ["writes", "flushes", "bytes"] {
        let bad = agrees(&v, field);
        assert!(
            bad.is_empty(),
            "sqlite model disagrees with the real program: {bad:?}\n{v}"
        );
    }
    s.assert_clean();
}

#[test]
fn pgbench_io_per_transaction_agrees_with_the_real_server() {
    // the pgbench model's commit is PostgreSQL's XLogFlush: the WAL's
    // whole 8 KiB pages from the page its last write ended in, then
    // fdatasync into a recycled segment (no file-system log force):
    // about one write of a page and one flush a transaction, and the
    // time between devices follows (measured 2026-11-30: writes 1.00 /
    // 1.07, flushes 1.00 / 1.01, KiB 8.6 / 8.7, hdd-7200 over raid-disk
    // 1.00 / 1.02)
    let s = Scratch::new();
    let v = check(&s, "pgbench", "1", &["--scale", "0.02", "--work", "150"]);
    for r in v["rows"].as_array().unwrap() {
        assert!(r["real"]["flushes"].as_f64().unwrap() > 0.5, "{r}");
        assert!(r["model"]["writes"].as_f64().unwrap() > 0.5, "{r}");
        // the server's (postmaster and backends) and pgbench's user CPU,
        // which the model ran with (86-139 us a transaction measured
        // 2026-12-01, where the model's ESTIMATE is 250)
        let cpu = r["cpu_us"].as_f64().expect("the real server's CPU");
        assert!(cpu > 5.0 && cpu < 5000.0, "{r}");
    }
    for field in ["writes", "flushes", "bytes"] {
        let bad = agrees(&v, field);
        assert!(
            bad.is_empty(),
            "pgbench model disagrees with the real server: {bad:?}\n{v}"
        );
    }
    // hdd-7200 over raid-disk, model against real
    time_ratio_agrees(&v, 1);
    s.assert_clean();
}

#[test]
fn rocksdb_io_per_put_agrees_with_the_real_program() {
    // each synced put appends to a WAL preallocated keeping its size, so
    // its fdatasync writes the page and forces the file system's log for
    // the new on-disk size (xfs_setfilesize): two writes and two
    // flushes a put on both sides (measured 2026-11-30: writes 2.03 /
    // 2.03, flushes 2.00 / 2.00, KiB 5.1 / 4.6)
    let s = Scratch::new();
    let v = check(&s, "rocksdb", "1", &["--work", "150"]);
    for r in v["rows"].as_array().unwrap() {
        assert!(r["real"]["flushes"].as_f64().unwrap() > 1.5, "{r}");
        assert!(r["model"]["flushes"].as_f64().unwrap() > 1.5, "{r}");
    }
    for field in ["writes", "flushes", "bytes"] {
        let bad = agrees(&v, field);
        assert!(
            bad.is_empty(),
            "rocksdb model disagrees with the real program: {bad:?}\n{v}"
        );
    }
    s.assert_clean();
}

#[test]
fn postmark_io_per_transaction_model_against_real() {
    let s = Scratch::new();
    let v = check(&s, "postmark", "2", &["--scale", "0.002"]);
    let d: Vec<String> = v["disagreements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    // buffered, the real Postmark's measured phase does almost no device
    // IO: its pool and every write stay in this host's page cache, and
    // this host's XFS logs with delayed logging, so nothing reaches its
    // log without an fsync. The model's file system, made as this host's
    // (`app check` sets fs.delayed_logging), writes and flushes as little
    // (with the studies' 2.6 XFS it wrote a log buffer, with a flush,
    // every 11 transactions): writes and flushes agree. (Time does not
    // depend on the device on either side: 0.15 ms a transaction of CPU,
    // whose real measure swings by a third between runs on this host.)
    for field in ["writes", "flushes"] {
        let bad = agrees(&v, field);
        assert!(bad.is_empty(), "postmark {field}: {bad:?}\n{v}");
    }
    assert!(
        !d.iter()
            .any(|x| x.contains("writes/op") || x.contains("flushes/op")),
        "{d:?}"
    );
    // what holds: IO per transaction does not depend on the device, for
    // the real program as for the model (the same work on each)
    let rows = v["rows"].as_array().unwrap();
    for side in ["real", "model"] {
        for f in ["writes", "reads"] {
            let (a, b) = (
                rows[0][side][f].as_f64().unwrap(),
                rows[1][side][f].as_f64().unwrap(),
            );
            assert!(
                (a - b).abs() <= 0.25 * a.max(b) + 0.05,
                "{side} {f}: {a} on raid-disk, {b} on hdd-7200"
            );
        }
    }
    s.assert_clean();
}

// `--direct` Postmark: the real program has no O_DIRECT switch, so `app
// run` mounts the file system `sync,dirsync`; `app check` runs the model
// the same way (`sync=1`: each write system call then its fdatasync,
// creates and unlinks committed with a log force) over the real run's
// files (up to 64 MB x scale) and 4 KiB blocks, and divides both sides
// by Postmark's transactions. Writes, flushes and bytes a transaction
// agree within 25 % (measured 2026-12-01 at scale 0.002: 29.4 / 27.4
// writes, 27.3 / 27.5 flushes, 87 / 73 KiB; the model's `direct=1`,
// O_DIRECT without syncs, gave 0.56 writes and 0.09 flushes). Each side
// draws its own sizes (Postmark's generator seeded 42, the model's its
// own), so a transaction's bytes differ by the draw: at scale 0.001 (10
// files, 100 transactions) the real run wrote 30.5 KiB a transaction and
// the model 42.6 (10.7 and 16.1 writes), at 0.002 87 and 73, so the test
// runs at 0.002, where the draws of 200 transactions agree within 20 %.
#[test]
fn postmark_on_a_sync_mount_model_against_real() {
    let s = Scratch::new();
    let v = check(&s, "postmark", "1", &["--scale", "0.002", "--direct"]);
    for field in ["writes", "flushes", "bytes"] {
        let bad = agrees(&v, field);
        assert!(bad.is_empty(), "postmark --direct {field}: {bad:?}\n{v}");
    }
    // every write is synchronous on both sides: far more than one device
    // write a transaction
    for r in v["rows"].as_array().unwrap() {
        for side in ["real", "model"] {
            let w = r[side]["writes"].as_f64().unwrap();
            assert!(w > 5.0, "{side} writes a transaction: {w}\n{v}");
        }
    }
    s.assert_clean();
}

#[test]
fn bad_names_are_refused_before_anything_runs() {
    let s = Scratch::new();
    for (args, want) in [
        (
            vec![
                "app",
                "check",
                "bdb-btree",
                "--devices",
                "raid-disk,nosuchdev",
            ],
            "nosuchdev",
        ),
        (
            vec!["app", "check", "nosuchapp", "--devices", "raid-disk"],
            "nosuchapp",
        ),
        (
            vec!["app", "check", "build", "--devices", "raid-disk"],
            "not the same work",
        ),
    ] {
        let t = std::time::Instant::now();
        let out = s.run(&args);
        assert!(!out.status.success(), "{args:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(t.elapsed().as_secs() < 20, "{args:?} ran something first");
    }
    s.assert_clean();
}
