//! A device with a fixed service latency and unlimited parallelism: the
//! `null` preset (zero latency) measures the emulator's transport floor, and
//! a fixed latency checks that the emulator honours a known deadline.

use crate::breakdown::{Breakdown, Component};
use crate::device::{Cx, DevRequest, Device, Nanos};
use crate::report::DeviceReport;

/// Every request completes `latency_ns` after it arrives, independently.
#[derive(Clone, Debug)]
pub struct FixedLatency {
    latency_ns: Nanos,
    capacity: u64,
}

impl FixedLatency {
    /// A device of `capacity` bytes whose requests each take `latency_ns`.
    pub fn new(latency_ns: Nanos, capacity: u64) -> Self {
        Self {
            latency_ns,
            capacity,
        }
    }
}

impl Device for FixedLatency {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let mut breakdown = Breakdown::default();
        breakdown.add(Component::Media, self.latency_ns);
        cx.done(req.id, now + self.latency_ns, breakdown);
    }
    fn on_event(&mut self, _now: Nanos, _token: u64, _cx: &mut Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, _now: Nanos) -> DeviceReport {
        DeviceReport::default()
    }
}
