//! What this host can emulate, said plainly.

use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;

use crate::cpu::{cpu_features, cpu_model, Clock, CpuFeatures};
use crate::model::FlushMode;
use crate::region::{Region, RegionOptions};
use crate::sys;
use crate::track::{TrackingChoice, TrackingKind};

/// Whether the host exposes a hardware cache-miss counter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PerfCounters {
    /// `perf_event_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES)`
    /// succeeded for this process.
    pub available: bool,
    /// What the kernel answered.
    pub detail: String,
}

/// One flush mode and whether the CPU has it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModeSupport {
    /// The mode.
    pub mode: FlushMode,
    /// Whether it can run here.
    pub supported: bool,
}

/// The host's capabilities and the emulation's limits.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Capabilities {
    /// CPU brand string.
    pub cpu_model: String,
    /// CPUID bits.
    pub cpu_features: CpuFeatures,
    /// Flush modes and their support.
    pub flush_modes: Vec<ModeSupport>,
    /// The dirty-tracking mechanism `auto` picks here.
    pub dirty_tracking: TrackingKind,
    /// Why `auto` fell back, if it did.
    pub dirty_tracking_note: Option<String>,
    /// Time source of the L_WBAR spin and the counters.
    pub wbarrier_clock: String,
    /// TSC frequency in GHz (0 if the TSC is not used).
    pub tsc_ghz: f64,
    /// Hardware performance counters.
    pub perf_counters: PerfCounters,
    /// What `storlab-pmem` really does on this host.
    pub emulated: Vec<String>,
    /// What it cannot do here, and where that is modelled instead.
    pub not_emulated: Vec<String>,
}

/// Probe the host (once; later calls return the same report).
pub fn capabilities() -> Capabilities {
    static C: OnceLock<Capabilities> = OnceLock::new();
    C.get_or_init(probe).clone()
}

fn probe() -> Capabilities {
    let f = cpu_features();
    let clock = Clock::get();
    let flush_modes: Vec<ModeSupport> = FlushMode::ALL
        .into_iter()
        .map(|mode| ModeSupport {
            mode,
            supported: f.supports(mode),
        })
        .collect();
    let (dirty_tracking, dirty_tracking_note) = probe_tracking();
    let perf = probe_perf();
    let supported: Vec<&str> = flush_modes
        .iter()
        .filter(|m| m.supported)
        .map(|m| m.mode.name())
        .collect();
    let mut emulated = vec![
        format!(
            "M_FLUSH: real flush instructions on this CPU ({})",
            if supported.is_empty() {
                "none supported".to_string()
            } else {
                supported.join(", ")
            }
        ),
        "WOF: each line read and rewritten with non-temporal stores (movntdq), then sfence".into(),
        format!(
            "L_WBAR: a busy-wait after the fence that ends each persist/sync, timed by the {}",
            clock.source()
        ),
        format!(
            "M_SYNC: default flushes every line; SPF flushes lines of pages written since the last sync, found with {}",
            dirty_tracking.name()
        ),
    ];
    emulated.push(
        "durability: flushed lines reach DRAM (page cache or memfd); only a file on a DAX mount \
         (mapped MAP_SYNC) is durable at the flush, otherwise call writeback() for the disk"
            .into(),
    );
    let counters = if perf.available {
        "hardware counters are present, but storlab-pmem does not inject load delays or \
         throttle bandwidth with them"
    } else {
        "this host exposes no hardware cache-miss counter"
    };
    let not_emulated = vec![
        format!(
            "L_READ (NVMM read latency) is not imposed on ordinary loads: {counters}; \
             model it with the simulator's nvmm device (storlab_pmem::model)"
        ),
        format!(
            "Th_BW (bandwidth throttle) is not imposed on ordinary loads and stores: {counters}; \
             model it with the simulator's nvmm device (storlab_pmem::model)"
        ),
    ];
    Capabilities {
        cpu_model: cpu_model().to_string(),
        cpu_features: f,
        flush_modes,
        dirty_tracking,
        dirty_tracking_note,
        wbarrier_clock: clock.source().to_string(),
        tsc_ghz: clock.tsc_ghz(),
        perf_counters: perf,
        emulated,
        not_emulated,
    }
}

fn probe_tracking() -> (TrackingKind, Option<String>) {
    let opts =
        RegionOptions::memfd(crate::region::page_size() as u64).tracking(TrackingChoice::Auto);
    match Region::map(&opts) {
        Ok(r) => (r.tracking(), r.tracking_note().map(str::to_string)),
        Err(e) => (TrackingKind::Off, Some(format!("no dirty tracking: {e}"))),
    }
}

fn probe_perf() -> PerfCounters {
    let attr = sys::PerfEventAttrV0 {
        type_: sys::PERF_TYPE_HARDWARE,
        size: sys::PERF_ATTR_SIZE_VER0,
        config: sys::PERF_COUNT_HW_CACHE_MISSES,
        // disabled | exclude_kernel | exclude_hv: allowed at
        // perf_event_paranoid <= 2.
        flags: 1 | (1 << 5) | (1 << 6),
        ..Default::default()
    };
    // SAFETY: perf_event_open reads `attr` (64 bytes, size VER0) and returns
    // a descriptor or -1; pid 0 / cpu -1 means this process on any CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const sys::PerfEventAttrV0,
            0 as libc::pid_t,
            -1 as libc::c_int,
            -1 as libc::c_int,
            0 as libc::c_ulong,
        )
    };
    if fd >= 0 {
        // SAFETY: closing the descriptor we just got.
        unsafe { libc::close(fd as i32) };
        return PerfCounters {
            available: true,
            detail: "perf_event_open(PERF_COUNT_HW_CACHE_MISSES) succeeded".into(),
        };
    }
    let e = sys::errno();
    let why = match e {
        libc::ENOENT | libc::EOPNOTSUPP => "no hardware PMU is exposed (typical of a VM)",
        libc::EACCES | libc::EPERM => "not permitted (kernel.perf_event_paranoid or seccomp)",
        libc::ENOSYS => "the kernel has no perf events",
        _ => "unavailable",
    };
    PerfCounters {
        available: false,
        detail: format!(
            "perf_event_open(PERF_COUNT_HW_CACHE_MISSES): {}: {why}",
            std::io::Error::from_raw_os_error(e)
        ),
    }
}

impl Capabilities {
    /// As JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl fmt::Display for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "CPU: {}", self.cpu_model)?;
        let modes: Vec<String> = self
            .flush_modes
            .iter()
            .map(|m| format!("{} {}", m.mode, if m.supported { "yes" } else { "no" }))
            .collect();
        writeln!(f, "flush modes: {}", modes.join(", "))?;
        write!(f, "dirty tracking: {}", self.dirty_tracking)?;
        if let Some(n) = &self.dirty_tracking_note {
            write!(f, " ({n})")?;
        }
        writeln!(f)?;
        writeln!(f, "wbarrier clock: {}", self.wbarrier_clock)?;
        writeln!(f, "hardware counters: {}", self.perf_counters.detail)?;
        writeln!(f, "emulated:")?;
        for e in &self.emulated {
            writeln!(f, "  - {e}")?;
        }
        writeln!(f, "not emulated:")?;
        for e in &self.not_emulated {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}
