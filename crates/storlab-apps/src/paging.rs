//! Paging programs (docs/spec/hybrid.md, paging; docs/spec/workloads.md, memory-hungry
//! programs): the NAS Parallel Benchmarks 3.3 OpenMP class D (BT, CG, IS,
//! LU, MG, SP, UA; 16 threads), DGEMM (30,000 x 30,000 doubles) and
//! thrash, each as a memory-access stream ([`MemWorkload`]) that pages
//! through Linux's swap path ([`storlab_model::host::swap`]) to the device
//! under test, with the HASTE study's 8 GB of DRAM.
//!
//! An access of the stream is one visit to a 4 KB page: the program's
//! loads and stores within the page are the computation that follows it
//! (`cpu_ns`, on the thread's own hardware thread), and the instructions
//! it stands for are `cpu_ns` x [`GHZ`] x [`IPC`]. The metric is
//! instructions per second after initialisation (the touch of every
//! page), and [`run`] also runs the same stream with enough DRAM, for the
//! relative figure the studies report.
//!
//! Sizes are scaled by 1/[`SCALE`] by default (DRAM and footprints
//! together, as the paging study does) so a run takes seconds; `scale`
//! scales both further, and `dram`/`footprint` set them outright.

use storlab_model::config::PresetStore;
use storlab_model::host::swap::{self, MemReport, MemWorkload, Pattern, SwapError, PAGE};
use storlab_model::SystemConfig;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, MemoryApp, ParamDef, Params};

/// The paging programs, in `storlab apps` order.
pub const APPS: &[&AppInfo] = &[
    &NPB_BT, &NPB_CG, &NPB_IS, &NPB_LU, &NPB_MG, &NPB_SP, &NPB_UA, &DGEMM, &THRASH,
];

/// The studies' sizes over the defaults: 8 GB of DRAM becomes 64 MiB and
/// every footprint keeps its ratio to it (the paging study's 1/128).
pub const SCALE: u64 = 128;
/// The studies' DRAM: 8 GB (docs/spec/hybrid.md, the HASTE study's paging
/// runs: [`crate::host::HASTE`]'s DRAM; the Moneta study's host has the same).
pub const STUDY_DRAM: u64 = crate::host::HASTE.dram;
/// The least DRAM a program runs with, bytes: 1,024 frames, so that the
/// watermarks and 16 threads' reclaim batches (32 pages each) leave
/// frames to fault into (the swap model's own tests run at this size);
/// a smaller `dram` x `scale` is raised to it, the footprint keeping its
/// ratio.
pub const MIN_DRAM: u64 = 4 << 20;
/// Clock of the host the CPU per page visit is measured on, GHz: the
/// Moneta study's ([`crate::host::MONETA`], whose Table V calibrates it).
/// The HASTE study's rows run on [`crate::host::HASTE`]; a cost carries
/// there by `HASTE.carry_ns` (the clocks' ratio: 1, the same platform).
pub const GHZ: f64 = crate::host::MONETA.ghz;
/// Instructions per cycle of one hardware thread while it computes.
/// ESTIMATE: the NPB kernels retire about 1-1.4 instructions per cycle on
/// a Nehalem core (memory-bound stencils and sparse codes at the low end),
/// and the 16 threads share 8 cores two to a core (docs/spec/pcie-arrays.md Host),
/// so about 0.6 each. One IPC for every program: measured on the real
/// programs (NPB's C++ port on one core, `scripts/npb-rates`,
/// crates/storlab/results/npb-rates.json), BT, IS, MG and SP retire
/// instructions at 0.8-1.2 of LU's rate, so IS's and SP's low Table V
/// figures are paging, not a low IPC (CG, at half, is bound by the
/// channels either way).
pub const IPC: f64 = 0.6;
/// Threads: the studies' 16 (NPB OpenMP with 16 threads; thrash's 16),
/// one per hardware thread of the host (2 sockets x 4 cores x 2).
pub const THREADS: u32 = crate::host::HASTE.cores * crate::host::HASTE.smt;
/// NPB class D grid edge of BT, SP and LU (NPB 3.3 `npbparams`: 408^3).
pub const GRID_D: f64 = 408.0;
/// Bytes of one grid point of one solution array of BT/SP/LU: five
/// doubles (the five conserved variables, `u(5,i,j,k)`).
pub const POINT_BYTES: f64 = 40.0;
/// IS's buckets, each a write front of every thread: NPB 3.3 is.c, class
/// D's `NUM_BUCKETS_LOG_2` = 10. `rank` stores each key at its bucket's
/// next place (`key_buff2[bucket_ptrs[k >> shift]++] = k`), every OpenMP
/// thread in its own range of each bucket, so a thread fills 1,024 pages
/// at a time (64 MB over 16 threads: resident in 8 GB of DRAM). A scaled
/// run scales them with the DRAM, as it scales the devices' caches
/// ([`scaled_device`]), or they would hold all of a 64 MiB DRAM.
pub const IS_BUCKETS: f64 = 1024.0;

