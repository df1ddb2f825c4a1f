//! The paging microbenchmark "thrash" (docs/spec/hybrid.md): allocate an array of
//! integers, touch every page once, then threads randomly update entries,
//! each thread in its own part of the array. Performance is updates per
//! second, reported against the same run on plain DRAM (no paging) in the
//! same process.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use serde::Serialize;
use storlab_model::Device;

use crate::{HybridConfig, HybridError, HybridMemory, HybridStats};

/// Most updating threads (each is an OS thread).
pub const MAX_THREADS: usize = 1024;

/// Shortest update phase timed without a warning, seconds. Starting and
/// joining the threads costs tens of microseconds and one preemption on a
/// busy host a few milliseconds (a scheduler time slice): a phase of 10 ms
/// or more keeps either under a few percent of it; a shorter one times the
/// host's scheduling more than the memory.
pub const MIN_PHASE_S: f64 = 0.010;

/// Widest spread of a phase's samples, (max - min) / mean, reported
/// without a warning.
pub const MAX_SPREAD: f64 = 0.25;

/// What to run.
#[derive(Clone, Debug)]
pub struct ThrashOptions {
    /// The region (and the array) in bytes.
    pub config: HybridConfig,
    /// Updating threads (the study: 16).
    pub threads: usize,
    /// Updates per thread.
    pub updates_per_thread: u64,
    /// Seed of the threads' random streams.
    pub seed: u64,
    /// Also run on plain DRAM for the relative figure (needs the whole
    /// array in RAM).
    pub baseline: bool,
    /// Update phases timed on each memory, one after another on the same
    /// array (the touch is done once): each is a sample, and the report
    /// gives their mean and spread (at least 1).
    pub repeats: u32,
}

/// One memory's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Phase {
    /// Seconds touching every page once.
    pub touch_s: f64,
    /// Mean seconds of an update phase.
    pub update_s: f64,
    /// Mean of the samples' updates per second.
    pub updates_per_s: f64,
    /// Each update phase's updates per second, in run order.
    pub samples: Vec<f64>,
    /// The slowest and the fastest sample.
    pub min_updates_per_s: f64,
    /// The fastest sample.
    pub max_updates_per_s: f64,
    /// (max - min) / mean of the samples (0 with one sample).
    pub spread: f64,
    /// The shortest update phase, seconds.
    pub shortest_s: f64,
}

impl Phase {
    fn new(touch_s: f64, update_s: &[f64], updates: u64) -> Phase {
        let samples: Vec<f64> = update_s
            .iter()
            .map(|s| updates as f64 / s.max(1e-9))
            .collect();
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let min = samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = samples.iter().copied().fold(0.0, f64::max);
        Phase {
            touch_s,
            update_s: update_s.iter().sum::<f64>() / n,
            updates_per_s: mean,
            min_updates_per_s: min,
            max_updates_per_s: max,
            spread: (max - min) / mean.max(f64::MIN_POSITIVE),
            shortest_s: update_s.iter().copied().fold(f64::INFINITY, f64::min),
            samples,
        }
    }

    /// Why this phase's figure is not to be trusted, if it is not: too
    /// short a phase, or samples spread too wide.
    fn warnings(&self, what: &str, out: &mut Vec<String>) {
        if self.shortest_s < MIN_PHASE_S {
            out.push(format!(
                "{what}: an update phase took {:.3} ms, under {:.0} ms: thread start-up and the host's scheduling weigh in it more than the memory (give more --updates)",
                self.shortest_s * 1e3,
                MIN_PHASE_S * 1e3
            ));
        }
        if self.spread > MAX_SPREAD {
            out.push(format!(
                "{what}: the {} samples spread {:.0} % around their mean ({:.0} to {:.0} updates/s), over {:.0} %",
                self.samples.len(),
                self.spread * 100.0,
                self.min_updates_per_s,
                self.max_updates_per_s,
                MAX_SPREAD * 100.0
            ));
        }
    }
}

