//! The source layout holds (issue 56): `scripts/check-layout` finds no
//! import circle in any crate and no file over 800 lines outside tests —
//! and it does find each when one is there.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn check(tree: &Path) -> Output {
    Command::new("python3")
        .arg(root().join("scripts/check-layout"))
        .arg("--root")
        .arg(tree)
        .output()
        .expect("run python3 scripts/check-layout")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A one-crate tree: `files` are (path under src/, contents).
fn tree(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (p, body) in files {
        let f = dir.path().join("crates/x/src").join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    }
    dir
}

#[test]
fn the_repository_has_no_import_circle_and_no_long_file() {
    let o = check(&root());
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn two_modules_importing_each_other_are_a_circle() {
    let t = tree(&[
        ("lib.rs", "mod a;\nmod b;\n".into()),
        (
            "a.rs",
            "use crate::b::B;\npub struct A;\npub fn f(_: B) {}\n".into(),
        ),
        (
            "b.rs",
            "pub struct B;\npub fn g() -> crate::a::A { crate::a::A }\n".into(),
        ),
    ]);
    let o = check(t.path());
    assert!(!o.status.success(), "{}", text(&o));
    let s = text(&o);
    assert!(s.contains("import circle in x (lib.rs): a, b"), "{s}");
    assert!(s.contains("crates/x/src/a.rs:1: imports b"), "{s}");
}

#[test]
fn a_child_using_what_its_parent_defines_while_the_parent_uses_it_is_a_circle() {
    let t = tree(&[
        ("lib.rs", "pub mod fio;\n".into()),
        (
            "fio/mod.rs",
            "mod value;\npub struct Size;\npub use value::parse;\n".into(),
        ),
        (
            "fio/value.rs",
            "use super::Size;\npub fn parse() -> Size { Size }\n".into(),
        ),
    ]);
    let o = check(t.path());
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("fio, fio::value"), "{}", text(&o));
}

#[test]
fn re_exports_at_the_root_are_not_a_circle_and_tests_do_not_count() {
    // lib.rs re-exports what `units` defines; `disk` names it through the
    // root: the import is of `units`, not of the root. The test module's
    // `use super::*` and comments naming other modules are not imports.
    let t = tree(&[
        (
            "lib.rs",
            "pub mod disk;\npub mod units;\npub use units::Nanos;\n".into(),
        ),
        ("units.rs", "pub type Nanos = u64;\n".into()),
        (
            "disk.rs",
            "use crate::Nanos;\n// crate::units is named here only in a comment\npub fn t() -> Nanos { 0 }\n#[cfg(test)]\nmod tests {\n    use crate::units::*;\n}\n"
                .into(),
        ),
    ]);
    let o = check(t.path());
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_file_over_800_lines_outside_tests_is_refused() {
    let long = "pub fn f() {}\n".repeat(801);
    let with_tests = format!(
        "{}#[cfg(test)]\nmod tests {{\n{}}}\n",
        "pub fn f() {}\n".repeat(790),
        "    #[test]\n    fn t() {}\n".repeat(100)
    );
    let t = tree(&[
        ("lib.rs", "mod long;\nmod short;\n".into()),
        ("long.rs", long),
        ("short.rs", with_tests),
    ]);
    let o = check(t.path());
    assert!(!o.status.success(), "{}", text(&o));
    let s = text(&o);
    assert!(
        s.contains("crates/x/src/long.rs: 801 lines outside tests"),
        "{s}"
    );
    assert!(!s.contains("short.rs"), "{s}");
}
