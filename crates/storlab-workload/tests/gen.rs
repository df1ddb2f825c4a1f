//! The IO generator: determinism, fio's offset, size, mix and stop rules.

mod common;

use std::collections::HashMap;

use common::no_env;
use storlab_workload::fio::{parse_job_str_with_env, JobSpec};
use storlab_workload::gen::{IoDesc, IoOp, JobThread};

const GIB: u64 = 1 << 30;

fn job(body: &str) -> JobSpec {
    let text = format!("[t]\n{}\n", body.replace(' ', "\n"));
    match parse_job_str_with_env("gen.fio", &text, &no_env) {
        Ok(mut jf) => jf.jobs.remove(0),
        Err(e) => panic!("{e}"),
    }
}

fn thread(body: &str, capacity: u64) -> JobThread {
    JobThread::new(&job(body), 0, capacity, 1).unwrap()
}

fn take(t: &mut JobThread, n: usize) -> Vec<IoDesc> {
    (0..n).map_while(|_| t.next_io()).collect()
}

fn drain(t: &mut JobThread) -> Vec<IoDesc> {
    let mut v = Vec::new();
    while let Some(io) = t.next_io() {
        v.push(io);
        assert!(v.len() < 10_000_000, "job never ends");
    }
    v
}

fn offsets(v: &[IoDesc]) -> Vec<u64> {
    v.iter().map(|io| io.offset).collect()
}

#[test]
fn same_inputs_same_sequence_and_threads_differ() {
    let spec = job("rw=randrw bssplit=4k/50:64k/50 size=64m");
    let a = drain(&mut JobThread::new(&spec, 0, GIB, 7).unwrap());
    let b = drain(&mut JobThread::new(&spec, 0, GIB, 7).unwrap());
    assert_eq!(a, b);
    let c = drain(&mut JobThread::new(&spec, 1, GIB, 7).unwrap());
    assert_ne!(a, c);
    // randrepeat=1 (fio's default): the run seed does not matter.
    let d = drain(&mut JobThread::new(&spec, 0, GIB, 8).unwrap());
    assert_eq!(a, d);
    // randrepeat=0 without randseed: the run seed does.
    let spec0 = job("rw=randrw bssplit=4k/50:64k/50 size=64m randrepeat=0");
    let e = drain(&mut JobThread::new(&spec0, 0, GIB, 7).unwrap());
    let f = drain(&mut JobThread::new(&spec0, 0, GIB, 8).unwrap());
    assert_ne!(e, f);
    // randseed decides.
    let s1 = drain(&mut thread("rw=randread size=1m randseed=5", GIB));
    let s2 = drain(&mut thread("rw=randread size=1m randseed=6", GIB));
    assert_ne!(s1, s2);
    // A different job index gives a different stream.
    let mut spec2 = spec.clone();
    spec2.job_index = 1;
    assert_ne!(a, drain(&mut JobThread::new(&spec2, 0, GIB, 7).unwrap()));
}

#[test]
fn sequential_walks_the_region_and_wraps() {
    let mut t = thread("rw=read bs=4k size=16k io_size=40k offset=1m", GIB);
    let v = drain(&mut t);
    let k = 4096u64;
    let base = 1 << 20;
    assert_eq!(
        offsets(&v),
        [0, 1, 2, 3, 0, 1, 2, 3, 0, 1].map(|i| base + i * k)
    );
    assert!(v.iter().all(|io| io.op == IoOp::Read && io.len == k));
    assert_eq!(t.bytes_issued(), 40 * 1024);
    assert_eq!(t.region(), (base, 16 * 1024));
}

#[test]
fn sequential_holes() {
    // One pass: the walk leaves the region after 16 KiB of writes.
    let v = drain(&mut thread("rw=write:4k bs=4k size=32k", GIB));
    assert_eq!(offsets(&v), [0, 8192, 16384, 24576]);
    // An explicit io_size starts passes over until it is done.
    let v = drain(&mut thread("rw=write:4k bs=4k size=32k io_size=32k", GIB));
    assert_eq!(offsets(&v), [0, 8192, 16384, 24576, 0, 8192, 16384, 24576]);
}

