//! The options that select file-system behaviour (`direct`, `buffered`,
//! `filename`, `nrfiles`, `fallocate`, `overwrite`): parsed as fio parses
//! them, and a bad value names the option and its line.

mod common;

use common::no_env;
use storlab_workload::fio::{parse_job_str_with_env, Fallocate};

fn job(text: &str) -> storlab_workload::fio::JobSpec {
    parse_job_str_with_env("jobs/fs.fio", text, &no_env)
        .expect("parses")
        .jobs
        .remove(0)
}

fn err(text: &str) -> String {
    match parse_job_str_with_env("jobs/fs.fio", text, &no_env) {
        Ok(jf) => panic!("accepted:\n{text}\n=> {jf:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn file_options_have_fios_defaults() {
    let j = job("[j]\nrw=read\n");
    assert!(!j.direct, "fio's default is buffered IO");
    assert_eq!(j.filename, None);
    assert_eq!(j.nrfiles, 1);
    assert_eq!(
        j.fallocate,
        Fallocate::Native,
        "fio's default fallocate is native"
    );
    assert!(!j.overwrite);
}

#[test]
fn file_options_are_read() {
    let j = job(
        "[j]\nrw=write\ndirect=1\nfilename=/mnt/x/data\nnrfiles=4\nfallocate=none\noverwrite=1\n",
    );
    assert!(j.direct);
    assert_eq!(j.filename.as_deref(), Some("/mnt/x/data"));
    assert_eq!(j.nrfiles, 4);
    assert_eq!(j.fallocate, Fallocate::None);
    assert!(j.overwrite);
    // buffered is the negation of direct; the later one wins, as in fio
    assert!(!job("[j]\ndirect=1\nbuffered=1\n").direct);
    assert!(job("[j]\nbuffered=0\n").direct);
    assert_eq!(job("[j]\nnr_files=3\n").nrfiles, 3);
    assert_eq!(job("[j]\nfallocate=posix\n").fallocate, Fallocate::Posix);
}

#[test]
fn every_fallocate_mode_is_kept() {
    for (v, mode) in [
        ("none", Fallocate::None),
        ("native", Fallocate::Native),
        ("posix", Fallocate::Posix),
        ("keep", Fallocate::Keep),
        ("truncate", Fallocate::Truncate),
        // fio's aliases from when the option was a boolean
        ("0", Fallocate::None),
        ("1", Fallocate::Posix),
    ] {
        assert_eq!(
            job(&format!("[j]\nrw=write\nfallocate={v}\n")).fallocate,
            mode,
            "fallocate={v}"
        );
    }
    // a job's own value replaces the global one
    let j = job("[global]\nfallocate=keep\n[j]\nfallocate=truncate\n");
    assert_eq!(j.fallocate, Fallocate::Truncate);
}

#[test]
fn bad_file_option_values_name_the_option_and_line() {
    let m = err("[j]\nrw=read\nnrfiles=0\n");
    assert!(m.contains("jobs/fs.fio:3") && m.contains("nrfiles"), "{m}");
    let m = err("[j]\nrw=read\n\nfallocate=sometimes\n");
    assert!(
        m.contains("jobs/fs.fio:4") && m.contains("fallocate"),
        "{m}"
    );
    let m = err("[j]\nrw=write\nfallocate=bogus\n");
    assert!(
        m.contains("jobs/fs.fio:3")
            && m.contains("fallocate")
            && m.contains("none, native, posix, keep and truncate"),
        "{m}"
    );
    let m = err("[j]\ndirect=maybe\n");
    assert!(m.contains("jobs/fs.fio:2") && m.contains("direct"), "{m}");
    let m = err("[j]\nfilename=\n");
    assert!(m.contains("jobs/fs.fio:2") && m.contains("filename"), "{m}");
}
