//! The NAND array's operations and die queues: an operation in a die's
//! batch, the compact write-queue entry, a die, and the multi-plane
//! batching that takes a die's next operations from its queue.

use std::collections::VecDeque;

use crate::device::Nanos;

use super::ftl::types::NandKind;

const WINDOW: usize = 8;

/// A NAND operation in its die's current batch (and, for host reads, in
/// the die's read queue). Its times are its batch's, kept once in the
/// [`Die`].
#[derive(Clone, Copy, Debug)]
pub(super) struct FOp {
    pub(super) kind: NandKind,
    /// A read-ahead op's name in `pf` (unique among live ones).
    pub(super) id: u32,
    pub(super) die: u32,
    /// `1 << ` its plane within the die (multi-plane batching).
    pub(super) plane_bit: u32,
    pub(super) block: u32,
    pub(super) page: u32,
    pub(super) units: u32,
    pub(super) lpn0: u32,
    pub(super) req: u32,
    pub(super) background: bool,
    pub(super) prefetch: bool,
    /// A host program's place in program order; a read's, its die's
    /// `w_pushed` when it was queued (what it waits for in arrival order).
    pub(super) seq: u64,
    pub(super) behind_gc: bool,
    /// A translation page's read or program (cached mapping table).
    pub(super) map: bool,
    /// The old data of a unit a sub-unit write only partly covers (the
    /// read of a read-modify-write; nobody waits on the op itself).
    pub(super) rmw: bool,
    /// A host program in SLC mode (`ssd.nand.slc_cache`).
    pub(super) slc: bool,
}

/// An operation of a die's write queue (programs, garbage collection's
/// reads, erases), held by value in 16 bytes: garbage collection queues
/// hundreds of ops on one die at once and the queues run thousands deep,
/// so their memory is swept far beyond the caches (at 48 bytes an op the
/// queues' writes were a third of the write path's last-level misses).
/// What only a host read needs (its request, read-ahead name, whether it
/// queued behind collection) is not here: this queue holds none.
#[derive(Clone, Copy, Debug)]
pub(super) struct WOp {
    pub(super) block: u32,
    pub(super) units: u32,
    /// A host program's place in program order, its low 32 bits (fewer
    /// than 2^32 programs are ever outstanding, so [`Ssd::wop_seq`]
    /// recovers it exactly from the oldest outstanding one).
    pub(super) seq: u32,
    /// Page within the block (`pages_per_block` is at most 2^16).
    pub(super) page: u16,
    /// Its plane within the die (at most 16 planes).
    pub(super) plane: u8,
    /// [`NandKind`] in bits 0-1, background in bit 2, a translation page
    /// (cached mapping table) in bit 3, SLC mode in bit 4.
    pub(super) flags: u8,
}

impl WOp {
    pub(super) const BACKGROUND: u8 = 4;
    /// A translation page's program (cached mapping table).
    pub(super) const MAP: u8 = 8;
    /// A host program in SLC mode (`ssd.nand.slc_cache`).
    pub(super) const SLC: u8 = 16;

    #[inline]
    pub(super) fn kind(&self) -> NandKind {
        match self.flags & 3 {
            0 => NandKind::Read,
            1 => NandKind::Program,
            _ => NandKind::Erase,
        }
    }

    #[inline]
    pub(super) fn kind_bits(kind: NandKind) -> u8 {
        match kind {
            NandKind::Read => 0,
            NandKind::Program => 1,
            NandKind::Erase => 2,
        }
    }
}

/// What the multi-plane batching reads of a queued op.
pub(super) trait Queued: Copy {
    fn plane_bit(&self) -> u32;
    /// Its [`NandKind`] as [`WOp::kind_bits`] numbers it.
    fn kind_bits(&self) -> u8;
    /// Its page within its block.
    fn page(&self) -> u32;
}

impl Queued for FOp {
    #[inline]
    fn plane_bit(&self) -> u32 {
        self.plane_bit
    }
    #[inline]
    fn kind_bits(&self) -> u8 {
        WOp::kind_bits(self.kind)
    }
    #[inline]
    fn page(&self) -> u32 {
        self.page
    }
}

impl Queued for WOp {
    #[inline]
    fn plane_bit(&self) -> u32 {
        1 << self.plane
    }
    #[inline]
    fn kind_bits(&self) -> u8 {
        self.flags & 3
    }
    #[inline]
    fn page(&self) -> u32 {
        self.page as u32
    }
}

