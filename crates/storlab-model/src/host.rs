//! The host software stack on CPU cores: system call, file system, block
//! layer and IO scheduler, driver (tag, lock, PIO, copies), completion by
//! interrupt and wake-up or by spinning (docs/spec/pcie-arrays.md, "Host" and the
//! IO-stack cost breakdown).
//!
//! Resources: a pool of cores; each issuing thread (a fio job thread); the
//! driver lock (when the driver has one); the single-threaded IO scheduler
//! (when requests go through one). A software segment occupies a core for
//! its duration; a sleeping thread frees its core, a spinning thread keeps
//! it. Resources are always taken in the order thread → scheduler → core →
//! lock, so waiting can never deadlock. Every nanosecond of a request is
//! attributed to one component of its breakdown; a wait is named by the
//! resource waited for (`ThreadWait`, `SchedulerWait`, `CoreWait`,
//! `LockWait`).
//!
//! Context switches: a thread switches out after handing a request to the
//! device only when none of its own work is waiting for it, and a
//! completion costs `wakeup_ns` only when its thread is asleep. A
//! synchronous thread (one request at a time) therefore pays a switch-out
//! and a wake-up per request, as before; an asynchronous engine's one
//! thread (libaio at depth) goes from submission to submission and reaps
//! the completions that are ready without sleeping in between, as
//! `io_submit` and `io_getevents` do. (Charging every request of such a
//! thread a full switch-out and wake-up held one libaio thread to about
//! 19 µs per IO on fusion-io, 52,645 IOPS, with the wait for the thread
//! shown as `lock_wait`.)
//!
//! Instructions: with `ghz` and `cpi` every stage's core time is also a
//! count of instructions (ns x ghz / cpi), and `driver_instructions` (a
//! driver's own work) becomes time the same way; each finished request's
//! core time is summed by operation for the report.
//!
//! Spread: with `wakeup_spread` or `interrupt_spread` above 0, each
//! wake-up and each interrupt handler takes a time drawn afresh, a floor
//! plus an exponential wait ([`Jitter`]) whose mean is the configured
//! `wakeup_ns` / `interrupt_ns`, from a `rand_pcg` generator seeded from
//! `host.seed` (or the run's seed): percentiles mean something and a run
//! is the same for a seed. Both 0 (the default): no draws, fixed costs.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::breakdown::{Breakdown, Component};
use crate::device::{Completion, Cx, DevRequest, Device, Nanos, Op};
use crate::units::Rw;

/// How requests reach the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// Through the Linux IO scheduler, served by one kernel thread that
    /// issues a request and handles its completion before taking the next
    /// (baseline Moneta: "the no-op scheduler was single-threaded").
    SingleQueue,
    /// The thread that entered the kernel issues the request itself.
    Bypass,
}

/// How the issuing thread learns of completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompletionMode {
    /// Sleep; an interrupt handler wakes the thread.
    Interrupt,
    /// Busy-wait on the tag status (requests up to `spin_max_bytes`; larger
    /// ones sleep).
    Spin,
    /// The CPU itself does the device's work (RAM disk on the DDR bus): the
    /// thread stays on its core while the device model runs.
    Cpu,
}

/// File system in the path. Anything but `None` puts the file-system
/// layer (`crate::fs`) between the workload and this host stack; its
/// per-request CPU on the issuing core is `xfs_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileSystem {
    /// Raw block device.
    None,
    /// XFS: extents, per-inode IO lock (shared for direct IO that neither
    /// extends nor is unaligned), allocation transactions, a log.
    Xfs,
    /// ext3: indirect blocks, writes serialised by `i_mutex`, JBD journal.
    Ext3,
    /// ext4: extents, writes serialised by `i_mutex`, JBD2 journal.
    Ext4,
    /// tmpfs: the page cache is the store; no block IO.
    Tmpfs,
    /// PMFS: direct access to persistent memory; no page cache.
    Pmfs,
}

/// Host software stack configuration. Per-direction costs are `{read, write}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// CPU cores.
    pub cores: u32,
    /// System call entry.
    pub syscall_entry_ns: Rw,
    /// System call return.
    pub syscall_exit_ns: Rw,
    /// File system in the path.
    pub file_system: FileSystem,
    /// The file system's CPU per request on the issuing core, ns (measured
    /// for XFS: docs/spec/pcie-arrays.md's "extra when a file system (XFS) is in the
    /// path"; used for every file system in the path).
    pub xfs_ns: Rw,
    /// Block queue and IO scheduler, excluding the scheduler hand-off.
    pub block_queue_ns: Rw,
    /// Request path through the IO scheduler.
    pub scheduler: Scheduler,
    /// Hand-off to the scheduler thread (context switch), single-queue only.
    pub scheduler_handoff_ns: u64,
    /// Driver: take the request, assign a tag.
    pub driver_tag_ns: Rw,
    /// The driver's control structures (tags, DMA buffer pool, command
    /// and status registers) are protected by one lock, held while taking a
    /// tag and issuing, and while reading and clearing the status.
    pub driver_lock: bool,
    /// One 64-bit programmed-IO access to the device.
    pub pio_word_ns: u64,
    /// PIO words to issue a command.
    pub issue_pio_words: u32,
    /// PIO accesses to read and clear the tag status at completion.
    pub completion_pio_words: u32,
    /// Copy into (write) / out of (read) the DMA buffer, per KiB.
    pub copy_ns_per_kib: Rw,
    /// Completion mode.
    pub completion: CompletionMode,
    /// Largest request that spins (larger ones sleep).
    pub spin_max_bytes: u64,
    /// Interrupt handler, excluding its PIO accesses.
    pub interrupt_ns: u64,
    /// Putting the issuing thread to sleep (context switch out): occupies
    /// its core after the issue, off the critical path unless the device
    /// answers sooner.
    pub sleep_ns: u64,
    /// Waking the sleeping thread (context switch back in).
    pub wakeup_ns: u64,
    /// Core clock, GHz (10^9 cycles per second). With `cpi`, turns the
    /// stack's software time into instructions for the report, and
    /// `driver_instructions` into time. Absent: no instruction counts.
    #[serde(default)]
    pub ghz: Option<f64>,
    /// Mean cycles per instruction of the host's IO-stack code (one value
    /// for the whole stack: instructions per stage = ns x `ghz` / `cpi`).
    #[serde(default)]
    pub cpi: Option<f64>,
    /// Instructions the device's own driver runs per request on top of the
    /// stack costs above (md's RAID-0 remapping, the SCSI midlayer and a
    /// RAID controller's driver, a host-side FTL), `{read, write}`: run on
    /// the issuing thread's core before the driver's locked part, charged
    /// to `driver`, taking `instructions x cpi / ghz` ns. Needs `ghz` and
    /// `cpi`.
    #[serde(default)]
    pub driver_instructions: Option<Rw>,
    /// Mean cycles per instruction of a spinning thread's busy-wait loop,
    /// for the instruction count only (the loop's core time is the
    /// device's time either way). A poll loop is a few instructions around
    /// a `PAUSE` (`cpu_relax()`), which stalls the core for some cycles,
    /// so it retires fewer instructions per ns than the stack's code.
    /// Absent: the loop counts at `cpi`. Needs `ghz`.
    #[serde(default)]
    pub spin_cpi: Option<f64>,
    /// Spread of the wake-up (`wakeup_ns`): its coefficient of variation,
    /// dimensionless, 0 to 1. Each wake-up takes `wakeup_ns x (1 -
    /// spread)` (the context switch itself) plus an exponentially
    /// distributed wait for the core of mean `wakeup_ns x spread` (the
    /// woken thread's scheduling latency), so the mean stays `wakeup_ns`
    /// and the standard deviation is `spread x wakeup_ns`. 0 (the
    /// default): every wake-up takes `wakeup_ns`.
    #[serde(default)]
    pub wakeup_spread: f64,
    /// Spread of the interrupt handler (`interrupt_ns`, not its PIO
    /// accesses), the same way as `wakeup_spread`: coefficient of
    /// variation, dimensionless, 0 to 1; 0 (the default): fixed.
    #[serde(default)]
    pub interrupt_spread: f64,
    /// Seed of the host's spread draws. Absent: the run's seed (`storlab
    /// sim --seed`), or 0 when the host is built without one.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Cold path: a request whose thread was off its core for at least
    /// this long (from the request's submission to its wake-up), ns, finds
    /// the IO path's code and data gone from the core's private caches (an
    /// idle core enters a deep C-state that flushes them; other work
    /// evicts them on a busy one) and refetches `cold_lines` lines at
    /// `cold_miss_ns` each, charged to the wake-up. 0 (the default, with
    /// `cold_lines` 0): off.
    #[serde(default)]
    pub cold_after_ns: u64,
    /// Cache lines (64 B, code and data) one request's path through the
    /// stack touches, refetched after a cold sleep (`cold_after_ns`).
    /// Count; 0 (the default): no cold-path cost.
    #[serde(default)]
    pub cold_lines: u64,
    /// Time to refetch one of the `cold_lines`, ns: the latency of the
    /// level of the hierarchy that still holds them (instruction fetch
    /// misses stall the front end one after the other, so they add up).
    #[serde(default)]
    pub cold_miss_ns: u64,
    /// The driver's worker thread: the share (dimensionless, 0 to 1) of
    /// `driver_instructions` that one kernel thread per device runs for
    /// every request, one request at a time, on a core of the pool (a
    /// driver that queues each request to its own worker, as Fusion-io's
    /// VSL does with its `fct-worker` thread, which builds the command
    /// from its host-side FTL and posts it). The submitting thread runs
    /// the rest of `driver_instructions`, queues the request and goes on
    /// (switches out to wait for the completion, or submits its next
    /// request); the request waits for the worker holding no core (the
    /// wait is `worker_wait`) and the worker runs its share on a core of
    /// the pool; the worker posts the
    /// command (`driver_tag_ns`, the issue PIO) itself. One thread serves
    /// all requests, so the device takes at most 1 / (the worker's time
    /// per request) requests per second whatever its media. 0 (the
    /// default): no worker, no cost. Needs `driver_instructions`, the
    /// `bypass` scheduler and no `driver_lock`.
    #[serde(default)]
    pub driver_worker_share: f64,
    /// Largest request the device receives, bytes: a longer read or write
    /// is cut into requests of at most this size, all issued to the device
    /// at once, and completes with the last (Linux's request-queue limit
    /// `max_sectors_kb`: 2.6.2x's default for SCSI and libata disks is
    /// `BLK_DEF_MAX_SECTORS`, 1,024 sectors = 512 KB; a driver may set a
    /// smaller hardware limit). The pieces share the request's one pass
    /// through the stack (the stack's per-request CPU is not paid again
    /// per piece; against a disk's milliseconds it is a few µs). 0 (the
    /// default): no limit, no layer. See [`crate::split`].
    #[serde(default)]
    pub max_request_bytes: u64,
}

