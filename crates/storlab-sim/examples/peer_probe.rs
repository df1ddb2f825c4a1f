// temporary probe (peers work); removed before hand-off
use storlab_model::config::PresetStore;
use storlab_model::host::Host;
use storlab_model::{Op, SystemConfig};
use storlab_sim::engine::{Engine, IoReq, IoSource, ThreadPlan};
use storlab_sim::stats::JobStats;

struct Src {
    n: u64,
    bs: u64,
    span: u64,
    x: u64,
    readpct: u64,
    seq: bool,
    pos: u64,
    base: u64,
}
impl IoSource for Src {
    fn next_io(&mut self) -> Option<IoReq> {
        if self.n == 0 {
            return None;
        }
        self.n -= 1;
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        let op = if self.x % 100 < self.readpct {
            Op::Read
        } else {
            Op::Write
        };
        let off = if self.seq {
            let o = self.pos;
            self.pos = (self.pos + self.bs) % self.span;
            self.base + o
        } else {
            self.base + ((self.x >> 8) % (self.span / self.bs)) * self.bs
        };
        Some(IoReq {
            op,
            offset: off,
            len: self.bs,
            at: None,
            fua: false,
        })
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let preset = &a[1];
    let bs: u64 = a[2].parse().unwrap();
    let threads: u32 = a[3].parse().unwrap();
    let qd: u32 = a[4].parse().unwrap();
    let readpct: u64 = a[5].parse().unwrap();
    let seq = a[6] == "seq";
    let n: u64 = a[7].parse().unwrap();
    let span_frac: f64 = a[8].parse().unwrap();
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &a[9..]).unwrap();
    let t0 = std::time::Instant::now();
    let dev = cfg.build_device().unwrap();
    let tb = t0.elapsed().as_secs_f64();
    let cap = dev.capacity();
    let span = ((cap as f64 * span_frac) as u64 / bs / threads as u64).max(1) * bs;
    let host = Host::new(cfg.host.clone(), dev, threads);
    let mut e = Engine::new(host);
    let plans = (0..threads)
        .map(|t| ThreadPlan {
            source: Box::new(Src {
                n,
                bs,
                span,
                x: 0x1234567 + t as u64 * 7919,
                readpct,
                seq,
                pos: 0,
                base: t as u64 * span,
            }),
            iodepth: qd,
            runtime_ns: None,
            time_based: false,
            ramp_ns: 0,
            thinktime_ns: 0,
            start_delay_ns: 0,
            rate_bytes_per_s: [None; 3],
            rate_iops: [None; 3],
            stats: JobStats::new("x", 0),
        })
        .collect();
    let t0 = std::time::Instant::now();
    let stats = e.run_group(plans, 0, &mut |_, _| {}).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let mut all = stats[0].clone();
    for s in &stats[1..] {
        all.merge(s);
    }
    let now = e.now() as f64;
    let mut tot = 0;
    for (i, name) in ["read", "write"].iter().enumerate() {
        let d = &all.dirs[i];
        if d.ios() == 0 {
            continue;
        }
        tot += d.ios();
        println!(
            "{preset} {name}: lat mean {:.2} us p99 {:.1} us  bw {:.1} MB/s  iops {:.0}",
            d.lat().mean() / 1000.0,
            d.lat().percentile(99.0) as f64 / 1000.0,
            d.io_bytes() as f64 / now * 1000.0,
            d.ios() as f64 / now * 1e9
        );
        let mb = d.mean_breakdown_ns();
        let mut line = String::new();
        for c in storlab_model::breakdown::COMPONENTS {
            let v = mb[c as usize];
            if v > 0.5 {
                line += &format!("{}={:.2} ", c.name(), v / 1000.0);
            }
        }
        println!("   {line}");
    }
    let rep = e.host().device().report(e.now());
    let mut l = String::new();
    for (k, v) in &rep.counters {
        if *v != 0.0 {
            l += &format!("{k}={v:.3} ");
        }
    }
    println!("   counters: {l}");
    if let Some(w) = rep.wear {
        println!("   wear: {} max {} mean {:.3}", w.unit, w.max, w.mean);
    }
    for u in &rep.utilisation {
        if u.busy > 0.01 {
            print!("{}={:.2} ", u.resource, u.busy);
        }
    }
    println!();
    println!(
        "   build {:.2}s wall {:.3}s  {:.2} M IO/s, events {}",
        tb,
        wall,
        tot as f64 / wall / 1e6,
        e.events()
    );
}
