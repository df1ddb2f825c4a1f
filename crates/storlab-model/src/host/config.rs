//! The host stack's configuration (`[host]`): cores, the costs of each
//! software stage, the scheduler, the driver, completion by interrupt,
//! spinning or CPU, and the spread of wake-ups and interrupts.

use serde::{Deserialize, Serialize};

use crate::device::Op;
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
/// layer (`crate::host::fs`) between the workload and this host stack; its
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
    /// The part of `interrupt_ns` each completion entry takes (reading
    /// the entry, completing its request, posting io_uring's CQE); the
    /// rest is the interrupt's entry and exit, paid once per interrupt.
    /// Matters only with interrupt coalescing, where one interrupt
    /// handles several entries; at most `interrupt_ns` (a larger value
    /// counts as `interrupt_ns`). Default 0.
    #[serde(default)]
    pub interrupt_cqe_ns: u64,
    /// NVMe interrupt coalescing (feature 08h): completion entries per
    /// interrupt, the feature's aggregation threshold plus one. 1 (the
    /// default; Linux leaves the feature off): every completion
    /// interrupts at once.
    #[serde(default = "one_entry")]
    pub coalesce_entries: u32,
    /// NVMe interrupt coalescing: the feature's aggregation time, in its
    /// unit of 100 µs: the longest the device holds an interrupt back
    /// after the first entry it holds. 0 (the default): none held.
    #[serde(default)]
    pub coalesce_time_100us: u8,
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
    /// Host DRAM the device's driver keeps for itself, bytes (Fusion-io's
    /// driver: its host-side FTL's tables and its buffers, "800 MB of
    /// kernel memory", docs/spec/peer-devices.md), which no program can
    /// use: a paging run whose swap device this is has that much less
    /// DRAM for page frames. 0 (the default): none.
    #[serde(default)]
    pub driver_memory_bytes: u64,
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
    /// default): no limit, no layer. See [`super::split`].
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

/// `host.coalesce_entries`' default: every completion interrupts.
fn one_entry() -> u32 {
    1
}

/// Validate a host configuration.
pub fn validate(cfg: &HostConfig) -> Result<(), crate::config::ConfigError> {
    crate::config::check_range("host.cores", cfg.cores, 1, 4096)?;
    // NVMe's aggregation threshold is an 8-bit 0's based count
    crate::config::check_range("host.coalesce_entries", cfg.coalesce_entries, 1, 256)?;
    // (a value above interrupt_ns counts as interrupt_ns, so that an
    // override of interrupt_ns alone, the 2010 stack's, stays valid)
    crate::config::check_range(
        "host.interrupt_cqe_ns",
        cfg.interrupt_cqe_ns,
        0,
        1_000_000_000,
    )?;
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
    crate::config::check_range(
        "host.driver_memory_bytes",
        cfg.driver_memory_bytes,
        0,
        1 << 50,
    )?;
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
