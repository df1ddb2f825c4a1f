//! Filebench's `fileserver`, `webserver` and `varmail` personalities
//! (docs/spec/nvmm.md), as Filebench 1.4's workload files define them
//! (workloads/fileserver.f, webserver.f, varmail.f):
//!
//! - fileserver: 50 threads, 10,000 files (gamma sizes, mean 128 KiB, 80 %
//!   preallocated); a loop: create, write whole file (1 MiB requests),
//!   close, open, append (random size, mean 16 KiB), close, open, read
//!   whole file, close, delete, stat;
//! - webserver: 100 threads, 1,000 files of mean 16 KiB (all
//!   preallocated, read-only) and one log file; a loop: ten times open,
//!   read whole file, close; then an append of mean 16 KiB to the log;
//! - varmail: 16 threads, 1,000 files of mean 16 KiB (80 % preallocated);
//!   a loop: delete, create, append, fsync, close, open, read whole file,
//!   append, fsync, close, open, read whole file, close.
//!
//! Every flowop is an operation of the metric (Filebench's `ops/s`).

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_model::host::fs::Layout;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{FileIo, MetricKind, Model, PlanCx, SetupCx, Step};

/// `fileserver`, `webserver` and `varmail`.
pub static APPS: &[&AppInfo] = &[&FILESERVER, &WEBSERVER, &VARMAIL];

/// ESTIMATE: Filebench's own CPU per flowop (its flowop dispatch and
/// statistics, the VFS path walk of an open or stat hitting the dentry
/// cache, a close): about 5,000 instructions at CPI 1 on a 2.x GHz core,
/// 2 µs. The read and write system calls are costed by the file-system
/// layer. No Table V figure for Filebench: not calibrated.
const FLOWOP_US: f64 = 2.0;

/// Filebench's `cvar-gamma` shape for the file sizes (`gamma:1.5` in the
/// workload files).
const GAMMA_SHAPE: f64 = 1.5;

const PARAMS: &[ParamDef] = &[
        ParamDef {
            name: "files",
            default: "",
            help: "files in the fileset (default: the workload file's nfiles)",
        },
        ParamDef {
            name: "file_bytes",
            default: "",
            help: "mean file size, bytes (default: the workload file's; sizes are gamma distributed, shape 1.5)",
        },
        ParamDef {
            name: "append_bytes",
            default: "16k",
            help: "mean append, bytes (meanappendsize; appendfilerand draws uniformly up to twice it)",
        },
        ParamDef {
            name: "loops",
            default: "",
            help: "loops of the flowop list over all threads (the run ends after them, or at runtime=); default: ten a file of the fileset (fileserver 100,000, webserver and varmail 10,000), times scale: the steady state of Filebench's 60 s runs, where a file's first, cold access is a small share",
        },
        ParamDef {
            name: "cpu_us",
            default: "",
            help: "Filebench's CPU per flowop, µs (default: the ESTIMATE, 2 µs)",
        },
];

const SIMPLIFIES: &[&str] = &[
    "files are spread over directories of meandirwidth entries (fileserver and webserver 20, varmail 1,000,000: one directory) in entry order, each directory's creates and deletes serialised on its lock",
    "the page cache starts empty (Filebench's freshly created fileset may be cached); preallocated files lie on the device",
    "a file has room for twice its size plus 128 KiB; an append beyond that is cut (counted in the report)",
    "a thread that finds no idle file of the kind it needs skips that flowop (Filebench would wait for one)",
];

static FILESERVER: AppInfo = AppInfo {
    name: "fileserver",
    summary: "Filebench fileserver: 50 threads create, write, append, read, delete and stat 10,000 files",
    unit: "operations/s",
    models: &[
        "fileserver.f: 50 threads, 10,000 files of gamma-distributed size (mean 128 KiB), 80 % preallocated",
        "each loop: create a file (namespace work) and write it whole in 1 MiB requests, close; open one and append a random size (uniform up to twice 16 KiB), close; open one and read it whole, close; delete one (unlink); stat one; every flowop counts in ops/s",
        "files in use by one thread are not picked by another (Filebench's fileset entries are busy while open)",
    ],
    simplifies: SIMPLIFIES,
    calibration: "none (no Table V figure): 2 µs of Filebench CPU per flowop is an ESTIMATE; sizes, counts and flowops from fileserver.f",
    params: PARAMS,
    build: |p| build(p, Kind::FileServer),
};