/// Take the next batch of `q` into `cur` (empty): its head, and with
/// multi-plane operations (`ppd` > 1) up to one op more per other plane of
/// the same kind from the next [`WINDOW`] ops, where nothing before them
/// on their plane is skipped if `strict` (the write queue keeps each
/// plane's order), and with `same_page` only ops at the head's page
/// address (`ssd.nand.multiplane_same_page`). False if `q` is empty.
///
/// `same`, if given, remembers how far the queue's front is known to hold
/// one plane only: under garbage collection a die's write queue holds a
/// victim's hundreds of ops on one plane in a row, where the scan can take
/// nothing, and each batch then checks the one op that entered the window
/// instead of scanning all of it again. (Speed only: the batch is the
/// scan's. Host reads land on any plane, so their queue does without.)
#[inline]
#[allow(clippy::too_many_arguments)] // the queue, its remembered front, the batch, and the die's rules
pub(super) fn take_batch<T: Queued>(
    q: &mut VecDeque<T>,
    mut same: Option<&mut SamePlane>,
    cur: &mut Vec<FOp>,
    multiplane: bool,
    ppd: u32,
    strict: bool,
    same_page: bool,
    conv: impl Fn(T) -> FOp,
) -> bool {
    debug_assert!(cur.is_empty());
    let scan = multiplane
        && ppd > 1
        && match same.as_deref_mut() {
            None => true,
            Some(same) => {
                // extend the run of ops on the head's plane over the window
                // (the head and the WINDOW ops behind it)
                let len = q.len().min(WINDOW + 1) as u32;
                if same.n == 0 {
                    match q.front() {
                        Some(h) => {
                            *same = SamePlane {
                                n: 1,
                                bit: h.plane_bit(),
                            }
                        }
                        None => return false,
                    }
                }
                while same.n < len && q[same.n as usize].plane_bit() == same.bit {
                    same.n += 1;
                }
                // every op of the window on the head's plane: the scan would
                // take none
                same.n < len
            }
        };
    let Some(head) = q.pop_front() else {
        return false;
    };
    if let Some(same) = same.as_deref_mut() {
        same.n = same.n.saturating_sub(1);
    }
    // the die's next batch will scan from about here: its ops were
    // queued long ago (queues run thousands deep under garbage
    // collection) and are out of cache, so ask for them now (a hint)
    if let Some(o) = q.get(WINDOW + 4) {
        super::ftl::layout::prefetch(o);
    }
    cur.push(conv(head));
    if scan {
        let kind = head.kind_bits();
        let page = head.page();
        let all = if ppd >= 32 { u32::MAX } else { (1 << ppd) - 1 };
        let mut used = head.plane_bit();
        let mut blocked = 0u32;
        let mut take: [usize; WINDOW] = [0; WINDOW];
        let mut nt = 0;
        for (i, o) in q.iter().take(WINDOW).enumerate() {
            let bit = o.plane_bit();
            if (used | blocked) & bit != 0 {
                continue;
            }
            if o.kind_bits() != kind || (same_page && o.page() != page) {
                if strict {
                    blocked |= bit;
                    // no plane left that could add an op
                    if used | blocked == all {
                        break;
                    }
                }
                continue;
            }
            used |= bit;
            take[nt] = i;
            nt += 1;
            if nt + 1 >= ppd as usize {
                break;
            }
        }
        if nt > 0 {
            // ops left the middle of the queue: what is known of its
            // front may no longer hold
            if let Some(same) = same {
                same.n = 0;
            }
        }
        for k in (0..nt).rev() {
            let o = q.remove(take[k]).expect("index from the scan");
            cur.push(conv(o));
        }
        // keep the batch in queue order
        cur[1..].reverse();
    }
    true
}

/// How many ops at the front of a die queue are known to be on one
/// plane, and that plane's bit (see [`take_batch`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SamePlane {
    pub(super) n: u32,
    pub(super) bit: u32,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Die {
    pub(super) channel: u32,
    pub(super) busy: bool,
    pub(super) reads: VecDeque<FOp>,
    pub(super) writes: VecDeque<WOp>,
    /// The front run of `writes` known to be on one plane.
    pub(super) writes_same: SamePlane,
    /// Operations ever pushed onto `writes`, and ever taken from it: a read
    /// queued when `w_pushed` was `k` (its `seq`) is behind write-queue ops
    /// until `w_taken` reaches `k` (`ssd.nand.die_order = "arrival"`).
    pub(super) w_pushed: u64,
    pub(super) w_taken: u64,
    pub(super) cur: Vec<FOp>,
    /// When the current batch started, and when its array work ends
    /// (reads: the data is in the page register; programs and erases:
    /// done).
    pub(super) start: Nanos,
    pub(super) media_end: Nanos,
    pub(super) busy_ns: u64,
    pub(super) background: u32,
    /// When the current batch ends (its `EV_DIE` wake-up; an earlier one
    /// is stale: the batch was suspended and its end pushed out).
    pub(super) end: Nanos,
    /// Host reads served while the current program or erase is
    /// suspended (`ssd.nand.suspend`), and their start and array end.
    pub(super) sus: Vec<FOp>,
    pub(super) sus_start: Nanos,
    pub(super) sus_media_end: Nanos,
}
