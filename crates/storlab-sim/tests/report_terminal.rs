//! The terminal writer: exact lines for known samples, fio's unit
//! auto-scaling and number formatting, line shapes checked against a real
//! fio 3.33 run, and the storlab section.

mod fio_peer;

use fio_peer::run_fio;
use storlab_model::{Breakdown, Component, Op};
use storlab_sim::report::{num2str, terminal_string, write_terminal, ReportOptions};
use storlab_sim::stats::{JobStats, Sampler};

/// 100 reads of 4 KiB with clat 10, 20, ..., 1000 ns (exact in the
/// histogram) and slat 500 ns over 1 s, 10 syncs of 20 µs.
fn small_job(name: &str) -> JobStats {
    let mut j = JobStats::new(name, 0);
    let mut bd = Breakdown::default();
    bd.add(Component::Syscall, 100);
    bd.add(Component::Media, 900);
    for i in 1..=100u64 {
        j.record(Op::Read, 500, i * 10, 4096, &bd);
    }
    for _ in 0..10 {
        j.record(Op::Flush, 0, 20_000, 0, &Breakdown::default());
    }
    j.runtime_ns = [1_000_000_000, 0, 0];
    j.job_runtime_ns = 1_000_000_000;
    j.storlab = serde_json::json!({
        "power": [{ "component": "ctrl", "avg_w": 1.5, "energy_j": 3.0 }],
        "wear": { "unit": "line writes", "units": 4, "max": 3, "mean": 1.5 }
    });
    j
}

fn lines(s: &str) -> Vec<&str> {
    s.lines().collect()
}

#[test]
fn known_samples_print_fios_lines() {
    let out = terminal_string(&[small_job("t")], &ReportOptions::default());
    let want = "\
t: (groupid=0, jobs=1): err= 0: pid=0
  read: IOPS=100, BW=400KiB/s (410kB/s)(400KiB/1000msec)
    slat (nsec): min=500, max=500, avg=500.00, stdev= 0.00
    clat (nsec): min=10, max=1000, avg=505.00, stdev=290.11
     lat (nsec): min=510, max=1500, avg=1005.00, stdev=290.11
    clat percentiles (nsec):
     |  1.00th=[   10],  5.00th=[   50], 10.00th=[  100], 20.00th=[  200],
     | 30.00th=[  300], 40.00th=[  400], 50.00th=[  500], 60.00th=[  600],
     | 70.00th=[  700], 80.00th=[  800], 90.00th=[  900], 95.00th=[  950],
     | 99.00th=[  990], 99.50th=[ 1000], 99.90th=[ 1000], 99.95th=[ 1000],
     | 99.99th=[ 1000]
  lat (nsec)   : 20=1.00%, 50=3.00%, 100=5.00%, 250=15.00%, 500=25.00%
  lat (nsec)   : 750=25.00%, 1000=25.00%
  lat (usec)   : 2=1.00%
  fsync/fdatasync/sync_file_range:
    sync (nsec): min=20000, max=20000, avg=20000.00, stdev= 0.00
    sync percentiles (nsec):
     |  1.00th=[20000],  5.00th=[20000], 10.00th=[20000], 20.00th=[20000],
     | 30.00th=[20000], 40.00th=[20000], 50.00th=[20000], 60.00th=[20000],
     | 70.00th=[20000], 80.00th=[20000], 90.00th=[20000], 95.00th=[20000],
     | 99.00th=[20000], 99.50th=[20000], 99.90th=[20000], 99.95th=[20000],
     | 99.99th=[20000]
  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0
  IO depths    : 1=0.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%
     submit    : 0=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     issued rwts: total=100,0,0,10 short=0,0,0,0 dropped=0,0,0,0
     latency   : target=0, window=0, percentile=100.00%, depth=1

Run status group 0 (all jobs):
   READ: bw=400KiB/s (410kB/s), 400KiB/s-400KiB/s (410kB/s-410kB/s), io=400KiB (410kB), run=1000-1000msec
";
    assert!(out.starts_with(want), "got:\n{out}");
    let tail = &out[want.len()..];
    let want_tail = "
storlab (simulated):
t: (groupid=0, jobs=1)
  latency breakdown (mean per IO, usec and % of total):
    component              read       %         sync       %
    syscall               0.100   10.0%        0.000    0.0%
    media                 0.900   90.0%        0.000    0.0%
    total                 1.000  100.0%        0.000    0.0%
  power        : ctrl=1.500W/3.000000J, total=1.500W/3.000000J
  wear         : line writes: max=3, mean=1.50, units=4
";
    assert_eq!(tail, want_tail);
    let mut w = Vec::new();
    write_terminal(&[small_job("t")], &mut w, &ReportOptions::default()).unwrap();
    assert_eq!(w, out.as_bytes());
}

