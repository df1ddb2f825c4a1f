//! Compact mapping: the FTL's tables hold exact entries only where the
//! mapping was written after preconditioning; everywhere else the mapping
//! is a function (a [`Layout`]) of the address, so a preconditioned drive
//! costs memory in proportion to the work done on it, not to its capacity.
//!
//! - A drive filled sequentially (`full`) maps logical unit `l` to the
//!   unit the FTL's striping would have given it: page `l / upp` goes to
//!   the plane `order[(l / upp) % planes]`, where it is that plane's
//!   `(l / upp) / planes`-th page, in the plane's blocks in number order
//!   ([`Striped`], exactly the state sequential writes leave).
//! - A drive aged to steady state by the derivation of
//!   [`super::steady`] holds, in each block, the number of valid units its
//!   valid-count distribution gives it; which logical units they are is a
//!   seeded pseudo-random permutation of the written region laid over the
//!   blocks in order ([`Shuffled`]), as uniform random overwrites leave it.
//!
//! A block stays described by the layout (`virt`) until it is erased; a
//! logical unit until it is written, trimmed or moved, after which the
//! tables hold it exactly.

use std::collections::HashMap;

use super::div::Div32;
use super::types::NONE;

/// Tables larger than this (bytes of dense `u32` entries) are kept sparse
/// (a hash map of the written entries): a dense table's pages are touched
/// by random writes all over it, so its resident size would grow with the
/// drive, not with the work.
pub const DENSE_MAX_BYTES: u64 = 1 << 30;

/// Entries per bit of a [`Table`]'s summary (log2): a run of this many
/// entries that was never set is known absent without reading it.
const SUMMARY_SHIFT: u32 = 10;

/// A mapping table of `u32` entries with three states per entry: absent
/// (the layout decides), explicitly [`NONE`], or a value. Dense tables
/// store absent as 0 (so a new table is zeroed memory that the host backs
/// only where written), [`NONE`] as `u32::MAX` and `v` as `v + 1` (values
/// are below `u32::MAX - 1`: addresses are checked to fit).
///
/// A summary bit per [`SUMMARY_SHIFT`] run of entries says whether any of
/// them was ever set: a lookup where nothing was written (most of a
/// preconditioned drive) reads a few kilobytes that stay in cache instead
/// of a cache miss in the table (or a hash lookup in a sparse one).
pub(crate) struct Table {
    entries: Entries,
    /// One bit per run of entries: some entry of it was set.
    touched: Vec<u64>,
}

/// A sparse table's entries.
type SparseMap = HashMap<u32, u32, foldhash::fast::FixedState>;

enum Entries {
    /// One `u32` per entry.
    Dense(Vec<u32>),
    /// The written entries only (never iterated: lookups only, so the
    /// model stays deterministic).
    Sparse(SparseMap),
}

impl Table {
    /// `n` absent entries, dense or sparse as `dense` says; `None` where a
    /// plain `vec!` would abort the process (the tables scale with the
    /// configured capacity, which comes from the user).
    pub(crate) fn new(n: usize, dense: bool) -> Option<Self> {
        Self::new_paged(n, dense, true)
    }

    /// As [`Self::new`], a dense table backed by huge pages only if `huge`
    /// (the reverse table is not: see `Ftl::new`).
    pub(crate) fn new_paged(n: usize, dense: bool, huge: bool) -> Option<Self> {
        let runs = n.div_ceil(1 << SUMMARY_SHIFT);
        let touched = super::types::try_filled(runs.div_ceil(64), 0u64).ok()?;
        let entries = if !dense {
            Entries::Sparse(HashMap::with_hasher(foldhash::fast::FixedState::with_seed(
                0x5354_4f52_4c41_4221,
            )))
        } else if n == 0 {
            Entries::Dense(Vec::new())
        } else {
            let layout = std::alloc::Layout::array::<u32>(n).ok()?;
            // SAFETY: `layout` has a non-zero size (n > 0).
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut u32;
            if ptr.is_null() {
                return None;
            }
            if huge {
                advise_huge_pages(ptr as *mut u8, layout.size());
            }
            // SAFETY: `ptr` was allocated by the global allocator with the
            // layout of `n` u32s, all initialised (zero is a valid u32), so
            // it is a valid Vec of length and capacity `n`.
            Entries::Dense(unsafe { Vec::from_raw_parts(ptr, n, n) })
        };
        Some(Table { entries, touched })
    }

