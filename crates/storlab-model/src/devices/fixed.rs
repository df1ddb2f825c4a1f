//! A device with a fixed service latency: the `null` preset (zero latency)
//! measures the emulator's transport floor, a fixed latency checks that the
//! emulator honours a known deadline, and with a bandwidth it is main
//! memory (`dram-mem`: Table 1's latency and bandwidth of the flash
//! placement study, docs/spec/media.md).
//!
//! Without a bandwidth, requests are independent (unlimited parallelism).
//! With one, every request's bytes also cross one shared channel in
//! arrival order (a [`MemoryBus`], FCFS): a request ends its latency after
//! its transfer ends, so a lone request takes `latency + len / bandwidth`
//! and many together are bounded by the bandwidth.

use crate::breakdown::Component;
use crate::device::{Cx, DevRequest, Device, Nanos};
use crate::link::ddr::MemoryBus;
use crate::report::{DeviceReport, Utilisation};

/// Every request completes `latency_ns` after it arrives (after its
/// transfer, with a bandwidth).
#[derive(Clone, Debug)]
pub struct FixedLatency {
    latency_ns: Nanos,
    capacity: u64,
    /// The shared channel (at the bandwidth); `None`: unlimited.
    channel: Option<MemoryBus>,
}

impl FixedLatency {
    /// A device of `capacity` bytes whose requests each take `latency_ns`.
    pub fn new(latency_ns: Nanos, capacity: u64) -> Self {
        Self {
            latency_ns,
            capacity,
            channel: None,
        }
    }

    /// The same device whose requests also share one channel of
    /// `bytes_per_s` (at least 1).
    pub fn with_bandwidth(mut self, bytes_per_s: u64) -> Self {
        self.channel = Some(MemoryBus::new(bytes_per_s.max(1)));
        self
    }
}

impl Device for FixedLatency {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let Some(channel) = &mut self.channel else {
            cx.done_mut(req.id, now + self.latency_ns)
                .add(Component::Media, self.latency_ns);
            return;
        };
        let xfer = channel.xfer_ns(req.len);
        let (start, end) = channel.occupy(now, xfer);
        let bd = cx.done_mut(req.id, end.saturating_add(self.latency_ns));
        bd.add(Component::DeviceQueue, start - now);
        bd.add(Component::Link, xfer);
        bd.add(Component::Media, self.latency_ns);
    }
    fn on_event(&mut self, _now: Nanos, _token: u64, _cx: &mut Cx) {}
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn report(&self, now: Nanos) -> DeviceReport {
        let Some(channel) = &self.channel else {
            return DeviceReport::default();
        };
        DeviceReport {
            utilisation: vec![Utilisation {
                resource: "channel".into(),
                busy: channel.utilisation(now),
            }],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Op;

    fn req(id: u64, len: u64) -> DevRequest {
        DevRequest::new(id, Op::Read, 0, len)
    }

    #[test]
    fn without_a_bandwidth_requests_are_independent() {
        let mut d = FixedLatency::new(51, 1 << 30);
        let mut cx = Cx::default();
        for i in 0..100 {
            d.submit(0, req(i, 1 << 20), &mut cx);
        }
        assert!(cx.completions.iter().all(|c| c.at == 51));
    }

    #[test]
    fn a_bandwidth_adds_the_transfer_and_bounds_the_rate() {
        let mut d = FixedLatency::new(51, 1 << 30).with_bandwidth(13_000_000_000);
        let mut cx = Cx::default();
        d.submit(0, req(0, 64), &mut cx);
        assert_eq!(cx.completions[0].at, 51 + 5, "64 B at 13 GB/s is 4.9 ns");
        assert_eq!(cx.completions[0].breakdown.total(), 56);
        // 1000 requests of 13 KB at once: 1 ms of transfers end to end
        let mut d = FixedLatency::new(51, 1 << 30).with_bandwidth(13_000_000_000);
        let mut cx = Cx::default();
        for i in 0..1000 {
            d.submit(0, req(i, 13_000), &mut cx);
        }
        let last = cx.completions.iter().map(|c| c.at).max().unwrap();
        assert_eq!(last, 1_000_000 + 51);
        assert!(cx.completions.iter().all(|c| c.breakdown.total() == c.at));
    }

    #[test]
    fn a_bandwidth_is_validated_and_only_for_fixed_devices() {
        use crate::config::PresetStore;
        use crate::system::SystemConfig;
        let load = |dev: &str, set: &str| {
            SystemConfig::load(&PresetStore::default(), dev, &[set.to_string()])
                .and_then(|(_, c)| c.build_device().map(|_| ()))
        };
        let e = load("dram-mem", "device.bandwidth_bytes_per_s=0").unwrap_err();
        assert!(
            e.to_string().contains("device.bandwidth_bytes_per_s"),
            "{e}"
        );
        let e = load("ddr-dram", "device.bandwidth_bytes_per_s=1000").unwrap_err();
        assert!(
            e.to_string().contains("device.bandwidth_bytes_per_s"),
            "{e}"
        );
        assert!(load("null", "device.bandwidth_bytes_per_s=1000").is_ok());
    }
}
