//! The shape of a Berkeley DB hash table as its load leaves it: linear
//! hashing whose buckets are chains of pages, split one at a time.
//!
//! With no fill factor set (`DB->set_h_ffactor` unset, as in
//! apps/bdb-bench.c and the studies' benchmark), Berkeley DB splits a
//! bucket exactly when an insert has to add an overflow page to some
//! bucket's chain (hash/hash_page.c, `__ham_add_el`: `do_expand = 1`
//! when the chain has no page with room, then `H_EXPAND`; hash/hash.c,
//! `__ham_expand_table`): the bucket split is the next one in linear
//! order, not the one that overflowed. A split rewrites both halves
//! compactly (`__ham_split_page`), and an insert goes to the first page
//! of its chain with room, so a chain of `n` pairs is `ceil(n / C)`
//! pages of `C` pairs. Buckets wait their turn to split, so at any moment
//! a share of them have overflowed: loaded with 2 M pairs of 114 bytes on
//! 4 KiB pages, libdb 5.3 made 49,439 buckets and 16,097 overflow pages
//! (`DB->stat`, measured here with apps/bdb-bench.c's load).
//!
//! A lookup walks its bucket's chain from the first page until it finds
//! the key (`__ham_lookup`), all of it when the key is absent (an insert
//! of a new key, a delete that finds nothing); each page walked is a
//! memory-pool access. This module builds the loaded table's chain
//! lengths by running that rule over the load of apps/bdb-bench.c's
//! keys with Berkeley DB's own hash function: on those keys it spreads
//! pairs more evenly than random hashing would (2 M pairs drawn at
//! random would make 57,662 buckets), so which keys and which function
//! matter.

/// Bytes of a Berkeley DB page's header (`P_OVERHEAD`: LSN, page number,
/// previous and next page, entries, free-space offset, level, type; 26
/// bytes, dbinc/db_page.h).
pub const PAGE_HEADER: u64 = 26;

/// Pairs the load is run with at most: a bigger table is run at its
/// size divided by a power of two, at the same point of its doubling
/// (its buckets stand for runs of `1 << shift` buckets of the big one).
const MAX_SIMULATED: u64 = 1 << 22;

/// Berkeley DB's default hash function (hash/hash_func.c,
/// `__ham_func5`: Fowler/Noll/Vo's multiply-then-xor over the key's
/// bytes from 0).
pub fn ham_func5(key: &[u8]) -> u32 {
    key.iter()
        .fold(0u32, |h, &b| h.wrapping_mul(16_777_619) ^ b as u32)
}

/// The loaded hash table: per bucket, its pairs (of the simulated size).
pub struct HashShape {
    /// Pairs per page.
    cap: u32,
    high_mask: u64,
    low_mask: u64,
    max_bucket: u64,
    /// Pairs in each simulated bucket.
    counts: Vec<u32>,
    /// First overflow page of each simulated bucket, numbered after
    /// every bucket's first page.
    first_ovfl: Vec<u64>,
    /// The table was simulated at its size `>> shift`.
    shift: u32,
    /// Pages in all (first pages and overflow pages, full size).
    pages: u64,
}

impl HashShape {
    /// The table that loading `pairs` pairs of `pair_bytes` each (items,
    /// their headers and index slots) on `page`-byte pages leaves, from
    /// two buckets (`__ham_init_meta` with no size hint), one pair at a
    /// time: the keys apps/bdb-bench.c loads (every other integer, 8
    /// bytes in memory order: 0, 2, 4, ...), hashed by Berkeley DB's
    /// default function ([`ham_func5`]).
    pub fn load(pairs: u64, pair_bytes: u64, page: u64) -> Self {
        let cap = ((page.saturating_sub(PAGE_HEADER)) / pair_bytes.max(1)).max(1) as u32;
        let mut shift = 0;
        while pairs >> shift > MAX_SIMULATED {
            shift += 1;
        }
        let n = (pairs >> shift).max(1);
        let mut t = Self {
            cap,
            high_mask: 1,
            low_mask: 0,
            max_bucket: 1,
            counts: Vec::new(),
            first_ovfl: Vec::new(),
            shift,
            pages: 0,
        };
        // each bucket's pairs' hash values (a split sends them by the
        // next bit)
        let mut items: Vec<Vec<u32>> = vec![Vec::new(), Vec::new()];
        for k in 0..n {
            let h = ham_func5(&(2 * k).to_le_bytes());
            let b = t.bucket_of(h as u64) as usize;
            // a full chain takes an overflow page, and the table expands
            let overflows = !items[b].is_empty() && items[b].len().is_multiple_of(cap as usize);
            items[b].push(h);
            if overflows {
                t.expand(&mut items);
            }
        }
        t.counts = items.iter().map(|v| v.len() as u32).collect();
        let nb = t.counts.len() as u64;
        let mut next = nb << shift;
        t.first_ovfl = t
            .counts
            .iter()
            .map(|&c| {
                let first = next;
                next += (t.chain_pages_of(c) - 1) << shift;
                first
            })
            .collect();
        t.pages = next;
        t
    }

