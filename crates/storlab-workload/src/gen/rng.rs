//! Seeding and the fast random source of the generator.

use rand::RngCore;
use rand_pcg::Pcg64Mcg;

/// One step of SplitMix64: a strong 64-bit finaliser used to derive seeds
/// and to scatter ranks over the block space.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Derive a child seed from a parent seed and a label.
#[inline]
pub(crate) fn derive(parent: u64, label: u64) -> u64 {
    mix64(parent ^ mix64(label.wrapping_add(0x632b_e59b_d9b4_e019)))
}

/// A PCG (64-bit output, 128-bit state) stream with the helpers the
/// generator needs. About 1 ns per draw.
#[derive(Clone, Debug)]
pub(crate) struct Rng(Pcg64Mcg);

impl Rng {
    /// A stream seeded from a 64-bit seed.
    pub(crate) fn new(seed: u64) -> Rng {
        let hi = u128::from(mix64(seed));
        let lo = u128::from(mix64(seed ^ 0xd1b5_4a32_d192_ed03));
        Rng(Pcg64Mcg::new((hi << 64) | lo))
    }

    /// A uniform 64-bit value.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`) by the multiply-high method; the bias is
    /// below n / 2^64, far under anything a simulation can observe.
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 bits of precision.
    #[inline]
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}
