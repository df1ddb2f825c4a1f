//! Issue 57, item 5: `--app-set study=NAME` picks another study's
//! configuration; without it an application in Table V runs Table V's
//! (the Moneta study's) configuration, so `study=moneta` equals the
//! defaults, and every Table V application has a moneta set.

use storlab_apps::{find, studysets, Params};
use storlab_lab::tablev::{What, BENCHES};

fn values(p: &Params) -> Vec<(String, String)> {
    p.values()
        .filter(|(k, _)| *k != "study")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn study_moneta_equals_the_defaults_for_every_table_v_application() {
    let mut n = 0;
    for b in BENCHES {
        let What::App(name) = b.what else { continue };
        let app = find(name, "test").unwrap();
        assert!(
            studysets::studies_of(name).contains(&"moneta"),
            "{name} is in Table V but has no moneta set"
        );
        let d = Params::parse(app, &[], "test").unwrap();
        let m = Params::parse(app, &["study=moneta".into()], "test").unwrap();
        assert_eq!(
            values(&d),
            values(&m),
            "{name}: study=moneta is not the defaults"
        );
        n += 1;
    }
    assert!(n >= 10, "Table V has {n} applications");
}

#[test]
fn another_study_sets_its_pairs_and_given_pairs_override_them() {
    let app = find("bdb-btree", "test").unwrap();
    let d = Params::parse(app, &[], "test").unwrap();
    let h = Params::parse(app, &["study=haste".into()], "test").unwrap();
    assert_eq!(h.str("db"), "2g");
    assert_eq!(h.str("cache"), "64m");
    assert_ne!(values(&d), values(&h));
    // a pair beside the study wins, in either order
    for given in [
        ["study=haste", "transactions=7"],
        ["transactions=7", "study=haste"],
    ] {
        let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
        let o = Params::parse(app, &given, "test").unwrap();
        assert_eq!(o.str("transactions"), "7", "{given:?}");
        assert_eq!(o.str("db"), "2g");
    }
    let o = Params::parse(app, &["study=haste,transactions=9".into()], "test").unwrap();
    assert_eq!(o.str("transactions"), "9");
    let t = find("tpcc", "test").unwrap();
    let p = Params::parse(t, &["study=placement".into()], "test").unwrap();
    assert_eq!(p.str("flush_method"), "o_direct");
}

#[test]
fn a_wrong_study_names_the_known_ones_and_show_lists_the_sets() {
    let app = find("bdb-btree", "test").unwrap();
    let e = Params::parse(app, &["study=hast".into()], "--app-set")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("hast") && e.contains("moneta, haste, nvmm, placement"),
        "{e}"
    );
    let s = storlab_apps::show_text(app);
    assert!(
        s.contains("study=NAME") && s.contains("haste") && s.contains("db=2g"),
        "{s}"
    );
    // the CLI says it too, exiting non-zero
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_storlab"))
        .args([
            "sim",
            "--device",
            "raid-disk",
            "--app",
            "bdb-btree",
            "--app-set",
            "study=nope",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("known studies: moneta, haste, nvmm, placement"),
        "{err}"
    );
}
