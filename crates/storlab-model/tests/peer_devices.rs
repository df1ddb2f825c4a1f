//! The peer devices driven directly through the `Device` interface (no host
//! stack): disk mechanics and cache, RAID-0 splitting and token routing,
//! the controller cache, the SSD's buffer, FUA, flush, TRIM and garbage
//! collection, determinism, and configurations that must be refused.

mod common;
use common::{build, counter, Drv};

use std::cmp::Reverse;

use rand::{Rng, SeedableRng};
use storlab_model::config::{ConfigError, PresetStore};
use storlab_model::devices::disk::geometry::Geometry;
use storlab_model::devices::raid::Raid0;
use storlab_model::devices::tier::controller_cache::{CacheConfig, ControllerCache, DestageOrder};
use storlab_model::units::Rw;
use storlab_model::{Completion, Cx, DevRequest, Device, DeviceReport, Nanos, Op, SystemConfig};

impl Drv {
    fn submit(&mut self, at: Nanos, id: u64, op: Op, offset: u64, len: u64, fua: bool) {
        self.run_until(at);
        self.now = at;
        self.dev.submit(
            at,
            DevRequest {
                id,
                op,
                offset,
                len,
                fua,
                placement: None,
            },
            &mut self.cx,
        );
        self.drain();
    }
    fn finish(&mut self) {
        self.run_until(u64::MAX);
    }
    fn take(&mut self, id: u64) -> Completion {
        let i = self
            .done
            .iter()
            .position(|c| c.id == id)
            .expect("request completed");
        self.done.swap_remove(i)
    }
    /// Submit one request, run to its completion, return its latency.
    fn one(&mut self, id: u64, op: Op, offset: u64, len: u64, fua: bool) -> Nanos {
        let t = self.now;
        self.submit(t, id, op, offset, len, fua);
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
}

/// A small X25-E (512 MiB on 640 MiB of flash) so tests run fast.
const SMALL_SSD: &[&str] = &[
    "device.capacity_bytes=536870912",
    "ssd.nand.blocks_per_plane=64",
];

fn hdd_geometry() -> (Geometry, storlab_model::devices::disk::config::DiskConfig) {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), "hdd-7200", &[]).unwrap();
    let d = cfg.disk.clone().unwrap();
    (Geometry::new(&d, cfg.device.capacity_bytes).unwrap(), d)
}

#[test]
fn seek_curve_fits_the_datasheet() {
    let (g, d) = hdd_geometry();
    let c = g.cylinders();
    let rel = |a: u64, b: u64| (a as f64 - b as f64).abs() / b as f64;
    assert!(
        rel(g.seek_ns(1), d.seek_track_to_track_ns) < 0.01,
        "track-to-track {}",
        g.seek_ns(1)
    );
    assert!(
        rel(g.seek_ns(c - 1), d.seek_full_stroke_ns) < 0.01,
        "full stroke {}",
        g.seek_ns(c - 1)
    );
    // the average over random start and end cylinders
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let n = 200_000;
    let sum: u64 = (0..n)
        .map(|_| g.seek_ns(rng.gen_range(0..c).abs_diff(rng.gen_range(0..c))))
        .sum();
    let avg = sum / n;
    assert!(
        rel(avg, d.seek_average_ns) < 0.02,
        "average seek {avg} ns vs datasheet {}",
        d.seek_average_ns
    );
    // monotone, concave at first (square root) then linear
    let mut last = 0;
    for dd in [1, 2, 10, 100, 1000, 10_000, 100_000, c - 1] {
        let s = g.seek_ns(dd);
        assert!(s > last, "seek time must grow with distance");
        last = s;
    }
    let [a, b, cc] = g.seek_coefficients();
    assert!(a > 0.0 && b > 0.0 && cc >= 0.0);
}

#[test]
fn inconsistent_seek_figures_are_refused() {
    let e = SystemConfig::load(
        &PresetStore::default(),
        "hdd-7200",
        &["disk.seek_average_ns=14900000".into()],
    )
    .expect_err("an average near the full stroke cannot be fitted with a monotone curve");
    assert!(e.to_string().contains("monotone"), "{e}");
}

