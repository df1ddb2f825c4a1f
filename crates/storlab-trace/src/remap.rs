//! Fitting a trace's addresses onto a device of another size.
//!
//! Traces come from devices larger (or smaller) than the one replayed on.
//! The replay engine maps each request with [`remap`] before issuing it.

use serde::{Deserialize, Serialize};

/// How [`remap`] treats a request that does not fit the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemapMode {
    /// Wrap the offset modulo the capacity, aligned down to `align` bytes
    /// (a power of two, e.g. 4096), so that requests keep their alignment
    /// and their relative placement within each capacity-sized window.
    /// Requests longer than the capacity are cut to it.
    Wrap {
        /// Alignment of the result in bytes (power of two).
        align: u64,
    },
    /// Leave requests that fit alone and refuse the others.
    Reject,
}

/// Maps a request `[offset, offset + len)` onto a device of `capacity`
/// bytes. Returns the new `(offset, len)`, always within
/// `[0, capacity)`, or `None` if the request is refused (mode
/// [`RemapMode::Reject`]), the capacity is smaller than the alignment, or
/// the alignment is not a power of two.
///
/// In wrap mode, `offset` becomes `offset % usable` aligned down, where
/// `usable` is the capacity aligned down; a request that would run past the
/// end is moved back so that it ends at `usable` (aligned down again).
pub fn remap(offset: u64, len: u64, capacity: u64, mode: RemapMode) -> Option<(u64, u64)> {
    match mode {
        RemapMode::Reject => {
            let end = offset.checked_add(len)?;
            (end <= capacity && (offset < capacity || len == 0 && offset <= capacity))
                .then_some((offset, len))
        }
        RemapMode::Wrap { align } => {
            if align == 0 || !align.is_power_of_two() {
                return None;
            }
            let mask = !(align - 1);
            let usable = capacity & mask;
            if usable == 0 {
                return None;
            }
            let len = len.min(usable);
            let mut off = (offset % usable) & mask;
            if off + len > usable {
                off = (usable - len) & mask;
            }
            Some((off, len))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W4K: RemapMode = RemapMode::Wrap { align: 4096 };

    #[test]
    fn wrap_examples() {
        let cap = 1 << 20; // 1 MiB
        assert_eq!(remap(8192, 4096, cap, W4K), Some((8192, 4096)));
        assert_eq!(remap(cap + 8192, 4096, cap, W4K), Some((8192, 4096)));
        // Misaligned offsets are aligned down.
        assert_eq!(remap(cap + 8192 + 100, 4096, cap, W4K), Some((8192, 4096)));
        // A request running off the end is moved back to fit.
        assert_eq!(remap(cap - 4096, 8192, cap, W4K), Some((cap - 8192, 8192)));
        // Longer than the device: cut.
        assert_eq!(remap(0, 3 * cap, cap, W4K), Some((0, cap)));
        // Capacity not a multiple of the alignment: the tail is unused.
        assert_eq!(remap(cap + 4096, 4096, cap + 100, W4K), Some((4096, 4096)));
        assert_eq!(remap(0, 4096, 100, W4K), None);
        assert_eq!(remap(0, 4096, cap, RemapMode::Wrap { align: 3 }), None);
    }

    #[test]
    fn reject_examples() {
        assert_eq!(remap(0, 10, 10, RemapMode::Reject), Some((0, 10)));
        assert_eq!(remap(1, 10, 10, RemapMode::Reject), None);
        assert_eq!(remap(u64::MAX, 10, 10, RemapMode::Reject), None);
    }
}
