//! The steady state of an aged drive, derived instead of replayed.
//!
//! Ageing by replay (random overwrites of the written region until write
//! amplification settles) costs several writes per logical unit: minutes
//! for a drive of terabytes. Garbage collection runs per plane (each plane
//! keeps its own free pool and chooses its own victims) and host writes
//! stripe over the planes, so under uniform random overwrites every plane
//! is the same random process: its state depends on the policy, the blocks
//! per plane, the block size, the free-pool threshold and the utilisation,
//! not on how many planes there are. The blocks per plane matter: greedy
//! collection's steady state is a finite-size one (Van Houdt, "A mean
//! field model for a class of garbage collection algorithms in flash-based
//! solid state drives", SIGMETRICS 2013: write amplification depends on
//! the blocks a victim is chosen among), so a plane of a few dozen blocks
//! does not stand for one of hundreds. So a drive with the same plane
//! (blocks, block size, policy, threshold, wear levelling, utilisation) but
//! fewer planes (about [`AGE_REPLAY_MAX_UNITS`] raw units) is aged by
//! replay and each of its planes is copied block for block to the big
//! drive's planes. Only a plane larger than eight budgets is shrunk in
//! blocks, its blocks then taken by quantile. The blocks the small drive
//! left open (the host's and collection's) are free blocks in the copy:
//! a plane in steady state holds the threshold's free blocks plus the two
//! it writes into. (Closing them in the copy instead leaves every plane
//! two blocks short of its pool, and the first writes wait while each
//! plane collects about 2 / (1 - u) victims of valid share u: seconds at
//! 4,096 units a block; counting them as closed blocks with only their
//! written units valid hands collection nearly empty victims instead.)
//! The valid counts are then nudged by one unit
//! at a time, spread over the drive, until they sum to the written region
//! exactly. Which logical units each block holds is a seeded permutation
//! ([`super::layout::Shuffled`]): uniform random overwrites leave no order.

use super::blocks::{BState, Block};
use super::config::FtlConfig;
use super::layer::Ftl;
use super::layout::{Layout, Perm, Shuffled};
use super::types::{Geometry, Mapping, Precondition, PreconditionReport};

/// Raw units (mapping units of flash) up to which `aged` is replayed
/// exactly; larger drives derive their steady state from a drive of about
/// this size. 2^21 units (8 GiB of 4 KB units) replay in about a second.
pub const AGE_REPLAY_MAX_UNITS: u64 = 1 << 21;

/// Blocks per plane the small drive keeps at least, beyond the reserve (so
/// every plane has a distribution to sample).
const MIN_DATA_BLOCKS: u64 = 32;

