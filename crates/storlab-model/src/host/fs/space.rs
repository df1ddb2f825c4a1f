//! Where files and the log lie on the device: the file system's geometry
//! as mkfs leaves it, the free space, and a file's extents.
//!
//! Sources:
//! - xfs(5) ("layout of the XFS filesystem"): with mkfs.xfs's defaults the
//!   log is internal, inside the data section; the data section is
//!   divided into allocation groups (AGs) of equal size.
//! - xfsprogs mkfs/xfs_mkfs.c, `calc_default_ag_geometry`: "For a single
//!   underlying storage device between 128MB and 4TB in size, just use 4
//!   AGs" (AG size `dblocks >> 2`, rounded up); smaller devices take
//!   `dblocks >> 2` at 64 MB and up, `>> 1` at 32 MB and up, one AG
//!   below; from 4 TB the AG size is the 1 TB maximum. The internal log
//!   goes at the start of the middle AG (`logagno = agcount / 2`,
//!   `logstart = XFS_AGB_TO_FSB(mp, logagno, XFS_PREALLOC_BLOCKS(mp))`).
//!   ext3/ext4 put their journal inode in a middle block group as well
//!   (mke2fs's `get_midpoint_journal_block`), so every block file system
//!   takes the same rule.
//! - The allocator (fs/xfs/xfs_bmap.c `xfs_bmap_btalloc`, fs/xfs/xfs_alloc.c
//!   `xfs_alloc_vextent`): free space is indexed per AG by block number
//!   and by length (the two free-space B+trees of XFS's on-disk format);
//!   an allocation looks for one free extent of the whole length, and
//!   failing that `xfs_bmapi_write` maps the range extent by extent, each
//!   allocation `XFS_ALLOCTYPE_START_BNO` ("near this block else
//!   anywhere"), moving on through the following AGs. No extent crosses
//!   the log, which the log AG's free-space records leave out.
//!
//! The model: the free space is a list of device ranges, the space before
//! and after the log at first. A new file takes the first range that
//! holds it whole (one extent); when none does and the free space as a
//! whole holds it, it takes the ranges in device order, the last one in
//! part (several extents, around the log). Simplifications: the AG
//! headers (a few blocks at each AG's start) and the inode and directory
//! blocks take no device space; AG boundaries split nothing (device
//! offsets run on across them); a freed file's ranges are merged with
//! their neighbours.

use super::behaviour::Behaviour;
use super::config::PAGE;
use super::layer::FileLayer;
use super::request::FsError;

const MIB: u64 = 1 << 20;
const TIB: u64 = 1 << 40;

/// The device offset where mkfs puts a log of `log_bytes` on a device of
/// `capacity` bytes: the start of the middle allocation group of
/// mkfs.xfs's default geometry for one device (module documentation),
/// moved back so the log fits, on a block boundary.
fn log_base(capacity: u64, log_bytes: u64) -> u64 {
    let blocks = capacity / PAGE;
    let bytes = blocks * PAGE;
    // one device: 4 AGs from 64 MB (the 128 MB-4 TB rule and, below
    // 128 MB, the small-device chain), 2 from 32 MB, else 1
    let shift = if bytes >= 64 * MIB {
        2
    } else if bytes >= 32 * MIB {
        1
    } else {
        0
    };
    let ag_blocks = if bytes >= 4 * TIB {
        TIB / PAGE
    } else {
        (blocks >> shift) + u64::from(blocks & ((1 << shift) - 1) != 0)
    };
    let agcount = blocks.div_ceil(ag_blocks.max(1));
    let start = (agcount / 2) * ag_blocks * PAGE;
    start.min(capacity.saturating_sub(log_bytes)) / PAGE * PAGE
}

/// The bytes of device space a file of `size` bytes (a block multiple)
/// needs: its data and, on ext3, one mapping block per
/// `map_bytes_per_meta_block` of it.
fn space_for(size: u64, map: Option<u64>) -> u64 {
    size + map.map_or(0, |m| size.div_ceil(m)) * PAGE
}

