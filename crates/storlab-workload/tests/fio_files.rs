//! Real job files: fio itself accepts each one (`fio --parse-only`), and
//! storlab parses them into the values fio uses.

mod common;

use common::{data, run_fio};
use storlab_workload::fio::{
    parse_job_file, BlockSizeSpec, BsSplitEntry, Distribution, RateProcess, RwMode, RwSequencer,
    SizeSpec, Zone, FIO_DEFAULT_SEED,
};

const FILES: &[&str] = &[
    "basic.fio",
    "xdd.fio",
    "fairness.fio",
    "options.fio",
    "include-main.fio",
];

#[test]
fn fio_accepts_every_test_job_file() {
    for f in FILES {
        let path = data(f);
        let (ok, out) = run_fio(&["--parse-only", path.to_str().unwrap()]);
        assert!(ok, "fio --parse-only rejected {f}:\n{out}");
        parse_job_file(&path).unwrap_or_else(|e| panic!("storlab rejected {f}: {e}"));
    }
}

#[test]
fn basic_file() {
    let jf = parse_job_file(&data("basic.fio")).unwrap();
    assert_eq!(jf.jobs.len(), 2);
    let (a, b) = (&jf.jobs[0], &jf.jobs[1]);
    assert_eq!(a.name, "seq-read");
    assert_eq!(a.rw, RwMode::Read);
    assert_eq!(a.iodepth, 32);
    assert_eq!(a.bs[0], BlockSizeSpec::Fixed(4096));
    assert_eq!(a.size, Some(SizeSpec::Bytes(128 << 20)));
    assert!(a.direct);
    assert_eq!(a.ioengine.as_deref(), Some("libaio"));
    assert_eq!(a.filename.as_deref(), Some("/dev/nvme0n1"));
    assert_eq!(a.group_id, 0);
    assert_eq!(a.location.line, 10);
    assert_eq!(a.numjobs, 1);
    assert!(!a.time_based);
    assert_eq!(a.seed, FIO_DEFAULT_SEED);

    assert_eq!(b.name, "rand-write");
    assert!(b.stonewall);
    assert_eq!(b.group_id, 1);
    assert_eq!(b.rw, RwMode::RandWrite);
    assert_eq!(b.bs, [0, 1, 2].map(|_| BlockSizeSpec::Fixed(16 << 10)));
    assert_eq!(b.numjobs, 4);
    assert!(b.group_reporting);
    assert_eq!(b.runtime_ns, Some(30_000_000_000));
    assert!(b.time_based);
    assert_eq!(b.job_index, 1);
    // Globals first, the job's own value replacing the global one in place.
    assert_eq!(
        b.options,
        [
            ("ioengine", "libaio"),
            ("direct", "1"),
            ("bs", "16k"),
            ("size", "128m"),
            ("filename", "/dev/nvme0n1"),
            ("stonewall", ""),
            ("rw", "randwrite"),
            ("numjobs", "4"),
            ("group_reporting", ""),
            ("runtime", "30"),
            ("time_based", ""),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    assert_eq!(jf.global_options.len(), 5);
}

#[test]
fn xdd_file_groups_and_mixes() {
    let jf = parse_job_file(&data("xdd.fio")).unwrap();
    let names: Vec<&str> = jf.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "rand-read-4k",
            "rand-write-4k",
            "rand-mix-4k",
            "seq-read-4m",
            "seq-mix-4m",
            "latency-4k"
        ]
    );
    let groups: Vec<u32> = jf.jobs.iter().map(|j| j.group_id).collect();
    assert_eq!(groups, [0, 1, 2, 3, 4, 5]);
    for j in &jf.jobs[..5] {
        assert_eq!(j.numjobs, 16);
        assert_eq!(j.size, Some(SizeSpec::Bytes(55 << 30)));
        assert_eq!(j.runtime_ns, Some(60_000_000_000));
    }
    assert_eq!(jf.jobs[2].rw, RwMode::RandRw);
    assert_eq!(jf.jobs[2].rwmix_read_pct, 50);
    assert_eq!(jf.jobs[3].bs[0], BlockSizeSpec::Fixed(4 << 20));
    assert_eq!(jf.jobs[4].rw, RwMode::ReadWrite);
    assert_eq!(jf.jobs[4].rwmix_read_pct, 50);
    assert_eq!(jf.jobs[5].numjobs, 1);
}

#[test]
fn fairness_file_new_group() {
    let jf = parse_job_file(&data("fairness.fio")).unwrap();
    assert_eq!(jf.jobs[0].group_id, 0);
    assert_eq!(jf.jobs[1].group_id, 1);
    assert!(jf.jobs[1].new_group);
    assert!(!jf.jobs[1].stonewall);
    assert!(jf.jobs[0].thread);
    assert_eq!(jf.jobs[1].bs[0], BlockSizeSpec::Fixed(512 << 10));
    assert_eq!(jf.jobs[0].runtime_ns, Some(10_000_000_000));
}

