//! NVMe interrupt coalescing (NVM Express 1.3, Set Features, Feature ID
//! 08h "Interrupt Coalescing"; docs/spec/today.md "A modern host"): the
//! controller holds back an interrupt vector's interrupt until the
//! aggregation threshold (plus one, the field is 0's based) of completion
//! entries are posted for it, or until the aggregation time (in 100 µs
//! units) has passed since the first one it holds, whichever comes first.
//! One interrupt then handles every held entry: the interrupt's entry and
//! exit once, each entry's own work (`host.interrupt_cqe_ns`) each.
//! Linux's nvme driver leaves the feature at its default (time 0: off).
//!
//! Linux gives each core its own queue pair and MSI-X vector; the host's
//! issuing threads each run on their own core, so each thread here has
//! its own vector.

use crate::device::Nanos;

use super::config::HostConfig;

/// What a posted completion entry does to its vector.
pub(super) enum Posted {
    /// Held; nothing to do yet.
    Held,
    /// The first entry held: the aggregation time runs out at this time
    /// (the timer's token payload is the second field).
    Timer(Nanos, u64),
    /// The threshold is reached: the interrupt fires for these requests.
    Fire(Vec<u32>),
}

/// The entries one vector holds back.
#[derive(Clone, Debug, Default)]
struct Vector {
    held: Vec<u32>,
    /// Bumped each time the vector fires, so a stale timer is ignored.
    generation: u32,
}

/// The controller's coalescing, per vector.
pub(super) struct Coalescing {
    entries: usize,
    time_ns: u64,
    vectors: Vec<Vector>,
}

impl Coalescing {
    /// The feature as configured, or `None` when it is off (a threshold of
    /// one entry or an aggregation time of 0).
    pub(super) fn new(cfg: &HostConfig, threads: usize) -> Option<Self> {
        (cfg.coalesce_entries > 1 && cfg.coalesce_time_100us > 0).then(|| Self {
            entries: cfg.coalesce_entries as usize,
            time_ns: cfg.coalesce_time_100us as u64 * 100_000,
            vectors: vec![Vector::default(); threads],
        })
    }

    /// Request `i`'s completion entry is posted at `now` on `thread`'s
    /// vector.
    pub(super) fn post(&mut self, now: Nanos, thread: usize, i: u32) -> Posted {
        let v = &mut self.vectors[thread];
        v.held.push(i);
        if v.held.len() >= self.entries {
            v.generation = v.generation.wrapping_add(1);
            return Posted::Fire(std::mem::take(&mut v.held));
        }
        if v.held.len() == 1 {
            let payload = ((v.generation as u64) << 24) | thread as u64;
            return Posted::Timer(now + self.time_ns, payload);
        }
        Posted::Held
    }

    /// The aggregation timer with `payload` ran out: the requests whose
    /// interrupt fires now (none when the vector fired since).
    pub(super) fn expire(&mut self, payload: u64) -> Vec<u32> {
        let thread = (payload & 0xff_ffff) as usize;
        let generation = (payload >> 24) as u32;
        let v = &mut self.vectors[thread];
        if v.generation != generation || v.held.is_empty() {
            return Vec::new();
        }
        v.generation = v.generation.wrapping_add(1);
        std::mem::take(&mut v.held)
    }
}
