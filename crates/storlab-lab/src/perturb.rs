//! How the sensitivity check makes devices slower ([`crate::sensitivity`]
//! re-exports all of it): the perturbations, the parameters per device
//! class ([`KEYS`]) and the `--set` overrides that apply them. Below the
//! studies: `paging` and `apps-paging` append the same overrides to the
//! swap devices they load.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

use crate::error::{LabError, Result};
use crate::measure::Spec;

/// How the devices are made slower.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Perturbation {
    /// Media latency x2: the time of an access to the storage medium
    /// (array read and write, seek and rotation, ...).
    Latency,
    /// Bandwidth /2: the device's links, buses and media streaming rates.
    Bandwidth,
}

impl Perturbation {
    /// Both, in the order the check reports them.
    pub const ALL: [Perturbation; 2] = [Perturbation::Latency, Perturbation::Bandwidth];

    /// As the report says it.
    pub fn label(self) -> &'static str {
        match self {
            Perturbation::Latency => "media latency x2",
            Perturbation::Bandwidth => "bandwidth /2",
        }
    }
}

/// How a value is scaled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Factor {
    /// x2.
    Double,
    /// /2.
    Halve,
}

/// What a [`Key`] does to a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Scale the value at this dotted key: a number, every number of an
    /// array (one per page type), or both sides of a `{ read, write }`.
    /// A key the device does not set (an optional one) or whose value is
    /// 0 is left alone: 0 x 2 is 0, and 0 means no limit where a rate may
    /// be 0.
    Scale(&'static str, Factor),
    /// Perturb the devices named at `devices` (a preset, or a list of
    /// them) by their own classes' keys, through the override list `set`
    /// (the perturbation is appended to what it already holds).
    Nested {
        /// Where the device or devices are named.
        devices: &'static str,
        /// Their override list.
        set: &'static str,
    },
}

/// One line of [`KEYS`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Key {
    /// The device class (`pcie-array`, ...; `swap` is a `fixed` device
    /// with a `[swap]` table, the swap path's host memory).
    pub class: &'static str,
    /// Which perturbation.
    pub perturbation: Perturbation,
    /// What is done.
    pub action: Action,
    /// Why this is the class's parameter, in one line.
    pub why: &'static str,
}

const fn key(
    class: &'static str,
    perturbation: Perturbation,
    action: Action,
    why: &'static str,
) -> Key {
    Key {
        class,
        perturbation,
        action,
        why,
    }
}

use Action::{Nested, Scale};
use Factor::{Double, Halve};
use Perturbation::{Bandwidth, Latency};