#[test]
fn rotation_and_streaming() {
    let (g, d) = hdd_geometry();
    let rev = g.revolution_ns();
    assert_eq!(rev, 8_333_334, "7200 rpm");
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
    for _ in 0..10_000 {
        let loc = g.locate(rng.gen_range(0..g.sectors()));
        let t = rng.gen_range(0..u64::MAX / 4);
        let w = g.rotational_wait(t, &loc);
        assert!(w < rev);
        assert_eq!(w, g.rotational_wait(t, &loc), "deterministic");
        assert_eq!(
            g.rotational_wait(t + w, &loc),
            0,
            "the sector is under the head after the wait"
        );
    }
    // one outer track takes one revolution; a cylinder adds its switches
    let spt = d.sectors_per_track_outer as u64;
    let (t, _) = g.stream(0, spt);
    assert!(t.abs_diff(rev) <= 1, "{t}");
    let s = d.surfaces as u64;
    let (t, _) = g.stream(0, spt * s);
    assert!(t.abs_diff(s * rev + (s - 1) * d.head_switch_ns) <= s, "{t}");
    // zones: the outer edge streams faster than the inner
    let outer = g.stream(0, 100_000).0;
    let inner = g.stream(g.sectors() - 200_000, 100_000).0;
    assert!(
        inner as f64 > outer as f64 * 1.6,
        "zoned recording: inner {inner} outer {outer}"
    );
    // LBAs are laid out in order: track, surface, cylinder
    let mut prev = g.locate(0);
    for lba in (1..g.sectors()).step_by(997_001) {
        let l = g.locate(lba);
        assert!((l.cyl, l.head) >= (prev.cyl, prev.head));
        prev = l;
    }
}

#[test]
fn disk_random_reads_cost_a_seek_and_half_a_turn() {
    let mut d = Drv::new(build("hdd-7200", &[]));
    let cap = d.dev.capacity();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let n = 2000;
    let mut sum = 0;
    for i in 0..n {
        let off = rng.gen_range(0..cap / 4096) * 4096;
        sum += d.one(i, Op::Read, off, 4096, false);
        // think a little so read-ahead never hides the next one
        d.now += 1_000_000;
    }
    let mean = sum as f64 / n as f64 / 1e6;
    // 8.2 ms average seek + 4.17 ms half a turn + 0.1 ms command + transfer
    assert!(
        (mean - 12.5).abs() < 0.6,
        "QD1 random 4 KB read {mean:.2} ms"
    );
}

#[test]
fn ncq_reordering_beats_fifo() {
    let run = |sched: &str| {
        let mut d = Drv::new(build("hdd-7200", &[&format!("disk.scheduler=\"{sched}\"")]));
        let cap = d.dev.capacity();
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(4);
        let mut next = 0;
        // keep 32 reads queued
        for _ in 0..32 {
            d.submit(
                0,
                next,
                Op::Read,
                rng.gen_range(0..cap / 4096) * 4096,
                4096,
                false,
            );
            next += 1;
        }
        while next < 2000 {
            let Some(&Reverse((at, _, _))) = d.heap.peek() else {
                break;
            };
            d.run_until(at);
            let finished = d.done.len();
            for _ in 0..finished {
                d.done.pop();
                d.submit(
                    at,
                    next,
                    Op::Read,
                    rng.gen_range(0..cap / 4096) * 4096,
                    4096,
                    false,
                );
                next += 1;
            }
        }
        d.finish();
        next as f64 / d.now as f64 * 1e9
    };
    let (fifo, sptf) = (run("fifo"), run("sptf"));
    assert!(
        sptf > 1.8 * fifo,
        "SPTF {sptf:.0} IOPS vs FIFO {fifo:.0} IOPS at QD32"
    );
}

#[test]
fn disk_read_ahead_streams_sequential_reads() {
    let mut d = Drv::new(build("hdd-7200", &[]));
    let n = 4000u64;
    for i in 0..n {
        d.one(i, Op::Read, i * 4096, 4096, false);
    }
    let r = d.dev.report(d.now);
    assert!(
        counter(&r, "read_ahead_hits") >= (n - 2) as f64,
        "read-ahead hits {}",
        counter(&r, "read_ahead_hits")
    );
    assert_eq!(counter(&r, "media_reads"), 1.0);
    // without read-ahead each read waits nearly a full turn
    let mut d2 = Drv::new(build(
        "hdd-7200",
        &["disk.read_ahead_bytes=0", "disk.cache_segments=1"],
    ));
    let mut slow = 0;
    for i in 0..200 {
        slow += d2.one(i, Op::Read, i * 4096 * 2, 4096, false);
    }
    assert!(
        slow / 200 > 4_000_000,
        "a missed revolution per read without read-ahead: {}",
        slow / 200
    );
}

