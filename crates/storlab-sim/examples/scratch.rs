use storlab_model::config::PresetStore;
use storlab_model::host::Host;
use storlab_model::{Op, SystemConfig};
use storlab_sim::engine::{Engine, IoReq, IoSource, ThreadPlan};
use storlab_sim::stats::JobStats;

struct Rand {
    n: u64,
    bs: u64,
    cap: u64,
    x: u64,
    readpct: u64,
}
impl IoSource for Rand {
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
        let off = ((self.x >> 8) % (self.cap / self.bs)) * self.bs;
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
    let args: Vec<String> = std::env::args().collect();
    let preset = &args[1];
    let bs: u64 = args[2].parse().unwrap();
    let threads: u32 = args[3].parse().unwrap();
    let readpct: u64 = args[4].parse().unwrap();
    let n: u64 = args.get(5).map(|s| s.parse().unwrap()).unwrap_or(20000);
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &args[6..]).unwrap();
    let dev = cfg.build_device().unwrap();
    let cap = dev.capacity();
    let host = Host::new(cfg.host.clone(), dev, threads);
    let mut e = Engine::new(host);
    let plans = (0..threads)
        .map(|t| ThreadPlan {
            source: Box::new(Rand {
                n,
                bs,
                cap,
                x: 0x1234567 + t as u64 * 7919,
                readpct,
            }),
            iodepth: 1,
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
    let mut tot_ios = 0;
    for (i, name) in ["read", "write"].iter().enumerate() {
        let d = &all.dirs[i];
        if d.ios() == 0 {
            continue;
        }
        tot_ios += d.ios();
        let bw = d.io_bytes() as f64 / now; // bytes per ns = GB/s
        println!(
            "{preset} {name}: lat mean {:.2} us  bw {:.3} GB/s  ios {}",
            d.lat().mean() / 1000.0,
            bw,
            d.ios()
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
    println!(
        "   wall {:.3}s  {:.2} M IO/s, events {}",
        wall,
        tot_ios as f64 / wall / 1e6,
        e.events()
    );
}
