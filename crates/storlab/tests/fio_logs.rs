//! fio's log files from `storlab sim`: the same files, columns and IOs as
//! fio 3.33 writes for the same job (checked against the real fio), values
//! that agree with the JSON report, averaging windows, shared files, and a
//! clear error when a file cannot be created.

#[path = "../../../testsupport/command.rs"]
mod command;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Run `storlab sim` in `dir` with a JSON report; the report.
fn storlab(dir: &Path, args: &[&str]) -> Value {
    let out = command::stdout_of(
        Command::new(env!("CARGO_BIN_EXE_storlab"))
            .arg("sim")
            .arg("--output-format=json")
            .args(args)
            .current_dir(dir),
    );
    serde_json::from_slice(&out).expect("JSON report")
}

/// Run fio in `dir` on a sparse 1 MiB file with the psync engine.
fn fio(dir: &Path, args: &[&str]) {
    std::fs::File::create(dir.join("dev"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    command::stdout_of(
        Command::new("fio")
            .args(["--ioengine=psync", "--filename=dev", "--output=/dev/null"])
            .args(args)
            .current_dir(dir),
    );
}

/// Every `.log` file in `dir`, by name, as lines of comma-separated
/// numbers.
fn logs(dir: &Path) -> BTreeMap<String, Vec<Vec<u64>>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log") && !p.ends_with("io.log"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let rows = text
                .lines()
                .map(|l| {
                    l.split(", ")
                        .map(|v| v.parse().unwrap_or_else(|_| panic!("{p:?}: {l}")))
                        .collect()
                })
                .collect();
            (p.file_name().unwrap().to_string_lossy().into_owned(), rows)
        })
        .collect()
}

/// The iolog's requests: (action, offset, length), times and file names
/// left out.
fn iolog(path: &Path) -> Vec<(String, u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("fio version 3 iolog"), "{path:?}");
    lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5).then(|| {
                (
                    f[2].to_string(),
                    f[3].parse().unwrap(),
                    f[4].parse().unwrap(),
                )
            })
        })
        .collect()
}

const JOB: [&str; 9] = [
    "--name=j",
    "--rw=write",
    "--bs=4k",
    "--size=64k",
    "--write_lat_log=L",
    "--write_bw_log=B",
    "--write_iops_log=I",
    "--write_iolog=io.log",
    "--log_offset=1",
];

#[test]
fn per_io_logs_have_fios_files_columns_and_ios() {
    let ours = tempfile::tempdir().unwrap();
    let theirs = tempfile::tempdir().unwrap();
    storlab(ours.path(), &JOB);
    fio(theirs.path(), &JOB);
    let (a, b) = (logs(ours.path()), logs(theirs.path()));
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (name, rows) in &a {
        let theirs = &b[name];
        assert_eq!(rows.len(), theirs.len(), "{name}: lines");
        for (r, t) in rows.iter().zip(theirs) {
            assert_eq!(r.len(), t.len(), "{name}: columns of {r:?} vs {t:?}");
            // direction, block size, offset, priority are the job's own
            assert_eq!(r[2..], t[2..], "{name}");
        }
    }
    // psync has no submission latency: fio leaves that log empty
    assert!(a["L_slat.1.log"].is_empty());
    assert_eq!(a["L_lat.1.log"].len(), 16);
    assert_eq!(
        iolog(&ours.path().join("io.log")),
        iolog(&theirs.path().join("io.log"))
    );
    // the per-IO values: each IO's bandwidth is its bytes over its
    // completion latency, its IOPS 1
    for ((bw, clat), iops) in a["B_bw.1.log"]
        .iter()
        .zip(&a["L_clat.1.log"])
        .zip(&a["I_iops.1.log"])
    {
        assert_eq!(bw[1], 4096 * 1_000_000 / clat[1], "{bw:?} {clat:?}");
        assert_eq!(iops[1], 1);
    }
}

