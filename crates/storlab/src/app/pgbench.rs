//! `pgbench`: PostgreSQL's pgbench (TPC-B-like) on a private cluster:
//! initdb and the server run as user `postgres` (through `runuser`), the
//! data directory on the emulated device, the unix socket in the run's
//! private directory, no TCP.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::kit::{App, Measured};
use super::opts::Ctx;

/// pgbench on PostgreSQL.
pub struct Pgbench;

/// pgbench's scale factor at scale 1: 100 (10 M accounts, about 1.5 GB;
/// ESTIMATE: the studies ran TPC-B-like loads without giving a size).
const STUDY_SF: f64 = 100.0;

/// The newest PostgreSQL's binaries (/usr/lib/postgresql/VERSION/bin).
fn bindir() -> Option<PathBuf> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            let b = e.path().join("bin");
            b.join("pg_ctl").is_file().then_some((n, b))
        })
        .collect();
    v.sort();
    v.pop().map(|x| x.1)
}

fn prog(name: &str) -> String {
    bindir()
        .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql/15/bin"))
        .join(name)
        .display()
        .to_string()
}

impl App for Pgbench {
    fn name(&self) -> &'static str {
        "pgbench"
    }
    fn about(&self) -> &'static str {
        "pgbench (TPC-B-like) on a private PostgreSQL cluster run as user postgres"
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        // PostgreSQL's programs live in a versioned directory, found once
        static PROGS: std::sync::OnceLock<[String; 3]> = std::sync::OnceLock::new();
        let [initdb, postgres, pgbench] =
            PROGS.get_or_init(|| [prog("initdb"), prog("postgres"), prog("pgbench")]);
        vec![
            (initdb.as_str(), "postgresql"),
            (postgres.as_str(), "postgresql"),
            (pgbench.as_str(), "postgresql-contrib"),
            ("runuser", "util-linux"),
        ]
    }
    fn default_scale(&self) -> f64 {
        0.05
    }
    fn study(&self) -> &'static str {
        "pgbench scale factor 100: 10 M accounts, about 1.5 GB (ESTIMATE)"
    }
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()> {
        let data = cx.mnt.join("pg");
        let sock = cx.tmp.join("pgsock");
        for d in [&data, &sock] {
            std::fs::create_dir_all(d)?;
            cx.run("chown", Command::new("chown").arg("postgres:").arg(d))?;
        }
        // --no-sync: the `sync -f` after preparing makes it durable
        cx.run(
            "initdb",
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(prog("initdb"))
                .args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"])
                .arg(&data),
        )?;
        let mut server = cx.spawn(
            "postgres",
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(prog("postgres"))
                .arg("-D")
                .arg(&data)
                .arg("-k")
                .arg(&sock)
                .args(["-c", "listen_addresses=", "-c", "max_connections=1100"]),
            Duration::from_secs(60),
        )?;
        // ready when it accepts connections (its socket appears earlier,
        // while it is still starting up)
        let isready = prog("pg_isready");
        let s = sock.clone();
        cx.wait_ready("postgres", &mut server, Duration::from_secs(120), || {
            Command::new(&isready)
                .arg("-q")
                .arg("-h")
                .arg(&s)
                .status()
                .is_ok_and(|st| st.success())
        })?;
        drop(server); // its group stays on the undo stack until teardown
        let sf = ((STUDY_SF * cx.scale).round() as u64).max(1);
        cx.run(
            "pgbench init",
            Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(prog("pgbench"))
                .arg("-h")
                .arg(&sock)
                .args(["-i", "-q", "-s", &sf.to_string(), "postgres"]),
        )?;
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let n = cx.threads.to_string();
        let mut cmd = Command::new("runuser");
        cmd.args(["-u", "postgres", "--"])
            .arg(prog("pgbench"))
            .arg("-h")
            .arg(cx.tmp.join("pgsock"))
            .args(["-c", &n, "-j", &n]);
        match &cx.work {
            // -t is per client
            Some(w) => cmd
                .arg("-t")
                .arg(w[0].div_ceil(cx.threads as u64).to_string()),
            None => cmd.arg("-T").arg(cx.duration.as_secs().max(1).to_string()),
        };
        // the server's and the client's user CPU over the run (the model's
        // CPU per transaction is the host's, server and client): the
        // postmaster and its backends (their first line of postmaster.pid
        // names it), and pgbench, a waited-for child
        let server = std::fs::read_to_string(cx.mnt.join("pg").join("postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next()?.trim().parse::<u32>().ok());
        let cpu = || super::kit::server_and_clients_user_s(server, super::kit::tree_user_s);
        let cpu0 = cpu();
        let out = cx.run("pgbench", cmd.arg("postgres"))?;
        let cpu_user_s = cpu0.zip(cpu()).map(|(a, b)| b - a);
        let tps = out
            .lines()
            .find(|l| l.starts_with("tps = "))
            .and_then(|l| l[6..].split_whitespace().next()?.parse::<f64>().ok())
            .ok_or_else(|| anyhow::anyhow!("pgbench printed no tps line:\n{out}"))?;
        let done = out
            .lines()
            .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
            .and_then(|l| l.split('/').next()?.trim().parse::<u64>().ok())
            .unwrap_or(0);
        let mut extra = Vec::new();
        if let Some(l) = out
            .lines()
            .find(|l| l.starts_with("latency average = "))
            .and_then(|l| l[18..].split_whitespace().next()?.parse::<f64>().ok())
        {
            extra.push(("latency average ms".into(), l));
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
