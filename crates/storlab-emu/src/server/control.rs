//! Control of a running server ([`ServerControl`]) and the control
//! socket's line commands: `powercut`, `stats`, `reset-stats`, `shutdown`.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::EmuError;
use crate::options::ShutdownHandle;
use crate::report::ServeReport;
use crate::shared::Shared;

/// Control of a running server from another thread.
#[derive(Clone)]
pub struct ServerControl {
    pub(super) shared: Arc<Shared>,
    pub(super) shutdown: ShutdownHandle,
}

impl ServerControl {
    /// Emulate a power cut now: acknowledged writes the device would lose
    /// are discarded, requests in flight fail with `EIO`, and the server
    /// keeps serving the post-crash image.
    pub fn power_cut(&self) -> Result<(), EmuError> {
        self.shared
            .power_cut()
            .map_err(|e| EmuError::io("power cut", e))
    }
    /// The report so far.
    pub fn report(&self) -> ServeReport {
        self.shared.report()
    }
    /// Forget the requests served so far: later reports count only the
    /// requests that follow (connections, durability and device counters
    /// are kept).
    pub fn reset_stats(&self) {
        self.shared.stats.reset_requests();
    }
    /// Ask the server to stop.
    pub fn shutdown(&self) {
        self.shutdown.trigger();
    }

    /// Answer one control-socket connection: read one line (at most 256
    /// bytes, within one second in all), run it, write the reply.
    pub(super) fn answer(&self, s: UnixStream) {
        const LIMIT: Duration = Duration::from_secs(1);
        let start = Instant::now();
        let _ = s.set_nonblocking(false);
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while line.len() < 256 {
            let Some(left) = LIMIT.checked_sub(start.elapsed()).filter(|d| !d.is_zero()) else {
                break;
            };
            let _ = s.set_read_timeout(Some(left));
            match (&s).read(&mut byte) {
                Ok(1) if byte[0] != b'\n' => line.push(byte[0]),
                _ => break,
            }
        }
        let reply = match String::from_utf8_lossy(&line).trim() {
            "powercut" => match self.power_cut() {
                Ok(()) => "ok\n".to_string(),
                Err(e) => format!("error: {e}\n"),
            },
            "stats" => serde_json::to_string(&self.report())
                .map(|j| j + "\n")
                .unwrap_or_default(),
            "reset-stats" => {
                self.reset_stats();
                "ok\n".to_string()
            }
            "shutdown" => {
                self.shutdown();
                "ok\n".to_string()
            }
            other => format!(
                "error: unknown command {other:?} (powercut, stats, reset-stats, shutdown)\n"
            ),
        };
        // A client that never reads gets the rest of its second (at least
        // 0.1 s, for a reply computed late in it), no more.
        let left = LIMIT
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(100));
        let _ = s.set_write_timeout(Some(left));
        let _ = (&s).write_all(reply.as_bytes());
    }
}

/// Control-socket commands answered at once; further connections wait
/// in the listener's backlog until one is done.
pub(super) const MAX_CONTROL: usize = 8;
