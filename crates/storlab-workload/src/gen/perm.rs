//! A random permutation of `0..n` in constant memory: fio's random map
//! (every block once per pass) without a bitmap.
//!
//! A keyed bijection `f` on `0..2^k` (with `2^k` the smallest power of two
//! not below `n`) is applied to a counter `0, 1, 2, ...`; outputs `>= n` are
//! skipped. Because `f` is a bijection, every value below `n` comes out
//! exactly once before the counter passes `2^k`, and since `2^k < 2n` at most
//! two evaluations per output are needed on average. `f` alternates
//! key addition, multiplication by an odd constant and xor-shift-right, each
//! a bijection modulo `2^k`, so low and high bits are mixed both ways (an
//! LCG alone would make the lowest bits of the block number, which pick
//! channels and stripes in a device model, strictly periodic).

use super::rng::mix64;

/// Odd multipliers (from SplitMix64 and the golden ratio).
const MULS: [u64; 3] = [
    0x9e37_79b9_7f4a_7c15,
    0xbf58_476d_1ce4_e5b9,
    0x94d0_49bb_1331_11eb,
];

#[derive(Clone, Debug)]
pub(crate) struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    keys: [u64; 3],
    counter: u64,
    emitted: u64,
}

impl Permutation {
    /// A permutation of `0..n` (`n >= 1`) keyed by `key`.
    pub(crate) fn new(n: u64, key: u64) -> Permutation {
        let n = n.max(1);
        let bits = 64 - (n - 1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut p = Permutation {
            n,
            mask,
            shift: (bits / 2).max(1),
            keys: [0; 3],
            counter: 0,
            emitted: 0,
        };
        p.rekey(key);
        p
    }

    /// Start a new pass with a new order.
    pub(crate) fn rekey(&mut self, key: u64) {
        for (i, k) in self.keys.iter_mut().enumerate() {
            *k = mix64(key.wrapping_add(i as u64)) & self.mask;
        }
        self.counter = 0;
        self.emitted = 0;
    }

    #[inline]
    fn permute(&self, x: u64) -> u64 {
        let m = self.mask;
        let mut x = x;
        for (k, mul) in self.keys.iter().zip(MULS) {
            x = x.wrapping_add(*k) & m;
            x = x.wrapping_mul(mul) & m;
            x ^= x >> self.shift;
        }
        x
    }

    /// The next value of the current pass, or `None` once all `n` values
    /// have been produced (then call [`Permutation::rekey`]).
    #[inline]
    pub(crate) fn next(&mut self) -> Option<u64> {
        if self.emitted >= self.n {
            return None;
        }
        loop {
            let x = self.permute(self.counter);
            self.counter = self.counter.wrapping_add(1);
            if x < self.n {
                self.emitted += 1;
                return Some(x);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_once_per_pass() {
        for n in [1u64, 2, 3, 7, 8, 9, 100, 1023, 1024, 1025, 4097] {
            for key in [0u64, 1, 0xdead_beef] {
                let mut p = Permutation::new(n, key);
                let mut seen = vec![false; n as usize];
                for _ in 0..n {
                    let x = p.next().expect("pass ended early") as usize;
                    assert!(!seen[x], "n={n} key={key}: {x} twice");
                    seen[x] = true;
                }
                assert_eq!(p.next(), None);
            }
        }
    }

    #[test]
    fn passes_differ_and_are_not_the_identity() {
        let n = 1000;
        let mut p = Permutation::new(n, 7);
        let a: Vec<u64> = (0..n).map(|_| p.next().unwrap()).collect();
        p.rekey(8);
        let b: Vec<u64> = (0..n).map(|_| p.next().unwrap()).collect();
        assert_ne!(a, b);
        let fixed = a
            .iter()
            .enumerate()
            .filter(|(i, v)| *i as u64 == **v)
            .count();
        assert!(fixed < 20, "{fixed} fixed points");
        // The lowest bit is not strictly alternating.
        let alternations = a.windows(2).filter(|w| (w[0] ^ w[1]) & 1 == 1).count();
        assert!(alternations < 900, "{alternations}");
    }
}
