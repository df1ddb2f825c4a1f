//! fio's `unified_rw_reporting`: the same report layout as fio 3.33 for
//! none, mixed and both, and a `mixed` direction that sums the others.

#[path = "../../../testsupport/command.rs"]
mod command;

use std::process::Command;

use serde_json::Value;

fn storlab(args: &[&str]) -> String {
    let out = command::stdout_of(
        Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args([
                "sim",
                "--device=fusion-io",
                "--name=u",
                "--rw=randrw",
                "--size=4m",
            ])
            .args(args),
    );
    String::from_utf8(out).unwrap()
}

fn fio_json(args: &[&str]) -> Value {
    let out = command::stdout_of(
        Command::new("fio")
            .args([
                "--ioengine=null",
                "--output-format=json",
                "--name=u",
                "--rw=randrw",
                "--size=4m",
            ])
            .args(args),
    );
    serde_json::from_slice(&out).unwrap()
}

/// The job object's keys up to `job_runtime`: the directions and their order.
fn direction_keys(v: &Value) -> Vec<String> {
    v["jobs"][0]
        .as_object()
        .unwrap()
        .keys()
        .skip_while(|k| *k != "job options")
        .skip(1)
        .take_while(|k| *k != "job_runtime")
        .cloned()
        .collect()
}

#[test]
fn the_layout_is_fios_for_every_mode() {
    for mode in ["0", "none", "1", "mixed", "2", "both"] {
        let arg = format!("--unified_rw_reporting={mode}");
        let ours: Value = serde_json::from_str(&storlab(&["--output-format=json", &arg])).unwrap();
        let theirs = fio_json(&[&arg]);
        assert_eq!(direction_keys(&ours), direction_keys(&theirs), "{mode}");
    }
}

#[test]
fn mixed_sums_the_directions() {
    let both: Value = serde_json::from_str(&storlab(&[
        "--output-format=json",
        "--unified_rw_reporting=both",
    ]))
    .unwrap();
    let j = &both["jobs"][0];
    let (r, w, m) = (&j["read"], &j["write"], &j["mixed"]);
    let u = |v: &Value, k: &str| v[k].as_u64().unwrap();
    assert!(u(r, "total_ios") > 0 && u(w, "total_ios") > 0);
    for k in ["total_ios", "io_bytes"] {
        assert_eq!(u(m, k), u(r, k) + u(w, k), "{k}");
    }
    let n = |v: &Value| v["total_ios"].as_f64().unwrap();
    let mean = |v: &Value| v["clat_ns"]["mean"].as_f64().unwrap();
    let want = (mean(r) * n(r) + mean(w) * n(w)) / n(m);
    assert!(
        (mean(m) - want).abs() < 1e-6 * want,
        "{} vs {want}",
        mean(m)
    );
    assert_eq!(
        u(&m["clat_ns"], "max"),
        u(&r["clat_ns"], "max").max(u(&w["clat_ns"], "max"))
    );

    // mixed alone: the same numbers, in the directions' place
    let mixed: Value = serde_json::from_str(&storlab(&[
        "--output-format=json",
        "--unified_rw_reporting=mixed",
    ]))
    .unwrap();
    assert_eq!(mixed["jobs"][0]["mixed"], *m);
    assert!(mixed["jobs"][0].get("read").is_none());
}

#[test]
fn the_terminal_report_shows_mixed_as_fio_does() {
    let text = storlab(&["--unified_rw_reporting=1"]);
    assert!(text.contains("\n  mixed: IOPS="), "{text}");
    assert!(text.contains("\n  MIXED: bw="), "{text}");
    assert!(
        !text.contains("\n  read: ") && !text.contains("   READ: bw="),
        "{text}"
    );
    assert!(text.contains("issued rwts: total=1024,0,0,0"), "{text}");
    let both = storlab(&["--unified_rw_reporting=2"]);
    for line in [
        "\n  read: ",
        "\n  write: ",
        "\n  mixed: ",
        "   READ: bw=",
        "  MIXED: bw=",
    ] {
        assert!(both.contains(line), "{line}: {both}");
    }
}

#[test]
fn an_unknown_mode_is_refused_by_name() {
    let err = command::stderr_of_failure(Command::new(env!("CARGO_BIN_EXE_storlab")).args([
        "sim",
        "--name=u",
        "--unified_rw_reporting=3",
    ]));
    assert!(
        err.contains("unified_rw_reporting") && err.contains("mixed"),
        "{err}"
    );
}