/// A program's stream, before scaling.
#[derive(Clone, Copy)]
struct Program {
    /// Footprint at full size, bytes (docs/spec/workloads.md).
    footprint: u64,
    /// Its locality.
    shape: Shape,
    /// Fraction of the page visits that store (for `Stream`, the random
    /// side's).
    write_fraction: f64,
    /// Computation per page visit, ns (CALIBRATED or ESTIMATE; see each
    /// constant).
    cpu_ns: f64,
    /// Accesses per thread after the touch, in passes over its part.
    passes: f64,
    /// Instructions an access stands for: `None`: `cpu_ns` x GHZ x IPC;
    /// `Some(x)`: x (thrash counts updates).
    per_access: Option<f64>,
    /// DRAM bytes an access's computation reads (a store writes them
    /// back too): a page visit runs over its page, which class D's arrays
    /// (8-35 GB against two 8 MB caches) bring from DRAM, [`PAGE`]; a
    /// thrash update, one cache line ([`LINE`]).
    bytes: u64,
}

/// A cache line, bytes (x86).
pub const LINE: u64 = 64;

#[derive(Clone, Copy)]
enum Shape {
    /// ADI sweeps over a 3-D grid of class D (BT, SP): rows and planes
    /// from the grid scaled with the footprint.
    Adi,
    /// IS's bucket sort: keys streamed, scattered into [`IS_BUCKETS`]
    /// write fronts per thread, scaled with the DRAM.
    Buckets {
        /// Fraction of the visits that scatter.
        random: f64,
        /// Fraction of the part the buckets cover.
        region: f64,
    },
    /// Any other pattern as is.
    Fixed(Pattern),
}

const GIB: u64 = 1 << 30;

/// BT's computation per page visit, ns. CALIBRATED: the CPU per page
/// visit of BT against the Moneta study's Table V, BT on Moneta
/// (moneta-balance): 2,785 MIPS (`storlab apps calibrate npb-bt --device
/// moneta-balance --param cpu_ns --target 2.785e9 --lo 10 --hi 1e7`),
/// because the CPU per
/// page is what the stream cannot derive (the loop bodies' instruction
/// counts and stalls). The five Table V calibrations were rerun when the
/// swap path gained `swap.young_flush` (reclaim's TLB shootdowns for
/// young pages), which slows every paging run.
pub const BT_CPU_NS: f64 = 13917.2903;
/// IS's computation per page visit, ns. CALIBRATED against Table V, IS on
/// Moneta: 351 MIPS (as BT: `--param cpu_ns --target 3.51e8`); rerun when
/// IS's scatter became bucket fronts (`Pattern::Scatter`; it was 1,943.7
/// with uniform stores: on Moneta reclaim binds either way), and again
/// when a visit's computation became bound by the host's DRAM bandwidth
/// (`swap.dram_bytes_per_s`; it was 1,980.96: IS's bucket stores, a
/// page read for ownership and written back, take 3.7 us at a sixteenth
/// of 35 GB/s, which slows its computing threads and with them the
/// reclaim they contend in).
pub const IS_CPU_NS: f64 = 1968.5;
/// LU's, CALIBRATED against Table V, LU on Moneta: 4,298 MIPS (as BT:
/// `--target 4.298e9`).
pub const LU_CPU_NS: f64 = 18265.5;
/// SP's, CALIBRATED against Table V, SP on Moneta: 704 MIPS (as BT:
/// `--target 7.04e8`).
pub const SP_CPU_NS: f64 = 3586.5;
/// UA's, CALIBRATED against Table V, UA on Moneta: 3,992 MIPS (as BT:
/// `--target 3.992e9`).
pub const UA_CPU_NS: f64 = 13009.4163;
/// CG's computation per page visit, ns (no Table V figure): a page of
/// the matrix holds 341 nonzeros (8-byte value, 4-byte column index);
/// each costs [`CG_INSTRUCTIONS_PER_NONZERO`], spread over the two visits
/// (one matrix page, one vector page) the stream makes per matrix page:
/// 341 x 7.5 / 2 = 1,279 instructions / (IPC x GHZ) = 943 ns.
pub const CG_CPU_NS: f64 = 341.0 * CG_INSTRUCTIONS_PER_NONZERO / 2.0 / (IPC * GHZ);
/// Instructions CG runs per nonzero of its matrix, MEASURED on the real
/// program (`scripts/npb-rates`, crates/storlab/results/npb-rates.json):
/// NPB-CPP's `conj_grad` runs 3.70 instructions per NPB operation (class
/// W, callgrind), and NPB counts 2 (5 + r) / r operations per nonzero for
/// r nonzeros a row (cg.f's flop count), 2.02 at class D's r = 462
/// (nonzer 21): 7.5 (the ESTIMATE before, 6: two loads, the gather, a
/// multiply-add, the loop; the measurement adds the vector updates).
pub const CG_INSTRUCTIONS_PER_NONZERO: f64 = 7.5;
/// MG's computation per page visit, ns. ESTIMATE (no Table V figure):
/// 512 grid points a page, each about 40 instructions in `resid` and
/// `psinv` (27-point stencils written with partial sums: ~30 additions,
/// 4 multiplications, loads), 20,480 instructions / (IPC x GHZ).
pub const MG_CPU_NS: f64 = 20_480.0 / (IPC * GHZ);
/// DGEMM's computation per page visit, ns. ESTIMATE (no Table V figure):
/// a packed, blocked product uses each element of an A tile against a
/// B panel of 256 columns (GotoBLAS's Nehalem blocking): 512 x 256 x 2
/// flops a page, two flops per SSE2 instruction, 131,072 instructions /
/// (IPC x GHZ).
pub const DGEMM_CPU_NS: f64 = 131_072.0 / (IPC * GHZ);
/// thrash's computation per update, ns: the paging study's ESTIMATE
/// (`UPDATE_CPU_NS`: the random index and the TLB miss's page walk, two
/// thirds of a DRAM access).
pub const THRASH_CPU_NS: f64 = 100.0;

