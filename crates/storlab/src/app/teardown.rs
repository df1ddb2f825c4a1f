//! Taking everything down again: a stack of undo actions run in reverse
//! order, each at most once, whether the run succeeded, failed or was
//! interrupted by SIGINT, SIGTERM or SIGHUP; and the child processes the
//! run starts, each in its own process group so the whole group can be
//! killed.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// The signal that asked us to stop (0: none yet).
fn stop_flag() -> &'static Arc<AtomicUsize> {
    static FLAG: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    FLAG.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on: they set a flag that
/// every wait of the run polls, so the run ends through its teardown.
/// Also make this process a child subreaper, so daemons a run starts
/// (PostgreSQL's postmaster leaves its parent) are reaped by us and leave
/// no zombie behind.
pub fn install_signals() -> anyhow::Result<()> {
    static DONE: OnceLock<()> = OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register_usize(sig, Arc::clone(stop_flag()), sig as usize)
            .context("installing signal handlers")?;
    }
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer argument
    // and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let _ = DONE.set(());
    Ok(())
}

/// An error if a signal asked us to stop.
pub fn check_stop() -> anyhow::Result<()> {
    match stop_flag().load(Ordering::SeqCst) {
        0 => Ok(()),
        s => bail!(
            "interrupted by {}: taking everything down",
            match s as i32 {
                libc::SIGINT => "SIGINT (Ctrl-C)",
                libc::SIGTERM => "SIGTERM",
                libc::SIGHUP => "SIGHUP",
                _ => "a signal",
            }
        ),
    }
}

