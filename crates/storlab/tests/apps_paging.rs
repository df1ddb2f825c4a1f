//! `storlab sim --app npb-XX`: a paging program through the swap path
//! with the `--device` preset as the swap device; fio's JSON layout with
//! the `app` object (metric paged and with enough DRAM), deterministic;
//! bad parameters refused by name.

use std::process::{Command, Output};

fn storlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(args)
        .output()
        .expect("run storlab")
}

fn app(device: &str, name: &str, set: &str) -> serde_json::Value {
    let out = storlab(&[
        "sim",
        "--device",
        device,
        "--app",
        name,
        "--app-set",
        set,
        "--output-format=json",
    ]);
    assert!(
        out.status.success(),
        "exit {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    v["jobs"][0]["app"].clone()
}

/// A quarter of the default sizes (16 MiB of DRAM), one pass.
const SMALL: &str = "scale=0.25,passes=1";

#[test]
fn the_json_has_the_app_object_and_runs_are_deterministic() {
    let a = app("moneta-balance", "npb-bt", SMALL);
    assert_eq!(a["name"], "npb-bt");
    assert_eq!(a["unit"], "instructions/s");
    let m = a["metric"].as_f64().expect("metric");
    let e = a["metric_enough_dram"].as_f64().expect("enough");
    let rel = a["relative_to_enough_dram"].as_f64().expect("relative");
    assert!(m > 0.0 && m < e, "{a}");
    assert!((rel - m / e).abs() < 1e-9, "{a}");
    assert!(
        a["paged"]["major_faults"].as_u64().expect("faults") > 0,
        "{a}"
    );
    assert_eq!(a["dram_bytes"], 16 << 20);
    // the time computing is the paged run's share of enough DRAM's pace
    let cpu = a["time_by_layer"]["application_cpu"]["share"]
        .as_f64()
        .expect("cpu");
    let swap = a["time_by_layer"]["swap"]["share"].as_f64().expect("swap");
    assert!((cpu + swap - 1.0).abs() < 1e-9 && swap > cpu, "{a}");
    assert!((cpu / rel - 1.0).abs() < 0.05, "{a}");
    assert_eq!(a, app("moneta-balance", "npb-bt", SMALL));
}

#[test]
fn a_slower_swap_device_pages_slower() {
    let rel = |d: &str| {
        app(d, "npb-is", SMALL)["relative_to_enough_dram"]
            .as_f64()
            .expect("relative")
    };
    let (moneta, ssd) = (rel("moneta-balance"), rel("raid-ssd"));
    assert!(moneta > ssd, "moneta {moneta}, raid-ssd {ssd}");
}

#[test]
fn the_terminal_report_and_bad_parameters() {
    let out = storlab(&[
        "sim",
        "--device",
        "haste-pcm",
        "--app",
        "npb-lu",
        "--app-set",
        SMALL,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("enough DRAM") && text.contains("slower"),
        "{text}"
    );
    let out = storlab(&[
        "sim",
        "--device",
        "haste-pcm",
        "--app",
        "npb-lu",
        "--app-set",
        "passes=0",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("passes=0") && err.contains("--app-set"),
        "{err}"
    );
}

#[test]
fn a_job_file_runs_a_paging_program_as_the_command_line_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bt.fio");
    std::fs::write(&file, format!("[bt]\napp=npb-bt\napp_set={SMALL}\n")).expect("write");
    let f = file.to_str().expect("utf-8");
    let out = storlab(&[
        "sim",
        "--device",
        "moneta-balance",
        "--output-format=json",
        f,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let from_file = &v["jobs"][0]["app"];
    let from_cli = app("moneta-balance", "npb-bt", SMALL);
    assert_eq!(from_file["metric"], from_cli["metric"], "{from_file}");
    // beside a fio job it is refused, naming the job file's app line
    std::fs::write(
        &file,
        format!("[bt]\napp=npb-bt\napp_set={SMALL}\n[r]\nrw=randread\nsize=1m\nnumber_ios=10\n"),
    )
    .expect("write");
    let out = storlab(&["sim", "--device", "moneta-balance", f]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("paging program") && err.contains("bt.fio"),
        "{err}"
    );
}

/// The command line is the lab (issue 57 item 5): `storlab sim --app
/// npb-ua --device raid-disk` with no device overrides gives the figure
/// the apps-paging study's run gives, because the program itself scales
/// the device's caches with its DRAM (`paging::scaled_device`), whoever
/// runs it; and that rule is in force (the disk RAID's 256 MB controller
/// cache and its drives' 32 MB buffers and read-ahead shrink with the
/// DRAM, a flash device is untouched).
#[test]
fn the_command_line_gives_the_labs_figure() {
    let set = "scale=0.25,passes=1";
    let cli = app("raid-disk", "npb-ua", set)["metric"]
        .as_f64()
        .expect("metric");
    let pairs: Vec<String> = set.split(',').map(String::from).collect();
    let lab = storlab_lab::studies::apps_paging::run("npb-ua", "raid-disk", &pairs)
        .expect("lab run")
        .metric;
    assert!(
        cli > 0.0 && (cli / lab - 1.0).abs() < 1e-9,
        "cli {cli} lab {lab}"
    );

    let store = storlab_model::config::PresetStore::default();
    let load = |d: &str| {
        storlab_model::SystemConfig::load(&store, d, &[])
            .expect("preset")
            .1
    };
    let dram = 16u64 << 20; // 8 GB / 512
    let raid =
        storlab_apps::paging::scaled_device(&store, &load("raid-disk"), dram).expect("scales");
    let r = raid.raid.as_ref().expect("raid");
    assert_eq!(
        r.controller.as_ref().expect("controller").cache_bytes,
        268_435_456 / 512
    );
    // the preset's member overrides are kept, the scaled caches come last
    assert!(
        r.member_set.contains(&"disk.write_cache=false".to_string()),
        "{:?}",
        r.member_set
    );
    assert!(
        r.member_set
            .contains(&format!("disk.cache_bytes={}", 33_554_432 / 512)),
        "{:?}",
        r.member_set
    );
    assert!(
        r.member_set
            .contains(&format!("disk.read_ahead_bytes={}", 262_144 / 512)),
        "{:?}",
        r.member_set
    );
    // the ioDrive has no cache to scale; the DRAM its driver keeps for
    // itself (800 MB of the studies' 8 GB) shrinks with the DRAM
    let fio = load("fusion-io");
    let mut scaled = storlab_apps::paging::scaled_device(&store, &fio, dram).expect("scales");
    assert_eq!(
        scaled.host.driver_memory_bytes,
        (838_860_800f64 * dram as f64 / (8u64 << 30) as f64).round() as u64
    );
    scaled.host.driver_memory_bytes = fio.host.driver_memory_bytes;
    assert_eq!(format!("{fio:?}"), format!("{scaled:?}"));
    // at the studies' DRAM nothing changes
    let full =
        storlab_apps::paging::scaled_device(&store, &load("raid-disk"), 8 << 30).expect("scales");
    assert_eq!(
        full.raid
            .as_ref()
            .and_then(|r| r.controller.as_ref())
            .map(|c| c.cache_bytes),
        Some(268_435_456)
    );
}