fn program(name: &str) -> Program {
    let p = |gib: f64, shape, wf, cpu| Program {
        footprint: (gib * GIB as f64) as u64,
        shape,
        write_fraction: wf,
        cpu_ns: cpu,
        passes: 2.0,
        per_access: None,
        bytes: PAGE,
    };
    match name {
        // ESTIMATE write fractions: each sweep reads several arrays (u,
        // rhs, the lhs blocks, forcing) and writes one or two
        "npb-bt" => p(11.0, Shape::Adi, 0.4, BT_CPU_NS),
        "npb-sp" => p(12.0, Shape::Adi, 0.4, SP_CPU_NS),
        "npb-lu" => p(9.0, Shape::Fixed(Pattern::Zigzag), 0.4, LU_CPU_NS),
        // the matrix (18 GB of it) streamed read-only; the vectors (five
        // of 1.5 M doubles: 60 MB, 0.33 %) gathered and written
        "npb-cg" => p(
            18.0,
            Shape::Fixed(Pattern::Stream {
                random: 0.5,
                region: 0.0033,
                stream_store: 0.0,
            }),
            0.5,
            CG_CPU_NS,
        ),
        // keys read in order, each stored at its bucket's next place in
        // the other half
        "npb-is" => p(
            35.0,
            Shape::Buckets {
                random: 0.5,
                region: 0.5,
            },
            1.0,
            IS_CPU_NS,
        ),
        // the finest grid's sweeps (residual, smoother: one of three
        // arrays written)
        "npb-mg" => p(28.0, Shape::Fixed(Pattern::Sequential), 0.33, MG_CPU_NS),
        // elements in mesh order, neighbours gathered anywhere
        "npb-ua" => p(
            8.0,
            Shape::Fixed(Pattern::Stream {
                random: 0.3,
                region: 1.0,
                stream_store: 0.5,
            }),
            0.0,
            UA_CPU_NS,
        ),
        // C = A B, 7 GB each: the A tiles reused (a third of the pages,
        // 90 % of the visits), B and C streamed (C written back)
        "dgemm" => p(
            21.0,
            Shape::Fixed(Pattern::Stream {
                random: 0.9,
                region: 1.0 / 3.0,
                stream_store: 0.5,
            }),
            0.0,
            DGEMM_CPU_NS,
        ),
        _ => Program {
            // thrash: 60 GB (the paging study's largest array, 7.5x DRAM),
            // 3,000 random updates per thread (its UPDATES) of ~7,680 pages
            footprint: 60 * GIB,
            shape: Shape::Fixed(Pattern::Uniform),
            write_fraction: 1.0,
            cpu_ns: THRASH_CPU_NS,
            passes: 3000.0 / (60.0 * GIB as f64 / SCALE as f64 / PAGE as f64 / 16.0),
            per_access: Some(1.0),
            bytes: LINE,
        },
    }
}

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "dram",
        default: "64m",
        help: "DRAM for the program's pages, bytes (the studies' 8 GB / 128; `scale` multiplies it with the footprint; at least 4 MiB)",
    },
    ParamDef {
        name: "footprint",
        default: "",
        help: "the program's memory, bytes, times `scale`; empty: its class-D footprint's ratio to 8 GB of DRAM (docs/spec/workloads.md) times `dram`",
    },
    ParamDef {
        name: "cpu_ns",
        default: "",
        help: "computation per page visit, ns; empty: the model's (CALIBRATED or ESTIMATE, see calibration)",
    },
    ParamDef {
        name: "passes",
        default: "",
        help: "accesses per thread after initialisation, in passes over the thread's part; empty: the model's (2; thrash 0.39: 3,000 updates)",
    },
];

macro_rules! npb {
    ($id:ident, $name:literal, $summary:literal, $models:expr, $simplifies:expr, $cal:literal) => {
        static $id: AppInfo = AppInfo {
            name: $name,
            summary: $summary,
            unit: "instructions/s",
            models: $models,
            simplifies: $simplifies,
            calibration: $cal,
            params: PARAMS,
            build: |p| build(p),
        };
    };
}

const COMMON_MODELS: &str = "The program's pages live in DRAM (64 MiB: the studies' 8 GB / 128) and page through Linux's swap path (faults, swap cache, page-cluster read-ahead, kswapd and direct reclaim, TLB shootdowns, clustered swap slots) to the --device preset, whose caches (a RAID controller's, disks' caches and read-ahead) scale with the DRAM (paging::scaled_device: the lab and the command line run the same); 16 threads, each on its own part of the footprint; every page is touched once (initialisation), then the stream runs; the metric is instructions per second after initialisation (instructions per page visit = cpu_ns x 2.26 GHz x IPC 0.6), also reported relative to the same stream with enough DRAM; a page visit's computation takes its CPU time or, where longer, its page's DRAM traffic (4 KB, twice for a store: read for ownership, written back) at its share of the host's sustained 35 GB/s among the threads computing (swap.dram_bytes_per_s), which binds CG's matrix pages and IS's bucket stores with enough DRAM";
const COMMON_SIMPLIFIES: &str = "the common `runtime` parameter is not used (the work is `passes`); one access per page visit: the loads and stores within a page are CPU time after it, bounded below by the page's DRAM traffic (no cache misses modelled inside the computation); a thread's part is its own (OpenMP's static partition), no sharing between threads, no barriers between sweeps; one IPC for every program (the real programs retire instructions at 0.8-1.2 of LU's rate on one core, BT, IS, MG and SP alike, CG at 0.5: scripts/npb-rates, docs/apps.md); sizes scaled by 1/128 (DRAM and footprint together)";