#[test]
fn region_clipped_to_capacity_and_percentages() {
    let t = thread("rw=read size=10g", GIB);
    assert_eq!(t.region(), (0, GIB));
    let t = thread("rw=read size=25% offset=50%", GIB);
    assert_eq!(t.region(), (GIB / 2, GIB / 4));
    let spec = job("rw=read size=1m offset_increment=10m numjobs=3");
    let r: Vec<(u64, u64)> = (0..3)
        .map(|i| JobThread::new(&spec, i, GIB, 0).unwrap().region())
        .collect();
    assert_eq!(r, [(0, 1 << 20), (10 << 20, 1 << 20), (20 << 20, 1 << 20)]);
    assert!(JobThread::new(&job("rw=read offset=2g"), 0, GIB, 0).is_err());
    assert!(JobThread::new(&job("rw=read bs=1m size=4k"), 0, GIB, 0).is_err());
    // No size: the whole device from the offset.
    assert_eq!(
        thread("rw=read offset=1m", GIB).region(),
        (1 << 20, GIB - (1 << 20))
    );
}

#[test]
fn random_map_covers_every_block_once_per_pass() {
    for (bs, size) in [(4096u64, 1u64 << 20), (512, 777 * 512), (8192, 8192)] {
        let blocks = size / bs;
        let mut t = thread(
            &format!("rw=randread bs={bs} size={size} io_size={}", 3 * size),
            GIB,
        );
        let v = drain(&mut t);
        assert_eq!(v.len() as u64, 3 * blocks);
        let mut passes = Vec::new();
        for pass in v.chunks(blocks as usize) {
            let mut seen = vec![false; blocks as usize];
            for io in pass {
                assert_eq!(io.offset % bs, 0);
                let b = (io.offset / bs) as usize;
                assert!(!seen[b], "block {b} twice in one pass");
                seen[b] = true;
            }
            passes.push(offsets(pass));
        }
        if blocks > 2 {
            assert_ne!(passes[0], passes[1], "passes repeat the same order");
            let sorted: Vec<u64> = (0..blocks).map(|b| b * bs).collect();
            assert_ne!(passes[0], sorted, "the random map is sequential");
        }
    }
}

#[test]
fn randrw_shares_one_map() {
    let v = drain(&mut thread("rw=randrw bs=4k size=1m", GIB));
    assert_eq!(v.len(), 256);
    let mut o = offsets(&v);
    o.sort_unstable();
    o.dedup();
    assert_eq!(o.len(), 256);
}

#[test]
fn norandommap_repeats_blocks() {
    let v = drain(&mut thread("rw=randread bs=4k size=1m norandommap", GIB));
    assert_eq!(v.len(), 256);
    let mut o = offsets(&v);
    o.sort_unstable();
    o.dedup();
    // Birthday bound: 256 draws from 256 blocks leave ~1/e unvisited.
    assert!(o.len() < 200, "{} distinct", o.len());
}

#[test]
fn blockalign_places_random_offsets() {
    let v = take(
        &mut thread("rw=randread bs=8k blockalign=2k size=1m", GIB),
        5000,
    );
    assert!(v
        .iter()
        .all(|io| io.offset % 2048 == 0 && io.offset + io.len <= 1 << 20));
    assert!(v.iter().any(|io| io.offset % 8192 != 0));
}

#[test]
fn mix_ratio_follows_rwmixread() {
    for (opt, want) in [("rwmixread=70", 0.70), ("rwmixwrite=10", 0.90), ("", 0.50)] {
        let mut t = thread(
            &format!("rw=randrw {opt} size=1g time_based runtime=1"),
            GIB,
        );
        let n = 200_000;
        let reads = take(&mut t, n)
            .iter()
            .filter(|io| io.op == IoOp::Read)
            .count();
        let frac = reads as f64 / n as f64;
        assert!((frac - want).abs() < 0.005, "{opt}: {frac}");
    }
    let v = take(&mut thread("rw=rw rwmixread=0 size=1m", GIB), 100);
    assert!(v.iter().all(|io| io.op == IoOp::Write));
}

#[test]
fn sequential_mix_keeps_a_position_per_direction() {
    let v = take(&mut thread("rw=rw bs=4k size=1m", GIB), 1000);
    for op in [IoOp::Read, IoOp::Write] {
        let o: Vec<u64> = v
            .iter()
            .filter(|io| io.op == op)
            .map(|io| io.offset)
            .collect();
        assert!(
            o.windows(2).all(|w| w[1] == w[0] + 4096 || w[1] == 0),
            "{op:?}"
        );
    }
}