impl HostConfig {
    /// Instructions per ns of software (`ghz / cpi`), when both are given.
    pub fn instructions_per_ns(&self) -> Option<f64> {
        Some(self.ghz? / self.cpi?)
    }

    /// The time of `driver_instructions` for `op`, ns (0 when absent).
    pub fn driver_instruction_ns(&self, op: Op) -> u64 {
        match (self.driver_instructions, self.instructions_per_ns()) {
            (Some(d), Some(ipns)) => (d.get(op) as f64 / ipns).round() as u64,
            _ => 0,
        }
    }

    /// The driver's worker thread is in the path (`driver_worker_share`
    /// above 0).
    pub fn driver_worker(&self) -> bool {
        self.driver_worker_share > 0.0
    }

    /// The time of `driver_instructions` for `op` that the driver's worker
    /// thread runs, ns (0 without a worker): `driver_worker_share` of
    /// [`HostConfig::driver_instruction_ns`]. The submitting thread runs the
    /// rest.
    pub fn driver_worker_ns(&self, op: Op) -> u64 {
        (self.driver_instruction_ns(op) as f64 * self.driver_worker_share).round() as u64
    }
}

/// Validate a host configuration.
pub fn validate(cfg: &HostConfig) -> Result<(), crate::config::ConfigError> {
    crate::config::check_range("host.cores", cfg.cores, 1, 4096)?;
    if let Some(g) = cfg.ghz {
        crate::config::check_range("host.ghz", g, 0.01, 100.0)?;
    }
    if let Some(c) = cfg.cpi {
        crate::config::check_range("host.cpi", c, 0.05, 100.0)?;
    }
    if let Some(c) = cfg.spin_cpi {
        crate::config::check_range("host.spin_cpi", c, 0.05, 10_000.0)?;
        if cfg.ghz.is_none() {
            return Err(crate::config::ConfigError::Invalid {
                field: "host.spin_cpi".into(),
                message: "needs host.ghz to turn the busy wait's time into instructions".into(),
            });
        }
    }
    crate::config::check_range("host.wakeup_spread", cfg.wakeup_spread, 0.0, 1.0)?;
    crate::config::check_range("host.interrupt_spread", cfg.interrupt_spread, 0.0, 1.0)?;
    crate::config::check_range("host.cold_lines", cfg.cold_lines, 0, 10_000_000)?;
    crate::config::check_range("host.cold_miss_ns", cfg.cold_miss_ns, 0, 1_000_000)?;
    if cfg.cold_lines > 0 {
        // a cold path needs its threshold: 0 would make every wake-up cold
        crate::config::check_range("host.cold_after_ns", cfg.cold_after_ns, 1, u64::MAX / 4)?;
    }
    if cfg.driver_worker_share.is_nan() {
        return Err(crate::config::ConfigError::Invalid {
            field: "host.driver_worker_share".into(),
            message: "not a number".into(),
        });
    }
    crate::config::check_range(
        "host.driver_worker_share",
        cfg.driver_worker_share,
        0.0,
        1.0,
    )?;
    if cfg.max_request_bytes != 0 {
        crate::config::check_range(
            "host.max_request_bytes",
            cfg.max_request_bytes,
            512,
            1 << 30,
        )?;
    }
    if cfg.driver_worker() {
        if cfg.driver_instructions.is_none() {
            return Err(crate::config::ConfigError::Invalid {
                field: "host.driver_worker_share".into(),
                message: "needs host.driver_instructions (the worker runs a share of them)".into(),
            });
        }
        if cfg.driver_lock {
            return Err(crate::config::ConfigError::Invalid {
                field: "host.driver_worker_share".into(),
                message:
                    "the worker thread serialises the driver itself: host.driver_lock must be false"
                        .into(),
            });
        }
        if cfg.scheduler != Scheduler::Bypass {
            return Err(crate::config::ConfigError::Invalid {
                field: "host.driver_worker_share".into(),
                message: "a driver worker thread needs host.scheduler = \"bypass\" (the driver takes requests from the block layer itself)".into(),
            });
        }
    }
    if let Some(d) = cfg.driver_instructions {
        for (dir, v) in [("read", d.read), ("write", d.write)] {
            crate::config::check_range(
                &format!("host.driver_instructions.{dir}"),
                v,
                0,
                1_000_000_000,
            )?;
        }
        if cfg.instructions_per_ns().is_none() {
            return Err(crate::config::ConfigError::Invalid {
                field: "host.driver_instructions".into(),
                message: "needs host.ghz and host.cpi to turn instructions into time".into(),
            });
        }
    }
    Ok(())
}

/// A request from a host thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostIo {
    /// Caller's id, echoed in [`IoDone`].
    pub id: u64,
    /// Issuing thread (0-based, < the thread count given to [`Host::new`]).
    pub thread: u32,
    /// Operation.
    pub op: Op,
    /// Byte offset.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Force unit access.
    pub fua: bool,
    /// The thread polls for this completion whatever the configured
    /// completion mode (fio's `hipri`: io_uring `IORING_SETUP_IOPOLL`,
    /// `RWF_HIPRI`), as `CompletionMode::Spin` does, whatever the size.
    pub poll: bool,
}

/// A finished host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoDone {
    /// The id given at submission.
    pub id: u64,
    /// Issuing thread.
    pub thread: u32,
    /// Operation.
    pub op: Op,
    /// Bytes.
    pub len: u64,
    /// Submission latency: from submission until the device has the
    /// request.
    pub slat_ns: u64,
    /// Completion latency: from then until the thread has the result.
    pub clat_ns: u64,
    /// When it finished.
    pub at: Nanos,
    /// Where the time went.
    pub breakdown: Breakdown,
}

/// Output of one host call: wake-ups for the driver's event queue and
/// finished requests.
///
/// The device writes its wake-ups straight into `dev.wakeups`, beside the
/// host's own, so a wake-up is copied once on its way to the event queue;
/// `dev.completions` is the host's to drain and is empty between calls.
#[derive(Default, Debug)]
pub struct HostCx {
    /// `dev.wakeups` holds the `(time, token)` wake-ups: pass each token
    /// back to [`Host::on_event`].
    pub dev: Cx,
    /// Finished requests.
    pub done: Vec<IoDone>,
}

const HOST_BIT: u64 = 1 << 63;
/// Marks the end of a switch-out, which runs beside the device stage.
const SLEEP_BIT: u64 = 1 << 61;
/// With `SLEEP_BIT`: the switch-out of a thread that left its request to
/// the driver's worker; the token's low 32 bits are the thread, not a
/// request.
const DETACHED_BIT: u64 = 1 << 60;
const THREAD: u8 = 1;
const SCHED: u8 = 2;
/// The driver's worker thread (`driver_worker_share`): taken before a
/// core, so a request waits for the worker without holding one.
const WORKER: u8 = 4;
const CORE: u8 = 8;
const LOCK: u8 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Thread+core: entry, fs, block queue (+ driver issue when bypassing).
    Issue,
    /// Driver issue under the lock (bypass with a driver lock).
    IssueLocked,
    /// The driver's worker thread: its share of the driver's
    /// instructions, the tag and the issue PIO (`driver_worker_share`).
    Worker,
    /// Scheduler thread: hand-off, tag, copy, PIO.
    SchedIssue,
    /// In the device.
    Device,
    /// Interrupt handler.
    Irq,
    /// Wake-up, copy out, return.
    Wake,
    /// After spinning or CPU work: poll, copy out, return.
    Finish,
}

