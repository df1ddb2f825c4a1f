//! A mechanical disk: zoned geometry, a seek curve, rotational position
//! from time, media transfer with head and cylinder switches, an on-disk
//! cache (read-ahead segments, optional write-back), and command queueing
//! (NCQ) with first-come or shortest-positioning-time-first scheduling.
//!
//! Geometry. `zones` zones of equal cylinder count, sectors per track
//! falling linearly from `sectors_per_track_outer` (zone 0, the outer edge,
//! LBA 0) to `sectors_per_track_inner`; the cylinder count is the smallest
//! that holds the capacity. LBAs fill a track, then the next surface of the
//! cylinder, then the next cylinder.
//!
//! Seek curve. `seek(d) = a + b*sqrt(d) + c*d` for a move of `d >= 1`
//! cylinders (DiskSim's and Ruemmler-Wilkes's shape: the square root, the
//! arm accelerating and braking, dominates short seeks; the linear term,
//! the arm coasting, long ones). The three coefficients are fitted exactly
//! to the datasheet's track-to-track (`d = 1`), full-stroke (`d =
//! cylinders - 1`) and average seek; the average is the curve's mean over
//! uniformly random start and end cylinders, whose distance has density
//! `2(C - d)/C^2`, so `E[d] = C/3` and `E[sqrt d] = (8/15) sqrt C`. Writes
//! add `write_settle_ns` to a seek. A switch to another surface of the same
//! cylinder costs `head_switch_ns`.
//!
//! Rotation. The platter turns at `rpm` from angle 0 at time 0, so the
//! angle is `t mod revolution`, deterministic. Track `k`'s sector 0 is
//! skewed by the switch times before it (head switches and track-to-track
//! seeks), so a transfer that runs onto the next track pays only the switch
//! and no extra revolution, as on real drives.
//!
//! Cache. After a read the drive keeps reading ahead into the segment while
//! the arm is idle, up to `read_ahead_bytes`: a read that follows finds its
//! data there (or waits only for it to stream in, without a new seek). The
//! last `cache_segments` segments are remembered. With `write_cache` on, a
//! write is acknowledged once in the buffer and written later (its destage
//! queued with the host's commands); a flush waits for every destage.
//! A write-through write (cache off, or FUA) takes its data over the link
//! when queued, or with `write_through_staging` off only when the drive
//! starts it: the transfer then stands between one write's end and the
//! next one's start, and a sequential stream of them waits about a
//! revolution per command for its start sector to come round again.

pub mod config;
pub mod drive;
pub mod geometry;
mod queue;
mod sched;

// the folder's main items, so users name them by the layer
// (`storlab_model::devices::flash::SsdConfig`) rather than by file
pub use config::*;
pub use drive::*;
pub use geometry::*;