#[test]
fn bssplit_weights() {
    let mut t = thread(
        "rw=randread bssplit=4k/50:64k/30:1m/20 size=1g time_based runtime=1",
        GIB,
    );
    let n = 200_000;
    let mut count: HashMap<u64, usize> = HashMap::new();
    for io in take(&mut t, n) {
        *count.entry(io.len).or_default() += 1;
    }
    for (bs, pct) in [(4096u64, 0.5), (65536, 0.3), (1 << 20, 0.2)] {
        let frac = count[&bs] as f64 / n as f64;
        assert!((frac - pct).abs() < 0.005, "{bs}: {frac}");
    }
    assert_eq!(count.len(), 3);
    // Entries without a percentage share the rest; a total below 100 goes
    // to the entry with the largest weight (fio's scan order).
    let mut t = thread(
        "rw=randread bssplit=4k/10:8k/20 size=1g time_based runtime=1",
        GIB,
    );
    let v = take(&mut t, n);
    let small = v.iter().filter(|io| io.len == 4096).count() as f64 / n as f64;
    assert!((small - 0.10).abs() < 0.01, "{small}");
}

#[test]
fn per_direction_block_sizes() {
    let v = take(&mut thread("rw=randrw bs=4k,64k size=1g", GIB), 10_000);
    assert!(v
        .iter()
        .all(|io| io.len == if io.op == IoOp::Read { 4096 } else { 65536 }));
}

#[test]
fn bsrange_sizes_are_multiples_of_the_minimum() {
    let v = take(
        &mut thread("rw=randread bsrange=4k-16k size=1g", GIB),
        50_000,
    );
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for io in &v {
        assert!(
            io.len % 4096 == 0 && (4096..=16384).contains(&io.len),
            "{}",
            io.len
        );
        *seen.entry(io.len).or_default() += 1;
    }
    // fio draws uniformly in [min, max] and rounds down: 4k, 8k and 12k each
    // about a third, 16k only for an exact draw.
    for k in [4096u64, 8192, 12288] {
        let f = seen[&k] as f64 / v.len() as f64;
        assert!((f - 1.0 / 3.0).abs() < 0.02, "{k}: {f}");
    }
    let v = take(
        &mut thread("rw=randread bsrange=1000-3000 size=1g", GIB),
        1000,
    );
    assert!(
        v.iter().any(|io| io.len % 1000 != 0),
        "non power of two minimum: no rounding"
    );
}

/// Fraction of hits that land on the hottest 10 % of blocks.
fn top_decile_share(v: &[IoDesc], bs: u64) -> f64 {
    let mut hits: HashMap<u64, usize> = HashMap::new();
    for io in v {
        *hits.entry(io.offset / bs).or_default() += 1;
    }
    let mut counts: Vec<usize> = hits.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let blocks = 10_000usize; // 40 MiB of 4 KiB blocks
    counts.iter().take(blocks / 10).sum::<usize>() as f64 / v.len() as f64
}

#[test]
fn distributions_skew_as_expected() {
    let base = "rw=randread bs=4k size=40000k time_based runtime=1";
    let n = 200_000;
    let uniform = top_decile_share(
        &take(&mut thread(&format!("{base} norandommap"), GIB), n),
        4096,
    );
    let zipf = top_decile_share(
        &take(
            &mut thread(&format!("{base} random_distribution=zipf:1.2"), GIB),
            n,
        ),
        4096,
    );
    let mild = top_decile_share(
        &take(
            &mut thread(&format!("{base} random_distribution=zipf:0.5"), GIB),
            n,
        ),
        4096,
    );
    let pareto = top_decile_share(
        &take(
            &mut thread(&format!("{base} random_distribution=pareto:0.2"), GIB),
            n,
        ),
        4096,
    );
    let normal = top_decile_share(
        &take(
            &mut thread(&format!("{base} random_distribution=normal:5"), GIB),
            n,
        ),
        4096,
    );
    eprintln!("uniform {uniform} zipf {zipf} mild {mild} pareto {pareto} normal {normal}");
    assert!(uniform < 0.2, "uniform {uniform}");
    assert!(zipf > 0.8, "zipf:1.2 {zipf}");
    assert!(mild > uniform + 0.1 && mild < zipf, "zipf:0.5 {mild}");
    assert!(pareto > 0.5, "pareto {pareto}");
    assert!(normal > uniform + 0.1, "normal {normal}");
}

