//! Per-request latency breakdown by component: the rows of the Moneta
//! IO-stack cost table (docs/spec/pcie-arrays.md), plus the peer devices' stages.

use serde::Serialize;

/// A place a request spends time. Host rows first, then device rows, in the
/// order of the Moneta breakdown table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Component {
    /// System call entry and exit (user/kernel crossings).
    Syscall = 0,
    /// File-system code in the path (XFS etc.).
    FileSystem,
    /// Linux block queue and IO scheduler, including the hand-off to a
    /// scheduler thread where there is one.
    BlockLayer,
    /// Driver: take the request off the queue, assign a tag.
    Driver,
    /// Waiting for the driver lock (`host.driver_lock`).
    LockWait,
    /// Waiting for the issuing thread: it is busy with another of its own
    /// requests (an asynchronous engine's one thread submits and reaps all
    /// of its requests in turn).
    ThreadWait,
    /// Waiting for the single-threaded IO scheduler (`scheduler =
    /// "single-queue"`), busy with another request.
    SchedulerWait,
    /// Waiting for the driver's worker thread (`host.driver_worker_share`),
    /// busy with another request.
    WorkerWait,
    /// Waiting for a free CPU core.
    CoreWait,
    /// Copies between user and kernel (DMA) buffers.
    Copy,
    /// Programmed-IO command words to the device.
    Pio,
    /// Link transfer and DMA (PCIe, SATA, DDR bus).
    Link,
    /// Waiting in the device's command queue / for a device buffer.
    DeviceQueue,
    /// Device-internal interconnect (ring, channel bus).
    Interconnect,
    /// Controller: queueing at and pipeline of a memory/flash controller.
    Controller,
    /// The media access itself (array read/write, flash op, disk mechanics).
    Media,
    /// Garbage collection or other background work in the way.
    Background,
    /// A device-side cache hit path.
    Cache,
    /// Interrupt handler.
    Interrupt,
    /// Sleeping thread woken up (context switch), or spinning.
    Wakeup,
}

/// Number of components.
pub const NCOMP: usize = Component::Wakeup as usize + 1;

/// All components in table order.
pub const COMPONENTS: [Component; NCOMP] = [
    Component::Syscall,
    Component::FileSystem,
    Component::BlockLayer,
    Component::Driver,
    Component::LockWait,
    Component::ThreadWait,
    Component::SchedulerWait,
    Component::WorkerWait,
    Component::CoreWait,
    Component::Copy,
    Component::Pio,
    Component::Link,
    Component::DeviceQueue,
    Component::Interconnect,
    Component::Controller,
    Component::Media,
    Component::Background,
    Component::Cache,
    Component::Interrupt,
    Component::Wakeup,
];

impl Component {
    /// snake_case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Component::Syscall => "syscall",
            Component::FileSystem => "file_system",
            Component::BlockLayer => "block_layer",
            Component::Driver => "driver",
            Component::LockWait => "lock_wait",
            Component::ThreadWait => "thread_wait",
            Component::SchedulerWait => "scheduler_wait",
            Component::WorkerWait => "worker_wait",
            Component::CoreWait => "core_wait",
            Component::Copy => "copy",
            Component::Pio => "pio",
            Component::Link => "link",
            Component::DeviceQueue => "device_queue",
            Component::Interconnect => "interconnect",
            Component::Controller => "controller",
            Component::Media => "media",
            Component::Background => "background",
            Component::Cache => "cache",
            Component::Interrupt => "interrupt",
            Component::Wakeup => "wakeup",
        }
    }
    /// True for host-software rows (time spent on a CPU core or waiting for
    /// one), false for hardware rows.
    pub fn is_software(self) -> bool {
        matches!(
            self,
            Component::Syscall
                | Component::FileSystem
                | Component::BlockLayer
                | Component::Driver
                | Component::LockWait
                | Component::ThreadWait
                | Component::SchedulerWait
                | Component::WorkerWait
                | Component::CoreWait
                | Component::Copy
                | Component::Pio
                | Component::Interrupt
                | Component::Wakeup
        )
    }
}

/// Nanoseconds attributed to each component for one request. The parts add
/// up to the request's latency: every nanosecond is attributed to exactly
/// one component on the request's critical path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Breakdown(pub [u64; NCOMP]);

impl Breakdown {
    /// Add `ns` to component `c`.
    #[inline]
    pub fn add(&mut self, c: Component, ns: u64) {
        self.0[c as usize] += ns;
    }
    /// Time attributed to `c`.
    #[inline]
    pub fn get(&self, c: Component) -> u64 {
        self.0[c as usize]
    }
    /// Sum of all components.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// Attribute to the device queue whatever part of a request's
    /// `latency` no component accounts for (time spent waiting off the
    /// critical path), so the parts add up to it; debug builds check that
    /// nothing was counted twice.
    pub fn queue_rest(&mut self, latency: u64) {
        let acc = self.total();
        if latency > acc {
            self.add(Component::DeviceQueue, latency - acc);
        }
        debug_assert!(
            self.total() == latency,
            "breakdown {} != latency {latency}: {self:?}",
            self.total()
        );
    }

    /// Add `parts` (the few components a device's path sets) and charge
    /// whatever of `latency` they do not account for to the device queue,
    /// as [`Breakdown::queue_rest`] does after adding them one by one, but
    /// from the parts' own sum: on a breakdown that was empty the result is
    /// the same, without a pass over every component.
    #[inline]
    pub fn add_parts_rest(&mut self, parts: &[(Component, u64)], latency: u64) {
        let mut acc = 0;
        for &(c, ns) in parts {
            self.add(c, ns);
            acc += ns;
        }
        debug_assert!(acc <= latency, "parts {parts:?} exceed latency {latency}");
        if latency > acc {
            self.add(Component::DeviceQueue, latency - acc);
        }
    }

    /// Add every component of `other`.
    #[inline]
    pub fn merge(&mut self, other: &Breakdown) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += *b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Cx;

    /// A completion built from its parts equals one built component by
    /// component and completed with `queue_rest`, whatever the parts (a
    /// component named twice, parts that fill the whole latency).
    #[test]
    fn parts_with_the_rest_queued_equal_adds_then_queue_rest() {
        let cases: [(&[(Component, u64)], u64); 4] = [
            (&[(Component::Media, 300), (Component::Link, 50)], 1_000),
            (
                &[
                    (Component::DeviceQueue, 7),
                    (Component::Media, 3),
                    (Component::DeviceQueue, 5),
                ],
                15,
            ),
            (&[(Component::Controller, 40), (Component::Cache, 60)], 100),
            (&[], 9),
        ];
        for (parts, latency) in cases {
            let mut want = Breakdown::default();
            for &(c, ns) in parts {
                want.add(c, ns);
            }
            want.queue_rest(latency);
            let mut cx = Cx::default();
            cx.done_parts(4, 10, 10 + latency, parts);
            assert_eq!(cx.completions.len(), 1);
            let got = &cx.completions[0];
            assert_eq!((got.id, got.at), (4, 10 + latency));
            assert_eq!(got.breakdown, want, "{parts:?} in {latency} ns");
            assert_eq!(got.breakdown.total(), latency);
        }
    }
}