#[test]
fn latencies_scale_to_usec_and_msec_as_fio_does() {
    let mut j = JobStats::new("u", 0);
    for i in 1..=100u64 {
        j.record(
            Op::Write,
            3_000 + i,
            i * 10_000,
            4096,
            &Breakdown::default(),
        );
        j.record(Op::Read, 0, i * 5_000_000, 1 << 20, &Breakdown::default());
    }
    j.runtime_ns = [500_000_000_000, 1_000_000_000, 0];
    let out = terminal_string(&[j.clone()], &ReportOptions::default());
    let out_job = j;
    let j_read_pct = |j: &JobStats, p: f64| j.dirs[0].percentile(p);
    let l = lines(&out);
    // Reads: 5..500 ms, stdev > 1 ms: msec everywhere.
    assert!(
        l.contains(&"    clat (msec): min=5, max=500, avg=252.50, stdev=145.06"),
        "{out}"
    );
    assert!(l.contains(&"    clat percentiles (msec):"), "{out}");
    let ms = |p: f64| j_read_pct(&out_job, p).div_ceil(1000).div_ceil(1000);
    let row = format!(
        "     |  1.00th=[{:>5}],  5.00th=[{:>5}], 10.00th=[{:>5}], 20.00th=[{:>5}],",
        ms(1.0),
        ms(5.0),
        ms(10.0),
        ms(20.0)
    );
    assert!(l.contains(&row.as_str()), "{row}\n{out}");
    assert!((5..=6).contains(&ms(1.0)) && (100..=101).contains(&ms(20.0)));
    // Writes: 10..1000 µs: usec; slat 3 µs with stdev 29 ns stays in nsec.
    assert!(
        l.contains(&"    clat (usec): min=10, max=1000, avg=505.00, stdev=290.11"),
        "{out}"
    );
    assert!(
        l.contains(&"    slat (nsec): min=3001, max=3100, avg=3050.50, stdev=29.01"),
        "{out}"
    );
    assert!(l.contains(&"    clat percentiles (usec):"), "{out}");
    assert!(
        l.contains(&"  write: IOPS=100, BW=400KiB/s (410kB/s)(400KiB/1000msec); 0 zone resets"),
        "{out}"
    );
    assert!(
        l.contains(&"  read: IOPS=0, BW=205KiB/s (210kB/s)(100MiB/500000msec)"),
        "{out}"
    );
    assert!(
        l.contains(&"  lat (usec)   : 20=0.50%, 50=1.50%, 100=2.50%, 250=7.50%, 500=12.50%"),
        "{out}"
    );
    assert!(
        l.contains(&"  lat (msec)   : 2=0.50%, 10=0.50%, 20=1.00%, 50=3.00%, 100=5.00%"),
        "{out}"
    );
}

