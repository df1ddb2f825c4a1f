//! PostgreSQL: the Moneta study's scientific databases (docs/spec/workloads.md):
//! the Palomar Transient Factory's six time-critical index queries over
//! 50 GB (`ptfdb`) and BiologicalNetworks' long pathway queries over
//! 35 GB (`bionet`). Both are read-only index scans.
//!
//! A query is a series of index probes; a probe descends the B+tree
//! index from the root (internal pages, then the leaf pages its key range
//! covers) and fetches each matching row from its heap page (the heap is
//! not clustered by the index: a random page per row). Every page is
//! looked up in `shared_buffers` (clock replacement, as PostgreSQL's
//! buffer manager); a miss reads the 8 KB page from the file through the
//! operating system's page cache (PostgreSQL always reads buffered). Each
//! query runs in its own backend (one thread); the metric is the seconds
//! until every query has finished.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::Layout;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::kit::BufferPool;
use crate::model::{FileIo, MetricKind, Model, PlanCx, SetupCx, Step};

/// PostgreSQL's block size (`BLCKSZ`, 8 KiB).
pub(crate) const PAGE: u64 = 8 << 10;
/// Heap page fill (the default fillfactor 100 less the page header and
/// line pointers: ESTIMATE 0.9 of the page holds tuples).
const HEAP_FILL: f64 = 0.9;
/// Index page fill after random inserts (ESTIMATE 0.7, as a B+tree
/// settles near ln 2).
const INDEX_FILL: f64 = 0.7;
/// Bytes of a tuple's overhead in the heap (23-byte header, 4-byte line
/// pointer, alignment): 28.
const TUPLE_OVERHEAD: u64 = 28;
/// Bytes of an index entry: an 8-byte key, the 6-byte heap pointer and
/// the 8-byte index tuple header, aligned: 24.
const INDEX_ENTRY: u64 = 24;
/// Pages of a relation segment file (`RELSEG_SIZE`: PostgreSQL splits
/// every table and index into files of 1 GiB).
const SEG_PAGES: u64 = (1 << 30) / PAGE;

/// CALIBRATED: CPU per row a PTF query fetches (the executor's index-scan
/// and qual evaluation per tuple, the query's share of planning), against
/// the Moneta study's Table V (PTFDB, 2.1 s on the full Moneta,
/// `moneta-balance`, XFS): the one number calibrated for PostgreSQL; the
/// RAID-Disk, RAID-SSD and FusionIO figures of the same table are
/// predictions, and bionet carries it over. Found with `storlab apps
/// calibrate ptfdb --device moneta-balance --param cpu_us --target 2.1`.
const PTF_CPU_US: f64 = 177.5;

const fn params(db: &'static str, db_help: &'static str, x: [ParamDef; 4]) -> [ParamDef; 9] {
    [
        ParamDef {
            name: "db",
            default: db,
            help: db_help,
        },
        ParamDef {
            name: "row",
            default: "400",
            help: "bytes of a heap row before PostgreSQL's 28 bytes of tuple overhead (ESTIMATE: the studies do not give it; tens of numeric columns)",
        },
        ParamDef {
            name: "shared_buffers",
            default: "1g",
            help: "shared_buffers, bytes (ESTIMATE: the study does not give it; PostgreSQL's guidance of a quarter of a 4-8 GB host's memory)",
        },
        ParamDef {
            name: "cpu_us",
            default: "",
            help: "CPU per row fetched, µs (default: the PTF calibration, see calibration)",
        },
        ParamDef {
            name: "index_share",
            default: "0.2",
            help: "fraction of the database that is index (ESTIMATE: one or two B+tree indexes of 24-byte entries beside 400-byte rows)",
        },
        x[0],
        x[1],
        x[2],
        x[3],
    ]
}

static PTF_PARAMS: [ParamDef; 9] = params(
    "50g",
    "database size, bytes (docs/spec/workloads.md: 50 GB)",
    [
        ParamDef {
            name: "queries",
            default: "6",
            help: "queries, each in its own backend, all at once (docs/spec/workloads.md: six time-critical queries)",
        },
        ParamDef {
            name: "probes",
            default: "100",
            help: "index probes per query (ESTIMATE: a transient-candidate query looks up about a hundred sky positions or candidate ids)",
        },
        ParamDef {
            name: "rows",
            default: "100",
            help: "rows a probe returns, each fetched from its heap page (ESTIMATE: the detections near a position over the survey's nights: ~100)",
        },
        ParamDef {
            name: "depth",
            default: "1",
            help: "levels of joins (1: the probes themselves; each level probes once per row found by the one before, up to `probes` probes per level)",
        },
    ],
);

