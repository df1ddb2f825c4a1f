//! The disk's zoned geometry and seek curve: where a sector lies, how long
//! a seek takes, where the platter is at a given time, and how far a
//! transfer streams with head and cylinder switches.

use crate::config::ConfigError;
use crate::device::Nanos;

use super::config::DiskConfig;

/// Zoned geometry and the fitted seek curve.
#[derive(Clone, Debug)]
pub struct Geometry {
    surfaces: u64,
    pub(super) rev_ns: u64,
    /// Per zone: first LBA, first cylinder, sectors per track.
    zones: Vec<(u64, u64, u64)>,
    cyl_per_zone: u64,
    pub(super) cylinders: u64,
    /// Seek coefficients (ns): a + b sqrt(d) + c d.
    seek: [f64; 3],
    head_switch_ns: u64,
    track_to_track_ns: u64,
}

/// Where an LBA lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    /// Cylinder.
    pub cyl: u64,
    /// Surface.
    pub head: u64,
    /// Sector within the track.
    pub sector: u64,
    /// Sectors on this track.
    pub spt: u64,
    /// Zone.
    pub zone: usize,
}

impl Geometry {
    /// Lay out `capacity` bytes and fit the seek curve.
    pub fn new(cfg: &DiskConfig, capacity: u64) -> Result<Self, ConfigError> {
        let z = cfg.zones as u64;
        let (outer, inner) = (
            cfg.sectors_per_track_outer as u64,
            cfg.sectors_per_track_inner as u64,
        );
        let spt: Vec<u64> = (0..z)
            .map(|i| {
                if z == 1 {
                    outer
                } else {
                    outer - (outer - inner) * i / (z - 1)
                }
            })
            .collect();
        let sectors = capacity.div_ceil(cfg.sector_bytes);
        let per_cyl_sum: u64 = spt.iter().sum::<u64>() * cfg.surfaces as u64;
        let cz = sectors.div_ceil(per_cyl_sum).max(1);
        let mut zones = Vec::with_capacity(z as usize);
        let mut lba = 0;
        for (i, &s) in spt.iter().enumerate() {
            zones.push((lba, i as u64 * cz, s));
            lba += cz * cfg.surfaces as u64 * s;
        }
        let cylinders = cz * z;
        let c = (cylinders - 1).max(1) as f64;
        let (t1, ta, tf) = (
            cfg.seek_track_to_track_ns as f64,
            cfg.seek_average_ns as f64,
            cfg.seek_full_stroke_ns as f64,
        );
        // a + b + c = t1; a + b sqrt(C) + c C = tf; a + b (8/15) sqrt(C) + c C/3 = ta
        let s = c.sqrt();
        let (r1, r2) = (tf - t1, ta - t1);
        let (m11, m12) = (s - 1.0, c - 1.0);
        let (m21, m22) = (8.0 / 15.0 * s - 1.0, c / 3.0 - 1.0);
        let det = m11 * m22 - m12 * m21;
        let b = (r1 * m22 - m12 * r2) / det;
        let cc = (m11 * r2 - m21 * r1) / det;
        let a = t1 - b - cc;
        if !(b >= 0.0 && cc >= 0.0 && a >= 0.0 && det.is_finite()) {
            return Err(ConfigError::Invalid {
                field: "disk.seek_*".into(),
                message: format!(
                    "no monotone curve a + b sqrt(d) + c d fits track-to-track {t1} ns, average {ta} ns, full stroke {tf} ns over {cylinders} cylinders (a={a:.0}, b={b:.1}, c={cc:.4})"
                ),
            });
        }
        Ok(Self {
            surfaces: cfg.surfaces as u64,
            rev_ns: (60_000_000_000u64).div_ceil(cfg.rpm as u64),
            zones,
            cyl_per_zone: cz,
            cylinders,
            seek: [a, b, cc],
            head_switch_ns: cfg.head_switch_ns,
            track_to_track_ns: cfg.seek_track_to_track_ns,
        })
    }

    /// Cylinders.
    pub fn cylinders(&self) -> u64 {
        self.cylinders
    }

    /// One revolution, ns.
    pub fn revolution_ns(&self) -> u64 {
        self.rev_ns
    }

