//! The Moneta study's Table V, its device-level rows: XDD's sequential
//! (4 MB) and random (4 KB) 50/50 mixes, 16 threads, on the raw device and
//! through XFS, on the full Moneta (`moneta-balance`: the 2,932 MB/s
//! sequential mix needs both link directions). The application rows of
//! the same table are in the apps-* studies (each application's CPU is
//! calibrated on its Moneta figure there), and `storlab lab reproduce
//! apps --devices ...` prints the whole table for any devices
//! ([`crate::tablev`]).

use crate::measure::Plan;
use crate::report::{Prepared, Reproduction, Row};
use crate::tablev::{What, BENCHES};

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut plan = Plan::new();
    let rows: Vec<_> = BENCHES
        .iter()
        .filter_map(|b| match b.what {
            What::Xdd { rw, fs } => Some((
                b,
                plan.add(super::filesystems::xdd(
                    "moneta-balance",
                    fs.then_some("xfs"),
                    rw,
                )),
            )),
            What::App(_) => None,
        })
        .collect();
    Prepared {
        plan,
        finish: Box::new(move |res| {
            let rows = rows
                .iter()
                .map(|(b, id)| {
                    Row::within(
                        format!("Table V, Moneta: {}", b.label),
                        res[*id].total_mbps(),
                        b.moneta,
                        0.25,
                        "MB/s",
                    )
                    .miss_because(if b.label == "XDD-Random-FS" {
                        "the model's file is laid out before the run (fio writes out a file \
                         a job reads before the job starts), so the mix's writes allocate \
                         nothing and XFS costs only its per-request CPU; XDD's file was \
                         presumably new, created by the run, whose writes into holes each pay \
                         the allocation section (19.5 µs, calibrated on HASTE's 210 MB/s) one \
                         at a time: random writes alone into a new file reach about 200 MB/s \
                         on moneta-balance in the model, so a 50/50 mix on a new file, whose reads the \
                         section does not hold, reaches about twice that (430 MB/s when the \
                         simulator is made to leave the file sparse), still above the \
                         published 261 MB/s; and the simulator lays out every file a fio job \
                         reads, so a mix on a new file cannot be expressed"
                    } else {
                        "XFS costs its per-request CPU on a laid-out file; the published \
                         figure differs by more than that"
                    })
                })
                .collect();
            Reproduction {
                study: "apps-table".into(),
                title: "Moneta (MICRO 2010) Table V: XDD rows on the full Moneta".into(),
                setting: "moneta-balance; XDD 16 threads, one request each, 50/50 read/write: sequential 4 MB and random 4 KB, raw and through XFS (direct IO on one file).".into(),
                rows,
                figures: Vec::new(),
            }
        }),
    }
}
