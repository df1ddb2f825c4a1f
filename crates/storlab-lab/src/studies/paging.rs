//! Paging through Linux's swap path (the HASTE study's Fig. 9; docs/spec/hybrid.md,
//! paging): thrash (16 threads, random updates of their own parts of an
//! array after touching every page) on the swap model
//! (`storlab_model::host::swap`, preset `swap-linux`) with each device as the
//! swap device, in updates per second relative to the same run with
//! enough DRAM.
//!
//! Scaled down: the study's 8 GB of DRAM becomes 64 MiB (1/128) and the
//! arrays keep their ratios to it (4-60 GB: 0.5x-7.5x DRAM); the swap
//! area is 8x DRAM (HASTE's 64 GB over 8 GB) on every device. Caches
//! inside a swap device that would hold a large part of the scaled swap
//! area are scaled by the same 1/128 (the disk RAID's 256 MB controller
//! cache and its disks' 32 MB buffers), so a page read back is not served
//! from a cache that in the study held well under 1 % of the swap area.

use rayon::prelude::*;
use storlab_model::config::PresetStore;
use storlab_model::host::swap::{self, MemReport, MemWorkload, PAGE};
use storlab_model::SystemConfig;

use crate::figure::{Figure, Panel, Series, SeriesKind};
use crate::measure::Plan;
use crate::perturb::{self, Perturbation};
use crate::places::HASTE_FIG9;
use crate::report::{at_all, Class, Prepared, Reproduction, Row};

/// DRAM of the scaled runs: 64 MiB (the study's 8 GB / 128).
pub const DRAM_BYTES: u64 = 64 << 20;
/// The scale: the study's DRAM over ours.
pub const SCALE: u64 = (8u64 << 30) / DRAM_BYTES;
/// Array sizes as multiples of DRAM (the study: 4 GB to 60 GB over 8 GB).
pub const RATIOS: [f64; 5] = [0.5, 1.0, 2.0, 4.0, 7.5];
/// Threads of thrash.
pub const THREADS: u32 = 16;
/// Random updates per thread (after the touch); enough to run the
/// resident set over several times at the largest array.
pub const UPDATES: u64 = 3000;
/// thrash's computation per update besides the memory access: the random
/// index (a few tens of instructions) and the TLB miss's page walk (a
/// random entry of an array far beyond the TLB's reach: the walk's last
/// level misses the caches). ESTIMATE: 100 ns on the 2.26 GHz host, two
/// thirds of a DRAM access.
pub const UPDATE_CPU_NS: u64 = 100;

/// The swap devices: label and preset.
pub const DEVICES: [(&str, &str); 8] = [
    ("disk RAID", "raid-disk"),
    ("SSD RAID", "raid-ssd"),
    ("Fusion-io", "fusion-io"),
    ("PCM on DDR", "ddr-pcm"),
    ("STTM on DDR", "ddr-sttm"),
    ("HASTE DRAM", "haste-dram"),
    ("HASTE PCM", "haste-pcm"),
    ("HASTE STTM", "haste-sttm"),
];

/// Overrides of the swap device `dev` (see the module's note on scaling).
pub fn device_set(dev: &str) -> Vec<String> {
    let swap = 8 * DRAM_BYTES;
    // the DRAM a device's driver keeps for itself (the ioDrive's 800 MB)
    // is part of the DRAM, so it scales with it, by the paging programs'
    // rule (a preset that does not load is reported where it is loaded)
    let store = PresetStore::default();
    let driver = SystemConfig::load(&store, dev, &[])
        .ok()
        .and_then(|(_, c)| storlab_apps::paging::scaled_device(&store, &c, DRAM_BYTES).ok())
        .map_or(0, |c| c.host.driver_memory_bytes);
    let mut set = match dev {
        "raid-disk" => vec![
            format!("raid.controller.cache_bytes={}", 268_435_456 / SCALE),
            format!(
                "raid.member_set=[\"disk.cache_bytes={}\", \"disk.read_ahead_bytes={}\"]",
                33_554_432 / SCALE,
                262_144 / SCALE
            ),
        ],
        // the RAM disk is as large as the swap area (the ddr presets' 16 GB
        // is a size, not a timing; the study's arrays reach 60 GB)
        d if d.starts_with("ddr-") => vec![format!("device.capacity_bytes={swap}")],
        _ => Vec::new(),
    };
    if driver > 0 {
        set.push(format!("host.driver_memory_bytes={driver}"));
    }
    set
}

/// The system: `swap-linux` with `dram` bytes of DRAM over `dev`.
pub fn system(dram: u64, dev: &str) -> Result<SystemConfig, String> {
    system_perturbed(dram, dev, None)
}

