//! The emulator's driver with a virtual clock gives the same completion
//! times as a plain in-order simulation of the same device.
//!
//! The reference below is a textbook discrete-event loop written
//! independently of `storlab_emu::driver`: wake-ups and arrivals in time
//! order, a wake-up due at the same time as an arrival first (the
//! convention the driver documents), ties among wake-ups by the order they
//! were asked for.

use std::collections::{BTreeMap, VecDeque};

use proptest::prelude::*;
use storlab_emu::replay_virtual;
use storlab_model::devices::fixed::FixedLatency;
use storlab_model::{Breakdown, Completion, Cx, DevRequest, Device, DeviceReport, Nanos, Op};

/// `channels` FIFO servers; a request goes to channel `offset/4096 %
/// channels`, takes `base + len * per_byte` ns, and completes when its
/// service ends (a wake-up); a flush completes when every channel is idle.
#[derive(Clone)]
struct Channels {
    base: Nanos,
    per_byte: Nanos,
    queues: Vec<VecDeque<(u64, Nanos)>>,
    busy: Vec<bool>,
    flushes: Vec<u64>,
}

impl Channels {
    fn new(n: usize, base: Nanos, per_byte: Nanos) -> Self {
        Channels {
            base,
            per_byte,
            queues: vec![VecDeque::new(); n],
            busy: vec![false; n],
            flushes: Vec::new(),
        }
    }
    fn start(&mut self, ch: usize, now: Nanos, cx: &mut Cx) {
        if let Some(&(_, service)) = self.queues[ch].front() {
            self.busy[ch] = true;
            cx.wake(now + service, ch as u64);
        } else {
            self.busy[ch] = false;
        }
    }
    fn settle_flushes(&mut self, now: Nanos, cx: &mut Cx) {
        if self.busy.iter().all(|b| !b) {
            for id in self.flushes.drain(..) {
                cx.complete(Completion {
                    id,
                    at: now,
                    breakdown: Breakdown::default(),
                    status: 0,
                });
            }
        }
    }
}

impl Device for Channels {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        if req.op == Op::Flush {
            self.flushes.push(req.id);
            self.settle_flushes(now, cx);
            return;
        }
        let ch = (req.offset / 4096) as usize % self.queues.len();
        self.queues[ch].push_back((req.id, self.base + req.len * self.per_byte));
        if !self.busy[ch] {
            self.start(ch, now, cx);
        }
    }
    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let ch = token as usize;
        if let Some((id, _)) = self.queues[ch].pop_front() {
            cx.complete(Completion {
                id,
                at: now,
                breakdown: Breakdown::default(),
                status: 0,
            });
        }
        self.start(ch, now, cx);
        self.settle_flushes(now, cx);
    }
    fn capacity(&self) -> u64 {
        1 << 40
    }
    fn report(&self, _now: Nanos) -> DeviceReport {
        DeviceReport::default()
    }
}

/// The reference: completion time of every request.
fn simulate(mut dev: Box<dyn Device>, arrivals: &[(Nanos, DevRequest)]) -> BTreeMap<u64, Nanos> {
    let mut done = BTreeMap::new();
    // (time, order asked, token)
    let mut wakeups: Vec<(Nanos, u64, u64)> = Vec::new();
    let mut asked = 0u64;
    let mut cx = Cx::default();
    let mut i = 0;
    let mut now = 0;
    loop {
        let next_wake = wakeups.iter().min().copied();
        let next_arrival = arrivals.get(i).map(|a| a.0.max(now));
        match (next_wake, next_arrival) {
            (Some(w), Some(a)) if w.0 <= a => {
                wakeups.retain(|x| *x != w);
                now = w.0;
                dev.on_event(now, w.2, &mut cx);
            }
            (_, Some(a)) => {
                now = a;
                dev.submit(now, arrivals[i].1, &mut cx);
                i += 1;
            }
            (Some(w), None) => {
                wakeups.retain(|x| *x != w);
                now = w.0;
                dev.on_event(now, w.2, &mut cx);
            }
            (None, None) => break,
        }
        for (t, token) in cx.wakeups.drain(..) {
            asked += 1;
            wakeups.push((t, asked, token));
        }
        for c in cx.completions.drain(..) {
            done.insert(c.id, c.at);
        }
    }
    done
}

fn compare(make: impl Fn() -> Box<dyn Device>, arrivals: &[(Nanos, DevRequest)]) {
    let expected = simulate(make(), arrivals);
    let got = replay_virtual(make(), arrivals);
    assert_eq!(got.len(), arrivals.len(), "every request completes once");
    let got_map: BTreeMap<u64, Nanos> = got.iter().copied().collect();
    assert_eq!(got_map, expected);
    // Released in deadline order.
    assert!(got.windows(2).all(|w| w[0].1 <= w[1].1));
}

#[test]
fn fixed_latency_matches() {
    let arrivals: Vec<_> = (0..100)
        .map(|i| (i * 777, DevRequest::new(i, Op::Read, i * 4096, 4096)))
        .collect();
    compare(|| Box::new(FixedLatency::new(20_000, 1 << 30)), &arrivals);
}

#[test]
fn queueing_device_with_wakeups_and_flushes_matches() {
    let mut arrivals = Vec::new();
    for i in 0..200u64 {
        let op = match i % 10 {
            9 => Op::Flush,
            3 | 5 => Op::Write,
            _ => Op::Read,
        };
        arrivals.push((
            i / 3 * 1_000,
            DevRequest::new(i, op, (i * 7919 % 64) * 4096, 4096 * (1 + i % 4)),
        ));
    }
    compare(|| Box::new(Channels::new(4, 5_000, 2)), &arrivals);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_sequences_match(
        gaps in prop::collection::vec(0u64..20_000, 1..150),
        ops in prop::collection::vec((0u8..4, 0u64..32, 1u64..16), 150),
        channels in 1usize..6,
    ) {
        let mut t = 0;
        let arrivals: Vec<_> = gaps.iter().enumerate().map(|(i, g)| {
            t += g;
            let (op, block, len) = ops[i];
            let op = [Op::Read, Op::Write, Op::Trim, Op::Flush][op as usize];
            (t, DevRequest::new(i as u64, op, block * 4096, if op == Op::Flush { 0 } else { len * 512 }))
        }).collect();
        compare(|| Box::new(Channels::new(channels, 3_000, 1)), &arrivals);
    }
}
