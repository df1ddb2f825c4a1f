//! `sysbench-oltp`: sysbench's OLTP read/write on a private MariaDB
//! server (`mariadbd --user=root`, data directory on the emulated device,
//! its socket in the run's private directory, no networking).

use std::process::Command;
use std::time::Duration;

use super::kit::{App, Measured};
use super::opts::Ctx;

/// sysbench oltp_read_write on MariaDB.
pub struct SysbenchOltp;

/// Tables, and rows per table at scale 1: 8 x 4 Mi rows of about 250
/// bytes, the studies' 8 GB (spec docs/spec/workloads.md).
const TABLES: u64 = 8;
const STUDY_ROWS: f64 = 4.0 * 1048576.0;

impl App for SysbenchOltp {
    fn name(&self) -> &'static str {
        "sysbench-oltp"
    }
    fn about(&self) -> &'static str {
        "sysbench oltp_read_write on a private mariadbd (InnoDB, O_DIRECT, durable commits)"
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        vec![
            ("sysbench", "sysbench"),
            ("mariadbd", "mariadb-server"),
            ("mariadb-install-db", "mariadb-server"),
            ("mariadb", "mariadb-client"),
        ]
    }
    fn default_scale(&self) -> f64 {
        0.005
    }
    fn study(&self) -> &'static str {
        "8 tables of 4 Mi rows: 8 GB (the studies' OLTP)"
    }
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()> {
        let data = cx.mnt.join("mysql");
        std::fs::create_dir_all(&data)?;
        cx.run(
            "mariadb-install-db",
            Command::new("mariadb-install-db")
                .args(["--no-defaults", "--user=root", "--skip-test-db"])
                .arg(format!("--datadir={}", data.display())),
        )?;
        let sock = cx.tmp.join("mysql.sock");
        let mut server = cx.spawn(
            "mariadbd",
            Command::new("mariadbd")
                .args(["--no-defaults", "--user=root", "--skip-networking"])
                .arg(format!("--datadir={}", data.display()))
                .arg(format!("--socket={}", sock.display()))
                .arg(format!(
                    "--pid-file={}",
                    cx.tmp.join("mariadbd.pid").display()
                ))
                .arg(format!("--tmpdir={}", cx.tmp.display()))
                .args([
                    "--innodb-flush-method=O_DIRECT",
                    "--innodb-flush-log-at-trx-commit=1",
                    "--innodb-buffer-pool-size=256M",
                    "--max-connections=1100",
                ]),
            Duration::from_secs(60),
        )?;
        let s2 = sock.clone();
        cx.wait_ready("mariadbd", &mut server, Duration::from_secs(120), || {
            std::os::unix::net::UnixStream::connect(&s2).is_ok()
        })?;
        drop(server); // its group stays on the undo stack until teardown
        cx.run(
            "create database",
            Command::new("mariadb")
                .arg(format!("--socket={}", sock.display()))
                .args(["-u", "root", "-e", "CREATE DATABASE sbtest"]),
        )?;
        cx.run("sysbench prepare", &mut sysbench(cx, "prepare"))?;
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let mut cmd = sysbench(cx, "run");
        match &cx.work {
            Some(w) => cmd.arg(format!("--events={}", w[0])).arg("--time=0"),
            None => cmd.arg(format!("--time={}", cx.duration.as_secs().max(1))),
        };
        // the server's and the client's user CPU over the run (the model's
        // CPU per transaction is the host's, server and client)
        let server = std::fs::read_to_string(cx.tmp.join("mariadbd.pid"))
            .ok()
            .and_then(|p| p.trim().parse::<u32>().ok());
        let cpu = || super::kit::server_and_clients_user_s(server, super::kit::process_user_s);
        let cpu0 = cpu();
        let out = cx.run("sysbench run", &mut cmd)?;
        let cpu_user_s = cpu0.zip(cpu()).map(|(a, b)| b - a);
        let per_sec = |what: &str| {
            out.lines()
                .find(|l| l.trim_start().starts_with(what))
                .and_then(|l| {
                    l.split('(')
                        .nth(1)?
                        .split_whitespace()
                        .next()?
                        .parse::<f64>()
                        .ok()
                })
        };
        let tps = per_sec("transactions:")
            .ok_or_else(|| anyhow::anyhow!("sysbench printed no transactions line:\n{out}"))?;
        // "transactions:   1234   (41.12 per sec.)"
        let done = out
            .lines()
            .find(|l| l.trim_start().starts_with("transactions:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .unwrap_or(0);
        let mut extra = Vec::new();
        if let Some(q) = per_sec("queries:") {
            extra.push(("queries/s".into(), q));
        }
        if let Some(avg) = out
            .lines()
            .find(|l| l.trim_start().starts_with("avg:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        {
            extra.push(("latency avg ms".into(), avg));
        }
        Ok(Measured {
            unit: "transactions/s",
            value: tps,
            higher_better: true,
            work: vec![done],
            cpu_user_s,
            extra,
        })
    }
}

fn sysbench(cx: &Ctx, what: &str) -> Command {
    let rows = ((STUDY_ROWS * cx.scale) as u64).max(100);
    let mut c = Command::new("sysbench");
    c.arg("oltp_read_write")
        .args([
            "--db-driver=mysql",
            "--mysql-user=root",
            "--mysql-db=sbtest",
        ])
        .arg(format!(
            "--mysql-socket={}",
            cx.tmp.join("mysql.sock").display()
        ))
        .arg(format!("--tables={TABLES}"))
        .arg(format!("--table-size={rows}"))
        .arg(format!("--threads={}", cx.threads))
        .arg("--report-interval=0")
        .arg(what);
    c
}
