//! One request sequence, two faces: the simulator's engine (virtual time,
//! with a host stack that costs nothing) and the emulator's wall-clock
//! driver run on a virtual clock (`storlab_emu::replay_virtual`) must give
//! the same completion time for every request, on real device models. No
//! timing logic is written twice: both call the same `Device`.

use std::cell::RefCell;
use std::rc::Rc;

use storlab_model::config::PresetStore;
use storlab_model::host::Host;
use storlab_model::{DevRequest, Nanos, Op, SystemConfig};
use storlab_sim::engine::{Engine, IoReq, IoSource, ThreadPlan};
use storlab_sim::stats::JobStats;

/// Replays fixed arrivals (open loop) and records each latency.
struct Arrivals {
    reqs: Vec<(Nanos, DevRequest)>,
    next: usize,
    latency: Rc<RefCell<Vec<Nanos>>>,
}

impl IoSource for Arrivals {
    fn next_io(&mut self) -> Option<IoReq> {
        let (t, r) = *self.reqs.get(self.next)?;
        self.next += 1;
        Some(IoReq {
            op: r.op,
            offset: r.offset,
            len: r.len,
            at: Some(t),
            fua: r.fua,
            placement: r.placement,
            quiesce: false,
        })
    }
    fn completed(&mut self, id: u64, latency_ns: u64) {
        self.latency.borrow_mut()[id as usize] = latency_ns;
    }
}

fn arrivals(n: usize, seed: u64, cap: u64) -> Vec<(Nanos, DevRequest)> {
    let mut x = seed | 1;
    let mut t = 1000;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += 1 + x % 20_000;
            let op = match x % 13 {
                0 => Op::Flush,
                n if n % 3 == 0 => Op::Write,
                _ => Op::Read,
            };
            let len = if op == Op::Flush { 0 } else { 4096 << (x % 5) };
            let offset = ((x >> 16) % ((cap - len) / 4096)) * 4096;
            (t, DevRequest::new(i as u64, op, offset, len))
        })
        .collect()
}

fn simulate(preset: &str, reqs: &[(Nanos, DevRequest)]) -> Vec<Nanos> {
    let store = PresetStore::default();
    let (_, cfg) = SystemConfig::load(&store, preset, &[]).expect("preset");
    let (_, null) = SystemConfig::load(&store, "null", &[]).expect("null preset");
    let host = Host::new(null.host, cfg.build_device().expect("device"), 1);
    let mut engine = Engine::new(host);
    let latency = Rc::new(RefCell::new(vec![0; reqs.len()]));
    let plan = ThreadPlan::new(
        Box::new(Arrivals {
            reqs: reqs.to_vec(),
            next: 0,
            latency: latency.clone(),
        }),
        1 << 20,
        JobStats::new("conformance", 0),
    );
    engine
        .run_group(vec![plan], 0, &mut |_, _| {})
        .expect("runs");
    let lat = latency.borrow();
    reqs.iter()
        .zip(lat.iter())
        .map(|((t, _), l)| t + l)
        .collect()
}

fn emulate(preset: &str, reqs: &[(Nanos, DevRequest)]) -> Vec<Nanos> {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &[]).expect("preset");
    let mut done = storlab_emu::replay_virtual(cfg.build_device().expect("device"), reqs);
    done.sort();
    assert_eq!(
        done.len(),
        reqs.len(),
        "{preset}: every request completes in the emulator"
    );
    done.into_iter().map(|(_, t)| t).collect()
}

#[test]
fn simulator_and_emulator_give_the_same_completion_times() {
    for (preset, seed) in [
        ("moneta-spin", 1),
        ("moneta-2q", 2),
        ("haste-pcm", 3),
        ("fusion-io", 4),
        ("raid-disk", 5),
        ("micron-psd", 6),
    ] {
        let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &[]).expect("preset");
        let cap = cfg.build_device().expect("device").capacity();
        let reqs = arrivals(1500, seed, cap.min(1 << 34));
        let sim = simulate(preset, &reqs);
        let emu = emulate(preset, &reqs);
        let differ: Vec<_> = sim
            .iter()
            .zip(&emu)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .take(5)
            .collect();
        assert!(
            differ.is_empty(),
            "{preset}: simulator and emulator disagree (request, sim, emu): {differ:?}"
        );
    }
}
