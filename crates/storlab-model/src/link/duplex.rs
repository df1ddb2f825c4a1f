//! A point-to-point link between host and device: PCIe (an NVM array's
//! DMA lanes, a PCIe SSD's link, a RAID controller's host link) or SATA /
//! SAS (a SATA SSD's or a disk's interface).
//!
//! Each direction has its rate and its fixed cost per request
//! (`latency_ns`: command, DMA set-up and status). A full-duplex link (PCIe:
//! "2 GB/s in each direction, both at once", docs/spec/pcie-arrays.md) has
//! one FCFS [`Timeline`] per direction; a half-duplex one (SATA: one
//! direction at a time, docs/spec/peer-devices.md) has one timeline that
//! both directions share. A transfer of `n` bytes occupies its timeline
//! for `xfer_ns(n, rate)` (rounded up; [`RateNs`] remembers the last
//! length asked) from the first moment both it and the timeline are free.
//!
//! Where the fixed cost falls is the same on every link: data going to the
//! device crosses after it (the DMA is set up first: [`Link::move_to_device`]
//! starts the transfer `latency_ns` after it is asked for), data going to
//! the host before it (the completion's status follows the last byte: the
//! device adds [`Link::latency_ns`] once the request's last transfer is in,
//! a read being several transfers on some devices).

use crate::device::Nanos;
use crate::units::{busy_fraction, RateNs, Rw, Timeline};

/// The way the data crosses a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Device to host (a read's data).
    ToHost = 0,
    /// Host to device (a write's data).
    ToDevice = 1,
}

/// A link: per-direction rate and fixed cost, full or half duplex.
#[derive(Clone, Debug)]
pub struct Link {
    /// Transfer time per direction (indexed by [`Dir`]).
    rate: [RateNs; 2],
    /// Fixed cost per request per direction (indexed by [`Dir`]).
    latency: [u64; 2],
    /// 1 for full duplex (a direction uses its own timeline), 0 for half
    /// (both use timeline 0): a direction's timeline is `dir & duplex`.
    duplex: usize,
    tl: [Timeline; 2],
}

impl Link {
    /// A link moving `bytes_per_s` in each direction, with a fixed cost of
    /// `latency_ns` per request in each, both directions at once
    /// (`duplex`) or one at a time.
    pub fn new(bytes_per_s: Rw, latency_ns: Rw, duplex: bool) -> Self {
        Link {
            rate: [
                RateNs::new(bytes_per_s.read),
                RateNs::new(bytes_per_s.write),
            ],
            latency: [latency_ns.read, latency_ns.write],
            duplex: duplex as usize,
            tl: [Timeline::default(); 2],
        }
    }

    /// Time `bytes` take to cross in `dir`, rounded up.
    #[inline]
    pub fn xfer_ns(&mut self, dir: Dir, bytes: u64) -> u64 {
        self.rate[dir as usize].ns(bytes)
    }

    /// The fixed cost per request in `dir`.
    #[inline]
    pub fn latency_ns(&self, dir: Dir) -> u64 {
        self.latency[dir as usize]
    }

    /// Move `bytes` in `dir` from no earlier than `at`, in the order asked
    /// (FCFS): `(start, end)`, its first and last byte's time. No fixed
    /// cost.
    #[inline]
    pub fn reserve(&mut self, dir: Dir, at: Nanos, bytes: u64) -> (Nanos, Nanos) {
        let dur = self.xfer_ns(dir, bytes);
        let start = self.tl[dir as usize & self.duplex].reserve(at, dur);
        (start, start + dur)
    }

    /// Move `bytes` to the host from no earlier than `at`: `(start, end)`.
    /// The fixed cost ([`Link::latency_ns`] of [`Dir::ToHost`]) is the
    /// caller's to add after the request's last transfer.
    #[inline]
    pub fn move_to_host(&mut self, at: Nanos, bytes: u64) -> (Nanos, Nanos) {
        self.reserve(Dir::ToHost, at, bytes)
    }

    /// Move `bytes` to the device, asked for at `at`: the fixed cost first,
    /// then the transfer from no earlier than `at + latency_ns`:
    /// `(start, end)`.
    #[inline]
    pub fn move_to_device(&mut self, at: Nanos, bytes: u64) -> (Nanos, Nanos) {
        let at = at + self.latency[Dir::ToDevice as usize];
        self.reserve(Dir::ToDevice, at, bytes)
    }

    /// Time `dir`'s timeline has been busy. A half-duplex link's one
    /// timeline is the device-to-host one: its `ToDevice` busy time stays
    /// 0 (the reports' `link.host_to_device`), its `ToHost` time is both
    /// directions'.
    #[inline]
    pub fn busy_ns(&self, dir: Dir) -> u64 {
        self.tl[dir as usize].busy_ns
    }

    /// Fraction of the first `now` ns `dir`'s timeline was busy (see
    /// [`Link::busy_ns`]).
    #[inline]
    pub fn utilisation(&self, dir: Dir, now: Nanos) -> f64 {
        busy_fraction(self.busy_ns(dir), now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::xfer_ns;

    const R: Rw = Rw {
        read: 2_000_000_000,
        write: 1_000_000_000,
    };
    const L: Rw = Rw {
        read: 700,
        write: 300,
    };

    #[test]
    fn full_duplex_directions_overlap() {
        let mut l = Link::new(R, L, true);
        assert_eq!(l.move_to_host(0, 4096), (0, xfer_ns(4096, R.read)));
        // the other direction is free: only the set-up delays it
        let w = xfer_ns(4096, R.write);
        assert_eq!(l.move_to_device(0, 4096), (300, 300 + w));
        // the same direction queues
        let r = xfer_ns(4096, R.read);
        assert_eq!(l.move_to_host(0, 4096), (r, 2 * r));
        assert_eq!(l.busy_ns(Dir::ToHost), 2 * r);
        assert_eq!(l.busy_ns(Dir::ToDevice), w);
        assert_eq!(l.latency_ns(Dir::ToHost), 700);
    }

    #[test]
    fn half_duplex_directions_share_one_timeline() {
        let mut l = Link::new(R, Rw::default(), false);
        let r = xfer_ns(4096, R.read);
        let w = xfer_ns(512, R.write);
        assert_eq!(l.move_to_host(10, 4096), (10, 10 + r));
        assert_eq!(l.move_to_device(10, 512), (10 + r, 10 + r + w));
        // everything is on the device-to-host timeline
        assert_eq!(l.busy_ns(Dir::ToHost), r + w);
        assert_eq!(l.busy_ns(Dir::ToDevice), 0);
        assert_eq!(l.utilisation(Dir::ToHost, 2 * (r + w)), 0.5);
    }

    #[test]
    fn remembered_lengths_give_xfer_ns() {
        let mut l = Link::new(R, L, true);
        for len in [0, 4096, 4096, 512, 0, 1 << 40, 4096] {
            assert_eq!(l.xfer_ns(Dir::ToHost, len), xfer_ns(len, R.read));
            assert_eq!(l.xfer_ns(Dir::ToDevice, len), xfer_ns(len, R.write));
        }
    }
}
