//! The paging microbenchmark "thrash" (hybrid.md): allocate an array of
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
}

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Phase {
    /// Seconds touching every page once.
    pub touch_s: f64,
    /// Seconds updating.
    pub update_s: f64,
    /// Updates per second.
    pub updates_per_s: f64,
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
    /// On hybrid memory.
    pub hybrid: Phase,
    /// On plain DRAM, if run.
    pub dram: Option<Phase>,
    /// hybrid / DRAM updates per second.
    pub relative: Option<f64>,
    /// The region's counters after the run.
    pub stats: HybridStats,
    /// Sum of every entry after the run.
    pub checksum: u64,
    /// What it must be: one per page touched plus every update (no update
    /// lost, none invented).
    pub expected_checksum: u64,
}

/// Touch every page, then update at random; returns (touch s, update s).
fn exercise(mem: &mut [u8], o: &ThrashOptions) -> (f64, f64) {
    let page = crate::page_size() as usize;
    let t0 = Instant::now();
    // a value in every page, so every page holds data (a page of zeros
    // would cost the device nothing)
    for off in (0..mem.len()).step_by(page) {
        mem[off..off + 8].copy_from_slice(&1u64.to_ne_bytes());
    }
    let touch = t0.elapsed().as_secs_f64();
    // whole u64 entries per thread
    let entries = mem.len() / 8;
    let per = (entries / o.threads).max(1) * 8;
    let t1 = Instant::now();
    std::thread::scope(|s| {
        for (t, part) in mem.chunks_mut(per).take(o.threads).enumerate() {
            let seed = o.seed.wrapping_add(t as u64);
            let n = o.updates_per_thread;
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
    (touch, t1.elapsed().as_secs_f64())
}

fn checksum(mem: &[u8]) -> u64 {
    mem.chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .sum()
}

/// Run thrash on a hybrid region over `device` (and on DRAM if asked).
pub fn run(o: &ThrashOptions, device: Box<dyn Device>) -> Result<ThrashReport, HybridError> {
    if o.threads == 0 || o.threads > MAX_THREADS || o.config.size_bytes < 8 * o.threads as u64 {
        return Err(HybridError::Config {
            field: "threads",
            message: format!(
                "{} threads: 1 to {MAX_THREADS}, each with at least one 8-byte entry of the {} bytes",
                o.threads, o.config.size_bytes
            ),
        });
    }
    let total = o.threads as u64 * o.updates_per_thread;
    let phase = |touch: f64, update: f64| Phase {
        touch_s: touch,
        update_s: update,
        updates_per_s: total as f64 / update.max(1e-9),
    };
    let mut mem = HybridMemory::new(&o.config, device)?;
    let (touch, update) = exercise(mem.as_mut_slice(), o);
    let hybrid = phase(touch, update);
    let sum = checksum(mem.as_slice());
    let stats = mem.stats();
    drop(mem);
    let dram = if o.baseline {
        let mut plain = vec![0u8; o.config.size_bytes as usize];
        let (touch, update) = exercise(&mut plain, o);
        Some(phase(touch, update))
    } else {
        None
    };
    Ok(ThrashReport {
        size_bytes: o.config.size_bytes,
        dram_bytes: o.config.dram_bytes,
        threads: o.threads,
        updates_per_thread: o.updates_per_thread,
        relative: dram
            .as_ref()
            .map(|d| hybrid.updates_per_s / d.updates_per_s),
        hybrid,
        dram,
        stats,
        checksum: sum,
        expected_checksum: o.config.size_bytes / crate::page_size() + total,
    })
}
