//! A zoned namespace (NVMe ZNS): the zone state machine and the rules a
//! write must keep, as the NVMe Zoned Namespace Command Set specification
//! (1.1, section 2.1 "Zone state machine" and Figure 38 "Zone Management
//! Send Action" effects; status codes B8h-BFh of section 4.1.1.1) defines
//! them.
//!
//! The namespace is divided into zones of `zone_bytes` logical bytes, of
//! which the first `zone_capacity_bytes` can be written. Each zone has a
//! write pointer and a state: Empty, Implicitly Opened, Explicitly Opened,
//! Closed or Full. A write must start at its zone's write pointer and end
//! within the zone's capacity; writing an Empty or Closed zone opens it
//! implicitly. Open zones (implicitly or explicitly) count against the
//! drive's open limit (Maximum Open Resources), open and Closed zones
//! against its active limit (Maximum Active Resources). A zone whose
//! write pointer reaches its capacity is Full and holds no resource.
//! Zone Management Send actions: open, close, finish, reset; Zone Append
//! writes at the write pointer and returns where.
//!
//! The drive (`[ssd.zns]`): the host's block layer has no zone command in
//! the simulator's request interface, so a trim of whole zones is the
//! zone reset (Linux's `BLKRESETZONE` reaches an NVMe drive as a Zone
//! Management Send Reset, and fio's zonemode=zbd resets by that ioctl);
//! a trim of part of a zone is refused as a ZNS drive refuses a Dataset
//! Management deallocate it does not support. The FTL gives every zone
//! its own open erase blocks (a zone's data shares no block with another
//! zone's), and a reset frees them whole: the device never moves data,
//! so write amplification is 1.0 when the host resets whole zones.
//!
//! When a write fails the drive completes it with the NVMe status and
//! changes nothing. There is no implicit close when the open limit is
//! reached: the drive returns Too Many Open Zones (the specification lets
//! a controller close an implicitly opened zone instead; whether the
//! ZN540 does is not published).

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[ssd.zns]`: the zoned namespace's geometry and limits.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ZnsConfig {
    /// Zone size in logical bytes (ZSZE x LBA size): zone `i` starts at
    /// `i * zone_bytes`.
    pub zone_bytes: u64,
    /// Writable bytes at the start of each zone (ZCAP x LBA size).
    pub zone_capacity_bytes: u64,
    /// Maximum Open Resources: zones that may be open at once (0: no
    /// limit).
    pub max_open_zones: u32,
    /// Maximum Active Resources: zones that may be open or closed at once
    /// (0: no limit).
    pub max_active_zones: u32,
}

impl ZnsConfig {
    /// Check the zoned namespace against the namespace size and the
    /// mapping unit.
    pub fn validate(&self, capacity: u64, unit: u64) -> Result<(), ConfigError> {
        let bad = |field: &str, message: String| ConfigError::Invalid {
            field: format!("ssd.zns.{field}"),
            message,
        };
        if self.zone_bytes == 0 || !self.zone_bytes.is_multiple_of(unit) {
            return Err(bad(
                "zone_bytes",
                format!(
                    "{} must be a positive multiple of the mapping unit ({unit} bytes)",
                    self.zone_bytes
                ),
            ));
        }
        if self.zone_capacity_bytes == 0
            || self.zone_capacity_bytes > self.zone_bytes
            || !self.zone_capacity_bytes.is_multiple_of(unit)
        {
            return Err(bad(
                "zone_capacity_bytes",
                format!(
                    "{} must be a positive multiple of the mapping unit ({unit} bytes), at most zone_bytes ({})",
                    self.zone_capacity_bytes, self.zone_bytes
                ),
            ));
        }
        if !capacity.is_multiple_of(self.zone_bytes) {
            return Err(ConfigError::Invalid {
                field: "device.capacity_bytes".into(),
                message: format!(
                    "{capacity} is not a whole number of zones of {} bytes ([ssd.zns] zone_bytes)",
                    self.zone_bytes
                ),
            });
        }
        if self.max_active_zones != 0 && self.max_open_zones > self.max_active_zones {
            return Err(bad(
                "max_open_zones",
                format!(
                    "{} is more than max_active_zones ({}): an open zone is active",
                    self.max_open_zones, self.max_active_zones
                ),
            ));
        }
        Ok(())
    }

    /// Zones in a namespace of `capacity` bytes.
    pub fn zones(&self, capacity: u64) -> u64 {
        capacity / self.zone_bytes
    }
}

/// A zone's state (ZNS 1.1 section 2.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneState {
    /// ZSE: nothing written, no resource held.
    Empty,
    /// ZSIO: opened by a write.
    ImplicitOpen,
    /// ZSEO: opened by an Open action.
    ExplicitOpen,
    /// ZSC: written, not open, still active.
    Closed,
    /// ZSF: written to capacity or finished.
    Full,
}

impl ZoneState {
    /// Open, implicitly or explicitly.
    pub fn is_open(self) -> bool {
        matches!(self, ZoneState::ImplicitOpen | ZoneState::ExplicitOpen)
    }
    fn active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// Why the drive refused a command: the NVMe ZNS command-specific status
/// codes (status code type 1; ZNS 1.1 section 4.1.1.1) and the generic
/// Invalid Field in Command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneError {
    /// B8h: the command's range crosses the end of a zone.
    Boundary,
    /// B9h: the zone is Full.
    Full,
    /// BCh: the write does not start at the write pointer.
    InvalidWrite,
    /// BDh: opening the zone would exceed Maximum Active Resources.
    TooManyActive,
    /// BEh: opening the zone would exceed Maximum Open Resources.
    TooManyOpen,
    /// BFh: the action is not allowed in the zone's state.
    InvalidTransition,
    /// Generic 02h: a trim that does not cover whole zones.
    InvalidField,
}

impl ZoneError {
    /// The NVMe status field (status code type in bits 8-10, status code
    /// in bits 0-7), as [`crate::Completion::status`] carries it.
    pub fn status(self) -> u16 {
        match self {
            ZoneError::Boundary => 0x1b8,
            ZoneError::Full => 0x1b9,
            ZoneError::InvalidWrite => 0x1bc,
            ZoneError::TooManyActive => 0x1bd,
            ZoneError::TooManyOpen => 0x1be,
            ZoneError::InvalidTransition => 0x1bf,
            ZoneError::InvalidField => 0x002,
        }
    }

    /// The specification's name of the status.
    pub fn name(self) -> &'static str {
        match self {
            ZoneError::Boundary => "Zone Boundary Error",
            ZoneError::Full => "Zone Is Full",
            ZoneError::InvalidWrite => "Zone Invalid Write",
            ZoneError::TooManyActive => "Too Many Active Zones",
            ZoneError::TooManyOpen => "Too Many Open Zones",
            ZoneError::InvalidTransition => "Invalid Zone State Transition",
            ZoneError::InvalidField => "Invalid Field in Command",
        }
    }
}

/// What the zones have done since the drive was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ZoneCounters {
    /// Zone resets.
    pub resets: u64,
    /// Zones finished by an action (not by filling).
    pub finishes: u64,
    /// Zones that filled to capacity.
    pub filled: u64,
    /// Zone Append commands.
    pub appends: u64,
    /// Commands refused with a zone status.
    pub errors: u64,
    /// The most zones open at once.
    pub max_open_seen: u32,
}

/// The zones of a namespace: write pointers, states and resources.
#[derive(Clone, Debug)]
pub struct Zones {
    cfg: ZnsConfig,
    /// Each zone's write pointer, bytes from its start.
    wp: Vec<u64>,
    state: Vec<ZoneState>,
    open: u32,
    active: u32,
    /// What happened so far.
    pub counters: ZoneCounters,
}

impl Zones {
    /// The zones of a namespace of `capacity` bytes, all Empty.
    pub fn new(cfg: ZnsConfig, capacity: u64) -> Self {
        let n = cfg.zones(capacity) as usize;
        Zones {
            cfg,
            wp: vec![0; n],
            state: vec![ZoneState::Empty; n],
            open: 0,
            active: 0,
            counters: ZoneCounters::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ZnsConfig {
        &self.cfg
    }

    /// Number of zones.
    pub fn len(&self) -> usize {
        self.wp.len()
    }

    /// Whether the namespace has no zone.
    pub fn is_empty(&self) -> bool {
        self.wp.is_empty()
    }

    /// Zones open now.
    pub fn open_zones(&self) -> u32 {
        self.open
    }

    /// Zones active (open or closed) now.
    pub fn active_zones(&self) -> u32 {
        self.active
    }

    /// Zone `z`'s state.
    pub fn state(&self, z: usize) -> ZoneState {
        self.state[z]
    }

    /// Zone `z`'s write pointer, bytes from the zone's start.
    pub fn write_pointer(&self, z: usize) -> u64 {
        self.wp[z]
    }

    /// The zone holding byte `offset`, if any.
    pub fn zone_of(&self, offset: u64) -> Option<usize> {
        let z = (offset / self.cfg.zone_bytes) as usize;
        (z < self.len()).then_some(z)
    }

    fn fail<T>(&mut self, e: ZoneError) -> Result<T, ZoneError> {
        self.counters.errors += 1;
        Err(e)
    }

    /// Take the resources to open zone `z` (Empty or Closed) as `to`.
    fn take_open(&mut self, z: usize, to: ZoneState) -> Result<(), ZoneError> {
        let s = self.state[z];
        debug_assert!(matches!(s, ZoneState::Empty | ZoneState::Closed));
        let (mar, mor) = (self.cfg.max_active_zones, self.cfg.max_open_zones);
        if s == ZoneState::Empty && mar != 0 && self.active >= mar {
            return self.fail(ZoneError::TooManyActive);
        }
        if mor != 0 && self.open >= mor {
            return self.fail(ZoneError::TooManyOpen);
        }
        if s == ZoneState::Empty {
            self.active += 1;
        }
        self.open += 1;
        self.counters.max_open_seen = self.counters.max_open_seen.max(self.open);
        self.state[z] = to;
        Ok(())
    }

    /// Leave zone `z`'s state for `to`, giving back what it held.
    fn set(&mut self, z: usize, to: ZoneState) {
        let s = self.state[z];
        if s.is_open() {
            self.open -= 1;
        }
        if s.active() && !to.active() {
            self.active -= 1;
        }
        self.state[z] = to;
    }

    /// A write of `len` bytes at `offset`: checked against the zone's
    /// rules and, if it keeps them, applied (the write pointer moves on;
    /// an Empty or Closed zone opens; a zone written to capacity is Full).
    /// Returns the zone written.
    pub fn write(&mut self, offset: u64, len: u64) -> Result<usize, ZoneError> {
        let Some(z) = self.zone_of(offset) else {
            return self.fail(ZoneError::Boundary);
        };
        let rel = offset - z as u64 * self.cfg.zone_bytes;
        self.write_at(z, rel, len)?;
        Ok(z)
    }

    /// Zone Append of `len` bytes to zone `z`: written at the write
    /// pointer, whose place (bytes from the namespace's start) is
    /// returned.
    pub fn append(&mut self, z: usize, len: u64) -> Result<u64, ZoneError> {
        if z >= self.len() {
            return self.fail(ZoneError::Boundary);
        }
        let rel = self.wp[z];
        self.write_at(z, rel, len)?;
        self.counters.appends += 1;
        Ok(z as u64 * self.cfg.zone_bytes + rel)
    }

    fn write_at(&mut self, z: usize, rel: u64, len: u64) -> Result<(), ZoneError> {
        let cap = self.cfg.zone_capacity_bytes;
        let s = self.state[z];
        if s == ZoneState::Full {
            return self.fail(ZoneError::Full);
        }
        if rel != self.wp[z] {
            return self.fail(ZoneError::InvalidWrite);
        }
        if rel + len > cap {
            return self.fail(ZoneError::Boundary);
        }
        if matches!(s, ZoneState::Empty | ZoneState::Closed) {
            self.take_open(z, ZoneState::ImplicitOpen)?;
        }
        self.wp[z] += len;
        if self.wp[z] == cap {
            self.set(z, ZoneState::Full);
            self.counters.filled += 1;
        }
        Ok(())
    }

    /// Reset zone `z`: its write pointer goes back to its start and it is
    /// Empty (from any state).
    pub fn reset(&mut self, z: usize) {
        self.set(z, ZoneState::Empty);
        self.wp[z] = 0;
        self.counters.resets += 1;
    }

    /// Open zone `z` explicitly.
    pub fn open(&mut self, z: usize) -> Result<(), ZoneError> {
        match self.state[z] {
            ZoneState::ExplicitOpen => Ok(()),
            ZoneState::ImplicitOpen => {
                self.state[z] = ZoneState::ExplicitOpen;
                Ok(())
            }
            ZoneState::Empty | ZoneState::Closed => self.take_open(z, ZoneState::ExplicitOpen),
            ZoneState::Full => self.fail(ZoneError::InvalidTransition),
        }
    }

    /// Close zone `z`: an open zone is Closed (Empty if nothing was
    /// written to it).
    pub fn close(&mut self, z: usize) -> Result<(), ZoneError> {
        match self.state[z] {
            ZoneState::Closed => Ok(()),
            ZoneState::ImplicitOpen | ZoneState::ExplicitOpen => {
                let to = if self.wp[z] == 0 {
                    ZoneState::Empty
                } else {
                    ZoneState::Closed
                };
                self.set(z, to);
                Ok(())
            }
            ZoneState::Empty | ZoneState::Full => self.fail(ZoneError::InvalidTransition),
        }
    }

    /// Finish zone `z`: Full whatever was written.
    pub fn finish(&mut self, z: usize) -> Result<(), ZoneError> {
        if self.state[z] != ZoneState::Full {
            self.set(z, ZoneState::Full);
            self.counters.finishes += 1;
        }
        Ok(())
    }

    /// A trim of `[offset, offset + len)`: the zones it covers whole are
    /// reset (returned); a trim that covers part of a zone is refused.
    pub fn trim(&mut self, offset: u64, len: u64) -> Result<std::ops::Range<usize>, ZoneError> {
        let zb = self.cfg.zone_bytes;
        if !offset.is_multiple_of(zb) || !len.is_multiple_of(zb) || len == 0 {
            return self.fail(ZoneError::InvalidField);
        }
        let first = (offset / zb) as usize;
        let last = ((offset + len) / zb) as usize;
        if last > self.len() {
            return self.fail(ZoneError::Boundary);
        }
        for z in first..last {
            self.reset(z);
        }
        Ok(first..last)
    }
}

/// A zoned namespace as the drive serves it: the zones and the map from
/// the namespace's addresses (zones of `zone_bytes`) to the FTL's logical
/// units, which hold each zone's writable capacity only (the bytes between
/// a zone's capacity and its size hold nothing and cost nothing).
#[derive(Clone, Debug)]
pub struct ZonedNs {
    /// The zones.
    pub zones: Zones,
    unit: u64,
    cap_units: u64,
}

/// Where a zoned request lands in the FTL's logical units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZonedReq {
    /// First logical unit.
    pub lpn0: u32,
    /// Units.
    pub units: u32,
    /// Zones a trim resets.
    pub reset: std::ops::Range<usize>,
}

impl ZonedNs {
    /// The namespace of `capacity` bytes, mapping units of `unit` bytes.
    pub fn new(cfg: ZnsConfig, capacity: u64, unit: u64) -> Self {
        let cap_units = cfg.zone_capacity_bytes / unit;
        ZonedNs {
            zones: Zones::new(cfg, capacity),
            unit,
            cap_units,
        }
    }

    /// Logical units the FTL keeps: every zone's capacity.
    pub fn logical_units(cfg: &ZnsConfig, capacity: u64, unit: u64) -> u64 {
        cfg.zones(capacity) * (cfg.zone_capacity_bytes / unit)
    }

    /// The zone (the FTL's stream) logical unit `lpn` belongs to.
    #[inline]
    pub fn stream_of(&self, lpn: u32) -> u32 {
        (lpn as u64 / self.cap_units) as u32
    }

    /// Check request `req` against the zones (a write or a trim changes
    /// them) and map it to logical units.
    pub fn request(&mut self, req: &crate::DevRequest) -> Result<ZonedReq, ZoneError> {
        use crate::Op;
        let zb = self.zones.cfg.zone_bytes;
        let cap = self.zones.cfg.zone_capacity_bytes;
        let none = ZonedReq {
            lpn0: 0,
            units: 0,
            reset: 0..0,
        };
        if req.len == 0 || req.op == Op::Flush {
            return Ok(none);
        }
        let lpn = |z: u64, rel: u64| (z * self.cap_units + rel / self.unit) as u32;
        match req.op {
            Op::Write => {
                let z = self.zones.write(req.offset, req.len)? as u64;
                let rel = req.offset - z * zb;
                Ok(ZonedReq {
                    lpn0: lpn(z, rel),
                    units: (rel + req.len).div_ceil(self.unit) as u32 - (rel / self.unit) as u32,
                    reset: 0..0,
                })
            }
            Op::Trim => {
                let r = self.zones.trim(req.offset, req.len)?;
                Ok(ZonedReq {
                    lpn0: lpn(r.start as u64, 0),
                    units: ((r.end - r.start) as u64 * self.cap_units) as u32,
                    reset: r,
                })
            }
            _ => {
                // a read: the part within its first zone's capacity reads
                // media (a read may not cross a zone; past the capacity,
                // nothing is stored and the drive returns zeros)
                let Some(z) = self.zones.zone_of(req.offset) else {
                    return Ok(none);
                };
                let z = z as u64;
                let rel = req.offset - z * zb;
                let end = (rel + req.len).min(cap);
                if rel >= end {
                    return Ok(none);
                }
                Ok(ZonedReq {
                    lpn0: lpn(z, rel),
                    units: end.div_ceil(self.unit) as u32 - (rel / self.unit) as u32,
                    reset: 0..0,
                })
            }
        }
    }

    /// The zones' state and counters for the device report.
    pub fn counters(&self) -> Vec<(String, f64)> {
        let z = &self.zones;
        let c = &z.counters;
        [
            ("zones", z.len() as f64),
            ("zone_open", z.open_zones() as f64),
            ("zone_active", z.active_zones() as f64),
            ("zone_open_max_seen", c.max_open_seen as f64),
            ("zone_resets", c.resets as f64),
            ("zone_finishes", c.finishes as f64),
            ("zones_filled", c.filled as f64),
            ("zone_appends", c.appends as f64),
            ("zone_errors", c.errors as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn zones(open: u32, active: u32) -> Zones {
        let cfg = ZnsConfig {
            zone_bytes: 4 * MIB,
            zone_capacity_bytes: 3 * MIB,
            max_open_zones: open,
            max_active_zones: active,
        };
        Zones::new(cfg, 32 * MIB)
    }

    #[test]
    fn writes_move_the_pointer_and_fill_the_zone() {
        let mut z = zones(2, 2);
        assert_eq!(z.write(0, MIB), Ok(0));
        assert_eq!(z.state(0), ZoneState::ImplicitOpen);
        assert_eq!((z.open_zones(), z.active_zones()), (1, 1));
        assert_eq!(z.write(0, MIB), Err(ZoneError::InvalidWrite));
        assert_eq!(z.write(2 * MIB, MIB), Err(ZoneError::InvalidWrite));
        z.write(MIB, 2 * MIB).unwrap();
        assert_eq!(z.state(0), ZoneState::Full);
        assert_eq!((z.open_zones(), z.active_zones()), (0, 0));
        assert_eq!(z.write(3 * MIB, 4096), Err(ZoneError::Full));
        // past the capacity of zone 1
        assert_eq!(z.write(4 * MIB, 3 * MIB + 4096), Err(ZoneError::Boundary));
        assert_eq!(z.counters.errors, 4);
    }

    #[test]
    fn open_and_active_limits_give_their_statuses() {
        let mut z = zones(2, 3);
        z.write(0, 4096).unwrap();
        z.write(4 * MIB, 4096).unwrap();
        // a third open zone: the open limit
        assert_eq!(z.write(8 * MIB, 4096), Err(ZoneError::TooManyOpen));
        assert_eq!(ZoneError::TooManyOpen.status(), 0x1be);
        // closing one makes room; the closed zone stays active
        z.close(0).unwrap();
        assert_eq!(z.state(0), ZoneState::Closed);
        z.write(8 * MIB, 4096).unwrap();
        assert_eq!((z.open_zones(), z.active_zones()), (2, 3));
        z.close(1).unwrap();
        // three active: a fourth zone cannot become active
        assert_eq!(z.write(12 * MIB, 4096), Err(ZoneError::TooManyActive));
        // the closed zone reopens by a write at its pointer
        z.write(4096, 4096).unwrap();
        assert_eq!(z.state(0), ZoneState::ImplicitOpen);
    }

    #[test]
    fn reset_finish_and_append() {
        let mut z = zones(1, 1);
        assert_eq!(z.append(1, 8192), Ok(4 * MIB));
        assert_eq!(z.append(1, 4096), Ok(4 * MIB + 8192));
        assert_eq!(z.write_pointer(1), 12288);
        assert_eq!(z.append(2, 4096), Err(ZoneError::TooManyActive));
        z.finish(1).unwrap();
        assert_eq!(z.state(1), ZoneState::Full);
        assert_eq!(z.open(1), Err(ZoneError::InvalidTransition));
        assert_eq!(z.trim(4 * MIB, 4 * MIB), Ok(1..2));
        assert_eq!((z.state(1), z.write_pointer(1)), (ZoneState::Empty, 0));
        assert_eq!(z.trim(4 * MIB, 4096), Err(ZoneError::InvalidField));
        z.open(3).unwrap();
        assert_eq!(z.state(3), ZoneState::ExplicitOpen);
        // an opened zone closed with nothing written is Empty again
        z.close(3).unwrap();
        assert_eq!((z.state(3), z.active_zones()), (ZoneState::Empty, 0));
        assert_eq!(z.counters.resets, 1);
        assert_eq!(z.counters.appends, 2);
    }

    #[test]
    fn validation_names_the_key() {
        let mut c = zones(1, 1).cfg;
        c.zone_capacity_bytes = 5 * MIB;
        let e = c.validate(32 * MIB, 4096).unwrap_err().to_string();
        assert!(e.contains("zone_capacity_bytes"), "{e}");
        let c = zones(1, 1).cfg;
        let e = c.validate(30 * MIB, 4096).unwrap_err().to_string();
        assert!(e.contains("capacity_bytes"), "{e}");
    }
}