static WEBSERVER: AppInfo = AppInfo {
    name: "webserver",
    summary: "Filebench webserver: 100 threads read 1,000 small files whole and append to a log",
    unit: "operations/s",
    models: &[
        "webserver.f: 100 threads, 1,000 files of gamma-distributed size (mean 16 KiB), all preallocated, read only; one log file",
        "each loop: ten times open a file, read it whole (1 MiB requests), close; then append a random size (uniform up to twice 16 KiB) to the shared log (its writers serialise on the log's inode lock); every flowop counts in ops/s",
    ],
    simplifies: SIMPLIFIES,
    calibration: "none (no Table V figure): 2 µs of Filebench CPU per flowop is an ESTIMATE; sizes, counts and flowops from webserver.f",
    params: PARAMS,
    build: |p| build(p, Kind::WebServer),
};

static VARMAIL: AppInfo = AppInfo {
    name: "varmail",
    summary: "Filebench varmail: 16 threads delete, create-append-fsync, read-append-fsync and read mail files",
    unit: "operations/s",
    models: &[
        "varmail.f: 16 threads, 1,000 files of gamma-distributed size (mean 16 KiB), 80 % preallocated",
        "each loop: delete a file; create one, append (uniform up to twice 16 KiB), fsync, close; open one, read it whole, append, fsync, close; open one, read it whole, close; every flowop counts in ops/s",
        "fsync writes the file's dirty pages back, forces the file system's log and flushes the device (a no-op on tmpfs)",
    ],
    simplifies: SIMPLIFIES,
    calibration: "none (no Table V figure): 2 µs of Filebench CPU per flowop is an ESTIMATE; sizes, counts and flowops from varmail.f",
    params: PARAMS,
    build: |p| build(p, Kind::VarMail),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    FileServer,
    WebServer,
    VarMail,
}

fn build(p: &Params, kind: Kind) -> Result<AppKind, AppError> {
    // (files, mean size, threads, prealloc %, default loops, meandirwidth)
    let (files, mean, threads, prealloc, loops, dirwidth) = match kind {
        Kind::FileServer => (10_000, 128 << 10, 50, 80, 100_000, 20),
        Kind::WebServer => (1_000, 16 << 10, 100, 100, 10_000, 20),
        Kind::VarMail => (1_000, 16 << 10, 16, 80, 10_000, 1_000_000),
    };
    let files = match p.str("files") {
        "" => files,
        _ => p.u64("files", 2, 10_000_000)?,
    };
    let files = p.scaled(files, 2);
    let mean = match p.str("file_bytes") {
        "" => mean,
        _ => p.u64("file_bytes", 1, 1 << 34)?,
    };
    let loops = match p.str("loops") {
        "" => p.scaled(loops, 1),
        _ => p.u64("loops", 1, 1 << 40)?,
    };
    let cpu_us = match p.str("cpu_us") {
        "" => FLOWOP_US,
        _ => p.f64("cpu_us")?,
    };
    if !(0.0..=1e7).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 10,000,000"));
    }
    let threads = p.threads(threads);
    Ok(AppKind::Closed(Box::new(Filebench {
        kind,
        files,
        mean,
        append: p.u64("append_bytes", 1, 1 << 34)?,
        prealloc,
        loops,
        started: 0,
        cpu_ns: (cpu_us * 1000.0).round() as u64,
        threads,
        slots: Vec::new(),
        idle_live: Vec::new(),
        idle_absent: Vec::new(),
        log_file: 0,
        log_size: 0,
        log_room: 0,
        rng: Pcg64Mcg::seed_from_u64(0),
        gamma: Gamma::new(GAMMA_SHAPE, mean as f64 / GAMMA_SHAPE)
            .map_err(|_| p.bad("file_bytes", "must be above 0"))?,
        cut_appends: 0,
        skipped: 0,
        dirwidth,
        held: Vec::new(),
    })))
}

/// A fileset entry: its file (when it exists), size and room.
#[derive(Clone, Copy, Debug)]
struct Slot {
    file: u32,
    size: u64,
    room: u64,
}

