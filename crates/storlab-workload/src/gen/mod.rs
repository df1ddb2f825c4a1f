//! Deterministic per-thread IO generation with fio's semantics.
//!
//! One [`JobThread`] is one of a job's `numjobs` threads. It owns a few
//! independent random streams (direction, offset, block size,
//! sequential-or-random, distribution), all derived from the job's seed, the
//! job's index and the thread's index, so identical inputs give identical
//! sequences and changing one option (say `bs`) does not reshuffle the
//! offsets. [`JobThread::next_io`] does no allocation and its memory does not
//! grow with the number of IOs: fio's random map (every block once per pass)
//! is a keyed permutation evaluated on the fly (see `perm`), not a bitmap.
//!
//! # What follows fio and what is approximated
//!
//! Followed: the region `[offset + thread × offset_increment, + size)`;
//! per-direction sequential positions, and fio's passes: a walk that
//! reaches the region's end, or a random map that has handed out every
//! block, ends the pass, and the next pass (every
//! direction back at the start) comes only for `time_based`, an explicit
//! `io_size` not yet done, or `loops`, so `rw=read:8k bs=4k size=64k` is six
//! reads, as in fio's own iolog; a random job's sequential IO at the
//! device's end takes a random block; `zonemode=strided` (`zonesize`
//! bytes in a zone of `zonerange`, sequential walks wrapping inside it,
//! then `zonerange + zoneskip` on, back to the job's offset at the device's
//! end, `size` still the byte budget);
//! `rw=<seq>:<hole>` holes, `rw=<seq>:-<step>` backward walks (checked
//! against fio's own iolog, quirks included) and `rw=<rand>:<n>` with
//! `rw_sequencer`
//! (fio's counter: `n - 1` sequential, or identical, IOs before each random
//! one); random offsets aligned to `blockalign` (default: the direction's
//! minimum block size) with fio's block count; `percentage_random`;
//! `bsrange` (uniform, then a multiple of the minimum when it is a power of
//! two) and `bssplit` (fio's cumulative scan over entries sorted by weight);
//! `trimwrite`/`randtrimwrite` (a trim, then a write of the same range;
//! only the writes count toward `io_size` and `number_ios`); `fsync=N` and
//! `fdatasync=N` (a sync op after every N writes, never twice in a row, not
//! after the job's last write, only for jobs that write); `end_fsync`;
//! stopping at `io_size` (default `size`) × `loops` bytes or `number_ios`
//! IOs, whichever comes first, and never for `time_based` jobs (as fio, which
//! ignores both limits when time based); zipf, pareto and normal built as
//! fio builds them (see `dist`), with the random map off for them.
//!
//! Approximated: a last zone that would not fit on the device whole is
//! skipped (fio uses what fits), and holes inside zones follow storlab's
//! rules, not fio's; `loops` together with an explicit `io_size` on a walk
//! with holes (storlab runs passes until `io_size × loops` is done; fio
//! counts the two differently); a block size range that does not fit before
//! the region's end takes the largest size that does (fio redraws);
//! the read/write choice of `rw`/`randrw` is drawn per IO
//! (fio keeps a direction for short runs, with the same long-run ratio);
//! the random map is a permutation of `blockalign`-sized blocks, so with
//! mixed block sizes an IO may overlap blocks a later IO of the same pass
//! also touches (fio marks every block an IO covers), and sequential IOs of
//! `percentage_random` do not consume blocks of the map; `zoned` zones are
//! uniform inside (fio uses the random map within a zone); the hash that
//! scatters zipf/pareto/normal ranks is storlab's, so the hot blocks are
//! not fio's block numbers. Sync ops are [`IoOp::Fsync`] / [`IoOp::Fdatasync`]
//! with offset and length 0.

mod bs;
mod dist;
mod io;
mod perm;
mod rng;
mod thread;

pub use io::{IoDesc, IoOp};
pub use thread::JobThread;
