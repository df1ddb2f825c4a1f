//! Keeps the examples of the README and of the guide working: every
//! `storlab ...` line in a ```sh block of README.md or of a guide chapter
//! (docs/guide/*.md) is run with the built binary and must succeed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// README.md, then the guide's chapters in name order.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs/guide"))
        .expect("docs/guide")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().and_then(|x| x.to_str()) == Some("md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

#[test]
fn readme_examples_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // the examples' /tmp paths go to a directory of the test's own (one
    // per document), so a test run leaves no /tmp/storlab-* files behind
    let tmp = tempfile::tempdir().expect("tempdir");
    // Which document runs which example is decided first, in document
    // order: a command another document showed already (the guide repeats
    // the README's examples) counts but is not run again. Then the
    // documents run side by side, each its own examples in order (an
    // example may use what an earlier one of its document wrote), as many
    // at once as the machine has cores: the lab's examples are long.
    let mut seen = std::collections::HashSet::new();
    let mut plans = Vec::new();
    for (i, doc) in documents(&root).into_iter().enumerate() {
        let text = std::fs::read_to_string(&doc).expect("document");
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        let (shown, run) = sh_examples(&text, &mut seen);
        plans.push((name, tmp.path().join(i.to_string()), shown, run));
    }
    let readme_shown = plans.iter().find(|p| p.0 == "README.md").map_or(0, |p| p.2);
    let shown: usize = plans.iter().map(|p| p.2).sum();
    assert!(
        readme_shown >= 2,
        "expected the README's examples, found {readme_shown}"
    );
    assert!(
        shown >= 40,
        "expected the README's and guide's examples, found {shown}"
    );
    // the documents with the most lab runs first (taken from the end)
    plans.sort_by_key(|p| p.3.iter().filter(|l| l.starts_with("lab ")).count());
    let queue = std::sync::Mutex::new(plans);
    let failures = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let Some((name, dir, _, run)) = queue.lock().unwrap().pop() else {
                    return;
                };
                std::fs::create_dir_all(&dir).expect("example directory");
                for line in run {
                    if let Err(e) = run_example(&root, &name, &line, &dir) {
                        failures.lock().unwrap().push(e);
                        break;
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `line` with each path starting `/tmp/` (after a space, `=` or `:`)
/// moved under `tmp`.
fn under(line: &str, tmp: &Path) -> String {
    let mut out = String::new();
    let mut prev = ' ';
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        if matches!(prev, ' ' | '=' | ':') && rest.starts_with("/tmp/") {
            out.push_str(&format!("{}/", tmp.display()));
            rest = &rest["/tmp/".len()..];
            prev = '/';
            continue;
        }
        out.push(c);
        prev = c;
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The `storlab ...` lines of the ```sh blocks of one document (what
/// follows `storlab `): how many it shows, and those not shown by an
/// earlier document, in order.
fn sh_examples(text: &str, seen: &mut std::collections::HashSet<String>) -> (usize, Vec<String>) {
    let mut in_sh = false;
    let mut shown = 0;
    let mut run = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        let Some(rest) = line.strip_prefix("storlab ").filter(|_| in_sh) else {
            continue;
        };
        shown += 1;
        if seen.insert(rest.to_string()) {
            run.push(rest.to_string());
        }
    }
    (shown, run)
}

/// Runs one example (`rest`, what follows `storlab `) of document `name`
/// with the built binary, its `/tmp/` paths under `tmp`: it must succeed
/// and print something (or write the file its `--output` names).
fn run_example(root: &Path, name: &str, rest: &str, tmp: &Path) -> Result<(), String> {
    let local = under(rest, tmp);
    let args: Vec<&str> = local.split_whitespace().collect();
    let out = Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args(&args)
        .current_dir(root)
        .output()
        .expect("run storlab");
    if !out.status.success() {
        return Err(format!(
            "{name} example failed: storlab {rest}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let wrote_file = args.contains(&"--output");
    if !wrote_file && out.stdout.is_empty() {
        return Err(format!("{name} example printed nothing: storlab {rest}"));
    }
    Ok(())
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

/// A free TCP port on loopback (bound, then released for the server).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    l.local_addr().expect("address").port()
}

/// Keeps the serve examples of the README and the guide working: each
/// document's `console` blocks' servers are started (temporary paths, a
/// free port), its fio and nbdinfo lines run against them and must succeed
/// and print, and each server must then shut down cleanly on SIGTERM. The
/// nbdfuse line needs root, FUSE and a loop device: `storlab-emu`'s
/// `nbdfuse_loop_xfs_sqlite_chain` runs that chain.
#[test]
fn readme_serve_examples_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (mut servers, mut clients, mut file_stores) = (0, 0, 0);
    for doc in documents(&root) {
        let text = std::fs::read_to_string(&doc).expect("document");
        let name = doc
            .strip_prefix(&root)
            .unwrap_or(&doc)
            .display()
            .to_string();
        let (s, c, f) = serve_console_blocks(&name, &text);
        if name == "README.md" {
            assert!(s >= 1 && c >= 1, "expected the README's serve example");
        }
        servers += s;
        clients += c;
        file_stores += f;
    }
    assert!(
        servers >= 3 && clients >= 4 && file_stores >= 1,
        "expected the README's and the guide's serve examples"
    );
}

/// Runs one document's `console` blocks: (servers, clients, file stores
/// checked).
fn serve_console_blocks(name: &str, text: &str) -> (usize, usize, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sock = dir.path().join("dev.sock");
    let img = dir.path().join("disk.img");
    let port = free_port();
    let subst = |l: &str| {
        l.replace("/tmp/dev.sock", &sock.display().to_string())
            .replace("/var/tmp/disk.img", &img.display().to_string())
            .replace("127.0.0.1:10809", &format!("127.0.0.1:{port}"))
            .replace("--runtime=10", "--runtime=1")
    };
    let mut servers: Vec<std::process::Child> = Vec::new();
    struct Kill<'a>(&'a mut Vec<std::process::Child>);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            for c in self.0.iter_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    let guard = Kill(&mut servers);
    let (mut in_console, mut clients) = (false, 0);
    for line in text.lines() {
        if line.starts_with("```") {
            in_console = line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        let line = subst(line);
        if let Some(rest) = line.strip_prefix("storlab ") {
            let args: Vec<&str> = rest.split_whitespace().collect();
            let child = Command::new(env!("CARGO_BIN_EXE_storlab"))
                .args(&args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("start storlab serve");
            guard.0.push(child);
            // Ready when it accepts a connection.
            let t0 = std::time::Instant::now();
            let tcp = args.contains(&"--listen");
            while !(if tcp {
                std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            } else {
                std::os::unix::net::UnixStream::connect(&sock).is_ok()
            }) {
                assert!(
                    t0.elapsed().as_secs() < 20,
                    "{name} server never listened: storlab {rest}"
                );
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        } else if line.starts_with("fio ") || line.starts_with("nbdinfo ") {
            let out = Command::new("sh")
                .args(["-c", &line])
                .output()
                .expect("run sh");
            assert!(
                out.status.success() && !out.stdout.is_empty(),
                "{name} example failed: {line}\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            clients += 1;
        } else if !line.starts_with("nbdfuse ") && !line.trim().is_empty() {
            panic!("{name} console line this test does not know how to run: {line}");
        }
    }
    let servers = guard.0.len();
    for c in guard.0.drain(..) {
        let report = common::stop_server(c);
        // The report at exit: lateness percentiles and the transport floor.
        for what in ["lateness (reply - deadline)", "transport floor"] {
            assert!(report.contains(what), "no {what} in the report:\n{report}");
        }
    }
    let mut file_stores = 0;
    if text.contains("--store file:/var/tmp/disk.img") {
        assert!(
            std::fs::metadata(&img).expect("file store").len() == 64 << 30,
            "the file store has the export's size"
        );
        file_stores += 1;
    }
    (servers, clients, file_stores)
}
