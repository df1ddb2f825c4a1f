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

/// User-space CPU seconds of the children this process has waited for
/// (getrusage(2), RUSAGE_CHILDREN): a client program's CPU, taken before
/// and after it runs.
pub fn children_user_s() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    ru.ru_utime.tv_sec as f64 + ru.ru_utime.tv_usec as f64 / 1e6
}

/// User-space CPU seconds process `pid` (all its threads) has used so
/// far: field 14, `utime`, of /proc/PID/stat (proc(5)), in clock ticks.
/// `None` when the process or its figure cannot be read.
pub fn process_user_s(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces:
    // the fields after it start past the last ')'
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest's first field is field 3 (state); utime is field 14
    let ticks: f64 = rest.split_whitespace().nth(11)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks / hz as f64)
}

/// A server's and its clients' user-space CPU seconds so far: the
/// server process's (`server_user_s` of `server`, read from /proc) and
/// this process's waited-for children's (a client run as a child). Taken
/// before and after a run, the difference is the run's; `None` without
/// the server's figure.
pub fn server_and_clients_user_s(
    server: Option<u32>,
    server_user_s: fn(u32) -> Option<f64>,
) -> Option<f64> {
    server
        .and_then(server_user_s)
        .map(|s| s + children_user_s())
}

/// User-space CPU seconds of process `pid` and everything under it:
/// its own and its reaped children's (`utime` and `cutime`, fields 14 and
/// 16 of /proc/PID/stat, proc(5)) and, the same way, each live child's (a
/// server's workers: PostgreSQL's backends under the postmaster). `None`
/// when `pid`'s own figure cannot be read.
pub fn tree_user_s(pid: u32) -> Option<f64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return None;
    }
    // (pid, parent, utime + cutime in ticks) of every process now
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        // rest's first field is field 3 (state): the parent is field 4,
        // utime field 14, cutime field 16
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |k: usize| f.get(k).and_then(|x| x.parse::<f64>().ok());
        if let (Some(ppid), Some(ut), Some(cut)) = (num(1), num(11), num(13)) {
            procs.push((p, ppid as u32, ut + cut));
        }
    }
    procs.iter().find(|q| q.0 == pid)?;
    let mut total = 0.0;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        for q in &procs {
            if q.0 == p {
                total += q.2;
            }
            if q.1 == p && q.0 != p {
                stack.push(q.0);
            }
        }
    }
    Some(total / hz as f64)
}

#[cfg(test)]
mod cpu_tests {
    use super::*;

    #[test]
    fn a_busy_process_counts_its_user_cpu() {
        let me = std::process::id();
        let before = process_user_s(me).expect("this process's stat");
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let after = process_user_s(me).expect("this process's stat");
        // 0.3 s of spinning: at least a tenth of it counted, whatever
        // else the machine runs (the ticks are 10 ms)
        assert!(after - before >= 0.03, "{before} -> {after}");
        assert!(process_user_s(u32::MAX).is_none());
        // a child's CPU reaches RUSAGE_CHILDREN once it is waited for
        let c0 = children_user_s();
        let ok = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh");
        assert!(ok.success());
        assert!(children_user_s() > c0, "{c0}");
        // a live child's CPU counts in its parent's tree: the outer shell
        // waits while the inner one spins
        let mut outer = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done'; sleep 5",
            ])
            .spawn()
            .expect("sh");
        let pid = outer.id();
        let t = std::time::Instant::now();
        let mut grew = false;
        while t.elapsed() < Duration::from_secs(4) && !grew {
            std::thread::sleep(Duration::from_millis(100));
            grew = tree_user_s(pid).unwrap_or(0.0) > 0.05;
        }
        let _ = outer.kill();
        let _ = outer.wait();
        assert!(
            grew,
            "the inner shell's spinning did not reach the outer's tree"
        );
        assert!(tree_user_s(u32::MAX).is_none());
    }
}
