//! Real NBD clients against the emulator: nbdinfo, nbdcopy, qemu-img and
//! qemu-io, fio's nbd engine with verification, and the whole chain
//! nbdfuse → loop device → XFS → SQLite. A missing tool fails the test
//! with the Debian package to install (these tests are never skipped).

mod common;

use std::path::Path;
use std::process::Command;

use common::chain::Chain;
use common::*;
use storlab_emu::{BlockSizes, ServeOptions};
use storlab_model::devices::fixed::FixedLatency;

const MIB: u64 = 1 << 20;

#[test]
fn nbdinfo_reports_size_block_sizes_and_flags() {
    require("nbdinfo", "libnbd-bin");
    let size = 256 * MIB;
    let srv = TestServer::start(
        ServeOptions {
            size,
            block: BlockSizes {
                minimum: 512,
                preferred: 4096,
                maximum: 32 << 20,
            },
            ..Default::default()
        },
        Box::new(FixedLatency::new(0, size)),
    );
    let out = run(Command::new("nbdinfo").arg("--json").arg(srv.uri()));
    let v: serde_json::Value = serde_json::from_str(&out).expect("nbdinfo --json output");
    let e = &v["exports"][0];
    assert_eq!(e["export-size"], size);
    assert_eq!(e["block_size_minimum"], 512);
    assert_eq!(e["block_size_preferred"], 4096);
    assert_eq!(e["block_size_maximum"], 32 << 20);
    for flag in [
        "can_flush",
        "can_fua",
        "can_trim",
        "can_zero",
        "can_multi_conn",
        "can_df",
        "can_fast_zero",
    ] {
        assert_eq!(e[flag], true, "{flag}");
    }
    assert_eq!(e["is_read_only"], false);
    assert_eq!(e["is_rotational"], false);
    assert_eq!(v["protocol"], "newstyle-fixed");
    let list = run(Command::new("nbdinfo").arg("--list").arg(srv.uri()));
    assert!(list.contains("export=\"storlab\""), "{list}");
    let ro = TestServer::start(
        ServeOptions {
            size: MIB,
            read_only: true,
            rotational: true,
            ..Default::default()
        },
        Box::new(FixedLatency::new(0, MIB)),
    );
    let out = run(Command::new("nbdinfo").arg("--json").arg(ro.uri()));
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["exports"][0]["is_read_only"], true);
    assert_eq!(v["exports"][0]["is_rotational"], true);
    assert_eq!(v["exports"][0]["can_trim"], false);
}

fn random_file(path: &Path, len: usize, seed: u64) {
    let mut x = seed | 1;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(path, data).expect("write file");
}

#[test]
fn nbdcopy_round_trip_is_byte_equal() {
    require("nbdcopy", "libnbd-bin");
    let size = 48 * MIB;
    let srv = TestServer::of(size, Box::new(FixedLatency::new(5_000, size)));
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("in.bin"), dir.path().join("out.bin"));
    random_file(&a, size as usize, 7);
    run(Command::new("nbdcopy").arg(&a).arg(srv.uri()));
    run(Command::new("nbdcopy").arg(srv.uri()).arg(&b));
    let (x, y) = (
        std::fs::read(&a).expect("in"),
        std::fs::read(&b).expect("out"),
    );
    assert!(x == y, "nbdcopy round trip differs");
    let report = srv.stop();
    assert_eq!(report.protocol_errors, 0);
    assert!(report.ops[1].bytes >= size);
}

#[test]
fn qemu_img_and_qemu_io_patterns() {
    require("qemu-img", "qemu-utils");
    require("qemu-io", "qemu-utils");
    let size = 64 * MIB;
    let srv = TestServer::of(size, Box::new(FixedLatency::new(20_000, size)));
    let uri = srv.uri();
    let info = run(Command::new("qemu-img").args(["info", "--output=json", &uri]));
    let v: serde_json::Value = serde_json::from_str(&info).expect("qemu-img json");
    assert_eq!(v["virtual-size"], size);
    let io = |cmds: &[&str]| {
        let mut c = Command::new("qemu-io");
        c.args(["-f", "raw"]);
        for x in cmds {
            c.args(["-c", x]);
        }
        c.arg(&uri);
        run(&mut c)
    };
    io(&[
        "write -P 0xab 0 1M",
        "write -P 0xcd 3M 512k",
        "write -z 256k 64k",
        "discard 768k 64k",
        "flush",
    ]);
    let out = io(&[
        "read -P 0xab 0 256k",
        "read -P 0 256k 64k",
        "read -P 0xab 320k 448k",
        "read -P 0 768k 64k",
        "read -P 0xcd 3M 512k",
        "read -P 0 8M 1M",
        "aio_write -P 0x11 10M 64k",
        "aio_write -P 0x22 11M 64k",
        "aio_flush",
        "read -P 0x11 10M 64k",
        "read -P 0x22 11M 64k",
    ]);
    assert!(!out.contains("Pattern verification failed"), "{out}");
    // Unaligned IO (minimum block size 1).
    let out = io(&[
        "write -P 0x5a 1000001 3333",
        "read -P 0x5a 1000001 3333",
        "read -P 0xab 1000000 1",
    ]);
    assert!(!out.contains("Pattern verification failed"), "{out}");
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = dir.path().join("copy.raw");
    run(Command::new("qemu-img")
        .args(["convert", "-O", "raw", &uri])
        .arg(&raw));
    run(Command::new("qemu-img")
        .args(["compare", "-f", "raw", "-F", "raw"])
        .arg(&raw)
        .arg(&uri));
}

