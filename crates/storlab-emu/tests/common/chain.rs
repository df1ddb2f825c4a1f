//! The chain of an exported device attached as a file system (a server,
//! nbdfuse, a loop device, a mount), torn down in reverse even when a test
//! fails half-way. Shared with storlab-sim's closed-loop tests (included
//! there by path: test code has no crate to share it through).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What is up, torn down in reverse on drop.
pub struct Chain {
    /// Processes (servers, nbdfuse), killed last after 5 s of grace.
    pub procs: Vec<Child>,
    /// The nbdfuse mount point.
    pub fuse_dir: Option<PathBuf>,
    /// The loop device over the nbdfuse file.
    pub loopdev: Option<String>,
    /// The file system's mount point.
    pub mnt: Option<PathBuf>,
}

/// Runs `cmd` and returns its standard output; panics with both outputs
/// when it fails. (The one copy: storlab-emu's tests take it through
/// `common`, storlab-sim's closed-loop harness from here.)
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Chain {
    /// Attaches the export at `uri` (of `size` bytes) as `storlab app run`
    /// does: nbdfuse with `connections` connections exposes it as a file
    /// under `dir/fuse`, a loop device with direct IO sits on that file,
    /// `mkfs.xfs` (with `mkfs_args` before the device) formats it and it
    /// is mounted at `dir/mnt`. Returns the chain (torn down on drop, also
    /// when a step here fails), the loop device and the mount point.
    pub fn attach_xfs(
        uri: &str,
        size: u64,
        dir: &Path,
        connections: &str,
        mkfs_args: &[&str],
    ) -> (Chain, String, PathBuf) {
        assert!(
            Path::new("/dev/loop-control").exists(),
            "/dev/loop-control is missing: the kernel needs the loop module"
        );
        assert!(
            Path::new("/dev/fuse").exists(),
            "/dev/fuse is missing: the kernel needs the fuse module"
        );
        let fuse_dir = dir.join("fuse");
        let mnt = dir.join("mnt");
        std::fs::create_dir_all(&fuse_dir).expect("mkdir fuse");
        std::fs::create_dir_all(&mnt).expect("mkdir mnt");
        let disk = fuse_dir.join("disk");
        let mut chain = Chain {
            procs: Vec::new(),
            fuse_dir: None,
            loopdev: None,
            mnt: None,
        };
        let fuse = Command::new("nbdfuse")
            .args(["-C", connections])
            .arg(&disk)
            .arg(uri)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nbdfuse starts");
        chain.procs.push(fuse);
        chain.fuse_dir = Some(fuse_dir);
        let end = Instant::now() + Duration::from_secs(10);
        while std::fs::metadata(&disk).map(|m| m.len()).unwrap_or(0) != size {
            assert!(
                Instant::now() < end,
                "nbdfuse did not expose {}",
                disk.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let loopdev = run(Command::new("losetup")
            .args(["--direct-io=on", "-f", "--show"])
            .arg(&disk))
        .trim()
        .to_string();
        assert!(
            loopdev.starts_with("/dev/loop"),
            "losetup printed {loopdev:?}"
        );
        chain.loopdev = Some(loopdev.clone());
        run(Command::new("mkfs.xfs").args(mkfs_args).arg(&loopdev));
        run(Command::new("mount").arg(&loopdev).arg(&mnt));
        chain.mnt = Some(mnt.clone());
        (chain, loopdev, mnt)
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        if let Some(m) = self.mnt.take() {
            let _ = Command::new("umount").arg(&m).status();
        }
        if let Some(l) = self.loopdev.take() {
            let _ = Command::new("losetup").args(["-d", &l]).status();
        }
        if let Some(f) = self.fuse_dir.take() {
            let _ = Command::new("fusermount3").arg("-u").arg(&f).status();
        }
        for p in &mut self.procs {
            let end = Instant::now() + Duration::from_secs(5);
            while Instant::now() < end {
                if let Ok(Some(_)) = p.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}