/// Age `big` (fresh) to the steady state of uniform overwrites of `0..n`
/// by scaling up a replayed small drive of about `budget` raw units.
/// `None` (nothing changed) when the drive is not fresh or no smaller
/// drive fits.
pub(super) fn derive(big: &mut Ftl, n: u32, budget: u64) -> Option<PreconditionReport> {
    if big.clock != 0 || big.mapping != Mapping::Page {
        return None;
    }
    let g = big.geo;
    let (upb, planes, thr) = (big.upb as u64, g.planes as u64, big.threshold as u64);
    let bpp = g.blocks_per_plane as u64;
    // fewer planes of the same size; a plane is shrunk only when one alone
    // is beyond eight budgets
    let planes_s = (budget / (bpp * upb)).clamp(1, planes);
    let bpp_s = if bpp * upb <= 8 * budget {
        bpp
    } else {
        (8 * budget / upb).max(thr + 2 + MIN_DATA_BLOCKS).min(bpp)
    };
    if planes_s == planes && bpp_s == bpp {
        return None;
    }
    // the same utilisation of the blocks that can hold data
    let data_big = planes * (bpp - thr - 2) * upb;
    let data_small = planes_s * (bpp_s - thr - 2) * upb;
    let n_s = ((n as u128 * data_small as u128 / data_big as u128) as u64).clamp(1, data_small);
    let cfg = FtlConfig {
        mapping: Mapping::Page,
        map_unit_bytes: 4096,
        gc_policy: big.policy,
        gc_threshold_blocks: big.threshold,
        wear_leveling: big.wl,
        static_wl_gap: big.wl_gap,
        static_wl_interval: big.wl_interval,
        precondition: Precondition::AgedReplay,
        fullness: 1.0,
        seed: big.seed,
        gc_pacing: false,
        map_cache: Default::default(),
    };
    let geo_s = Geometry {
        planes: planes_s as u32,
        blocks_per_plane: bpp_s as u32,
        ..g
    };
    let mut small = Ftl::new(&cfg, geo_s, n_s, (0..planes_s as u32).collect()).ok()?;
    small.emit = false;
    let rep = small.fill_and_age(n_s as u32, true);
    let scale = n as f64 / n_s as f64;

    let (bpp, bs) = (bpp as usize, bpp_s as usize);
    for p in 0..planes as usize {
        let ps = p % planes_s as usize;
        let sb = &small.blocks[ps * bs..(ps + 1) * bs];
        // the small drive's open blocks (host and collection) are free
        // blocks of the copy, their valid units spread by the nudge below:
        // the copy opens its own, and its pool is the threshold plus them,
        // as a plane in steady state has it
        let data: Vec<_> = sb.iter().filter(|b| b.state == BState::Closed).collect();
        let free: Vec<_> = sb.iter().filter(|b| b.state != BState::Closed).collect();
        // a pool that collection keeps at its threshold is that many blocks
        // at any size; a pool the ageing never reached (a drive written
        // only in part) is a share of the blocks beyond the reserve
        let kept = (thr + 2) as usize;
        let f = if free.len() <= kept {
            free.len()
        } else {
            kept + (free.len() - kept) * (bpp - kept) / (bs - kept)
        };
        let c = bpp - f;
        if data.is_empty() {
            return None;
        }
        for i in 0..c {
            let s = data[i * data.len() / c];
            let (closed, valid) = (s.closed_at, s.valid);
            let blk = &mut big.blocks[p * bpp + i];
            blk.valid = valid;
            blk.erases = s.erases;
            blk.state = BState::Closed;
            blk.next_unit = big.upb;
            blk.closed_at = (closed as f64 * scale) as u64;
            blk.virt = true;
        }
        for i in 0..f {
            big.blocks[p * bpp + c + i].erases = free[i * free.len() / f].erases;
        }
    }
    // nudge the valid counts to sum to n: each pass spreads what is left
    // evenly over the blocks that can take it (Bresenham: block k of the
    // eligible e takes `left / e` plus one where `k * (left % e) / e`
    // steps), in block order, so a pass is one sequential sweep
    let nb = big.blocks.len();
    let upb_v = big.upb;
    let total: u64 = big.blocks.iter().map(|b| b.valid as u64).sum();
    let mut diff = n as i64 - total as i64;
    while diff != 0 {
        let up = diff > 0;
        let can =
            |b: &Block| b.state == BState::Closed && if up { b.valid < upb_v } else { b.valid > 0 };
        let e = big.blocks.iter().filter(|b| can(b)).count() as i64;
        if e == 0 {
            return None;
        }
        let left = diff.abs();
        let (per, extra) = (left / e, left % e);
        let mut k = 0i64;
        for b in big.blocks.iter_mut() {
            if !can(b) {
                continue;
            }
            let want = per + ((k + 1) * extra / e - k * extra / e);
            k += 1;
            let room = if up {
                (upb_v - b.valid) as i64
            } else {
                b.valid as i64
            };
            let d = want.min(room).min(diff.abs());
            if up {
                b.valid += d as u32;
                diff -= d;
            } else {
                b.valid -= d as u32;
                diff += d;
            }
        }
    }
    let mut base = Vec::with_capacity(nb);
    let mut count = Vec::with_capacity(nb);
    let mut pos = 0u32;
    for b in &big.blocks {
        let c = if b.state == BState::Closed {
            b.valid
        } else {
            0
        };
        base.push(pos);
        count.push(c);
        pos += c;
    }
    debug_assert_eq!(pos, n);
    big.layout = Layout::Shuffled(Shuffled::new(
        n,
        big.upb,
        Perm::new(n as u64, big.seed ^ 0x6167_6564_5f70_6572),
        base,
        count,
    ));
    big.clock = (small.clock as f64 * scale) as u64;
    big.mapped = n as u64;
    for p in 0..g.planes {
        big.rebuild_free(p);
    }
    Some(PreconditionReport {
        units_written: (rep.units_written as f64 * scale) as u64,
        erases: big.blocks.iter().map(|b| b.erases as u64).sum(),
        units_moved: (rep.units_moved as f64 * scale) as u64,
        units_replayed: rep.units_replayed,
        derived: true,
    })
}