/// The benchmark's result.
#[derive(Clone, Debug, Serialize)]
pub struct ThrashReport {
    /// Array bytes.
    pub size_bytes: u64,
    /// DRAM bound, bytes.
    pub dram_bytes: u64,
    /// Threads.
    pub threads: usize,
    /// Updates per thread.
    pub updates_per_thread: u64,
    /// Update phases timed on each memory.
    pub repeats: u32,
    /// On hybrid memory.
    pub hybrid: Phase,
    /// On plain DRAM, if run.
    pub dram: Option<Phase>,
    /// hybrid / DRAM updates per second (the means').
    pub relative: Option<f64>,
    /// The range of hybrid / DRAM the samples allow: the slowest hybrid
    /// sample over the fastest DRAM one, to the fastest over the slowest.
    pub relative_range: Option<[f64; 2]>,
    /// Why the figures are not to be trusted, if they are not (too short
    /// a run, samples spread too wide); empty when they are.
    pub warnings: Vec<String>,
    /// The region's counters after the run.
    pub stats: HybridStats,
    /// Sum of every entry after the run.
    pub checksum: u64,
    /// What it must be: one per page touched plus every update (no update
    /// lost, none invented).
    pub expected_checksum: u64,
}

/// Touch every page (a value in every page, so every page holds data: a
/// page of zeros would cost the device nothing); returns seconds.
fn touch(mem: &mut [u8]) -> f64 {
    let page = crate::page_size() as usize;
    let t0 = Instant::now();
    for off in (0..mem.len()).step_by(page) {
        mem[off..off + 8].copy_from_slice(&1u64.to_ne_bytes());
    }
    t0.elapsed().as_secs_f64()
}

