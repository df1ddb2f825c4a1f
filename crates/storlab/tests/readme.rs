//! Keeps the README's examples working: every `storlab ...` line in a
//! ```sh block of README.md is run with the built binary and must succeed.

use std::path::Path;
use std::process::Command;

#[test]
fn readme_examples_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut in_sh = false;
    let mut ran = 0;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        let Some(rest) = line.strip_prefix("storlab ").filter(|_| in_sh) else {
            continue;
        };
        let args: Vec<&str> = rest.split_whitespace().collect();
        let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args(&args)
            .current_dir(&root)
            .output()
            .expect("run storlab");
        assert!(
            out.status.success(),
            "README example failed: storlab {rest}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let wrote_file = args.contains(&"--output");
        assert!(
            wrote_file || !out.stdout.is_empty(),
            "README example printed nothing: storlab {rest}"
        );
        ran += 1;
    }
    assert!(ran >= 8, "expected the README's examples, found {ran}");
}

#[test]
fn jobs_directory_files_are_accepted_by_real_fio() {
    // the example job files must be files fio itself accepts
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let fio = Command::new("fio").arg("--version").output();
    assert!(
        fio.is_ok(),
        "fio is not installed: install the Debian package `fio` (scripts/test does)"
    );
    for e in std::fs::read_dir(root.join("jobs")).expect("jobs/") {
        let p = e.expect("entry").path();
        if p.extension().and_then(|x| x.to_str()) != Some("fio") {
            continue;
        }
        let out = Command::new("fio")
            .arg("--parse-only")
            .arg(&p)
            .output()
            .expect("run fio");
        assert!(
            out.status.success(),
            "fio --parse-only {} failed: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args(["sim", "--device", "moneta-spin"])
            .arg(&p)
            .output()
            .expect("run storlab");
        assert!(
            ours.status.success(),
            "storlab sim {} failed: {}",
            p.display(),
            String::from_utf8_lossy(&ours.stderr)
        );
    }
}