#[test]
fn zoned_distribution_puts_accesses_in_zones() {
    let mut t = thread(
        "rw=randread bs=4k size=400m random_distribution=zoned:60/10:30/20:8/30:2/40 time_based runtime=1",
        GIB,
    );
    let n = 200_000;
    let v = take(&mut t, n);
    let size = 400u64 << 20;
    let zone = |lo: u64, hi: u64| {
        v.iter()
            .filter(|io| io.offset >= size * lo / 100 && io.offset < size * hi / 100)
            .count() as f64
            / n as f64
    };
    for (lo, hi, want) in [
        (0, 10, 0.60),
        (10, 30, 0.30),
        (30, 60, 0.08),
        (60, 100, 0.02),
    ] {
        let got = zone(lo, hi);
        assert!((got - want).abs() < 0.01, "zone {lo}-{hi}%: {got}");
    }
    // zoned_abs, per direction (reads only in the first 1 MiB).
    let mut t = thread(
        "rw=randrw bs=4k size=400m random_distribution=zoned_abs:100/1m,50/1m:50/10m time_based runtime=1",
        GIB,
    );
    for io in take(&mut t, 10_000) {
        let limit = if io.op == IoOp::Read {
            1 << 20
        } else {
            11 << 20
        };
        assert!(io.offset < limit, "{io:?}");
    }
}

#[test]
fn percentage_random_and_seq_nr() {
    let v = take(
        &mut thread("rw=randread percentage_random=0 bs=4k size=1m", GIB),
        10,
    );
    assert_eq!(offsets(&v), (0..10).map(|i| i * 4096).collect::<Vec<_>>());
    let v = take(
        &mut thread("rw=randread percentage_random=50 bs=4k size=1g", GIB),
        100_000,
    );
    let follows = v
        .windows(2)
        .filter(|w| w[1].offset == w[0].offset + 4096)
        .count();
    let frac = follows as f64 / v.len() as f64;
    assert!((frac - 0.5).abs() < 0.02, "{frac}");
    // randread:4 -> a random offset every 4th IO, sequential in between
    // (fio's counter starts with 3 sequential IOs).
    let v = take(&mut thread("rw=randread:4 bs=4k size=1g", GIB), 40);
    for (i, w) in v.windows(2).enumerate() {
        let sequential = w[1].offset == w[0].offset + 4096;
        if (i + 2) % 4 != 0 {
            assert!(sequential, "IO {} should follow IO {}", i + 1, i);
        }
    }
    let v = take(
        &mut thread("rw=randread:3 rw_sequencer=identical bs=4k size=1g", GIB),
        30,
    );
    for (i, w) in v.windows(2).enumerate() {
        if (i + 2) % 3 != 0 && i >= 2 {
            assert_eq!(w[1].offset, w[0].offset, "IO {}", i + 1);
        }
    }
}

#[test]
fn fsync_cadence_matches_fio() {
    // fio 3.33 with number_ios=20 fsync=4: 20 writes and 4 fsyncs (none
    // after the last write, the job being done).
    let v = drain(&mut thread(
        "rw=randwrite fsync=4 number_ios=20 size=1m",
        GIB,
    ));
    let ops: String = v
        .iter()
        .map(|io| match io.op {
            IoOp::Write => 'W',
            IoOp::Fsync => 'F',
            IoOp::Fdatasync => 'D',
            _ => '?',
        })
        .collect();
    assert_eq!(ops, "WWWWFWWWWFWWWWFWWWWFWWWW");
    let v = drain(&mut thread(
        "rw=write fdatasync=2 number_ios=5 end_fsync=1 size=1m",
        GIB,
    ));
    let ops: Vec<IoOp> = v.iter().map(|io| io.op).collect();
    use IoOp::*;
    assert_eq!(
        ops,
        [Write, Write, Fdatasync, Write, Write, Fdatasync, Write, Fsync]
    );
    // Read-only jobs never sync.
    let v = drain(&mut thread("rw=read fsync=1 size=64k", GIB));
    assert!(v.iter().all(|io| io.op == Read));
    assert!(v.iter().filter(|io| io.op == Fsync).all(|io| io.len == 0));
}

