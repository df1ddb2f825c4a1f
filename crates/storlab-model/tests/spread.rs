//! Latency spread of the media (issue section 5): NAND read retries and
//! program-time variation drawn from a generator seeded from the
//! configuration (`ssd.ftl.seed`), off at zero; and the Moneta power
//! model's PCM background (idle dies, active rows while the array works).

mod common;
use common::{build, counter, Drv};

use std::cmp::Reverse;

use storlab_model::config::PresetStore;
use storlab_model::{DevRequest, DeviceReport, Nanos, Op, SystemConfig};

impl Drv {
    /// Submit one request at `now`, run to its completion, return its
    /// latency.
    fn one(&mut self, id: u64, op: Op, offset: u64, len: u64) -> Nanos {
        let t = self.now;
        self.dev
            .submit(t, DevRequest::new(id, op, offset, len), &mut self.cx);
        self.drain();
        loop {
            if let Some(i) = self.done.iter().position(|c| c.id == id) {
                let c = self.done.swap_remove(i);
                assert_eq!(
                    c.breakdown.total(),
                    c.at - t,
                    "breakdown covers the latency"
                );
                self.run_until(c.at);
                self.now = c.at;
                return c.at - t;
            }
            let Some(&Reverse((at, _, _))) = self.heap.peek() else {
                panic!("request {id} never completed")
            };
            self.run_until(at);
        }
    }
    /// Let the device go idle until `t`.
    fn idle_until(&mut self, t: Nanos) {
        self.run_until(t);
        self.now = self.now.max(t);
    }
}

/// The sata-ssd preset made small (same timings) and written whole, so
/// every read goes to the NAND.
const SMALL_SATA: &[&str] = &[
    "device.capacity_bytes=4000000000",
    "ssd.nand.blocks_per_plane=32",
    "ssd.ftl.precondition=\"full\"",
];

/// QD1 4 KB reads at scattered offsets; their latencies and the device.
fn reads(set: &[&str], n: u64) -> (Vec<Nanos>, Drv) {
    let mut ov: Vec<&str> = SMALL_SATA.to_vec();
    ov.extend_from_slice(set);
    let mut d = Drv::new(build("sata-ssd", &ov));
    let lats = (0..n)
        // a stride coprime with the unit count visits scattered pages
        .map(|i| d.one(i, Op::Read, (i * 7919 % 900_000) * 4096, 4096))
        .collect();
    (lats, d)
}

#[test]
fn read_retries_add_whole_reads_at_the_configured_rate() {
    let (off, _) = reads(
        &[
            "ssd.nand.read_retry_probability=0.0",
            "ssd.nand.program_spread=0.0",
        ],
        400,
    );
    let base = off[0];
    assert!(
        off.iter().all(|&l| l == base),
        "no spread without retries (one read time for both MLC page types)"
    );
    let (on, d) = reads(&["ssd.nand.read_retry_probability=0.2"], 2000);
    let slow = on.iter().filter(|&&l| l > base).count() as f64 / on.len() as f64;
    assert!(
        (0.15..0.25).contains(&slow),
        "{slow} of reads retried, configured 0.2"
    );
    assert!(
        on.iter().all(|&l| l >= base),
        "a retry never shortens a read"
    );
    // a retry costs at least one more array read (50 us)
    let min_slow = on.iter().copied().filter(|&l| l > base).min().unwrap();
    assert!(min_slow >= base + 50_000, "{min_slow} against {base}");
    let retries = counter(&d.dev.report(d.now), "read_retries");
    let expect = 2000.0 * (0.2 / 0.8); // geometric mean retries per read, p/(1-p)
    assert!(
        (retries - expect).abs() < 0.25 * expect,
        "{retries} retries, about {expect} expected"
    );
}

#[test]
fn the_spread_is_the_same_for_a_seed_and_differs_between_seeds() {
    let (a, _) = reads(&[], 500);
    let (b, _) = reads(&[], 500);
    assert_eq!(a, b, "same configuration and seed, same latencies");
    let (c, _) = reads(&["ssd.ftl.seed=2"], 500);
    assert_ne!(a, c, "another seed draws other retries");
    assert!(
        a.iter().any(|&l| l != a[0]),
        "sata-ssd as shipped has a spread"
    );
}

/// QD1 4 KB writes on micron-psd (no write buffer: each waits for its
/// program).
fn psd_writes(set: &[&str], n: u64) -> Vec<Nanos> {
    let mut d = Drv::new(build("micron-psd", set));
    (0..n)
        .map(|i| d.one(i, Op::Write, (i * 7919 % 100_000) * 4096, 4096))
        .collect()
}

#[test]
fn program_time_varies_within_its_band_around_the_typical_time() {
    let off = psd_writes(&["ssd.nand.program_spread=0.0"], 300);
    assert!(off.iter().all(|&l| l == off[0]), "no spread when off");
    let on = psd_writes(&["ssd.nand.program_spread=0.1"], 2000);
    let typ = 120_000i64; // micron-psd program_ns
    let base = off[0] as i64;
    let dev: Vec<i64> = on.iter().map(|&l| l as i64 - base).collect();
    assert!(dev.iter().all(|&x| x.abs() <= typ / 10 + 1), "within +-10%");
    let mean = dev.iter().sum::<i64>() as f64 / dev.len() as f64;
    assert!(mean.abs() < 0.01 * typ as f64, "mean stays typical: {mean}");
    let spread = dev.iter().max().unwrap() - dev.iter().min().unwrap();
    assert!(spread > typ / 10, "the band is used: {spread}");
}

#[test]
fn spread_parameters_out_of_range_are_refused_by_name() {
    for (set, field) in [
        (
            "ssd.nand.read_retry_probability=1.5",
            "ssd.nand.read_retry_probability",
        ),
        ("ssd.nand.read_retry_max=65", "ssd.nand.read_retry_max"),
        ("ssd.nand.program_spread=2.0", "ssd.nand.program_spread"),
    ] {
        let err = SystemConfig::load(&PresetStore::default(), "sata-ssd", &[set.to_string()])
            .err()
            .unwrap_or_else(|| panic!("{set} accepted"));
        assert!(err.to_string().contains(field), "{set}: {err}");
    }
}

fn media_background(r: &DeviceReport) -> f64 {
    r.power
        .iter()
        .find(|p| p.component == "media_background")
        .expect("media background reported")
        .avg_w
}

#[test]
fn pcm_background_is_idle_dies_plus_rows_while_the_array_works() {
    // idle: every die at its clock-off power
    let mut d = Drv::new(build("moneta-base", &[]));
    d.one(1, Op::Write, 0, 8192);
    d.idle_until(1_000_000_000);
    let idle = media_background(&d.dev.report(d.now));
    let dies = 4.0 * 128.0;
    assert!((idle / (dies * 264e-6) - 1.0).abs() < 0.01, "idle {idle} W");
    // busy: back-to-back row writes; longer array writes draw more
    let busy = |write_ns: &str| {
        let mut d = Drv::new(build("moneta-base", &[write_ns]));
        for i in 0..2000 {
            d.one(i, Op::Write, i * 8192 * 4, 8192);
        }
        media_background(&d.dev.report(d.now))
    };
    let (short, long) = (busy("media.write_ns=150"), busy("media.write_ns=1500"));
    assert!(short > idle, "{short} > {idle}");
    assert!(long > short, "{long} > {short}");
}
