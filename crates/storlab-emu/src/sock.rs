//! A client's socket (unix or TCP) and sending on it without SIGPIPE.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

pub(crate) enum Sock {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Sock {
    pub(crate) fn fd(&self) -> RawFd {
        match self {
            Sock::Unix(s) => s.as_raw_fd(),
            Sock::Tcp(s) => s.as_raw_fd(),
        }
    }
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Sock::Unix(s) => (&*s).read(buf),
            Sock::Tcp(s) => (&*s).read(buf),
        }
    }
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Unix(s) => s.set_read_timeout(t),
            Sock::Tcp(s) => s.set_read_timeout(t),
        }
    }
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Sock::Unix(s) => s.set_write_timeout(t),
            Sock::Tcp(s) => s.set_write_timeout(t),
        }
    }
    pub(crate) fn shutdown(&self, how: Shutdown) {
        let _ = match self {
            Sock::Unix(s) => s.shutdown(how),
            Sock::Tcp(s) => s.shutdown(how),
        };
    }
    /// Who is at the other end, as far as the server can tell: the
    /// process (`SO_PEERCRED`'s pid) on a unix socket, the address on TCP.
    /// Connections from one peer are evicted first when the serving slots
    /// are full (one process holding many slots yields them before a
    /// process holding one).
    pub(crate) fn peer_key(&self) -> u64 {
        match self {
            Sock::Unix(s) => {
                let mut cred = libc::ucred {
                    pid: 0,
                    uid: 0,
                    gid: 0,
                };
                let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
                // SAFETY: `cred` is a valid ucred and `len` its size; the
                // fd is the open socket.
                let r = unsafe {
                    libc::getsockopt(
                        s.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_PEERCRED,
                        (&mut cred as *mut libc::ucred).cast(),
                        &mut len,
                    )
                };
                if r == 0 {
                    cred.pid as u64
                } else {
                    0
                }
            }
            Sock::Tcp(s) => match s.peer_addr().map(|a| a.ip()) {
                Ok(std::net::IpAddr::V4(ip)) => (1 << 48) | u64::from(u32::from(ip)),
                Ok(std::net::IpAddr::V6(ip)) => {
                    let b = u128::from(ip);
                    (2 << 48) ^ (b as u64) ^ ((b >> 64) as u64)
                }
                Err(_) => 0,
            },
        }
    }
    pub(crate) fn try_clone(&self) -> io::Result<Sock> {
        Ok(match self {
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
        })
    }
}

/// `send(2)` with `MSG_NOSIGNAL` (a vanished client must not kill us with
/// SIGPIPE), optionally non-blocking.
pub(crate) fn send_raw(fd: RawFd, buf: &[u8], nonblocking: bool) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | if nonblocking { libc::MSG_DONTWAIT } else { 0 };
    // SAFETY: `buf` is valid for `buf.len()` bytes; `fd` is an open socket
    // owned by the connection for as long as this call runs.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub(crate) fn send_all_blocking(fd: RawFd, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match send_raw(fd, buf, false) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
