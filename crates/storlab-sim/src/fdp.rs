//! fio's data placement on the simulated drive: each write of a job
//! with `fdp=1` (or `dataplacement=fdp`) carries the placement
//! identifier fio would put in its NVMe command
//! ([`storlab_workload::fio::dp`]), down the host stack to the drive's
//! reclaim-unit handles (storlab-model's `devices/flash/fdp.rs`).
//!
//! fio checks the job against the drive before any IO: the engine must
//! fetch the drive's reclaim-unit handles (NVMe passthrough:
//! `io_uring_cmd` or `xnvme`), the drive must have FDP enabled, and every
//! `plids` index must name one of the drive's placement identifiers. A
//! job that fails any of these ends at once with EINVAL, as the other
//! setup errors do.

use storlab_model::{Op, SystemConfig};
use storlab_workload::fio::dp::{DpError, DpType, PlacementPicker};
use storlab_workload::fio::{JobSpec, DEFAULT_ENGINE};

use crate::plan::{IoReq, IoSource};

/// A job thread's source whose writes carry placement identifiers.
pub struct PlacedSource {
    inner: Box<dyn IoSource>,
    picker: PlacementPicker,
}

impl IoSource for PlacedSource {
    #[inline]
    fn next_io(&mut self) -> Option<IoReq> {
        let mut io = self.inner.next_io()?;
        // fio's dp_fill_dspec_data: writes only
        if io.op == Op::Write {
            io.placement = Some(self.picker.next_pid());
        }
        Some(io)
    }

    fn completed(&mut self, id: u64, latency_ns: u64) {
        self.inner.completed(id, latency_ns);
    }
}

/// Thread `thread` of job `j` with its data placement, on the device of
/// `cfg`; the source unchanged when the job uses none.
pub fn placed(
    cfg: &SystemConfig,
    j: &JobSpec,
    thread: u32,
    source: Box<dyn IoSource>,
) -> Result<Box<dyn IoSource>, DpError> {
    let Some(dp) = &j.dp else {
        return Ok(source);
    };
    if dp.kind == DpType::Streams {
        return Err(DpError::Streams);
    }
    let engine = j.ioengine.as_deref().unwrap_or(DEFAULT_ENGINE);
    if !matches!(engine, "io_uring_cmd" | "xnvme") {
        return Err(DpError::Engine(engine.to_string()));
    }
    let handles = cfg
        .ssd
        .as_ref()
        .and_then(|s| s.fdp.as_ref())
        .and_then(|f| f.active_handles())
        .ok_or(DpError::NoFdp)?;
    // each thread draws from its own stream of the job's seed, as fio
    // seeds each thread's placement state
    let seed = j.seed.wrapping_add(u64::from(thread));
    let picker = PlacementPicker::new(dp, handles, seed)?;
    Ok(Box::new(PlacedSource {
        inner: source,
        picker,
    }))
}
