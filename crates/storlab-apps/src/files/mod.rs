//! File workloads of the HASTE and Moneta studies (docs/spec/workloads.md):
//! Postmark (an email server's small-file traffic, [`postmark`]), a Linux kernel build
//! (compute bound) and applying the Linux patches 2.6.0 to 2.6.29.
//!
//! Each is a closed loop of file requests through the file-system layer
//! (page cache, inode lock, allocation, log; creates and unlinks pay the
//! directory's section and their log bytes) with the program's CPU
//! between them, and each reports the seconds the whole run took.
//!
//! Long sequential transfers are issued as requests of up to 128 KiB
//! (buffered: the read-ahead window's largest size, so a read request is
//! what one read-ahead step moves); the program's smaller system calls
//! inside such a piece are not simulated one by one: their entry, exit
//! and file-system costs (the host's own `syscall_*_ns` and `xfs_ns`) are
//! added as CPU (see [`Chunker`]). That keeps a run of many gigabytes to
//! a few hundred thousand simulated requests.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::Layout;
use storlab_model::system::DeviceClass;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{FileIo, MetricKind, Model, PlanCx, SetupCx, Step};

mod chunk;
pub mod postmark;

use chunk::{cpu_param, Chunker, PIECE};
use postmark::POSTMARK;

/// `postmark`, `build` and `patch`.
pub static APPS: &[&AppInfo] = &[&POSTMARK, &BUILD, &PATCH];

/// Files per directory of the Linux source tree (ESTIMATE: a 2.6 tree
/// holds about 25,000 files in about 1,500 directories): creates and
/// unlinks of files in different directories take different locks.
const FILES_PER_DIR: u64 = 17;

/// The pairs an application takes by default on a device of `class`, as
/// its study ran it there (a job's own pairs come after and win).
///
/// Postmark: the Moneta study's rule for Table V, which ran XFS with
/// direct IO "whenever practical and possible ... for Moneta and
/// FusionIO, since it improves performance" and buffered IO on the RAIDs
/// (issue 57 quotes it). Taken by device class: the PCIe devices the host
/// addresses alone (Moneta, `pcie` arrays; the ioDrive, an `ssd`) run
/// direct, every other class (the RAIDs, a disk, RAM disks, NVMM)
/// buffered. `storlab sim --app postmark --device D` and the lab's Table
/// V row run the same.
pub fn device_defaults(app: &str, class: DeviceClass) -> Vec<String> {
    match app {
        "postmark" => {
            let direct = matches!(class, DeviceClass::PcieArray | DeviceClass::Ssd);
            vec![format!("direct={}", u8::from(direct))]
        }
        _ => Vec::new(),
    }
}
// ------------------------------------------------------------------- build

const BUILD_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "tree",
        default: "512m",
        help: "source tree, bytes (docs/spec/workloads.md: 0.5 GB); what the build does not read is laid out beside it",
    },
    ParamDef {
        name: "files",
        default: "25000",
        help: "files in the source tree (ESTIMATE, as patch's: a 2.6 tree holds about 25,000, 17 a directory); the ones the build does not read lie between those it reads, in the directories and inode blocks the first read of a file brings in",
    },
    ParamDef {
        name: "units",
        default: "2500",
        help: "C files compiled (ESTIMATE: a 2.6-era x86 defconfig compiles about 2,500)",
    },
    ParamDef {
        name: "source_bytes",
        default: "24k",
        help: "mean size of a compiled C file, bytes (ESTIMATE: Linux 2.6's .c files average about 24 KB)",
    },
    ParamDef {
        name: "headers",
        default: "4000",
        help: "header files the compiles include from (ESTIMATE: include/ and arch/x86/include hold about 4,000)",
    },
    ParamDef {
        name: "includes",
        default: "150",
        help: "headers one compile reads (ESTIMATE: a kernel .c pulls in 100-300 headers)",
    },
    ParamDef {
        name: "header_bytes",
        default: "8k",
        help: "mean header size, bytes (ESTIMATE)",
    },
    ParamDef {
        name: "object_ratio",
        default: "2",
        help: "object size over source size (ESTIMATE: an object with its symbol table and relocations is about twice its C file)",
    },
    ParamDef {
        name: "cpu_ms",
        default: "",
        help: "compiler CPU per C file, ms (default: the calibrated value)",
    },
    ParamDef {
        name: "transactions",
        default: "",
        help: "compile at most this many C files (a quick, partial build; the common work bound Table V's runs pass to every application); empty: every unit",
    },
    ParamDef {
        name: "link_ms",
        default: "2000",
        help: "CPU of the final link (vmlinux, built-in.o merges), ms (ESTIMATE: ld over ~100 MB of objects at ~50 MB/s)",
    },
];