static BT_MODELS: &[&str] = &[
    "BT (block-tridiagonal ADI solver, class D 408^3, 11 GB): sweeps over the grid's arrays alternating a pass in page order (the x and y directions: a row of a plane is contiguous) and a pass across the planes (z: one row of each plane, then the next row): swap's Adi pattern with the row and plane of a 5-double array from the scaled grid",
    COMMON_MODELS,
];
static SP_MODELS: &[&str] = &[
    "SP (scalar-pentadiagonal ADI solver, class D 408^3, 12 GB): the same alternating-direction sweeps as BT (Adi pattern from the scaled grid), with more CPU per point than memory",
    COMMON_MODELS,
];
static ADI_SIMPLIFIES: &[&str] = &[
    "ADI's three directions per time step become one sweep in page order and one across the planes, alternating; the several arrays a sweep reads are one array of the footprint's size; stores are a fixed fraction (0.4) of the page visits",
    COMMON_SIMPLIFIES,
];
static LU_MODELS: &[&str] = &[
    "LU (SSOR, class D 408^3, 9 GB): each iteration's lower-triangular sweep goes through the grid from the first corner, the upper one back from the far corner: swap's Zigzag pattern (even passes forward, odd passes backward), so a sweep turning back finds the pages it touched last still in DRAM",
    COMMON_MODELS,
];
static LU_SIMPLIFIES: &[&str] = &[
    "the hyperplane (wavefront) order within a sweep is page order; the right-hand-side computation between the sweeps is not a pass of its own; stores are 0.4 of the visits",
    COMMON_SIMPLIFIES,
];
static CG_MODELS: &[&str] = &[
    "CG (conjugate gradient, class D n = 1.5 M, 18 GB): sparse matrix-vector products stream the matrix in order (read only) while the vectors (0.33 % of the footprint) are gathered and written at random: swap's Stream pattern, one matrix page and one vector page alternating",
    COMMON_MODELS,
];
static CG_SIMPLIFIES: &[&str] = &[
    "the 341 gathers a matrix page makes are one vector-page visit (the vectors stay resident either way); the dot products and vector updates between products are not passes of their own",
    COMMON_SIMPLIFIES,
];
static IS_MODELS: &[&str] = &[
    "IS (integer sort, class D 2^31 keys, 35 GB): the keys are read in order and each is stored at its bucket's next place in the other half of the footprint (rank's bucket scatter, NPB 3.3 is.c: 1,024 buckets, each thread filling its own range of every bucket in order): swap's Scatter pattern, half the visits streamed reads, half stores to the next page of a bucket chosen at random, with the buckets scaled with the DRAM (1,024 x DRAM / 8 GB: 8 at the default 64 MiB)",
    COMMON_MODELS,
];
static IS_SIMPLIFIES: &[&str] = &[
    "a scatter visit fills a bucket's page at once (the 1,024 keys a page holds arrive over time, while the page stays resident); the buckets are equal (class D's keys are near-Gaussian, so the middle buckets are larger); the counting pass over each bucket (key_buff1's 512 KB window, cache-resident) and the key generation are part of the CPU time",
    COMMON_SIMPLIFIES,
];
static MG_MODELS: &[&str] = &[
    "MG (multigrid V-cycles, class D 1024^3, 28 GB): the finest grid's residual, smoother and interpolation sweep its arrays in order: swap's Sequential pattern, a third of the visits storing",
    COMMON_MODELS,
];
static MG_SIMPLIFIES: &[&str] = &[
    "the coarser grids (1/7 of the work, resident) are left out; each sweep is one pass over the footprint",
    COMMON_SIMPLIFIES,
];
static UA_MODELS: &[&str] = &[
    "UA (unstructured adaptive mesh, class D, 8 GB): elements are visited in mesh order (a stream, half of its visits storing) and 30 % of the visits gather a neighbour anywhere in the mesh (read): swap's Stream pattern over the whole part",
    COMMON_MODELS,
];
static UA_SIMPLIFIES: &[&str] = &[
    "the mesh's adaptation (refinement and coarsening moving elements) is not modelled; neighbours are uniform over the part rather than near in the mesh's numbering",
    COMMON_SIMPLIFIES,
];
static DGEMM_MODELS: &[&str] = &[
    "DGEMM (C = A B, 30,000 x 30,000 doubles, 21 GB): a blocked product reuses A's tiles (a third of the pages, 90 % of the visits, read) while B's panels and C's blocks stream by (half of the streamed visits storing, C's): swap's Stream pattern",
    COMMON_MODELS,
];
static DGEMM_SIMPLIFIES: &[&str] = &[
    "the blocking's exact order (which panel of B meets which tile of A) is a uniform choice within A; packing copies are not modelled",
    COMMON_SIMPLIFIES,
];

