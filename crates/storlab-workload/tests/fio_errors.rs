//! Errors name the place, the option, the value and the reason; nothing
//! panics on bad input.

mod common;

use common::no_env;
use storlab_workload::fio::{parse_job_file, parse_job_str_with_env, FioError};

fn err(text: &str) -> FioError {
    match parse_job_str_with_env("jobs/bad.fio", text, &no_env) {
        Ok(jf) => panic!("accepted:\n{text}\n=> {jf:?}"),
        Err(e) => e,
    }
}

#[test]
fn unknown_option_names_file_line_option_and_supported_list() {
    let e = err("[global]\nbs=4k\n\n[job]\nrw=read\nverify=crc32c\n");
    let msg = e.to_string();
    assert!(msg.contains("jobs/bad.fio:6"), "{msg}");
    assert!(msg.contains("`verify`"), "{msg}");
    assert!(msg.contains("supported options:"), "{msg}");
    for name in [
        "bssplit",
        "random_distribution",
        "iodepth",
        "rate_iops",
        "time_based",
    ] {
        assert!(msg.contains(name), "{name} missing from: {msg}");
    }
    match e {
        FioError::UnsupportedOption {
            location, option, ..
        } => {
            assert_eq!(location.source, "jobs/bad.fio");
            assert_eq!(location.line, 6);
            assert_eq!(option, "verify");
        }
        other => panic!("wrong variant {other:?}"),
    }
}

#[test]
fn unknown_option_suggests_the_close_one() {
    let msg = err("[job]\niodpeth=4\n").to_string();
    assert!(msg.contains("did you mean `iodepth`"), "{msg}");
    let msg = err("[job]\nzzzzzz=4\n").to_string();
    assert!(!msg.contains("did you mean"), "{msg}");
}

#[test]
fn unknown_option_in_global_is_reported_there() {
    let msg = err("[global]\nverify=md5\n[job]\n").to_string();
    assert!(msg.contains("jobs/bad.fio:2"), "{msg}");
    assert!(msg.contains("verify"), "{msg}");
}

#[test]
fn invalid_values_name_file_line_option_value_and_reason() {
    let cases: &[(&str, usize, &str, &str, &str)] = &[
        ("[j]\nbs=4q\n", 2, "bs", "4q", "unknown unit"),
        ("[j]\n\niodepth=0\n", 3, "iodepth", "0", "from 1 to"),
        ("[j]\nrw=sideways\n", 2, "rw", "sideways", "randread"),
        (
            "[j]\nrwmixread=101\n",
            2,
            "rwmixread",
            "101",
            "from 0 to 100",
        ),
        ("[j]\nsize=1.5g\n", 2, "size", "1.5g", "fractional"),
        ("[j]\nsize=150%\n", 2, "size", "150%", "percentage"),
        (
            "[j]\nruntime=10parsecs\n",
            2,
            "runtime",
            "10parsecs",
            "time unit",
        ),
        ("[j]\ndirect=yes\n", 2, "direct", "yes", "0 or 1"),
        (
            "[j]\nioengine=libiao\n",
            2,
            "ioengine",
            "libiao",
            "no such IO engine",
        ),
        (
            "[j]\nbssplit=4k/60:8k/50\n",
            2,
            "bssplit",
            "4k/60:8k/50",
            "more than 100",
        ),
        ("[j]\nbs=1,2,3,4\n", 2, "bs", "1,2,3,4", "at most three"),
        (
            "[j]\nrandom_distribution=zipf:1.0\n",
            2,
            "random_distribution",
            "zipf:1.0",
            "theta",
        ),
        (
            "[j]\nrandom_distribution=zoned:50/50\n",
            2,
            "random_distribution",
            "zoned:50/50",
            "add up to 50",
        ),
        (
            "[j]\nrandom_distribution=cauchy\n",
            2,
            "random_distribution",
            "cauchy",
            "expected random",
        ),
        ("[j]\nsize=(1+2)*4k\n", 2, "size", "(1+2)*4k", "arithmetic"),
        (
            "[j]\nsize=$mb_memory\n",
            2,
            "size",
            "$mb_memory",
            "reserved keywords",
        ),
        ("[j]\nbsrange=4k\n", 2, "bsrange", "4k", "range"),
        ("[j]\nnumjobs=0\n", 2, "numjobs", "0", "from 1 to"),
        (
            "[j]\npercentage_random=50,101\n",
            2,
            "percentage_random",
            "50,101",
            "from 0 to 100",
        ),
        ("[j]\nbs\n", 2, "bs", "", "needs a value"),
        ("[j]\ntime_based=2\n", 2, "time_based", "2", "0 or 1"),
    ];
    for (text, line, option, value, why) in cases {
        let e = err(text);
        let msg = e.to_string();
        match &e {
            FioError::InvalidValue {
                location,
                option: o,
                value: v,
                reason,
            } => {
                assert_eq!(location.line, *line, "{msg}");
                assert_eq!(o, option, "{msg}");
                assert_eq!(v, value, "{msg}");
                assert!(reason.contains(why), "`{why}` not in: {msg}");
            }
            other => panic!("{text:?}: wrong variant {other:?}"),
        }
        assert!(msg.starts_with(&format!("jobs/bad.fio:{line}: ")), "{msg}");
        assert!(msg.contains(&format!("`{option}`")), "{msg}");
    }
}

