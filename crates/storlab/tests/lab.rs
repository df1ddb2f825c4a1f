//! `storlab lab`: reproductions written as files with an honest exit
//! status, sweeps whose shards merge into exactly the unsharded table, and
//! bad input refused with its place.

use std::path::Path;
use std::process::{Command, Output};

fn storlab(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run storlab")
}

fn ok(out: &Output) -> String {
    // on failure both streams: the rows that moved against the verdict
    // record are on stdout
    assert!(
        out.status.success(),
        "exit {}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

/// `key` is a parameter of a preset, the model or an application model,
/// with `CALIBRATED` or a docs/spec citation on its line or the ten lines
/// before it (the fitted parameter names the figure it was fitted to).
fn parameter_documented(key: &str) -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    // the folders and their subfolders (an application split into files)
    let mut dirs: Vec<std::path::PathBuf> = [
        "presets",
        "crates/storlab-apps/src",
        "crates/storlab-model/src/host/fs",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).expect("a source folder") {
            let path = e.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.iter().any(|f| {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines.iter().enumerate().any(|(i, l)| {
            let word = l
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == key);
            word && lines[i.saturating_sub(10)..=i]
                .iter()
                .any(|c| c.contains("CALIBRATED") || c.contains("docs/spec"))
        })
    })
}

fn refused(out: &Output, want: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted; stderr: {err}");
    assert!(err.contains("storlab: error:"), "{err}");
    for w in want {
        assert!(err.contains(w), "stderr lacks '{w}': {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn reproduce_writes_every_study_and_exits_zero_when_all_rows_hold() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = ok(&storlab(&["lab", "reproduce", "--out", "r"], dir.path()));
    assert!(
        text.contains("all studies:") && text.contains(", 0 failing"),
        "{text}"
    );
    // nothing holds by construction without saying so, and no row regressed
    // against the committed record (the run would have failed)
    assert!(text.contains("; 0 rows by construction"), "{text}");
    assert!(!text.contains("(REGRESSION)"), "{text}");
    // the guide's page of totals is the lab's, generated
    let totals = std::fs::read_to_string(dir.path().join("r/totals.md")).expect("totals.md");
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/studies/totals.md"),
    )
    .expect("docs/studies/totals.md");
    assert!(
        totals == page,
        "docs/studies/totals.md is not the lab's totals: copy the run's totals.md over it\n{totals}"
    );
    // the README's figure is the lab's, drawn by this run
    let drawn = std::fs::read_to_string(dir.path().join("r/today-attach.svg")).expect("figure");
    let shown = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/figures/today-attach.svg"),
    )
    .expect("docs/figures/today-attach.svg");
    assert!(
        drawn == shown,
        "docs/figures/today-attach.svg (the README's figure) is not the lab's: copy the run's today-attach.svg over it"
    );
    // the bars: each class's median error and rows beyond 2x at what main
    // reaches (device rows 10.8 % and 12; XDD rows 42.0 % and 3 and
    // application rows 30.3 % and 12 with Table V's RAID-SSD column, all
    // of it predicted; issue 57's memory copies put Varmail's PM-Lat row
    // within 2x; Berkeley DB's deletes of absent keys, which sync nothing
    // as the real program's do, put the RAID-SSD HashTable row at 2.15x,
    // 12 where it was 11), so neither can slip; the device rows' 12 beyond
    // 2x are the five studies' 11 and today-flash's pm9a3 sequential write
    // (issue 63: 2.1x, a known miss). The application bar rose once, from
    // 30.3 % to 31.8 %, when the file layer gained Linux's 30 s expiry of
    // dirty data (a mechanism, not a fit): it writes back 123 more IOs
    // (1 %) in buffered Postmark's disk-RAID run, which moved 2 %
    // (59.75 -> 58.43 s), and the three HASTE Postmark rows (30.0-30.6 %
    // off, at the median) moved to 31.5-33.2 %. It fell to 28.3 % when a
    // cold tree's first reads began reading their directory's and inode's
    // blocks (Build's disk RAID row went from 6.75 % to 12.1 %, within
    // its tolerance of the study's 10 %), and to 22.3 % and 11 beyond 2x
    // when PMFS's writes became non-temporal stores and Filebench ran to
    // its steady state (Varmail's PM-Lat and WebServer rows hold), and
    // to 21.0 % and 10 when a page visit's computation became bound by
    // the host's DRAM bandwidth (CG's and IS's native rates: the
    // Fusion-io's NPB mean holds, the disk RAID's largest slowdown comes
    // within 2x)
    for (label, max_median, max_beyond) in [
        ("device rows", 10.8, 12),
        ("XDD rows (Table V)", 42.0, 3),
        ("application rows", 21.0, 10),
    ] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{label}:")))
            .unwrap_or_else(|| panic!("no summary line for {label}: {text}"));
        let median: f64 = line
            .split("median error ")
            .nth(1)
            .and_then(|t| t.split('%').next())
            .and_then(|n| n.parse().ok())
            .expect("a median");
        let beyond: usize = line
            .split("%, ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("rows beyond 2x");
        assert!(
            median <= max_median && beyond <= max_beyond,
            "{label}: median error {median}% (bar {max_median}%), {beyond} beyond 2x (bar {max_beyond}): {line}"
        );
        assert!(line.ends_with("; 0 by construction"), "{line}");
    }
    let list = ok(&storlab(&["lab", "list"], dir.path()));
    let studies: Vec<&str> = list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(studies.len() >= 5, "{list}");
    // the descriptions start in one column, whatever the names' lengths
    let columns: Vec<usize> = list
        .lines()
        .map(|l| {
            let name = l.split_whitespace().next().unwrap_or("");
            name.len() + l[name.len()..].len() - l[name.len()..].trim_start().len()
        })
        .collect();
    assert!(columns.windows(2).all(|w| w[0] == w[1]), "{list}");
    for study in studies {
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("r").join(format!("{study}.json")))
                .expect("json report"),
        )
        .expect("valid JSON");
        let rows = json["rows"].as_array().expect("rows");
        let held = rows.iter().filter(|r| r["pass"] == true).count();
        let known = rows
            .iter()
            .filter(|r| r["pass"] == false && r["reason"].is_string())
            .count();
        assert_eq!(held + known, rows.len(), "{study}: an unexplained miss");
        let places = storlab_lab::places::PLACES;
        let mut whats = std::collections::BTreeSet::new();
        for r in rows {
            let what = r["what"].as_str().expect("what");
            assert!(whats.insert(what), "{study}: two rows called {what:?}");
            // every target has a published place
            let place = r["place"].as_str().expect("place");
            assert!(places.contains(&place), "{study}: {what}: place {place:?}");
            // a reason only beside a miss
            if r["pass"] == true {
                assert!(
                    r["reason"].is_null(),
                    "{study}: {what}: holds with a reason"
                );
            }
            // an input names the fitted parameter first, and that parameter
            // exists with its calibration or source beside it
            if let Some(input) = r["input"].as_str() {
                let key = input.split_whitespace().next().expect("a key");
                assert!(
                    parameter_documented(key),
                    "{study}: {what}: input {key:?} is no documented parameter"
                );
            }
            // a target is never the model's own figure: a scored row whose
            // model figure equals its target to nine digits is suspect (but
            // for a ratio of 1, "nearly equal", which a mechanism that
            // makes two cases the same meets exactly: the PCM SSD's random
            // against sequential latency)
            if let (Some(v), Some(t)) = (r["value"].as_f64(), r["target"].as_f64()) {
                let exact = (v / t - 1.0).abs() < 1e-9 && t != 1.0;
                assert!(
                    !exact || r["input"].is_string(),
                    "{study}: {what}: the model's {v} is exactly the target"
                );
            }
        }
        assert!(
            text.contains(&format!(
                "{held} of {} within the published tolerance",
                rows.len()
            )),
            "{study}: {text}"
        );
        // the Markdown table has a verdict per row: ok, input or a known miss
        let md = std::fs::read_to_string(dir.path().join("r").join(format!("{study}.md")))
            .expect("markdown report");
        let verdicts = md.matches("| ok |").count()
            + md.matches("| input |").count()
            + md.matches("| **MISS (known: ").count();
        assert_eq!(verdicts, rows.len(), "{study}: {md}");
    }
    for fig in [
        "moneta-bandwidth",
        "haste-ddr-media-sweep",
        "nvmm-msync",
        "paging-thrash",
        "psd-iodepth",
    ] {
        let svg = std::fs::read_to_string(dir.path().join("r").join(format!("{fig}.svg")))
            .expect("figure");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(dir.path().join("r").join(format!("{fig}.csv")).exists());
    }
    let list = ok(&storlab(&["lab", "list"], dir.path()));
    assert_eq!(
        list.lines().count(),
        storlab_lab::studies::STUDIES.len(),
        "{list}"
    );
}

