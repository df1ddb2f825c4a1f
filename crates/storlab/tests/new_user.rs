//! What a new user meets in the first hour (issue 44): a key the device
//! does not read is refused; a too-short thrash run says so, with the
//! spread of its samples; each error names the real place (command line,
//! job file, flag, table) and nothing twice; `sim -h` is help.

use std::path::Path;
use std::process::{Command, Output};

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

fn storlab<S: AsRef<str>>(args: &[S]) -> Output {
    storlab_in(args, Path::new("."))
}

fn storlab_in<S: AsRef<str>>(args: &[S], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args.iter().map(|a| a.as_ref()))
        .current_dir(dir)
        .output()
        .expect("run storlab")
}

/// The command fails with one error holding every `want`
/// and none of `not`.
fn refused<S: AsRef<str>>(args: &[S], want: &[&str], not: &[&str]) -> String {
    let out = storlab(args);
    let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} accepted; stderr: {err}");
    // storlab's own errors, or clap's for a flag's value
    assert!(
        err.starts_with("storlab: error: ") || err.starts_with("error: "),
        "{args:?}: {err}"
    );
    assert!(!err.contains("error: error:"), "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: stderr lacks '{w}': {err}");
    }
    for n in not {
        assert!(!err.contains(n), "{args:?}: stderr has '{n}': {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
    err
}

const JOB: &[&str] = &["--name=x", "--rw=randread", "--number_ios=20"];

fn sim(extra: &[&str]) -> Vec<String> {
    std::iter::once("sim")
        .chain(extra.iter().copied())
        .chain(JOB.iter().copied())
        .map(String::from)
        .collect()
}

#[test]
fn a_key_the_device_does_not_read_is_refused_with_its_place() {
    // on the command line: latency_ns is a fixed device's, not an SSD's
    refused(
        &[
            "devices",
            "show",
            "fusion-io",
            "--set",
            "device.latency_ns=5000000",
        ],
        &[
            "command line",
            "`device.latency_ns`",
            "fusion-io",
            "class ssd",
            "only fixed devices",
        ],
        &[],
    );
    refused(
        &sim(&["--device", "fusion-io", "--set", "media.read_ns=100"]),
        &["command line", "`media.read_ns`", "pcie-array and ddr"],
        &[],
    );
    // in a device file, with its line
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("mine.toml");
    std::fs::write(
        &file,
        "extends = \"raid-disk\"\n# a disk has no PCIe array\n[pcie]\ncontrollers = 8\n",
    )
    .expect("write");
    refused(
        &["devices", "show", file.to_str().unwrap()],
        &["mine.toml:4", "`pcie.controllers`", "class raid0"],
        &[],
    );
    // in a RAID's member overrides: named as such, not the command line
    refused(
        &sim(&[
            "--device",
            "raid-disk",
            "--set",
            "raid.member_set=[\"ssd.tags=4\"]",
        ]),
        &["raid.member_set", "`ssd.tags`", "hdd-7200"],
        &["command line:"],
    );
    // a key the device reads is still fine
    let out = storlab(&["devices", "show", "null", "--set", "device.latency_ns=5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_preset_sets_only_keys_its_device_reads() {
    let store = PresetStore::default();
    let list = store.list();
    assert!(list.len() >= 30, "{} presets", list.len());
    for (name, _) in list {
        // load refuses an unused key, naming it
        let (resolved, cfg) =
            SystemConfig::load(&store, &name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        for path in resolved.leaves.keys() {
            assert!(cfg.device.class.reads(path), "{name}: {path}");
        }
    }
}

/// Every value a preset sets says where it comes from (a document, a
/// data sheet, CALIBRATED, ESTIMATE or a design choice) in its comment,
/// which `storlab devices show` prints beside it; only the one-line
/// description and the device class (which model, not a figure) need
/// none.
#[test]
fn every_preset_value_has_a_source() {
    let store = PresetStore::default();
    for (name, _) in store.list() {
        let (resolved, _) =
            SystemConfig::load(&store, &name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (path, leaf) in &resolved.leaves {
            if path == "description" || path == "device.class" {
                continue;
            }
            assert!(
                !leaf.source.trim().is_empty(),
                "{name}: `{path}` has no source comment"
            );
        }
    }
}

#[test]
fn hybrid_thrash_help_gives_an_example_the_device_reads() {
    let out = storlab(&["hybrid", "thrash", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    let example = help
        .split("--set ")
        .nth(2)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no --set example in: {help}"));
    // the default device of thrash is fusion-io
    assert!(help.contains("[default: fusion-io]"), "{help}");
    let out = storlab(&["devices", "show", "fusion-io", "--set", example]);
    assert!(
        out.status.success(),
        "the help's example `--set {example}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_too_short_thrash_run_is_warned_about_with_its_spread() {
    // the run: 10 updates per thread, well under a millisecond
    let out = storlab(&[
        "hybrid",
        "thrash",
        "--size",
        "8m",
        "--dram",
        "4m",
        "--threads",
        "2",
        "--updates",
        "10",
        "--output-format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(r["checksum"], r["expected_checksum"], "{r}");
    assert_eq!(r["repeats"], 3);
    assert_eq!(r["hybrid"]["samples"].as_array().unwrap().len(), 3, "{r}");
    let w = r["warnings"].as_array().unwrap();
    assert!(
        w.iter().any(|w| w
            .as_str()
            .unwrap()
            .starts_with("hybrid: an update phase took")),
        "{r}"
    );
    assert!(
        err.contains("storlab: warning: hybrid: an update phase took"),
        "{err}"
    );
    let [lo, hi] = [0, 1].map(|i| r["relative_range"][i].as_f64().unwrap());
    let rel = r["relative"].as_f64().unwrap();
    assert!(lo <= rel && rel <= hi, "{r}");
    // the DRAM baseline is grown until a phase is long enough to time:
    // it does many times the run's updates (a phase's updates are its
    // fastest rate times its shortest time), and its shortest phase lasts
    // 10 ms or, when a loaded host cut it short even after regrowing
    // (issue 59: 2.9 ms seen), the report says so
    let d = &r["dram"];
    let h = &r["hybrid"];
    let updates = |p: &serde_json::Value| {
        p["max_updates_per_s"].as_f64().unwrap() * p["shortest_s"].as_f64().unwrap()
    };
    assert!(updates(d) >= 2.0 * updates(h), "not grown: {r}");
    assert!(
        d["shortest_s"].as_f64().unwrap() >= 0.010
            || w.iter().any(|w| w
                .as_str()
                .unwrap()
                .starts_with("DRAM: an update phase took")),
        "{r}"
    );

    // the terminal report shows the spread beside the mean
    let out = storlab(&[
        "hybrid",
        "thrash",
        "--size",
        "8m",
        "--dram",
        "4m",
        "--threads",
        "2",
        "--updates",
        "10",
        "--repeats",
        "2",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(mean of 2: "), "{text}");
    assert!(text.contains("the samples allow"), "{text}");
    assert!(text.contains("warning(s) on standard error"), "{text}");
}

#[test]
fn errors_name_their_real_place() {
    // an unknown key blames the command line, not the preset chain
    refused(
        &sim(&["--set", "nosuch.key=4"]),
        &["command line", "unknown field `nosuch`"],
        &["moneta-base"],
    );
    refused(
        &sim(&["--set", "pcie.nosuch=1"]),
        &["command line", "unknown field `nosuch`"],
        &["<-"],
    );
    // a value out of range says where it was set
    refused(
        &sim(&["--set", "pcie.controllers=0"]),
        &["command line: pcie.controllers: 0 is outside 1..=8"],
        &[],
    );
    // an empty job file is named
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.fio");
    std::fs::write(&empty, "; nothing here\n").expect("write");
    let e = empty.to_str().unwrap();
    refused(
        &["sim", e],
        &[&format!("{e}: no job defined")],
        &["command line: no job"],
    );
    // a negative size reaches the size parser
    refused(
        &["serve", "--device", "null", "--size", "-1G"],
        &["--size", "-1G"],
        &["unexpected argument"],
    );
    // one "error:" only
    refused(
        &["pmem", "msync-bench", "--sizes", "-4k"],
        &["--sizes", "-4k"],
        &["error: error:", "unexpected argument"],
    );
    refused(
        &["pmem", "msync-bench", "--nosuch", "1"],
        &["unexpected argument '--nosuch'"],
        &["error: error:"],
    );
    // thrash's flags by their names, once each
    refused(
        &["hybrid", "thrash", "--size", "0"],
        &["--size 0: 0 is not a positive multiple of the page size"],
        &["threads"],
    );
    refused(
        &["hybrid", "thrash", "--size", "4k", "--threads", "1000"],
        &["--size 4k: ", "1000 threads"],
        &[],
    );
    refused(
        &["hybrid", "thrash", "--threads", "0"],
        &["--threads 0: 0 is not 1 to 1024"],
        &["threads: 0 threads"],
    );
    // a misspelt preset offers the near one; a far one offers none
    refused(
        &sim(&["--device", "moneta-spn"]),
        &["did you mean 'moneta-spin'?"],
        &[],
    );
    refused(
        &sim(&["--device", "qqqqqqqq"]),
        &["unknown device 'qqqqqqqq'"],
        &["did you mean"],
    );
    // `app run` checks the device before it starts a server for it
    // (the tests run as root, as `app run` requires)
    refused(
        &[
            "app",
            "run",
            "sqlite",
            "--device",
            "moneta-spn",
            "--duration",
            "1s",
        ],
        &["device 'moneta-spn'", "did you mean 'moneta-spin'?"],
        &["did not start", "error: storlab: error"],
    );
}

#[test]
fn lab_merge_of_one_file_twice_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let out = storlab_in(
        &[
            "lab",
            "sweep",
            "--vary",
            "bs=4k,8k",
            "--shard",
            "1/2",
            "--output",
            "p1.csv",
            "--",
            "--name=x",
            "--rw=read",
            "--number_ios=10",
        ],
        d,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = storlab_in(&["lab", "merge", "p1.csv", "p1.csv"], d);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("p1.csv: given twice"), "{err}");
    assert!(!err.contains("p1.csv:0"), "{err}");
}

#[test]
fn sim_dash_h_is_help_and_fio_options_still_work() {
    for h in ["-h", "--help"] {
        let out = storlab(&["sim", h]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{h}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains("Usage: storlab sim"), "{h}: {text}");
        assert!(text.contains("--device"), "{h}: {text}");
    }
    // -h anywhere among fio options is help too
    let out = storlab(&["sim", "--name=x", "-h", "--rw=read"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: storlab sim"));
    // fio's options, in both forms, still run a job
    let out = storlab(&[
        "sim",
        "--device",
        "null",
        "--name",
        "j",
        "--rw",
        "read",
        "--bs=4k",
        "--number_ios=10",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("j: (groupid=0"), "{text}");
    // other fio short options are still refused by name
    refused(
        &["sim", "-x"],
        &["`-x`: short options are not supported"],
        &[],
    );
}

/// A closed-loop recording (what `storlab app run --record` writes by
/// default): two streams, a flush, lines of stream 1 after stream 0's.
const CLOSED: &str = "storlab-closed 1
columns stream thread rank after op offset len fua arrival_ns complete_ns reply_ns think_ns
# recorded by storlab serve on fusion-io
0 0 0 0 write 0 4096 0 1000 81000 95000 1000
0 0 1 1 flush 0 0 0 120000 128000 131000 39000
0 0 2 2 read 8192 4096 0 140000 150000 151000 12000
1 0 0 0 read 65536 8192 0 50000 70000 71000 50000
";

#[test]
fn trace_stats_and_convert_read_a_closed_loop_recording() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("app.closed");
    std::fs::write(&p, CLOSED).unwrap();
    let f = p.to_str().unwrap();

    let out = storlab(&["trace", "stats", f, "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace stats: {err}");
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // 4 requests, over the recorded 139 us from the first arrival
    assert_eq!(stats["count"], 4, "{stats}");
    assert_eq!(stats["flush"]["count"], 1, "{stats}");
    assert_eq!(stats["duration_ns"], 139_000, "{stats}");

    let out = storlab(&["trace", "stats", f]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // to fio3: the ops in arrival order, with their recorded times (us)
    let out = storlab(&["trace", "convert", f, "-", "--to", "fio3"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace convert: {err}");
    assert!(err.contains("\"input_format\":\"closed\""), "{err}");
    let fio = String::from_utf8_lossy(&out.stdout);
    let ops: Vec<&str> = fio
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() >= 3 && w[0].parse::<u64>().is_ok()).then(|| w[2])
        })
        .filter(|op| ["read", "write", "sync", "trim"].contains(op))
        .collect();
    assert_eq!(ops, ["write", "read", "sync", "read"], "{fio}");
    let times: Vec<u64> = fio
        .lines()
        .filter(|l| l.contains(" read ") || l.contains(" write ") || l.contains(" sync"))
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(times.len(), 4, "{fio}");
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]) && times[3] > 0,
        "{fio}"
    );

    for to in ["msr", "disksim", "blkparse", "fio2"] {
        let o = dir.path().join(format!("out.{to}"));
        let out = storlab(&["trace", "convert", f, o.to_str().unwrap(), "--to", to]);
        assert!(
            out.status.success(),
            "--to {to}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = storlab(&["trace", "stats", o.to_str().unwrap(), "--json"]);
        assert!(
            out.status.success(),
            "{to} back: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // a closed-loop trace is read, not written by convert
    let out = storlab(&["trace", "convert", f, "-", "--to", "closed"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("closed"));
}

/// `app compare` checks every device (and the application) before any
/// run: a typo in the last device fails at once, naming it, with no server
/// started; `--device` is refused for `--devices`.
#[test]
fn app_compare_checks_every_device_before_running() {
    let t = std::time::Instant::now();
    let err = refused(
        &[
            "app",
            "compare",
            "sqlite",
            "--devices",
            "raid-disk,monetaspin",
            "--duration",
            "1s",
        ],
        &["monetaspin", "did you mean 'moneta-spin'?"],
        &["storlab app compare: sqlite on", "did not start"],
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}: {err}",
        t.elapsed()
    );
    refused(
        &["app", "compare", "sqlitee", "--devices", "raid-disk"],
        &["sqlitee"],
        &["storlab app compare: "],
    );
    refused(
        &[
            "app",
            "compare",
            "sqlite",
            "--devices",
            "raid-disk,fusion-io",
            "--device",
            "fusion-io",
        ],
        &["--device", "--devices"],
        &["storlab app compare: sqlite on"],
    );
}

/// A misspelt option gets the nearest storlab or fio option and a short
/// message (not the list of every fio option); a misspelt `--set` key the
/// nearest key; `sim --help` lists `ioengine` among the options with an
/// effect (psync and libaio simulate differently).
#[test]
fn a_misspelt_option_or_key_gets_a_did_you_mean() {
    let err = refused(
        &["sim", "--devcie", "fusion-io", "--rw=randread"],
        &["`--devcie`", "did you mean --device?", "storlab sim --help"],
        &["bssplit"],
    );
    assert!(err.len() < 600, "{} characters: {err}", err.len());
    let err = refused(
        &["sim", "--name=j", "--iodepht=4"],
        &["`--iodepht`", "did you mean --iodepth?"],
        &["bssplit"],
    );
    assert!(err.len() < 600, "{} characters: {err}", err.len());
    refused(
        &["sim", "--zzzzzzzz=1"],
        &["`--zzzzzzzz`"],
        &["did you mean"],
    );
    refused(
        &["sim", "--set", "pcie.controlers=4", "--number_ios=10"],
        &["controlers", "did you mean `pcie.controllers`?"],
        &[],
    );

    let out = storlab(&["sim", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let line = |start: &str| {
        help.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?}: {help}"))
            .to_string()
    };
    let has = |l: &str, w: &str| l.split([',', ' ', ':']).any(|x| x == w);
    let simulated = line("fio options that change the simulation:");
    let recorded = line("fio options accepted without effect on a simulation:");
    assert!(has(&simulated, "ioengine"), "{simulated}");
    assert!(has(&simulated, "iodepth"), "{simulated}");
    assert!(!has(&recorded, "ioengine"), "{recorded}");
}