#[test]
fn disk_write_cache_and_flush() {
    let mut d = Drv::new(build("hdd-7200", &[]));
    let w = d.one(1, Op::Write, 1 << 30, 4096, false);
    assert!(
        w < 200_000,
        "write-back acknowledges from the buffer: {w} ns"
    );
    let t = d.now;
    d.submit(t, 2, Op::Flush, 0, 0, false);
    d.finish();
    let f = d.take(2);
    assert!(
        f.at - t > 1_000_000,
        "the flush waits for the destage: {} ns",
        f.at - t
    );
    // a later read of the written block hits the buffer
    let r = d.one(3, Op::Read, 1 << 30, 4096, false);
    assert!(r < 200_000, "read after write hits the buffer: {r} ns");
    // write cache off: the write pays the mechanics
    let mut d2 = Drv::new(build("hdd-7200", &["disk.write_cache=false"]));
    let w2 = d2.one(1, Op::Write, 1 << 30, 4096, false);
    assert!(w2 > 1_000_000, "write-through write {w2} ns");
    // FUA bypasses the write cache
    let w3 = d.one(4, Op::Write, 3 << 30, 4096, true);
    assert!(w3 > 1_000_000, "FUA write {w3} ns");
}

/// 48 sequential 1 MB writes, `depth` queued at once, with the write
/// cache off: ns per command over the stream. Each completion's breakdown
/// covers its latency.
fn uncached_stream(set: &[&str], depth: u64) -> f64 {
    uncached_stream_limited(set, depth, 0)
}

/// [`uncached_stream`] behind a request-size limit of `limit` bytes (the
/// host's `max_request_bytes` layer; 0: none).
fn uncached_stream_limited(set: &[&str], depth: u64, limit: u64) -> f64 {
    let mut o = vec!["disk.write_cache=false"];
    o.extend_from_slice(set);
    let mut d = Drv::new(storlab_model::host::split::SplitRequests::wrap(
        build("hdd-7200", &o),
        limit,
    ));
    let (n, mb) = (48u64, 1u64 << 20);
    let mut sub = vec![0u64; n as usize];
    let mut next = 0;
    while next < depth {
        d.submit(0, next, Op::Write, next * mb, mb, false);
        next += 1;
    }
    let (mut done, mut last) = (0, 0);
    while done < n {
        let Some(&Reverse((at, _, _))) = d.heap.peek() else {
            panic!("stream stalled")
        };
        d.run_until(at);
        d.now = at;
        while let Some(c) = d.done.pop() {
            done += 1;
            last = last.max(c.at);
            assert_eq!(c.breakdown.total(), c.at - sub[c.id as usize], "{c:?}");
            if next < n {
                sub[next as usize] = c.at;
                d.submit(c.at, next, Op::Write, next * mb, mb, false);
                next += 1;
            }
        }
    }
    last as f64 / n as f64
}

#[test]
fn uncached_writes_staged_stream_unstaged_lose_a_revolution_each() {
    let (geo, _) = hdd_geometry();
    let rev = geo.revolution_ns() as f64;
    let staged = uncached_stream(&["disk.write_through_staging=true"], 16);
    let unstaged = uncached_stream(&["disk.write_through_staging=false"], 16);
    // staged: back to back at the outer zone's media rate (about 110 MB/s,
    // some 9.5 ms per MB)
    assert!(staged < 11e6, "staged {staged} ns per MB");
    // unstaged: each command waits for its start sector once more
    let lost = unstaged - staged;
    assert!(
        lost > 0.8 * rev && lost < 1.2 * rev,
        "lost {lost} ns per command against a revolution of {rev} ns"
    );
}