#[test]
fn num2str_matches_fios_strings() {
    // Figures taken from fio 3.33's own output.
    assert_eq!(num2str(16_777_216, 4, 1, true, "B"), "16.0MiB");
    assert_eq!(num2str(16_777_216, 4, 1, false, "B"), "16.8MB");
    assert_eq!(num2str(8_388_608, 4, 1, true, "B"), "8192KiB");
    assert_eq!(num2str(8_388_608, 4, 1, false, "B"), "8389kB");
    assert_eq!(num2str(305_040_290, 4, 1, true, "B/s"), "291MiB/s");
    assert_eq!(num2str(305_040_290, 4, 1, false, "B/s"), "305MB/s");
    assert_eq!(num2str(74_472, 4, 1, false, ""), "74.5k");
    assert_eq!(num2str(1_999, 4, 1, false, ""), "1999");
    assert_eq!(num2str(1_637_478, 4, 1, true, "B/s"), "1599KiB/s");
    assert_eq!(num2str(1_637_478, 4, 1, false, "B/s"), "1637kB/s");
    assert_eq!(num2str(577_589, 6, 1, false, ""), "577589");
    assert_eq!(num2str(1_234_567, 6, 1, false, ""), "1234.6k");
    assert_eq!(num2str(5_606_800, 6, 1, false, ""), "5606.8k");
}

/// A line's shape: the text before its first digit, without trailing
/// padding, units normalised.
fn shape(line: &str) -> String {
    let cut = line
        .find(|c: char| c.is_ascii_digit())
        .unwrap_or(line.len());
    line[..cut]
        .trim_end()
        .replace("(usec)", "(nsec)")
        .replace("(msec)", "(nsec)")
}

