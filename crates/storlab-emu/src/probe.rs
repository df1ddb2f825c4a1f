//! The transport floor: what a zero-latency device costs over NBD on this
//! host, so a user knows which emulated latencies are reproduced honestly
//! (a model latency well above the floor is; one near it is not).
//!
//! [`transport_floor`] serves a zero-latency device on a private unix
//! socket with the same reactor, priority and wake-assist settings as the
//! real server, and times QD1 4 KiB reads from [`busy_reads`], a client
//! that busy-polls its socket: it never sleeps, so the floor it measures
//! is the server's and the socket's, not a client's wake-up. A client that
//! sleeps between requests (fio's nbd engine) adds its own wake-up on top;
//! measure that floor with the same client against `--device null`.
//!
//! The client is written here rather than taken from libnbd: it must
//! never sleep, and libnbd's blocking calls do (the nbd_bench example uses
//! it too).

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use storlab_model::devices::fixed::FixedLatency;

use crate::error::EmuError;
use crate::options::ServeOptions;
use crate::proto::*;
use crate::report::LatencySummary;
use crate::server::handle::spawn_with;
use crate::store::StoreSpec;

/// When [`busy_reads`] stops.
#[derive(Clone, Copy, Debug)]
pub enum Until {
    /// After this many reads.
    Requests(usize),
    /// After this long.
    Elapsed(Duration),
}

/// Export size of the probe's device (reads of never-written pages).
const PROBE_SIZE: u64 = 64 << 20;

/// QD1 4 KiB random reads over `socket` (an export of `size` bytes) from
/// a client that busy-polls and never sleeps; the round-trip times in ns.
pub fn busy_reads(socket: &Path, until: Until, size: u64) -> io::Result<Vec<u64>> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut greet = [0u8; 18];
    s.read_exact(&mut greet)?;
    if greet[..8] != INIT_PASSWD.to_be_bytes() {
        return Err(io::Error::other("not an NBD server"));
    }
    s.write_all(&FLAG_C_FIXED_NEWSTYLE.to_be_bytes())?;
    // NBD_OPT_GO for the default export, no information requests.
    let mut go = IHAVEOPT.to_be_bytes().to_vec();
    go.extend_from_slice(&OPT_GO.to_be_bytes());
    go.extend_from_slice(&6u32.to_be_bytes());
    go.extend_from_slice(&[0u8; 6]);
    s.write_all(&go)?;
    loop {
        let mut h = [0u8; 20];
        s.read_exact(&mut h)?;
        let len = u32::from_be_bytes([h[16], h[17], h[18], h[19]]) as usize;
        let mut d = vec![0u8; len];
        s.read_exact(&mut d)?;
        match u32::from_be_bytes([h[12], h[13], h[14], h[15]]) {
            REP_ACK => break,
            REP_INFO => {}
            r => return Err(io::Error::other(format!("NBD_OPT_GO refused: {r:#x}"))),
        }
    }
    s.set_nonblocking(true)?;
    let blocks = (size / 4096).max(1);
    let mut lat = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut reply = vec![0u8; SIMPLE_REPLY_LEN + 4096];
    let start = Instant::now();
    let mut handle = 0u64;
    loop {
        let more = match until {
            Until::Requests(n) => lat.len() < n,
            Until::Elapsed(d) => start.elapsed() < d,
        };
        if !more {
            break;
        }
        // xorshift64: a fixed, cheap sequence of offsets.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        handle += 1;
        let req = crate::request::encode_header(&crate::request::RequestHeader {
            flags: 0,
            typ: CMD_READ,
            handle,
            offset: (x % blocks) * 4096,
            length: 4096,
        });
        let t0 = Instant::now();
        let mut sent = 0;
        while sent < req.len() {
            match s.write(&req[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) => return Err(e),
            }
        }
        read_reply(&mut s, &mut reply, t0)?;
        lat.push(t0.elapsed().as_nanos() as u64);
    }
    Ok(lat)
}

/// Read one simple reply to a read into `buf` (header and data) from a
/// non-blocking socket, spinning, in as few system calls as the socket
/// allows; an error reply (no data follows its header) or nothing for
/// [`STUCK`] since `t0` is an error.
fn read_reply(s: &mut UnixStream, buf: &mut [u8], t0: Instant) -> io::Result<()> {
    let mut got = 0;
    let mut checked = false;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if t0.elapsed() > STUCK {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "no reply"));
                }
                std::hint::spin_loop();
            }
            Err(e) => return Err(e),
        }
        if !checked && got >= SIMPLE_REPLY_LEN {
            checked = true;
            let word = |i: usize| u32::from_be_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
            if word(0) != SIMPLE_REPLY_MAGIC {
                return Err(io::Error::other("not a simple reply"));
            }
            if word(4) != 0 {
                let e = errno_name(word(4));
                return Err(io::Error::other(format!("read failed: {e}")));
            }
        }
    }
    Ok(())
}

/// Longest round trip before the client gives up.
const STUCK: Duration = Duration::from_secs(10);

/// Measure the transport floor with `requests` reads, serving with
/// `like`'s reactor settings (priority, wake assist, spin window) on a
/// private socket; nothing else of `like` is used.
pub fn transport_floor(like: &ServeOptions, requests: usize) -> Result<LatencySummary, EmuError> {
    // One directory per probe: the process id and a counter.
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "storlab-floor-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)
        .map_err(|e| EmuError::io(format!("creating {}", dir.display()), e))?;
    struct Cleanup<'a>(&'a Path);
    impl Drop for Cleanup<'_> {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(self.0);
        }
    }
    let _cleanup = Cleanup(&dir);
    let socket = dir.join("floor.sock");
    let opts = ServeOptions {
        socket: Some(socket.clone()),
        size: PROBE_SIZE,
        store: StoreSpec::Memory,
        realtime: like.realtime,
        wake_assist: like.wake_assist,
        spin_threshold_ns: like.spin_threshold_ns,
        input_check_ns: like.input_check_ns,
        idle_poll_ns: like.idle_poll_ns,
        ..ServeOptions::default()
    };
    // (`spawn_with` is `crate::spawn` with the probe passed in; this
    // server's `floor_probe` is 0, so it never probes.)
    let server = spawn_with(
        opts,
        Box::new(FixedLatency::new(0, PROBE_SIZE)),
        transport_floor,
    )?;
    let measured = busy_reads(&socket, Until::Requests(requests), PROBE_SIZE);
    server.stop()?;
    let lat = measured.map_err(|e| EmuError::io("measuring the transport floor", e))?;
    Ok(LatencySummary::of_samples(&lat))
}