#[test]
fn logged_latencies_are_the_reported_ones() {
    let dir = tempfile::tempdir().unwrap();
    let report = storlab(
        dir.path(),
        &[
            "--device=fusion-io",
            "--name=r",
            "--rw=randrw",
            "--size=16m",
            "--number_ios=3000",
            "--ioengine=libaio",
            "--iodepth=8",
            "--ramp_time=1ms",
            "--write_lat_log=L",
        ],
    );
    let l = logs(dir.path());
    for (d, dir_name) in ["read", "write"].iter().enumerate() {
        let r = &report["jobs"][0][dir_name];
        for (log, key) in [
            ("L_lat.1.log", "lat_ns"),
            ("L_clat.1.log", "clat_ns"),
            ("L_slat.1.log", "slat_ns"),
        ] {
            let v: Vec<u64> = l[log]
                .iter()
                .filter(|row| row[2] == d as u64)
                .map(|row| row[1])
                .collect();
            assert_eq!(
                v.len() as u64,
                r["total_ios"].as_u64().unwrap(),
                "{log} {dir_name}: one line per IO counted (the ramp's left out)"
            );
            let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
            let want = r[key]["mean"].as_f64().unwrap();
            assert!(
                (mean - want).abs() <= 1e-6 * want + 1.0,
                "{log} {dir_name}: {mean} vs {want}"
            );
            assert_eq!(*v.iter().min().unwrap(), r[key]["min"].as_u64().unwrap());
            assert_eq!(*v.iter().max().unwrap(), r[key]["max"].as_u64().unwrap());
        }
    }
}

#[test]
fn averaged_windows_carry_the_rate_and_the_latency() {
    let dir = tempfile::tempdir().unwrap();
    let report = storlab(
        dir.path(),
        &[
            "--device=fusion-io",
            "--name=w",
            "--rw=randread",
            "--rate_iops=1000",
            "--time_based",
            "--runtime=2s",
            "--log_avg_msec=100",
            "--write_lat_log=L",
            "--write_bw_log=B",
            "--write_iops_log=I",
        ],
    );
    let l = logs(dir.path());
    let iops = &l["I_iops.1.log"];
    assert_eq!(iops.len(), 20, "{iops:?}");
    for (k, row) in iops.iter().enumerate() {
        // the last window ends with the thread's last completion
        if k + 1 < iops.len() {
            assert_eq!(row[0], 100 * (k as u64 + 1), "window ends");
        } else {
            assert!((1990..=2000).contains(&row[0]), "{row:?}");
        }
        assert!((990..=1010).contains(&row[1]), "{row:?}");
        assert_eq!(row[3], 0, "averaged lines carry no block size");
    }
    for (bw, iops) in l["B_bw.1.log"].iter().zip(iops) {
        // KiB/s of 4 KiB IOs
        assert!(bw[1].abs_diff(iops[1] * 4) <= 4, "{bw:?} {iops:?}");
    }
    let lat = &l["L_lat.1.log"];
    let mean = lat.iter().map(|r| r[1]).sum::<u64>() as f64 / lat.len() as f64;
    let want = report["jobs"][0]["read"]["lat_ns"]["mean"]
        .as_f64()
        .unwrap();
    assert!((mean - want).abs() < 0.02 * want, "{mean} vs {want}");
}

#[test]
fn log_max_value_logs_each_windows_maximum() {
    // a disk: seeks make latencies differ within a window
    let run = |extra: &[&str]| {
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--device=hdd-7200",
            "--name=m",
            "--rw=randread",
            "--rate_iops=40",
            "--time_based",
            "--runtime=5s",
            "--log_avg_msec=1000",
            "--write_lat_log=L",
        ];
        args.extend(extra);
        storlab(dir.path(), &args);
        logs(dir.path()).remove("L_lat.1.log").unwrap()
    };
    let (means, maxes) = (run(&[]), run(&["--log_max_value=1"]));
    assert_eq!(means.len(), 5);
    assert_eq!(maxes.len(), means.len());
    assert!(maxes
        .iter()
        .zip(&means)
        .all(|(m, a)| m[1] >= a[1] && m[0] == a[0]));
    assert!(maxes.iter().zip(&means).any(|(m, a)| m[1] > a[1]));
}