/// CALIBRATED: compiler CPU per C file, against the Moneta study's Table
/// V (Build on Moneta, `moneta-balance`, XFS: 36.9 s); the one number
/// calibrated for this application (the RAID-Disk, RAID-SSD and FusionIO
/// figures of the same table are predictions). With `make -j16` on the
/// host's 8 cores this is the CPU time of one compile. Command:
/// `storlab apps calibrate build --device moneta-balance --param cpu_ms
/// --target 36.9 --lo 50 --hi 200` (111.137).
/// The cores, not the device, bound the build: the RAID-Disk, RAID-SSD
/// and FusionIO columns come from the cold reads and writeback alone.
const BUILD_CPU_MS: f64 = 111.14;

static BUILD: AppInfo = AppInfo {
    name: "build",
    summary: "Linux kernel build: make -j16 over a 0.5 GB source tree (compute bound)",
    unit: "seconds",
    models: &[
        "make -j16 (the studies' 16 threads) compiles `units` C files: each reads its C file and `includes` headers chosen uniformly from `headers` (through the page cache: the first reads miss, later ones hit), computes (cpu_ms, on the host's cores), creates its object file (namespace work and log) and writes it (buffered)",
        "when every compile is done one thread links: reads every object (cached), computes link_ms and writes vmlinux; the metric is the whole build's time",
        "the page cache starts empty (a build after `make clean` and a cold cache), and so do the inode and directory caches: a file's first read first reads its directory's block and its inode's block (XFS's 8 KiB inode cluster of 32 inodes) unless an earlier file of the same directory or inode block brought them in; the tree's `files` (17 a directory) lie in order, the unread ones between the read ones; objects are written back by the flusher beside the compiles",
    ],
    simplifies: &[
        "make's dependency scan (stat of every prerequisite) and the compiler's temporary files are inside cpu_ms (the scan's cold lookups are the first reads' metadata reads, made when the compile opens the file rather than when make stats it)",
        "the compile order is a work queue, not make's dependency graph: every C file is ready at the start",
        "header popularity is uniform (real builds read a core set of headers from every file); sizes are the means, not a distribution",
    ],
    calibration: "cpu_ms (compiler CPU per C file) is CALIBRATED against the Moneta study's Table V, Build on Moneta (moneta-balance, XFS): 36.9 s gives 111.14 ms (storlab apps calibrate build --device moneta-balance --param cpu_ms --target 36.9); everything else is an ESTIMATE from the tree's shape",
    params: BUILD_PARAMS,
    build: build_build,
};