    /// A table of no entries.
    pub(crate) fn empty() -> Self {
        Table {
            entries: Entries::Dense(Vec::new()),
            touched: Vec::new(),
        }
    }

    #[inline]
    fn was_touched(&self, i: u32) -> bool {
        let run = i >> SUMMARY_SHIFT;
        self.touched[(run / 64) as usize] & (1 << (run % 64)) != 0
    }

    #[inline]
    fn touch(&mut self, i: u32) {
        let run = i >> SUMMARY_SHIFT;
        self.touched[(run / 64) as usize] |= 1 << (run % 64);
    }

    /// The entry: `None` when absent.
    ///
    /// The dense form's paths (this, [`Self::set`], [`Self::clear`]) are
    /// inlined at their callers and the sparse form's hash-map code kept
    /// out of line: inlined together, the hash code's register needs made
    /// every dense access a call with a seven-register prologue (a
    /// sixteenth of a garbage-collected write's time).
    #[inline(always)]
    pub(crate) fn raw(&self, i: u32) -> Option<u32> {
        if !self.was_touched(i) {
            return None;
        }
        match &self.entries {
            Entries::Dense(v) => match v[i as usize] {
                0 => None,
                u32::MAX => Some(NONE),
                x => Some(x - 1),
            },
            Entries::Sparse(m) => Self::sparse_get(m, i),
        }
    }

    #[inline(never)]
    fn sparse_get(m: &SparseMap, i: u32) -> Option<u32> {
        m.get(&i).copied()
    }

    #[inline(never)]
    fn sparse_set(m: &mut SparseMap, i: u32, v: u32) {
        m.insert(i, v);
    }

    #[inline(never)]
    fn sparse_clear(m: &mut SparseMap, i: u32) {
        m.remove(&i);
    }

    /// Ask the processor to bring entry `i` into cache ahead of its use
    /// (a hint: no effect on the result, none off x86-64, for a sparse
    /// table, or where the summary says the entry was never set, so a
    /// lookup will not read it).
    #[inline]
    pub(crate) fn prefetch(&self, i: u32) {
        if i as usize >> SUMMARY_SHIFT >= self.touched.len() * 64 || !self.was_touched(i) {
            return;
        }
        if let Entries::Dense(v) = &self.entries {
            if let Some(e) = v.get(i as usize) {
                prefetch(e);
            }
        }
    }

    /// Set an entry (`NONE` explicitly).
    #[inline(always)]
    pub(crate) fn set(&mut self, i: u32, v: u32) {
        self.touch(i);
        match &mut self.entries {
            Entries::Dense(t) => t[i as usize] = if v == NONE { u32::MAX } else { v + 1 },
            Entries::Sparse(m) => Self::sparse_set(m, i, v),
        }
    }

    /// Make an entry absent.
    #[inline(always)]
    pub(crate) fn clear(&mut self, i: u32) {
        if !self.was_touched(i) {
            return;
        }
        match &mut self.entries {
            Entries::Dense(t) => t[i as usize] = 0,
            Entries::Sparse(m) => Self::sparse_clear(m, i),
        }
    }
}

