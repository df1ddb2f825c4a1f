//! A `zonemode=zbd` job thread: the job's generator with fio's host-side
//! zone handling in front ([`storlab_workload::fio::zbd`]), over the
//! device's zones (a zoned drive's `[ssd.zns]`) or the zones fio emulates
//! from `zonesize` and `zonecapacity` on a device without them.
//!
//! A zone reset waits for the thread's requests in flight, as fio's
//! zbd.c calls `io_u_quiesce` before it resets a zone (writes submitted
//! asynchronously may still be on their way to the zone), and the reset
//! is synchronous: the thread's next request waits for it
//! ([`IoReq::quiesce`] on both).

use storlab_model::{Op, SystemConfig};
use storlab_workload::fio::zbd::{SharedZones, ZbdError, ZbdHost, ZoneGeometry, ZoneTable};
use storlab_workload::fio::JobSpec;
use storlab_workload::gen::{IoOp, JobThread};

use crate::plan::{IoReq, IoSource};

/// The zone tables of one phase's zoned jobs, by zone geometry (zone size
/// and capacity): the drive's own zones, or each size fio emulates.
pub type Tables = std::collections::HashMap<(u64, u64), SharedZones>;

/// A zoned job thread.
pub struct ZbdSource {
    gen: JobThread,
    host: ZbdHost,
    sync_writes: bool,
    /// The last request issued was a zone reset.
    after_reset: bool,
}

/// A source with nothing to issue (a job fio refused).
pub struct Nothing;

impl IoSource for Nothing {
    fn next_io(&mut self) -> Option<IoReq> {
        None
    }
}

impl ZbdSource {
    /// Job `j`'s thread `gen` on the device of `cfg` (`capacity` bytes),
    /// sharing the device's zones with the phase's other zoned jobs
    /// through `tables` (one [`ZoneTable`] per zone geometry, made on
    /// first use from `report`, the drive's zone report when the phase
    /// starts, as [`storlab_model::Device::zone_report`] gives it; `None`:
    /// zones fio emulates, all empty).
    pub fn new(
        cfg: &SystemConfig,
        j: &JobSpec,
        gen: JobThread,
        capacity: u64,
        report: Option<&[storlab_model::ZoneReport]>,
        tables: &mut Tables,
    ) -> Result<Self, ZbdError> {
        let opts = j.zbd.clone().unwrap_or_default();
        let geo = match cfg.ssd.as_ref().and_then(|s| s.zns.as_ref()) {
            Some(z) => ZoneGeometry {
                zone_bytes: z.zone_bytes,
                capacity_bytes: z.zone_capacity_bytes,
                max_open: z.max_open_zones,
            },
            None => {
                let Some(size) = opts.zone_size else {
                    return Err(ZbdError::Geometry(
                        "zonemode=zbd on a device without zones needs zonesize= (fio emulates zones of that size)"
                            .into(),
                    ));
                };
                ZoneGeometry {
                    zone_bytes: size,
                    capacity_bytes: opts.zone_capacity.unwrap_or(size).min(size),
                    max_open: 0,
                }
            }
        };
        let (start, len) = gen.region();
        let len = len.min(capacity.saturating_sub(start));
        let host = ZbdHost::new(&opts, geo, start, len, j.rw.is_random(), j.min_block_size())?;
        let table = tables
            .entry((geo.zone_bytes, geo.capacity_bytes))
            .or_insert_with(|| {
                let r: Vec<(u64, bool)> = report
                    .map(|r| r.iter().map(|z| (z.write_pointer, z.open)).collect())
                    .unwrap_or_default();
                ZoneTable::from_report(&r, geo.capacity_bytes).shared()
            })
            .clone();
        let host = host.join(table)?;
        Ok(ZbdSource {
            gen,
            host,
            sync_writes: j.sync_writes,
            after_reset: false,
        })
    }
}

impl IoSource for ZbdSource {
    fn next_io(&mut self) -> Option<IoReq> {
        loop {
            if let Some(io) = self.host.next_io() {
                let op = match io.op {
                    IoOp::Read => Op::Read,
                    IoOp::Write => Op::Write,
                    IoOp::Trim => Op::Trim,
                    IoOp::Fsync | IoOp::Fdatasync => Op::Flush,
                };
                // fio's zbd.c waits for the thread's IO in flight before
                // a zone reset (its writes may still be on their way to
                // the zone) and resets synchronously, so the request
                // after a reset waits for the reset
                let reset = op == Op::Trim;
                let quiesce = reset || self.after_reset;
                self.after_reset = reset;
                return Some(IoReq {
                    op,
                    offset: io.offset,
                    len: io.len,
                    at: None,
                    fua: self.sync_writes && op == Op::Write,
                    placement: None,
                    quiesce,
                });
            }
            let io = self.gen.next_io()?;
            if !self.host.adjust(io) {
                return None;
            }
        }
    }
}
