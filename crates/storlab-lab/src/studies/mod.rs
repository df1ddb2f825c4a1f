//! The published studies, each reproduced from its presets and workloads
//! (docs/spec/targets.md): `prepare` gives the runs and how to read the rows
//! and figures off them.

pub mod apps_db;
pub mod apps_files;
pub mod apps_kv;
pub mod apps_paging;
pub mod apps_table;
pub mod devices;
pub mod filesystems;
pub mod haste_bus;
pub mod haste_ddr;
pub mod moneta;
pub mod nvmm;
pub mod paging;
pub mod peers;
pub mod placement;
pub mod psd;
pub mod read_tail;
pub mod today;
pub mod today_cxl;
pub mod today_flash;
pub mod today_p5800x;

use crate::error::{LabError, Result};
use crate::report::Prepared;

/// The studies by name, with one line each.
pub const STUDIES: &[(&str, &str)] = &[
    (
        "moneta",
        "Moneta IO-stack variants: latency, bandwidth against size (MICRO 2010)",
    ),
    (
        "haste-ddr",
        "HASTE and DDR-attached NVM, media-latency sweep (SC 2010)",
    ),
    (
        "psd",
        "PCM SSD against flash: pattern and write sensitivity",
    ),
    (
        "nvmm",
        "NVMM msync cost by flush mode, selective persistence flushing (MSST 2015)",
    ),
    (
        "flash-placement",
        "Flash as a disk cache or as hybrid memory; paging with thrash",
    ),
    (
        "devices",
        "Device figures: flash placement table 1, PSD and SATA SSD findings, Moneta power, latency spread",
    ),
    (
        "haste-bus",
        "NVM on the memory bus: the copying CPU, media crossover, HASTE breakdown (SC 2010)",
    ),
    (
        "peers",
        "The peer devices as the studies measured them: Moneta Table III, HASTE Fig. 4",
    ),
    (
        "paging",
        "thrash through Linux's swap path on each device (HASTE study, Fig. 9)",
    ),
    (
        "filesystems",
        "XFS and ext3 as mechanisms against the raw device (SC 2010, V-A)",
    ),
    (
        "apps-table",
        "Moneta Table V's device rows (XDD raw and through XFS) on the full Moneta",
    ),
    (
        "apps-kv",
        "MongoDB under YCSB on NVMM, SSD, disk and DRAM (MSST 2015)",
    ),
    (
        "apps-db",
        "Database applications as models: Berkeley DB, MySQL OLTP and TPC-C, PostgreSQL PTF (Moneta, HASTE, NVMM and flash placement studies)",
    ),
    (
        "apps-files",
        "File workloads as applications: Postmark, Linux build and patch, Filebench (Moneta, HASTE, NVMM and flash placement studies)",
    ),
    (
        "apps-paging",
        "NPB and DGEMM paging with 8 GB of DRAM on each device (HASTE study; Moneta Table V)",
    ),
    (
        "today",
        "Optane SSD, Optane PMem and CXL memory against their published figures, and the studies' questions asked of them",
    ),
    (
        "today-flash",
        "Today's flash: PM9A3, 990 PRO and D5-P5336 data sheets, the SLC cache's cliff",
    ),
];

/// Prepare the study called `name`.
pub fn prepare(name: &str) -> Result<Prepared> {
    Ok(match name {
        "moneta" => moneta::prepare(),
        "haste-ddr" => haste_ddr::prepare(),
        "psd" => psd::prepare(),
        "nvmm" => nvmm::prepare(),
        "flash-placement" => placement::prepare(),
        "devices" => devices::prepare(),
        "haste-bus" => haste_bus::prepare(),
        "peers" => peers::prepare(),
        "paging" => paging::prepare(),
        "filesystems" => filesystems::prepare(),
        "apps-table" => apps_table::prepare(),
        "apps-kv" => apps_kv::prepare(),
        "apps-db" => apps_db::prepare(),
        "apps-files" => apps_files::prepare(),
        "apps-paging" => apps_paging::prepare(),
        "today" => today::prepare(),
        "today-flash" => today_flash::prepare(),
        _ => {
            return Err(LabError::UnknownStudy {
                name: name.to_string(),
                known: STUDIES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            })
        }
    })
}
