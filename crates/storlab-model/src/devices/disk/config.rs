//! The disk's `[disk]` table: geometry, seek curve, rotation, cache,
//! queueing and the interface.

use serde::{Deserialize, Serialize};

use crate::units::Rw;

/// How the drive orders its queued commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiskScheduler {
    /// In arrival order.
    Fifo,
    /// Shortest positioning time (seek plus rotational wait) first, with a
    /// starvation bound.
    Sptf,
}

/// `[disk]`: a mechanical disk.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskConfig {
    /// Spindle speed.
    pub rpm: u32,
    /// Recording surfaces (heads).
    pub surfaces: u32,
    /// Recording zones.
    pub zones: u32,
    /// Sectors per track in the outermost zone.
    pub sectors_per_track_outer: u32,
    /// Sectors per track in the innermost zone.
    pub sectors_per_track_inner: u32,
    /// Bytes per sector.
    pub sector_bytes: u64,
    /// Single-track seek.
    pub seek_track_to_track_ns: u64,
    /// Average seek (mean over random start and end).
    pub seek_average_ns: u64,
    /// Full-stroke seek.
    pub seek_full_stroke_ns: u64,
    /// Extra settling for a write after a seek.
    pub write_settle_ns: u64,
    /// Switch to another surface of the same cylinder.
    pub head_switch_ns: u64,
    /// Controller overhead per command.
    pub command_ns: Rw,
    /// Interface rate (SATA), shared by both directions.
    pub link_bytes_per_s: u64,
    /// Commands queued in the drive (NCQ depth).
    pub queue_depth: u32,
    /// Queue ordering.
    pub scheduler: DiskScheduler,
    /// A host command older than this is served next regardless of
    /// position (a write cache's destages are never forced by age).
    pub starvation_ns: u64,
    /// Buffer size.
    pub cache_bytes: u64,
    /// Segments remembered for read hits.
    pub cache_segments: u32,
    /// Read-ahead after a read, per segment (0: off).
    pub read_ahead_bytes: u64,
    /// Acknowledge writes from the buffer (write-back).
    pub write_cache: bool,
    /// A write-through write (write cache off, or FUA) takes its data over
    /// the link when it is queued (`true`, the default: queued writes'
    /// data waits in the buffer, so a stream of them is written back to
    /// back), or only when the drive starts it on the media (`false`: the
    /// command's data moves after the arm is free for it, the write starts
    /// once it is in, and the previous command's completion and this
    /// transfer let the start sector pass the head: a sequential stream of
    /// uncached writes loses about a revolution per command). Boolean.
    #[serde(default = "yes")]
    pub write_through_staging: bool,
}

fn yes() -> bool {
    true
}