#[test]
fn trimwrite_trims_then_writes_the_same_block() {
    let v = drain(&mut thread("rw=trimwrite bs=16k size=64k", GIB));
    assert_eq!(v.len(), 8);
    for (i, pair) in v.chunks(2).enumerate() {
        assert_eq!(pair[0].op, IoOp::Trim);
        assert_eq!(pair[1].op, IoOp::Write);
        assert_eq!(pair[0].offset, pair[1].offset);
        assert_eq!(pair[0].len, pair[1].len);
        assert_eq!(pair[0].offset, i as u64 * 16384);
    }
    let v = drain(&mut thread("rw=randtrimwrite bs=4k size=64k", GIB));
    assert_eq!(v.len(), 32);
    assert!(v
        .chunks(2)
        .all(|p| p[0].op == IoOp::Trim && p[1].offset == p[0].offset));
}

#[test]
fn stop_rules() {
    // io_size below size.
    let mut t = thread("rw=randread bs=4k size=1m io_size=64k", GIB);
    assert_eq!(drain(&mut t).len(), 16);
    assert_eq!(t.ios_issued(), 16);
    // number_ios first.
    assert_eq!(
        drain(&mut thread("rw=read size=1m number_ios=10", GIB)).len(),
        10
    );
    // io_size first.
    assert_eq!(
        drain(&mut thread("rw=read size=1m io_size=8k number_ios=10", GIB)).len(),
        2
    );
    // loops repeat the budget.
    assert_eq!(
        drain(&mut thread("rw=read bs=4k size=64k loops=3", GIB)).len(),
        48
    );
    // Default budget: size.
    assert_eq!(drain(&mut thread("rw=write bs=64k size=1m", GIB)).len(), 16);
    // None stays None.
    let mut t = thread("rw=read size=8k", GIB);
    drain(&mut t);
    assert_eq!(t.next_io(), None);
    assert_eq!(t.next_io(), None);
}

#[test]
fn time_based_jobs_never_stop_by_count() {
    let mut t = thread(
        "rw=randread size=64k io_size=8k number_ios=2 time_based runtime=1",
        GIB,
    );
    assert_eq!(take(&mut t, 1_000_000).len(), 1_000_000);
}

#[test]
fn ios_stay_inside_the_region() {
    for body in [
        "rw=randrw bssplit=512/10:4k/40:128k/50 size=3m offset=5000",
        "rw=rw bsrange=512-64k size=1m offset=1m",
        "rw=randread bsrange=4k-1m blockalign=4k size=1m",
        "rw=randwrite bs=4k size=1m random_distribution=zipf:0.9",
        "rw=randwrite bs=4k size=1m random_distribution=pareto:0.3:0.5",
        "rw=randwrite bs=4k size=1m random_distribution=normal:20:0.1",
    ] {
        let mut t = thread(&format!("{body} time_based runtime=1"), GIB);
        let (start, len) = t.region();
        for io in take(&mut t, 20_000) {
            assert!(io.len > 0, "{body}");
            assert!(
                io.offset >= start && io.offset + io.len <= start + len,
                "{body}: {io:?}"
            );
        }
    }
}

#[test]
fn extreme_geometries_do_not_panic() {
    for body in [
        "rw=randread bs=1 random_distribution=normal:10:0.1",
        "rw=randread bs=1 random_distribution=normal:0:0",
        "rw=randread bs=1 random_distribution=zipf:1.5:1",
        "rw=randread bs=1 random_distribution=pareto:0.9",
        "rw=randread bs=1 random_distribution=zoned:99/1:1/99",
        "rw=randrw bs=1",
        "rw=rw bsrange=1-1p bs_unaligned",
        "rw=randwrite bssplit=1/50:1p/50 fsync=1",
        "rw=write:1p bs=1p",
    ] {
        for capacity in [1u64, 4096, u64::MAX] {
            let spec = job(&format!("{body} time_based runtime=1"));
            let Ok(mut t) = JobThread::new(&spec, 0, capacity, 0) else {
                continue;
            };
            let (start, len) = t.region();
            for io in take(&mut t, 1000) {
                // A sequential walk's last block may run past the region's
                // end (fio's too), never past the device's.
                assert!(
                    io.len == 0
                        || (io.offset >= start
                            && io.offset - start < len
                            && io.len <= capacity - io.offset),
                    "{body} on {capacity}: {io:?}"
                );
            }
        }
    }
}

