//! What every real application shares: the [`App`] interface, what it
//! measured ([`Measured`]), and the helpers to find its programs and its
//! cache.

use std::path::PathBuf;
use std::time::Duration;

use super::opts::{Ctx, RunOpts};

/// What an application measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measured {
    /// The application's own metric, e.g. `transactions/s`, `seconds`.
    pub unit: &'static str,
    /// Its value.
    pub value: f64,
    /// Higher is better (rates) or lower (run times).
    pub higher_better: bool,
    /// Other figures the application printed, with their units.
    pub extra: Vec<(String, f64)>,
    /// The work a timed application did (transactions; sqlite: inserts
    /// and reads; rocksdb: fill and read operations): `--work` repeats
    /// it. Empty for fixed-work applications.
    pub work: Vec<u64>,
    /// The program's own user-space CPU time over its measured work, s,
    /// where it reports it (bdb-bench: getrusage around its
    /// transactions): `app check` gives the model this host's CPU per
    /// operation. `None` for programs that do not.
    pub cpu_user_s: Option<f64>,
}

/// One real application.
pub trait App: Sync {
    /// Its name on the command line.
    fn name(&self) -> &'static str;
    /// What it runs, in a line.
    fn about(&self) -> &'static str;
    /// Programs it needs, each with the Debian package that has it.
    fn needs(&self) -> Vec<(&'static str, &'static str)>;
    /// `--scale` when none is given: sizes that prepare and run in about
    /// a minute here (1 is the study's size).
    fn default_scale(&self) -> f64;
    /// The default scale for these options (postmark's `--direct` runs
    /// far slower: every write waits for the device).
    fn default_scale_for(&self, _o: &RunOpts) -> f64 {
        self.default_scale()
    }
    /// What scale 1 is (the study's parameters).
    fn study(&self) -> &'static str;
    /// Does it run for `--duration` (else for a fixed amount of work)?
    fn timed(&self) -> bool {
        true
    }
    /// Extra mount options (e.g. postmark's direct IO).
    fn mount_options(&self, _cx: &RunOpts) -> Option<String> {
        None
    }
    /// Set up on the mounted file system (not measured: the server's
    /// statistics are reset after it).
    fn prepare(&self, cx: &mut Ctx) -> anyhow::Result<()>;
    /// The measured run.
    fn run(&self, cx: &mut Ctx) -> anyhow::Result<Measured>;
}

/// `program` on PATH, or in the sbin directories root's PATH has.
pub fn which(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain(["/usr/local/sbin", "/usr/sbin", "/sbin"])
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join(program))
        .find(|p| p.is_file());
    found
}

/// The programs of `needs` that are missing, as `program (package)`.
pub fn missing(needs: &[(&str, &str)]) -> Vec<String> {
    needs
        .iter()
        .filter(|(p, _)| which(p).is_none())
        .map(|(p, k)| format!("{p} ({k})"))
        .collect()
}

/// Where compiled helpers and downloaded sources are kept between runs:
/// `$XDG_CACHE_HOME/storlab` or `~/.cache/storlab`.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/cache"));
    base.join("storlab")
}

/// Default duration of a timed application.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);