#[test]
fn allocation_map_for_nbdinfo_qemu_img_and_a_sparse_nbdcopy() {
    require("nbdinfo", "libnbd-bin");
    require("nbdcopy", "libnbd-bin");
    require("qemu-img", "qemu-utils");
    require("qemu-io", "qemu-utils");
    let size = 256 * MIB;
    let srv = TestServer::of(size, Box::new(FixedLatency::new(20_000, size)));
    let uri = srv.uri();
    let v: serde_json::Value =
        serde_json::from_str(&run(Command::new("nbdinfo").arg("--json").arg(&uri)))
            .expect("nbdinfo --json output");
    assert_eq!(v["exports"][0]["contexts"][0], "base:allocation");
    run(Command::new("qemu-io").args([
        "-f",
        "raw",
        "-c",
        "write -P 0x55 1M 64k",
        "-c",
        "write -P 0x66 100M 4k",
        &uri,
    ]));
    // nbdinfo --map: start, length, flags, description.
    let map = run(Command::new("nbdinfo").arg("--map").arg(&uri));
    let rows: Vec<(u64, u64, u32)> = map
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<u64>().expect("a number");
            (n(0), n(1), n(2) as u32)
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (0, MIB, 3),
            (MIB, 64 << 10, 0),
            (MIB + (64 << 10), 99 * MIB - (64 << 10), 3),
            (100 * MIB, 4096, 0),
            (100 * MIB + 4096, size - 100 * MIB - 4096, 3),
        ],
        "{map}"
    );
    let qmap: serde_json::Value = serde_json::from_str(&run(Command::new("qemu-img").args([
        "map",
        "--output=json",
        "-f",
        "raw",
        &uri,
    ])))
    .expect("qemu-img map json");
    let data: Vec<(u64, u64)> = qmap
        .as_array()
        .expect("extents")
        .iter()
        .filter(|e| e["data"] == true)
        .map(|e| {
            (
                e["start"].as_u64().unwrap_or(0),
                e["length"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(data, vec![(MIB, 64 << 10), (100 * MIB, 4096)], "{qmap}");
    // nbdcopy skips the holes: a sparse, byte-equal copy that reads only
    // the data.
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("copy.raw");
    srv.handle().control().reset_stats();
    run(Command::new("nbdcopy").arg(&uri).arg(&out));
    run(Command::new("qemu-img")
        .args(["compare", "-f", "raw", "-F", "raw"])
        .arg(&out)
        .arg(&uri));
    let report = srv.stop();
    assert!(
        report.ops[0].bytes < 4 * MIB,
        "nbdcopy read {} bytes of a 256 MiB export holding 68 KiB",
        report.ops[0].bytes
    );
    assert!(report.block_status_queries > 0);
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(&out).expect("copy");
    assert_eq!(m.len(), size);
    assert!(
        m.blocks() * 512 < 16 * MIB,
        "copy is not sparse: {} blocks",
        m.blocks()
    );
}

#[test]
fn fio_verify_soak_with_many_jobs_and_depth_32() {
    require("fio", "fio");
    let size = 512 * MIB;
    let srv = TestServer::of(size, Box::new(FixedLatency::new(20_000, size)));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("fio.json");
    // fio writes its verify state files to the working directory.
    run(Command::new("fio")
        .current_dir(dir.path())
        .args([
            "--name=soak",
            "--ioengine=nbd",
            &format!("--uri={}", srv.uri()),
            "--rw=randrw",
            "--bs=4k",
            "--iodepth=32",
            "--numjobs=4",
            "--size=64M",
            "--offset_increment=64M",
            "--verify=crc32c",
            "--verify_backlog=256",
            "--verify_fatal=1",
            "--time_based",
            "--runtime=4",
            "--output-format=json",
        ])
        .arg(format!("--output={}", out.display())));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("fio output")).expect("json");
    let jobs = v["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 4);
    let mut ios = 0;
    for j in jobs {
        assert_eq!(j["error"], 0, "fio job error: {j}");
        ios += j["read"]["total_ios"].as_u64().unwrap_or(0)
            + j["write"]["total_ios"].as_u64().unwrap_or(0);
    }
    assert!(ios > 10_000, "only {ios} IOs");
    let report = srv.stop();
    assert_eq!(report.protocol_errors, 0);
}

#[test]
fn nbdfuse_loop_xfs_sqlite_chain() {
    require("nbdfuse", "nbdfuse");
    require("fusermount3", "fuse3");
    require("losetup", "mount");
    require("mkfs.xfs", "xfsprogs");
    require("sqlite3", "sqlite3");
    let size = 512 * MIB;
    let srv = TestServer::of(size, Box::new(Volatile(FixedLatency::new(10_000, size))));
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut chain, loopdev, mnt) = Chain::attach_xfs(&srv.uri(), size, dir.path(), "1", &["-q"]);
    let db = mnt.join("test.db");
    let sql = "PRAGMA journal_mode=WAL;\
        CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB, s TEXT);\
        WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<20000)\
        INSERT INTO t(v, s) SELECT randomblob(200), hex(randomblob(16)) FROM c;\
        CREATE INDEX ts ON t(s);\
        UPDATE t SET v = randomblob(300) WHERE id % 3 = 0;\
        DELETE FROM t WHERE id % 7 = 0;\
        VACUUM;\
        PRAGMA integrity_check;\
        SELECT count(*) FROM t;";
    let out = run(Command::new("sqlite3").arg(&db).arg(sql));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"ok"), "integrity_check: {out}");
    assert!(lines.contains(&"17143"), "row count: {out}");
    // Unmount and check the file system from the device.
    run(Command::new("umount").arg(&mnt));
    chain.mnt = None;
    run(Command::new("xfs_repair").args(["-n", &loopdev]));
    drop(chain);
    let report = srv.stop();
    assert_eq!(report.protocol_errors, 0);
    assert!(report.ops[3].requests > 0, "the file system flushed");
}
