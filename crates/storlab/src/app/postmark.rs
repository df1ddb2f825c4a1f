//! `postmark`: Debian's postmark (an email server's small-file
//! workload) with the studies' parameters scaled by `--scale`.
//!
//! Direct IO: postmark has no O_DIRECT option, and its unaligned reads and
//! writes would fail under O_DIRECT anyway. `--direct` mounts the file
//! system `sync,dirsync` instead: every write and every directory change
//! reaches the device before its call returns (reads of cached data still
//! hit the page cache). Without it postmark's IO is buffered (its own
//! `buffering` is always off: plain read/write calls, no stdio).

use std::process::Command;
use std::time::Instant;

use super::kit::{App, Measured};
use super::opts::{Ctx, RunOpts};

/// Debian's postmark.
pub struct Postmark;

/// The study's pool, transactions and largest file (spec docs/spec/workloads.md:
/// 10,000 files of 1 KB to 64 MB, 100,000 transactions).
const FILES: f64 = 10_000.0;
const TRANSACTIONS: f64 = 100_000.0;
const MAX_FILE: f64 = 64.0 * 1048576.0;

/// The postmark commands for `scale` with files under `dir`: files,
/// transactions and the largest file size all scaled (at least 10 files,
/// 100 transactions, files up to at least 4 KiB).
pub fn config(dir: &std::path::Path, scale: f64) -> String {
    let files = ((FILES * scale) as u64).max(10);
    let txns = ((TRANSACTIONS * scale) as u64).max(100);
    let max = largest_file(scale);
    format!(
        "set location {}\nset number {files}\nset transactions {txns}\nset size 1024 {max}\nset read {BLOCK}\nset write {BLOCK}\nset buffering false\nset seed 42\nrun\nquit\n",
        dir.display()
    )
}

/// The largest file at `scale`, bytes (`set size 1024 MAX`).
pub fn largest_file(scale: f64) -> u64 {
    ((MAX_FILE * scale) as u64).max(4096)
}

/// Postmark's read and write block, bytes (`set read`, `set write`).
pub const BLOCK: u64 = 4096;

impl App for Postmark {
    fn name(&self) -> &'static str {
        "postmark"
    }
    fn about(&self) -> &'static str {
        "postmark: a pool of files, transactions of read/append + create/delete; --direct mounts sync, and its default scale is then 0.005"
    }
    fn needs(&self) -> Vec<(&'static str, &'static str)> {
        vec![("postmark", "postmark")]
    }
    fn default_scale(&self) -> f64 {
        0.05
    }
    fn default_scale_for(&self, o: &RunOpts) -> f64 {
        // sync writes: 0.005 takes about 30 s on fusion-io here
        if o.direct {
            0.005
        } else {
            self.default_scale()
        }
    }
    fn study(&self) -> &'static str {
        "10,000 files of 1 KB to 64 MB, 100,000 transactions (Moneta, Table V)"
    }
    fn timed(&self) -> bool {
        false
    }
    fn mount_options(&self, o: &RunOpts) -> Option<String> {
        o.direct.then(|| "sync,dirsync".to_string())
    }
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()> {
        let dir = cx.mnt.join("postmark");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(cx.tmp.join("postmark.cfg"), config(&dir, cx.scale))?;
        Ok(())
    }
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured> {
        let cfg = cx.tmp.join("postmark.cfg");
        let t = Instant::now();
        let out = cx.run("postmark", Command::new("postmark").arg(&cfg))?;
        let secs = t.elapsed().as_secs_f64();
        // "... seconds of transactions (N per second)"
        let tps = out
            .lines()
            .find(|l| l.contains("seconds of transactions"))
            .and_then(|l| {
                l.split('(')
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<f64>()
                    .ok()
            });
        let mut extra = Vec::new();
        if let Some(t) = tps {
            extra.push(("transactions/s (postmark, 1 s resolution)".into(), t));
        }
        Ok(Measured {
            unit: "seconds",
            value: secs,
            higher_better: false,
            work: Vec::new(),
            cpu_user_s: None,
            extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_one_is_the_study_and_smaller_scales_shrink_every_size() {
        let d = std::path::Path::new("/m/pm");
        let c = config(d, 1.0);
        for l in [
            "set location /m/pm",
            "set number 10000",
            "set transactions 100000",
            "set size 1024 67108864",
            "set buffering false",
        ] {
            assert!(c.lines().any(|x| x == l), "{l} not in\n{c}");
        }
        let c = config(d, 0.01);
        assert!(
            c.contains("set number 100\n") && c.contains("set transactions 1000\n"),
            "{c}"
        );
        assert!(c.contains("set size 1024 671088\n"), "{c}");
        // floors: a tiny scale still runs something
        let c = config(d, 1e-9);
        assert!(
            c.contains("set number 10\n") && c.contains("set size 1024 4096\n"),
            "{c}"
        );
        assert!(c.ends_with("run\nquit\n"));
    }
}
