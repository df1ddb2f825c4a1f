//! `storlab paging`: a memory workload through the swap model on any swap
//! device, beside enough DRAM; bad input refused with the flag or key.

use std::process::{Command, Output};

fn storlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args)
        .output()
        .expect("run storlab")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = storlab(args);
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

const SMALL: [&str; 8] = [
    "paging",
    "--json",
    "--dram",
    "16m",
    "--threads",
    "4",
    "--accesses",
    "256",
];

#[test]
fn an_array_past_dram_pages_and_a_slower_device_pages_slower() {
    let run = |dev: &str, array: &str| {
        let mut a = SMALL.to_vec();
        a.extend(["--swap-device", dev, "--array", array]);
        json(&a)
    };
    let fits = run("fusion-io", "8m");
    let rel = fits["relative_to_enough_dram"].as_f64().expect("relative");
    assert!(
        rel > 0.9,
        "an array half of DRAM runs near DRAM speed: {fits}"
    );
    assert_eq!(fits["paged"]["major_faults"], 0, "{fits}");
    let flash = run("fusion-io", "64m");
    let pcm = run("moneta-spin", "64m");
    let (f, p) = (
        flash["relative_to_enough_dram"].as_f64().expect("relative"),
        pcm["relative_to_enough_dram"].as_f64().expect("relative"),
    );
    assert!(
        flash["paged"]["major_faults"].as_u64().expect("faults") > 100,
        "{flash}"
    );
    assert!(f < 0.1 && p < 0.1, "4x DRAM pages: flash {f}, pcm {p}");
    assert!(
        p > f,
        "the PCM array pages faster than the flash SSD: {p} vs {f}"
    );
    // deterministic for a seed
    assert_eq!(run("fusion-io", "64m"), flash);
}

#[test]
fn the_text_report_names_the_swap_device() {
    let out = storlab(&[
        "paging",
        "--dram",
        "16m",
        "--array",
        "32m",
        "--threads",
        "2",
        "--accesses",
        "64",
        "--swap-device",
        "raid-ssd",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("swap on raid-ssd") && text.contains("slower"),
        "{text}"
    );
    // rates as people read them, not `4.6781e4 accesses/s`
    for l in text
        .lines()
        .filter(|l| l.contains("paged:") || l.contains("enough DRAM:") || l.contains("relative:"))
    {
        let number = l
            .split(':')
            .nth(1)
            .unwrap_or("")
            .split_whitespace()
            .next()
            .unwrap_or("");
        assert!(
            number.parse::<f64>().is_ok() && !number.contains('e'),
            "{l}"
        );
    }
}

#[test]
fn bad_input_is_refused_with_its_place() {
    for (args, want) in [
        (vec!["--pattern", "zipf"], "--pattern zipf"),
        (vec!["--pattern", "hot:x:0.9"], "--pattern hot:x:0.9"),
        (vec!["--pattern", "hot:0:0.9"], "hot set"),
        (vec!["--write-fraction", "1.5"], "write_fraction"),
        (vec!["--swap-device", "no-such-disk"], "no-such-disk"),
        (vec!["--set", "swap.page_cluster=99"], "swap.page_cluster"),
        (vec!["--threads", "0"], "--threads"),
        (vec!["--array", "4k"], "--array"),
        (vec!["--device", "moneta-spin"], "swap"),
    ] {
        let mut a = vec!["paging", "--dram", "16m", "--array", "32m"];
        a.extend(args.iter().copied());
        let out = storlab(&a);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{a:?} accepted");
        assert!(err.contains(want), "{a:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `--access-bytes`: an access whose computation runs over a whole page
/// (4,096 bytes) waits for the memory channels where a cache line does
/// not: with 16 threads and 100 ns of CPU an access, enough DRAM runs
/// slower, and the report counts the bound accesses.
#[test]
fn access_bytes_bound_the_computation_by_the_dram_bandwidth() {
    let run = |bytes: &str| {
        json(&[
            "paging",
            "--json",
            "--dram",
            "16m",
            "--array",
            "8m",
            "--accesses",
            "256",
            "--cpu-ns",
            "100",
            "--write-fraction",
            "0",
            "--access-bytes",
            bytes,
        ])
    };
    let line = run("64");
    let page = run("4096");
    let rate = |v: &serde_json::Value| v["enough_dram"]["accesses_per_s"].as_f64().expect("rate");
    // 4 KiB x 16 / 35 GB/s = 1.9 us against 100 ns + 150 ns (a line's
    // 29 ns is under the CPU's 100)
    assert!(rate(&page) * 5.0 < rate(&line), "{page} {line}");
    assert!(
        page["enough_dram"]["bandwidth_bound"]
            .as_u64()
            .expect("count")
            > 0,
        "{page}"
    );
    assert_eq!(line["enough_dram"]["bandwidth_bound"], 0, "{line}");
}
