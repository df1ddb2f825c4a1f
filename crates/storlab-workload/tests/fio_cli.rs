//! fio's command-line form, alone and with job files.

mod common;

use common::{data, no_env, run_fio};
use storlab_workload::fio::{
    parse_cli_args, parse_cli_args_with_env, BlockSizeSpec, FioError, RwMode, SizeSpec,
};

fn args(s: &[&str]) -> Vec<String> {
    s.iter().map(|a| a.to_string()).collect()
}

#[test]
fn globals_before_first_name_and_one_job_per_name() {
    let a = args(&[
        "--ioengine=libaio",
        "--direct=1",
        "--size=1g",
        "--name=lat",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=1",
        "--name=bw",
        "--rw=read",
        "--bs",
        "1m",
        "--iodepth",
        "32",
        "--time_based",
        "--runtime=10",
        "--output-format=json",
    ]);
    let (ok, out) = run_fio(
        &[
            &["--parse-only"][..],
            &a.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    assert!(ok, "fio rejected the command line:\n{out}");
    let jf = parse_cli_args(&a).unwrap();
    assert_eq!(jf.jobs.len(), 2);
    let (lat, bw) = (&jf.jobs[0], &jf.jobs[1]);
    assert_eq!(lat.name, "lat");
    assert_eq!(lat.rw, RwMode::RandRead);
    assert_eq!(lat.size, Some(SizeSpec::Bytes(1 << 30)));
    assert!(lat.direct);
    assert_eq!(bw.bs[0], BlockSizeSpec::Fixed(1 << 20));
    assert_eq!(bw.iodepth, 32);
    assert!(bw.time_based);
    assert_eq!(bw.runtime_ns, Some(10_000_000_000));
    assert_eq!(bw.size, Some(SizeSpec::Bytes(1 << 30)));
    assert_eq!(bw.location.line, 8);
    assert!(bw.location.is_cli);
    assert_eq!(
        jf.frontend_options,
        vec![("output-format".to_string(), "json".to_string())]
    );
    assert_eq!(jf.global_options.len(), 3);
}

#[test]
fn name_global_section_on_the_command_line() {
    // The HOWTO's example: fio --name=global --rw=randread --size=128m --name=job1 --name=job2
    let jf = parse_cli_args(&args(&[
        "--name=global",
        "--rw=randread",
        "--size=128m",
        "--name=job1",
        "--name=job2",
    ]))
    .unwrap();
    assert_eq!(jf.jobs.len(), 2);
    for j in &jf.jobs {
        assert_eq!(j.rw, RwMode::RandRead);
        assert_eq!(j.size, Some(SizeSpec::Bytes(128 << 20)));
    }
}

#[test]
fn command_line_globals_are_defaults_for_job_files() {
    // fio 3.33: `fio --bs=8k --iodepth=16 basic.fio` keeps the file's bs=4k
    // but takes iodepth=16 where the file does not set it.
    let path = data("basic.fio");
    let jf = parse_cli_args(&args(&["--bs=8k", "--iodepth=16", path.to_str().unwrap()])).unwrap();
    assert_eq!(jf.jobs[0].bs[0], BlockSizeSpec::Fixed(4096));
    assert_eq!(jf.jobs[0].iodepth, 32);
    assert_eq!(jf.jobs[1].iodepth, 16);
    assert_eq!(jf.jobs[1].bs[0], BlockSizeSpec::Fixed(16 << 10));
    // Command-line jobs come first, then the file's; groups continue.
    let jf = parse_cli_args(&args(&[
        "--name=first",
        "--size=1m",
        path.to_str().unwrap(),
    ]))
    .unwrap();
    let names: Vec<&str> = jf.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["first", "seq-read", "rand-write"]);
    let groups: Vec<u32> = jf.jobs.iter().map(|j| j.group_id).collect();
    assert_eq!(groups, [0, 0, 1]);
    let idx: Vec<u32> = jf.jobs.iter().map(|j| j.job_index).collect();
    assert_eq!(idx, [0, 1, 2]);
}

#[test]
fn fio_keeps_the_file_value_over_the_command_line() {
    // The behaviour the previous test relies on, checked against fio.
    let path = data("basic.fio");
    let (ok, out) = run_fio(&[
        "--debug=parse",
        "--parse-only",
        "--bs=8k",
        path.to_str().unwrap(),
    ]);
    assert!(ok, "{out}");
    let outs: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("__handle_option=bs,"))
        .collect();
    assert_eq!(outs.len(), 3, "{out}");
    assert!(
        outs[0].contains("ptr=8k") && outs[1].contains("ptr=4k"),
        "{outs:?}"
    );
}

