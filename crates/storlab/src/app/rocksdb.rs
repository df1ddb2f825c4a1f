//! `rocksdb`: RocksDB's own db_bench (Debian's rocksdb-tools ships it):
//! fillrandom with every write synced, then readrandom, each for half the
//! duration.

use std::process::Command;

use super::kit::{App, Measured};
use super::opts::Ctx;

/// db_bench.
pub struct Rocksdb;

/// Keys at scale 1: 100 M of 100-byte values, about 12 GB (ESTIMATE: a
/// data set well above the studies' hosts' DRAM).
const STUDY_KEYS: f64 = 100e6;

impl App for Rocksdb {
    fn name(&self) -> &'static str {
        "rocksdb"
    }
    fn about(&self) -> &'static str {
        "RocksDB db_bench: fillrandom with sync=1, then readrandom"
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        vec![("db_bench", "rocksdb-tools")]
    }
    fn default_scale(&self) -> f64 {
        0.01
    }
    fn study(&self) -> &'static str {
        "100 M keys of 100 B (ESTIMATE)"
    }
    fn prepare(&self, _cx: &mut Ctx) -> anyhow::Result<()> {
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let keys = ((STUDY_KEYS * cx.scale) as u64).max(1000);
        let half = (cx.duration.as_secs_f64() / 2.0).ceil().max(1.0) as u64;
        let mut cmd = Command::new("db_bench");
        cmd.arg(format!("--db={}", cx.mnt.join("rocksdb").display()))
            .args([
                "--benchmarks=fillrandom,readrandom",
                "--sync=1",
                "--value_size=100",
            ])
            .arg(format!("--num={keys}"))
            .arg(format!("--threads={}", cx.threads))
            .arg(format!("--wal_dir={}", cx.mnt.join("rocksdb").display()));
        match &cx.work {
            // --writes and --reads are per thread
            Some(w) => {
                let t = cx.threads as u64;
                cmd.arg(format!("--writes={}", w[0].div_ceil(t)));
                let reads = w.get(1).copied().unwrap_or(w[0]);
                cmd.arg(format!("--reads={}", reads.div_ceil(t)));
            }
            None => {
                cmd.arg(format!("--duration={half}"));
            }
        }
        let out = cx.run("db_bench", &mut cmd)?;
        // "fillrandom   :      12.345 micros/op 81004 ops/sec ..."
        // "... 10.000 seconds 810040 operations;"
        let count = |bench: &str| {
            out.lines()
                .find(|l| l.starts_with(bench) && l.contains("operations"))
                .and_then(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    let i = w.iter().position(|x| x.starts_with("operations"))?;
                    w.get(i.checked_sub(1)?)?.parse::<u64>().ok()
                })
                .unwrap_or(0)
        };
        let ops = |bench: &str| {
            out.lines()
                .find(|l| l.starts_with(bench) && l.contains("ops/sec"))
                .and_then(|l| {
                    let w: Vec<&str> = l.split_whitespace().collect();
                    let i = w.iter().position(|x| *x == "ops/sec")?;
                    w.get(i.checked_sub(1)?)?.parse::<f64>().ok()
                })
        };
        let fill = ops("fillrandom")
            .ok_or_else(|| anyhow::anyhow!("db_bench printed no fillrandom result:\n{out}"))?;
        let mut extra = Vec::new();
        if let Some(r) = ops("readrandom") {
            extra.push(("readrandom ops/s".into(), r));
        }
        Ok(Measured {
            unit: "fillrandom ops/s (synced)",
            value: fill,
            higher_better: true,
            work: vec![count("fillrandom"), count("readrandom")],
            cpu_user_s: None,
            extra,
        })
    }
}