/// [`system`], with the swap device slower by `perturb` (the
/// sensitivity check's overrides, `crate::sensitivity`) when given.
pub fn system_perturbed(
    dram: u64,
    dev: &str,
    perturb: Option<Perturbation>,
) -> Result<SystemConfig, String> {
    let set = device_set(dev)
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut o = vec![
        format!("device.capacity_bytes={dram}"),
        format!("swap.device=\"{dev}\""),
        format!("swap.device_set=[{set}]"),
        format!("swap.swap_bytes={}", 8 * DRAM_BYTES),
    ];
    if let Some(p) = perturb {
        o.extend(perturb::overrides("swap-linux", &o, p).map_err(|e| format!("{dev}: {e}"))?);
    }
    SystemConfig::load(&PresetStore::default(), "swap-linux", &o)
        .map(|x| x.1)
        .map_err(|e| format!("{dev}: {e}"))
}

/// thrash over an array of `ratio` x DRAM.
pub fn thrash(ratio: f64) -> MemWorkload {
    MemWorkload {
        threads: THREADS,
        pages_per_thread: (ratio * DRAM_BYTES as f64) as u64 / PAGE / THREADS as u64,
        accesses: UPDATES,
        pattern: swap::Pattern::Uniform,
        write_fraction: 1.0,
        cpu_ns: UPDATE_CPU_NS,
        // an update reads and writes back one cache line
        bytes_per_access: storlab_apps::paging::LINE,
        seed: 1,
    }
}

/// Run thrash at `ratio` on `dev` (or on enough DRAM with `None`).
pub fn run(dev: Option<&str>, ratio: f64) -> Result<MemReport, String> {
    run_perturbed(dev, ratio, None)
}

/// [`run`], with the swap device slower by `perturb` when given.
pub fn run_perturbed(
    dev: Option<&str>,
    ratio: f64,
    perturb: Option<Perturbation>,
) -> Result<MemReport, String> {
    let w = thrash(ratio);
    let dram = match dev {
        Some(_) => DRAM_BYTES,
        // enough DRAM: the array and the watermarks twice over
        None => 2 * (w.pages_per_thread * THREADS as u64 * PAGE) + DRAM_BYTES,
    };
    let sys = system_perturbed(dram, dev.unwrap_or("haste-pcm"), perturb)?;
    swap::run(&sys, &PresetStore::default(), &w).map_err(|e| e.to_string())
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    prepare_perturbed(None)
}