/// The main parameters of each device class: what media latency x2 and
/// bandwidth /2 change. Every class has a line for both perturbations.
pub const KEYS: &[Key] = &[
    // PCIe NVM arrays (Moneta, HASTE)
    key("pcie-array", Latency, Scale("media.read_ns", Double),
        "the NVM array's read time per row opened"),
    key("pcie-array", Latency, Scale("media.write_ns", Double),
        "the NVM array's write time per row written"),
    key("pcie-array", Latency, Scale("pcie.memory_latency_ns", Double),
        "the memory controller's access pipeline to first data, charged to the media"),
    key("pcie-array", Bandwidth, Scale("pcie.lane_bytes_per_s", Halve),
        "the host link (lanes x this rate per direction)"),
    key("pcie-array", Bandwidth, Scale("pcie.ring_bytes_per_s", Halve),
        "the ring between the scheduler's buffers and the memory controllers"),
    key("pcie-array", Bandwidth, Scale("pcie.controller_bytes_per_s", Halve),
        "each memory controller's streaming rate once a row is open (the media's bandwidth)"),
    // NVM on the DDR bus (a RAM disk with injected delay)
    key("ddr", Latency, Scale("media.read_ns", Double),
        "the RAM disk's array time per missed line read (ddr.dram_ns is the host's own DRAM, not the device)"),
    key("ddr", Latency, Scale("media.write_ns", Double),
        "the RAM disk's array time per line written"),
    key("ddr", Bandwidth, Scale("ddr.bus_bytes_per_s", Halve),
        "the DDR channels' peak, which the copy's lines cross"),
    // NVMM (PMEP's knobs)
    key("nvmm", Latency, Scale("nvmm.l_read_ns", Double),
        "PMEP's L_READ, the emulated read latency"),
    key("nvmm", Latency, Scale("nvmm.dram_read_ns", Double),
        "PMEP's floor under L_READ: the read latency delivered is the larger of the two, so both double"),
    key("nvmm", Latency, Scale("nvmm.l_wbar_ns", Double),
        "L_WBAR, the persistent write barrier: the NVMM's write latency as a sync sees it"),
    key("nvmm", Bandwidth, Scale("nvmm.dram_bw_bytes_per_s", Halve),
        "the DRAM bandwidth Th_BW scales (Th_BW itself cannot always halve: its floor is 1/16)"),
    // SSDs (flash, and PCM behind an SSD controller)
    key("ssd", Latency, Scale("ssd.nand.read_ns", Double),
        "the array's read time, per page type"),
    key("ssd", Latency, Scale("ssd.nand.program_ns", Double),
        "the array's program time, per page type"),
    key("ssd", Latency, Scale("ssd.nand.erase_ns", Double),
        "a block erase (PCM has none: 0, left alone)"),
    key("ssd", Bandwidth, Scale("ssd.link_bytes_per_s", Halve),
        "the host interface (SATA, PCIe), each direction"),
    key("ssd", Bandwidth, Scale("ssd.nand.bus_bytes_per_s", Halve),
        "each channel's bus to its chips"),
    // mechanical disks
    key("disk", Latency, Scale("disk.seek_track_to_track_ns", Double),
        "the seek curve's shortest point"),
    key("disk", Latency, Scale("disk.seek_average_ns", Double),
        "the seek curve's average"),
    key("disk", Latency, Scale("disk.seek_full_stroke_ns", Double),
        "the seek curve's longest point"),
    key("disk", Latency, Scale("disk.write_settle_ns", Double),
        "a write's extra settling after a seek"),
    key("disk", Latency, Scale("disk.head_switch_ns", Double),
        "a switch to another surface"),
    key("disk", Latency, Scale("disk.rpm", Halve),
        "half the spindle speed: twice the rotational delay"),
    key("disk", Latency, Scale("disk.sectors_per_track_outer", Double),
        "with twice the sectors per track at half the speed the media's transfer rate stays: only positioning slows"),
    key("disk", Latency, Scale("disk.sectors_per_track_inner", Double),
        "as sectors_per_track_outer"),
    key("disk", Bandwidth, Scale("disk.sectors_per_track_outer", Halve),
        "half the sectors per track at the same speed: the media's transfer rate halves, rotational delay stays"),
    key("disk", Bandwidth, Scale("disk.sectors_per_track_inner", Halve),
        "as sectors_per_track_outer"),
    key("disk", Bandwidth, Scale("disk.link_bytes_per_s", Halve),
        "the SATA link"),
    // Optane PMem (dcpmm): its 3D XPoint media and its DDR channels
    key("dcpmm", Latency, Scale("dcpmm.media_read_ns", Double),
        "a 256 B media read"),
    key("dcpmm", Latency, Scale("dcpmm.media_write_ns", Double),
        "a 256 B media write"),
    key("dcpmm", Bandwidth, Scale("dcpmm.bus_bytes_per_s", Halve),
        "the DDR channels"),
    key("dcpmm", Bandwidth, Scale("dcpmm.media_units", Halve),
        "half the media accesses at once: half the media's rate at the same latency"),
    // CXL memory: the DRAM behind the link, the link, the DRAM channels
    key("cxl", Latency, Scale("cxl.dram_ns", Double),
        "the DRAM access (a load's latency to DRAM)"),
    key("cxl", Bandwidth, Scale("cxl.lane_bytes_per_s", Halve),
        "the CXL link, both directions"),
    key("cxl", Bandwidth, Scale("cxl.dram_bytes_per_s", Halve),
        "the device's DRAM channels"),
    // fixed-latency devices (null, dram-mem)
    key("fixed", Latency, Scale("device.latency_ns", Double),
        "every access's latency (null's is 0 and stays so)"),
    key("fixed", Bandwidth, Scale("device.bandwidth_bytes_per_s", Halve),
        "the one channel all accesses share, when the preset has one (null has none: no bandwidth key, nothing to halve)"),
    // the swap path's host memory (swap-linux): its swap device
    key("swap", Latency, Nested { devices: "swap.device", set: "swap.device_set" },
        "the swap device, by its own class; the host's DRAM (device.latency_ns) is not the device under test and \
         stays, as `storlab sim --app` leaves it"),
    key("swap", Bandwidth, Nested { devices: "swap.device", set: "swap.device_set" },
        "the swap device, by its own class; the host's DRAM has no bandwidth key"),
    // RAID-0 over member presets
    key("raid0", Latency, Nested { devices: "raid.members", set: "raid.member_set" },
        "each member, by its own class (the controller's command and link latencies are not media: no key of its own)"),
    key("raid0", Bandwidth, Nested { devices: "raid.members", set: "raid.member_set" },
        "each member, by its own class"),
    key("raid0", Bandwidth, Scale("raid.controller.link_bytes_per_s", Halve),
        "the caching controller's link, when the array has a controller"),
    // a block cache on one device over another
    key("tier", Latency, Nested { devices: "tier.cache", set: "tier.cache_set" },
        "the cache device, by its own class (the tier's lookup is host software: no key of its own)"),
    key("tier", Latency, Nested { devices: "tier.backing", set: "tier.backing_set" },
        "the backing device, by its own class"),
    key("tier", Bandwidth, Nested { devices: "tier.cache", set: "tier.cache_set" },
        "the cache device, by its own class (no bandwidth key of its own)"),
    key("tier", Bandwidth, Nested { devices: "tier.backing", set: "tier.backing_set" },
        "the backing device, by its own class"),
];