npb!(
    NPB_BT,
    "npb-bt",
    "NPB BT class D (ADI sweeps, 11 GB) paging with 8 GB of DRAM",
    BT_MODELS,
    ADI_SIMPLIFIES,
    "cpu_ns (CPU per page visit) is CALIBRATED against the Moneta study's Table V, BT on Moneta (moneta-balance as the swap device): 2,785 MIPS: 13,917 ns (storlab apps calibrate npb-bt --device moneta-balance --param cpu_ns --target 2.785e9 --lo 10 --hi 1e7); the other devices' figures are predictions"
);
npb!(
    NPB_CG,
    "npb-cg",
    "NPB CG class D (matrix streamed, vectors gathered, 18 GB) paging with 8 GB of DRAM",
    CG_MODELS,
    CG_SIMPLIFIES,
    "no Table V figure: cpu_ns is derived (341 nonzeros a matrix page x 7.5 instructions, measured on the real CG with scripts/npb-rates, over two visits, at IPC 0.6 and 2.26 GHz: 943 ns)"
);
npb!(
    NPB_IS,
    "npb-is",
    "NPB IS class D (keys streamed, scattered into buckets, 35 GB) paging with 8 GB of DRAM",
    IS_MODELS,
    IS_SIMPLIFIES,
    "cpu_ns (CPU per page visit) is CALIBRATED against the Moneta study's Table V, IS on Moneta (moneta-balance): 351 MIPS: 1,969 ns (storlab apps calibrate npb-is --device moneta-balance --param cpu_ns --target 3.51e8 --lo 10 --hi 1e7); the other devices' figures are predictions"
);
npb!(
    NPB_LU,
    "npb-lu",
    "NPB LU class D (SSOR sweeps forward and back, 9 GB) paging with 8 GB of DRAM",
    LU_MODELS,
    LU_SIMPLIFIES,
    "cpu_ns (CPU per page visit) is CALIBRATED against the Moneta study's Table V, LU on Moneta (moneta-balance): 4,298 MIPS: 18,266 ns (storlab apps calibrate npb-lu --device moneta-balance --param cpu_ns --target 4.298e9 --lo 10 --hi 1e7); the other devices' figures are predictions"
);
npb!(
    NPB_MG,
    "npb-mg",
    "NPB MG class D (multigrid sweeps, 28 GB) paging with 8 GB of DRAM",
    MG_MODELS,
    MG_SIMPLIFIES,
    "no Table V figure: cpu_ns is an ESTIMATE (512 points a page x 40 instructions of the 27-point stencils, at IPC 0.6 and 2.26 GHz: 15.1 us)"
);
npb!(
    NPB_SP,
    "npb-sp",
    "NPB SP class D (ADI sweeps, 12 GB) paging with 8 GB of DRAM",
    SP_MODELS,
    ADI_SIMPLIFIES,
    "cpu_ns (CPU per page visit) is CALIBRATED against the Moneta study's Table V, SP on Moneta (moneta-balance): 704 MIPS: 3,587 ns (storlab apps calibrate npb-sp --device moneta-balance --param cpu_ns --target 7.04e8 --lo 10 --hi 1e7); the other devices' figures are predictions"
);
npb!(
    NPB_UA,
    "npb-ua",
    "NPB UA class D (irregular mesh with locality, 8 GB) paging with 8 GB of DRAM",
    UA_MODELS,
    UA_SIMPLIFIES,
    "cpu_ns (CPU per page visit) is CALIBRATED against the Moneta study's Table V, UA on Moneta (moneta-balance): 3,992 MIPS: 13,009 ns (storlab apps calibrate npb-ua --device moneta-balance --param cpu_ns --target 3.992e9 --lo 10 --hi 1e7); the other devices' figures are predictions"
);
npb!(
    DGEMM,
    "dgemm",
    "DGEMM 30,000 x 30,000 (blocked, 21 GB) paging with 8 GB of DRAM",
    DGEMM_MODELS,
    DGEMM_SIMPLIFIES,
    "no Table V figure: cpu_ns is an ESTIMATE (a page of an A tile against a 256-column B panel: 262,144 flops, two per SSE2 instruction, at IPC 0.6 and 2.26 GHz: 96.7 us)"
);

static THRASH: AppInfo = AppInfo {
    name: "thrash",
    summary: "thrash: 16 threads update random entries of their own parts of an array (60 GB) with 8 GB of DRAM",
    unit: "updates/s",
    models: &[
        "thrash (docs/spec/hybrid.md): 16 threads touch every page of their own parts of an array of integers, then each makes random updates within its part (swap's Uniform pattern, every access a store); the metric is updates per second after the touch, also relative to enough DRAM",
        COMMON_MODELS,
    ],
    simplifies: &[
        "an update is one page visit with its CPU (the random index and the TLB miss's walk, 100 ns); the array is 60 GB / 128 by default (footprint= sets it: the study's 4-60 GB)",
        COMMON_SIMPLIFIES,
    ],
    calibration: "no calibration: the CPU per update is the paging study's ESTIMATE (100 ns)",
    params: PARAMS,
    build: |p| build(p),
};

/// Build the program named by `p.app()`.
fn build(p: &Params) -> Result<AppKind, AppError> {
    Ok(AppKind::Memory(Box::new(memory_app(p)?)))
}

