//! Start-gap wear levelling (Qureshi et al., MICRO 2009) with a static
//! address randomisation, counting writes per physical line.
//!
//! A region of `n` logical lines lives in `n + 1` physical slots; one slot,
//! the gap, is empty. Every `psi` writes the line next to the gap is copied
//! into it (one extra write) and the gap moves down by one; when it has
//! walked the whole region, the start register advances. The logical line
//! address is first scrambled with an invertible affine map (odd multiplier
//! modulo a power of two, or coprime otherwise), standing in for the static
//! permutation of the paper.

use std::collections::BTreeMap;

use crate::report::Wear;

/// Slots per chunk of write counters (16 KiB of `u32`).
const CHUNK: u64 = 4096;

/// Regions of up to this many chunks (2^32 slots) find a chunk through a
/// flat directory (4 bytes a chunk, at most 4 MiB); larger ones through an
/// ordered map. The map alone made a write-heavy run 8 % slower.
const FLAT_DIRECTORY_CHUNKS: u64 = 1 << 20;

/// Writes per physical slot, in chunks taken on a chunk's first write, so
/// memory follows the lines written rather than the region's size (a
/// petabyte device written in a few places holds a few chunks; a dense
/// array was allocated whole on the first write). Written by hand: a
/// sparse array is a few lines over `Vec` and `BTreeMap` (ordered, so
/// reports never depend on hash order).
#[derive(Clone, Debug)]
struct SparseCounts {
    index: ChunkIndex,
    chunks: Vec<Box<[u32]>>,
}

/// Chunk number -> its place in `chunks`.
#[derive(Clone, Debug)]
enum ChunkIndex {
    /// `u32::MAX`: not taken.
    Flat(Vec<u32>),
    Map(BTreeMap<u64, u32>),
}

impl SparseCounts {
    fn new(slots: u64) -> Self {
        let n = slots.div_ceil(CHUNK);
        let index = if n <= FLAT_DIRECTORY_CHUNKS {
            ChunkIndex::Flat(Vec::new())
        } else {
            ChunkIndex::Map(BTreeMap::new())
        };
        Self {
            index,
            chunks: Vec::new(),
        }
    }

    #[inline]
    fn add(&mut self, slot: u64) {
        let c = slot / CHUNK;
        let next = self.chunks.len() as u32;
        let i = match &mut self.index {
            ChunkIndex::Flat(dir) => {
                if dir.len() as u64 <= c {
                    dir.resize(c as usize + 1, u32::MAX);
                }
                let e = &mut dir[c as usize];
                if *e == u32::MAX {
                    *e = next;
                }
                *e
            }
            ChunkIndex::Map(m) => *m.entry(c).or_insert(next),
        };
        if i == next {
            self.chunks.push(vec![0; CHUNK as usize].into_boxed_slice());
        }
        let v = &mut self.chunks[i as usize][(slot % CHUNK) as usize];
        *v = v.saturating_add(1);
    }

    /// Writes to one slot.
    fn get(&self, slot: u64) -> u32 {
        let c = slot / CHUNK;
        let i = match &self.index {
            ChunkIndex::Flat(dir) => dir.get(c as usize).copied().filter(|&i| i != u32::MAX),
            ChunkIndex::Map(m) => m.get(&c).copied(),
        };
        i.map_or(0, |i| self.chunks[i as usize][(slot % CHUNK) as usize])
    }

    /// Every counter of every chunk taken (untouched slots are zero).
    fn values(&self) -> impl Iterator<Item = u32> + '_ {
        self.chunks.iter().flat_map(|c| c.iter().copied())
    }
}

