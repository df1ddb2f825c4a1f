//! Flexible Data Placement (NVMe Base Specification 2.0, "Flexible Data
//! Placement", ratified as TP4146): the host tags each write with a
//! placement identifier, and the drive keeps data written through
//! different reclaim-unit handles in different reclaim units.
//!
//! The terms, as the specification defines them and as this model maps
//! them onto the FTL:
//!
//! * A **reclaim unit** (RU) is the set of NAND the drive erases and
//!   reuses as one. Here it is one erase block ([`Fdp::ru_bytes`] =
//!   `pages_per_block x page_bytes`): the unit the FTL's garbage
//!   collection picks as a victim, moves the valid data out of and erases.
//! * A **reclaim-unit handle** (RUH) points at the RU its writes fill.
//!   Here each handle is one of the FTL's write streams (the same
//!   streams a zoned drive gives its zones): a handle's host writes go to
//!   its own open blocks, one in each plane (the drive stripes every
//!   stream over its planes, as it stripes conventional writes), so no
//!   block holds two handles' host data.
//! * A **placement identifier** (PID), carried in a write's Directive
//!   Specific field with Directive Type 2h (data placement), names a
//!   placement handle and a reclaim group. The drive has one reclaim
//!   group, so the PID is the placement handle, which maps one to one to
//!   a RUH. A write with no directive, or with a PID naming no handle,
//!   goes to placement handle 0 (QEMU's NVMe emulation, hw/nvme/ctrl.c,
//!   `nvme_do_write_fdp`: an invalid PID falls back to handle 0 of
//!   reclaim group 0 and logs an "Invalid Placement Identifier" FDP event,
//!   counted here).
//!
//! Isolation. The specification has two handle types: *initially
//! isolated* (data written through different handles shares no RU when
//! written, but the drive may mix it when garbage collection moves it)
//! and *persistently isolated* (moved data stays apart too). Every handle
//! here is initially isolated, as QEMU's emulated FDP subsystem makes
//! every handle (hw/nvme/subsys.c, `nvme_subsys_setup_fdp`): garbage
//! collection moves valid data into the plane's one collection block,
//! whichever handle wrote it.
//!
//! Statistics, as the FDP Statistics log page (log identifier 22h) names
//! them: host bytes written (HBMW), media bytes written (MBMW: host,
//! moved and padding bytes programmed) and media bytes erased (MBE). Their
//! ratio MBMW / HBMW is the drive's write amplification.

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// Most reclaim-unit handles (fio's `FDP_MAX_RUHS`, dataplacement.h:
/// fio reads at most 128 handles' placement identifiers).
pub const MAX_HANDLES: u32 = 128;

/// `[ssd.fdp]`: flexible data placement.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FdpConfig {
    /// FDP on (the FDP feature, Set Features identifier 1Dh, is enabled
    /// for the endurance group). Off, the drive ignores placement
    /// identifiers and fio's `fdp=1` finds no handle.
    pub enabled: bool,
    /// Reclaim-unit handles (NRUH), placement handles `0..handles`.
    pub handles: u32,
}

impl FdpConfig {
    /// Check the handle count.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.handles == 0 || self.handles > MAX_HANDLES {
            return Err(ConfigError::Invalid {
                field: "ssd.fdp.handles".into(),
                message: format!(
                    "{} reclaim-unit handles: expected 1 to {MAX_HANDLES}",
                    self.handles
                ),
            });
        }
        Ok(())
    }

    /// The handles the drive exposes when FDP is on.
    pub fn active_handles(&self) -> Option<u32> {
        self.enabled.then_some(self.handles)
    }
}

/// The drive's FDP state: handles and what each has written.
#[derive(Clone, Debug)]
pub struct Fdp {
    /// Host units written through each handle.
    host_units: Vec<u64>,
    /// Writes whose placement identifier named no handle.
    invalid_pids: u64,
    /// Bytes in a reclaim unit.
    ru_bytes: u64,
}

impl Fdp {
    /// `handles` handles over reclaim units of `ru_bytes`.
    pub fn new(handles: u32, ru_bytes: u64) -> Self {
        Fdp {
            host_units: vec![0; handles as usize],
            invalid_pids: 0,
            ru_bytes,
        }
    }

    /// Handles.
    pub fn handles(&self) -> u32 {
        self.host_units.len() as u32
    }

    /// Bytes in a reclaim unit (an erase block).
    pub fn ru_bytes(&self) -> u64 {
        self.ru_bytes
    }

    /// The handle a write with placement identifier `pid` goes to.
    pub fn handle_of(&mut self, pid: Option<u16>) -> u16 {
        match pid {
            Some(p) if u32::from(p) < self.handles() => p,
            Some(_) => {
                self.invalid_pids += 1;
                0
            }
            None => 0,
        }
    }

    /// Handle `h` wrote `units` host units.
    pub fn written(&mut self, h: u16, units: u32) {
        self.host_units[h as usize] += u64::from(units);
    }

    /// Host units written through handle `h`.
    pub fn host_units(&self, h: u16) -> u64 {
        self.host_units[h as usize]
    }

    /// The FDP statistics and reclaim-unit collection for the device
    /// report, from the FTL's counters since preconditioning (`unit`:
    /// bytes a mapping unit).
    pub fn counters(&self, unit: u64, ftl: &super::ftl::layer::FtlCounters) -> Vec<(String, f64)> {
        let media = ftl.host_units + ftl.moved_units + ftl.padded_units;
        let mut out: Vec<(String, f64)> = [
            ("fdp_handles", self.handles() as f64),
            ("fdp_ru_bytes", self.ru_bytes as f64),
            ("fdp_host_bytes_written", (ftl.host_units * unit) as f64),
            ("fdp_media_bytes_written", (media * unit) as f64),
            (
                "fdp_media_bytes_erased",
                (ftl.erases * self.ru_bytes) as f64,
            ),
            ("fdp_ru_gc_collected", ftl.gc_runs as f64),
            ("fdp_ru_gc_relocated_units", ftl.moved_units as f64),
            ("fdp_ru_erased", ftl.erases as f64),
            ("fdp_invalid_pid_events", self.invalid_pids as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        for (h, &u) in self.host_units.iter().enumerate() {
            out.push((format!("fdp_ruh{h}_host_units"), u as f64));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_identifiers_name_handles_and_bad_ones_fall_back_to_handle_0() {
        let mut f = Fdp::new(4, 1 << 24);
        assert_eq!(f.handle_of(Some(3)), 3);
        assert_eq!(f.handle_of(None), 0);
        assert_eq!(f.handle_of(Some(4)), 0);
        f.written(3, 8);
        assert_eq!(f.host_units(3), 8);
        let c = f.counters(4096, &Default::default());
        let get = |k: &str| c.iter().find(|(n, _)| n == k).unwrap().1;
        assert_eq!(get("fdp_invalid_pid_events"), 1.0);
        assert_eq!(get("fdp_ruh3_host_units"), 8.0);
    }

    #[test]
    fn handle_count_is_checked() {
        let bad = FdpConfig {
            enabled: true,
            handles: 0,
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("ssd.fdp.handles"), "{e}");
        let bad = FdpConfig {
            enabled: true,
            handles: 129,
        };
        assert!(bad.validate().is_err());
    }
}