#[test]
fn a_request_limit_makes_each_half_of_an_unstaged_write_lose_its_revolution() {
    // Linux 2.6's 512 KB request limit cuts each 1 MB write in two; a drive
    // that takes a write-through write's data only when it starts it loses
    // a revolution per command it receives, so twice per 1 MB
    let (geo, _) = hdd_geometry();
    let rev = geo.revolution_ns() as f64;
    let off = ["disk.write_through_staging=false"];
    let whole = uncached_stream_limited(&off, 16, 0);
    let halves = uncached_stream_limited(&off, 16, 512 << 10);
    let lost = halves - whole;
    assert!(
        lost > 0.8 * rev && lost < 1.2 * rev,
        "512 KB commands lose {lost} ns more per MB than 1 MB ones (a revolution: {rev} ns)"
    );
    // staged, the cut costs (almost) nothing: the data is taken ahead
    let on = ["disk.write_through_staging=true"];
    let staged_whole = uncached_stream_limited(&on, 16, 0);
    let staged_halves = uncached_stream_limited(&on, 16, 512 << 10);
    assert!(
        (staged_halves - staged_whole).abs() < 0.1 * rev,
        "staged: {staged_whole} vs {staged_halves} ns per MB"
    );
}

/// A member that completes after a latency depending on its index, through
/// a wake-up token, and records what it was asked.
struct Member {
    idx: u64,
    cap: u64,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(u64, DevRequest)>>>,
    pending: Vec<(u64, DevRequest)>,
}

impl Device for Member {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        self.seen.lock().unwrap().push((self.idx, req));
        self.pending.push((now, req));
        // a large token, to check that routing keeps it intact
        cx.wake(
            now + 1000 * (self.idx + 1),
            (1 << 40) + self.pending.len() as u64 - 1,
        );
    }
    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let i = (token - (1 << 40)) as usize;
        let (t0, req) = self.pending[i];
        let mut bd = storlab_model::Breakdown::default();
        bd.add(storlab_model::Component::Media, now - t0);
        cx.complete(Completion {
            id: req.id,
            at: now,
            breakdown: bd,
            status: 0,
        });
    }
    fn capacity(&self) -> u64 {
        self.cap
    }
    fn report(&self, _now: Nanos) -> DeviceReport {
        DeviceReport {
            counters: vec![("member".into(), self.idx as f64)],
            ..Default::default()
        }
    }
}

#[test]
fn raid0_splits_contiguously_and_routes_tokens() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let members: Vec<Box<dyn Device>> = (0..3)
        .map(|i| {
            Box::new(Member {
                idx: i,
                cap: 10 << 20,
                seen: seen.clone(),
                pending: Vec::new(),
            }) as Box<dyn Device>
        })
        .collect();
    let stripe = 64 << 10;
    let raid = Raid0::new(members, stripe);
    assert_eq!(raid.capacity(), 30 << 20);
    assert_eq!(raid.token_bits(), 2);
    let mut d = Drv::new(Box::new(raid));
    // 1 MB from an unaligned offset: 17 stripes' worth over 3 members
    let off = 3 * stripe + 1000;
    let len = 1 << 20;
    let lat = d.one(7, Op::Read, off, len, false);
    assert_eq!(
        lat, 3000,
        "completes with its slowest member (member 2: 3 us)"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "one contiguous piece per member");
    let total: u64 = seen.iter().map(|(_, r)| r.len).sum();
    assert_eq!(total, len);
    // every byte maps where RAID-0 says
    for (m, r) in &seen {
        let n = 3u64;
        // the piece starts at the request's first byte on that member
        let first = if (off / stripe) % n == *m {
            off
        } else {
            (off / stripe + 1..).find(|s| s % n == *m).unwrap() * stripe
        };
        let s = first / stripe;
        assert_eq!(r.offset, (s / n) * stripe + first % stripe, "member {m}");
    }
    // a flush reaches every member
    d.one(8, Op::Flush, 0, 0, false);
    let r = d.dev.report(d.now);
    assert_eq!(
        counter(&r, "member2.member"),
        2.0,
        "member reports are prefixed"
    );
}

