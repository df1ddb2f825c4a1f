//! The real applications, in one list ([`all`]), looked up by name
//! ([`find`]).

use super::kit::App;
use super::{bdb, build, pgbench, postmark, rocksdb, sqlite, sysbench};

/// Every application.
pub fn all() -> Vec<&'static dyn App> {
    vec![
        &bdb::BDB_BTREE,
        &bdb::BDB_HASH,
        &postmark::Postmark,
        &sysbench::SysbenchOltp,
        &pgbench::Pgbench,
        &sqlite::Sqlite,
        &rocksdb::Rocksdb,
        &build::Build,
    ]
}

/// The application called `name`.
pub fn find(name: &str) -> anyhow::Result<&'static dyn App> {
    all().into_iter().find(|a| a.name() == name).ok_or_else(|| {
        anyhow::anyhow!(
            "unknown application {name:?} (known: {}; `storlab apps` lists the simulator's application models)",
            all().iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
        )
    })
}
