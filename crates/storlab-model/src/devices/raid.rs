//! RAID-0: striping over any devices.
//!
//! A request is cut at stripe boundaries; the pieces that fall on one
//! member are contiguous in that member's address space (rows follow each
//! other), so each member receives one sub-request per request (with
//! `member_max_request_bytes`, each member sits behind a request-size limit,
//! [`crate::host::split`], which cuts that piece into requests of at most that
//! size, all submitted at once), and the request completes when its last
//! piece does. Its breakdown is
//! that last member's (every piece starts when the request arrives). A
//! flush goes to every member. Members are full devices built from their
//! own presets, so a RAID-0 of RAID-0s, or of SSDs behind a controller
//! cache ([`crate::devices::tier::controller_cache`]), composes the same way.
//!
//! # Wake-up token convention
//!
//! The host and the simulator reserve the two top bits of a token (bit 63:
//! host events, bit 62: simulator thread events), so **every device's
//! tokens must stay below 2^62**. A wrapping layer routes its children's
//! tokens by shifting them left and putting the child's identity in the low
//! bits: RAID-0 uses `ceil(log2(members))` bits (`token = child_token <<
//! bits | member`); the controller cache has no events of its own and
//! passes its device's tokens through unchanged. Each level of wrapping
//! therefore takes a few bits from the child's budget: a leaf device's
//! tokens must stay below `2^(62 - bits used by the layers above it)`. The
//! leaf devices here use at most 2 bits of kind plus a 32-bit index (<
//! 2^34), leaving 28 bits for wrapping. Debug builds assert the bound at
//! every level.

use serde::{Deserialize, Serialize};

use crate::breakdown::Breakdown;
use crate::config::{check_range, ConfigError};
use crate::device::{Cx, DevRequest, Device, Nanos, Op};
use crate::devices::tier::controller_cache::{CacheConfig, ControllerCache};
use crate::host::split::SplitRequests;
use crate::report::DeviceReport;

/// `[raid]`: RAID-0 over member presets.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaidConfig {
    /// Member presets (names or files), each built as a full device.
    pub members: Vec<String>,
    /// Overrides applied to every member (`key.path=value`).
    #[serde(default)]
    pub member_set: Vec<String>,
    /// Striping unit.
    pub stripe_bytes: u64,
    /// A hardware controller with its own link and cache in front of the
    /// set; absent for software RAID (md), whose CPU cost is in `[host]`.
    pub controller: Option<CacheConfig>,
    /// Largest request a member receives, bytes: a member's piece of a
    /// request is cut into requests of at most this size, all submitted at
    /// once (Linux: the member queue's `max_sectors_kb`; md stacks its
    /// members' limit). 0 (the default): one piece per member, any size.
    #[serde(default)]
    pub member_max_request_bytes: u64,
}

/// Validate the RAID table (members are checked when they are built).
pub fn validate(cfg: &RaidConfig) -> Result<(), ConfigError> {
    check_range("raid.members (count)", cfg.members.len(), 1, 64)?;
    check_range("raid.stripe_bytes", cfg.stripe_bytes, 512, 1 << 30)?;
    if cfg.member_max_request_bytes != 0 {
        check_range(
            "raid.member_max_request_bytes",
            cfg.member_max_request_bytes,
            512,
            1 << 30,
        )?;
    }
    if let Some(c) = &cfg.controller {
        crate::devices::tier::controller_cache::validate(c)?;
    }
    Ok(())
}

/// Assemble a RAID-0 set from built members; `capacity` (the preset's)
/// must not exceed what the members hold.
pub fn build(
    cfg: &RaidConfig,
    members: Vec<Box<dyn Device>>,
    capacity: u64,
) -> Result<Box<dyn Device>, ConfigError> {
    // the members' request limit is the same cut the host makes in front
    // of its device (one piece of code: `host/split.rs`)
    let members = members
        .into_iter()
        .map(|m| SplitRequests::wrap(m, cfg.member_max_request_bytes))
        .collect();
    let set = Raid0::new(members, cfg.stripe_bytes);
    if capacity > set.capacity() {
        return Err(ConfigError::Invalid {
            field: "device.capacity_bytes".into(),
            message: format!(
                "{capacity} is more than the {} bytes the members hold",
                set.capacity()
            ),
        });
    }
    let set = set.limit(capacity);
    Ok(match &cfg.controller {
        Some(c) => Box::new(ControllerCache::new(c.clone(), Box::new(set))),
        None => Box::new(set),
    })
}

/// The largest token any device may use.
pub const TOKEN_LIMIT: u64 = 1 << 62;

#[derive(Clone, Copy, Debug, Default)]
struct RReq {
    id: u64,
    pending: u32,
    at: Nanos,
    bd: Breakdown,
}

/// A RAID-0 set.
pub struct Raid0 {
    members: Vec<Box<dyn Device>>,
    stripe: u64,
    bits: u32,
    capacity: u64,
    reqs: Vec<RReq>,
    free: Vec<u32>,
    ccx: Cx,
    parts: Vec<(usize, u64, u64)>,
    splits: u64,
    requests: u64,
}