/// Update phase `rep` (0-based): each thread updates `mult` times its
/// share of random entries of its own part; returns seconds.
fn update(mem: &mut [u8], o: &ThrashOptions, rep: u32, mult: u64) -> f64 {
    // whole u64 entries per thread
    let entries = mem.len() / 8;
    let per = (entries / o.threads).max(1) * 8;
    let t1 = Instant::now();
    std::thread::scope(|s| {
        for (t, part) in mem.chunks_mut(per).take(o.threads).enumerate() {
            // phase 0 keeps the streams of a single run; later phases draw
            // streams of their own
            let seed = o
                .seed
                .wrapping_add(t as u64)
                .wrapping_add(u64::from(rep).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let n = o.updates_per_thread.saturating_mul(mult);
            s.spawn(move || {
                let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
                let slots = part.len() / 8;
                for _ in 0..n {
                    let i = rng.gen_range(0..slots) * 8;
                    let v = u64::from_ne_bytes(part[i..i + 8].try_into().expect("8 bytes"));
                    part[i..i + 8].copy_from_slice(&(v + 1).to_ne_bytes());
                }
            });
        }
    });
    t1.elapsed().as_secs_f64()
}

/// Touch, then `o.repeats` timed update phases of `updates` in all.
fn exercise(mem: &mut [u8], o: &ThrashOptions, updates: u64) -> Phase {
    let t = touch(mem);
    let phases: Vec<f64> = (0..o.repeats).map(|rep| update(mem, o, rep, 1)).collect();
    Phase::new(t, &phases, updates)
}

/// Plain DRAM updates a hundred times faster than paging memory, so the
/// run's update count takes it too short a time to measure: each of its
/// phases does as many times the updates as make it last about twice
/// [`MIN_PHASE_S`] (found from untimed phases, growing the count until one
/// lasts that long, as a benchmark harness does; the threads start
/// once per phase, so their start-up is spread over all the updates).
fn exercise_dram(mem: &mut [u8], o: &ThrashOptions, updates: u64) -> Phase {
    let t = touch(mem);
    let mut mult = 1u64;
    loop {
        let took = update(mem, o, 0, mult);
        if took >= 2.0 * MIN_PHASE_S || mult >= 1 << 20 {
            break;
        }
        let want = (mult as f64 * 2.0 * MIN_PHASE_S / took.max(1e-9)).ceil() as u64;
        mult = want.max(mult * 2).min(1 << 20);
    }
    // A loaded host can slow the untimed phase (a preempted thread) and so
    // leave the count too small for the timed ones: when a timed phase
    // comes out under MIN_PHASE_S, grow the count by what it lacked and
    // time them again (a few times at most).
    let mut tries = 0;
    loop {
        let phases: Vec<f64> = (0..o.repeats)
            .map(|rep| update(mem, o, rep + 1, mult))
            .collect();
        let shortest = phases.iter().copied().fold(f64::INFINITY, f64::min);
        tries += 1;
        if shortest >= MIN_PHASE_S || mult >= 1 << 20 || tries >= 4 {
            return Phase::new(t, &phases, updates.saturating_mul(mult));
        }
        let want = (mult as f64 * 2.0 * MIN_PHASE_S / shortest.max(1e-9)).ceil() as u64;
        mult = want.max(mult * 2).min(1 << 20);
    }
}

fn checksum(mem: &[u8]) -> u64 {
    mem.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .sum()
}

/// Run thrash on a hybrid region over `device` (and on DRAM if asked).
pub fn run(o: &ThrashOptions, device: Box<dyn Device>) -> Result<ThrashReport, HybridError> {
    let bad = |field, message: String| HybridError::Config { field, message };
    if o.threads == 0 || o.threads > MAX_THREADS {
        return Err(bad(
            "threads",
            format!("{} is not 1 to {MAX_THREADS}", o.threads),
        ));
    }
    if o.repeats == 0 {
        return Err(bad(
            "repeats",
            "0 is not at least 1 (one update phase)".into(),
        ));
    }
    o.config.validate()?;
    if o.config.size_bytes < 8 * o.threads as u64 {
        return Err(bad(
            "size_bytes",
            format!(
                "{} bytes hold fewer than one 8-byte entry for each of the {} threads",
                o.config.size_bytes, o.threads
            ),
        ));
    }
    let total = o.threads as u64 * o.updates_per_thread;
    let mut mem = HybridMemory::new(&o.config, device)?;
    let hybrid = exercise(mem.as_mut_slice(), o, total);
    let sum = checksum(mem.as_slice());
    let stats = mem.stats();
    drop(mem);
    let dram = if o.baseline {
        let mut plain = vec![0u8; o.config.size_bytes as usize];
        Some(exercise_dram(&mut plain, o, total))
    } else {
        None
    };
    let mut warnings = Vec::new();
    hybrid.warnings("hybrid", &mut warnings);
    if let Some(d) = &dram {
        d.warnings("DRAM", &mut warnings);
    }
    Ok(ThrashReport {
        size_bytes: o.config.size_bytes,
        dram_bytes: o.config.dram_bytes,
        threads: o.threads,
        updates_per_thread: o.updates_per_thread,
        repeats: o.repeats,
        relative: dram
            .as_ref()
            .map(|d| hybrid.updates_per_s / d.updates_per_s),
        relative_range: dram.as_ref().map(|d| {
            [
                hybrid.min_updates_per_s / d.max_updates_per_s,
                hybrid.max_updates_per_s / d.min_updates_per_s.max(f64::MIN_POSITIVE),
            ]
        }),
        warnings,
        hybrid,
        dram,
        stats,
        checksum: sum,
        expected_checksum: o.config.size_bytes / crate::page_size() + total * u64::from(o.repeats),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_mean_and_spread_of_samples() {
        // 1000 updates in 0.1 s and in 0.2 s: 10,000 and 5,000 per second
        let p = Phase::new(0.0, &[0.1, 0.2], 1000);
        assert!((p.updates_per_s - 7500.0).abs() < 1e-6);
        assert!((p.spread - 5000.0 / 7500.0).abs() < 1e-9);
        assert_eq!(p.shortest_s, 0.1);
        let mut w = Vec::new();
        p.warnings("x", &mut w);
        assert_eq!(w.len(), 1, "spread too wide, long enough: {w:?}");
        let short = Phase::new(0.0, &[0.001, 0.001], 1000);
        let mut w = Vec::new();
        short.warnings("x", &mut w);
        assert_eq!(w.len(), 1, "too short, no spread: {w:?}");
        assert!(w[0].contains("1.000 ms"), "{w:?}");
    }
}
