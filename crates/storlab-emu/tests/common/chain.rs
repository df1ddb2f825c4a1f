//! The chain of an exported device attached as a file system (a server,
//! nbdfuse, a loop device, a mount), torn down in reverse even when a test
//! fails half-way. Shared with storlab-sim's closed-loop tests (included
//! there by path: test code has no crate to share it through).

use std::path::PathBuf;
use std::process::{Child, Command};
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