const STAGES: [Stage; 8] = [
    Stage::Issue,
    Stage::IssueLocked,
    Stage::Worker,
    Stage::SchedIssue,
    Stage::Device,
    Stage::Irq,
    Stage::Wake,
    Stage::Finish,
];
const OPS: [Op; 4] = [Op::Read, Op::Write, Op::Trim, Op::Flush];

/// One software cost of a stage: `fixed` ns plus `per_kib` ns per KiB of
/// the request (rounded up).
#[derive(Clone, Copy, Debug)]
struct Part {
    comp: Component,
    fixed: u64,
    per_kib: u64,
}

/// The part of a stage whose cost can vary from one request to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vary {
    /// None: the stage's cost is the sum of its fixed parts.
    None,
    /// The wake-up: skipped when the thread is already running, drawn
    /// from the host's spread when it has one.
    Wakeup,
    /// The interrupt handler: drawn from the host's spread when it has one.
    Interrupt,
}

/// The software costs of one stage for one operation, worked out once from
/// the configuration (the hot path only adds them up).
#[derive(Clone, Copy, Debug)]
struct StageCost {
    /// The parts whose cost is the same for every request of a size (all
    /// but the wake-up and the interrupt handler).
    parts: [Part; 8],
    n: u8,
    /// Resources the stage needs (THREAD, SCHED, CORE, LOCK bits).
    needs: u8,
    /// The stage's wake-up or interrupt part (at most one per stage), kept
    /// out of `parts`: its cost can vary (a skipped wake-up, the host's
    /// spread), so `segment` adds it on its own.
    vary: Vary,
    /// That part's configured (mean) time, ns.
    vary_ns: u64,
    /// Some part of `parts` costs per KiB.
    per_kib: bool,
}

impl StageCost {
    fn new(c: &HostConfig, stage: Stage, op: Op) -> Self {
        let mut sc = StageCost {
            parts: [Part {
                comp: Component::Syscall,
                fixed: 0,
                per_kib: 0,
            }; 8],
            n: 0,
            needs: 0,
            vary: Vary::None,
            vary_ns: 0,
            per_kib: false,
        };
        let mut push = |comp: Component, fixed: u64, per_kib: u64| {
            if fixed > 0 || per_kib > 0 {
                sc.parts[sc.n as usize] = Part {
                    comp,
                    fixed,
                    per_kib,
                };
                sc.n += 1;
            }
        };
        let data = matches!(op, Op::Read | Op::Write);
        let pio_issue = c.pio_word_ns * c.issue_pio_words as u64;
        let copy_in = if op == Op::Write {
            c.copy_ns_per_kib.write
        } else {
            0
        };
        let copy_out = if op == Op::Read {
            c.copy_ns_per_kib.read
        } else {
            0
        };
        let bypass_unlocked = c.scheduler == Scheduler::Bypass && !c.driver_lock;
        let lock = if c.driver_lock { LOCK } else { 0 };
        // the worker posts the command itself (unless a driver lock's
        // stage does)
        let worker = c.driver_worker();
        let needs = match stage {
            Stage::Issue => {
                push(Component::Syscall, c.syscall_entry_ns.get(op), 0);
                if c.file_system != FileSystem::None && op != Op::Flush {
                    push(Component::FileSystem, c.xfs_ns.get(op), 0);
                }
                push(Component::BlockLayer, c.block_queue_ns.get(op), 0);
                if data {
                    // the device's own driver work (md, SCSI midlayer, a
                    // host-side FTL) in the submitting thread, unlocked
                    // (less the worker's share when it has one)
                    push(
                        Component::Driver,
                        c.driver_instruction_ns(op) - c.driver_worker_ns(op),
                        0,
                    );
                }
                if c.scheduler == Scheduler::Bypass && data {
                    // the copy into the DMA buffer needs no lock
                    push(Component::Copy, 0, copy_in);
                    if bypass_unlocked && !worker {
                        push(Component::Driver, c.driver_tag_ns.get(op), 0);
                        push(Component::Pio, pio_issue, 0);
                    }
                }
                THREAD | CORE
            }
            Stage::IssueLocked | Stage::SchedIssue => {
                if stage == Stage::SchedIssue {
                    push(Component::BlockLayer, c.scheduler_handoff_ns, 0);
                }
                if data {
                    push(Component::Driver, c.driver_tag_ns.get(op), 0);
                    if stage == Stage::SchedIssue {
                        push(Component::Copy, 0, copy_in);
                    }
                    push(Component::Pio, pio_issue, 0);
                }
                if stage == Stage::SchedIssue {
                    SCHED | CORE | lock
                } else {
                    THREAD | CORE | LOCK
                }
            }
            Stage::Worker => {
                if data {
                    push(Component::Driver, c.driver_worker_ns(op), 0);
                    if bypass_unlocked {
                        push(Component::Driver, c.driver_tag_ns.get(op), 0);
                        push(Component::Pio, pio_issue, 0);
                    }
                }
                WORKER | CORE
            }
            Stage::Irq => {
                push(Component::Interrupt, c.interrupt_ns, 0);
                push(
                    Component::Pio,
                    c.pio_word_ns * c.completion_pio_words as u64,
                    0,
                );
                CORE | lock
            }
            Stage::Wake => {
                push(Component::Wakeup, c.wakeup_ns, 0);
                push(Component::Copy, 0, copy_out);
                push(Component::Syscall, c.syscall_exit_ns.get(op), 0);
                THREAD | CORE
            }
            Stage::Finish => {
                if c.completion != CompletionMode::Cpu {
                    push(
                        Component::Pio,
                        c.pio_word_ns * c.completion_pio_words as u64,
                        0,
                    );
                }
                push(Component::Copy, 0, copy_out);
                push(Component::Syscall, c.syscall_exit_ns.get(op), 0);
                THREAD | CORE
            }
            // the device stage needs no resources and is never advanced
            Stage::Device => 0,
        };
        sc.needs = needs;
        // take the wake-up or interrupt part out of the fixed ones
        let mut fixed = 0;
        for k in 0..sc.n as usize {
            let p = sc.parts[k];
            let vary = match p.comp {
                Component::Wakeup => Vary::Wakeup,
                Component::Interrupt => Vary::Interrupt,
                _ => {
                    sc.parts[fixed] = p;
                    fixed += 1;
                    continue;
                }
            };
            debug_assert!(sc.vary == Vary::None && p.per_kib == 0);
            sc.vary = vary;
            sc.vary_ns = p.fixed;
        }
        sc.n = fixed as u8;
        sc.per_kib = sc.parts[..fixed].iter().any(|p| p.per_kib > 0);
        sc
    }
}

/// Bins of the exponential's inverse CDF in [`Jitter`]'s table.
const EXP_BINS: usize = 256;

/// The host's seeded variation of its wake-up and interrupt costs.
///
/// A cost of mean `m` and spread `c` takes `m (1 - c) + m c E`, `E` drawn
/// from the unit exponential: a floor (the work itself: the context
/// switch, the handler's code) plus a wait for the core that is
/// exponential, as the wait of a queue with random arrivals is (the other
/// runnable threads, softirqs and timer ticks ahead of it). Mean `m`,
/// standard deviation `c m`, p99 `m (1 + 3.6 c)`.
///
/// Written by hand because no crate in the workspace samples an
/// exponential (`rand` 0.8 alone has no distributions): by inversion,
/// `E = -ln(1 - u)`, read from a table of the inverse CDF at 256 even
/// steps of `u` with linear interpolation (one logarithm per draw cost
/// the simulator about 10 % of its speed); the last bin, where the
/// inverse CDF goes to infinity, is computed exactly, so the tail is the
/// exponential's. Interpolating the convex inverse CDF raises the mean
/// by about 1/(12 x 256) of the exponential part: 0.03 %.
#[derive(Clone, Debug)]
pub struct Jitter {
    rng: rand_pcg::Pcg32,
    /// `-ln(1 - k / EXP_BINS)` for k in 0..EXP_BINS (the last bin is
    /// computed exactly).
    inv_cdf: Box<[f64; EXP_BINS]>,
    /// Floor and exponential mean of a wake-up, ns.
    wake: (f64, f64),
    /// Floor and exponential mean of an interrupt handler, ns.
    irq: (f64, f64),
}

impl Jitter {
    /// The variation `cfg` asks for, drawn from `seed`; `None` when both
    /// spreads are 0.
    pub fn new(cfg: &HostConfig, seed: u64) -> Option<Self> {
        if cfg.wakeup_spread <= 0.0 && cfg.interrupt_spread <= 0.0 {
            return None;
        }
        let split = |m: u64, c: f64| (m as f64 * (1.0 - c), m as f64 * c);
        let mut inv_cdf = Box::new([0.0; EXP_BINS]);
        for (k, v) in inv_cdf.iter_mut().enumerate() {
            *v = -(1.0 - k as f64 / EXP_BINS as f64).ln();
        }
        Some(Self {
            // a sub-seed of its own, apart from the other generators
            rng: rand_pcg::Pcg32::seed_from_u64(seed ^ 0x686f_7374_5f6a_6974),
            inv_cdf,
            wake: split(cfg.wakeup_ns, cfg.wakeup_spread),
            irq: split(cfg.interrupt_ns, cfg.interrupt_spread),
        })
    }

