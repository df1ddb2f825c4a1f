//! The Moneta study's Table V, its device-level rows: XDD's sequential
//! (4 MB) and random (4 KB) 50/50 mixes, 16 threads, on the raw device and
//! through XFS, on the full Moneta (`moneta-balance`: the 2,932 MB/s
//! sequential mix needs both link directions). The application rows of
//! the same table are in the apps-* studies (each application's CPU is
//! calibrated on its Moneta figure there), and `storlab lab reproduce
//! apps --devices ...` prints the whole table for any devices
//! ([`crate::tablev`]).

use crate::measure::Plan;
use crate::places::MONETA_T5;
use crate::report::{Class, Prepared, Reproduction, Row};
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
                    let row = Row::within(
                        format!("Table V, Moneta: {}", b.label),
                        res[*id].total_mbps(),
                        b.moneta,
                        0.25,
                        "MB/s",
                    )
                    .at(MONETA_T5);
                    if b.label == "XDD-Random-FS" {
                        row.miss_because(
                            "on the file a write pass left (the study's rule, as in the filesystems \
                             study) the mix's writes allocate nothing and XFS costs only its \
                             per-request CPU; even a new file's allocations give about 430 MB/s, \
                             above the published 261.",
                        )
                    } else {
                        row
                    }
                })
                .collect();
            Reproduction {
                study: "apps-table".into(),
                title: "Moneta (MICRO 2010) Table V: XDD rows on the full Moneta".into(),
                setting: "moneta-balance; XDD 16 threads, one request each, 50/50 read/write: sequential 4 MB and random 4 KB, raw and through XFS (direct IO on one file).".into(),
                class: Class::Xdd,
                state_rule: crate::studies::filesystems::STATE_RULE.into(),
                notes: vec![],
                rows,
                figures: Vec::new(),
            }
        }),
    }
}