fn build_build(p: &Params) -> Result<AppKind, AppError> {
    let mut units = p.scaled(p.u64("units", 1, 10_000_000)?, 1);
    // (as large as the other applications take: `storlab bench --app`
    // bounds a run by its time and passes 10^9)
    if let Some(n) = p.opt_u64("transactions", 1, 1 << 40)? {
        units = units.min(n);
    }
    let headers = p.scaled(p.u64("headers", 1, 10_000_000)?, 1);
    let files = p.scaled(p.u64("files", 1, 100_000_000)?, 1);
    let tree = p.scaled(p.u64("tree", 4096, 1 << 44)?, 4096);
    let source = p.u64("source_bytes", 1, 1 << 30)?;
    let header = p.u64("header_bytes", 1, 1 << 30)?;
    let ratio = p.f64("object_ratio")?;
    if !(0.01..=100.0).contains(&ratio) {
        return Err(p.bad("object_ratio", "must be from 0.01 to 100"));
    }
    Ok(AppKind::Closed(Box::new(Build {
        units,
        headers,
        files,
        includes: p.u64("includes", 0, 100_000)?,
        tree,
        source,
        header,
        object: ((source as f64 * ratio).round() as u64).max(1),
        cpu_ns: cpu_param(p, "cpu_ms", BUILD_CPU_MS, 1e6)?,
        link_ns: cpu_param(p, "link_ms", 0.0, 1e6)?,
        threads: p.threads(16),
        sources: Vec::new(),
        header_files: Vec::new(),
        objects: Vec::new(),
        started: 0,
        completed: 0,
        busy: Vec::new(),
        linked: false,
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

struct Build {
    units: u64,
    headers: u64,
    /// Files in the tree, read or not (inodes and directories).
    files: u64,
    includes: u64,
    tree: u64,
    source: u64,
    header: u64,
    object: u64,
    cpu_ns: u64,
    link_ns: u64,
    threads: u32,
    sources: Vec<u32>,
    header_files: Vec<u32>,
    objects: Vec<u32>,
    started: u64,
    completed: u64,
    busy: Vec<bool>,
    linked: bool,
    rng: Pcg64Mcg,
}

impl Model for Build {
    fn op_names(&self) -> &'static [&'static str] {
        &["compile", "link"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Seconds
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0xb0_11d);
        // the tree as it lies on disk: the files read interleaved with
        // the rest (an even share of the unread bytes after each)
        // the tree as it lies on disk: the files read interleaved with
        // the rest (an even share of the unread bytes and files after
        // each), 17 files a directory, in a cold cache: a file's first
        // read brings in its directory's block and its inode's block
        let read = self.units * self.source + self.headers * self.header;
        let rest = self.tree.saturating_sub(read);
        let n = self.units + self.headers;
        let gap = rest / n.max(1);
        let unread = self.files.saturating_sub(n);
        let mut slot = 0u64;
        for k in 0..n {
            let src = (self.sources.len() as u64) < self.units
                && (self.header_files.len() as u64 >= self.headers || k % 2 == 0);
            let dir = slot / FILES_PER_DIR;
            if src {
                self.sources.push(cx.create_tree_file(self.source, dir, 1)?);
            } else {
                self.header_files
                    .push(cx.create_tree_file(self.header, dir, 1)?);
            }
            slot += 1;
            // the unread files after it: their share, spread evenly
            let others = unread * (k + 1) / n - unread * k / n;
            if gap >= 4096 && others > 0 {
                cx.create_tree_file(gap, slot / FILES_PER_DIR, others)?;
            } else if gap >= 4096 {
                cx.create_file(gap, Layout::Allocated)?;
            }
            slot += others;
        }
        self.busy = vec![false; self.threads as usize];
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        let t = t as usize;
        if self.busy[t] {
            self.busy[t] = false;
            self.completed += 1;
        }
        if self.started < self.units {
            let k = self.started as usize;
            self.started += 1;
            self.busy[t] = true;
            cx.push(Step::Io(FileIo::read(self.sources[k], 0, self.source)));
            for _ in 0..self.includes {
                let h = self.header_files[self.rng.gen_range(0..self.header_files.len())];
                cx.push(Step::Io(FileIo::read(h, 0, self.header)));
            }
            cx.push(Step::Cpu(self.cpu_ns));
            let o = cx.create_file(self.object, Layout::Empty)?;
            cx.push(Step::Io(FileIo::create(o, k as u64 / FILES_PER_DIR)));
            for off in (0..self.object).step_by(PIECE as usize) {
                cx.push(Step::Io(FileIo::write(
                    o,
                    off,
                    PIECE.min(self.object - off),
                )));
            }
            self.objects.push(o);
            cx.push(Step::End(0));
            return Ok(true);
        }
        if t != 0 || self.linked {
            return Ok(false);
        }
        if self.completed < self.units {
            // thread 0 waits for the last compiles (make's final rule)
            cx.push(Step::Sleep(200_000));
            return Ok(true);
        }
        self.linked = true;
        for &o in &self.objects {
            cx.push(Step::Io(FileIo::read(o, 0, self.object)));
        }
        cx.push(Step::Cpu(self.link_ns));
        let image = (self.units * self.object / 2).max(4096);
        let v = cx.create_file(image, Layout::Empty)?;
        cx.push(Step::Io(FileIo::create(v, 0)));
        for off in (0..image).step_by(PIECE as usize) {
            cx.push(Step::Io(FileIo::write(v, off, PIECE.min(image - off))));
        }
        cx.push(Step::End(1));
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "units": self.units,
            "cpu_ms_per_unit": self.cpu_ns as f64 / 1e6,
            "make_jobs": self.threads,
        })
    }
}

// ------------------------------------------------------------------- patch

const PATCH_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "patches",
        default: "29",
        help: "patches applied, one release after another (2.6.0 to 2.6.29: 29)",
    },
    ParamDef {
        name: "files",
        default: "25000",
        help: "files in the source tree (ESTIMATE: a 2.6 tree holds about 25,000)",
    },
    ParamDef {
        name: "file_bytes",
        default: "24k",
        help: "mean size of a source file, bytes (ESTIMATE: a 2.6 tree is about 600 MB over 25,000 files)",
    },
    ParamDef {
        name: "touched",
        default: "12000",
        help: "files one patch modifies (ESTIMATE: 17 GB (issue 41) / 29 patches / (read + write) / 24 KB: about 12,000)",
    },
    ParamDef {
        name: "diff_bytes",
        default: "4k",
        help: "uncompressed patch text per modified file, bytes (ESTIMATE: a 2.6 point release's patch is ~50 MB over ~12,000 files)",
    },
    ParamDef {
        name: "compression",
        default: "5",
        help: "patch text over its bzip2 file (ESTIMATE: bzip2 shrinks diffs about 5x)",
    },
    ParamDef {
        name: "cpu_us",
        default: "",
        help: "CPU per modified file, µs (default: the ESTIMATE in calibration)",
    },
];

