//! The host stack's CPU costs: the stages a request goes through, the
//! resources each needs (thread, scheduler, driver worker, core, lock),
//! and each stage's software parts by operation, worked out once from the
//! configuration.

use crate::breakdown::Component;
use crate::device::Op;

use super::config::{CompletionMode, FileSystem, HostConfig, Scheduler};

pub(super) const THREAD: u8 = 1;
pub(super) const SCHED: u8 = 2;
/// The driver's worker thread (`driver_worker_share`): taken before a
/// core, so a request waits for the worker without holding one.
pub(super) const WORKER: u8 = 4;
pub(super) const CORE: u8 = 8;
pub(super) const LOCK: u8 = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stage {
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

pub(super) const STAGES: [Stage; 8] = [
    Stage::Issue,
    Stage::IssueLocked,
    Stage::Worker,
    Stage::SchedIssue,
    Stage::Device,
    Stage::Irq,
    Stage::Wake,
    Stage::Finish,
];
pub(super) const OPS: [Op; 4] = [Op::Read, Op::Write, Op::Trim, Op::Flush];

/// One software cost of a stage: `fixed` ns plus `per_kib` ns per KiB of
/// the request (rounded up).
#[derive(Clone, Copy, Debug)]
pub(super) struct Part {
    pub(super) comp: Component,
    pub(super) fixed: u64,
    pub(super) per_kib: u64,
}

/// The part of a stage whose cost can vary from one request to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Vary {
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
pub(super) struct StageCost {
    /// The parts whose cost is the same for every request of a size (all
    /// but the wake-up and the interrupt handler).
    pub(super) parts: [Part; 8],
    pub(super) n: u8,
    /// Resources the stage needs (THREAD, SCHED, CORE, LOCK bits).
    pub(super) needs: u8,
    /// The stage's wake-up or interrupt part (at most one per stage), kept
    /// out of `parts`: its cost can vary (a skipped wake-up, the host's
    /// spread), so `segment` adds it on its own.
    pub(super) vary: Vary,
    /// That part's configured (mean) time, ns.
    pub(super) vary_ns: u64,
    /// Some part of `parts` costs per KiB.
    pub(super) per_kib: bool,
}

impl StageCost {
    pub(super) fn new(c: &HostConfig, stage: Stage, op: Op) -> Self {
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
