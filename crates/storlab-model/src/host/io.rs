//! The host stack's interface: a thread's request, a finished request,
//! and the output of one host call.

use crate::breakdown::Breakdown;
use crate::device::{Cx, Nanos, Op};

/// A request from a host thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostIo {
    /// Caller's id, echoed in [`IoDone`].
    pub id: u64,
    /// Issuing thread (0-based, < the thread count given to [`Host::new`]).
    pub thread: u32,
    /// Operation.
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Force unit access.
    pub fua: bool,
    /// The thread polls for this completion whatever the configured
    /// completion mode (fio's `hipri`: io_uring `IORING_SETUP_IOPOLL`,
    /// `RWF_HIPRI`), as `CompletionMode::Spin` does, whatever the size.
    pub poll: bool,
    /// A write's FDP placement identifier (fio's `fdp=1` with
    /// `io_uring_cmd`: the directive travels in the NVMe command the
    /// passthrough builds), handed to the device as is.
    pub placement: Option<u16>,
}

/// A finished host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoDone {
    /// The id given at submission.
    pub id: u64,
    /// Issuing thread.
    pub thread: u32,
    /// Operation.
    pub op: Op,
    /// Bytes.
    pub len: u64,
    /// Submission latency: from submission until the device has the
    /// request.
    pub slat_ns: u64,
    /// Completion latency: from then until the thread has the result.
    pub clat_ns: u64,
    /// When it finished.
    pub at: Nanos,
    /// Where the time went.
    pub breakdown: Breakdown,
    /// The errno the system call returns (0: success), from the device's
    /// completion status ([`status_errno`]).
    pub error: i32,
}

/// The errno Linux returns to a system call for an NVMe completion status
/// (0 for success): the NVMe driver maps the status to a block-layer status
/// (`nvme_error_status`, drivers/nvme/host/core.c: Too Many Open Zones to
/// `BLK_STS_ZONE_OPEN_RESOURCE`, Too Many Active Zones to
/// `BLK_STS_ZONE_ACTIVE_RESOURCE`, Invalid Field to `BLK_STS_NOTSUPP`,
/// every other failure to `BLK_STS_IOERR`) and the block layer that to an
/// errno (`blk_errors`, block/blk-core.c: ETOOMANYREFS, EOVERFLOW,
/// EOPNOTSUPP, EIO).
pub fn status_errno(status: u16) -> i32 {
    const EIO: i32 = 5;
    const EOVERFLOW: i32 = 75;
    const EOPNOTSUPP: i32 = 95;
    const ETOOMANYREFS: i32 = 109;
    match status {
        0 => 0,
        // generic command status (type 0), Invalid Field in Command
        0x002 => EOPNOTSUPP,
        // command specific (type 1): Too Many Active / Open Zones
        0x1bd => EOVERFLOW,
        0x1be => ETOOMANYREFS,
        _ => EIO,
    }
}

/// Output of one host call: wake-ups for the driver's event queue and
/// finished requests.
///
/// The device writes its wake-ups straight into `dev.wakeups`, beside the
/// host's own, so a wake-up is copied once on its way to the event queue;
/// `dev.completions` is the host's to drain and is empty between calls.
#[derive(Default, Debug)]
pub struct HostCx {
    /// `dev.wakeups` holds the `(time, token)` wake-ups: pass each token
    /// back to [`Host::on_event`].
    pub dev: Cx,
    /// Finished requests.
    pub done: Vec<IoDone>,
}