/// Prepare the study with every swap device slower by `perturb` when
/// given (the sensitivity check, `crate::sensitivity::prepare`).
pub fn prepare_perturbed(perturb: Option<Perturbation>) -> Prepared {
    let finish = move |_: &crate::measure::Results| {
        let mut jobs: Vec<(Option<usize>, usize)> = Vec::new();
        for r in 0..RATIOS.len() {
            jobs.push((None, r));
            for d in 0..DEVICES.len() {
                jobs.push((Some(d), r));
            }
        }
        let out: Vec<Result<MemReport, String>> = jobs
            .par_iter()
            .map(|&(d, r)| run_perturbed(d.map(|d| DEVICES[d].1), RATIOS[r], perturb))
            .collect();
        let get = |d: Option<usize>, r: usize| {
            let k = jobs.iter().position(|&j| j == (d, r)).expect("planned");
            out[k].as_ref()
        };
        let mut errors = Vec::new();
        let rate = |d: Option<usize>, r: usize, errors: &mut Vec<String>| match get(d, r) {
            Ok(x) => x.accesses_per_s,
            Err(e) => {
                errors.push(e.clone());
                f64::NAN
            }
        };
        // slowdown: DRAM's rate over the device's
        let last = RATIOS.len() - 1;
        let mut slow = vec![vec![f64::NAN; RATIOS.len()]; DEVICES.len()];
        for (d, row) in slow.iter_mut().enumerate() {
            for (r, v) in row.iter_mut().enumerate() {
                *v = rate(None, r, &mut errors) / rate(Some(d), r, &mut errors);
            }
        }
        let big = format!("{}x DRAM", RATIOS[last]);
        let dev = |name: &str| DEVICES.iter().position(|d| d.1 == name).expect("listed");
        // pages per swap read, pages per swap write, mean major fault (µs)
        let st = |name: &str| {
            get(Some(dev(name)), last).map_or((f64::NAN, f64::NAN, f64::NAN), |x| {
                (
                    x.pages_read as f64 / x.swap_reads.max(1) as f64,
                    x.pages_per_write,
                    x.major_fault_ns / 1e3,
                )
            })
        };
        let (dr, dw, df) = st("raid-disk");
        // published as "up to 20,000x" (the largest array's): a point
        let mut rows = vec![Row::within(
            format!("disk RAID: slowdown against DRAM, array {big} (up to)"),
            slow[dev("raid-disk")][last],
            20_000.0,
            0.25,
            "x",
        )
        .miss_because(format!(
            "each fault is one random read of the swap band on 4 disks behind 16 threads, {df:.0} µs, about {:.0} faults a second; 20,000x needs about 2,800, 3x what the same array reads at random in Table III, so most of the study's faults cannot have reached the platters (note [disk-faults]).",
            THREADS as f64 / (df * 1e-6)
        ))];
        let mut notes: Vec<(String, String)> = Vec::new();
        notes.push(("disk-faults".to_string(), format!(
            "each fault is one random read of the swap band ({dr:.1} pages: the 2^3-slot read-ahead) on 4 disks behind 16 threads: {df:.0} µs a fault, \
             about {:.0} faults a second, and swap-out adds {dw:.1}-page writes (the swap area nearly full, freed slots are scattered). \
             20,000x needs about 2,800 faults a second, 3x what the same array reads at random with 16 threads in the Moneta study's own Table III \
             (863 IOPS over 55 GB; the model's array gives 986 there) and some 700 random reads a second per 7200 rpm disk, \
             each a part of a revolution: with thrash's uniform updates no cache holds the faulted pages (the 3ware's 256 MB and the \
             disks' 4 x 32 MB are 0.6 % of the 64 GB swap area; scaled here by 1/{SCALE} with the DRAM), and even with no swap-out at all \
             (write fraction 0) the model stays near 49,000x. So most of the study's faults cannot have reached the platters; \
             what served them is not published",
            THREADS as f64 / (df * 1e-6)
        )));
        for (name, lo, hi) in [
            ("raid-ssd", 1_000.0, 4_000.0),
            ("fusion-io", 1_000.0, 4_000.0),
            ("ddr-pcm", 516.0, 683.0),
            ("ddr-sttm", 516.0, 683.0),
        ] {
            rows.push(Row::between(
                format!("{name}: slowdown against DRAM, array {big}"),
                slow[dev(name)][last],
                lo,
                hi,
                "x",
            ));
        }
        // the largest array at which the HASTE rows are in the study's band
        let mid = RATIOS.len() - 2;
        // read-ahead at the largest array: pages read per major fault, and
        // the share of the read-ahead pages faulted before reclaim took them
        let ahead = |name: &str| {
            get(Some(dev(name)), last).map_or((f64::NAN, f64::NAN), |x| {
                let extra = x.pages_read.saturating_sub(x.major_faults).max(1) as f64;
                (
                    x.pages_read as f64 / x.major_faults.max(1) as f64,
                    x.readahead_hits as f64 / extra * 100.0,
                )
            })
        };
        for name in ["haste-pcm", "haste-sttm"] {
            let (r, _, f) = st(name);
            let (per_fault, used) = ahead(name);
            rows.push(
                Row::between(
                    format!("{name}: slowdown against DRAM, array {big}"),
                    slow[dev(name)][last],
                    516.0,
                    683.0,
                    "x",
                )
                .miss_because(format!(
                    "link-bound by swap read-ahead: a major fault reads {per_fault:.1} pages of a nearly full swap area, at most {:.0} faults/s over HASTE's 2 GB/s link; at {}x DRAM the model gives {:.0}x (note [read-ahead]).",
                    2e9 / (per_fault * 4096.0),
                    RATIOS[mid],
                    slow[dev(name)][mid],
                )),
            );
            if name == "haste-pcm" {
                notes.push(("read-ahead".to_string(), format!(
                    "link-bound by swap read-ahead: a major fault reads {per_fault:.1} pages ({r:.1} per request), the slots in use of its aligned 2^3-slot window \
                     (valid_swaphandles stops at a free slot; at {big} the 8x-DRAM swap area, HASTE's 64 GB, is nearly full), and only {used:.1}% of the read-ahead \
                     pages are faulted before reclaim takes them back; over HASTE's 2 GB/s link that is at most {:.0} faults/s ({f:.0} µs a fault with the queue). \
                     As Linux 2.6.2x does and the model does: read-ahead slots whose pages are still in the swap cache cost no IO (read_swap_cache_async finds \
                     them), and the fault waits for the request holding its page, which the plugged queue has merged with its contiguous neighbours \
                     (lock_page unplugs it), not for the rest of the window; neither lowers the link's traffic. At {}x DRAM the model gives {:.0}x. \
                     The study's 516-683x at 60 GB needs about 5 pages per fault or fewer over this link, i.e. a less full swap area than the spec's 64 GB",
                    2e9 / (per_fault * 4096.0),
                    RATIOS[mid],
                    slow[dev(name)][mid],
                )));
            }
        }
        for name in ["haste-dram", "haste-pcm", "haste-sttm"] {
            let at_mid = rate(Some(dev(name)), mid, &mut errors);
            rows.push(
                Row::within(
                    format!("{name}: updates per second levelling out (array {big})"),
                    rate(Some(dev(name)), last, &mut errors),
                    1e5,
                    0.25,
                    "/s",
                )
                .miss_because(format!(
                    "the same for every medium: the read-ahead traffic of a nearly full swap area fills HASTE's 2 GB/s link (note [read-ahead]); at {}x DRAM, with more free slots, the model levels at {at_mid:.0}/s.",
                    RATIOS[mid]
                )),
            );
        }
        let hp = get(Some(dev("haste-pcm")), last);
        let (fault_us, ra) = hp.map_or((f64::NAN, f64::NAN), |x| {
            (
                x.major_fault_ns / 1e3,
                x.pages_read as f64 / x.swap_reads.max(1) as f64,
            )
        });
        rows.push(Row::holds(
            "ordering of the swap devices (array 7.5x DRAM)",
            "disk RAID slowest; SSD RAID and Fusion-io next; PCM/STTM on DDR or in HASTE fastest",
            format!(
                "slowdowns {}",
                DEVICES
                    .iter()
                    .enumerate()
                    .map(|(d, l)| format!("{} {:.0}x", l.1, slow[d][last]))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            slow[dev("raid-disk")][last]
                > slow[dev("raid-ssd")][last].max(slow[dev("fusion-io")][last])
                && slow[dev("raid-ssd")][last].min(slow[dev("fusion-io")][last])
                    > ["ddr-pcm", "ddr-sttm", "haste-pcm", "haste-sttm"]
                        .iter()
                        .map(|n| slow[dev(n)][last])
                        .fold(0.0, f64::max),
        ));
        if !errors.is_empty() {
            errors.sort();
            errors.dedup();
            panic!("paging: runs failed: {}", errors.join("; "));
        }
        let series = DEVICES
            .iter()
            .enumerate()
            .map(|(d, (label, _))| Series {
                label: label.to_string(),
                kind: SeriesKind::Model,
                points: RATIOS
                    .iter()
                    .zip(&slow[d])
                    .map(|(&r, &s)| (r, 1.0 / s))
                    .collect(),
            })
            .collect();
        Reproduction {
            study: "paging".into(),
            title: "HASTE study, Fig. 9: paging to storage with thrash (SC 2010), through Linux's swap path".into(),
            setting: format!(
                "thrash: {THREADS} threads touch every page of their own parts, then make {UPDATES} random 8-byte updates each; \
                 swap-linux (Linux 2.6 swap path: faults, swap cache, read-ahead of 2^3 slots, kswapd and direct reclaim, TLB shootdowns, \
                 clustered slot allocation) with {} MiB of DRAM (the study's 8 GB / {SCALE}), arrays 0.5-7.5x DRAM, an 8x-DRAM swap area on each device; \
                 relative to the same run with enough DRAM. Model on haste-pcm at 7.5x: a major fault takes {fault_us:.0} µs (entry to mapped, queueing included), {ra:.1} pages per swap read. \
                 The real runtime (`storlab hybrid thrash`, userfaultfd on this host) is not run here: it needs userfaultfd and wall-clock time and \
                 storlab-lab does not link it; crates/storlab-hybrid/README.md measured 18.7 µs per fault from a zero-latency device on this VM \
                 (13-18 µs of it the runtime's own: fault delivery, handler wake-up, copy), against the model kernel's {:.1} µs of fault software \
                 (entry, swap-cache lookup, mapping) for a fault it serves from the swap cache.",
                DRAM_BYTES >> 20,
                system(DRAM_BYTES, "haste-pcm")
                    .ok()
                    .and_then(|s| s.swap)
                    .map_or(f64::NAN, |s| (s.fault_ns + s.swapcache_ns + s.map_ns) as f64 / 1e3),
            ),
            class: Class::Device,
            state_rule: "thrash touches every page of its array once before it is measured; the swap area starts empty; flash devices are written once".into(),
            notes,
            rows: at_all(rows, HASTE_FIG9),
            figures: vec![Figure {
                id: "paging-swap".into(),
                title: "thrash through the swap path: updates per second relative to DRAM".into(),
                x_label: "array size / DRAM".into(),
                y_label: "relative to DRAM".into(),
                x_log: true,
                x_bytes: false,
                y_log: true,
                panels: vec![Panel {
                    title: "swap device".into(),
                    series,
                }],
            }],
        }
    };
    Prepared {
        plan: Plan::new(),
        finish: Box::new(finish),
    }
}
