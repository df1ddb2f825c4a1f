//! fio's `max_latency`: the first IO slower than it ends the job with
//! ETIMEDOUT (110) in the report, fio's message on standard error and a
//! failing exit status, as fio 3.33 does.

use std::process::{Command, Output};

use serde_json::Value;

fn storlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(["sim", "--name=m", "--rw=randread", "--size=64m"])
        .args(args)
        .output()
        .expect("run storlab")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).expect("the report is complete")
}

#[test]
fn a_job_stops_at_its_first_io_past_max_latency() {
    // hdd-7200 random reads take 1-9 ms
    let base = [
        "--device=hdd-7200",
        "--number_ios=100",
        "--output-format=json",
    ];
    for limit in ["5000", "5ms"] {
        let arg = format!("--max_latency={limit}");
        let out = storlab(&[&base[..], &[&arg]].concat());
        assert_eq!(out.status.code(), Some(1), "{limit}");
        let j = &json(&out)["jobs"][0];
        assert_eq!(j["error"], 110);
        let ios = j["read"]["total_ios"].as_u64().unwrap();
        assert!((1..100).contains(&ios), "{ios}");
        assert!(j["read"]["lat_ns"]["max"].as_u64().unwrap() > 5_000_000);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("exceeds specified max (5000000 nsec)") && err.contains("1 job(s) failed"),
            "{err}"
        );
    }
    let out = storlab(&[&base[..], &["--max_latency=100ms"]].concat());
    assert!(out.status.success());
    let j = &json(&out)["jobs"][0];
    assert_eq!(
        (j["error"].as_u64(), j["read"]["total_ios"].as_u64()),
        (Some(0), Some(100))
    );

    let text = storlab(&["--device=hdd-7200", "--number_ios=100", "--max_latency=5ms"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("err=110 (func=max latency exceeded"),
        "{text}"
    );
}

/// The same job as fio's: a limit of 1 µs stops it with error 110 and a
/// failing exit status, in both.
#[test]
fn as_fio_a_one_microsecond_limit_stops_after_one_io() {
    let ours = storlab(&[
        "--device=fusion-io",
        "--max_latency=1",
        "--output-format=json",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let theirs = Command::new("fio")
        .args([
            "--name=m",
            "--rw=randread",
            "--size=64m",
            "--ioengine=null",
            "--max_latency=1",
            "--output-format=json",
        ])
        .current_dir(dir.path())
        .output()
        .expect("fio is installed (apt-get install fio)");
    assert_eq!(ours.status.code(), theirs.status.code());
    // fio prints its error line before the JSON
    let text = String::from_utf8_lossy(&theirs.stdout);
    let theirs: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let ours = json(&ours);
    for v in [&ours, &theirs] {
        assert_eq!(v["jobs"][0]["error"], 110);
    }
    // fusion-io takes tens of µs: the first IO is past the limit (fio's
    // null engine usually stops at its first too, but its speed is the
    // host's to decide)
    assert_eq!(ours["jobs"][0]["read"]["total_ios"], 1);
}