/// The access stream and DRAM of the program `p.app()` with its
/// parameters.
pub fn memory_app(p: &Params) -> Result<MemoryApp, AppError> {
    let prog = program(p.app());
    let threads = p.threads(THREADS);
    let dram = p.scaled(p.u64("dram", MIN_DRAM, 1 << 44)?, MIN_DRAM);
    let footprint = match p.opt_u64("footprint", PAGE, 1 << 46)? {
        Some(f) => p.scaled(f, PAGE),
        // the class-D footprint's ratio to the studies' DRAM
        None => (prog.footprint as f64 / STUDY_DRAM as f64 * dram as f64) as u64,
    };
    let pages_per_thread = footprint / PAGE / threads as u64;
    if pages_per_thread == 0 {
        return Err(p.bad(
            "footprint",
            &format!("gives no page to each of {threads} threads"),
        ));
    }
    let cpu_ns = match p.str("cpu_ns") {
        "" => prog.cpu_ns,
        _ => p.f64("cpu_ns")?,
    };
    if !(0.0..=1e9).contains(&cpu_ns) {
        return Err(p.bad("cpu_ns", "must be from 0 to 1,000,000,000"));
    }
    let passes = match p.str("passes") {
        "" => prog.passes,
        _ => p.f64("passes")?,
    };
    if !(passes > 0.0 && passes <= 1000.0) {
        return Err(p.bad("passes", "must be above 0 and at most 1000"));
    }
    let pattern = match prog.shape {
        Shape::Fixed(pat) => pat,
        Shape::Buckets { random, region } => Pattern::Scatter {
            random,
            region,
            fronts: (IS_BUCKETS * dram as f64 / STUDY_DRAM as f64)
                .round()
                .max(1.0) as u32,
        },
        Shape::Adi => {
            // the class-D grid scaled with the footprint (edge by the cube
            // root), a row and a plane of one 5-double array
            let ratio = footprint as f64 / prog.footprint as f64;
            let edge = (GRID_D * ratio.cbrt()).max(2.0);
            let run = ((edge * POINT_BYTES / PAGE as f64).round() as u64).max(1);
            Pattern::Adi {
                run,
                stride: run * edge.round() as u64,
            }
        }
    };
    Ok(MemoryApp {
        workload: MemWorkload {
            threads,
            pages_per_thread,
            accesses: ((passes * pages_per_thread as f64).round() as u64).max(1),
            pattern,
            write_fraction: prog.write_fraction,
            // measured on the Moneta study's host, run on the HASTE
            // study's: the same cycles at its clock
            cpu_ns: crate::host::HASTE
                .carry_ns(cpu_ns, &crate::host::MONETA)
                .round() as u64,
            bytes_per_access: prog.bytes,
            seed: 1,
        },
        dram_bytes: dram,
        instructions_per_access: prog.per_access.unwrap_or(cpu_ns * GHZ * IPC),
    })
}

/// A paging program's run: through the swap path to the device, and with
/// enough DRAM.
#[derive(Clone, Debug)]
pub struct PagingRun {
    /// The run paging to the device.
    pub paged: MemReport,
    /// The same stream with enough DRAM (nothing pages).
    pub enough: MemReport,
    /// The metric (instructions or updates per second) paging.
    pub metric: f64,
    /// The metric with enough DRAM.
    pub metric_enough: f64,
    /// `metric / metric_enough`.
    pub relative: f64,
    /// The swap area, bytes.
    pub swap_bytes: u64,
}

/// The swap system preset the programs run on by default.
pub const SWAP_PRESET: &str = "swap-linux";

/// The swap system `base` (a preset with a `[swap]` table, usually
/// [`SWAP_PRESET`]) with `dram` bytes of DRAM and a swap area of
/// `swap_bytes`; `set` are more overrides of it (after those).
pub fn swap_system(
    store: &PresetStore,
    base: &str,
    dram: u64,
    swap_bytes: u64,
    set: &[String],
) -> Result<SystemConfig, SwapError> {
    let mut o = vec![
        format!("device.capacity_bytes={dram}"),
        format!("swap.swap_bytes={swap_bytes}"),
    ];
    o.extend(set.iter().cloned());
    Ok(SystemConfig::load(store, base, &o)?.1)
}

/// The swap area for `app` on a device of `capacity` bytes: 8x DRAM
/// (HASTE's 64 GB over 8 GB), at least the footprint and DRAM, at most
/// the device.
pub fn swap_bytes(app: &MemoryApp, capacity: u64) -> u64 {
    let w = &app.workload;
    let footprint = w.threads as u64 * w.pages_per_thread * PAGE;
    (8 * app.dram_bytes)
        .max(footprint + app.dram_bytes)
        .min(capacity / PAGE * PAGE)
}

/// Run `app` paging to the swap device `device` (a loaded preset) and
/// with enough DRAM, on the swap system `base` ([`SWAP_PRESET`]); `seed`
/// seeds the access stream; `set` are overrides of the swap system
/// (`swap.page_cluster=0`).
pub fn run(
    store: &PresetStore,
    base: &str,
    app: &MemoryApp,
    device: &SystemConfig,
    set: &[String],
    seed: u64,
) -> Result<PagingRun, SwapError> {
    let (paged, swap) = run_paged(store, base, app, device, set, seed)?;
    let enough = run_enough(store, base, app, device, set, seed)?;
    let ipa = app.instructions_per_access;
    let metric = paged.accesses_per_s * ipa;
    let metric_enough = enough.accesses_per_s * ipa;
    Ok(PagingRun {
        relative: metric / metric_enough,
        paged,
        enough,
        metric,
        metric_enough,
        swap_bytes: swap,
    })
}

