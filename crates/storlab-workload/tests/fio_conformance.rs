//! storlab's values against fio's own: for each option and value, fio's
//! `--debug=parse` prints the number it stored (`ret=0, out=N`); storlab
//! must store the same number (fio keeps times in microseconds).
//! Values fio rejects must be rejected by storlab too.

mod common;

use common::{no_env, run_fio};
use storlab_workload::fio::{parse_job_str_with_env, JobSpec, SizeSpec};

/// The numbers fio stored for `[j]\n<line>` (in the order it parsed them).
fn fio_values(line: &str) -> Vec<u64> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.fio");
    std::fs::write(&path, format!("[j]\n{line}\n")).unwrap();
    let (ok, out) = run_fio(&["--debug=parse", "--parse-only", path.to_str().unwrap()]);
    assert!(ok, "fio rejected `{line}`:\n{out}");
    out.lines()
        .filter_map(|l| l.split("ret=0, out=").nth(1))
        .map(|v| v.trim().parse::<u64>().unwrap())
        .collect()
}

fn ours(line: &str) -> JobSpec {
    let text = format!("[j]\n{line}\n");
    match parse_job_str_with_env("t.fio", &text, &no_env) {
        Ok(mut jf) => jf.jobs.remove(0),
        Err(e) => panic!("storlab rejected `{line}`: {e}"),
    }
}