/// The class [`KEYS`] lists `cfg` under.
pub fn class_of(cfg: &SystemConfig) -> &'static str {
    if cfg.swap.is_some() {
        "swap"
    } else {
        cfg.device.class.name()
    }
}

/// The `--set` overrides that make `device` (with its `base` overrides)
/// slower by `p`, to be appended after `base`. Checked: the device loads
/// with them, and each nested device (a RAID member, a tier's devices, a
/// swap device) loads with its own; a key that does not load is an
/// error, never skipped.
pub fn overrides(device: &str, base: &[String], p: Perturbation) -> Result<Vec<String>> {
    overrides_in(&PresetStore::default(), device, base, p, 0)
}

/// [`overrides`] with presets from `store`.
pub fn overrides_in(
    store: &PresetStore,
    device: &str,
    base: &[String],
    p: Perturbation,
    depth: u32,
) -> Result<Vec<String>> {
    if depth > 4 {
        return Err(LabError::Sensitivity(format!(
            "'{device}': devices nest more than 4 deep"
        )));
    }
    let load = |ov: &[String]| {
        SystemConfig::load(store, device, ov).map_err(|source| LabError::Config {
            device: device.to_string(),
            overrides: ov.to_vec(),
            source: Box::new(source),
        })
    };
    let (_, cfg) = load(base)?;
    let class = class_of(&cfg);
    let tree = serde_json::to_value(&cfg).expect("a configuration serializes");
    let bad = |k: &str, m: String| LabError::Sensitivity(format!("'{device}' {base:?}: {k}: {m}"));
    let mut out = Vec::new();
    for k in KEYS
        .iter()
        .filter(|k| k.class == class && k.perturbation == p)
    {
        match k.action {
            Scale(path, f) => {
                if let Some(v) = scaled(lookup(&tree, path), f).map_err(|m| bad(path, m))? {
                    out.push(format!("{path}={v}"));
                }
            }
            Nested { devices, set } => {
                let names: Vec<String> = match lookup(&tree, devices) {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(a) => a
                        .iter()
                        .map(|v| v.as_str().map(String::from))
                        .collect::<Option<_>>()
                        .ok_or_else(|| bad(devices, "not a list of presets".into()))?,
                    Value::Null => continue,
                    v => return Err(bad(devices, format!("not a preset: {v}"))),
                };
                let held: Vec<String> = match lookup(&tree, set) {
                    Value::Null => Vec::new(),
                    Value::Array(a) => a
                        .iter()
                        .map(|v| v.as_str().map(String::from))
                        .collect::<Option<_>>()
                        .ok_or_else(|| bad(set, "not a list of overrides".into()))?,
                    v => return Err(bad(set, format!("not a list of overrides: {v}"))),
                };
                let mut added: Option<(String, Vec<String>)> = None;
                for n in names.iter().collect::<BTreeSet<_>>() {
                    let o = overrides_in(store, n, &held, p, depth + 1)?;
                    match &added {
                        Some((m, a)) if *a != o => {
                            return Err(bad(
                                devices,
                                format!(
                                    "'{m}' and '{n}' take different overrides ({a:?}, {o:?}) through the one list {set}"
                                ),
                            ))
                        }
                        _ => added = Some((n.clone(), o)),
                    }
                }
                if let Some((_, a)) = added.filter(|(_, a)| !a.is_empty()) {
                    let list: Vec<String> = held.iter().chain(&a).map(|s| toml_string(s)).collect();
                    out.push(format!("{set}=[{}]", list.join(", ")));
                }
            }
        }
    }
    let mut all = base.to_vec();
    all.extend(out.iter().cloned());
    load(&all)?;
    Ok(out)
}