struct Filebench {
    kind: Kind,
    files: u64,
    mean: u64,
    append: u64,
    prealloc: u64,
    loops: u64,
    started: u64,
    cpu_ns: u64,
    threads: u32,
    slots: Vec<Slot>,
    /// Existing entries no thread is using.
    idle_live: Vec<u32>,
    /// Entries with no file that no thread is creating.
    idle_absent: Vec<u32>,
    log_file: u32,
    log_size: u64,
    log_room: u64,
    rng: Pcg64Mcg,
    gamma: Gamma<f64>,
    cut_appends: u64,
    skipped: u64,
    /// Files per directory (`meandirwidth`): entry `k` is in directory
    /// `k / dirwidth`.
    dirwidth: u64,
    /// Entries each thread's current loop uses, and whether each exists
    /// at its end: returned to the idle pools when the loop is over (its
    /// requests done), so no other thread deletes a file in use.
    held: Vec<Vec<(u32, bool)>>,
}

// flowop kinds
const CREATE: u16 = 0;
const WRITE: u16 = 1;
const CLOSE: u16 = 2;
const OPEN: u16 = 3;
const APPEND: u16 = 4;
const READ: u16 = 5;
const DELETE: u16 = 6;
const STAT: u16 = 7;
const FSYNC: u16 = 8;

/// Filebench's `iosize` for whole-file reads and writes (1 MiB).
const IOSIZE: u64 = 1 << 20;

impl Filebench {
    fn draw_size(&mut self) -> u64 {
        (self.gamma.sample(&mut self.rng).round() as u64).max(1)
    }

    fn room(size: u64) -> u64 {
        2 * size + (128 << 10)
    }

    fn take(pool: &mut Vec<u32>, rng: &mut Pcg64Mcg) -> Option<u32> {
        if pool.is_empty() {
            return None;
        }
        let k = rng.gen_range(0..pool.len());
        Some(pool.swap_remove(k))
    }

    fn op(&self, cx: &mut PlanCx, kind: u16) {
        cx.push(Step::Cpu(self.cpu_ns));
        cx.push(Step::End(kind));
    }

    fn skip(&mut self, cx: &mut PlanCx) {
        self.skipped += 1;
        cx.push(Step::Cpu(self.cpu_ns));
    }

    /// Whole-file transfer in IOSIZE requests.
    fn whole(cx: &mut PlanCx, file: u32, from: u64, len: u64, write: bool) {
        let mut at = from;
        while at < from + len {
            let n = IOSIZE.min(from + len - at);
            cx.push(Step::Io(if write {
                FileIo::write(file, at, n)
            } else {
                FileIo::read(file, at, n)
            }));
            at += n;
        }
    }

    fn append_to(&mut self, cx: &mut PlanCx, s: u32) {
        let want = self.rng.gen_range(1..=2 * self.append);
        let sl = &mut self.slots[s as usize];
        let n = want.min(sl.room - sl.size);
        if n < want {
            self.cut_appends += 1;
        }
        let (f, at) = (sl.file, sl.size);
        sl.size += n;
        cx.push(Step::Cpu(self.cpu_ns));
        Self::whole(cx, f, at, n, true);
        cx.push(Step::End(APPEND));
    }

    /// open, read whole, (append, fsync,) close an existing file: one no
    /// other thread uses when the loop writes (`exclusive`), any one of a
    /// read-only fileset otherwise.
    fn open_read(&mut self, cx: &mut PlanCx, t: usize, append_sync: bool, exclusive: bool) {
        let s = if exclusive {
            Self::take(&mut self.idle_live, &mut self.rng)
        } else if self.idle_live.is_empty() {
            None
        } else {
            Some(self.idle_live[self.rng.gen_range(0..self.idle_live.len())])
        };
        let Some(s) = s else {
            self.skip(cx);
            return;
        };
        self.op(cx, OPEN);
        let sl = self.slots[s as usize];
        cx.push(Step::Cpu(self.cpu_ns));
        Self::whole(cx, sl.file, 0, sl.size, false);
        cx.push(Step::End(READ));
        if append_sync {
            self.append_to(cx, s);
            cx.push(Step::Cpu(self.cpu_ns));
            cx.push(Step::Io(FileIo::fsync(self.slots[s as usize].file)));
            cx.push(Step::End(FSYNC));
        }
        self.op(cx, CLOSE);
        if exclusive {
            self.held[t].push((s, true));
        }
    }