static BIONET_PARAMS: [ParamDef; 9] = params(
    "35g",
    "database size, bytes (docs/spec/workloads.md: 35 GB)",
    [
        ParamDef {
            name: "queries",
            default: "4",
            help: "pathway queries, each in its own backend, all at once (ESTIMATE: the study does not give the count; a few long queries)",
        },
        ParamDef {
            name: "probes",
            default: "1",
            help: "index probes the query starts from (a pathway's start node)",
        },
        ParamDef {
            name: "rows",
            default: "20",
            help: "rows (interactions) each probe returns (ESTIMATE: a gene or protein's interactions in a biological network: ~20)",
        },
        ParamDef {
            name: "depth",
            default: "4",
            help: "levels of the pathway's joins: each level probes the index once per row of the level before (ESTIMATE: pathways of 4 steps: 1 + 20 + 400 + 8,000 probes, ~168,000 rows a query)",
        },
    ],
);

const MODELS: &[&str] = &[
    "the database: a heap of rows (row + 28 bytes, 0.9 of each 8 KB page) and B+tree indexes (24-byte entries, 0.7 full) taking index_share of it",
    "a probe: descend the index from the root through shared_buffers (internal pages, then the leaf pages its rows' entries fill), then fetch each of its rows from a uniformly random heap page",
    "shared_buffers: clock replacement; a miss reads the 8 KB page through the page cache (buffered pread) from its 1 GB segment file (RELSEG_SIZE)",
    "each query runs in its own backend; a join level probes once per row of the level before (depth), at most `probes` x rows^level probes; the metric is the seconds until every query has finished",
];

const SIMPLIFIES: &[&str] = &[
    "no planner: every query is an index nested-loop (the plans such selective queries get); no bitmap heap scans, no prefetching (effective_io_concurrency 1)",
    "heap rows matching a probe are on uniformly random pages (the heap is not clustered by the index)",
    "shared_buffers starts warm with uniformly chosen pages and the index's internal pages; the operating system's page cache starts empty",
    "read-only: no WAL, no hint-bit writes, no checkpoints",
];

/// `ptfdb` and `bionet`.
pub static APPS: &[&AppInfo] = &[&PTFDB, &BIONET];

static PTFDB: AppInfo = AppInfo {
    name: "ptfdb",
    summary: "PostgreSQL, Palomar Transient Factory: six time-critical index queries over 50 GB",
    unit: "seconds",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "cpu_us (CPU per row fetched) is CALIBRATED against the Moneta study's Table V, PTFDB on Moneta (moneta-balance, XFS): 2.1 s gives 177.5 µs (storlab apps calibrate ptfdb --device moneta-balance --param cpu_us --target 2.1); the query shape (6 queries x 100 probes x 100 rows) is an ESTIMATE",
    params: &PTF_PARAMS,
    build,
};

static BIONET: AppInfo = AppInfo {
    name: "bionet",
    summary: "PostgreSQL, BiologicalNetworks: long pathway queries (joins over index lookups), 35 GB",
    unit: "seconds",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "no Table V figure: CPU per row is carried over from the PTF calibration (the same executor's index-scan work per tuple); the query shape (4 queries of 4-level joins, 20 rows per probe) is an ESTIMATE",
    params: &BIONET_PARAMS,
    build,
};

fn build(p: &Params) -> Result<AppKind, AppError> {
    let db = p.scaled(p.u64("db", 1 << 20, 1 << 50)?, 1 << 20);
    let row = p.u64("row", 1, 4000)? + TUPLE_OVERHEAD;
    let share = p.fraction("index_share")?;
    if !(0.01..=0.9).contains(&share) {
        return Err(p.bad("index_share", "must be from 0.01 to 0.9"));
    }
    let cpu_us = match p.str("cpu_us") {
        "" => PTF_CPU_US,
        _ => p.f64("cpu_us")?,
    };
    if !(0.0..=1e7).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 10,000,000"));
    }
    let heap_pages = ((db as f64 * (1.0 - share)) / PAGE as f64).max(1.0) as u64;
    let per_heap = ((PAGE as f64 * HEAP_FILL) / row as f64).max(1.0) as u64;
    let entries = heap_pages * per_heap;
    let per_leaf = ((PAGE as f64 * INDEX_FILL) / INDEX_ENTRY as f64) as u64;
    // index levels, leaves first, page numbers after the heap
    let mut levels = Vec::new();
    let mut n = entries.div_ceil(per_leaf).max(1);
    let mut base = heap_pages;
    loop {
        levels.push((base, n));
        base += n;
        if n == 1 {
            break;
        }
        n = n.div_ceil(per_leaf);
    }
    let queries = p.u64("queries", 1, 4096)? as u32;
    let probes = p.u64("probes", 1, 1 << 30)?;
    let rows = p.u64("rows", 1, 1 << 20)?;
    let depth = p.u64("depth", 1, 16)? as u32;
    // probes per query: a level probes once per row of the one before
    let mut total = 0u64;
    let mut level = probes;
    for _ in 0..depth {
        total = total.saturating_add(level);
        level = level.saturating_mul(rows);
    }
    let shared = p.u64("shared_buffers", PAGE, 1 << 46)?;
    Ok(AppKind::Closed(Box::new(Pg {
        heap_pages,
        pages: base,
        per_leaf,
        levels,
        pool: BufferPool::new(shared / PAGE, base),
        cpu_ns: (cpu_us * 1000.0).round() as u64,
        rows,
        left: vec![total; queries as usize],
        probes_per_query: total,
        queries,
        rng: Pcg64Mcg::seed_from_u64(0),
        files: Vec::new(),
    })))
}