impl FileLayer {
    /// The log's offset and the free space of a new file system behaving
    /// as `be` on `capacity` bytes with a log of `log_bytes`: the log at
    /// the start of the middle allocation group, the space before and
    /// after it free (tmpfs: memory, no bound).
    pub(super) fn mkfs(be: &Behaviour, capacity: u64, log_bytes: u64) -> (u64, Vec<(u64, u64)>) {
        let log_base = log_base(capacity, log_bytes);
        if !be.block_device {
            return (log_base, vec![(0, u64::MAX >> 2)]);
        }
        let end = capacity / PAGE * PAGE;
        let log_end = (log_base + log_bytes).div_ceil(PAGE) * PAGE;
        let free = [
            (0, log_base.min(end)),
            (log_end, end.saturating_sub(log_end)),
        ]
        .into_iter()
        .filter(|r| r.1 > 0)
        .collect();
        (log_base, free)
    }

    /// Take `need` bytes of device space for a file placed in units of
    /// `unit` bytes: its extents (device offset, bytes) in file order.
    /// `size` is the file's size, for the error.
    pub(super) fn take_space(
        &mut self,
        need: u64,
        unit: u64,
        size: u64,
    ) -> Result<Vec<(u64, u64)>, FsError> {
        // an extent ends on a unit boundary of the device, or at its free
        // range's end
        let end_in = |b: u64, n: u64, want: u64| ((b + want).div_ceil(unit) * unit).min(b + n);
        // one extent: the first free range that holds the file whole
        if let Some(k) = self.free.iter().position(|&(_, n)| n >= need) {
            let (b, n) = self.free[k];
            let e = end_in(b, n, need);
            if e == b + n {
                self.free.remove(k);
            } else {
                self.free[k] = (e, b + n - e);
            }
            return Ok(vec![(b, e - b)]);
        }
        let free = self.free_bytes();
        if free < need {
            return Err(FsError::NoSpace {
                size,
                free,
                largest: self.largest_file(),
            });
        }
        // several: the free ranges in device order, the last in part
        let mut out = Vec::new();
        let mut left = need;
        while left > 0 {
            let (b, n) = self.free[0];
            if n <= left {
                self.free.remove(0);
                out.push((b, n));
                left -= n;
            } else {
                let e = end_in(b, n, left);
                if e == b + n {
                    self.free.remove(0);
                } else {
                    self.free[0] = (e, b + n - e);
                }
                out.push((b, e - b));
                left = 0;
            }
        }
        Ok(out)
    }

    /// Return `n` bytes at `base` to the free ranges, merged with their
    /// neighbours.
    pub(super) fn free_range(&mut self, base: u64, n: u64) {
        if n == 0 {
            return;
        }
        let k = self.free.partition_point(|&(b, _)| b < base);
        self.free.insert(k, (base, n));
        if k + 1 < self.free.len() && self.free[k].0 + self.free[k].1 == self.free[k + 1].0 {
            self.free[k].1 += self.free[k + 1].1;
            self.free.remove(k + 1);
        }
        if k > 0 && self.free[k - 1].0 + self.free[k - 1].1 == self.free[k].0 {
            self.free[k - 1].1 += self.free[k].1;
            self.free.remove(k);
        }
    }

    /// Bytes of device space free for files: the device less the log and
    /// the files' space (their data, ext3's mapping blocks, rounding to
    /// the placement unit). Deleted files' space is free again.
    pub fn free_bytes(&self) -> u64 {
        self.free.iter().map(|r| r.1).sum()
    }

    /// The largest file, in bytes, that can be created now (its data and
    /// mapping blocks in the free space, in as many extents as it takes).
    pub fn largest_file(&self) -> u64 {
        let free = self.free_bytes() / PAGE * PAGE;
        let map = self.be.map_bytes_per_meta_block;
        // the data blocks b with b + ceil(b / per) mapping blocks <= free
        let mut size = match map {
            None => free,
            Some(m) => {
                let per = m / PAGE;
                free / PAGE * per / (per + 1) * PAGE
            }
        };
        while space_for(size + PAGE, map) <= free {
            size += PAGE;
        }
        while size > 0 && space_for(size, map) > free {
            size -= PAGE;
        }
        size
    }

    /// The log's device range: (offset, bytes).
    pub fn log_range(&self) -> (u64, u64) {
        (self.log_base, self.cfg.log_region_bytes)
    }

    /// The extents of `file`: (device offset, bytes) in file order
    /// (empty once it is deleted).
    pub fn extents(&self, file: u32) -> &[(u64, u64)] {
        &self.files[file as usize].extents
    }
}
