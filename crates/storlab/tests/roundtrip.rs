//! Issue 5's round trip with real fio: a fio job run through the emulator
//! and recorded as a fio iolog v3, replayed by fio itself (read_iolog)
//! against the emulator, gives the same request sequence; the simulator
//! replays the same log request for request.

#[path = "../../../testsupport/command.rs"]
mod command;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

struct Server {
    child: Option<Child>,
}

impl Server {
    fn start(dir: &Path, sock: &Path, record: &Path) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args(["serve", "--device", "null", "--size", "64M", "--socket"])
            .arg(sock)
            .arg("--record")
            .arg(record)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start storlab serve");
        let t0 = Instant::now();
        while !sock.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "server socket never appeared"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child: Some(child) }
    }
    /// Clean shutdown (SIGTERM): the recording is complete afterwards.
    fn stop(mut self) {
        if let Some(c) = self.child.take() {
            common::stop_server(c);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run fio in `dir` (fio 3.33 crashes when `--directory` is combined with
/// `--read_iolog`, so the working directory is set instead).
fn fio(dir: &Path, args: &[String]) {
    command::stdout_of(Command::new("fio").args(args).current_dir(dir));
}

/// (op, offset, len) of every IO in a fio iolog v3.
fn ios(path: &Path) -> Vec<(String, u64, u64)> {
    std::fs::read_to_string(path)
        .expect("recording")
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5).then(|| {
                (
                    f[2].to_string(),
                    f[3].parse().expect("offset"),
                    f[4].parse().expect("len"),
                )
            })
        })
        .collect()
}

#[test]
fn fio_job_recorded_replayed_by_fio_and_by_the_simulator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let (sock, rec1, rec2) = (d.join("dev.sock"), d.join("rec1.fio3"), d.join("rec2.fio3"));
    let uri = format!("--uri=nbd+unix:///?socket={}", sock.display());

    let s = Server::start(d, &sock, &rec1);
    fio(
        d,
        &[
            "--name=rt".into(),
            "--ioengine=nbd".into(),
            uri.clone(),
            "--rw=randrw".into(),
            "--bssplit=4k/50:16k/50".into(),
            "--iodepth=1".into(),
            "--number_ios=200".into(),
            "--size=64m".into(),
            "--randseed=11".into(),
        ],
    );
    s.stop();
    let first = ios(&rec1);
    assert!(first.len() >= 200, "recorded {} IOs", first.len());

    let _ = std::fs::remove_file(&sock);
    let s = Server::start(d, &sock, &rec2);
    fio(
        d,
        &[
            "--name=rt".into(),
            "--ioengine=nbd".into(),
            uri,
            format!("--read_iolog={}", rec1.display()),
            "--iodepth=1".into(),
        ],
    );
    s.stop();
    let second = ios(&rec2);
    assert_eq!(
        first, second,
        "fio's replay of the recording served the same request sequence"
    );

    // the simulator replays the same log: same requests, same bytes
    let out = command::stdout_of(
        Command::new(env!("CARGO_BIN_EXE_storlab"))
            .args([
                "sim",
                "--device",
                "moneta-spin",
                "--output-format=json",
                "--replay",
                "afap",
                "--iodepth=1",
                "--trace",
            ])
            .arg(&rec1),
    );
    let j: serde_json::Value = serde_json::from_slice(&out).expect("JSON");
    let job = &j["jobs"][0];
    let count = |op: &str| first.iter().filter(|(o, _, _)| o == op).count() as u64;
    let bytes = |op: &str| {
        first
            .iter()
            .filter(|(o, _, _)| o == op)
            .map(|(_, _, l)| l)
            .sum::<u64>()
    };
    assert_eq!(job["read"]["total_ios"].as_u64(), Some(count("read")));
    assert_eq!(job["write"]["total_ios"].as_u64(), Some(count("write")));
    assert_eq!(job["read"]["io_bytes"].as_u64(), Some(bytes("read")));
    assert_eq!(job["write"]["io_bytes"].as_u64(), Some(bytes("write")));
}
