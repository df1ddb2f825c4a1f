//! What the CPU offers (CPUID), and a calibrated clock for the write-barrier
//! spin and the counters.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::PmemError;
use crate::model::FlushMode;

/// The CPU features this crate cares about, as CPUID reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CpuFeatures {
    /// `clflush` (CPUID.01H:EDX bit 19).
    pub clflush: bool,
    /// `clflushopt` (CPUID.(EAX=07H,ECX=0):EBX bit 23).
    pub clflushopt: bool,
    /// `clwb` (CPUID.(EAX=07H,ECX=0):EBX bit 24).
    pub clwb: bool,
    /// SSE2 (CPUID.01H:EDX bit 26): `movntdq` and `sfence`, which WOF needs.
    pub sse2: bool,
    /// Invariant TSC (CPUID.80000007H:EDX bit 8): the TSC ticks at a
    /// constant rate, so it can time the write-barrier spin.
    pub invariant_tsc: bool,
    /// Line size `clflush` works on, in bytes (CPUID.01H:EBX bits 15:8 × 8).
    pub clflush_line_bytes: u32,
}

impl CpuFeatures {
    /// Features of a CPU with none of the above (non-x86 hosts).
    pub const NONE: CpuFeatures = CpuFeatures {
        clflush: false,
        clflushopt: false,
        clwb: false,
        sse2: false,
        invariant_tsc: false,
        clflush_line_bytes: 0,
    };

    /// Whether `mode` can run here.
    pub fn supports(&self, mode: FlushMode) -> bool {
        self.check(mode).is_ok()
    }

    fn missing(&self, mode: FlushMode) -> Option<&'static str> {
        match mode {
            FlushMode::Clflush if !self.clflush => Some("CLFLUSH"),
            FlushMode::Clflushopt if !self.clflushopt => Some("CLFLUSHOPT"),
            FlushMode::Clwb if !self.clwb => Some("CLWB"),
            FlushMode::Wof if !self.sse2 => Some("SSE2 (non-temporal stores)"),
            _ => None,
        }
    }

    /// `Ok` if `mode` can run here, else [`PmemError::UnsupportedMode`]
    /// naming the missing instruction.
    pub fn check(&self, mode: FlushMode) -> Result<(), PmemError> {
        match self.missing(mode) {
            None => Ok(()),
            Some(instruction) => Err(PmemError::UnsupportedMode {
                mode,
                instruction,
                cpu: cpu_model().to_string(),
                supported: FlushMode::ALL
                    .into_iter()
                    .filter(|m| self.missing(*m).is_none())
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

/// This CPU's features (read once).
pub fn cpu_features() -> CpuFeatures {
    static F: OnceLock<CpuFeatures> = OnceLock::new();
    *F.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> CpuFeatures {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    let max_leaf = __cpuid(0).eax;
    let l1 = __cpuid(1);
    let l7 = if max_leaf >= 7 {
        __cpuid_count(7, 0)
    } else {
        __cpuid(0)
    };
    let has7 = max_leaf >= 7;
    let max_ext = __cpuid(0x8000_0000).eax;
    let inv_tsc = max_ext >= 0x8000_0007 && (__cpuid(0x8000_0007).edx >> 8) & 1 == 1;
    CpuFeatures {
        clflush: (l1.edx >> 19) & 1 == 1,
        clflushopt: has7 && (l7.ebx >> 23) & 1 == 1,
        clwb: has7 && (l7.ebx >> 24) & 1 == 1,
        sse2: (l1.edx >> 26) & 1 == 1,
        invariant_tsc: inv_tsc,
        clflush_line_bytes: ((l1.ebx >> 8) & 0xff) * 8,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> CpuFeatures {
    CpuFeatures::NONE
}

/// The CPU's brand string (CPUID leaves 80000002H-80000004H), e.g.
/// `AMD EPYC`; `unknown` if the CPU has none.
pub fn cpu_model() -> &'static str {
    static M: OnceLock<String> = OnceLock::new();
    M.get_or_init(brand_string)
}

#[cfg(target_arch = "x86_64")]
fn brand_string() -> String {
    use std::arch::x86_64::__cpuid;
    if __cpuid(0x8000_0000).eax < 0x8000_0004 {
        return "unknown".to_string();
    }
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002u32..=0x8000_0004 {
        let r = __cpuid(leaf);
        for reg in [r.eax, r.ebx, r.ecx, r.edx] {
            bytes.extend_from_slice(&reg.to_le_bytes());
        }
    }
    let s = String::from_utf8_lossy(&bytes);
    let s = s.trim_matches(char::from(0)).trim();
    if s.is_empty() {
        "unknown".to_string()
    } else {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn brand_string() -> String {
    "unknown".to_string()
}

/// The clock behind the write-barrier spin and the time counters: the TSC
/// when it is invariant (a few ns to read, calibrated once against the
/// monotonic clock over 20 ms), else the monotonic clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    /// TSC ticks per ns, or 0 when the monotonic clock is used.
    tsc_per_ns: f64,
    origin: Instant,
}

impl Clock {
    pub(crate) fn get() -> &'static Clock {
        static C: OnceLock<Clock> = OnceLock::new();
        C.get_or_init(|| {
            let origin = Instant::now();
            let tsc_per_ns = if cpu_features().invariant_tsc {
                calibrate_tsc()
            } else {
                0.0
            };
            Clock { tsc_per_ns, origin }
        })
    }

    /// Name of the time source, for reports.
    pub(crate) fn source(&self) -> &'static str {
        if self.tsc_per_ns > 0.0 {
            "invariant TSC"
        } else {
            "CLOCK_MONOTONIC"
        }
    }

    /// TSC frequency in GHz (0 when the TSC is not used).
    pub(crate) fn tsc_ghz(&self) -> f64 {
        self.tsc_per_ns
    }

    /// A timestamp in ticks of this clock.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        if self.tsc_per_ns > 0.0 {
            rdtsc()
        } else {
            self.origin.elapsed().as_nanos() as u64
        }
    }

    /// Convert a tick difference to ns.
    #[inline]
    pub(crate) fn ticks_to_ns(&self, ticks: u64) -> u64 {
        if self.tsc_per_ns > 0.0 {
            (ticks as f64 / self.tsc_per_ns) as u64
        } else {
            ticks
        }
    }

    /// Busy-wait for `ns` nanoseconds (the L_WBAR delay).
    #[inline]
    pub(crate) fn spin(&self, ns: u64) {
        if ns == 0 {
            return;
        }
        let start = self.now();
        let ticks = if self.tsc_per_ns > 0.0 {
            (ns as f64 * self.tsc_per_ns) as u64
        } else {
            ns
        };
        while self.now().wrapping_sub(start) < ticks {
            std::hint::spin_loop();
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no memory effects; it is only called when CPUID
    // reported an invariant TSC (and every x86-64 CPU has RDTSC).
    unsafe { std::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn rdtsc() -> u64 {
    0
}

fn calibrate_tsc() -> f64 {
    // Take the best of three 20 ms windows against the monotonic clock.
    let mut best = 0.0f64;
    for _ in 0..3 {
        let t0 = Instant::now();
        let c0 = rdtsc();
        std::thread::sleep(Duration::from_millis(20));
        let c1 = rdtsc();
        let dt = t0.elapsed().as_nanos() as f64;
        let r = (c1.wrapping_sub(c0)) as f64 / dt;
        if r.is_finite() && r > best {
            best = r;
        }
    }
    best
}
