//! Every fio option the simulator acts on, set to extreme values (zero,
//! one, 2^32, the largest u64, petabytes, negative, a year of time): the
//! job is refused with a message naming the option, or it runs to the end
//! and reports valid JSON. Never a panic (debug builds check overflow), a
//! hang or a wrapped clock.

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::report::{write_json, ReportOptions};
use storlab_workload::fio::{canonical_option, supported_options, OptionEffect};

const VALUES: &[&str] = &[
    "0",
    "1",
    "3",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "1p",
    "365d",
    "-1",
    "4k/50:8k/50",
];

/// The job every case starts from: small, mixed, bounded by IO count.
const BASE: &[&str] = &["--name=x", "--rw=randrw", "--size=16m", "--number_ios=64"];

fn run(device: &str, args: &[String]) -> Result<(), String> {
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, &[]).expect("preset");
    let jobs = storlab_workload::fio::parse_cli_args(args).map_err(|e| e.to_string())?;
    let r = storlab_sim::run::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    write_json(&r.jobs, &mut out, &ReportOptions::default()).map_err(|e| e.to_string())?;
    serde_json::from_slice::<serde_json::Value>(&out)
        .map(|_| ())
        .map_err(|e| format!("RUN OK BUT INVALID JSON: {e}"))
}

/// The message names the option (or, for an alias, its canonical name) as
/// a word of its own.
fn names_option(message: &str, option: &str) -> bool {
    let canonical = canonical_option(option).unwrap_or(option);
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| w == option || w == canonical)
}

#[test]
fn every_simulated_option_at_its_extremes_is_refused_by_name_or_runs() {
    let mut failures = Vec::new();
    let (mut ran, mut refused) = (0, 0);
    // options naming files (fio's logs) write them here, not in the tree
    let files = tempfile::tempdir().unwrap();
    // a device answering at once, an array and a disk (long service times)
    for (device, (name, effect)) in ["null", "moneta-spin", "hdd-7200"]
        .iter()
        .flat_map(|d| supported_options().into_iter().map(move |o| (*d, o)))
    {
        if effect != OptionEffect::Simulated || name == "name" {
            continue;
        }
        for v in VALUES {
            let mut args: Vec<String> = BASE.iter().map(|s| s.to_string()).collect();
            if name.starts_with("write_") {
                args.push(format!("--{name}={}/{v}", files.path().display()));
            } else {
                args.push(format!("--{name}={v}"));
            }
            let outcome = std::panic::catch_unwind(|| run(device, &args));
            match outcome {
                Ok(Ok(())) => ran += 1,
                Ok(Err(e)) if names_option(&e, name) => refused += 1,
                Ok(Err(e)) => failures.push(format!(
                    "{device}: --{name}={v}: refused without naming it: {e}"
                )),
                Err(_) => failures.push(format!("{device}: --{name}={v}: panicked")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran > 50 && refused > 50, "ran {ran}, refused {refused}");
}