#[test]
fn reproduce_refuses_an_unknown_study_before_running_any() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = storlab(
        &["lab", "reproduce", "psd", "monetta", "--out", "r"],
        dir.path(),
    );
    refused(
        &out,
        &[
            "unknown study 'monetta'",
            "moneta, haste-ddr, psd, nvmm, flash-placement",
        ],
    );
    assert!(
        !dir.path().join("r").exists(),
        "nothing written before the check"
    );
}

const SWEEP: &[&str] = &[
    "lab",
    "sweep",
    "--device",
    "moneta-spin",
    "--vary",
    "bs=512,4k,64k",
    "--vary",
    "pcie.controllers=1,4",
];
const JOB: &[&str] = &[
    "--",
    "--name=x",
    "--rw=randrw",
    "--numjobs=4",
    "--number_ios=300",
];

fn sweep(extra: &[&str], dir: &Path) -> Output {
    let args: Vec<&str> = SWEEP.iter().chain(extra).chain(JOB).copied().collect();
    storlab(&args, dir)
}

#[test]
fn shards_merge_into_the_unsharded_table_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let whole = ok(&sweep(&["--plot", "whole.svg", "--y", "bw_mb_s"], d));
    let lines: Vec<&str> = whole.lines().collect();
    // a plain CSV: the header first
    assert_eq!(
        lines[0],
        "point,bs,pcie.controllers,dir,ios,iops,bw_mb_s,lat_mean_us,clat_mean_us,clat_p50_us,clat_p99_us,clat_p99.9_us"
    );
    assert_eq!(lines.len(), 1 + 6 * 2, "a read and a write row per point");
    assert!(lines[1].starts_with("0,512,1,read,"));
    assert!(lines[12].starts_with("5,64k,4,write,"));
    // more controllers never hurt, and help large random requests
    let bw = |line: &str| -> f64 { line.split(',').nth(6).unwrap().parse().unwrap() };
    assert!(bw(lines[11]) > bw(lines[9]), "{}\n{}", lines[9], lines[11]);
    let svg = std::fs::read_to_string(d.join("whole.svg")).expect("plot");
    assert!(
        svg.contains("pcie.controllers=4 write"),
        "legend names the series"
    );

    for k in 1..=3 {
        let shard = format!("{k}/3");
        let out = format!("part{k}.csv");
        ok(&sweep(&["--shard", &shard, "--output", &out], d));
    }
    let part2 = std::fs::read_to_string(d.join("part2.csv")).expect("shard");
    assert!(part2.starts_with("point,bs,pcie.controllers,dir,"));
    assert!(part2.contains("\n1,512,4,read,") && part2.contains("\n4,64k,1,read,"));
    // the metadata beside it: the whole sweep's size, the shard, the sweep
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("part2.json")).expect("metadata"))
            .expect("JSON");
    assert_eq!(meta["points"], 6);
    assert_eq!(meta["shard"], "2/3");
    assert_eq!(meta["sweep"]["device"], "moneta-spin");
    assert_eq!(meta["sweep"]["vary"][0]["values"][2], "64k");
    let merged = ok(&storlab(
        &["lab", "merge", "part3.csv", "part1.csv", "part2.csv"],
        d,
    ));
    assert_eq!(merged, whole, "merged shards differ from the whole sweep");

    // a shard missing, twice, or from another sweep
    refused(
        &storlab(&["lab", "merge", "part1.csv", "part3.csv"], d),
        &["point 1 of 6 is in none of the tables", "1/3, 3/3"],
    );
    refused(
        &storlab(&["lab", "merge", "part1.csv", "part1.csv"], d),
        &["merge: part1.csv: given twice"],
    );
    // the same shard under another name (its metadata beside it)
    std::fs::copy(d.join("part1.csv"), d.join("copy.csv")).expect("copy");
    std::fs::copy(d.join("part1.json"), d.join("copy.json")).expect("copy");
    refused(
        &storlab(&["lab", "merge", "part1.csv", "copy.csv"], d),
        &["copy.csv", "point 0 is also in an earlier table"],
    );
    ok(&storlab(
        &[
            "lab",
            "sweep",
            "--vary",
            "bs=4k,8k",
            "--shard",
            "2/3",
            "--output",
            "other.csv",
            "--",
            "--name=x",
            "--rw=read",
            "--number_ios=10",
        ],
        d,
    ));
    refused(
        &storlab(&["lab", "merge", "part1.csv", "other.csv"], d),
        &["other.csv", "a different sweep"],
    );
    // the same parameters and points, another seed: another sweep
    ok(&sweep(
        &["--seed", "7", "--shard", "2/3", "--output", "seed7.csv"],
        d,
    ));
    refused(
        &storlab(&["lab", "merge", "part1.csv", "seed7.csv", "part3.csv"], d),
        &["seed7.csv", "a different sweep"],
    );
    // a damaged table: file and line
    let meta2 = std::fs::read_to_string(d.join("part2.json")).expect("metadata");
    let bad = part2.replacen(",read,", ",", 1);
    std::fs::write(d.join("bad.csv"), bad).expect("write");
    std::fs::write(d.join("bad.json"), &meta2).expect("write");
    refused(
        &storlab(&["lab", "merge", "part1.csv", "bad.csv", "part3.csv"], d),
        &["bad.csv:2:", "11 fields, the header has 12"],
    );
    let moved = part2.replacen("\n1,", "\n0,", 1);
    std::fs::write(d.join("moved.csv"), moved).expect("write");
    std::fs::write(d.join("moved.json"), &meta2).expect("write");
    refused(
        &storlab(&["lab", "merge", "moved.csv"], d),
        &["moved.csv:2:", "point 0 is not in shard 2/3"],
    );
    // no metadata, or not a table's
    std::fs::write(d.join("not.csv"), "a,b\n1,2\n").expect("write");
    refused(
        &storlab(&["lab", "merge", "not.csv"], d),
        &["not.json: the metadata of not.csv"],
    );
    std::fs::write(d.join("not.json"), "{\"a\": 1}").expect("write");
    refused(
        &storlab(&["lab", "merge", "not.csv"], d),
        &["not.json:1:", "not the metadata of a storlab sweep table"],
    );
    // a shard needs --output (its metadata goes beside it)
    refused(&sweep(&["--shard", "1/3"], d), &["--shard needs --output"]);
}