/// The swap device `device` as a run with `dram` bytes of DRAM sees it:
/// a run scaled down from the studies' DRAM ([`STUDY_DRAM`] / `dram`, the
/// default 1/[`SCALE`]) scales the swap area with it (8x DRAM), so a
/// cache inside the device scales by the same ratio, or it would hold a
/// far larger part of the swap area than in the study (the disk RAID's
/// 256 MB controller cache and its drives' 32 MB buffers were well under
/// 1 % of HASTE's 64 GB; unscaled they would hold the whole scaled
/// area). The rule: a RAID's controller cache and read-ahead, and every
/// disk's cache and read-ahead (a disk device's own, or a RAID's disk members', appended
/// to the preset's `raid.member_set`), divided by the DRAM's ratio, and
/// the DRAM a device's driver keeps for itself (`host.driver_memory_bytes`,
/// the ioDrive's 800 MB) by the same ratio, as it is part of that DRAM.
/// Other devices are as given; a run at the studies' DRAM or more is
/// unchanged. Whoever runs a paging program (the lab, `storlab sim
/// --app`, Python) gets this, so they agree.
pub fn scaled_device(
    store: &PresetStore,
    device: &SystemConfig,
    dram: u64,
) -> Result<SystemConfig, SwapError> {
    let mut d = device.clone();
    if dram >= STUDY_DRAM {
        return Ok(d);
    }
    let ratio = STUDY_DRAM as f64 / dram as f64;
    let scale = |b: u64| ((b as f64 / ratio).round() as u64).max(1);
    // the driver's own DRAM shrinks with the DRAM it is part of
    if d.host.driver_memory_bytes > 0 {
        d.host.driver_memory_bytes = scale(d.host.driver_memory_bytes);
    }
    if let Some(disk) = d.disk.as_mut() {
        disk.cache_bytes = scale(disk.cache_bytes);
        disk.read_ahead_bytes = scale(disk.read_ahead_bytes);
    }
    if let Some(r) = d.raid.as_mut() {
        if let Some(c) = r.controller.as_mut() {
            c.cache_bytes = scale(c.cache_bytes).max(c.line_bytes);
            if c.read_ahead_bytes > 0 {
                c.read_ahead_bytes = scale(c.read_ahead_bytes).min(c.cache_bytes / 2);
            }
        }
        if let Some(first) = r.members.first() {
            let (_, m) = SystemConfig::load_set_by(store, first, &r.member_set, "raid.member_set")?;
            if let Some(md) = m.disk {
                r.member_set
                    .push(format!("disk.cache_bytes={}", scale(md.cache_bytes)));
                r.member_set.push(format!(
                    "disk.read_ahead_bytes={}",
                    scale(md.read_ahead_bytes)
                ));
            }
        }
    }
    Ok(d)
}

/// `app` paging to `device` alone (as [`run`]), with the swap area's
/// size; the device's caches scaled with the DRAM ([`scaled_device`]).
pub fn run_paged(
    store: &PresetStore,
    base: &str,
    app: &MemoryApp,
    device: &SystemConfig,
    set: &[String],
    seed: u64,
) -> Result<(MemReport, u64), SwapError> {
    let mut w = app.workload.clone();
    w.seed = seed;
    let device = scaled_device(store, device, app.dram_bytes)?;
    let capacity = device.build_device_in(store)?.capacity();
    let swap = swap_bytes(app, capacity);
    let sys = swap_system(store, base, app.dram_bytes, swap, set)?;
    Ok((swap::run_with_device(&sys, store, &device, &w)?, swap))
}

/// `app` with enough DRAM: the footprint and the watermarks twice over
/// (nothing pages; the swap device is never used).
pub fn run_enough(
    store: &PresetStore,
    base: &str,
    app: &MemoryApp,
    device: &SystemConfig,
    set: &[String],
    seed: u64,
) -> Result<MemReport, SwapError> {
    let mut w = app.workload.clone();
    w.seed = seed;
    let footprint = w.threads as u64 * w.pages_per_thread * PAGE;
    // enough for the program and whatever the device's driver keeps
    let sys = swap_system(
        store,
        base,
        2 * footprint + app.dram_bytes + device.host.driver_memory_bytes,
        PAGE * 1024,
        set,
    )?;
    swap::run_with_device(&sys, store, device, &w)
}

/// The job record of a paging run in fio's layout: job `name` (group
/// `group_id`) with the paged run's time and faults and the `app` object.
pub fn job_stats(
    name: &str,
    group_id: u32,
    info: &AppInfo,
    params: &Params,
    app: &MemoryApp,
    r: &PagingRun,
) -> storlab_sim::stats::JobStats {
    let mut j = storlab_sim::stats::JobStats::new(name, group_id);
    j.job_runtime_ns = r.paged.elapsed_ns;
    j.majf = r.paged.major_faults;
    j.minf = r.paged.minor_faults;
    j.options = vec![("app".into(), info.name.into())];
    j.app = Some(app_object(info, params, app, r));
    j
}