/// Sleep `d`, waking early with an error when a signal arrives.
pub fn sleep(d: Duration) -> anyhow::Result<()> {
    let end = Instant::now() + d;
    loop {
        check_stop()?;
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

/// One thing to undo.
#[derive(Debug)]
pub enum Undo {
    /// Stop a process group: SIGTERM, then SIGKILL after `grace`.
    KillGroup {
        /// The group (its leader's pid).
        pgid: i32,
        /// For messages.
        name: String,
        /// How long it may take to end after SIGTERM.
        grace: Duration,
    },
    /// Ask the server to shut down on its control socket, then stop its
    /// group like `KillGroup`.
    StopServer {
        /// The control socket.
        control: PathBuf,
        /// The server's process group.
        pgid: i32,
    },
    /// Unmount a file system (lazily if it stays busy).
    Umount(PathBuf),
    /// Detach a loop device.
    LoopDetach(String),
    /// Unmount a FUSE mount (nbdfuse exits then).
    FuseUnmount(PathBuf),
    /// Disconnect a kernel NBD device.
    NbdDisconnect(String),
    /// Remove a directory tree.
    RemoveDir(PathBuf),
}

/// The stack of undo actions.
#[derive(Default)]
pub struct Teardown {
    stack: Vec<Option<Undo>>,
    /// What went wrong while undoing (reported, never fatal).
    pub problems: Vec<String>,
}

/// Names an entry of the stack.
#[derive(Clone, Copy, Debug)]
pub struct Token(usize);

impl Teardown {
    /// Remember `u` to be undone.
    pub fn push(&mut self, u: Undo) -> Token {
        self.stack.push(Some(u));
        Token(self.stack.len() - 1)
    }

    /// Forget an entry (it was undone in the ordinary course).
    pub fn forget(&mut self, t: Token) {
        if let Some(e) = self.stack.get_mut(t.0) {
            *e = None;
        }
    }

    /// Undo everything pushed after `t`, and `t` itself.
    pub fn unwind_to(&mut self, t: Token) {
        while self.stack.len() > t.0 {
            if let Some(u) = self.stack.pop().flatten() {
                if let Err(e) = undo(&u) {
                    self.problems.push(format!("{u:?}: {e:#}"));
                }
            }
        }
    }

    /// Undo everything, newest first. Running it again does nothing.
    pub fn run_all(&mut self) {
        self.unwind_to(Token(0));
    }
}

impl Drop for Teardown {
    fn drop(&mut self) {
        self.run_all();
        for p in &self.problems {
            eprintln!("storlab app: teardown: {p}");
        }
    }
}

fn quiet(cmd: &mut Command) -> std::io::Result<ExitStatus> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
}

/// Reap what has ended in group `pgid` (our children and, as subreaper,
/// orphans of the run); true when the group is gone.
fn group_gone(pgid: i32) -> bool {
    // SAFETY: waitpid with WNOHANG and a null status pointer, and kill
    // with signal 0, only query the kernel.
    unsafe {
        while libc::waitpid(-pgid, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
        libc::kill(-pgid, 0) != 0
    }
}

fn wait_group(pgid: i32, d: Duration) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if group_gone(pgid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    group_gone(pgid)
}

/// SIGTERM the group, SIGKILL it after `grace`.
pub fn kill_group(pgid: i32, name: &str, grace: Duration) -> anyhow::Result<()> {
    if pgid <= 1 || group_gone(pgid) {
        return Ok(());
    }
    // SAFETY: signalling a process group we created.
    unsafe {
        libc::kill(-pgid, libc::SIGTERM);
    }
    if wait_group(pgid, grace) {
        return Ok(());
    }
    // SAFETY: as above.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    if wait_group(pgid, Duration::from_secs(5)) {
        Ok(())
    } else {
        bail!("{name} (process group {pgid}) survived SIGKILL")
    }
}

fn undo(u: &Undo) -> anyhow::Result<()> {
    match u {
        Undo::KillGroup { pgid, name, grace } => kill_group(*pgid, name, *grace),
        Undo::StopServer { control, pgid } => {
            if !group_gone(*pgid) {
                let _ = control_command(control, "shutdown");
                wait_group(*pgid, Duration::from_secs(10));
            }
            kill_group(*pgid, "storlab serve", Duration::from_secs(2))
        }
        Undo::Umount(p) => {
            if !is_mountpoint(p) {
                return Ok(());
            }
            for _ in 0..20 {
                if quiet(Command::new("umount").arg(p))?.success() {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            quiet(Command::new("umount").arg("-l").arg(p))?;
            bail!("{} stayed busy: unmounted lazily", p.display())
        }
        Undo::LoopDetach(dev) => {
            if quiet(Command::new("losetup").arg(dev))?.success() {
                let st = quiet(Command::new("losetup").args(["-d", dev]))?;
                if !st.success() {
                    bail!("losetup -d {dev}: {st}");
                }
            }
            Ok(())
        }
        Undo::FuseUnmount(p) => {
            if is_mountpoint(p) {
                let st = quiet(Command::new("fusermount3").arg("-u").arg(p))?;
                if !st.success() {
                    quiet(Command::new("umount").arg("-l").arg(p))?;
                }
            }
            Ok(())
        }
        Undo::NbdDisconnect(dev) => {
            quiet(Command::new("nbd-client").args(["-d", dev]))?;
            Ok(())
        }
        Undo::RemoveDir(p) => match std::fs::remove_dir_all(p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", p.display()))
            }
            _ => Ok(()),
        },
    }
}

/// Is `p` a mount point now (per /proc/self/mountinfo)?
pub fn is_mountpoint(p: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = p.to_string_lossy().replace(' ', "\\040");
    info.lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|m| m == want))
}

