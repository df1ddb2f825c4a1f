//! Shared by the `app_*` tests: run `storlab app ...` with a private
//! TMPDIR and check that nothing of the run is left behind.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A private TMPDIR for one run (the run's own private directory is made
/// inside it), removed at the end.
pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            dir: tempfile::Builder::new()
                .prefix("storlab-apptest-")
                .tempdir()
                .expect("tempdir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `storlab ARGS` with TMPDIR set to the scratch directory.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_storlab"));
        c.args(args).env("TMPDIR", self.path());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run storlab")
    }

    /// Everything the run made is gone: its private directory, mounts,
    /// loop devices and processes (by command line or working directory
    /// under the scratch directory).
    pub fn assert_clean(&self) {
        let p = self.path().display().to_string();
        let left: Vec<PathBuf> = std::fs::read_dir(self.path())
            .expect("scratch dir")
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        assert!(
            !mounts.contains(&p),
            "a mount is left under {p}:\n{}",
            mounts
                .lines()
                .filter(|l| l.contains(&p))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let loops = Command::new("losetup")
            .arg("-a")
            .output()
            .expect("losetup -a");
        let loops = String::from_utf8_lossy(&loops.stdout);
        assert!(!loops.contains(&p), "a loop device is left: {loops}");
        let mut procs = Vec::new();
        for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let cwd = std::fs::read_link(e.path().join("cwd")).unwrap_or_default();
            if cmdline.contains(&p) || cwd.starts_with(self.path()) {
                procs.push(format!("{pid}: {cmdline}"));
            }
        }
        assert!(procs.is_empty(), "processes left: {procs:?}");
    }
}

/// The report a successful run wrote with --json.
pub fn report(out: &Output, json: &Path) -> serde_json::Value {
    assert!(
        out.status.success(),
        "storlab app failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(json).expect("the --json report");
    serde_json::from_str(&text).expect("JSON")
}

/// Requests of `op` the device served in the measured phase.
pub fn requests(rep: &serde_json::Value, op: &str) -> u64 {
    rep["device_stats"]["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .find(|o| o["op"] == op)
        .and_then(|o| o["requests"].as_u64())
        .unwrap_or(0)
}