/// `spec` with its device slower by `p`: the perturbation's overrides
/// appended to its own.
pub fn perturb_spec(spec: &Spec, p: Perturbation) -> Result<Spec> {
    let mut s = spec.clone();
    s.overrides
        .extend(overrides(&spec.device, &spec.overrides, p)?);
    Ok(s)
}

/// The value at a dotted path of a serialized configuration (`Null` when
/// absent).
fn lookup<'a>(tree: &'a Value, path: &str) -> &'a Value {
    path.split('.')
        .fold(tree, |v, k| v.get(k).unwrap_or(&Value::Null))
}

/// `v` scaled by `f`, as a TOML value; `None` when there is nothing to
/// scale (absent, or every number 0).
fn scaled(v: &Value, f: Factor) -> std::result::Result<Option<String>, String> {
    fn num(v: &Value, f: Factor) -> std::result::Result<(String, bool), String> {
        let Value::Number(n) = v else {
            return Err(format!("{v} is not a number"));
        };
        if let Some(x) = n.as_u64() {
            let y = match f {
                Factor::Double => x
                    .checked_mul(2)
                    .ok_or_else(|| format!("{x} x 2 overflows"))?,
                Factor::Halve if x == 1 => return Err("1 cannot be halved".into()),
                Factor::Halve => x / 2,
            };
            Ok((y.to_string(), x != 0))
        } else {
            let x = n.as_f64().ok_or_else(|| format!("{n} is not a number"))?;
            let y = match f {
                Factor::Double => x * 2.0,
                Factor::Halve => x / 2.0,
            };
            // `{:?}` keeps a decimal point or an exponent: a TOML float
            Ok((format!("{y:?}"), x != 0.0))
        }
    }
    let (text, nonzero) = match v {
        Value::Null => return Ok(None),
        Value::Array(a) => {
            let parts = a
                .iter()
                .map(|x| num(x, f))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            (
                format!(
                    "[{}]",
                    parts
                        .iter()
                        .map(|p| p.0.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                parts.iter().any(|p| p.1),
            )
        }
        Value::Object(o) => {
            let mut parts = Vec::new();
            let mut any = false;
            for (k, x) in o {
                let (t, nz) = num(x, f)?;
                parts.push(format!("{k} = {t}"));
                any |= nz;
            }
            (format!("{{ {} }}", parts.join(", ")), any)
        }
        v => num(v, f)?,
    };
    Ok(nonzero.then_some(text))
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            '\r' => o.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(o, "\\u{:04X}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_scale_as_toml() {
        let s = |v: Value, f| scaled(&v, f).unwrap();
        assert_eq!(s(serde_json::json!(68), Double).as_deref(), Some("136"));
        assert_eq!(s(serde_json::json!(7200), Halve).as_deref(), Some("3600"));
        assert_eq!(
            s(serde_json::json!(25.6e9), Halve).as_deref(),
            Some("12800000000.0")
        );
        assert_eq!(
            s(serde_json::json!([25000, 0]), Double).as_deref(),
            Some("[50000, 0]")
        );
        assert_eq!(
            s(serde_json::json!({"read": 100, "write": 0}), Double).as_deref(),
            Some("{ read = 200, write = 0 }")
        );
        assert_eq!(s(serde_json::json!(0), Double), None);
        assert_eq!(s(serde_json::json!([0]), Double), None);
        assert_eq!(s(Value::Null, Double), None);
        assert!(scaled(&serde_json::json!(1), Halve).is_err());
        assert!(scaled(&serde_json::json!("x"), Halve).is_err());
    }

    #[test]
    fn strings_quote_as_toml() {
        assert_eq!(toml_string("a=\"b\\c\""), r#""a=\"b\\c\"""#);
    }
}
