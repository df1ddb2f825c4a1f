//! `storlab lab reproduce --html DIR`: the index and a page per study,
//! beside the usual files, with the command that made them.

use std::process::Command;

#[test]
fn reproduce_writes_the_html_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let html = dir.path().join("html");
    let o = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(["lab", "reproduce", "nvmm", "--out"])
        .arg(&out)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("index.html"), "{stdout}");
    assert!(
        out.join("nvmm.md").exists(),
        "the usual files still written"
    );
    let index = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(index.contains("<a href=\"nvmm.html\">nvmm</a>"), "{index}");
    assert!(index.contains("lab reproduce nvmm --out"), "the command");
    let page = std::fs::read_to_string(html.join("nvmm.html")).unwrap();
    assert!(page.contains("<table class=\"rows\">") && page.contains("<svg "));
    let entries = std::fs::read_dir(&html).unwrap().count();
    assert_eq!(entries, 2, "index.html and nvmm.html, nothing else");
}

#[test]
fn html_for_an_unknown_study_is_an_error_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("html");
    let o = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(["lab", "reproduce", "no-such-study", "--out"])
        .arg(dir.path().join("out"))
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("unknown study 'no-such-study'"), "{err}");
    assert!(!html.exists());
}
