//! What a device reports at the end of a run: utilisation of each resource,
//! power and energy by component, wear, and class-specific counters.

use serde::Serialize;

/// Utilisation of one resource (busy time / elapsed time).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Utilisation {
    /// Resource name, e.g. `link.read`, `controller.3`.
    pub resource: String,
    /// Fraction of elapsed time busy, 0..=1 (can exceed 1 for pools, where
    /// it is divided by the pool size first, so it stays within 0..=1).
    pub busy: f64,
}

/// Average power and energy of one component over a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Power {
    /// Component name, as in the Moneta power table.
    pub component: String,
    /// Average power in watts.
    pub avg_w: f64,
    /// Energy in joules.
    pub energy_j: f64,
}

/// Wear of the media: writes per line (PCM) or erases per block (flash).
#[derive(Clone, Debug, Serialize, PartialEq, Default)]
pub struct Wear {
    /// What is counted ("line writes", "block erases").
    pub unit: String,
    /// Number of units tracked.
    pub units: u64,
    /// Largest count on one unit.
    pub max: u64,
    /// Mean count per unit.
    pub mean: f64,
}

/// Everything a device reports.
#[derive(Clone, Debug, Serialize, PartialEq, Default)]
pub struct DeviceReport {
    /// Utilisation per resource, in a stable order.
    pub utilisation: Vec<Utilisation>,
    /// Power per component, in a stable order.
    pub power: Vec<Power>,
    /// Media wear, when the medium wears.
    pub wear: Option<Wear>,
    /// Class-specific counters in a stable order (write amplification, GC
    /// runs, cache hits...).
    pub counters: Vec<(String, f64)>,
}

impl DeviceReport {
    /// Total energy over all components, joules.
    pub fn total_energy_j(&self) -> f64 {
        self.power.iter().map(|p| p.energy_j).sum()
    }
    /// Total average power, watts.
    pub fn total_power_w(&self) -> f64 {
        self.power.iter().map(|p| p.avg_w).sum()
    }
    /// Merge another report into this one, prefixing its names (used by
    /// composite devices such as RAID-0).
    pub fn absorb(&mut self, prefix: &str, other: DeviceReport) {
        for mut u in other.utilisation {
            u.resource = format!("{prefix}{}", u.resource);
            self.utilisation.push(u);
        }
        for mut p in other.power {
            p.component = format!("{prefix}{}", p.component);
            self.power.push(p);
        }
        if let Some(w) = other.wear {
            match &mut self.wear {
                None => self.wear = Some(w),
                Some(mine) => {
                    let units = mine.units + w.units;
                    if units > 0 {
                        mine.mean = (mine.mean * mine.units as f64 + w.mean * w.units as f64)
                            / units as f64;
                    }
                    mine.units = units;
                    mine.max = mine.max.max(w.max);
                }
            }
        }
        for (k, v) in other.counters {
            self.counters.push((format!("{prefix}{k}"), v));
        }
    }
}