fn bytes(s: Option<SizeSpec>) -> u64 {
    match s {
        Some(SizeSpec::Bytes(b)) => b,
        other => panic!("expected bytes, got {other:?}"),
    }
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

type Extract = fn(&JobSpec) -> Vec<u64>;

#[test]
fn numbers_match_fio() {
    let cases: &[(&str, Extract)] = &[
        ("size=1g", |j| vec![bytes(j.size)]),
        ("size=1gb", |j| vec![bytes(j.size)]),
        ("size=4KiB", |j| vec![bytes(j.size)]),
        ("size=4kib", |j| vec![bytes(j.size)]),
        ("size=1mi", |j| vec![bytes(j.size)]),
        ("size=0x10", |j| vec![bytes(j.size)]),
        ("size=4096B", |j| vec![bytes(j.size)]),
        ("size=8b", |j| vec![bytes(j.size)]),
        ("size=1t", |j| vec![bytes(j.size)]),
        ("size=1P", |j| vec![bytes(j.size)]),
        ("size=07", |j| vec![bytes(j.size)]),
        ("io_size=2g", |j| vec![bytes(j.io_size)]),
        ("io_limit=3m", |j| vec![bytes(j.io_size)]),
        ("offset=4k", |j| vec![bytes(Some(j.offset))]),
        ("offset_increment=1g", |j| {
            vec![bytes(Some(j.offset_increment))]
        }),
        ("bs=4k", |j| vec![j.bs[0].min_bytes()]),
        ("bs=4KB", |j| vec![j.bs[0].min_bytes()]),
        ("blocksize=16KiB", |j| vec![j.bs[0].min_bytes()]),
        ("bs=8k,16k", |j| {
            vec![j.bs[0].min_bytes(), j.bs[1].min_bytes()]
        }),
        ("bs=512,4k,64k", |j| {
            j.bs.iter().map(|b| b.min_bytes()).collect()
        }),
        ("kb_base=1000\nbs=4k", |j| vec![j.bs[0].min_bytes()]),
        ("bs=4KiB\nkb_base=1000", |j| vec![j.bs[0].min_bytes()]),
        ("blockalign=8k", |j| vec![j.blockalign_bytes[0].unwrap()]),
        ("runtime=10", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=10ms", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=2m", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=3M", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=1h", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=1d", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=90s", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=5MS", |j| vec![us(j.runtime_ns.unwrap())]),
        ("timeout=3us", |j| vec![us(j.runtime_ns.unwrap())]),
        ("runtime=10usec", |j| vec![us(j.runtime_ns.unwrap())]),
        ("ramp_time=5", |j| vec![us(j.ramp_time_ns.unwrap())]),
        ("startdelay=500ms", |j| vec![us(j.startdelay_ns)]),
        ("thinktime=10", |j| vec![us(j.thinktime_ns)]),
        ("thinktime=10ms", |j| vec![us(j.thinktime_ns)]),
        ("thinktime=1s", |j| vec![us(j.thinktime_ns)]),
        ("thinktime_blocks=4", |j| vec![j.thinktime_blocks.into()]),
        ("iodepth=32", |j| vec![j.iodepth.into()]),
        ("numjobs=16", |j| vec![j.numjobs.into()]),
        ("rwmixread=70", |j| vec![j.rwmix_read_pct.into()]),
        ("fsync=32", |j| vec![j.fsync_every.into()]),
        ("fsync=2k", |j| vec![j.fsync_every.into()]),
        ("fdatasync=8", |j| vec![j.fdatasync_every.into()]),
        ("number_ios=1000", |j| vec![j.number_ios.unwrap()]),
        ("loops=3", |j| vec![j.loops.into()]),
        ("randseed=0x10", |j| vec![j.randseed.unwrap()]),
        ("randseed=1234", |j| vec![j.randseed.unwrap()]),
        ("rate=10m", |j| vec![j.rate_bytes_per_s[0].unwrap()]),
        ("rate=1m,2m", |j| {
            vec![
                j.rate_bytes_per_s[0].unwrap(),
                j.rate_bytes_per_s[1].unwrap(),
            ]
        }),
        ("rate_iops=100,50", |j| {
            vec![j.rate_iops[0].unwrap(), j.rate_iops[1].unwrap()]
        }),
        ("percentage_random=90,80", |j| {
            vec![j.percentage_random[0].into(), j.percentage_random[1].into()]
        }),
        ("direct=1", |j| vec![u64::from(j.direct)]),
        ("time_based\nruntime=1", |j| {
            vec![u64::from(j.time_based), us(j.runtime_ns.unwrap())]
        }),
        ("norandommap", |j| vec![u64::from(j.norandommap)]),
        ("randrepeat=0", |j| vec![u64::from(j.randrepeat)]),
    ];
    // One fio process per case; run them side by side.
    let fio: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|(line, _)| s.spawn(move || fio_values(line)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut failures = Vec::new();
    for ((line, extract), fio) in cases.iter().zip(fio) {
        let mine = extract(&ours(line));
        if fio != mine {
            failures.push(format!("`{line}`: fio {fio:?}, storlab {mine:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn values_fio_rejects_are_rejected() {
    let cases = [
        "rwmixread=150",
        "iodepth=0",
        "bs=0",
        "direct=2",
        "direct=true",
        "size=",
        "rw=RANDREAD",
        "rw=sideways",
        "BS=4k",
        "foo=1",
        "random_distribution=zipf:1",
        "random_distribution=pareto:1.5",
        "random_distribution=normal:100",
        "random_distribution=zoned:50/50:40/50",
        "random_distribution=zoned:60/10:50/90",
        "random_distribution=zipf:1.2:2",
        "rw_sequencer=random",
        "thinktime_blocks_type=sometimes",
        "rate_process=bursty",
        "kb_base=1023",
    ];
    let fio: Vec<(bool, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|line| {
                s.spawn(move || {
                    let dir = tempfile::tempdir().unwrap();
                    let path = dir.path().join("t.fio");
                    std::fs::write(&path, format!("[j]\n{line}\n")).unwrap();
                    run_fio(&["--parse-only", path.to_str().unwrap()])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (line, (fio_ok, out)) in cases.iter().zip(fio) {
        assert!(!fio_ok, "fio accepted `{line}`, update this test:\n{out}");
        let text = format!("[j]\n{line}\n");
        assert!(
            parse_job_str_with_env("t.fio", &text, &no_env).is_err(),
            "storlab accepted `{line}`, which fio rejects"
        );
    }
}

/// Values fio accepts but misreads; storlab refuses them rather than
/// simulate something the user did not mean.
#[test]
fn values_fio_misreads_are_refused() {
    let cases = [
        ("bs=1.5k", 1u64),   // fio: 1 byte
        ("size=4q", 4),      // fio: 4 bytes
        ("size=1e3", 1),     // fio: 1 byte
        ("runtime=1x", 1),   // fio: 1 us
        ("thinktime=-5", 5), // fio: stores 2^64-5 and then 5
    ];
    for (line, fio_reads) in cases {
        let fio = fio_values(line);
        assert!(
            fio.contains(&fio_reads),
            "fio read `{line}` as {fio:?}, not {fio_reads}; update this test"
        );
        let text = format!("[j]\n{line}\n");
        assert!(
            parse_job_str_with_env("t.fio", &text, &no_env).is_err(),
            "storlab accepted `{line}`"
        );
    }
}

#[test]
fn trailing_comments_are_stripped_like_fio() {
    // fio 3.33 stores `rw=randread` and `bs=4k` here (checked through its
    // JSON `job options`); the value of `bs` goes through the debug path.
    let fio = fio_values("bs=8k ; eight\nrw=randread # comment");
    let j = ours("bs=8k ; eight\nrw=randread # comment");
    assert_eq!(fio, vec![j.bs[0].min_bytes()]);
    assert_eq!(j.rw, storlab_workload::fio::RwMode::RandRead);
}