    /// One draw of the unit exponential.
    #[inline]
    fn exp1(&mut self) -> f64 {
        let r: u32 = self.rng.gen();
        // the top 8 bits pick the bin of u, the low 24 place u in it
        let k = (r >> 24) as usize;
        let f = (r & 0x00ff_ffff) as f64 * (1.0 / 16_777_216.0);
        if k + 1 < EXP_BINS {
            let (a, b) = (self.inv_cdf[k], self.inv_cdf[k + 1]);
            a + (b - a) * f
        } else {
            // u = (255 + f) / 256: -ln(1 - u) = ln 256 - ln(1 - f), finite
            // as 1 - f >= 2^-24
            (EXP_BINS as f64).ln() - (1.0 - f).ln()
        }
    }

    /// One draw of a cost with `(floor, exponential mean)`, ns.
    #[inline]
    fn draw(&mut self, (floor, exp): (f64, f64)) -> u64 {
        // to the nearest ns; adding 0.5 and truncating (the values are not
        // negative) spares a call to `round` on CPUs without `roundsd`
        if exp <= 0.0 {
            return (floor + 0.5) as u64;
        }
        (floor + exp * self.exp1() + 0.5) as u64
    }

    /// One wake-up's time, ns.
    #[inline]
    pub fn wakeup(&mut self) -> u64 {
        self.draw(self.wake)
    }

    /// One interrupt handler's time (without its PIO accesses), ns.
    #[inline]
    pub fn interrupt(&mut self) -> u64 {
        self.draw(self.irq)
    }
}

#[derive(Clone, Copy, Debug)]
struct HIo {
    io: HostIo,
    stage: Stage,
    holds: u8,
    submitted: Nanos,
    issued: Nanos,
    t_mark: Nanos,
    spin: bool,
    /// Device finished at this time (set when the completion arrives).
    dev_done: bool,
    /// Switching out (the Sleep segment runs beside the device stage).
    sleeping: bool,
    /// Core time of this request's software so far (segments on a core
    /// and the switch-out), ns.
    cpu_ns: u64,
    /// The part of `cpu_ns` spent in the busy-wait loop, ns.
    spin_ns: u64,
}

/// An issuing thread, as the host sees it (one record, so the hot path
/// finds all of a thread's state in one place).
#[derive(Clone, Debug, Default)]
struct ThreadState {
    /// Running one of its requests' segments.
    busy: bool,
    /// Asleep (switched out, waiting for a completion) rather than
    /// running: only waking an asleep thread costs `wakeup_ns`.
    asleep: bool,
    /// Its requests waiting for it to be free.
    waiters: VecDeque<u32>,
}

/// The host stack in front of a device.
pub struct Host {
    cfg: HostConfig,
    /// Costs and needs by stage and operation.
    costs: [[StageCost; 4]; 8],
    device: Box<dyn Device>,
    ios: Vec<HIo>,
    /// Each request's breakdown (apart from `ios`, which is copied often).
    bds: Vec<Breakdown>,
    free: Vec<u32>,
    cores_free: u32,
    core_waiters: VecDeque<u32>,
    /// Each issuing thread's state.
    threads: Vec<ThreadState>,
    lock_busy: bool,
    lock_waiters: VecDeque<u32>,
    sched_busy: bool,
    sched_waiters: VecDeque<u32>,
    /// The driver's worker thread is running a request's stage
    /// (`driver_worker_share`), and the requests waiting for it.
    worker_busy: bool,
    worker_waiters: VecDeque<u32>,
    /// Spare completion lists for re-entrant device calls (a completion's
    /// handling can submit another request, whose completions are handled
    /// before the rest of the outer list).
    comp_pool: Vec<Vec<Completion>>,
    core_busy_ns: u64,
    /// Core time of finished requests' software by operation, ns.
    cpu_ns_by_op: [u64; 4],
    /// The busy-wait part of `cpu_ns_by_op`, ns.
    spin_ns_by_op: [u64; 4],
    /// The cold-path refetch part of `cpu_ns_by_op` (`cold_lines`), ns:
    /// stalls, not instructions.
    cold_ns_by_op: [u64; 4],
    /// Finished requests by operation.
    done_by_op: [u64; 4],
    /// Seeded spread of wake-ups and interrupts (`None`: fixed costs).
    jitter: Option<Jitter>,
    /// `cold_lines x cold_miss_ns`: a cold wake-up's refetch, ns (0: off).
    cold_ns: u64,
}

impl Host {
    /// A host with `threads` issuing threads in front of `device`.
    pub fn new(cfg: HostConfig, device: Box<dyn Device>, threads: u32) -> Self {
        let t = threads.max(1) as usize;
        let device = Self::limit_requests(&cfg, device);
        let costs = STAGES.map(|s| OPS.map(|op| StageCost::new(&cfg, s, op)));
        let jitter = Jitter::new(&cfg, cfg.seed.unwrap_or(0));
        Self {
            jitter,
            cold_ns: cfg.cold_lines * cfg.cold_miss_ns,
            cores_free: cfg.cores,
            costs,
            cfg,
            device,
            ios: Vec::new(),
            bds: Vec::new(),
            free: Vec::new(),
            core_waiters: VecDeque::new(),
            threads: vec![ThreadState::default(); t],
            lock_busy: false,
            lock_waiters: VecDeque::new(),
            sched_busy: false,
            sched_waiters: VecDeque::new(),
            worker_busy: false,
            worker_waiters: VecDeque::new(),
            comp_pool: Vec::new(),
            core_busy_ns: 0,
            cpu_ns_by_op: [0; 4],
            spin_ns_by_op: [0; 4],
            cold_ns_by_op: [0; 4],
            done_by_op: [0; 4],
        }
    }

    /// The device as the stack issues to it: behind the request-size
    /// limit (`host.max_request_bytes`) when there is one, else itself (no
    /// layer: nothing on the request path).
    fn limit_requests(cfg: &HostConfig, device: Box<dyn Device>) -> Box<dyn Device> {
        crate::split::SplitRequests::wrap(device, cfg.max_request_bytes)
    }

    /// Mean core time of a finished request's software for `op`, ns: every
    /// software segment of the stack (issue, interrupt, wake-up, return),
    /// the switch-out of a sleeping thread and a spinning thread's busy
    /// wait (its poll loop runs on the core); not the time spent waiting
    /// for a resource. `None` before any
    /// request of `op` finished.
    pub fn cpu_ns_per_io(&self, op: Op) -> Option<f64> {
        let n = self.done_by_op[op as usize];
        (n > 0).then(|| self.cpu_ns_by_op[op as usize] as f64 / n as f64)
    }

    /// Mean instructions per finished request of `op`:
    /// [`Host::cpu_ns_per_io`] x `ghz` / `cpi`, the busy-wait part of it
    /// at `ghz` / `spin_cpi` when that is given, the cold path's refetch
    /// stalls (`host.cold_lines`) not at all. `None` without
    /// `host.ghz` and `host.cpi`, or before any request of `op` finished.
    pub fn instructions_per_io(&self, op: Op) -> Option<f64> {
        let ipns = self.cfg.instructions_per_ns()?;
        // the cold path's refetches stall the core: time, no instructions
        let cpu = self.cpu_ns_per_io(op)?
            - self.cold_ns_by_op[op as usize] as f64 / self.done_by_op[op as usize] as f64;
        Some(match (self.cfg.spin_cpi, self.cfg.ghz) {
            (Some(sc), Some(g)) => {
                let spin =
                    self.spin_ns_by_op[op as usize] as f64 / self.done_by_op[op as usize] as f64;
                (cpu - spin) * ipns + spin * g / sc
            }
            _ => cpu * ipns,
        })
    }

    /// The device behind the host.
    pub fn device(&self) -> &dyn Device {
        self.device.as_ref()
    }

    /// Core-seconds of software so far (for utilisation), in ns.
    pub fn core_busy_ns(&self) -> u64 {
        self.core_busy_ns
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.cfg
    }

    /// Draw the spread of wake-ups and interrupts from `seed` (the run's)
    /// unless `host.seed` names one; call before the first request.
    pub fn seed_spread(&mut self, seed: u64) {
        if self.cfg.seed.is_none() {
            self.jitter = Jitter::new(&self.cfg, seed);
        }
    }

    /// A thread submits a request at `now`. (Always inlined into its few
    /// callers: once per simulated IO.)
    #[inline(always)]
    pub fn submit(&mut self, now: Nanos, io: HostIo, cx: &mut HostCx) {
        let spin = io.poll
            || match self.cfg.completion {
                CompletionMode::Spin => io.len <= self.cfg.spin_max_bytes,
                CompletionMode::Cpu => true,
                CompletionMode::Interrupt => false,
            };
        let h = HIo {
            io,
            stage: Stage::Issue,
            holds: 0,
            submitted: now,
            issued: now,
            t_mark: now,
            spin,
            dev_done: false,
            sleeping: false,
            cpu_ns: 0,
            spin_ns: 0,
        };
        let i = if let Some(i) = self.free.pop() {
            self.ios[i as usize] = h;
            self.bds[i as usize] = Breakdown::default();
            i
        } else {
            self.ios.push(h);
            self.bds.push(Breakdown::default());
            (self.ios.len() - 1) as u32
        };
        self.advance(now, i, cx);
    }