    fn create(&mut self, cx: &mut PlanCx) -> Result<Option<u32>, AppError> {
        let Some(s) = Self::take(&mut self.idle_absent, &mut self.rng) else {
            self.skip(cx);
            return Ok(None);
        };
        let size = self.draw_size();
        let room = Self::room(size);
        let f = cx.create_file(room, Layout::Empty)?;
        self.slots[s as usize] = Slot {
            file: f,
            size: 0,
            room,
        };
        cx.push(Step::Cpu(self.cpu_ns));
        cx.push(Step::Io(FileIo::create(f, s as u64 / self.dirwidth)));
        cx.push(Step::End(CREATE));
        Ok(Some(s))
    }

    fn delete(&mut self, cx: &mut PlanCx, t: usize) {
        let Some(s) = Self::take(&mut self.idle_live, &mut self.rng) else {
            self.skip(cx);
            return;
        };
        cx.push(Step::Cpu(self.cpu_ns));
        cx.push(Step::Io(FileIo::unlink(
            self.slots[s as usize].file,
            s as u64 / self.dirwidth,
        )));
        cx.push(Step::End(DELETE));
        self.held[t].push((s, false));
    }
}

impl Model for Filebench {
    fn op_names(&self) -> &'static [&'static str] {
        &[
            "create", "write", "close", "open", "append", "read", "delete", "stat", "fsync",
        ]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0xf11e_be4c);
        self.held = vec![Vec::new(); self.threads as usize];
        let live = (self.files * self.prealloc).div_ceil(100);
        for k in 0..self.files {
            if k < live {
                // written when Filebench created the fileset: its blocks
                // allocated, room to grow after them
                let size = self.draw_size();
                let room = Self::room(size);
                let file = cx.create_written(room, size)?;
                self.slots.push(Slot { file, size, room });
                self.idle_live.push(k as u32);
            } else {
                self.slots.push(Slot {
                    file: u32::MAX,
                    size: 0,
                    room: 0,
                });
                self.idle_absent.push(k as u32);
            }
        }
        if self.kind == Kind::WebServer {
            let size = self.draw_size();
            self.log_room = Self::room(size) + self.loops * 2 * self.append;
            self.log_file = cx.create_written(self.log_room, size)?;
            self.log_size = size;
        }
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        let t = t as usize;
        // the thread's last loop is over: its files are free again
        for (s, live) in self.held[t].drain(..) {
            if live {
                self.idle_live.push(s);
            } else {
                self.idle_absent.push(s);
            }
        }
        if self.started >= self.loops {
            return Ok(false);
        }
        self.started += 1;
        match self.kind {
            Kind::FileServer => {
                if let Some(s) = self.create(cx)? {
                    let sl = self.slots[s as usize];
                    let size = self.draw_size().min(sl.room);
                    cx.push(Step::Cpu(self.cpu_ns));
                    Self::whole(cx, sl.file, 0, size, true);
                    cx.push(Step::End(WRITE));
                    self.slots[s as usize].size = size;
                    self.op(cx, CLOSE);
                    self.held[t].push((s, true));
                }
                match Self::take(&mut self.idle_live, &mut self.rng) {
                    Some(s) => {
                        self.op(cx, OPEN);
                        self.append_to(cx, s);
                        self.op(cx, CLOSE);
                        self.held[t].push((s, true));
                    }
                    None => self.skip(cx),
                }
                self.open_read(cx, t, false, true);
                self.delete(cx, t);
                if self.idle_live.is_empty() {
                    self.skip(cx);
                } else {
                    self.op(cx, STAT);
                }
            }
            Kind::WebServer => {
                for _ in 0..10 {
                    self.open_read(cx, t, false, false);
                }
                let want = self.rng.gen_range(1..=2 * self.append);
                let n = want.min(self.log_room - self.log_size);
                cx.push(Step::Cpu(self.cpu_ns));
                Self::whole(cx, self.log_file, self.log_size, n, true);
                self.log_size += n;
                cx.push(Step::End(APPEND));
            }
            Kind::VarMail => {
                self.delete(cx, t);
                if let Some(s) = self.create(cx)? {
                    self.append_to(cx, s);
                    cx.push(Step::Cpu(self.cpu_ns));
                    cx.push(Step::Io(FileIo::fsync(self.slots[s as usize].file)));
                    cx.push(Step::End(FSYNC));
                    self.op(cx, CLOSE);
                    self.held[t].push((s, true));
                }
                self.open_read(cx, t, true, true);
                self.open_read(cx, t, false, true);
            }
        }
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "files": self.files,
            "mean_file_bytes": self.mean,
            "loops": self.started,
            "appends_cut": self.cut_appends,
            "flowops_skipped": self.skipped,
        })
    }
}