/// The job's `app` object for a paging run (the closed-loop apps' layout
/// where it applies: name, metric, unit, parameters; with the paging
/// figures).
pub fn app_object(
    info: &AppInfo,
    params: &Params,
    app: &MemoryApp,
    r: &PagingRun,
) -> serde_json::Value {
    let params: serde_json::Map<String, serde_json::Value> = params
        .values()
        .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
        .collect();
    let w = &app.workload;
    // time by layer, summed over the threads: the computation and its
    // DRAM access per visit, and the rest of the threads' time (faults,
    // reclaim, waits for swap IO) as the swap path's
    let p = &r.paged;
    let total = (w.threads as u64).saturating_mul(p.elapsed_ns) as f64;
    let per_visit = r.enough.elapsed_ns as f64 * w.threads as f64 / r.enough.accesses.max(1) as f64;
    let cpu = (per_visit * p.accesses as f64).min(total);
    let layers: serde_json::Map<String, serde_json::Value> = crate::model::LAYERS
        .iter()
        .map(|&n| {
            let ns = match n {
                "application_cpu" => cpu,
                "swap" => total - cpu,
                _ => 0.0,
            };
            let v = serde_json::json!({
                "ns_per_op": if p.accesses > 0 { ns / p.accesses as f64 } else { 0.0 },
                "share": if total > 0.0 { ns / total } else { 0.0 },
            });
            (n.to_string(), v)
        })
        .collect();
    serde_json::json!({
        "name": info.name,
        "time_by_layer": layers,
        "metric": r.metric,
        "unit": info.unit,
        "metric_enough_dram": r.metric_enough,
        "relative_to_enough_dram": r.relative,
        "elapsed_ns": r.paged.elapsed_ns,
        "instructions_per_access": app.instructions_per_access,
        "dram_bytes": app.dram_bytes,
        "footprint_bytes": w.threads as u64 * w.pages_per_thread * PAGE,
        "swap_bytes": r.swap_bytes,
        "threads": w.threads,
        "accesses_per_thread": w.accesses,
        "cpu_ns_per_access": w.cpu_ns,
        "pattern": format!("{:?}", w.pattern),
        "paged": r.paged,
        "enough_dram": r.enough,
        "parameters": params,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(name: &str, set: &[&str]) -> MemoryApp {
        let info = crate::registry::find(name, "test").expect("listed");
        let pairs: Vec<String> = set.iter().map(|s| s.to_string()).collect();
        let p = Params::parse(info, &pairs, "test").expect("parses");
        memory_app(&p).expect("builds")
    }

    #[test]
    fn defaults_are_the_studies_sizes_over_128() {
        let bt = app("npb-bt", &[]);
        assert_eq!(bt.dram_bytes, STUDY_DRAM / SCALE);
        let fp = bt.workload.pages_per_thread * PAGE * 16;
        assert!((fp as f64 / (11.0 * GIB as f64 / 128.0) - 1.0).abs() < 0.01);
        let half = app("npb-bt", &["scale=0.5"]);
        assert_eq!(half.dram_bytes, bt.dram_bytes / 2);
        assert_eq!(
            half.workload.pages_per_thread,
            bt.workload.pages_per_thread / 2
        );
        // the grid's row and plane from the scaled edge (81 points)
        match bt.workload.pattern {
            Pattern::Adi { run, stride } => assert_eq!((run, stride), (1, 81)),
            p => panic!("{p:?}"),
        }
        let ipa = bt.instructions_per_access;
        assert!((ipa - BT_CPU_NS * GHZ * IPC).abs() < 1e-6);
        // a tiny scale keeps 4 MiB of DRAM and the footprint's ratio
        let tiny = app("npb-bt", &["scale=0.01"]);
        assert_eq!(tiny.dram_bytes, MIN_DRAM);
        let fp = tiny.workload.pages_per_thread * PAGE * 16;
        assert!((fp as f64 / (11.0 / 8.0 * MIN_DRAM as f64) - 1.0).abs() < 0.01);
        // IS's 1,024 buckets per thread scale with the DRAM: 8 at 1/128
        let fronts = |a: &MemoryApp| match a.workload.pattern {
            Pattern::Scatter { fronts, .. } => fronts,
            p => panic!("{p:?}"),
        };
        assert_eq!(fronts(&app("npb-is", &[])), 8);
        assert_eq!(fronts(&app("npb-is", &["scale=4"])), 32);
        assert_eq!(fronts(&app("npb-is", &["dram=8g", "scale=1"])), 1024);
        let t = app("thrash", &[]);
        assert_eq!(t.instructions_per_access, 1.0);
        assert_eq!(t.workload.accesses, 3000);
    }

    #[test]
    fn bad_parameters_name_themselves() {
        let info = crate::registry::find("npb-cg", "test").expect("listed");
        for (pair, name) in [
            ("cpu_ns=-1", "cpu_ns"),
            ("passes=0", "passes"),
            ("footprint=4k", "footprint"),
            ("dram=lots", "dram"),
        ] {
            let p = Params::parse(info, &[pair.to_string()], "--app-set").expect("parses");
            let e = memory_app(&p).expect_err("refused").to_string();
            assert!(e.contains(name) && e.contains("--app-set"), "{e}");
        }
    }
}