/// Send one line command to the server's control socket, return its reply.
pub fn control_command(control: &Path, cmd: &str) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(control)
        .with_context(|| format!("control socket {}", control.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(format!("{cmd}\n").as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// A child process of the run, in its own process group (on the undo
/// stack until it has ended), its output going to a log file.
pub struct Proc {
    /// The child.
    pub child: Child,
    /// For messages.
    pub name: String,
    /// Its stdout (and stderr, unless redirected elsewhere) log.
    pub log: PathBuf,
    token: Token,
}

/// Start `cmd` in its own process group with stdout and stderr to `log`;
/// on the undo stack as a group kill with `grace`.
pub fn spawn(
    td: &mut Teardown,
    name: &str,
    cmd: &mut Command,
    log: &Path,
    grace: Duration,
) -> anyhow::Result<Proc> {
    check_stop()?;
    let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {name} ({:?})", cmd.get_program()))?;
    let token = td.push(Undo::KillGroup {
        pgid: child.id() as i32,
        name: name.to_string(),
        grace,
    });
    Ok(Proc {
        child,
        name: name.to_string(),
        log: log.to_path_buf(),
        token,
    })
}

/// The last `n` lines of a log file.
pub fn tail(log: &Path, n: usize) -> String {
    let s = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Proc {
    /// Wait for the process to end (polling the stop flag; at most
    /// `timeout`); an error unless it exits 0. Its group is then killed
    /// (anything it left running) and it leaves the undo stack.
    pub fn wait(mut self, td: &mut Teardown, timeout: Option<Duration>) -> anyhow::Result<String> {
        let start = Instant::now();
        let status = loop {
            if let Some(st) = self.child.try_wait()? {
                break st;
            }
            check_stop()?;
            if timeout.is_some_and(|t| start.elapsed() > t) {
                bail!(
                    "{} did not finish within {:?}; its last output:\n{}",
                    self.name,
                    timeout.unwrap_or_default(),
                    tail(&self.log, 20)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        td.unwind_to_single(self.token);
        let out = std::fs::read_to_string(&self.log).unwrap_or_default();
        if !status.success() {
            bail!(
                "{} failed ({status}); its last output:\n{}",
                self.name,
                tail(&self.log, 20)
            );
        }
        Ok(out)
    }

    /// Its entry on the undo stack.
    pub fn token(&self) -> Token {
        self.token
    }

    /// Still running?
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Teardown {
    /// Undo one entry now (a process that ended: kill what it left in its
    /// group) and take it off the stack.
    pub fn unwind_to_single(&mut self, t: Token) {
        if let Some(u) = self.stack.get_mut(t.0).and_then(Option::take) {
            if let Err(e) = undo(&u) {
                self.problems.push(format!("{u:?}: {e:#}"));
            }
        }
    }
}

/// Run `cmd` to completion (own process group, output to `log`), with
/// the stop flag polled; its output on success.
pub fn run(
    td: &mut Teardown,
    name: &str,
    cmd: &mut Command,
    log: &Path,
    timeout: Option<Duration>,
) -> anyhow::Result<String> {
    spawn(td, name, cmd, log, Duration::from_secs(5))?.wait(td, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwinding_stops_at_its_token_and_runs_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).expect("mkdir");
        std::fs::create_dir_all(&b).expect("mkdir");
        let mut td = Teardown::default();
        td.push(Undo::RemoveDir(a.clone()));
        let tb = td.push(Undo::RemoveDir(b.clone()));
        td.unwind_to(tb);
        assert!(!b.exists() && a.exists());
        td.run_all();
        assert!(!a.exists());
        assert!(td.problems.is_empty(), "{:?}", td.problems);
        // again: nothing left to do
        td.run_all();
        assert!(td.problems.is_empty());
        // a forgotten entry is not undone
        std::fs::create_dir_all(&a).expect("mkdir");
        let ta = td.push(Undo::RemoveDir(a.clone()));
        td.forget(ta);
        td.run_all();
        assert!(a.exists());
    }

    #[test]
    fn a_process_group_is_killed_with_its_children() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        let mut td = Teardown::default();
        let p = spawn(
            &mut td,
            "sleeper",
            Command::new("sh").args(["-c", "sleep 30 & sleep 30; wait"]),
            &log,
            Duration::from_secs(2),
        )
        .expect("spawn");
        let pgid = p.child.id() as i32;
        std::thread::sleep(Duration::from_millis(100));
        assert!(!group_gone(pgid));
        let t = Instant::now();
        td.run_all();
        assert!(group_gone(pgid), "the group survived the teardown");
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
