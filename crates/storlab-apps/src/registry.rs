//! The registry: every application model, in one list ([`all`]), looked
//! up by name ([`find`]) and described for `storlab apps`.
//!
//! Adding an application: its file (an `APPS` list of [`AppInfo`]s, one
//! per program it models), its `pub mod` line in `lib.rs`, and one line
//! in [`all`].

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, Params, COMMON_PARAMS};
use crate::{
    bdb, filebench, files, innodb, memcached, mongo, paging, pgbench, postgres, rocksdb, sqlite,
};

/// Every application model, in the order `storlab apps` lists them.
pub fn all() -> Vec<&'static AppInfo> {
    let mut v: Vec<&'static AppInfo> = Vec::new();
    v.extend(bdb::APPS);
    v.extend(mongo::APPS);
    v.extend(memcached::APPS);
    v.extend(innodb::APPS);
    v.extend(postgres::APPS);
    v.extend(pgbench::APPS);
    v.extend(rocksdb::APPS);
    v.extend(sqlite::APPS);
    v.extend(files::APPS);
    v.extend(filebench::APPS);
    v.extend(paging::APPS);
    v
}

/// The application named `name`, or an error naming `place` and listing
/// the names.
pub fn find(name: &str, place: &str) -> Result<&'static AppInfo, AppError> {
    let apps = all();
    apps.iter()
        .find(|a| a.name == name)
        .copied()
        .ok_or_else(|| AppError::Unknown {
            place: place.to_string(),
            name: name.to_string(),
            known: apps.iter().map(|a| a.name).collect::<Vec<_>>().join(", "),
        })
}

/// Build `app` with `params`.
pub fn build(app: &'static AppInfo, params: &Params) -> Result<AppKind, AppError> {
    (app.build)(params)
}

/// `storlab apps`: one line per application with its metric's unit.
pub fn list_text() -> String {
    let mut s = String::new();
    for a in all() {
        s.push_str(&format!("{:<12} {:<16} {}\n", a.name, a.unit, a.summary));
    }
    s
}

/// `storlab apps show NAME`: what it models and simplifies, its
/// calibration and parameters.
pub fn show_text(app: &AppInfo) -> String {
    let mut s = format!(
        "{}: {}\nmetric: {}\n\nmodels:\n",
        app.name, app.summary, app.unit
    );
    for m in app.models {
        s.push_str(&format!("  - {m}\n"));
    }
    s.push_str("\nsimplifies:\n");
    for m in app.simplifies {
        s.push_str(&format!("  - {m}\n"));
    }
    s.push_str(&format!(
        "\ncalibration: {}\n\nparameters (--app-set name=value):\n",
        app.calibration
    ));
    for d in app.params.iter().chain(COMMON_PARAMS) {
        let def = if d.default.is_empty() {
            "(model's)"
        } else {
            d.default
        };
        s.push_str(&format!("  {:<18} {:<12} {}\n", d.name, def, d.help));
    }
    s.push_str("\nstudies (--app-set study=NAME; the lab runs exactly these):\n");
    let sets: Vec<_> = crate::studysets::SETS
        .iter()
        .filter(|x| x.app == app.name)
        .collect();
    if sets.is_empty() {
        s.push_str("  none: the defaults are its own configuration\n");
    }
    for x in sets {
        let pairs = if x.pairs.is_empty() {
            "(the defaults)".to_string()
        } else {
            x.pairs.join(",")
        };
        s.push_str(&format!("  {:<10} {:<11} {}\n", x.study, x.lab, pairs));
    }
    s
}

/// The fio-style job arguments that run `app` with `pairs` as one job
/// (what `storlab sim --app` adds to the command line).
pub fn job_args(app: &str, pairs: &[String]) -> Vec<String> {
    let mut v = vec![format!("--name={app}"), format!("--app={app}")];
    v.extend(pairs.iter().map(|p| format!("--app_set={p}")));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_app_builds_with_its_defaults_and_names_are_unique() {
        let apps = all();
        let mut names: Vec<_> = apps.iter().map(|a| a.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), apps.len());
        for a in apps {
            let p = Params::parse(a, &[], "test").unwrap();
            assert!(build(a, &p).is_ok(), "{} does not build", a.name);
            for d in a.params {
                assert!(!d.help.is_empty(), "{}.{} has no help", a.name, d.name);
            }
        }
    }

    #[test]
    fn unknown_names_and_parameters_are_refused_with_the_place() {
        let e = find("nope", "job file x.fio:3").err().unwrap().to_string();
        assert!(e.contains("x.fio:3") && e.contains("bdb-btree"), "{e}");
        let a = find("bdb-btree", "cli").unwrap();
        let e = Params::parse(a, &["colour=red".into()], "--app-set")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--app-set") && e.contains("colour") && e.contains("transactions"),
            "{e}"
        );
        let e = Params::parse(a, &["scale=0".into()], "--app-set")
            .unwrap_err()
            .to_string();
        assert!(e.contains("scale=0"), "{e}");
        let e = Params::parse(a, &["runtime=soon".into()], "--app-set")
            .unwrap_err()
            .to_string();
        assert!(e.contains("runtime"), "{e}");
    }
}