#[test]
fn shared_logs_and_determinism() {
    let job = [
        "--name=s",
        "--rw=randread",
        "--size=1m",
        "--numjobs=2",
        "--per_job_logs=0",
        "--write_lat_log=S",
        "--write_iolog=io.log",
    ];
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    storlab(a.path(), &job);
    storlab(b.path(), &job);
    let l = logs(a.path());
    assert_eq!(
        l.keys().collect::<Vec<_>>(),
        ["S_clat.log", "S_lat.log", "S_slat.log"]
    );
    assert_eq!(l["S_lat.log"].len(), 2 * 256, "both threads in one file");
    let io = std::fs::read_to_string(a.path().join("io.log")).unwrap();
    assert!(io.contains("storlab-dev0 read") && io.contains("storlab-dev1 read"));
    for name in ["S_lat.log", "S_clat.log", "io.log"] {
        assert_eq!(
            std::fs::read(a.path().join(name)).unwrap(),
            std::fs::read(b.path().join(name)).unwrap(),
            "{name} differs between two runs"
        );
    }
}

#[test]
fn a_log_that_cannot_be_created_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = command::stderr_of_failure(
        Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args(["sim", "--name=e", "--write_bw_log=no/such/dir/b"])
            .current_dir(dir.path()),
    );
    assert!(
        err.contains("write_bw_log") && err.contains("no/such/dir/b_bw.1.log"),
        "{err}"
    );
}

fn totals(report: &Value) -> [(u64, u64); 2] {
    let j = &report["jobs"][0];
    ["read", "write"].map(|d| {
        (
            j[d]["total_ios"].as_u64().unwrap(),
            j[d]["io_bytes"].as_u64().unwrap(),
        )
    })
}

#[test]
fn read_iolog_replays_what_write_iolog_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let common = ["--device=fusion-io", "--ioengine=libaio", "--iodepth=4"];
    let mut write = common.to_vec();
    write.extend([
        "--name=w",
        "--rw=randrw",
        "--bssplit=4k/50:64k/50",
        "--size=16m",
        "--number_ios=2000",
        "--write_iolog=io.log",
    ]);
    let original = storlab(dir.path(), &write);
    for extra in [None, Some("--replay_no_stall=1")] {
        let mut read = common.to_vec();
        read.extend(["--name=r", "--read_iolog=io.log"]);
        read.extend(extra);
        let replayed = storlab(dir.path(), &read);
        assert_eq!(totals(&replayed), totals(&original), "{extra:?}");
    }
}

#[test]
fn read_iolog_reads_fios_own_iolog() {
    let dir = tempfile::tempdir().unwrap();
    fio(
        dir.path(),
        &[
            "--name=f",
            "--rw=randrw",
            "--bs=8k",
            "--size=512k",
            "--write_iolog=fio.iolog",
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("fio.iolog")).unwrap();
    let count = |op: &str| {
        text.lines()
            .filter(|l| l.contains(&format!(" {op} ")))
            .count() as u64
    };
    let report = storlab(dir.path(), &["--name=r", "--read_iolog=fio.iolog"]);
    let [(reads, read_bytes), (writes, _)] = totals(&report);
    assert_eq!((reads, writes), (count("read"), count("write")));
    assert_eq!(reads + writes, 64);
    assert_eq!(read_bytes, reads * 8192);
}

#[test]
fn a_bad_read_iolog_is_an_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.log"),
        "fio version 3 iolog\n0 a add\n0 a open\n5 a read 0 4096\nxx a read\n",
    )
    .unwrap();
    for (file, want) in [("bad.log", "bad.log:5"), ("missing.log", "missing.log")] {
        let err = command::stderr_of_failure(
            Command::new(env!("CARGO_BIN_EXE_storlab"))
                .args(["sim", "--name=e", &format!("--read_iolog={file}")])
                .current_dir(dir.path()),
        );
        assert!(err.contains("read_iolog") && err.contains(want), "{err}");
    }
}
