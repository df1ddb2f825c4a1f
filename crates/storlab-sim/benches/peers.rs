//! Simulator speed on the peer devices: simulated IOs per second of wall
//! time (one core: the simulator is single-threaded), against the NVM array
//! in the same run.
//!
//! - `moneta-spin 4k randread 16 threads`: the baseline.
//! - `fusion-io 4k randwrite aged`: the 80 GB ioDrive preconditioned to
//!   steady state, so garbage collection runs throughout.
//! - `raid-disk 4k randread 16 threads`: four disks behind the controller
//!   cache, NCQ reordering on every member.
//!
//! Run: `cargo bench -p storlab-sim --bench peers`. After criterion's
//! report a summary prints each rate and its ratio to the baseline (the
//! target is within 3x).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use storlab_model::config::PresetStore;
use storlab_model::host::Host;
use storlab_model::{Op, SystemConfig};
use storlab_sim::engine::{Engine, IoReq, IoSource, ThreadPlan};
use storlab_sim::stats::JobStats;

/// Uniformly random aligned requests (xorshift; each thread its own seed).
struct Random {
    left: u64,
    x: u64,
    blocks: u64,
    bs: u64,
    op: Op,
}

impl IoSource for Random {
    fn next_io(&mut self) -> Option<IoReq> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        Some(IoReq {
            op: self.op,
            offset: (self.x % self.blocks) * self.bs,
            len: self.bs,
            at: None,
            fua: false,
            placement: None,
            quiesce: false,
        })
    }
}

struct Case {
    name: &'static str,
    preset: &'static str,
    overrides: &'static [&'static str],
    op: Op,
    threads: u32,
    iodepth: u32,
    ios_per_thread: u64,
}

const CASES: &[Case] = &[
    Case {
        name: "moneta-spin 4k randread 16 threads (baseline)",
        preset: "moneta-spin",
        overrides: &[],
        op: Op::Read,
        threads: 16,
        iodepth: 1,
        ios_per_thread: 20_000,
    },
    Case {
        name: "fusion-io 4k randwrite aged (GC active)",
        preset: "fusion-io",
        overrides: &["ssd.ftl.precondition=\"aged\""],
        op: Op::Write,
        threads: 16,
        iodepth: 4,
        ios_per_thread: 20_000,
    },
    Case {
        name: "raid-disk 4k randread 16 threads",
        preset: "raid-disk",
        overrides: &[],
        op: Op::Read,
        threads: 16,
        iodepth: 1,
        ios_per_thread: 20_000,
    },
];

static RATES: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());

fn engine(case: &Case) -> (Engine, u64) {
    let ov: Vec<String> = case.overrides.iter().map(|s| s.to_string()).collect();
    let (_, cfg) =
        SystemConfig::load(&PresetStore::default(), case.preset, &ov).expect("preset loads");
    let dev = cfg.build_device().expect("device builds");
    let cap = dev.capacity();
    (
        Engine::new(Host::new(cfg.host.clone(), dev, case.threads)),
        cap,
    )
}

/// One round of every thread's requests; returns the wall time.
fn round(e: &mut Engine, case: &Case, cap: u64, seed: u64) -> Duration {
    let plans = (0..case.threads)
        .map(|t| {
            ThreadPlan::new(
                Box::new(Random {
                    left: case.ios_per_thread,
                    x: 0x9E37_79B9_7F4A_7C15 ^ (seed * 1000 + t as u64 + 1),
                    blocks: cap / 4096,
                    bs: 4096,
                    op: case.op,
                }),
                case.iodepth,
                JobStats::new("bench", 0),
            )
        })
        .collect();
    let t0 = Instant::now();
    e.run_group(plans, 0, &mut |_, _| {}).expect("no stall");
    t0.elapsed()
}

fn main() {
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let mut g = c.benchmark_group("peers");
    for case in CASES {
        let (mut e, cap) = engine(case);
        let ios = case.threads as u64 * case.ios_per_thread;
        // warm the device into its working state (aged GC, disk queues)
        round(&mut e, case, cap, 0);
        let mut seed = 1;
        let mut total = (0u64, Duration::ZERO);
        g.throughput(Throughput::Elements(ios));
        g.bench_function(case.name, |b| {
            b.iter_custom(|iters| {
                let mut d = Duration::ZERO;
                for _ in 0..iters {
                    d += round(&mut e, case, cap, seed);
                    seed += 1;
                }
                total.0 += iters * ios;
                total.1 += d;
                d
            })
        });
        RATES
            .lock()
            .unwrap()
            .push((case.name, total.0 as f64 / total.1.as_secs_f64().max(1e-9)));
    }
    g.finish();
    c.final_summary();
    let rates = RATES.lock().unwrap();
    if let Some(&(_, base)) = rates.first() {
        println!("\nsimulated IO/s per wall second (one core), ratio to the NVM-array baseline (target: within 3x):");
        for &(name, r) in rates.iter() {
            println!(
                "  {name:<48} {:>7.3} M IO/s   {:.2}x of baseline",
                r / 1e6,
                r / base
            );
        }
    }
}