#[test]
fn gnu_parallel_runs_the_shards_of_a_sweep() {
    // an existing engine that runs commands (the README names Slurm arrays,
    // Kubernetes jobs, Ray tasks; GNU parallel is the one on this machine)
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let whole = ok(&sweep(&[], d));
    let mut cmd: Vec<String> = vec![env!("CARGO_BIN_EXE_storlab").into()];
    cmd.extend(SWEEP[..].iter().map(|s| s.to_string()));
    cmd.extend(["--shard", "{}/4", "--output", "part{}.csv"].map(String::from));
    cmd.extend(JOB.iter().map(|s| s.to_string()));
    let out = Command::new("parallel")
        .args(["--halt", "now,fail=1", "-j", "2"])
        .arg(cmd.join(" "))
        .args([":::", "1", "2", "3", "4"])
        .current_dir(d)
        .output()
        .expect("GNU parallel (Debian package parallel; scripts/test installs it)");
    ok(&out);
    let merged = ok(&storlab(
        &[
            "lab",
            "merge",
            "part1.csv",
            "part2.csv",
            "part3.csv",
            "part4.csv",
        ],
        d,
    ));
    assert_eq!(merged, whole);
}

#[test]
fn a_sweep_can_measure_one_job_group() {
    // a warm-up group writes, the measured group reads: with --job only
    // the reads are in the table
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "lab",
        "sweep",
        "--vary",
        "bs=4k,64k",
        "--job",
        "measured",
        "--",
        "--name=warmup",
        "--rw=write",
        "--size=16m",
        "--name=measured",
        "--stonewall",
        "--rw=randread",
        "--size=16m",
        "--number_ios=200",
    ];
    let t = ok(&storlab(&args, dir.path()));
    let rows: Vec<&str> = t.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{t}");
    assert!(rows.iter().all(|r| r.contains(",read,200,")), "{t}");
    let all = ok(&storlab(
        &args
            .iter()
            .filter(|a| **a != "--job" && **a != "measured")
            .copied()
            .collect::<Vec<_>>(),
        dir.path(),
    ));
    assert!(
        all.contains(",write,"),
        "without --job the warm-up counts: {all}"
    );
    let mut bad = args.to_vec();
    bad[5] = "nosuch";
    refused(&storlab(&bad, dir.path()), &["no job called 'nosuch'"]);
}