#[test]
fn controller_cache_buffers_writes_and_flushes() {
    let cfg = |bbu: bool| CacheConfig {
        link_bytes_per_s: 1_000_000_000,
        link_latency_ns: Rw {
            read: 500,
            write: 500,
        },
        command_ns: Rw {
            read: 10_000,
            write: 10_000,
        },
        cache_bytes: 1 << 20,
        line_bytes: 4096,
        write_back: true,
        battery_backed: bbu,
        destage_threshold: 0.5,
        destage_depth: 4,
        destage_max_bytes: 65536,
        destage_order: DestageOrder::Elevator,
        read_ahead_bytes: 0,
    };
    let (_, hc) = SystemConfig::load(
        &PresetStore::default(),
        "hdd-7200",
        &["disk.write_cache=false".into()],
    )
    .unwrap();
    let disk = || hc.build_device().unwrap();
    let mut d = Drv::new(Box::new(ControllerCache::new(cfg(false), disk())));
    let w = d.one(1, Op::Write, 4096 * 1000, 8192, false);
    assert!(w < 50_000, "write-back: {w} ns");
    let r = d.one(2, Op::Read, 4096 * 1000, 8192, false);
    assert!(r < 50_000, "read hit on dirty lines: {r} ns");
    let f = d.one(3, Op::Flush, 0, 0, false);
    assert!(
        f > 1_000_000,
        "flush waits for destaging without a battery: {f} ns"
    );
    let rep = d.dev.report(d.now);
    assert!(counter(&rep, "destages") >= 1.0);
    assert_eq!(counter(&rep, "dirty_lines_at_end"), 0.0);
    // a miss goes to the disk
    let m = d.one(4, Op::Read, 1 << 32, 4096, false);
    assert!(m > 1_000_000, "miss: {m} ns");
    // with a battery the flush is free
    let mut d = Drv::new(Box::new(ControllerCache::new(cfg(true), disk())));
    d.one(1, Op::Write, 0, 4096, false);
    assert!(d.one(2, Op::Flush, 0, 0, false) < 50_000);
    // more dirty data than the cache holds: writes wait, nothing is lost
    let mut d = Drv::new(Box::new(ControllerCache::new(cfg(false), disk())));
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
    for i in 0..600 {
        d.submit(
            d.now,
            i,
            Op::Write,
            rng.gen_range(0..1u64 << 26) * 4096,
            4096,
            false,
        );
    }
    d.finish();
    assert_eq!(d.done.len(), 600);
    let rep = d.dev.report(d.now);
    assert!(counter(&rep, "cache_write_waits") > 0.0);
}

/// Under a sustained random write stream a full write-back cache admits
/// writes at its destage rate. An elevator over the dirty lines shortens
/// the disk's seeks the more lines are dirty; oldest-first destaging hands
/// the disk the host's random order, so its rate does not grow with the
/// cache. Both lose nothing.
#[test]
fn oldest_first_destaging_does_not_gain_from_a_larger_cache() {
    let rate = |order: DestageOrder, cache_bytes: u64| {
        let cfg = CacheConfig {
            link_bytes_per_s: 1_000_000_000,
            link_latency_ns: Rw {
                read: 500,
                write: 500,
            },
            command_ns: Rw {
                read: 10_000,
                write: 10_000,
            },
            cache_bytes,
            line_bytes: 4096,
            write_back: true,
            battery_backed: false,
            destage_threshold: 0.5,
            destage_depth: 8,
            destage_max_bytes: 4096,
            destage_order: order,
            read_ahead_bytes: 0,
        };
        let (_, hc) = SystemConfig::load(
            &PresetStore::default(),
            "hdd-7200",
            &["disk.write_cache=false".into()],
        )
        .unwrap();
        let mut d = Drv::new(Box::new(ControllerCache::new(
            cfg,
            hc.build_device().unwrap(),
        )));
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        let lines = cache_bytes / 4096;
        // fill the cache, then time as many writes again as it holds lines
        let n = 3 * lines;
        let mut t0 = 0;
        for i in 0..n {
            if i == 2 * lines {
                t0 = d.now;
            }
            d.one(
                i,
                Op::Write,
                rng.gen_range(0..(16u64 << 30) / 4096) * 4096,
                4096,
                false,
            );
        }
        let r = lines as f64 / (d.now - t0) as f64 * 1e9;
        d.one(n, Op::Flush, 0, 0, false);
        assert_eq!(counter(&d.dev.report(d.now), "dirty_lines_at_end"), 0.0);
        r
    };
    let (small, large) = (1 << 20, 16 << 20);
    let (e1, e16) = (
        rate(DestageOrder::Elevator, small),
        rate(DestageOrder::Elevator, large),
    );
    let (o1, o16) = (
        rate(DestageOrder::Oldest, small),
        rate(DestageOrder::Oldest, large),
    );
    eprintln!("elevator {e1:.0} / {e16:.0}, oldest {o1:.0} / {o16:.0} per s at 1 / 16 MB");
    assert!(
        e16 > 1.1 * e1,
        "elevator: {e1:.0}/s at 1 MB, {e16:.0}/s at 16 MB"
    );
    assert!(
        (o16 - o1).abs() < 0.05 * o1,
        "oldest-first: {o1:.0}/s at 1 MB, {o16:.0}/s at 16 MB"
    );
    assert!(
        e16 > 1.1 * o16,
        "elevator {e16:.0}/s, oldest-first {o16:.0}/s"
    );
}