/// ESTIMATE: CPU per modified file: bunzip2 of its 4 KiB of diff at ~25
/// MB/s (164 µs; bzip2 decompresses at 20-30 MB/s on a 2 GHz core),
/// GNU patch matching and rewriting its 24 KB at ~200 MB/s (120 µs), and
/// ~30 µs of per-file work (hunk parsing, open/stat/rename system calls
/// outside the modelled requests): ~314 µs. No Table V figure.
const PATCH_CPU_US: f64 = 314.0;

static PATCH: AppInfo = AppInfo {
    name: "patch",
    summary: "Linux patch: apply the patches 2.6.0 to 2.6.29 to a source tree",
    unit: "seconds",
    models: &[
        "one thread applies `patches` patches in turn; each: read its bzip2 file (`touched` x diff_bytes / compression bytes, sequentially), then for each of `touched` files chosen uniformly from the tree: read it, compute (bunzip2 of its diff, patch's matching: cpu_us), create the new version (namespace work, log), write it, and unlink the old one (GNU patch writes a new file and renames it over the old)",
        "the new version's size is the old one's (patches add and remove lines alike)",
        "the tree starts on the device with a cold page cache and cold inode and directory caches (a file's first read reads its directory's block and its inode's block first); new files are written back by the flusher; the page cache and dirty limit decide how much waits for the device; each create and unlink is an XFS transaction that relogs its directory's block (17 files a directory) into the log buffers, which a slow device's barriers make the patch wait for (storlab_model's fs layer, `Behaviour::iclogs`)",
    ],
    simplifies: &[
        "files are chosen uniformly (real patches touch some files in every release); 17 files per directory (ESTIMATE: 25,000 files in ~1,500 directories), each directory's creates and unlinks serialised on its lock",
        "bunzip2 runs on the patching thread, not as a pipe's second process on another core",
        "the bzip2 files sit in the tree's space; files are their mean size",
    ],
    calibration: "none (no Table V figure): cpu_us is an ESTIMATE (314 µs per modified file: bunzip2 at 25 MB/s of 4 KiB of diff, patch at 200 MB/s over 24 KB, 30 µs per file)",
    params: PATCH_PARAMS,
    build: build_patch,
};