/// Wear state of one region (one memory controller's lines).
#[derive(Clone, Debug)]
pub struct StartGap {
    lines: u64,
    psi: u64,
    start: u64,
    gap: u64,
    since_move: u64,
    mul: u64,
    add: u64,
    /// Writes per physical slot.
    counts: SparseCounts,
    /// Extra writes made by gap movement.
    pub gap_writes: u64,
    /// Writes requested by the host.
    pub writes: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl StartGap {
    /// A region of `lines` lines moving the gap every `psi` writes (0: no
    /// levelling, identity mapping); `seed` picks the randomisation.
    pub fn new(lines: u64, psi: u64, seed: u64) -> Self {
        let lines = lines.max(1);
        let mut mul = (seed | 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) % lines.max(2);
        while mul == 0 || gcd(mul, lines) != 1 {
            mul += 1;
        }
        let add = seed.wrapping_mul(0xD1B5_4A32_D192_ED03) % lines;
        Self {
            lines,
            psi,
            start: 0,
            gap: lines,
            since_move: 0,
            mul,
            add,
            counts: SparseCounts::new(lines + 1),
            gap_writes: 0,
            writes: 0,
        }
    }

    /// Physical slot of a logical line.
    #[inline]
    pub fn map(&self, la: u64) -> u64 {
        let la = la % self.lines;
        if self.psi == 0 {
            return la;
        }
        // 64-bit arithmetic when it cannot overflow (fewer than 2^32 lines):
        // a 128-bit remainder is a slow library call on every write
        let r = match la
            .checked_mul(self.mul)
            .and_then(|p| p.checked_add(self.add))
        {
            Some(p) => p % self.lines,
            None => {
                ((la as u128 * self.mul as u128 + self.add as u128) % self.lines as u128) as u64
            }
        };
        let pa = (r + self.start) % self.lines;
        if pa >= self.gap {
            pa + 1
        } else {
            pa
        }
    }

    /// Record a write to logical line `la`.
    #[inline]
    pub fn write(&mut self, la: u64) {
        let pa = self.map(la);
        self.counts.add(pa);
        self.writes += 1;
        if self.psi == 0 {
            return;
        }
        self.since_move += 1;
        if self.since_move >= self.psi {
            self.since_move = 0;
            if self.gap == 0 {
                // the gap wraps to the top: slot n receives slot 0's line
                self.counts.add(self.lines);
                self.gap = self.lines;
                self.start = (self.start + 1) % self.lines;
            } else {
                self.counts.add(self.gap);
                self.gap -= 1;
            }
            self.gap_writes += 1;
        }
    }

    /// Writes to physical slot `slot` so far.
    pub fn count(&self, slot: u64) -> u32 {
        self.counts.get(slot)
    }

    /// Summary over several regions.
    pub fn summarize<'a>(regions: impl IntoIterator<Item = &'a StartGap>, unit: &str) -> Wear {
        let mut units = 0u64;
        let mut max = 0u64;
        let mut total = 0u64;
        for r in regions {
            units += r.lines + 1;
            for c in r.counts.values() {
                max = max.max(c as u64);
                total += c as u64;
            }
        }
        Wear {
            unit: unit.to_string(),
            units,
            max,
            mean: if units > 0 {
                total as f64 / units as f64
            } else {
                0.0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_is_a_bijection_into_slots_minus_gap() {
        let mut sg = StartGap::new(97, 3, 42);
        for step in 0..500u64 {
            let mut seen = [false; 98];
            for la in 0..97 {
                let pa = sg.map(la) as usize;
                assert!(!seen[pa], "slot {pa} mapped twice at step {step}");
                assert_ne!(pa as u64, sg.gap, "a line mapped onto the gap");
                seen[pa] = true;
            }
            sg.write(step % 97);
        }
    }

    #[test]
    fn a_huge_region_holds_only_the_chunks_written() {
        let lines = 1u64 << 50;
        let mut sg = StartGap::new(lines, 0, 7);
        for la in [0, 1, lines - 1, 1 << 40, 1 << 40] {
            sg.write(la);
        }
        assert_eq!(sg.count(1 << 40), 2);
        assert_eq!(sg.count(lines - 1), 1);
        assert_eq!(sg.count(12345), 0);
        assert_eq!(sg.counts.chunks.len(), 3, "lines 0 and 1 share a chunk");
        assert!(matches!(sg.counts.index, ChunkIndex::Map(_)));
        // a region small enough for the flat directory counts alike
        let mut small = StartGap::new(1 << 20, 0, 7);
        for la in [0, 1, (1 << 20) - 1, 1 << 19, 1 << 19] {
            small.write(la);
        }
        assert!(matches!(small.counts.index, ChunkIndex::Flat(_)));
        assert_eq!(
            (
                small.count(1 << 19),
                small.count((1 << 20) - 1),
                small.count(7)
            ),
            (2, 1, 0)
        );
        assert_eq!(small.counts.chunks.len(), 3);
        let w = StartGap::summarize([&sg], "line");
        assert_eq!((w.units, w.max), (lines + 1, 2));
        assert_eq!(sg.counts.values().map(u64::from).sum::<u64>(), 5);
    }

    #[test]
    fn levelling_spreads_a_hot_line() {
        let mut flat = StartGap::new(64, 0, 1);
        let mut sg = StartGap::new(64, 4, 1);
        for _ in 0..100_000 {
            flat.write(5);
            sg.write(5);
        }
        let w0 = StartGap::summarize([&flat], "line");
        let w1 = StartGap::summarize([&sg], "line");
        assert_eq!(w0.max, 100_000);
        assert!(
            w1.max < w0.max / 10,
            "start-gap max {} not far below {}",
            w1.max,
            w0.max
        );
        // gap movement costs 1/psi extra writes
        assert_eq!(sg.gap_writes, 100_000 / 4);
    }
}