impl Raid0 {
    /// Stripe `members` in units of `stripe_bytes`. The capacity is the
    /// smallest member's, rounded down to whole stripes, times the member
    /// count.
    pub fn new(members: Vec<Box<dyn Device>>, stripe_bytes: u64) -> Self {
        assert!(
            !members.is_empty() && stripe_bytes > 0,
            "RAID-0 needs members and a stripe"
        );
        let n = members.len() as u64;
        let per =
            members.iter().map(|m| m.capacity()).min().unwrap_or(0) / stripe_bytes * stripe_bytes;
        let bits = (64 - (n - 1).leading_zeros()).max(1);
        Self {
            members,
            stripe: stripe_bytes,
            bits,
            capacity: per * n,
            reqs: Vec::new(),
            free: Vec::new(),
            ccx: Cx::default(),
            parts: Vec::new(),
            splits: 0,
            requests: 0,
        }
    }

    /// Expose only the first `capacity` bytes (a volume smaller than the
    /// members allow).
    pub fn limit(mut self, capacity: u64) -> Self {
        self.capacity = self.capacity.min(capacity);
        self
    }

    /// The members.
    pub fn members(&self) -> &[Box<dyn Device>] {
        &self.members
    }

    /// Bits of a token used for the member index.
    pub fn token_bits(&self) -> u32 {
        self.bits
    }

    /// Where byte `off` of the set lives: (member, offset in it).
    #[inline]
    pub fn map(&self, off: u64) -> (usize, u64) {
        let n = self.members.len() as u64;
        let s = off / self.stripe;
        ((s % n) as usize, (s / n) * self.stripe + off % self.stripe)
    }

    /// Forward what member `m` asked for during a call.
    fn drain(&mut self, m: usize, cx: &mut Cx) {
        let bits = self.bits;
        for (t, tok) in self.ccx.wakeups.drain(..) {
            debug_assert!(
                tok < TOKEN_LIMIT >> bits,
                "member token {tok:#x} leaves no room for {bits} routing bits"
            );
            cx.wake(t, (tok << bits) | m as u64);
        }
        let mut done = std::mem::take(&mut self.ccx.completions);
        for c in done.drain(..) {
            let ri = c.id as usize;
            let r = &mut self.reqs[ri];
            if c.at >= r.at {
                r.at = c.at;
                r.bd = c.breakdown;
            }
            r.pending -= 1;
            if r.pending == 0 {
                cx.done(r.id, r.at, r.bd);
                self.free.push(ri as u32);
            }
        }
        self.ccx.completions = done;
    }
}

impl Device for Raid0 {
    fn submit(&mut self, now: Nanos, req: DevRequest, cx: &mut Cx) {
        let n = self.members.len();
        let ri = match self.free.pop() {
            Some(i) => i,
            None => {
                self.reqs.push(RReq::default());
                (self.reqs.len() - 1) as u32
            }
        };
        self.reqs[ri as usize] = RReq {
            id: req.id,
            pending: 0,
            at: now,
            bd: Breakdown::default(),
        };
        self.requests += 1;
        // per member: (first offset, bytes)
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        if req.op == Op::Flush || req.len == 0 {
            for m in 0..n {
                parts.push((m, 0, 0));
            }
        } else {
            let end = req.offset + req.len;
            let mut off = req.offset;
            while off < end {
                let (m, moff) = self.map(off);
                let len = (self.stripe - off % self.stripe).min(end - off);
                match parts.iter_mut().find(|p| p.0 == m) {
                    Some(p) => p.2 += len,
                    None => parts.push((m, moff, len)),
                }
                off += len;
                if parts.len() == n && off < end {
                    // every member has its piece: the rest extends them
                    let rest = end - off;
                    let rows = rest / (self.stripe * n as u64);
                    if rows > 0 {
                        for p in parts.iter_mut() {
                            p.2 += rows * self.stripe;
                        }
                        off += rows * self.stripe * n as u64;
                    }
                }
            }
        }
        if parts.len() > 1 {
            self.splits += 1;
        }
        self.reqs[ri as usize].pending = parts.len() as u32;
        for &(m, moff, len) in &parts {
            let sub = DevRequest {
                id: ri as u64,
                op: req.op,
                offset: moff,
                len,
                fua: req.fua,
                placement: req.placement,
            };
            let mut ccx = std::mem::take(&mut self.ccx);
            self.members[m].submit(now, sub, &mut ccx);
            self.ccx = ccx;
            self.drain(m, cx);
        }
        self.parts = parts;
    }

    fn on_event(&mut self, now: Nanos, token: u64, cx: &mut Cx) {
        let m = (token & ((1 << self.bits) - 1)) as usize;
        let mut ccx = std::mem::take(&mut self.ccx);
        self.members[m].on_event(now, token >> self.bits, &mut ccx);
        self.ccx = ccx;
        self.drain(m, cx);
    }

    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn volatile_write_cache(&self) -> bool {
        self.members.iter().any(|m| m.volatile_write_cache())
    }

    /// Any member holds its piece of the range (cut at stripe boundaries
    /// as requests are).
    fn volatile_holds(&self, offset: u64, len: u64) -> bool {
        let end = offset + len.max(1);
        let mut off = offset;
        while off < end {
            let n = (self.stripe - off % self.stripe).min(end - off);
            let (m, moff) = self.map(off);
            if self.members[m].volatile_holds(moff, n) {
                return true;
            }
            off += n;
        }
        false
    }

    fn report(&self, now: Nanos) -> DeviceReport {
        let mut r = DeviceReport {
            counters: vec![
                ("requests".into(), self.requests as f64),
                ("requests_split".into(), self.splits as f64),
                ("stripe_bytes".into(), self.stripe as f64),
            ],
            ..Default::default()
        };
        for (i, m) in self.members.iter().enumerate() {
            r.absorb(&format!("member{i}."), m.report(now));
        }
        r
    }
}
