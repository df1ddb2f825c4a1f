//! Other studies' configurations of an application (issue 57, item 5):
//! the common parameter `study=NAME` expands to the parameter pairs the
//! study `NAME` ran the application with, as the lab runs it
//! (crates/storlab-lab/src/studies/apps_*.rs). Without `study`, an
//! application's defaults are its own study's configuration (Table V's,
//! the Moneta study's, for the applications in Table V), so
//! `study=moneta` changes nothing for those: a test holds it.
//!
//! Pairs given beside `study=` override the study's (`study=haste,
//! transactions=100` runs the HASTE study's Berkeley DB for 100
//! transactions). Device overrides a study applies (page cache sizes,
//! host cores, file systems) are not application parameters and stay
//! with the lab's run (`storlab lab reproduce STUDY`); the device's state
//! (a flash device written once under an application's data) is the
//! application runner's, for every run (`crate::run::loaded_state`).

use crate::error::AppError;

/// One study's configuration of one application.
#[derive(Clone, Copy, Debug)]
pub struct StudySet {
    /// The study, as the hosts name them (crates/storlab-apps/src/host.rs).
    pub study: &'static str,
    /// The application model.
    pub app: &'static str,
    /// Its parameter pairs, `name=value` (empty: the app's defaults).
    pub pairs: &'static [&'static str],
    /// Where the lab runs it.
    pub lab: &'static str,
}

/// The studies with sets, in the order errors list them.
pub const STUDIES: &[&str] = &["moneta", "haste", "nvmm", "placement"];

/// Every study's configuration of every application the lab runs in it.
pub const SETS: &[StudySet] = &[
    // Table V (apps-table, tablev::spec): every application with no
    // pairs, that is with its defaults
    StudySet {
        study: "moneta",
        app: "postmark",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "build",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "ptfdb",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "oltp",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "bdb-btree",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "bdb-hash",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "npb-bt",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "npb-is",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "npb-lu",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "npb-sp",
        pairs: &[],
        lab: "apps-table",
    },
    StudySet {
        study: "moneta",
        app: "npb-ua",
        pairs: &[],
        lab: "apps-table",
    },
    // the HASTE study: Berkeley DB at 16 GB scaled 1/8 (apps-db), Postmark
    // whole (apps-files, run buffered and with direct=1), Patch at a
    // hundredth, the kernel build whole
    StudySet {
        study: "haste",
        app: "bdb-btree",
        pairs: &["db=2g", "cache=64m", "transactions=3000"],
        lab: "apps-db",
    },
    StudySet {
        study: "haste",
        app: "bdb-hash",
        pairs: &["db=2g", "cache=64m", "transactions=3000"],
        lab: "apps-db",
    },
    StudySet {
        study: "haste",
        app: "postmark",
        pairs: &["scale=1", "direct=0"],
        lab: "apps-files",
    },
    StudySet {
        study: "haste",
        app: "patch",
        pairs: &["scale=0.01"],
        lab: "apps-files",
    },
    StudySet {
        study: "haste",
        app: "build",
        pairs: &[],
        lab: "apps-files",
    },
    // the NVMM study: TPC-C, 100 warehouses, 100 clients (apps-db); the
    // Filebench workloads (apps-files)
    StudySet {
        study: "nvmm",
        app: "tpcc",
        pairs: &["transactions=3000"],
        lab: "apps-db",
    },
    StudySet {
        study: "nvmm",
        app: "fileserver",
        pairs: &["scale=0.1", "loops=10000"],
        lab: "apps-files",
    },
    StudySet {
        study: "nvmm",
        app: "webserver",
        pairs: &["loops=10000"],
        lab: "apps-files",
    },
    StudySet {
        study: "nvmm",
        app: "varmail",
        pairs: &["loops=10000"],
        lab: "apps-files",
    },
    // the flash placement study: TPC-C at 200 GB scaled 1/16 (2128
    // warehouses / 16, a 20 GB buffer pool / 16), O_DIRECT (apps-db)
    StudySet {
        study: "placement",
        app: "tpcc",
        pairs: &[
            "warehouses=133",
            "buffer_pool=1342177280",
            "flush_method=o_direct",
            "transactions=1500",
        ],
        lab: "apps-db",
    },
];

/// The studies with a set for `app`, in [`STUDIES`] order.
pub fn studies_of(app: &str) -> Vec<&'static str> {
    STUDIES
        .iter()
        .copied()
        .filter(|s| SETS.iter().any(|x| x.study == *s && x.app == app))
        .collect()
}

/// The pairs `study` ran `app` with; an error naming `place` and the
/// studies known (for `app`) when there is none.
pub fn pairs(app: &str, study: &str, place: &str) -> Result<&'static [&'static str], AppError> {
    let study_l = study.trim().to_ascii_lowercase();
    if let Some(s) = SETS.iter().find(|x| x.study == study_l && x.app == app) {
        return Ok(s.pairs);
    }
    let have = studies_of(app);
    let message = if STUDIES.contains(&study_l.as_str()) {
        format!(
            "the {study_l} study did not run {app}; studies with a configuration of {app}: {}",
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        )
    } else {
        format!(
            "unknown study (known studies: {}; with a configuration of {app}: {})",
            STUDIES.join(", "),
            if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            }
        )
    };
    Err(AppError::BadValue {
        place: place.to_string(),
        app: app.to_string(),
        param: "study".into(),
        value: study.to_string(),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_names_a_known_study_and_application_with_its_parameters() {
        for s in SETS {
            assert!(STUDIES.contains(&s.study), "{}", s.study);
            let a = crate::registry::find(s.app, "test").unwrap();
            let pairs: Vec<String> = s.pairs.iter().map(|p| p.to_string()).collect();
            let p = crate::info::Params::parse(a, &pairs, "test")
                .unwrap_or_else(|e| panic!("{} {}: {e}", s.study, s.app));
            assert!(
                crate::registry::build(a, &p).is_ok(),
                "{} {}",
                s.study,
                s.app
            );
        }
    }

    #[test]
    fn a_wrong_study_is_refused_naming_the_known_ones() {
        let e = pairs("bdb-btree", "nvm", "--app-set")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("moneta, haste, nvmm, placement") && e.contains("--app-set"),
            "{e}"
        );
        let e = pairs("bdb-btree", "nvmm", "--app-set")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("did not run bdb-btree") && e.contains("moneta, haste"),
            "{e}"
        );
        assert_eq!(pairs("tpcc", "placement", "x").unwrap().len(), 4);
    }
}
