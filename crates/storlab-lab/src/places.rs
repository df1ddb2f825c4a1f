//! The published places a lab row's target may come from: a table, a
//! figure or a section of one of the five studies (docs/spec/README.md),
//! or a manufacturer's document a preset cites. A row names its place
//! ([`crate::Row::at`]); a row with none, or with a place not listed here,
//! fails the lab: a target is a published number, never a preset value,
//! the model's own output or a figure computed from the model's inputs.
//!
//! Where the study's own numbering of a table or figure is not in
//! docs/spec, the place names its content ("the IO-stack cost table").

/// Moneta study: the IO-stack cost table (where a 4 KB access's 21 µs
/// go), docs/spec/pcie-arrays.md.
pub const MONETA_STACK: &str = "Moneta study, IO-stack cost table";
/// Moneta study: the software and hardware variants and the bandwidth
/// figures (+NoSched, +Atomic, +Spin, +2Q), docs/spec/targets.md.
pub const MONETA_VARIANTS: &str = "Moneta study, IO-stack variants and bandwidth figures";
/// Moneta study: the power model's figures.
pub const MONETA_POWER: &str = "Moneta study, power";
/// Moneta study, Table III: the peers' IOPS and instructions per IO.
pub const MONETA_T3: &str = "Moneta study, Table III";
/// Moneta study, Table V: applications on each device.
pub const MONETA_T5: &str = "Moneta study, Table V";
/// Moneta study, section VI-A: the peers under XDD.
pub const MONETA_6A: &str = "Moneta study, section VI-A";
/// HASTE study: HASTE's and the DDR devices' 4 KB latencies and the
/// media-latency sweep (docs/spec/targets.md, docs/spec/ddr-nvm.md).
pub const HASTE_LATENCY: &str = "HASTE study, latency and media sweep";
/// HASTE study: the bandwidths of the DDR devices and the latency
/// breakdown of a HASTE access (docs/spec/ddr-nvm.md,
/// docs/spec/pcie-arrays.md).
pub const HASTE_BUS: &str = "HASTE study, memory-bus bandwidth and latency breakdown";
/// HASTE study, Fig. 4: the peers' bandwidths.
pub const HASTE_FIG4: &str = "HASTE study, Fig. 4";
/// HASTE study, section V-A: file systems against the raw device.
pub const HASTE_5A: &str = "HASTE study, section V-A";
/// HASTE study: the databases (Berkeley DB).
pub const HASTE_DB: &str = "HASTE study, databases";
/// HASTE study: Postmark, build and patch.
pub const HASTE_FILES: &str = "HASTE study, file workloads";
/// HASTE study, Fig. 9: paging with thrash.
pub const HASTE_FIG9: &str = "HASTE study, Fig. 9";
/// HASTE study: NPB and DGEMM paging.
pub const HASTE_NPB: &str = "HASTE study, paging programs";
/// NVMM study: msync cost by flush mode, SPF (docs/spec/nvmm.md).
pub const NVMM_MSYNC: &str = "NVMM study, msync and flush modes";
/// NVMM study: MongoDB under YCSB.
pub const NVMM_YCSB: &str = "NVMM study, YCSB on MongoDB";
/// NVMM study: TPC-C.
pub const NVMM_TPCC: &str = "NVMM study, TPC-C";
/// NVMM study: Filebench.
pub const NVMM_FILEBENCH: &str = "NVMM study, Filebench";
/// PSD study: the PCM SSD's findings (docs/spec/peer-devices.md).
pub const PSD_FINDINGS: &str = "PSD study, findings";
/// Flash placement study, Table 1: the devices.
pub const PLACEMENT_T1: &str = "Flash placement study, Table 1";
/// Flash placement study: TPC-C with flash as a cache and as memory.
pub const PLACEMENT_TPCC: &str = "Flash placement study, TPC-C";
/// Flash placement study: the placements' findings (docs/spec/hybrid.md).
pub const PLACEMENT_FINDINGS: &str = "Flash placement study, findings";
/// Intel X25-E product manual (the `x25e` preset's ratings).
pub const X25E_MANUAL: &str = "Intel X25-E product manual";
/// Intel's Optane SSD DC P4800X product brief and datasheet (the
/// `optane-p4800x` preset's ratings; docs/spec/today.md).
pub const P4800X_BRIEF: &str = "Intel Optane SSD DC P4800X product brief";
/// Intel's Optane SSD DC P5800X product brief (the `optane-p5800x`
/// preset's ratings; docs/spec/today.md).
pub const P5800X_BRIEF: &str = "Intel Optane SSD DC P5800X product brief";
/// J. Axboe's io_uring measurements on a second-generation Optane SSD,
/// linux-block mailing list, August 2020 (docs/spec/today.md).
pub const AXBOE_GEN2_OPTANE: &str = "Axboe, io_uring on Gen2 Optane (linux-block, 2020)";
/// Yang et al., FAST 2020, and Izraelevitz et al., 2019: Optane PMem's
/// measured latencies (docs/spec/today.md).
pub const PMEM_GUIDE: &str = "Optane PMem guide (Yang et al., FAST 2020)";
/// Pond, ASPLOS 2023: CXL memory's latency over local DRAM
/// (docs/spec/today.md).
pub const CXL_POND: &str = "Pond (Li et al., ASPLOS 2023)";
/// Micron's CZ120 announcement, August 2023: one CXL 2.0 x8 module's
/// bandwidth under Intel MLC's 2:1 read/write traffic (docs/spec/today.md).
pub const CXL_CZ120: &str = "Micron CZ120 announcement (2023)";
/// Samsung PM9A3 data sheet (the `pm9a3` preset's ratings).
pub const PM9A3_DATASHEET: &str = "Samsung PM9A3 data sheet";
/// Samsung 990 PRO data sheet (the `990pro` preset's ratings).
pub const SSD_990PRO_DATASHEET: &str = "Samsung 990 PRO data sheet";
/// Solidigm D5-P5336 product brief (the `p5336` preset's ratings).
pub const P5336_BRIEF: &str = "Solidigm D5-P5336 product brief";

/// Every published place.
pub const PLACES: &[&str] = &[
    MONETA_STACK,
    MONETA_VARIANTS,
    MONETA_POWER,
    MONETA_T3,
    MONETA_T5,
    MONETA_6A,
    HASTE_LATENCY,
    HASTE_BUS,
    HASTE_FIG4,
    HASTE_5A,
    HASTE_DB,
    HASTE_FILES,
    HASTE_FIG9,
    HASTE_NPB,
    NVMM_MSYNC,
    NVMM_YCSB,
    NVMM_TPCC,
    NVMM_FILEBENCH,
    PSD_FINDINGS,
    PLACEMENT_T1,
    PLACEMENT_TPCC,
    PLACEMENT_FINDINGS,
    X25E_MANUAL,
    P4800X_BRIEF,
    P5800X_BRIEF,
    AXBOE_GEN2_OPTANE,
    PMEM_GUIDE,
    CXL_POND,
    CXL_CZ120,
    PM9A3_DATASHEET,
    SSD_990PRO_DATASHEET,
    P5336_BRIEF,
];