#[test]
fn bad_sweeps_are_refused_with_their_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let run = |args: &[&str]| {
        let mut a = vec!["lab", "sweep"];
        a.extend_from_slice(args);
        storlab(&a, d)
    };
    refused(&run(&["--vary", "bs"]), &["--vary bs", "NAME=V1,V2"]);
    refused(
        &run(&["--vary", "bs=4k", "--shard", "4/3"]),
        &["--shard 4/3"],
    );
    refused(
        &run(&["--vary", "bs=4k", "--y", "speed"]),
        &["--y speed", "iops"],
    );
    refused(
        &run(&["--vary", "bs=4k", "--", "jobs/latency.fio"]),
        &["--vary bs", "job file jobs/latency.fio"],
    );
    refused(
        &run(&[
            "--vary",
            "pcie.controllers=0",
            "--",
            "--name=x",
            "--number_ios=10",
        ]),
        &["pcie.controllers"],
    );
    refused(
        &run(&["--vary", "bs=4q", "--", "--name=x", "--number_ios=10"]),
        &["4q"],
    );
    refused(
        &run(&[
            "--vary",
            "rw=read,write",
            "--plot",
            "p.svg",
            "--",
            "--name=x",
            "--number_ios=10",
        ]),
        &["rw=read is not a number"],
    );
}