/// The IOs fio itself issues for `body` (psync on a sparse file of
/// `capacity` bytes, its iolog), as (op, offset, length).
fn fio_offsets(body: &str, capacity: u64) -> Vec<(IoOp, u64, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    // A sparse file as large as the device: fio's bounds come from the
    // file's size, as they would from a block device's.
    let file = dir.path().join("f");
    std::fs::File::create(&file)
        .unwrap()
        .set_len(capacity)
        .unwrap();
    let mut args = vec![
        "--name=t".to_string(),
        "--ioengine=psync".to_string(),
        format!("--filename={}", file.display()),
        format!("--write_iolog={}", log.display()),
    ];
    args.extend(body.split(' ').map(|o| format!("--{o}")));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out) = common::run_fio(&argv);
    assert!(ok, "fio {body}: {out}");
    let text = std::fs::read_to_string(&log).unwrap();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let op = match *f.get(2)? {
                "read" => IoOp::Read,
                "write" => IoOp::Write,
                "trim" => IoOp::Trim,
                _ => return None,
            };
            Some((op, f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect()
}

/// Sequential offsets and lengths, holes, passes and backwards steps
/// (`rw=read:-8k`) as fio issues them, checked against fio's own iolog.
#[test]
fn sequential_offsets_match_fio() {
    const MIB: u64 = 1 << 20;
    const DEV64K: u64 = 64 << 10;
    for (body, capacity) in [
        ("rw=read bs=4k size=64k", MIB),
        ("rw=read bs=4k size=64k offset=16k", MIB),
        ("rw=read:-8k bs=4k size=64k", MIB),
        ("rw=read:-8k bs=4k size=64k offset=16k", MIB),
        ("rw=read:-12k bs=4k size=64k offset=16k", MIB),
        ("rw=read:-16k bs=4k size=64k", MIB),
        ("rw=read:-8k bs=4k size=64k offset=128k", MIB),
        ("rw=read:-8k bs=8k size=64k io_size=256k", MIB),
        ("rw=write:-8k bs=4k size=64k", MIB),
        ("rw=read:-4k bs=4k size=32k", MIB),
        // Forward holes: the pass ends at the region's end, short of size.
        ("rw=read:8k bs=4k size=64k", MIB),
        ("rw=read:8k bs=4k size=64k offset=16k", MIB),
        ("rw=write:8k bs=4k size=64k", MIB),
        ("rw=read:8k bs=4k", MIB),
        ("rw=read:8k bs=4k size=64k number_ios=10", MIB),
        ("rw=read:8k bs=4k size=64k loops=2", MIB),
        // An explicit io_size runs more passes while a block is left.
        ("rw=read:8k bs=4k size=64k io_size=32k", MIB),
        ("rw=read:8k bs=4k size=64k io_size=64k", MIB),
        ("rw=read:8k bs=4k size=64k io_size=26k", MIB),
        ("rw=read:8k bs=8k size=52k io_size=104k", MIB),
        ("rw=read:8k bs=4k io_size=128k", DEV64K),
        // A fixed block size runs past the region's end, not the device's.
        ("rw=read bs=12k size=64k", MIB),
        ("rw=read bs=12k size=64k io_size=128k", MIB),
        ("rw=read bs=12k", DEV64K),
        ("rw=read bs=12k io_size=128k", DEV64K),
        ("rw=write bs=12k", DEV64K),
        // Strided zones: size bytes of IO, zone by zone, past the size.
        (
            "rw=read bs=4k size=256k zonemode=strided zonesize=16k zoneskip=16k",
            MIB,
        ),
        (
            "rw=read bs=4k size=256k zonemode=strided zonesize=8k zonerange=32k",
            MIB,
        ),
        (
            "rw=read bs=4k size=256k zonemode=strided zonesize=8k zonerange=32k zoneskip=32k",
            MIB,
        ),
        (
            "rw=read bs=4k size=64k zonemode=strided zonesize=32k zonerange=16k",
            MIB,
        ),
        (
            "rw=read bs=4k size=64k zonemode=strided zonesize=16k offset=100k",
            MIB,
        ),
        (
            "rw=write bs=4k size=64k zonemode=strided zonesize=6k zoneskip=10k",
            MIB,
        ),
        (
            "rw=read bs=4k size=64k io_size=128k zonemode=strided zonesize=8k zoneskip=8k",
            MIB,
        ),
    ] {
        let theirs = fio_offsets(body, capacity);
        let ours: Vec<(IoOp, u64, u64)> = drain(&mut thread(body, capacity))
            .iter()
            .filter(|io| io.op != IoOp::Fsync)
            .map(|io| (io.op, io.offset, io.len))
            .collect();
        assert_eq!(ours, theirs, "{body} on {capacity} bytes");
    }
}

/// A mixed walk with holes: each direction keeps its own position, and
/// the first to leave the region ends the pass for both (fio's iolog for
/// `rw=rw:8k bs=4k size=64k`: 11 IOs, reads at 0..60 KiB in 12 KiB steps,
/// writes at 0..48 KiB); a time-based job starts both over.
#[test]
fn a_mixed_walk_ends_the_pass_for_both_directions() {
    let ios = drain(&mut thread("rw=rw:8k bs=4k size=64k", 1 << 20));
    let of = |op| -> Vec<u64> {
        ios.iter()
            .filter(|io| io.op == op)
            .map(|io| io.offset >> 10)
            .collect()
    };
    let (reads, writes) = (of(IoOp::Read), of(IoOp::Write));
    let walk: Vec<u64> = (0..6).map(|i| i * 12).collect();
    assert!(
        reads.len() == 6 || writes.len() == 6,
        "{reads:?} {writes:?}"
    );
    assert!(reads.len() + writes.len() < 12, "{reads:?} {writes:?}");
    assert_eq!(reads, walk[..reads.len()], "reads");
    assert_eq!(writes, walk[..writes.len()], "writes");

    let mut timed = thread("rw=rw:8k bs=4k size=64k time_based runtime=1", 1 << 20);
    let ios = take(&mut timed, 1000);
    assert_eq!(ios.len(), 1000);
    let restarts = ios
        .windows(2)
        .filter(|w| w[1].offset == 0 && w[0].offset != 0)
        .count();
    assert!(restarts > 50, "{restarts} restarts in 1000 IOs");
    assert!(ios
        .iter()
        .all(|io| io.offset % (12 << 10) == 0 && io.offset < 64 << 10));
}

/// Backward steps fio's arithmetic would take straight out of the region
/// are refused with the bounds, not guessed at.
#[test]
fn backward_steps_outside_the_bounds_are_errors() {
    for body in ["rw=read:-2k bs=4k size=64k", "rw=read:-128k bs=4k size=64k"] {
        let err = JobThread::new(&job(body), 0, GIB, 1)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("backward step") && err.contains("65536"),
            "{body}: {err}"
        );
    }
}