#[test]
fn options_file_values() {
    let jf = parse_job_file(&data("options.fio")).unwrap();
    let split = &jf.jobs[0];
    assert_eq!(split.kb_base, 1000);
    assert_eq!(split.description.as_deref(), Some("mixed sizes and rates"));
    assert_eq!(split.rw, RwMode::RandRw);
    assert_eq!(split.rw_seq_nr, 8);
    assert_eq!(split.rwmix_read_pct, 70);
    // Sorted by weight as fio does; 8KiB with kb_base=1000 is 8192.
    assert_eq!(
        split.bs[0],
        BlockSizeSpec::Split(vec![
            BsSplitEntry {
                bs: 1_000_000,
                pct: 20
            },
            BsSplitEntry {
                bs: 64_000,
                pct: 30
            },
            BsSplitEntry { bs: 4_000, pct: 50 },
        ])
    );
    assert_eq!(
        split.bs[1],
        BlockSizeSpec::Split(vec![BsSplitEntry { bs: 8192, pct: 100 }])
    );
    assert_eq!(split.bs[1], split.bs[2]);
    assert_eq!(split.blockalign_bytes, [Some(4000); 3]);
    assert_eq!(split.rate_bytes_per_s, [Some(10_000_000), None, None]);
    assert_eq!(split.rate_iops, [None, Some(500), Some(500)]);
    assert_eq!(
        split.random_distribution,
        Distribution::Zipf {
            theta: 1.2,
            center: Some(0.25)
        }
    );
    assert_eq!(split.percentage_random, [90, 80, 80]);
    assert!(split.norandommap);
    assert_eq!(split.iodepth, 8);
    assert_eq!(split.size, Some(SizeSpec::Percent(10)));
    assert_eq!(split.io_size, Some(SizeSpec::Bytes(2_000_000_000)));
    assert_eq!(split.offset, SizeSpec::Bytes(4096));
    assert_eq!(split.number_ios, Some(1000));
    assert_eq!(split.fsync_every, 32);
    assert_eq!(split.thinktime_ns, 250_000);
    assert_eq!(split.thinktime_blocks, 4);
    assert_eq!(split.ramp_time_ns, Some(2_000_000_000));
    assert!(!split.randrepeat);
    assert_eq!(split.randseed, Some(1234));
    assert_eq!(split.seed, 1234);

    let range = &jf.jobs[1];
    assert_eq!(range.rw, RwMode::Write);
    assert_eq!(range.rw_seq_add_bytes, 64_000);
    assert_eq!(range.rw_sequencer, RwSequencer::Sequential);
    assert_eq!(
        range.bs,
        [
            BlockSizeSpec::Range {
                min: 4_000,
                max: 16_000
            },
            BlockSizeSpec::Range {
                min: 512,
                max: 4_000
            },
            BlockSizeSpec::Range {
                min: 512,
                max: 4_000
            },
        ]
    );
    assert_eq!(range.offset_increment, SizeSpec::Bytes(1_000_000_000));
    assert_eq!(range.numjobs, 3);
    assert_eq!(range.fdatasync_every, 8);
    assert!(range.end_fsync);
    assert_eq!(range.loops, 2);
    assert_eq!(range.runtime_ns, Some(60_000_000_000));
    assert_eq!(range.startdelay_ns, 500_000_000);
    assert_eq!(range.rate_process, RateProcess::Poisson);
    assert_eq!(range.group_id, 0);

    let zones = &jf.jobs[2];
    assert!(zones.stonewall);
    assert_eq!(zones.group_id, 1);
    let expect = vec![
        Zone {
            access_pct: 60,
            size_pct: 10,
        },
        Zone {
            access_pct: 30,
            size_pct: 20,
        },
        Zone {
            access_pct: 8,
            size_pct: 30,
        },
        Zone {
            access_pct: 2,
            size_pct: 40,
        },
    ];
    assert_eq!(
        zones.random_distribution,
        Distribution::Zoned([expect.clone(), expect.clone(), expect])
    );
    assert_eq!(
        zones.bs,
        [
            BlockSizeSpec::Fixed(4000),
            BlockSizeSpec::Fixed(8000),
            BlockSizeSpec::Fixed(2000)
        ]
    );
    assert_eq!(zones.thinktime_ns, 5_000_000);
    assert_eq!(zones.percentile_list, Some(vec![50.0, 99.0, 99.9]));

    let trims = &jf.jobs[3];
    assert_eq!(trims.rw, RwMode::TrimWrite);
    assert_eq!(trims.size, Some(SizeSpec::Bytes(1_000_000_000)));
}

#[test]
fn include_directive() {
    let jf = parse_job_file(&data("include-main.fio")).unwrap();
    assert_eq!(jf.jobs.len(), 1);
    let j = &jf.jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Bytes(256 << 20)));
    assert!(j.direct);
    assert_eq!(j.bs[0], BlockSizeSpec::Fixed(8192));
    assert_eq!(j.iodepth, 4);
    // Errors inside an included file point at that file.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.fio"), "[j]\ninclude inc.fio\n").unwrap();
    std::fs::write(dir.path().join("inc.fio"), "bs=4k\niodepth=zero\n").unwrap();
    let err = parse_job_file(&dir.path().join("main.fio"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("inc.fio:2"), "{err}");
    assert!(err.contains("iodepth"), "{err}");
}

#[test]
fn bssplit_missing_percentages_share_the_rest() {
    // The HOWTO's example: 50 % 4k, and 25 % each for 1k and 32k.
    let jf = storlab_workload::fio::parse_job_str_with_env(
        "t.fio",
        "[j]\nbssplit=4k/50:1k/:32k/\n",
        &common::no_env,
    )
    .unwrap();
    assert_eq!(
        jf.jobs[0].bs[0],
        BlockSizeSpec::Split(vec![
            BsSplitEntry { bs: 1024, pct: 25 },
            BsSplitEntry { bs: 32768, pct: 25 },
            BsSplitEntry { bs: 4096, pct: 50 },
        ])
    );
}
