//! The Berkeley DB model's hash table is the one libdb builds: the real
//! apps/bdb-bench.c (compiled here against libdb5.3, as `storlab app`
//! compiles it) loads a table and reports its shape (`DB->stat`), and
//! the model's `HashShape` must give the same buckets and overflow pages
//! for the same pairs. Needs gcc and libdb5.3-dev (`scripts/test`
//! installs them); a missing one fails with its name.

use std::path::Path;
use std::process::Command;

use storlab_apps::bdb_hash::HashShape;

/// Bytes a pair of bdb-bench's takes on a hash page: an 8-byte key and a
/// 100-byte value, each an item with its one-byte type
/// (`HKEYDATA_SIZE`) and a two-byte index slot (`HKEYDATA_PSIZE`).
const PAIR_BYTES: u64 = (8 + 1 + 2) + (100 + 1 + 2);

fn compile(dir: &Path) -> std::path::PathBuf {
    assert!(
        Path::new("/usr/include/db.h").exists(),
        "libdb5.3-dev is not installed (scripts/test installs it)"
    );
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../apps/bdb-bench.c");
    let bin = dir.join("bdb-bench");
    let out = Command::new("cc")
        .args(["-O2", "-pthread"])
        .arg(&src)
        .args(["-ldb", "-o"])
        .arg(&bin)
        .output()
        .expect("cc (gcc) runs");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

fn bench(bin: &Path, dir: &Path, keys: u64, mode: &str) -> serde_json::Value {
    let out = Command::new(bin)
        .arg(dir)
        .args(["hash", &keys.to_string(), "1", "1", "64", mode])
        .output()
        .expect("bdb-bench runs");
    assert!(
        out.status.success(),
        "bdb-bench {mode}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("a JSON line");
    serde_json::from_str(line).expect("JSON")
}

#[test]
fn the_models_hash_table_has_the_buckets_and_overflow_pages_libdb_builds() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = compile(tmp.path());
    for keys in [400_000u64, 1_000_000] {
        let dir = tmp.path().join(format!("db-{keys}"));
        bench(&bin, &dir, keys, "load");
        let real = bench(&bin, &dir, keys, "stat");
        let pairs = real["keys"].as_u64().expect("keys");
        assert_eq!(pairs, keys / 2, "bdb-bench loads every other key");
        let model = HashShape::load(pairs, PAIR_BYTES, 4096);
        assert_eq!(
            (model.buckets(), model.overflow_pages()),
            (
                real["buckets"].as_u64().expect("buckets"),
                real["overflow_pages"].as_u64().expect("overflow pages")
            ),
            "{keys} keys: model against libdb"
        );
    }
}