    /// A wake-up is due.
    #[inline]
    pub fn on_event(&mut self, now: Nanos, token: u64, cx: &mut HostCx) {
        if token & HOST_BIT == 0 {
            let n0 = cx.dev.wakeups.len();
            self.device.on_event(now, token, &mut cx.dev);
            debug_assert!(
                cx.dev.wakeups[n0..].iter().all(|&(_, t)| t & HOST_BIT == 0),
                "device tokens must leave the top bit clear"
            );
            self.drain_device(now, cx);
            return;
        }
        if token & SLEEP_BIT != 0 {
            if token & DETACHED_BIT != 0 {
                self.detached_sleep_done(now, (token & 0xffff_ffff) as usize, cx);
                return;
            }
            let i = (token & !(HOST_BIT | SLEEP_BIT)) as u32;
            // the thread is now asleep: it frees its core and itself
            self.ios[i as usize].sleeping = false;
            self.threads[self.ios[i as usize].io.thread as usize].asleep = true;
            self.release(now, i, THREAD | CORE, cx);
            return;
        }
        let i = (token & !HOST_BIT) as u32;
        let h = &mut self.ios[i as usize];
        if h.stage == Stage::Device {
            // the device's completion time has come
            h.dev_done = true;
            if h.spin && h.holds & CORE != 0 {
                // the busy-wait ran on its core
                h.cpu_ns += now - h.issued;
                h.spin_ns = now - h.issued;
            }
            h.stage = if h.spin { Stage::Finish } else { Stage::Irq };
            h.t_mark = now;
            self.advance(now, i, cx);
        } else {
            self.segment_done(now, i, cx);
        }
    }

    /// Handle the completions the device just reported.
    fn drain_device(&mut self, now: Nanos, cx: &mut HostCx) {
        if cx.dev.completions.is_empty() {
            return;
        }
        // handling a completion can re-enter the device through other
        // requests; their completions land in a fresh list and are handled
        // by the nested call, before the rest of this one
        let mut comps = self.comp_pool.pop().unwrap_or_default();
        std::mem::swap(&mut comps, &mut cx.dev.completions);
        // (read in place, not moved out: a completion carries a
        // 152-byte breakdown)
        for c in &comps {
            let i = c.id as u32;
            self.bds[i as usize].merge(&c.breakdown);
            let h = &mut self.ios[i as usize];
            if h.spin && h.holds & (THREAD | CORE) == THREAD | CORE {
                // a spinning thread holds everything its finish needs: the
                // finish segment starts when the device completes, with no
                // event in between
                h.dev_done = true;
                h.cpu_ns += c.at - h.issued;
                h.spin_ns = c.at - h.issued;
                h.stage = Stage::Finish;
                h.t_mark = c.at;
                let dur = self.segment(c.at, i);
                cx.dev.wakeups.push((c.at + dur, HOST_BIT | i as u64));
            } else if c.at == now {
                // completed at this very moment: go on without an event
                h.dev_done = true;
                if h.spin && h.holds & CORE != 0 {
                    h.cpu_ns += now - h.issued;
                    h.spin_ns = now - h.issued;
                }
                h.stage = if h.spin { Stage::Finish } else { Stage::Irq };
                h.t_mark = now;
                self.advance(now, i, cx);
            } else {
                cx.dev.wakeups.push((c.at, HOST_BIT | i as u64));
            }
        }
        comps.clear();
        self.comp_pool.push(comps);
    }

    /// The component a wait for resource `bit` is charged to.
    #[inline]
    fn wait_component(bit: u8) -> Component {
        match bit {
            THREAD => Component::ThreadWait,
            SCHED => Component::SchedulerWait,
            CORE => Component::CoreWait,
            WORKER => Component::WorkerWait,
            _ => Component::LockWait,
        }
    }

    /// Try to take the stage's resources in order (thread → scheduler →
    /// core → lock, which is the order of their bits); park on the first
    /// busy one. Returns true when all are held.
    #[inline]
    fn acquire(&mut self, now: Nanos, i: u32) -> bool {
        let h = &self.ios[i as usize];
        let want = self.costs[h.stage as usize][h.io.op as usize].needs & !h.holds;
        let thread = h.io.thread as usize;
        if want == 0 {
            return true;
        }
        // the resources are distinct, so which are busy is known at once:
        // those wanted below the first busy one are taken (as a loop over
        // them in order would, the wait charged to the first), and the
        // request parks on that one
        let ts = &mut self.threads[thread];
        let busy = (ts.busy as u8 * THREAD)
            | (self.sched_busy as u8 * SCHED)
            | (self.worker_busy as u8 * WORKER)
            | ((self.cores_free == 0) as u8 * CORE)
            | (self.lock_busy as u8 * LOCK);
        let blocked = want & busy;
        let first_blocked = blocked & blocked.wrapping_neg();
        let take = if blocked == 0 {
            want
        } else {
            want & first_blocked.wrapping_sub(1)
        };
        if take != 0 {
            if take & THREAD != 0 {
                ts.busy = true;
            }
            if take & SCHED != 0 {
                self.sched_busy = true;
            }
            if take & WORKER != 0 {
                self.worker_busy = true;
            }
            if take & CORE != 0 {
                self.cores_free -= 1;
            }
            if take & LOCK != 0 {
                self.lock_busy = true;
            }
            let h = &mut self.ios[i as usize];
            let waited = now - h.t_mark;
            if waited > 0 {
                self.bds[i as usize].add(Self::wait_component(take & take.wrapping_neg()), waited);
            }
            h.t_mark = now;
            h.holds |= take;
        }
        if blocked == 0 {
            return true;
        }
        match first_blocked {
            THREAD => self.threads[thread].waiters.push_back(i),
            SCHED => self.sched_waiters.push_back(i),
            WORKER => self.worker_waiters.push_back(i),
            CORE => self.core_waiters.push_back(i),
            _ => self.lock_waiters.push_back(i),
        }
        false
    }

