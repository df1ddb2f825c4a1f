//! A file that cannot be opened, wherever the command line names it, is
//! one line naming the file and the operating system's reason once (the
//! reason was printed twice: once in the error's message and again as its
//! source), and a non-zero exit.

use std::process::Command;

#[test]
fn a_missing_file_is_named_once_with_the_os_error_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = |name: &str| dir.path().join(name).to_str().expect("utf-8").to_string();
    let (toml, fio, csv, img) = (
        missing("dev.toml"),
        missing("job.fio"),
        missing("t.csv"),
        missing("nodir/region"),
    );
    let out_csv = missing("out.csv");
    let backing = format!("file:{img}");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["sim", "--device", &toml], &toml),
        (vec!["sim", &fio], &fio),
        (vec!["sim", "--trace", &csv], &csv),
        (vec!["trace", "stats", &csv], &csv),
        (
            vec!["trace", "convert", "--to", "fio3", &csv, &out_csv],
            &csv,
        ),
        (
            vec![
                "pmem",
                "msync-bench",
                "--sizes",
                "4k",
                "--backing",
                &backing,
            ],
            &img,
        ),
    ];
    for (args, path) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args(&args)
            .output()
            .expect("run storlab");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: the OS error once: {err}"
        );
        assert!(err.contains(path), "{args:?}: names {path}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
}