struct Pg {
    heap_pages: u64,
    pages: u64,
    per_leaf: u64,
    /// (first page, pages) of each index level, leaves first.
    levels: Vec<(u64, u64)>,
    pool: BufferPool,
    cpu_ns: u64,
    rows: u64,
    left: Vec<u64>,
    probes_per_query: u64,
    queries: u32,
    rng: Pcg64Mcg,
    /// The 1 GiB segment files, in page order.
    files: Vec<u32>,
}

impl Pg {
    fn touch(&mut self, page: u64, cx: &mut PlanCx) {
        if !self.pool.access(page, false).hit {
            let file = self.files[(page / SEG_PAGES) as usize];
            cx.push(Step::Io(FileIo::read(file, page % SEG_PAGES * PAGE, PAGE)));
        }
    }
}

impl Model for Pg {
    fn op_names(&self) -> &'static [&'static str] {
        &["probe"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Seconds
    }

    fn threads(&self) -> (u32, u32) {
        (self.queries, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x9e5);
        self.files.clear();
        for first in (0..self.pages).step_by(SEG_PAGES as usize) {
            let n = (self.pages - first).min(SEG_PAGES);
            self.files
                .push(cx.create_file(n * PAGE, Layout::Allocated)?);
        }
        let internal = self.levels.get(1..).unwrap_or(&[]);
        crate::kit::warm_btree_pool(&mut self.pool, &mut self.rng, self.pages, internal);
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        let left = &mut self.left[t as usize];
        if *left == 0 {
            return Ok(false);
        }
        *left -= 1;
        cx.push(Step::Cpu(self.cpu_ns * self.rows));
        let (leaf_base, leaves) = self.levels[0];
        let leaf = self.rng.gen_range(0..leaves);
        for lv in (1..self.levels.len()).rev() {
            let (base, n) = self.levels[lv];
            let idx = leaf / self.per_leaf.pow(lv as u32).max(1);
            self.touch(base + idx.min(n - 1), cx);
        }
        let span = self.rows.div_ceil(self.per_leaf);
        for k in 0..span {
            self.touch(leaf_base + (leaf + k).min(leaves - 1), cx);
        }
        for _ in 0..self.rows {
            let pg = self.rng.gen_range(0..self.heap_pages);
            self.touch(pg, cx);
        }
        cx.push(Step::End(0));
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "buffer_hit_ratio": self.pool.hit_ratio(),
            "shared_buffer_pages": self.pool.frames(),
            "database_pages": self.pages,
            "index_levels": self.levels.len(),
            "probes_per_query": self.probes_per_query,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(app: &'static AppInfo, pairs: &[&str]) -> Box<dyn Model> {
        let v: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
        match build(&Params::parse(app, &v, "test").unwrap()).unwrap() {
            AppKind::Closed(m) => m,
            AppKind::Memory(_) => panic!("closed"),
        }
    }

    #[test]
    fn join_levels_multiply_the_probes() {
        let m = model(&BIONET, &[]);
        assert_eq!(m.extra()["probes_per_query"], 1 + 20 + 400 + 8000);
        let m = model(&PTFDB, &[]);
        assert_eq!(m.extra()["probes_per_query"], 100);
        assert_eq!(m.threads(), (6, 0));
    }

    #[test]
    fn the_index_is_deep_enough_for_the_rows() {
        let m = model(&PTFDB, &[]);
        // 50 GB of 428-byte rows: ~110 M entries, 238 a leaf: 4 levels
        assert_eq!(m.extra()["index_levels"], 4);
    }
}