    /// Sectors the geometry holds.
    pub fn sectors(&self) -> u64 {
        let &(l, _, s) = self.zones.last().expect("at least one zone");
        l + self.cyl_per_zone * self.surfaces * s
    }

    /// Seek time for a move of `d` cylinders.
    #[inline]
    pub fn seek_ns(&self, d: u64) -> u64 {
        if d == 0 {
            return 0;
        }
        let d = d as f64;
        (self.seek[0] + self.seek[1] * d.sqrt() + self.seek[2] * d).round() as u64
    }

    /// The seek coefficients (a, b, c) in ns.
    pub fn seek_coefficients(&self) -> [f64; 3] {
        self.seek
    }

    /// Location of `lba`.
    #[inline]
    pub fn locate(&self, lba: u64) -> Loc {
        let zi = match self.zones.binary_search_by(|z| z.0.cmp(&lba)) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let (l0, c0, spt) = self.zones[zi];
        let rel = lba - l0;
        let track = rel / spt;
        Loc {
            cyl: c0 + track / self.surfaces,
            head: track % self.surfaces,
            sector: rel % spt,
            spt,
            zone: zi,
        }
    }

    /// Time within a revolution at which sector 0 of the track passes the
    /// head: the skew accumulated by the switches before it.
    #[inline]
    fn skew(&self, cyl: u64, head: u64) -> u64 {
        let hs = (cyl * (self.surfaces - 1) + head) as u128 * self.head_switch_ns as u128;
        let cs = cyl as u128 * self.track_to_track_ns as u128;
        ((hs + cs) % self.rev_ns as u128) as u64
    }

    #[inline]
    fn sector_time(&self, sector: u64, spt: u64) -> u64 {
        (sector as u128 * self.rev_ns as u128 / spt as u128) as u64
    }

    /// Time within a revolution at which the start of sector `loc` passes
    /// the head.
    #[inline]
    pub fn phase(&self, loc: &Loc) -> u64 {
        (self.skew(loc.cyl, loc.head) + self.sector_time(loc.sector, loc.spt)) % self.rev_ns
    }

    /// Rotational wait from time `t` until sector `loc` is under the head.
    #[inline]
    pub fn rotational_wait(&self, t: Nanos, loc: &Loc) -> u64 {
        let target =
            (self.skew(loc.cyl, loc.head) + self.sector_time(loc.sector, loc.spt)) % self.rev_ns;
        let phase = t % self.rev_ns;
        (target + self.rev_ns - phase) % self.rev_ns
    }

    /// Time to stream `n` sectors from `lba` once positioned, and where the
    /// head ends.
    pub fn stream(&self, lba: u64, n: u64) -> (u64, Loc) {
        let mut loc = self.locate(lba);
        let mut left = n;
        let mut t = 0;
        loop {
            let m = left.min(loc.spt - loc.sector);
            t += self.sector_time(loc.sector + m, loc.spt) - self.sector_time(loc.sector, loc.spt);
            left -= m;
            if left == 0 {
                return (t, loc);
            }
            let next = lba + n - left;
            let nl = self.locate(next);
            t += if nl.cyl == loc.cyl {
                self.head_switch_ns
            } else {
                self.track_to_track_ns
            };
            loc = nl;
        }
    }

    /// Sectors streamed from `lba` within `dt` ns (at most `max`).
    pub fn streamed(&self, lba: u64, dt: u64, max: u64) -> u64 {
        let mut loc = self.locate(lba);
        let mut got = 0;
        let mut left_t = dt;
        while got < max {
            let rest = loc.spt - loc.sector;
            let t_rest = self.sector_time(loc.spt, loc.spt) - self.sector_time(loc.sector, loc.spt);
            if left_t < t_rest {
                let base = self.sector_time(loc.sector, loc.spt);
                // sectors whose end passed by base + left_t
                let k = (((base + left_t) as u128 * loc.spt as u128 / self.rev_ns as u128) as u64)
                    .saturating_sub(loc.sector);
                return (got + k.min(rest)).min(max);
            }
            got += rest;
            left_t -= t_rest;
            let nl = self.locate(lba + got);
            let sw = if nl.cyl == loc.cyl {
                self.head_switch_ns
            } else {
                self.track_to_track_ns
            };
            if left_t < sw {
                return got.min(max);
            }
            left_t -= sw;
            loc = nl;
        }
        max
    }
}