#[test]
fn cross_option_errors_name_the_job() {
    match err("[global]\nruntime=0\n[timed]\ntime_based\n") {
        FioError::InvalidJob {
            location,
            job,
            reason,
        } => {
            assert_eq!(job, "timed");
            assert_eq!(location.line, 3);
            assert!(reason.contains("runtime"), "{reason}");
        }
        other => panic!("wrong variant {other:?}"),
    }
}

#[test]
fn structural_errors() {
    let cases: &[(&str, &str)] = &[
        ("bs=4k\n[j]\n", "outside of any [section]"),
        ("[j\nbs=4k\n", "malformed section header"),
        ("[]\n", "empty section name"),
        ("[j]\nbs 4k\n", "malformed line"),
        ("[j]\n=4k\n", "malformed line"),
        ("", "no job defined"),
        ("; only comments\n# here\n", "no job defined"),
        ("[global]\nbs=4k\n", "no job defined"),
        (
            "[j]\ninclude other.fio\n",
            "only possible in a job file read from disk",
        ),
    ];
    for (text, want) in cases {
        let msg = err(text).to_string();
        assert!(msg.contains(want), "{text:?}: `{want}` not in `{msg}`");
    }
}

#[test]
fn truncated_and_garbage_files_are_errors_not_panics() {
    let full = std::fs::read_to_string(common::data("options.fio")).unwrap();
    let mut accepted = 0;
    for cut in 0..full.len() {
        if !full.is_char_boundary(cut) {
            continue;
        }
        if parse_job_str_with_env("cut.fio", &full[..cut], &no_env).is_ok() {
            accepted += 1;
        }
    }
    // Cuts inside the first section header or before it cannot parse; most
    // later cuts give a shorter valid file or a located error.
    assert!(accepted > 0);
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let text = String::from_utf8_lossy(&garbage);
    assert!(parse_job_str_with_env("garbage", &text, &no_env).is_err());
    // A binary file on disk: read lossily, rejected with a located error.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin.fio");
    std::fs::write(&path, &garbage).unwrap();
    assert!(parse_job_file(&path).is_err());
}

#[test]
fn missing_files_and_include_cycles() {
    let e = parse_job_file(std::path::Path::new("/nonexistent/x.fio")).unwrap_err();
    assert!(matches!(e, FioError::Io { .. }), "{e}");
    assert!(e.to_string().contains("/nonexistent/x.fio"));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.fio"), "[j]\ninclude b.fio\n").unwrap();
    std::fs::write(dir.path().join("b.fio"), "include c.fio\n").unwrap();
    std::fs::write(dir.path().join("c.fio"), "include b.fio\n").unwrap();
    let msg = parse_job_file(&dir.path().join("a.fio"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("nested more than"), "{msg}");

    std::fs::write(dir.path().join("d.fio"), "[j]\ninclude missing.fio\n").unwrap();
    let e = parse_job_file(&dir.path().join("d.fio")).unwrap_err();
    assert!(matches!(e, FioError::Io { .. }), "{e}");

    std::fs::write(dir.path().join("e.fio"), "[j]\ninclude f.fio\n").unwrap();
    std::fs::write(dir.path().join("f.fio"), "[k]\n").unwrap();
    let msg = parse_job_file(&dir.path().join("e.fio"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("f.fio:1") && msg.contains("may not contain"),
        "{msg}"
    );
}

#[test]
fn env_expansion_in_values() {
    let env = |k: &str| match k {
        "SIZE" => Some("64m".to_string()),
        "NUMJOBS" => Some("4".to_string()),
        _ => None,
    };
    let jf = parse_job_str_with_env(
        "env.fio",
        "[random-writers]\nrw=randwrite\nsize=${SIZE}\nnumjobs=${NUMJOBS}\ndescription=a${UNSET}b\n",
        &env,
    )
    .unwrap();
    let j = &jf.jobs[0];
    assert_eq!(
        j.size,
        Some(storlab_workload::fio::SizeSpec::Bytes(64 << 20))
    );
    assert_eq!(j.numjobs, 4);
    assert_eq!(j.description.as_deref(), Some("ab"));
    // An unset variable expands to nothing, which is then a missing value.
    let e = parse_job_str_with_env("env.fio", "[j]\nsize=${NOPE}\n", &env).unwrap_err();
    assert!(e.to_string().contains("env.fio:2"), "{e}");
}