#[test]
fn cli_errors() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--name=x", "--frobnicate=1"],
            "command line, argument 2: option `frobnicate`",
        ),
        (&["--name=x", "--bs"], "needs a value"),
        (&["--name=x", "-v"], "short options"),
        (&["--name=x", "--bs=4q"], "unknown unit"),
        (&["--rw=read"], "no job defined"),
        (&[], "no job defined"),
        (&["--name="], "may not be empty"),
        (&["--name=x", "--direct"], "needs a value"),
    ];
    for (a, want) in cases {
        let e = parse_cli_args_with_env(&args(a), &no_env).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(want), "{a:?}: `{want}` not in `{msg}`");
    }
    let e = parse_cli_args(&args(&["/no/such/file.fio"])).unwrap_err();
    assert!(matches!(e, FioError::Io { .. }), "{e}");
}

#[test]
fn double_dash_ends_options() {
    let path = data("fairness.fio");
    let jf = parse_cli_args(&args(&["--", path.to_str().unwrap()])).unwrap();
    assert_eq!(jf.jobs.len(), 2);
}

/// fio accepts `extra` on a small job, and in storlab they change nothing
/// in the job but its recorded options.
fn assert_recorded_only(extra: &[&str]) {
    let base = ["--name=j", "--rw=randread", "--size=1m"];
    let with: Vec<&str> = base.iter().chain(extra).copied().collect();
    let (ok, out) = run_fio(&[&["--parse-only"][..], &with].concat());
    assert!(ok, "fio rejected them:\n{out}");
    let plain = parse_cli_args(&args(&base)).unwrap();
    let mut recorded = parse_cli_args(&args(&with)).unwrap();
    assert_eq!(recorded.jobs[0].options.len(), base.len() - 1 + extra.len());
    recorded.jobs[0].options = plain.jobs[0].options.clone();
    assert_eq!(recorded.jobs[0], plain.jobs[0]);
}

/// Options that only say where fio would put its files are accepted, as
/// fio accepts them, and change nothing in the job.
#[test]
fn file_placement_options_are_recorded() {
    let extra = [
        "--directory=/mnt/ssd",
        "--filename_format=$jobname.$jobnum",
        "--unique_filename=1",
        "--lockfile=none",
        "--log_hist_msec=100",
    ];
    assert_recorded_only(&extra);
}

/// Output and error-handling options a simulation has no use for are
/// accepted as fio accepts them and change nothing in the job; values fio
/// refuses are refused here too, naming the option.
#[test]
fn output_and_error_options_are_recorded_and_checked_as_fio_checks_them() {
    let extra = [
        "--disk_util=0",
        "--create_serialize=1",
        "--continue_on_error=io",
        "--ignore_error=EIO",
        "--buffer_pattern=0xaa",
        "--io_submit_mode=offload",
        "--significant_figures=6",
    ];
    assert_recorded_only(&extra);

    for bad in [
        "--continue_on_error=sometimes",
        "--io_submit_mode=later",
        "--significant_figures=11",
        "--significant_figures=0",
        "--sync=2",
    ] {
        let a = ["--name=j", bad];
        let (ok, _) = run_fio(&[&["--parse-only"][..], &a].concat());
        assert!(!ok, "fio accepts {bad}");
        let option = bad[2..].split('=').next().unwrap();
        let msg = parse_cli_args(&args(&a)).unwrap_err().to_string();
        assert!(msg.contains(option), "{bad}: {msg}");
    }
}
