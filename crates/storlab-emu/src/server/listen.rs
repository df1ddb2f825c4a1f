//! The listeners: a unix socket (a stale socket file replaced) and TCP.

use std::io;
use std::net::TcpListener;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use crate::error::EmuError;
use crate::sock::Sock;

pub(super) enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

impl Listener {
    pub(super) fn fd(&self) -> RawFd {
        match self {
            Listener::Unix(l, _) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        }
    }
    pub(super) fn accept(&self) -> io::Result<Sock> {
        match self {
            // (An accepted socket is blocking: `accept4` does not pass
            // the listener's `O_NONBLOCK` on. No system call spared
            // matters more than under a connection flood.)
            Listener::Unix(l, _) => {
                let (s, _) = l.accept()?;
                Ok(Sock::Unix(s))
            }
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                s.set_nodelay(true)?;
                Ok(Sock::Tcp(s))
            }
        }
    }
}

/// The listen backlog: as deep as the kernel allows (`somaxconn`, 4096 on
/// current kernels), so a flood of connections queues behind the accept
/// loop instead of refusing (unix) or dropping (TCP: a dropped SYN is
/// retried after a second) a legitimate client's connect (issue 59).
pub(super) fn deepen_backlog(fd: RawFd) {
    // SAFETY: `listen` on a bound socket we own; calling it again only
    // changes the backlog (capped by the kernel at `somaxconn`).
    unsafe { libc::listen(fd, 65_535) };
}

/// Bind a unix socket, replacing a stale socket file but never a live
/// server's socket or a file that is not a socket.
pub(super) fn bind_unix(path: &Path) -> Result<UnixListener, EmuError> {
    if let Ok(md) = std::fs::symlink_metadata(path) {
        if !md.file_type().is_socket() {
            return Err(EmuError::Config(format!(
                "{} exists and is not a socket",
                path.display()
            )));
        }
        if UnixStream::connect(path).is_ok() {
            return Err(EmuError::SocketInUse(path.to_path_buf()));
        }
        std::fs::remove_file(path)
            .map_err(|e| EmuError::io(format!("removing stale socket {}", path.display()), e))?;
    }
    let l = UnixListener::bind(path)
        .map_err(|e| EmuError::io(format!("binding {}", path.display()), e))?;
    deepen_backlog(l.as_raw_fd());
    l.set_nonblocking(true)
        .map_err(|e| EmuError::io("set_nonblocking", e))?;
    Ok(l)
}
