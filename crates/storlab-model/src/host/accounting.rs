//! What the host stack reports of the requests it finished: their count
//! and bytes by operation, and the mean core time and instructions of
//! their software.

use crate::device::Op;

use super::stack::Host;

impl Host {
    /// Requests of `op` the stack has finished and their bytes: what its
    /// device was asked for (after the file-system layer, if any: page
    /// writeback, journal writes, reads that missed the page cache), as
    /// a block trace below the file system counts it.
    pub fn finished(&self, op: Op) -> (u64, u64) {
        (self.done_by_op[op as usize], self.bytes_by_op[op as usize])
    }

    /// Mean core time of a finished request's software for `op`, ns: every
    /// software segment of the stack (issue, interrupt, wake-up, return),
    /// the switch-out of a sleeping thread and a spinning thread's busy
    /// wait (its poll loop runs on the core); not the time spent waiting
    /// for a resource. `None` before any
    /// request of `op` finished.
    pub fn cpu_ns_per_io(&self, op: Op) -> Option<f64> {
        let n = self.done_by_op[op as usize];
        (n > 0).then(|| self.cpu_ns_by_op[op as usize] as f64 / n as f64)
    }

    /// Mean instructions per finished request of `op`:
    /// [`Host::cpu_ns_per_io`] x `ghz` / `cpi`, the busy-wait part of it
    /// at `ghz` / `spin_cpi` when that is given, the cold path's refetch
    /// stalls (`host.cold_lines`) not at all. `None` without
    /// `host.ghz` and `host.cpi`, or before any request of `op` finished.
    pub fn instructions_per_io(&self, op: Op) -> Option<f64> {
        let ipns = self.cfg.instructions_per_ns()?;
        // the cold path's refetches stall the core: time, no instructions
        let cpu = self.cpu_ns_per_io(op)?
            - self.cold_ns_by_op[op as usize] as f64 / self.done_by_op[op as usize] as f64;
        Some(match (self.cfg.spin_cpi, self.cfg.ghz) {
            (Some(sc), Some(g)) => {
                let spin =
                    self.spin_ns_by_op[op as usize] as f64 / self.done_by_op[op as usize] as f64;
                (cpu - spin) * ipns + spin * g / sc
            }
            _ => cpu * ipns,
        })
    }
}