/// With the random map, one pass of a random job touches the blocks fio
/// touches, each once (the order is each program's own random draw).
#[test]
fn random_passes_cover_the_blocks_fio_covers() {
    const MIB: u64 = 1 << 20;
    for (body, capacity) in [
        ("rw=randread bs=12k size=64k", MIB),
        ("rw=randread bs=12k", MIB),
        ("rw=randread bs=12k", 64 << 10),
        ("rw=randread bs=8k size=52k", MIB),
        ("rw=randwrite bs=4k size=64k offset=16k", MIB),
        ("rw=randread bs=12k size=64k io_size=128k", MIB),
        ("rw=randread bs=8k size=52k loops=2", MIB),
    ] {
        let mut theirs = fio_offsets(body, capacity);
        let mut ours: Vec<(IoOp, u64, u64)> = drain(&mut thread(body, capacity))
            .iter()
            .map(|io| (io.op, io.offset, io.len))
            .collect();
        theirs.sort_unstable_by_key(|t| (t.1, t.2));
        ours.sort_unstable_by_key(|t| (t.1, t.2));
        assert_eq!(ours, theirs, "{body} on {capacity} bytes");
    }
}

/// The sequential IOs of a random job (`rw=randread:4`): a run that
/// reaches the region's end ends the pass (fio 3.33, size=64k on a 1 MiB
/// file: 11 reads, the last at 60 KiB), and at the device's end the next
/// one takes a random block instead (the same job on a 64 KiB file: 16
/// reads).
#[test]
fn a_random_jobs_sequential_runs_end_the_pass_at_the_region_end() {
    let mut ended_early = 0;
    for seed in 1..=40 {
        let body = format!("rw=randread:4 bs=4k size=64k randseed={seed}");
        let ios = drain(&mut thread(&body, 1 << 20));
        assert!(ios.iter().all(|io| io.offset < 64 << 10), "{body}");
        let last = ios.last().unwrap().offset;
        assert!(ios.len() == 16 || last == 60 << 10, "{body}: {ios:?}");
        if ios.len() < 16 {
            ended_early += 1;
        }
        let on_device = drain(&mut thread(&body, 64 << 10));
        assert_eq!(on_device.len(), 16, "{body} on the 64 KiB device");
        assert!(on_device.iter().all(|io| io.offset < 64 << 10));
    }
    assert!(ended_early > 0, "no run reached the region's end");
}