fn build_patch(p: &Params) -> Result<AppKind, AppError> {
    let files = p.scaled(p.u64("files", 1, 100_000_000)?, 1);
    let touched = p.scaled(p.u64("touched", 0, 100_000_000)?, 1).min(files);
    let compression = p.f64("compression")?;
    if !(1.0..=100.0).contains(&compression) {
        return Err(p.bad("compression", "must be from 1 to 100"));
    }
    if p.threads(1) != 1 {
        return Err(p.bad("threads", "patch runs on one thread"));
    }
    Ok(AppKind::Closed(Box::new(Patch {
        patches: p.u64("patches", 1, 10_000)?,
        files,
        file_bytes: p.u64("file_bytes", 1, 1 << 32)?,
        touched,
        diff_bytes: p.u64("diff_bytes", 1, 1 << 30)?,
        compression,
        cpu_ns: cpu_param(p, "cpu_us", PATCH_CPU_US, 1e3)?,
        tree: Vec::new(),
        patch_no: 0,
        in_patch: 0,
        patch_file: 0,
        chunker: Chunker::default(),
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

struct Patch {
    patches: u64,
    files: u64,
    file_bytes: u64,
    touched: u64,
    diff_bytes: u64,
    compression: f64,
    cpu_ns: u64,
    tree: Vec<u32>,
    patch_no: u64,
    /// Files of the current patch done (0: the patch not yet read).
    in_patch: u64,
    patch_file: u32,
    chunker: Chunker,
    rng: Pcg64Mcg,
}

impl Patch {
    fn patch_bytes(&self) -> u64 {
        ((self.touched * self.diff_bytes) as f64 / self.compression).ceil() as u64
    }
}

impl Model for Patch {
    fn op_names(&self) -> &'static [&'static str] {
        &["read_patch", "modify_file"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Seconds
    }

    fn threads(&self) -> (u32, u32) {
        (1, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x9a7c4);
        self.chunker = Chunker::new(cx.host(), 4096);
        // the bzip2 files first, then the tree
        self.patch_file = cx.create_file(self.patch_bytes() * self.patches, Layout::Allocated)?;
        // the tree, cold: a file's first read brings in its directory's
        // block and its inode's block
        for k in 0..self.files {
            self.tree
                .push(cx.create_tree_file(self.file_bytes, k / FILES_PER_DIR, 1)?);
        }
        // each directory holds its files: what a create or unlink logs
        for dir in 0..self.files.div_ceil(FILES_PER_DIR) {
            cx.dir_entries(dir, FILES_PER_DIR.min(self.files - dir * FILES_PER_DIR));
        }
        Ok(())
    }

    fn next_op(&mut self, _t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if self.patch_no >= self.patches {
            return Ok(false);
        }
        if self.in_patch == 0 {
            let n = self.patch_bytes();
            self.chunker
                .transfer(cx, self.patch_file, self.patch_no * n, n, false, false);
            cx.push(Step::End(0));
            self.in_patch = 1;
            if self.touched == 0 {
                self.patch_no += 1;
                self.in_patch = 0;
            }
            return Ok(true);
        }
        let k = self.rng.gen_range(0..self.tree.len());
        let old = self.tree[k];
        self.chunker
            .transfer(cx, old, 0, self.file_bytes, false, false);
        cx.push(Step::Cpu(self.cpu_ns));
        let new = cx.create_file(self.file_bytes, Layout::Empty)?;
        cx.push(Step::Io(FileIo::create(new, k as u64 / FILES_PER_DIR)));
        self.chunker
            .transfer(cx, new, 0, self.file_bytes, true, false);
        cx.push(Step::Io(FileIo::unlink(old, k as u64 / FILES_PER_DIR)));
        self.tree[k] = new;
        cx.push(Step::End(1));
        self.in_patch += 1;
        if self.in_patch > self.touched {
            self.patch_no += 1;
            self.in_patch = 0;
        }
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "patches": self.patches,
            "files_modified_per_patch": self.touched,
            "tree_files": self.files,
        })
    }
}