    fn release(&mut self, now: Nanos, i: u32, bits: u8, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        let thread = h.io.thread as usize;
        let held = h.holds & bits;
        if held == 0 {
            return;
        }
        h.holds &= !bits;
        // at most one waiter per released resource: no allocation; the
        // woken are counted, so the loop below runs only over them (most
        // releases wake none or one)
        let mut woken = [0u32; 5];
        let mut n = 0;
        if held & LOCK != 0 {
            self.lock_busy = false;
            if let Some(w) = self.lock_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & CORE != 0 {
            self.cores_free += 1;
            if let Some(w) = self.core_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & SCHED != 0 {
            self.sched_busy = false;
            if let Some(w) = self.sched_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & THREAD != 0 {
            self.threads[thread].busy = false;
            if let Some(w) = self.threads[thread].waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        if held & WORKER != 0 {
            self.worker_busy = false;
            if let Some(w) = self.worker_waiters.pop_front() {
                woken[n] = w;
                n += 1;
            }
        }
        for &w in &woken[..n] {
            self.advance(now, w, cx);
        }
    }

    /// Run the current stage of request `i` if its resources are free.
    fn advance(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        if !self.acquire(now, i) {
            return;
        }
        let dur = self.segment(now, i);
        if dur == 0 {
            // nothing to wait for: no event
            self.segment_done(now, i, cx);
        } else {
            cx.dev.wakeups.push((now + dur, HOST_BIT | i as u64));
        }
    }

    /// Account the current stage's software segment of request `i`, which
    /// holds its resources, starting at `now`; returns its duration.
    /// (Inlined where it is called: a call per segment cost about 5 % of
    /// the null device's instructions per simulated IO.)
    #[inline(always)]
    fn segment(&mut self, now: Nanos, i: u32) -> u64 {
        let h = &mut self.ios[i as usize];
        debug_assert!(
            h.stage != Stage::Device,
            "the device stage is never advanced"
        );
        let sc = &self.costs[h.stage as usize][h.io.op as usize];
        let bd = &mut self.bds[i as usize];
        let t = h.io.thread as usize;
        let mut dur = 0;
        let parts = &sc.parts[..sc.n as usize];
        if sc.per_kib {
            let len = h.io.len;
            for p in parts {
                let ns = p.fixed + (p.per_kib * len).div_ceil(1024);
                bd.add(p.comp, ns);
                dur += ns;
            }
        } else {
            for p in parts {
                bd.add(p.comp, p.fixed);
                dur += p.fixed;
            }
        }
        // the part that varies: one draw from the spread per wake-up or
        // interrupt handler when the host has one, its fixed time otherwise
        let varied = match sc.vary {
            Vary::None => None,
            // a thread that is already running (reaping another completion,
            // submitting) takes this completion without a context switch
            Vary::Wakeup if !self.threads[t].asleep => None,
            Vary::Wakeup => Some((
                Component::Wakeup,
                match &mut self.jitter {
                    Some(j) => j.wakeup(),
                    None => sc.vary_ns,
                } + if self.cold_ns > 0 && now - h.submitted >= self.cfg.cold_after_ns {
                    // off its core long enough for the path's lines to be gone
                    self.cold_ns_by_op[h.io.op as usize] += self.cold_ns;
                    self.cold_ns
                } else {
                    0
                },
            )),
            Vary::Interrupt => Some((
                Component::Interrupt,
                match &mut self.jitter {
                    Some(j) => j.interrupt(),
                    None => sc.vary_ns,
                },
            )),
        };
        if let Some((c, ns)) = varied {
            bd.add(c, ns);
            dur += ns;
        }
        if sc.needs & THREAD != 0 {
            self.threads[t].asleep = false;
        }
        h.t_mark = now + dur;
        if h.holds & CORE != 0 {
            self.core_busy_ns += dur;
            h.cpu_ns += dur;
        }
        dur
    }

    /// The running segment of request `i` ended at `now`.
    fn segment_done(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        let data = matches!(h.io.op, Op::Read | Op::Write);
        match h.stage {
            Stage::Issue => {
                if self.cfg.scheduler == Scheduler::SingleQueue {
                    h.stage = Stage::SchedIssue;
                    let t = h.io.thread as usize;
                    // the thread waits for the scheduler's completion asleep
                    // unless more of its own work is waiting for it
                    if self.threads[t].waiters.is_empty() {
                        self.threads[t].asleep = true;
                    }
                    self.release(now, i, THREAD | CORE, cx);
                    self.advance(now, i, cx);
                } else if data && self.cfg.driver_worker() {
                    // queued for the driver's worker
                    h.stage = Stage::Worker;
                    self.leave_for_worker(now, i, cx);
                    self.advance(now, i, cx);
                } else if self.cfg.driver_lock && data {
                    h.stage = Stage::IssueLocked;
                    self.advance(now, i, cx);
                } else {
                    self.hand_to_device(now, i, cx);
                }
            }
            Stage::Worker => {
                // the worker posts the command and is free for the next
                // request (a polling thread spins on the worker's core)
                self.release(now, i, WORKER, cx);
                self.hand_to_device(now, i, cx);
            }
            Stage::IssueLocked => {
                self.release(now, i, LOCK, cx);
                self.hand_to_device(now, i, cx);
            }
            Stage::SchedIssue => {
                // the scheduler thread keeps serving this request until its
                // completion is handled; it sleeps meanwhile (frees its core)
                self.release(now, i, CORE | LOCK, cx);
                self.hand_to_device(now, i, cx);
            }
            Stage::Irq => {
                h.stage = Stage::Wake;
                self.release(now, i, CORE | LOCK | SCHED, cx);
                self.advance(now, i, cx);
            }
            Stage::Wake | Stage::Finish => {
                let t = h.io.thread as usize;
                let op = h.io.op as usize;
                self.cpu_ns_by_op[op] += h.cpu_ns;
                self.spin_ns_by_op[op] += h.spin_ns;
                self.done_by_op[op] += 1;
                if self.threads[t].waiters.is_empty() {
                    // back to user space: it submits again at once, or
                    // blocks (a synchronous thread, thinktime)
                    self.threads[t].asleep = true;
                }
                self.release(now, i, THREAD | CORE | LOCK | SCHED, cx);
                let h = &self.ios[i as usize];
                let total = now - h.submitted;
                debug_assert_eq!(
                    self.bds[i as usize].total(),
                    total,
                    "breakdown must cover the whole latency"
                );
                let slat = h.issued - h.submitted;
                cx.done.push(IoDone {
                    id: h.io.id,
                    thread: h.io.thread,
                    op: h.io.op,
                    len: h.io.len,
                    slat_ns: slat,
                    clat_ns: total - slat,
                    at: now,
                    breakdown: Breakdown::default(),
                });
                // the breakdown copied once, straight into place (built
                // inside the record above it went through a copy on the
                // stack first)
                let d = cx.done.last_mut().expect("just pushed");
                d.breakdown = self.bds[i as usize];
                self.free.push(i);
            }
            Stage::Device => {}
        }
    }

    /// Request `i`, which holds its thread and a core, has been queued for
    /// the driver's worker. Its thread goes on without it: it switches out
    /// on its core (`sleep_ns`, the core and the thread then free) unless
    /// more of its own work waits for it, as when it hands a request to
    /// the device. A polling thread keeps itself and waits for the worker
    /// without a core (the worker's core is then the one it polls on), so
    /// no request holds a core while it waits for the worker.
    fn leave_for_worker(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        if h.spin {
            self.release(now, i, CORE, cx);
            return;
        }
        let t = h.io.thread as usize;
        let busy = !self.threads[t].waiters.is_empty();
        if !busy && self.cfg.sleep_ns > 0 && h.holds & (THREAD | CORE) == THREAD | CORE {
            // the switch-out keeps the thread and its core for sleep_ns;
            // they are the thread's now, not the request's
            h.holds &= !(THREAD | CORE);
            h.cpu_ns += self.cfg.sleep_ns;
            self.core_busy_ns += self.cfg.sleep_ns;
            cx.dev.wakeups.push((
                now + self.cfg.sleep_ns,
                HOST_BIT | SLEEP_BIT | DETACHED_BIT | t as u64,
            ));
        } else {
            if !busy {
                self.threads[t].asleep = true;
            }
            self.release(now, i, THREAD | CORE, cx);
        }
    }

    /// Thread `t`'s switch-out after leaving a request to the worker ended:
    /// it is asleep, its core and itself are free.
    fn detached_sleep_done(&mut self, now: Nanos, t: usize, cx: &mut HostCx) {
        self.threads[t].asleep = true;
        self.threads[t].busy = false;
        self.cores_free += 1;
        let wc = self.core_waiters.pop_front();
        let wt = self.threads[t].waiters.pop_front();
        for w in [wc, wt].into_iter().flatten() {
            self.advance(now, w, cx);
        }
    }

    fn hand_to_device(&mut self, now: Nanos, i: u32, cx: &mut HostCx) {
        let h = &mut self.ios[i as usize];
        h.stage = Stage::Device;
        h.issued = now;
        h.t_mark = now;
        let spin = h.spin;
        let req = DevRequest {
            id: i as u64,
            op: h.io.op,
            offset: h.io.offset,
            len: h.io.len,
            fua: h.io.fua,
        };
        let t = h.io.thread as usize;
        // more of the thread's own work waits for it (an asynchronous
        // engine's next submission, or a completion to reap): it goes on
        // with that instead of sleeping
        let busy = !self.threads[t].waiters.is_empty();
        let holds_thread = h.holds & (THREAD | CORE) == THREAD | CORE;
        let switch_out = !spin && !busy && self.cfg.sleep_ns > 0 && holds_thread;
        if switch_out {
            // the issuing thread switches out on its core while the device works
            h.sleeping = true;
            h.cpu_ns += self.cfg.sleep_ns;
            self.core_busy_ns += self.cfg.sleep_ns;
            cx.dev
                .wakeups
                .push((now + self.cfg.sleep_ns, HOST_BIT | SLEEP_BIT | i as u64));
        } else if !spin {
            // the issuing thread sleeps (or goes on with its waiting work):
            // it frees its core and itself
            if !busy && holds_thread {
                self.threads[t].asleep = true;
            }
            self.release(now, i, THREAD | CORE, cx);
        }
        self.device.submit(now, req, &mut cx.dev);
        self.drain_device(now, cx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::fixed::FixedLatency;
    use std::collections::BinaryHeap;

    /// The standard stack of the peer presets (docs/spec/pcie-arrays.md table), no
    /// driver lock, interrupts.
    fn cfg() -> HostConfig {
        HostConfig {
            cores: 8,
            syscall_entry_ns: Rw {
                read: 1950,
                write: 1980,
            },
            syscall_exit_ns: Rw {
                read: 1950,
                write: 1980,
            },
            file_system: FileSystem::None,
            xfs_ns: Rw { read: 0, write: 0 },
            block_queue_ns: Rw {
                read: 1740,
                write: 510,
            },
            scheduler: Scheduler::Bypass,
            scheduler_handoff_ns: 0,
            driver_tag_ns: Rw {
                read: 510,
                write: 440,
            },
            driver_lock: false,
            pio_word_ns: 385,
            issue_pio_words: 1,
            completion_pio_words: 2,
            copy_ns_per_kib: Rw { read: 0, write: 0 },
            completion: CompletionMode::Interrupt,
            spin_max_bytes: 0,
            interrupt_ns: 310,
            sleep_ns: 2000,
            wakeup_ns: 4000,
            ghz: None,
            cpi: None,
            driver_instructions: None,
            spin_cpi: None,
            wakeup_spread: 0.0,
            interrupt_spread: 0.0,
            seed: None,
            cold_after_ns: 0,
            cold_lines: 0,
            cold_miss_ns: 0,
            driver_worker_share: 0.0,
            max_request_bytes: 0,
        }
    }

    #[test]
    fn a_long_sleep_finds_the_path_cold() {
        // 1,000 lines at 20 ns: 20 us more per wake-up after a sleep of
        // 1 ms or more, nothing after a shorter one
        let mut c = cfg();
        c.cold_after_ns = 1_000_000;
        c.cold_lines = 1000;
        c.cold_miss_ns = 20;
        let ios: Vec<_> = (0..4).map(|t| (t, 0)).collect();
        for (latency, extra) in [(200_000, 0), (5_000_000, 20_000)] {
            let (done, _) = run(c.clone(), 4, &ios, latency);
            assert!(
                done.iter()
                    .all(|d| d.breakdown.get(Component::Wakeup) == 4000 + extra),
                "{latency} ns device: {:?}",
                done.iter()
                    .map(|d| d.breakdown.get(Component::Wakeup))
                    .collect::<Vec<_>>()
            );
        }
        // the refetch is stall time on the core, not instructions
        c.ghz = Some(2.0);
        c.cpi = Some(1.0);
        let (_, warm) = run(c.clone(), 4, &ios, 200_000);
        let (_, cold) = run(c.clone(), 4, &ios, 5_000_000);
        assert_eq!(
            warm.instructions_per_io(Op::Read),
            cold.instructions_per_io(Op::Read)
        );
        assert!(cold.cpu_ns_per_io(Op::Read) > warm.cpu_ns_per_io(Op::Read));
        // off by default: the same slow device, no extra
        let (done, _) = run(cfg(), 4, &ios, 5_000_000);
        assert!(done
            .iter()
            .all(|d| d.breakdown.get(Component::Wakeup) == 4000));
        // a cold path without its threshold is refused, naming the key
        c.cold_after_ns = 0;
        let e = validate(&c).expect_err("no threshold").to_string();
        assert!(e.contains("host.cold_after_ns"), "{e}");
    }

    /// Run `ios` (thread, submit time) of 4 KB reads on a device of fixed
    /// `latency`; a thread's requests are all submitted at their times
    /// (an asynchronous engine). Returns the finished requests and the host.
    fn run(
        c: HostConfig,
        threads: u32,
        ios: &[(u32, Nanos)],
        latency: Nanos,
    ) -> (Vec<IoDone>, Host) {
        let dev = Box::new(FixedLatency::new(latency, 1 << 30));
        let mut host = Host::new(c, dev, threads);
        let mut cx = HostCx::default();
        let mut q = BinaryHeap::new();
        let mut seq = 0u64;
        let mut subs: Vec<(Nanos, usize)> =
            ios.iter().enumerate().map(|(i, &(_, t))| (t, i)).collect();
        subs.sort();
        let mut done = Vec::new();
        let mut next = 0;
        loop {
            let t_ev = q.peek().map(|&std::cmp::Reverse((t, _, _))| t);
            let t_sub = subs.get(next).map(|&(t, _)| t);
            match (t_sub, t_ev) {
                (Some(ts), te) if te.is_none_or(|te| ts <= te) => {
                    let (_, i) = subs[next];
                    next += 1;
                    let io = HostIo {
                        id: i as u64,
                        thread: ios[i].0,
                        op: Op::Read,
                        offset: 4096 * i as u64,
                        len: 4096,
                        fua: false,
                        poll: false,
                    };
                    host.submit(ts, io, &mut cx);
                }
                (_, Some(_)) => {
                    let std::cmp::Reverse((t, _, tok)) = q.pop().expect("an event");
                    host.on_event(t, tok, &mut cx);
                }
                (None, None) => break,
                _ => unreachable!(),
            }
            for (t, tok) in cx.dev.wakeups.drain(..) {
                seq += 1;
                q.push(std::cmp::Reverse((t, seq, tok)));
            }
            done.append(&mut cx.done);
        }
        assert_eq!(done.len(), ios.len(), "every request finished");
        (done, host)
    }

    fn sum(done: &[IoDone], c: Component) -> u64 {
        done.iter().map(|d| d.breakdown.get(c)).sum()
    }

    #[test]
    fn one_async_thread_reaps_ready_completions_without_a_context_switch_each() {
        // 16 requests from one thread at once, a fast device: completions
        // are ready while the thread is still submitting, so it reaps them
        // all after its last submission without ever sleeping
        let ios: Vec<_> = (0..16).map(|_| (0u32, 0)).collect();
        let (done, _) = run(cfg(), 1, &ios, 1_000);
        let wakeups = sum(&done, Component::Wakeup) / 4000;
        assert_eq!(wakeups, 0, "one thread, 16 requests");
        // a slow device: completions come as far apart as the submissions
        // were (4.6 us), and reaping one takes 1.95 us (no wake-up) or 5.95
        // us (with one): the thread sleeps between every other pair
        let (done, _) = run(cfg(), 1, &ios, 200_000);
        let wakeups = sum(&done, Component::Wakeup) / 4000;
        assert!(
            (1..=8).contains(&wakeups),
            "{wakeups} wake-ups for 16 requests of one thread"
        );
        // the time waiting for the busy thread is named so
        assert!(sum(&done, Component::ThreadWait) > 0);
        assert_eq!(sum(&done, Component::LockWait), 0, "no driver lock");
        assert_eq!(sum(&done, Component::SchedulerWait), 0, "no scheduler");
    }

    #[test]
    fn synchronous_threads_pay_a_wakeup_per_request() {
        // 16 threads with one request each: every one sleeps and is woken
        let ios: Vec<_> = (0..16).map(|t| (t, 0)).collect();
        let (done, _) = run(cfg(), 16, &ios, 200_000);
        assert!(done
            .iter()
            .all(|d| d.breakdown.get(Component::Wakeup) == 4000));
        assert_eq!(sum(&done, Component::ThreadWait), 0);
    }

    #[test]
    fn waits_for_the_scheduler_and_the_lock_are_told_apart() {
        let ios: Vec<_> = (0..8).map(|t| (t, 0)).collect();
        let mut c = cfg();
        c.scheduler = Scheduler::SingleQueue;
        c.scheduler_handoff_ns = 2000;
        let (done, _) = run(c, 8, &ios, 10_000);
        assert!(sum(&done, Component::SchedulerWait) > 0);
        assert_eq!(sum(&done, Component::LockWait), 0);
        let mut c = cfg();
        c.driver_lock = true;
        let (done, _) = run(c, 8, &ios, 10_000);
        assert!(sum(&done, Component::LockWait) > 0);
        assert_eq!(sum(&done, Component::SchedulerWait), 0);
    }

    #[test]
    fn the_driver_worker_serialises_its_share_and_keeps_the_instructions() {
        // 10,000 driver instructions at 1 instruction per ns: 10 us per
        // read; half of it on the worker thread
        let mut c = cfg();
        c.ghz = Some(1.0);
        c.cpi = Some(1.0);
        c.driver_instructions = Some(Rw {
            read: 10_000,
            write: 10_000,
        });
        // 64 synchronous threads at once, 8 cores, a fast device
        let ios: Vec<_> = (0..64).map(|t| (t, 0)).collect();
        let last = |done: &[IoDone]| done.iter().map(|d| d.at).max().unwrap_or(0);
        let (plain, h0) = run(c.clone(), 64, &ios, 1_000);
        c.driver_worker_share = 0.5;
        validate(&c).expect("a valid worker");
        let (work, h1) = run(c.clone(), 64, &ios, 1_000);
        // one worker takes the 64 requests one after the other: the last
        // finishes no sooner than 64 x (5 us + tag + PIO) after the start
        let per = 5_000 + 510 + 385;
        assert!(last(&work) >= 64 * per, "{} ns", last(&work));
        assert!(last(&work) > last(&plain), "the worker is the bottleneck");
        // the wait for the worker is named, the core time is the same
        assert!(sum(&work, Component::WorkerWait) > 0);
        assert_eq!(sum(&plain, Component::WorkerWait), 0);
        assert_eq!(sum(&work, Component::LockWait), 0);
        assert_eq!(
            sum(&work, Component::Driver),
            sum(&plain, Component::Driver)
        );
        assert_eq!(
            h0.instructions_per_io(Op::Read),
            h1.instructions_per_io(Op::Read)
        );
        // one request alone pays no more than without the worker
        let (a, _) = run(c.clone(), 1, &[(0, 0)], 1_000);
        c.driver_worker_share = 0.0;
        let (b, _) = run(c.clone(), 1, &[(0, 0)], 1_000);
        assert_eq!(a[0].clat_ns + a[0].slat_ns, b[0].clat_ns + b[0].slat_ns);
        // bad values are refused, naming the key
        for (share, sched, instr, lock) in [
            (1.5, Scheduler::Bypass, true, false),
            (f64::NAN, Scheduler::Bypass, true, false),
            (0.5, Scheduler::SingleQueue, true, false),
            (0.5, Scheduler::Bypass, false, false),
            (0.5, Scheduler::Bypass, true, true),
        ] {
            let mut bad = c.clone();
            bad.driver_worker_share = share;
            bad.scheduler = sched;
            bad.driver_lock = lock;
            if !instr {
                bad.driver_instructions = None;
            }
            let e = validate(&bad).expect_err("refused").to_string();
            assert!(e.contains("host.driver_worker_share"), "{e}");
        }
    }

    #[test]
    fn an_asynchronous_thread_does_not_wait_for_the_driver_worker() {
        // all 20 us of driver work on the worker: one thread submitting 64
        // requests at once runs only ~6 us of its own per request, so the
        // worker (20.9 us with the tag and PIO) sets the pace, not the sum
        let mut c = cfg();
        c.ghz = Some(1.0);
        c.cpi = Some(1.0);
        c.driver_instructions = Some(Rw {
            read: 20_000,
            write: 20_000,
        });
        c.driver_worker_share = 1.0;
        let ios: Vec<_> = (0..64).map(|_| (0u32, 0)).collect();
        let (done, _) = run(c.clone(), 1, &ios, 30_000);
        let last = done.iter().map(|d| d.at).max().unwrap_or(0);
        let worker = 20_000 + 510 + 385;
        assert!(last >= 64 * worker, "{last} ns");
        assert!(last < 64 * (worker + 1_500), "the thread waited: {last} ns");
        // polling threads wait for the worker too, and none holds a core
        // meanwhile: 16 of them on 8 cores all finish
        c.completion = CompletionMode::Spin;
        c.spin_max_bytes = 4096;
        c.driver_worker_share = 0.5;
        let ios: Vec<_> = (0..16).map(|t| (t, 0)).collect();
        let (done, _) = run(c, 16, &ios, 30_000);
        assert!(sum(&done, Component::WorkerWait) > 0);
    }

    #[test]
    fn a_busy_wait_counts_at_its_own_cpi() {
        let mut c = cfg();
        c.ghz = Some(2.0);
        c.cpi = Some(1.0);
        c.completion = CompletionMode::Spin;
        c.spin_max_bytes = 4096;
        let (_, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
        let at_cpi = host.instructions_per_io(Op::Read).expect("counted");
        // the core time includes the 50 us the thread spun
        let cpu = host.cpu_ns_per_io(Op::Read).expect("a read finished");
        assert!(cpu >= 50_000.0, "{cpu}");
        assert_eq!(at_cpi, 2.0 * cpu);
        // the same loop at 4 cycles per instruction: 0.5 instead of 2 per ns
        c.spin_cpi = Some(4.0);
        let (_, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
        assert_eq!(host.cpu_ns_per_io(Op::Read), Some(cpu), "same time");
        let slow = host.instructions_per_io(Op::Read).expect("counted");
        assert!(
            (at_cpi - slow - 50_000.0 * 1.5).abs() < 1.0,
            "{at_cpi} -> {slow}"
        );
        // a sleeping thread has no busy wait: spin_cpi changes nothing
        c.completion = CompletionMode::Interrupt;
        let (_, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
        let cpu = host.cpu_ns_per_io(Op::Read).expect("a read finished");
        assert_eq!(host.instructions_per_io(Op::Read), Some(2.0 * cpu));
        // spin_cpi needs a clock
        c.ghz = None;
        assert!(validate(&c).is_err());
    }

    #[test]
    fn instructions_are_core_time_at_the_clock_and_cpi() {
        let mut c = cfg();
        c.ghz = Some(2.0);
        c.cpi = Some(1.0);
        let (done, host) = run(c.clone(), 1, &[(0, 0)], 50_000);
        let base = host.cpu_ns_per_io(Op::Read).expect("a read finished");
        // entry, block, tag, PIO, switch-out, interrupt (+2 PIO), wake, exit
        let expect = 1950 + 1740 + 510 + 385 + 2000 + 310 + 770 + 4000 + 1950;
        assert_eq!(base, expect as f64);
        assert_eq!(host.instructions_per_io(Op::Read), Some(2.0 * base));
        assert_eq!(host.cpu_ns_per_io(Op::Write), None);
        assert_eq!(done[0].breakdown.get(Component::Driver), 510);
        // a driver's own 3,000 instructions take 1,500 ns at 2 per ns
        c.driver_instructions = Some(Rw {
            read: 3000,
            write: 0,
        });
        let (done, host) = run(c, 1, &[(0, 0)], 50_000);
        assert_eq!(done[0].breakdown.get(Component::Driver), 510 + 1500);
        assert_eq!(
            host.instructions_per_io(Op::Read),
            Some(2.0 * base + 3000.0)
        );
    }

    #[test]
    fn no_clock_no_instructions() {
        let (_, host) = run(cfg(), 1, &[(0, 0)], 50_000);
        assert!(host.cpu_ns_per_io(Op::Read).is_some());
        assert_eq!(host.instructions_per_io(Op::Read), None);
    }

    #[test]
    fn driver_instructions_need_a_clock_and_a_cpi() {
        let mut c = cfg();
        c.driver_instructions = Some(Rw {
            read: 1000,
            write: 1000,
        });
        let e = validate(&c).expect_err("refused").to_string();
        assert!(e.contains("host.driver_instructions"), "{e}");
        c.ghz = Some(2.26);
        c.cpi = Some(1.67);
        validate(&c).expect("accepted");
        c.cpi = Some(0.0);
        let e = validate(&c).expect_err("refused").to_string();
        assert!(e.contains("host.cpi"), "{e}");
    }

    #[test]
    fn spread_keeps_the_mean_and_gives_a_tail() {
        // 400 synchronous threads, one request each: every one is woken
        let ios: Vec<_> = (0..400).map(|t| (t, 0)).collect();
        let mut c = cfg();
        c.cores = 4096;
        c.wakeup_spread = 0.5;
        c.interrupt_spread = 0.3;
        c.seed = Some(7);
        let (done, _) = run(c.clone(), 400, &ios, 200_000);
        let w: Vec<u64> = done
            .iter()
            .map(|d| d.breakdown.get(Component::Wakeup))
            .collect();
        let mean = w.iter().sum::<u64>() as f64 / w.len() as f64;
        // standard error of the mean: 0.5 x 4000 / sqrt(400) = 100 ns
        assert!((mean - 4000.0).abs() < 400.0, "mean wake-up {mean}");
        // the floor is the context switch itself: 4000 x (1 - 0.5)
        assert!(w.iter().all(|&x| x >= 2000), "{w:?}");
        let max = *w.iter().max().expect("some");
        assert!(max > 8000, "an exponential tail: max {max}");
        let irq: Vec<u64> = done
            .iter()
            .map(|d| d.breakdown.get(Component::Interrupt))
            .collect();
        assert!(irq.iter().any(|&x| x != irq[0]), "interrupts vary");
        assert!(irq.iter().all(|&x| x >= 217), "floor 310 x 0.7");
        // the same seed gives the same draws; another seed others
        let (again, _) = run(c.clone(), 400, &ios, 200_000);
        assert_eq!(
            done.iter().map(|d| d.clat_ns).collect::<Vec<_>>(),
            again.iter().map(|d| d.clat_ns).collect::<Vec<_>>()
        );
        c.seed = Some(8);
        let (other, _) = run(c, 400, &ios, 200_000);
        assert_ne!(
            done.iter().map(|d| d.clat_ns).collect::<Vec<_>>(),
            other.iter().map(|d| d.clat_ns).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_run_seed_reaches_the_spread_unless_the_host_names_one() {
        let mut c = cfg();
        c.wakeup_spread = 1.0;
        let draws = |c: &HostConfig, run_seed: Option<u64>| {
            let dev = Box::new(FixedLatency::new(1000, 1 << 30));
            let mut h = Host::new(c.clone(), dev, 1);
            if let Some(s) = run_seed {
                h.seed_spread(s);
            }
            let j = h.jitter.as_mut().expect("spread on");
            (0..8).map(|_| j.wakeup()).collect::<Vec<_>>()
        };
        assert_ne!(draws(&c, Some(1)), draws(&c, Some(2)));
        assert_eq!(draws(&c, Some(1)), draws(&c, Some(1)));
        c.seed = Some(5);
        assert_eq!(draws(&c, Some(1)), draws(&c, Some(2)), "host.seed wins");
        // off: nothing to draw
        c.wakeup_spread = 0.0;
        let h = Host::new(c, Box::new(FixedLatency::new(1000, 1 << 30)), 1);
        assert!(h.jitter.is_none());
    }

    #[test]
    fn spreads_outside_zero_to_one_are_refused() {
        let mut c = cfg();
        c.wakeup_spread = 1.5;
        let e = validate(&c).expect_err("refused").to_string();
        assert!(e.contains("host.wakeup_spread"), "{e}");
        c.wakeup_spread = 0.5;
        c.interrupt_spread = -0.1;
        let e = validate(&c).expect_err("refused").to_string();
        assert!(e.contains("host.interrupt_spread"), "{e}");
        c.interrupt_spread = 0.3;
        validate(&c).expect("accepted");
    }

    #[test]
    fn exponential_draws_have_the_exponential_mean_and_tail() {
        let mut c = cfg();
        c.wakeup_spread = 1.0;
        let mut j = Jitter::new(&c, 3).expect("spread on");
        let n = 400_000;
        let xs: Vec<f64> = (0..n).map(|_| j.exp1()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        assert!((mean - 1.0).abs() < 0.01, "mean {mean}");
        // P(E > ln 100) = 1 %; beyond the table's last bin, ln 256
        let p99 = xs.iter().filter(|&&x| x > 100f64.ln()).count() as f64 / n as f64;
        assert!((p99 - 0.01).abs() < 0.001, "P(E > 4.6) = {p99}");
        let tail = xs.iter().filter(|&&x| x > 7.0).count() as f64 / n as f64;
        assert!(tail > 0.0005 && tail < 0.0013, "P(E > 7) = {tail}");
        assert!(xs.iter().all(|&x| x >= 0.0 && x.is_finite()));
    }
}