#[test]
fn ssd_buffer_fua_flush_trim() {
    let mut d = Drv::new(build("x25e", SMALL_SSD));
    // never-written units read as zeros without touching the flash
    let r0 = d.one(1, Op::Read, 0, 4096, false);
    assert!(r0 < 60_000, "unmapped read {r0}");
    assert_eq!(counter(&d.dev.report(d.now), "nand_reads"), 0.0);
    // a buffered write is acknowledged before its program (200 us)
    let w = d.one(2, Op::Write, 0, 4096, false);
    assert!(w < 100_000, "buffered write {w}");
    // ... and a read of it hits the buffer
    d.one(3, Op::Read, 0, 4096, false);
    assert_eq!(counter(&d.dev.report(d.now), "buffer_read_hits"), 1.0);
    // FUA waits for the program of its (padded) page
    let f = d.one(4, Op::Write, 8192, 4096, true);
    assert!(f > 200_000, "FUA write {f}");
    // flush after buffered writes waits for their programs
    for i in 0..10 {
        d.one(10 + i, Op::Write, (100 + i) * 4096, 4096, false);
    }
    let fl = d.one(30, Op::Flush, 0, 0, false);
    assert!(fl > 200_000, "flush {fl}");
    // the data is on flash now: a read pays the NAND
    let r1 = d.one(31, Op::Read, 100 * 4096, 4096, false);
    assert!(r1 > 45_000, "NAND read {r1}");
    // trim: the unit reads as unmapped again
    d.one(32, Op::Trim, 100 * 4096, 4096, false);
    let before = counter(&d.dev.report(d.now), "nand_reads");
    d.one(33, Op::Read, 100 * 4096, 4096, false);
    assert_eq!(counter(&d.dev.report(d.now), "nand_reads"), before);
    assert_eq!(counter(&d.dev.report(d.now), "trimmed_units"), 1.0);
    assert!(d.dev.volatile_write_cache());
}

/// Random 4 KB writes keeping 32 outstanding; returns IOPS and the report.
fn random_writes(dev: Box<dyn Device>, n: u64, seed: u64) -> (f64, DeviceReport, Vec<Completion>) {
    let mut d = Drv::new(dev);
    let units = d.dev.capacity() / 4096;
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut next = 0;
    let mut all = Vec::new();
    for _ in 0..32 {
        d.submit(
            0,
            next,
            Op::Write,
            rng.gen_range(0..units) * 4096,
            4096,
            false,
        );
        next += 1;
    }
    while next < n {
        let Some(&Reverse((at, _, _))) = d.heap.peek() else {
            break;
        };
        d.run_until(at);
        let k = d.done.len();
        all.append(&mut d.done);
        for _ in 0..k {
            d.submit(
                at,
                next,
                Op::Write,
                rng.gen_range(0..units) * 4096,
                4096,
                false,
            );
            next += 1;
        }
    }
    d.finish();
    all.append(&mut d.done);
    let last = all.iter().map(|c| c.at).max().unwrap_or(1);
    (
        all.len() as f64 / last as f64 * 1e9,
        d.dev.report(d.now),
        all,
    )
}