    /// `__ham_expand_table`: the next bucket is split off the bucket it
    /// shares its low bits with.
    fn expand(&mut self, items: &mut Vec<Vec<u32>>) {
        self.max_bucket += 1;
        let new = self.max_bucket;
        let old = (new & self.low_mask) as usize;
        if new > self.high_mask {
            self.low_mask = self.high_mask;
            self.high_mask = new | self.low_mask;
        }
        let hm = self.high_mask;
        let (stay, go): (Vec<u32>, Vec<u32>) =
            items[old].iter().partition(|&&h| h as u64 & hm != new);
        items[old] = stay;
        items.push(go);
    }

    /// `__ham_call_hash`'s bucket of hash value `h` (of the simulated
    /// table).
    fn bucket_of(&self, h: u64) -> u64 {
        let b = h & self.high_mask;
        if b > self.max_bucket {
            h & self.low_mask
        } else {
            b
        }
    }

    fn chain_pages_of(&self, pairs: u32) -> u64 {
        (pairs.div_ceil(self.cap) as u64).max(1)
    }

    /// Pages of the table (first and overflow pages).
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Buckets of the table.
    pub fn buckets(&self) -> u64 {
        (self.max_bucket + 1) << self.shift
    }

    /// Overflow pages of the table.
    pub fn overflow_pages(&self) -> u64 {
        self.pages - self.buckets()
    }

    /// Pairs a page holds.
    pub fn pairs_per_page(&self) -> u32 {
        self.cap
    }

    /// The pages a lookup of `key` (an integer key, as apps/bdb-bench.c
    /// stores them) walks, in order, into `out` (page numbers of the
    /// table): from its bucket's first page to the page holding it when
    /// `present` (its place in the chain drawn from the key), the whole
    /// chain when not. The last page walked holds the key, or takes a
    /// new one (the chain's last page is the one with room).
    pub fn walk(&self, key: u64, present: bool, out: &mut Vec<u64>) {
        out.clear();
        let sb = self.bucket_of(ham_func5(&key.to_le_bytes()) as u64);
        let pairs = self.counts[sb as usize];
        let chain = self.chain_pages_of(pairs);
        let mix = splitmix(key);
        // the full-size bucket: one of the `1 << shift` this one stands for
        let sub = (mix >> 40) & ((1 << self.shift) - 1);
        let bucket = (sb << self.shift) | sub;
        let last = if present && pairs > 0 {
            (((mix & 0xf_ffff) * pairs as u64) >> 20) / self.cap as u64
        } else {
            chain - 1
        };
        out.push(bucket);
        for i in 1..=last {
            out.push(self.first_ovfl[sb as usize] + ((i - 1) << self.shift) + sub);
        }
    }
}

/// splitmix64's finalizer: bits of a key independent of its bucket.
fn splitmix(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loaded_table_has_the_overflow_share_libdb_made() {
        // libdb 5.3, apps/bdb-bench.c's load of 2 M pairs (8-byte keys,
        // 100-byte data: 114 bytes a pair with headers and index slots)
        // on 4 KiB pages: 49,439 buckets, 16,097 overflow pages
        // (`DB->stat`: hash_buckets, hash_overflows): the same keys and
        // hash function give the same table
        let t = HashShape::load(2_000_000, 114, 4096);
        assert_eq!((t.buckets(), t.overflow_pages()), (49_439, 16_097));
    }

    #[test]
    fn a_lookup_walks_its_chain_to_the_key_and_all_of_it_when_absent() {
        let t = HashShape::load(200_000, 114, 4096);
        let mut out = Vec::new();
        let (mut present, mut absent) = (0usize, 0usize);
        for k in 0..20_000u64 {
            t.walk(2 * k, true, &mut out);
            assert!(out.iter().all(|&p| p < t.pages()));
            present += out.len();
            t.walk(2 * k + 1, false, &mut out);
            absent += out.len();
        }
        // an absent key walks the whole chain: more pages than a present
        // one, and more than one page a lookup (some chains overflow)
        assert!(absent > present, "{absent} {present}");
        assert!(absent as f64 / 20_000.0 > 1.1, "{absent}");
    }

    #[test]
    fn a_big_table_is_run_scaled_at_the_same_shape() {
        // 16 M pairs are run as 4 M (at the same point of the doubling as
        // 1 M): the overflow share of the exact run of 1 M
        let small = HashShape::load(1 << 20, 128, 4096);
        let big = HashShape::load(1 << 24, 128, 4096);
        let s = small.overflow_pages() as f64 / small.buckets() as f64;
        let g = big.overflow_pages() as f64 / big.buckets() as f64;
        assert!((s - g).abs() < 0.05, "{s} {g}");
        assert!(big.pages() > 15 * small.pages());
    }
}