#[test]
fn every_line_has_a_counterpart_in_fios_output() {
    let dir = tempfile::tempdir().unwrap();
    let fio = run_fio(
        dir.path(),
        &[
            "--name=t",
            "--ioengine=libaio",
            "--iodepth=2",
            "--filename=data",
            "--size=4m",
            "--bs=4k",
            "--rw=randrw",
            "--fsync=8",
            "--rate_iops=400",
            "--runtime=1200ms",
            "--time_based",
        ],
    );
    let fio_shapes: Vec<String> = fio.lines().map(shape).collect();
    assert!(
        fio_shapes
            .iter()
            .any(|s| s.starts_with("   bw (  KiB/s): min=")),
        "fio printed no bandwidth samples:\n{fio}"
    );

    let mut j = small_job("t");
    let mut s = Sampler::new(Sampler::FIO_DEFAULT_INTERVAL_NS, 0);
    for i in 0..2_000u64 {
        j.record(Op::Write, 2_000, 5_000 + i, 4096, &Breakdown::default());
        s.observe(i * 1_000_000, &mut j);
    }
    j.runtime_ns[1] = 2_000_000_000;
    let out = terminal_string(&[j], &ReportOptions::default());
    let fio_part = out.split("\nstorlab (simulated):").next().unwrap();
    let mut checked = 0;
    for line in fio_part.lines().filter(|l| !l.is_empty()) {
        let sh = shape(line);
        assert!(
            fio_shapes.contains(&sh),
            "no fio line looks like {line:?} (shape {sh:?}); fio printed:\n{fio}"
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} lines checked");
    for needle in [
        "   bw (  KiB/s): min=",
        "   iops        : min=",
        "    slat (nsec): min=",
    ] {
        assert!(
            out.contains(needle),
            "storlab printed no {needle:?}:\n{out}"
        );
    }
}

#[test]
fn group_summary_spans_every_job_of_the_group() {
    let mut a = small_job("a");
    let mut b = small_job("b");
    b.runtime_ns[0] = 2_000_000_000;
    let mut c = small_job("c");
    c.group_id = 1;
    a.members = 1;
    let out = terminal_string(&[a, b, c], &ReportOptions::default());
    let l = lines(&out);
    let g0 = l
        .iter()
        .position(|x| *x == "Run status group 0 (all jobs):")
        .expect(&out);
    assert_eq!(
        l[g0 + 1],
        "   READ: bw=400KiB/s (410kB/s), 200KiB/s-400KiB/s (205kB/s-410kB/s), io=800KiB (819kB), run=1000-2000msec"
    );
    let g1 = l
        .iter()
        .position(|x| *x == "Run status group 1 (all jobs):")
        .expect(&out);
    assert!(g1 > g0);
    assert!(l.contains(&"c: (groupid=1, jobs=1): err= 0: pid=0"));
}

/// Every number-to-text path of the terminal summary (IOPS: SI, no unit;
/// bandwidth: IEC and SI with "B/s"; latency min/max: 6 digits), over values
/// whose dropped fraction rounds up into the integer part. Expected strings
/// follow fio 3.33's `num2str`, which carries a fraction that rounds to 1
/// (fio 3.33 prints 61,996,032 bytes as "62.0MB", 99,960,832 as "100.0MB").
#[test]
fn num2str_carries_a_rounded_up_fraction_like_fio() {
    #[rustfmt::skip]
    let table: &[(u64, &str, &str, &str, &str)] = &[
        (0, "0", "0B/s", "0B/s", "0"),
        (1, "1", "1B/s", "1B/s", "1"),
        (999, "999", "999B/s", "999B/s", "999"),
        (1000, "1000", "1000B/s", "1000B/s", "1000"),
        (1999, "1999", "1999B/s", "1999B/s", "1999"),
        (9999, "9999", "9999B/s", "9999B/s", "9999"),
        (10000, "10.0k", "9.77KiB/s", "10.0kB/s", "10000"),
        (36993, "37.0k", "36.1KiB/s", "37.0kB/s", "36993"),
        (61996, "62.0k", "60.5KiB/s", "62.0kB/s", "61996"),
        (74250, "74.2k", "72.5KiB/s", "74.2kB/s", "74250"),
        (74472, "74.5k", "72.7KiB/s", "74.5kB/s", "74472"),
        (99950, "99.9k", "97.6KiB/s", "99.9kB/s", "99950"),
        (99960, "100.0k", "97.6KiB/s", "100.0kB/s", "99960"),
        (99999, "100.0k", "97.7KiB/s", "100.0kB/s", "99999"),
        (100000, "100k", "97.7KiB/s", "100kB/s", "100000"),
        (123456, "123k", "121KiB/s", "123kB/s", "123456"),
        (999499, "999k", "976KiB/s", "999kB/s", "999499"),
        (999500, "1000k", "976KiB/s", "1000kB/s", "999500"),
        (999999, "1000k", "977KiB/s", "1000kB/s", "999999"),
        (1000000, "1000k", "977KiB/s", "1000kB/s", "1000.0k"),
        (1048575, "1049k", "1024KiB/s", "1049kB/s", "1048.6k"),
        (1048576, "1049k", "1024KiB/s", "1049kB/s", "1048.6k"),
        (1234567, "1235k", "1206KiB/s", "1235kB/s", "1234.6k"),
        (5606800, "5607k", "5475KiB/s", "5607kB/s", "5606.8k"),
        (16777216, "16.8M", "16.0MiB/s", "16.8MB/s", "16777k"),
        (61996032, "62.0M", "59.1MiB/s", "62.0MB/s", "61996k"),
        (99960832, "100.0M", "95.3MiB/s", "100.0MB/s", "99961k"),
        (305040290, "305M", "291MiB/s", "305MB/s", "305040k"),
        (1073741823, "1074M", "1024MiB/s", "1074MB/s", "1073.7M"),
        (999999999999, "1000G", "931GiB/s", "1000GB/s", "1000000M"),
    ];
    for &(n, iops, bw_iec, bw_si, lat) in table {
        assert_eq!(num2str(n, 4, 1, false, ""), iops, "IOPS {n}");
        assert_eq!(num2str(n, 4, 1, true, "B/s"), bw_iec, "BW (IEC) {n}");
        assert_eq!(num2str(n, 4, 1, false, "B/s"), bw_si, "BW (SI) {n}");
        assert_eq!(num2str(n, 6, 1, false, ""), lat, "6 digits {n}");
    }
}