#[test]
fn ssd_steady_state_collects_garbage() {
    let fresh = random_writes(build("x25e", SMALL_SSD), 40_000, 6);
    let mut set = SMALL_SSD.to_vec();
    set.push("ssd.ftl.precondition=\"aged\"");
    let aged = random_writes(build("x25e", &set), 40_000, 6);
    let (wa_f, wa_a) = (
        counter(&fresh.1, "write_amplification"),
        counter(&aged.1, "write_amplification"),
    );
    assert_eq!(counter(&fresh.1, "gc_runs"), 0.0, "fresh: no garbage yet");
    assert!(
        counter(&aged.1, "gc_runs") > 0.0 && wa_a > 1.3,
        "aged: GC runs, WA {wa_a}"
    );
    assert!(
        aged.0 < 0.8 * fresh.0,
        "steady state is slower: {:.0} vs {:.0} IOPS",
        aged.0,
        fresh.0
    );
    let w = aged.1.wear.clone().expect("erase counts");
    assert!(
        w.max >= 1 && w.mean > 0.0 && w.max as f64 >= w.mean,
        "{w:?}"
    );
    assert!(wa_f <= 1.0 + 1e-9);
}

#[test]
fn ssd_is_deterministic() {
    let mut set = SMALL_SSD.to_vec();
    set.push("ssd.ftl.precondition=\"aged\"");
    set.push("ssd.ftl.gc_policy=\"random\"");
    let a = random_writes(build("x25e", &set), 5_000, 9);
    let b = random_writes(build("x25e", &set), 5_000, 9);
    assert_eq!(
        a.2, b.2,
        "same configuration and requests, same completions"
    );
    assert_eq!(a.1, b.1);
}

#[test]
fn unknown_keys_and_impossible_sizes_are_refused() {
    let store = PresetStore::default();
    for (preset, key) in [
        ("x25e", "ssd.nand.plains_per_die=2"),
        ("x25e", "ssd.ftl.gc=\"greedy\""),
        ("x25e", "ssd.write_cache=1"),
        ("hdd-7200", "disk.rpms=7200"),
        ("raid-ssd", "raid.stripe=65536"),
        ("raid-disk", "raid.controller.cache=1"),
    ] {
        let e = SystemConfig::load(&store, preset, &[key.to_string()]).expect_err("refused");
        assert!(matches!(e, ConfigError::Schema { .. }), "{key}: {e}");
        let field = key.split('=').next().unwrap().rsplit('.').next().unwrap();
        assert!(
            e.to_string().contains(field),
            "{key}: the message names the key: {e}"
        );
    }
    // more capacity than the flash holds with its spare blocks
    let e = SystemConfig::load(
        &store,
        "x25e",
        &["device.capacity_bytes=42949672960".into()],
    )
    .expect_err("too full");
    assert!(e.to_string().contains("garbage collection"), "{e}");
    // wrong number of page types for the cell
    let e = SystemConfig::load(&store, "x25e", &["ssd.nand.cell=\"mlc\"".into()])
        .expect_err("MLC needs 2 timings");
    assert!(e.to_string().contains("page types"), "{e}");
    // a RAID member that does not exist
    let (_, cfg) = SystemConfig::load(
        &store,
        "raid-ssd",
        &["raid.members=[\"x25e\", \"nope\"]".into()],
    )
    .unwrap();
    assert!(cfg.build_device().is_err());
}

#[test]
fn mlc_pages_alternate_fast_and_slow() {
    // an MLC variant of the small X25-E: LSB pages program in 200 us, MSB in 800 us
    let mut set = SMALL_SSD.to_vec();
    // the controller's own cost removed so the NAND is the bottleneck
    set.extend([
        "ssd.command_ns={read=0, write=0}",
        "ssd.unit_ns={read=0, write=0}",
    ]);
    let slc = random_writes(build("x25e", &set), 20_000, 2);
    set.extend([
        "ssd.nand.cell=\"mlc\"",
        "ssd.nand.read_ns=[25000, 50000]",
        "ssd.nand.program_ns=[200000, 800000]",
    ]);
    let mlc = random_writes(build("x25e", &set), 20_000, 2);
    assert!(
        mlc.0 < slc.0,
        "slow MSB programs lower write IOPS: MLC {:.0} vs SLC {:.0}",
        mlc.0,
        slc.0
    );
}
