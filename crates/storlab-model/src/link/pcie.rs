//! PCIe's rate: a link of `lanes` lanes moves `lanes x lane rate` in each
//! direction, both directions at once (docs/spec/pcie-arrays.md: PCIe 1.1
//! x8, "2 GB/s in each direction"; `moneta-spin-4x` the same array on 4
//! lanes). The PCIe array builds its [`Link`] here; the PCIe SSDs and the
//! RAID controller give their links' rate whole (`link_bytes_per_s`).

use crate::units::Rw;

use super::duplex::Link;

/// The rate of `lanes` lanes of `lane_bytes_per_s` each (past `u64::MAX`
/// bytes per second the link is no bottleneck at all: saturating).
#[inline]
pub fn lanes_bytes_per_s(lane_bytes_per_s: u64, lanes: u32) -> u64 {
    lane_bytes_per_s.saturating_mul(lanes as u64)
}

/// A full-duplex link of `lanes` lanes of `lane_bytes_per_s` each, with
/// the DMA's fixed cost `dma_latency_ns` per transfer and direction.
pub fn lanes(lane_bytes_per_s: u64, lanes: u32, dma_latency_ns: Rw) -> Link {
    let r = lanes_bytes_per_s(lane_bytes_per_s, lanes);
    Link::new(Rw { read: r, write: r }, dma_latency_ns, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::duplex::Dir;

    #[test]
    fn eight_lanes_of_250_mb_s_move_2_gb_s_each_way() {
        assert_eq!(lanes_bytes_per_s(250_000_000, 8), 2_000_000_000);
        assert_eq!(lanes_bytes_per_s(u64::MAX / 2, 4), u64::MAX);
        let mut l = lanes(250_000_000, 8, Rw::default());
        assert_eq!(l.xfer_ns(Dir::ToHost, 4096), 2048);
        assert_eq!(l.move_to_device(0, 4096), (0, 2048));
        assert_eq!(l.move_to_host(0, 4096), (0, 2048));
    }
}