/// Random IO in strided zones: `zonesize` bytes at random inside each
/// zone of `zonerange`, zone after zone, as fio's iolog shows (which
/// blocks of a zone is each program's own draw).
#[test]
fn random_zones_match_fios_zone_by_zone() {
    let body = "rw=randread bs=4k size=256k zonemode=strided zonesize=16k zonerange=64k";
    let theirs = fio_offsets(body, 1 << 20);
    let ours = drain(&mut thread(body, 1 << 20));
    assert_eq!(ours.len(), theirs.len());
    let zone = |o: u64| o / (64 << 10);
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(zone(a.offset), zone(b.1), "IO {i}: {a:?} vs {b:?}");
    }
    // no block twice within a zone's visit (the random map)
    for visit in ours.chunks(4) {
        let mut o: Vec<u64> = visit.iter().map(|io| io.offset).collect();
        o.sort_unstable();
        o.dedup();
        assert_eq!(o.len(), 4, "{visit:?}");
    }
}

/// Zone options fio refuses together are refused here, naming them.
#[test]
fn zone_options_are_checked_as_fio_checks_them() {
    for (body, want) in [
        ("rw=read zonemode=strided", "zonesize"),
        ("rw=read zonesize=16k", "zonemode"),
        // zonemode=zbd is accepted (zoned drives); its fractions are 0 to 1
        (
            "rw=write zonemode=zbd zone_reset_threshold=2",
            "zone_reset_threshold",
        ),
        ("rw=read zonemode=sideways", "zonemode"),
    ] {
        let text = format!("[t]\n{}\n", body.replace(' ', "\n"));
        let err = parse_job_str_with_env("z.fio", &text, &no_env)
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{body}: {err}");
    }
}

/// The progress bar's estimate of a job's IOs is what the generators
/// issue: the same budget (io_size or the region, times loops, per
/// thread), over the mix's mean IO size, capped by number_ios; a
/// time-based job has none.
#[test]
fn expected_ios_is_what_the_threads_issue() {
    let cap = 64 << 20;
    for body in [
        "rw=randread\nbs=4k\nnumjobs=3\nsize=1m",
        "rw=randrw\nrwmixread=70\nbs=4k\nsize=2m\nloops=2",
        "rw=write\nbs=16k\noffset=60m",
        "rw=randwrite\nbs=4k\nio_size=3m\nsize=1m",
        "rw=read\nbs=4k\nsize=4m\nnumber_ios=100",
    ] {
        let spec = job(body);
        let issued: usize = (0..spec.numjobs)
            .map(|t| {
                let mut th = JobThread::new(&spec, t, cap, 1).unwrap();
                drain(&mut th).len()
            })
            .sum();
        assert_eq!(spec.expected_ios(cap), Some(issued as u64), "{body}");
    }
    assert_eq!(
        job("rw=read\nbs=4k\ntime_based\nruntime=1s").expected_ios(cap),
        None
    );
}