/// Ask Linux to back a large table with transparent huge pages (where the
/// system leaves them to `madvise`): its entries are read and written at
/// random, and with 4 KB pages nearly every access also missed the TLB
/// (a page walk each). Memory is then backed 2 MB at a time where written.
/// A hint: if refused, nothing changes.
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if len < 2 * HUGE {
            return;
        }
        let start = (ptr as usize).next_multiple_of(HUGE);
        let end = (ptr as usize + len) / HUGE * HUGE;
        if end > start {
            // SAFETY: [start, end) lies inside the allocation of `len`
            // bytes at `ptr`; MADV_HUGEPAGE changes no contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// A prefetch hint for the cache line holding `p` (the standard library
/// has no portable one; the intrinsic never faults, whatever the address).
#[inline(always)]
pub(crate) fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is a hint that reads nothing architecturally;
        // `p` is a valid reference besides.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const T as *const i8) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A seeded permutation of `0..n` that scatters: `x -> (a x + c) mod n`
/// with `a` coprime with `n` near `n` times the golden ratio (so
/// neighbours land far apart) and `c` from the seed, and its inverse
/// `y -> a^-1 (y - c) mod n`. One multiply each way: it sits on the path
/// of every write and every collected unit of an aged drive, where a
/// keyed (Feistel) permutation cost a third of the run. Uniform random
/// overwrites leave the data in no order; which one the layout picks does
/// not matter to a workload that is itself random, and a sequential one
/// is scattered over the blocks as on an aged drive.
#[derive(Clone, Debug)]
pub(crate) struct Perm {
    n: u64,
    a: u64,
    a_inv: u64,
    c: u64,
    /// `floor(2^64 / n)` (saturated): Barrett reduction modulo `n` with a
    /// multiply instead of a division (a 128-bit remainder was a library
    /// call on every lookup of an aged drive).
    m: u64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The inverse of `a` modulo `n` (`gcd(a, n) == 1`).
fn inverse(a: u64, n: u64) -> u64 {
    let (mut r0, mut r1) = (n as i128, a as i128);
    let (mut t0, mut t1) = (0i128, 1i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (t0, t1) = (t1, t0 - q * t1);
    }
    t0.rem_euclid(n as i128) as u64
}

impl Perm {
    /// A permutation of `0..n` chosen by `seed`.
    pub(crate) fn new(n: u64, seed: u64) -> Self {
        if n <= 1 {
            return Perm {
                n: 1,
                a: 1,
                a_inv: 1,
                c: 0,
                m: u64::MAX,
            };
        }
        debug_assert!(n <= 1 << 32, "positions are 32-bit");
        let mut a = ((n as f64 * 0.618_033_988_749_895) as u64).max(1) + seed % 64;
        a %= n;
        while a == 0 || gcd(a, n) != 1 {
            a = (a + 1) % n;
        }
        Perm {
            n,
            a,
            a_inv: inverse(a, n),
            c: (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) % n,
            m: ((1u128 << 64) / n as u128) as u64,
        }
    }

    /// `x mod n` for any `x`: with `m = floor(2^64 / n)` the quotient
    /// estimate `q = floor(x m / 2^64)` is `floor(x / n)` or one less, so
    /// `x - q n < 2 n` needs at most one subtraction (exact).
    #[inline]
    fn reduce(&self, x: u64) -> u64 {
        let q = ((x as u128 * self.m as u128) >> 64) as u64;
        let r = x - q * self.n;
        if r >= self.n {
            r - self.n
        } else {
            r
        }
    }

    /// The image of `x < n`.
    #[inline]
    pub(crate) fn fwd(&self, x: u64) -> u64 {
        // a, x, c < n <= 2^32: a x + c < 2^64
        self.reduce(self.a * x + self.c)
    }

    /// The preimage of `y + 1` given `x`, the preimage of `y` (`y + 1 <
    /// n`): `a^-1 (y + 1 - c) = x + a^-1 (mod n)`, one add and at most
    /// one subtraction instead of a reduction.
    #[inline]
    pub(crate) fn inv_next(&self, x: u64) -> u64 {
        // x, a_inv < n: the sum is below 2 n
        let s = x + self.a_inv;
        if s >= self.n {
            s - self.n
        } else {
            s
        }
    }

    /// The preimage of `y < n`.
    #[inline]
    pub(crate) fn inv(&self, y: u64) -> u64 {
        let d = if y >= self.c {
            y - self.c
        } else {
            y + self.n - self.c
        };
        self.reduce(self.a_inv * d)
    }
}

/// Where sequential writes of logical units `0..n` put them on a fresh
/// drive (see the module doc).
#[derive(Clone, Debug)]
pub(crate) struct Striped {
    pub(crate) n: u32,
    /// Planes in host striping order.
    order: Vec<u32>,
    /// Position of each plane in `order`.
    pos: Vec<u32>,
    upp: Div32,
    upb: Div32,
    bpp: Div32,
    planes: Div32,
}

impl Striped {
    /// `n` units written in order over `order`'s planes, `upp` units per
    /// page, `upb` per block, `bpp` blocks per plane (every address fits
    /// 32 bits: the FTL checks the raw units do).
    pub(crate) fn new(n: u32, upp: u32, upb: u32, bpp: u32, order: Vec<u32>) -> Self {
        let mut pos = vec![0u32; order.len()];
        for (k, &p) in order.iter().enumerate() {
            pos[p as usize] = k as u32;
        }
        Striped {
            n,
            planes: Div32::new(order.len() as u32),
            order,
            pos,
            upp: Div32::new(upp),
            upb: Div32::new(upb),
            bpp: Div32::new(bpp),
        }
    }

    #[inline]
    fn ppa(&self, lpn: u32) -> u32 {
        if lpn >= self.n {
            return NONE;
        }
        let (g, s) = (self.upp.div(lpn), self.upp.rem(lpn));
        let plane = self.order[self.planes.rem(g) as usize];
        let u = self.planes.div(g) * self.upp.d() + s;
        let block = plane * self.bpp.d() + self.upb.div(u);
        block * self.upb.d() + self.upb.rem(u)
    }

    #[inline]
    fn lpn(&self, ppa: u32) -> u32 {
        let (b, off) = (self.upb.div(ppa) as u64, self.upb.rem(ppa) as u64);
        let plane = self.bpp.div(b as u32) as usize;
        let u = self.bpp.rem(b as u32) as u64 * self.upb.d() as u64 + off;
        let (r, s) = (u / self.upp.d() as u64, u % self.upp.d() as u64);
        let np = self.order.len() as u64;
        let l = (r * np + self.pos[plane] as u64) * self.upp.d() as u64 + s;
        if l < self.n as u64 {
            l as u32
        } else {
            NONE
        }
    }
}

/// The written region `0..n` spread over the blocks by a permutation:
/// block `b` holds the permuted positions `base[b]..base[b] + count[b]`,
/// spaced evenly over its units.
#[derive(Clone, Debug)]
pub(crate) struct Shuffled {
    n: u32,
    upb: u32,
    upb_div: Div32,
    /// `by_count[c]` divides by `c`, for every count `0..=upb` (empty
    /// when `upb^2` does not fit 32 bits): a unit's place in its block,
    /// `slot * upb / count`, on the path of every write of a unit the
    /// layout still maps, is a multiply, not a 64-bit division.
    by_count: Vec<Div32>,
    perm: Perm,
    /// Per block, its first position and its count, side by side (one
    /// cache line for both).
    span: Vec<Span>,
    /// `steps[j]`: the last block whose `base` is at most `j << shift`,
    /// with its span and the next block's base, so a position's block is
    /// found in one cache line (rarely a step or two forward from it)
    /// instead of a binary search over all blocks, or three dependent
    /// cache misses (index, next base, count).
    steps: Vec<Step>,
    shift: u32,
}

/// A block's positions: `base..base + count`.
#[derive(Clone, Copy, Debug)]
struct Span {
    base: u32,
    count: u32,
}

/// An entry of [`Shuffled::steps`] (16 bytes, aligned: never split over
/// two cache lines).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
struct Step {
    block: u32,
    base: u32,
    count: u32,
    /// The next block's base (`u32::MAX` for the last block).
    next: u32,
}

impl Shuffled {
    /// Block `b` holds `count[b]` units of the written region `0..n`
    /// (`base` their running sum, starting at 0), which ones chosen by
    /// `perm`.
    pub(crate) fn new(n: u32, upb: u32, perm: Perm, base: Vec<u32>, count: Vec<u32>) -> Self {
        debug_assert_eq!(base.first(), Some(&0));
        debug_assert_eq!(base.len(), count.len());
        let span: Vec<Span> = base
            .iter()
            .zip(&count)
            .map(|(&base, &count)| Span { base, count })
            .collect();
        // a step of at most the mean count per block
        let mean = (n as u64 / span.len().max(1) as u64).max(1);
        let shift = 63 - mean.leading_zeros();
        let nsteps = (n as u64 >> shift) as usize + 1;
        let mut steps = Vec::with_capacity(nsteps);
        let mut b = 0usize;
        for j in 0..nsteps as u64 {
            let pos = j << shift;
            while b + 1 < span.len() && span[b + 1].base as u64 <= pos {
                b += 1;
            }
            steps.push(Step {
                block: b as u32,
                base: span[b].base,
                count: span[b].count,
                next: span.get(b + 1).map_or(u32::MAX, |s| s.base),
            });
        }
        Shuffled {
            n,
            upb,
            upb_div: Div32::new(upb),
            by_count: if (upb as u64) * (upb as u64) <= u32::MAX as u64 {
                (0..=upb).map(Div32::new).collect()
            } else {
                Vec::new()
            },
            perm,
            span,
            steps,
            shift,
        }
    }

    /// The last block whose `base` is at most `pos`, with its span.
    #[inline]
    fn block_at(&self, pos: u32) -> (usize, Span) {
        let s = &self.steps[(pos >> self.shift) as usize];
        let found = if pos < s.next {
            (
                s.block as usize,
                Span {
                    base: s.base,
                    count: s.count,
                },
            )
        } else {
            let mut b = s.block as usize + 1;
            while b + 1 < self.span.len() && self.span[b + 1].base <= pos {
                b += 1;
            }
            (b, self.span[b])
        };
        debug_assert_eq!(found.0, self.span.partition_point(|x| x.base <= pos) - 1);
        found
    }

    /// Bring the index entry of `lpn`'s position into cache ahead of a
    /// lookup (a hint).
    #[inline]
    fn prefetch(&self, lpn: u32) {
        if lpn < self.n {
            let pos = self.perm.fwd(lpn as u64) as u32;
            prefetch(&self.steps[(pos >> self.shift) as usize]);
        }
    }

    #[inline]
    fn ppa(&self, lpn: u32) -> u32 {
        if lpn >= self.n {
            return NONE;
        }
        let pos = self.perm.fwd(lpn as u64) as u32;
        let (b, sp) = self.block_at(pos);
        let slot = (pos - sp.base) as u64;
        let unit = match self.by_count.get(sp.count as usize) {
            // slot < count <= upb: slot * upb < upb^2 fits 32 bits
            Some(d) => d.div((slot * self.upb as u64) as u32) as u64,
            None => slot * self.upb as u64 / sp.count as u64,
        };
        (b as u64 * self.upb as u64 + unit) as u32
    }

    #[inline]
    fn lpn(&self, ppa: u32) -> u32 {
        let (b, u) = (self.upb_div.div(ppa) as usize, self.upb_div.rem(ppa) as u64);
        let sp = self.span[b];
        let c = sp.count as u64;
        if c == 0 {
            return NONE;
        }
        let upb = self.upb as u64;
        // the slot whose unit `slot * upb / c` is `u`, if any: the
        // least slot at or after `u c / upb`, and it is `u`'s exactly when
        // `slot * upb < (u + 1) c` (no division by the block's count)
        let slot = if upb < 1 << 16 {
            // u c + upb - 1 < upb^2: 32-bit
            self.upb_div.div((u * c + upb - 1) as u32) as u64
        } else {
            (u * c).div_ceil(upb)
        };
        if slot >= c || slot * upb >= (u + 1) * c {
            return NONE;
        }
        self.perm.inv(sp.base as u64 + slot) as u32
    }
}

impl Shuffled {
    /// [`Shuffled::lpn`] of the `out.len()` units from `first` on, all in
    /// one block, into `out`: the block's slots that land in the run, in
    /// order, each slot's unit and logical unit stepped from the previous
    /// one's (an add and a compare each, where a lookup of one unit costs
    /// two divisions and a reduction).
    fn lpns_of_run(&self, first: u32, out: &mut [u32]) {
        out.fill(NONE);
        let (b, u0) = (
            self.upb_div.div(first) as usize,
            self.upb_div.rem(first) as u64,
        );
        debug_assert!(u0 + out.len() as u64 <= self.upb as u64);
        let sp = self.span[b];
        let c = sp.count as u64;
        if c == 0 || out.is_empty() {
            return;
        }
        let upb = self.upb as u64;
        let u1 = u0 + out.len() as u64;
        // slot s sits at unit floor(s upb / c): the slots of units
        // u0..u1 are ceil(u0 c / upb)..ceil(u1 c / upb) (below c)
        let s0 = (u0 * c).div_ceil(upb);
        let s1 = (u1 * c).div_ceil(upb).min(c);
        if s0 >= s1 {
            return;
        }
        // s upb = q c + r, stepped by upb = k c + m per slot
        let (k, m) = (upb / c, upb % c);
        let (mut q, mut r) = ((s0 * upb) / c, (s0 * upb) % c);
        let mut x = self.perm.inv(sp.base as u64 + s0);
        for s in s0..s1 {
            out[(q - u0) as usize] = x as u32;
            if s + 1 < s1 {
                x = self.perm.inv_next(x);
                q += k;
                r += m;
                if r >= c {
                    r -= c;
                    q += 1;
                }
            }
        }
    }
}

/// The mapping of units the tables do not hold.
#[derive(Clone, Debug)]
pub(crate) enum Layout {
    /// Nothing is mapped outside the tables.
    None,
    /// Sequentially written.
    Striped(Striped),
    /// Aged (derived steady state).
    Shuffled(Shuffled),
}

impl Layout {
    /// The unit the layout gives `lpn`, or [`NONE`].
    #[inline]
    pub(crate) fn ppa(&self, lpn: u32) -> u32 {
        match self {
            Layout::None => NONE,
            Layout::Striped(s) => s.ppa(lpn),
            Layout::Shuffled(s) => s.ppa(lpn),
        }
    }

    /// The logical unit the layout puts at `ppa`, or [`NONE`].
    #[inline]
    pub(crate) fn lpn(&self, ppa: u32) -> u32 {
        match self {
            Layout::None => NONE,
            Layout::Striped(s) => s.lpn(ppa),
            Layout::Shuffled(s) => s.lpn(ppa),
        }
    }

    /// [`Layout::lpn`] of each of the `out.len()` units from `first` on
    /// (all in one block) into `out`: a garbage-collection victim's units
    /// in one pass.
    #[inline]
    pub(crate) fn lpns_of_run(&self, first: u32, out: &mut [u32]) {
        match self {
            Layout::Shuffled(s) => s.lpns_of_run(first, out),
            _ => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = self.lpn(first + i as u32);
                }
            }
        }
    }

    /// Bring what a lookup of `lpn` reads into cache (a hint).
    #[inline]
    pub(crate) fn prefetch(&self, lpn: u32) {
        if let Layout::Shuffled(s) = self {
            s.prefetch(lpn);
        }
    }

    /// Logical units `0..n` the layout maps.
    #[inline]
    pub(crate) fn covers(&self, lpn: u32) -> bool {
        match self {
            Layout::None => false,
            Layout::Striped(s) => lpn < s.n,
            Layout::Shuffled(s) => lpn < s.n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permutation_is_a_bijection_with_its_inverse() {
        for n in [1u64, 2, 3, 5, 17, 1000, 4097] {
            let p = Perm::new(n, 42);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.fwd(x);
                assert!(y < n);
                assert!(!seen[y as usize], "n {n}: {y} twice");
                seen[y as usize] = true;
                assert_eq!(p.inv(y), x);
            }
        }
        // the reduction is exact against 128-bit arithmetic, up to
        // 32-bit sizes
        for n in [2u64, 3, 1 << 20, (1 << 32) - 5, 1 << 32, 16_777_216 + 7] {
            let p = Perm::new(n, 7);
            let mut x = 0x1234_5678u64 % n;
            for _ in 0..1000 {
                let want = ((p.a as u128 * x as u128 + p.c as u128) % n as u128) as u64;
                assert_eq!(p.fwd(x), want, "n {n} x {x}");
                assert_eq!(p.inv(want), x, "n {n} y {want}");
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407)
                    % n;
            }
            assert_eq!(p.inv(p.fwd(n - 1)), n - 1);
        }
        // neighbours land far apart
        let p = Perm::new(1000, 1);
        assert!((0..999).all(|x| p.fwd(x).abs_diff(p.fwd(x + 1)) > 100));
    }

    #[test]
    fn tables_keep_three_states_dense_and_sparse() {
        for dense in [true, false] {
            let mut t = Table::new(100, dense).expect("small");
            assert_eq!(t.raw(5), None);
            t.set(5, 0);
            assert_eq!(t.raw(5), Some(0));
            t.set(6, NONE);
            assert_eq!(t.raw(6), Some(NONE));
            t.set(7, NONE - 2);
            assert_eq!(t.raw(7), Some(NONE - 2));
            t.clear(5);
            assert_eq!(t.raw(5), None);
        }
        assert!(Table::new(usize::MAX / 2, true).is_none());
    }

    #[test]
    fn the_summary_answers_absent_only_where_nothing_was_set() {
        for dense in [true, false] {
            let n = 10 << SUMMARY_SHIFT;
            let mut t = Table::new(n, dense).expect("small");
            let inside = (3 << SUMMARY_SHIFT) + 17;
            t.set(inside, 42);
            // its neighbours in the same run are read from the table
            assert_eq!(t.raw(inside), Some(42));
            assert_eq!(t.raw(inside + 1), None);
            // clearing an entry of a run never set changes nothing
            t.clear(5 << SUMMARY_SHIFT);
            assert_eq!(t.raw(5 << SUMMARY_SHIFT), None);
            t.clear(inside);
            assert_eq!(t.raw(inside), None);
            t.set(n as u32 - 1, NONE);
            assert_eq!(t.raw(n as u32 - 1), Some(NONE));
            t.prefetch(inside);
        }
    }

    #[test]
    fn the_block_index_finds_what_a_binary_search_finds() {
        // empty blocks (free ones) share their neighbour's base; the
        // lookup takes the last block at or below a position
        let upb = 16;
        let count: Vec<u32> = (0..500u32)
            .map(|b| [0, 16, 3, 9, 0, 0, 12][b as usize % 7])
            .collect();
        let mut base = Vec::new();
        let mut s = 0;
        for &c in &count {
            base.push(s);
            s += c;
        }
        let l = Shuffled::new(s, upb, Perm::new(s as u64, 9), base.clone(), count.clone());
        for pos in 0..s {
            assert_eq!(
                l.block_at(pos).0,
                base.partition_point(|&x| x <= pos) - 1,
                "position {pos}"
            );
        }
        for lpn in 0..s {
            assert_eq!(l.lpn(l.ppa(lpn)), lpn);
        }
        // a run's units in one pass, as one by one, for runs of every
        // length and start within a block
        let lay = Layout::Shuffled(l.clone());
        let mut out = [0u32; 16];
        for b in 0..40u32 {
            for u0 in 0..upb {
                for len in 0..=(upb - u0) as usize {
                    let first = b * upb + u0;
                    lay.lpns_of_run(first, &mut out[..len]);
                    for (i, &got) in out[..len].iter().enumerate() {
                        assert_eq!(
                            got,
                            l.lpn(first + i as u32),
                            "block {b} unit {}",
                            u0 as usize + i
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn shuffled_layout_inverts() {
        let upb = 8;
        let count = vec![3u32, 0, 8, 5];
        let mut base = Vec::new();
        let mut s = 0;
        for &c in &count {
            base.push(s);
            s += c;
        }
        let l = Shuffled::new(s, upb, Perm::new(s as u64, 3), base, count.clone());
        let mut per_block = [0u32; 4];
        for lpn in 0..s {
            let ppa = l.ppa(lpn);
            assert_eq!(l.lpn(ppa), lpn);
            per_block[(ppa / upb) as usize] += 1;
        }
        assert_eq!(per_block.to_vec(), count);
        assert_eq!(l.ppa(s), NONE);
    }
}
