#![allow(dead_code)]
//! Driving a device by hand in tests: submit requests at their times, run
//! its wake-ups in time order, and check what a device must never do.

use storlab_model::{Completion, Cx, DevRequest, Device, Op};

/// Submit requests at their times and run the device to quiescence,
/// checking what a device must never do (`storlab_model::device::drive`).
#[allow(unused_imports)] // (not every test file that includes this module drives)
pub use storlab_model::device::drive;

/// A small mixed workload: reads and writes of several sizes spread over
/// the device (its last block included), a trim and flushes.
// Not every test that includes this module uses it (extreme_values.rs
// and the preset fuzz target do).
#[allow(dead_code)]
pub fn workload(capacity: u64) -> Vec<(u64, DevRequest)> {
    let last = capacity.saturating_sub(4096) / 4096 * 4096;
    let mut v = Vec::new();
    let mut id = 0;
    let mut push = |t: u64, op, offset: u64, len| {
        v.push((
            t,
            DevRequest {
                id,
                op,
                offset: offset.min(last),
                len,
                fua: id % 5 == 4,
                placement: None,
            },
        ));
        id += 1;
    };
    for i in 0..24u64 {
        let off = (i * 7_919 * 4096) % capacity.max(4096) / 4096 * 4096;
        let len = [4096, 512 * 1024, 8192][(i % 3) as usize].min(capacity - off.min(last));
        let op = if i % 2 == 0 { Op::Read } else { Op::Write };
        push(i * 1_000, op, off, len.max(512));
    }
    push(30_000, Op::Write, last, 4096);
    push(30_000, Op::Read, last, 4096);
    push(31_000, Op::Trim, 0, 65_536.min(capacity));
    push(32_000, Op::Flush, 0, 0);
    push(33_000, Op::Read, 0, 4096);
    v
}

/// A minimal event loop over one device: events in time order, ties in
/// push order; every wake-up and completion checked on the way in (never
/// in the past, tokens below 2^62). Test files add the driving methods
/// they need in their own `impl Drv` blocks.
#[allow(dead_code)]
pub struct Drv {
    /// The device driven.
    pub dev: Box<dyn Device>,
    /// Pending wake-ups: (time, push order, token).
    pub heap: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64, u64)>>,
    /// Wake-ups pushed so far.
    pub seq: u64,
    /// The time of the last call into the device.
    pub now: u64,
    /// What the device asked for in its last call.
    pub cx: Cx,
    /// Completions not yet taken.
    pub done: Vec<Completion>,
}

#[allow(dead_code)]
impl Drv {
    /// A driver for `dev` at time 0.
    pub fn new(dev: Box<dyn Device>) -> Self {
        Self {
            dev,
            heap: std::collections::BinaryHeap::new(),
            seq: 0,
            now: 0,
            cx: Cx::default(),
            done: Vec::new(),
        }
    }
    /// Queue the device's wake-ups and keep its completions, checking both.
    pub fn drain(&mut self) {
        for (t, tok) in self.cx.wakeups.drain(..) {
            assert!(t >= self.now, "wake-up in the past");
            assert!(tok < 1 << 62, "token above 2^62");
            self.seq += 1;
            self.heap.push(std::cmp::Reverse((t, self.seq, tok)));
        }
        for c in self.cx.completions.drain(..) {
            assert!(
                c.at >= self.now,
                "completion in the past: {} < {}",
                c.at,
                self.now
            );
            self.done.push(c);
        }
    }
    /// Run every wake-up due at or before `t`.
    pub fn run_until(&mut self, t: u64) {
        while let Some(&std::cmp::Reverse((at, _, tok))) = self.heap.peek() {
            if at > t {
                break;
            }
            self.heap.pop();
            self.now = at;
            self.dev.on_event(at, tok, &mut self.cx);
            self.drain();
        }
    }
}

/// Build preset `preset` with overrides `set` (`key=value`).
pub fn build(preset: &str, set: &[&str]) -> Box<dyn Device> {
    let ov: Vec<String> = set.iter().map(|x| x.to_string()).collect();
    let (_, cfg) = storlab_model::SystemConfig::load(
        &storlab_model::config::PresetStore::default(),
        preset,
        &ov,
    )
    .expect("preset loads");
    cfg.build_device().expect("device builds")
}

/// A device report's counter `name`, 0 when absent.
pub fn counter(r: &storlab_model::DeviceReport, name: &str) -> f64 {
    r.counters
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| *v)
        .unwrap_or(0.0)
}
