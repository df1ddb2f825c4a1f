//! `sqlite`: the sqlite3 shell running transactional inserts (each
//! insert its own transaction, `PRAGMA synchronous=FULL`, the default
//! rollback journal) for the run's duration, then point reads by primary
//! key.

use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use super::kit::{App, Measured};
use super::opts::Ctx;

/// SQLite through its shell.
pub struct Sqlite;

/// Rows at scale 1: a 1 GiB table of 1 KiB rows (ESTIMATE: the studies
/// give no SQLite size; this is a database larger than the page cache
/// of the studies' hosts).
const STUDY_ROWS: f64 = 1048576.0;
/// Transactions per sqlite3 invocation (each invocation is one batch;
/// the loop stops at the end of the duration).
const BATCH: u64 = 50;

impl App for Sqlite {
    fn name(&self) -> &'static str {
        "sqlite"
    }
    fn about(&self) -> &'static str {
        "sqlite3 shell: one-insert transactions with synchronous=FULL, then point reads"
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        vec![("sqlite3", "sqlite3")]
    }
    fn default_scale(&self) -> f64 {
        0.05
    }
    fn study(&self) -> &'static str {
        "a table of 1 Mi rows of 1 KiB (ESTIMATE: no study gives SQLite's size)"
    }
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()> {
        let rows = ((STUDY_ROWS * cx.scale) as u64).max(1000);
        let db = cx.mnt.join("bench.db");
        let sql = format!(
            "PRAGMA journal_mode=DELETE; PRAGMA synchronous=FULL;\
             CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);\
             WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<{rows})\
             INSERT INTO t(id, v) SELECT x, randomblob(1024) FROM c;"
        );
        cx.run("sqlite3 load", Command::new("sqlite3").arg(&db).arg(sql))?;
        std::fs::write(cx.tmp.join("rows"), rows.to_string())?;
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let db = cx.mnt.join("bench.db");
        let rows: u64 = std::fs::read_to_string(cx.tmp.join("rows"))?
            .trim()
            .parse()?;
        // half the time inserting, half reading
        let half = cx.duration.mul_f64(0.5);
        let mut next = rows + 1;
        let mut txns = 0u64;
        let t = Instant::now();
        let (want_ins, want_reads) = match &cx.work {
            Some(w) => (w[0], w.get(1).copied().unwrap_or(w[0])),
            None => (u64::MAX, u64::MAX),
        };
        let timed = cx.work.is_none();
        // the sqlite3 shells' user CPU over the inserts (each a waited-for
        // child; the model's CPU per transaction includes a shell's start
        // spread over its batch, as here)
        let cpu0 = super::kit::children_user_s();
        while (timed && (t.elapsed() < half || txns == 0)) || (!timed && txns < want_ins) {
            let batch = BATCH.min(want_ins - txns);
            let mut sql = String::from("PRAGMA synchronous=FULL;\n");
            for _ in 0..batch {
                let _ = writeln!(
                    sql,
                    "BEGIN; INSERT INTO t(id, v) VALUES({next}, randomblob(1024)); COMMIT;"
                );
                next += 1;
            }
            let f = cx.tmp.join("batch.sql");
            std::fs::write(&f, sql)?;
            cx.run(
                "sqlite3 insert",
                Command::new("sqlite3")
                    .arg(&db)
                    .arg(format!(".read {}", f.display())),
            )?;
            txns += batch;
        }
        let ins_s = t.elapsed().as_secs_f64();
        let cpu_user_s = super::kit::children_user_s() - cpu0;
        // point reads (from the page cache where the table fits in it,
        // as for the application)
        let mut x: u64 = 0x2545f4914f6cdd1d;
        let mut reads = 0u64;
        let t = Instant::now();
        while (timed && (t.elapsed() < half.max(Duration::from_millis(100)) || reads == 0))
            || (!timed && reads < want_reads)
        {
            let batch = 2000.min(want_reads - reads);
            let mut sql = String::new();
            for _ in 0..batch {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let _ = writeln!(sql, "SELECT length(v) FROM t WHERE id={};", 1 + x % rows);
            }
            let f = cx.tmp.join("reads.sql");
            std::fs::write(&f, sql)?;
            cx.run(
                "sqlite3 read",
                Command::new("sqlite3")
                    .arg(&db)
                    .arg(format!(".read {}", f.display())),
            )?;
            reads += batch;
        }
        let read_s = t.elapsed().as_secs_f64();
        Ok(Measured {
            unit: "transactions/s",
            value: txns as f64 / ins_s,
            higher_better: true,
            work: vec![txns, reads],
            cpu_user_s: Some(cpu_user_s),
            extra: vec![
                ("insert transactions".into(), txns as f64),
                ("point reads/s".into(), reads as f64 / read_s),
            ],
        })
    }
}
