//! The CXL expander's bandwidth row of the study `today` (issue 62;
//! docs/spec/today.md, "CXL Type-3 memory expander"): a vendor's rating of
//! one CXL 2.0 x8 module with the preset's structure (PCIe 5.0 x8, two
//! DDR5 channels behind the controller), predicted by a run of `cxl-type3`.

use crate::measure::{Plan, Results, RunId, Spec};
use crate::places::CXL_CZ120;
use crate::report::Row;

const CXL: &str = "cxl-type3";

/// The runs behind the rows.
pub struct Ids {
    mix: RunId,
}

/// Add the runs to the plan: Intel MLC's bandwidth traffic with two reads
/// to a write (the rating's method), as 16 threads each keeping one 4 KB
/// request outstanding, two of three of them reads.
pub fn plan(p: &mut Plan) -> Ids {
    Ids {
        mix: p.add(Spec::new(
            CXL,
            &[],
            &[
                "--name=mlc",
                "--rw=randrw",
                "--rwmixread=67",
                "--bs=4k",
                "--iodepth=1",
                "--numjobs=16",
                "--norandommap",
                "--size=1g",
                "--number_ios=5000",
            ],
        )),
    }
}

/// The expander's bandwidth row: reads and writes together, GB/s.
pub fn rows(r: &Results, ids: &Ids) -> Vec<Row> {
    vec![Row::within(
        format!("{CXL}, bandwidth with 2 reads to 1 write (MLC), one x8 module"),
        r[ids.mix].total_gbps(),
        36.0,
        0.25,
        "GB/s",
    )
    .at(CXL_CZ120)]
}
