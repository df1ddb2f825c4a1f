//! A whole system: host stack + device, assembled in one place from a
//! validated configuration (layers never build their own parents).

use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, PresetStore, Resolved};
use crate::device::Device;
use crate::devices::ddr::ramdisk::{DdrConfig, DdrRamDisk};
use crate::devices::fixed::FixedLatency;
use crate::devices::pcie_array::array::PcieArray;
use crate::devices::pcie_array::config::{PcieArrayConfig, PowerConfig};
use crate::host::config::HostConfig;
use crate::media::MediaConfig;

/// Device classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceClass {
    /// Non-volatile main memory with PMEP's knobs (docs/spec/nvmm.md).
    Nvmm,
    /// PCIe NVM array (HASTE, Moneta).
    PcieArray,
    /// DDR-attached RAM disk with injected delay.
    Ddr,
    /// Fixed latency, unlimited parallelism (`null`, tests).
    Fixed,
    /// Solid-state drive: NAND flash or PCM behind a controller and an FTL
    /// (`[ssd]`, `[ssd.nand]`, `[ssd.ftl]`).
    Ssd,
    /// Mechanical disk (`[disk]`).
    Disk,
    /// RAID-0 over member presets, optionally behind a caching controller
    /// (`[raid]`, `[raid.controller]`).
    Raid0,
    /// A block cache on one device in front of another (`[tier]`).
    Tier,
    /// DDR memory behind a CXL link (`[cxl]`, docs/spec/today.md).
    Cxl,
    /// Optane persistent memory on the DDR bus (`[dcpmm]`, docs/spec/today.md).
    Dcpmm,
}

impl DeviceClass {
    /// The keys (tables, or single keys) only this class reads. Every
    /// class has its line, so a class added later must say what it reads.
    fn own_keys(self) -> &'static [&'static str] {
        match self {
            DeviceClass::PcieArray => &["pcie", "media", "power"],
            DeviceClass::Ddr => &["ddr", "media"],
            // the swap model's memory is a fixed device (`swap::run`)
            DeviceClass::Fixed => &["device.latency_ns", "device.bandwidth_bytes_per_s", "swap"],
            DeviceClass::Nvmm => &["nvmm"],
            DeviceClass::Ssd => &["ssd"],
            DeviceClass::Disk => &["disk"],
            DeviceClass::Raid0 => &["raid"],
            DeviceClass::Tier => &["tier"],
            DeviceClass::Cxl => &["cxl"],
            DeviceClass::Dcpmm => &["dcpmm"],
        }
    }

    const ALL: [DeviceClass; 10] = [
        DeviceClass::Nvmm,
        DeviceClass::PcieArray,
        DeviceClass::Ddr,
        DeviceClass::Fixed,
        DeviceClass::Ssd,
        DeviceClass::Disk,
        DeviceClass::Raid0,
        DeviceClass::Tier,
        DeviceClass::Cxl,
        DeviceClass::Dcpmm,
    ];

    /// The class's name as presets write it (`pcie-array`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceClass::Nvmm => "nvmm",
            DeviceClass::PcieArray => "pcie-array",
            DeviceClass::Ddr => "ddr",
            DeviceClass::Fixed => "fixed",
            DeviceClass::Ssd => "ssd",
            DeviceClass::Disk => "disk",
            DeviceClass::Raid0 => "raid0",
            DeviceClass::Tier => "tier",
            DeviceClass::Cxl => "cxl",
            DeviceClass::Dcpmm => "dcpmm",
        }
    }

    /// The classes that read the key at `path`, or `None` when every
    /// class does (the host stack, the file system, the device's class and
    /// capacity).
    pub fn readers(path: &str) -> Option<Vec<DeviceClass>> {
        let within = |k: &str| path == k || path.starts_with(&format!("{k}."));
        let readers: Vec<DeviceClass> = Self::ALL
            .into_iter()
            .filter(|c| c.own_keys().iter().any(|k| within(k)))
            .collect();
        (!readers.is_empty()).then_some(readers)
    }

    /// Whether a device of this class reads the key at `path`.
    pub fn reads(self, path: &str) -> bool {
        Self::readers(path).is_none_or(|r| r.contains(&self))
    }
}

/// Refuse a key set in `resolved` that its device (class `class`) does not
/// read: it would be listed by `devices show` as set and change nothing.
fn check_used(resolved: &Resolved, class: DeviceClass) -> Result<(), ConfigError> {
    for (path, leaf) in &resolved.leaves {
        let Some(readers) = DeviceClass::readers(path) else {
            continue;
        };
        if readers.contains(&class) {
            continue;
        }
        let names: Vec<&str> = readers.iter().map(|c| c.name()).collect();
        return Err(ConfigError::Unused(Box::new(crate::config::UnusedKey {
            place: leaf.place(),
            key: path.clone(),
            device: resolved.chain.first().cloned().unwrap_or_default(),
            class: class.name().into(),
            readers: format!("only {} devices read it", names.join(" and ")),
        })));
    }
    Ok(())
}

/// `[device]`: which class and how big.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSection {
    /// Device class; its table (`[pcie]`, `[ddr]`...) must be present.
    pub class: DeviceClass,
    /// Capacity in bytes.
    pub capacity_bytes: u64,
    /// Latency of a `fixed` device.
    #[serde(default)]
    pub latency_ns: u64,
    /// Bandwidth of a `fixed` device, bytes per second: its requests'
    /// bytes cross one shared channel in arrival order before the latency
    /// (at least 1; absent: unlimited parallelism).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_bytes_per_s: Option<u64>,
}

/// The whole configuration of a preset.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    /// One line for `storlab devices`.
    pub description: String,
    /// Host software stack.
    pub host: HostConfig,
    /// Device class and capacity.
    pub device: DeviceSection,
    /// Media timing (NVM arrays, DDR).
    pub media: Option<MediaConfig>,
    /// PCIe array parameters.
    pub pcie: Option<PcieArrayConfig>,
    /// Power model (PCIe arrays).
    pub power: Option<PowerConfig>,
    /// DDR RAM-disk parameters.
    pub ddr: Option<DdrConfig>,
    /// NVMM parameters (PMEP's knobs).
    pub nvmm: Option<storlab_pmem::model::NvmmParams>,
    /// Solid-state drive parameters.
    pub ssd: Option<crate::devices::flash::config::SsdConfig>,
    /// Disk parameters.
    pub disk: Option<crate::devices::disk::config::DiskConfig>,
    /// RAID-0 parameters.
    pub raid: Option<crate::devices::raid::RaidConfig>,
    /// Block-cache parameters.
    pub tier: Option<crate::devices::tier::config::TierConfig>,
    /// CXL memory parameters.
    pub cxl: Option<crate::devices::cxl::CxlConfig>,
    /// Optane persistent-memory parameters.
    pub dcpmm: Option<crate::devices::ddr::dcpmm::DcpmmConfig>,
    /// Linux's swap path with this preset as the DRAM (`[swap]`, read by
    /// the swap model, `swap::run`).
    pub swap: Option<crate::host::swap::config::SwapConfig>,
    /// File-system and page-cache parameters (`crate::host::fs`; defaults when
    /// absent).
    pub fs: Option<crate::host::fs::config::FsConfig>,
}

/// Devices built from other presets (RAID members, a tier's two devices)
/// nest at most 4 deep: deeper is a preset that contains itself.
fn nest_ok(depth: u32, field: &str) -> Result<(), ConfigError> {
    if depth >= 4 {
        return Err(ConfigError::Invalid {
            field: field.into(),
            message:
                "devices built from presets nest more than 4 deep (a preset that contains itself?)"
                    .into(),
        });
    }
    Ok(())
}

fn missing(table: &str, class: &str) -> ConfigError {
    ConfigError::Invalid {
        field: table.into(),
        message: format!("device class {class} needs a [{table}] table"),
    }
}

impl SystemConfig {
    /// Load a preset (name or file) with overrides; returns the resolved
    /// leaves (for `devices show` and reports) and the typed configuration.
    pub fn load(
        store: &PresetStore,
        name: &str,
        overrides: &[String],
    ) -> Result<(Resolved, Self), ConfigError> {
        Self::load_set_by(store, name, overrides, "command line")
    }

    /// [`Self::load`] with the overrides' place named `origin` in errors
    /// and in `devices show` (a RAID's `raid.member_set`, say).
    pub fn load_set_by(
        store: &PresetStore,
        name: &str,
        overrides: &[String],
        origin: &str,
    ) -> Result<(Resolved, Self), ConfigError> {
        let mut expanded = Vec::new();
        for o in overrides {
            // `media=<technology>` expands to the technology's timings
            if let Some(v) = o.strip_prefix("media=") {
                let t =
                    crate::media::technology(v.trim()).ok_or_else(|| ConfigError::Override {
                        arg: o.clone(),
                        message: format!(
                            "unknown technology; known: {}",
                            crate::media::TECHNOLOGIES
                                .iter()
                                .map(|t| t.0)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })?;
                expanded.push(format!("media.name=\"{}\"", t.name));
                expanded.push(format!("media.read_ns={}", t.read_ns));
                expanded.push(format!("media.write_ns={}", t.write_ns));
            } else {
                expanded.push(o.clone());
            }
        }
        let resolved = store.resolve_set_by(name, &expanded, origin)?;
        resolved.check_domains()?;
        // before the typed parse: a partial table the class does not read
        // (`media.read_ns` on a disk) is unused, not a missing field
        let class = resolved
            .leaves
            .get("device.class")
            .and_then(|l| l.value.as_str())
            .and_then(|n| DeviceClass::ALL.into_iter().find(|c| c.name() == n));
        if let Some(class) = class {
            check_used(&resolved, class)?;
        }
        let cfg: SystemConfig = resolved.parse()?;
        cfg.validate().map_err(|e| resolved.placed(e))?;
        Ok((resolved, cfg))
    }

    /// Check ranges and that the class's tables are present.
    pub fn validate(&self) -> Result<(), ConfigError> {
        crate::host::config::validate(&self.host)?;
        if let Some(s) = &self.swap {
            crate::host::swap::config::validate(s)?;
        }
        if let Some(fs) = &self.fs {
            crate::host::fs::config::validate(fs)?;
        }
        crate::config::check_range(
            "device.capacity_bytes",
            self.device.capacity_bytes,
            4096,
            u64::MAX / 2,
        )?;
        if self.device.bandwidth_bytes_per_s.is_some() && self.device.class != DeviceClass::Fixed {
            return Err(ConfigError::Invalid {
                field: "device.bandwidth_bytes_per_s".into(),
                message: "only a fixed device takes a bandwidth here".into(),
            });
        }
        match self.device.class {
            DeviceClass::PcieArray => {
                let p = self
                    .pcie
                    .as_ref()
                    .ok_or_else(|| missing("pcie", "pcie-array"))?;
                self.media
                    .as_ref()
                    .ok_or_else(|| missing("media", "pcie-array"))?;
                self.power
                    .as_ref()
                    .ok_or_else(|| missing("power", "pcie-array"))?;
                crate::devices::pcie_array::config::validate(p)?;
            }
            DeviceClass::Ddr => {
                let d = self.ddr.as_ref().ok_or_else(|| missing("ddr", "ddr"))?;
                self.media.as_ref().ok_or_else(|| missing("media", "ddr"))?;
                crate::devices::ddr::ramdisk::validate(d)?;
            }
            DeviceClass::Fixed => {
                if let Some(bw) = self.device.bandwidth_bytes_per_s {
                    crate::config::check_range("device.bandwidth_bytes_per_s", bw, 1, u64::MAX)?;
                }
            }
            DeviceClass::Nvmm => {
                let n = self.nvmm.as_ref().ok_or_else(|| missing("nvmm", "nvmm"))?;
                n.validate().map_err(|e| ConfigError::Invalid {
                    field: "nvmm".into(),
                    message: e.to_string(),
                })?;
            }
            DeviceClass::Ssd => {
                let c = self.ssd.as_ref().ok_or_else(|| missing("ssd", "ssd"))?;
                crate::devices::flash::config::validate(c, self.device.capacity_bytes)?;
            }
            DeviceClass::Disk => {
                let c = self.disk.as_ref().ok_or_else(|| missing("disk", "disk"))?;
                crate::devices::disk::drive::validate(c, self.device.capacity_bytes)?;
            }
            DeviceClass::Raid0 => {
                let c = self.raid.as_ref().ok_or_else(|| missing("raid", "raid0"))?;
                crate::devices::raid::validate(c)?;
            }
            DeviceClass::Tier => {
                let c = self.tier.as_ref().ok_or_else(|| missing("tier", "tier"))?;
                crate::devices::tier::config::validate(c)?;
            }
            DeviceClass::Cxl => {
                let c = self.cxl.as_ref().ok_or_else(|| missing("cxl", "cxl"))?;
                crate::devices::cxl::validate(c)?;
            }
            DeviceClass::Dcpmm => {
                let c = self
                    .dcpmm
                    .as_ref()
                    .ok_or_else(|| missing("dcpmm", "dcpmm"))?;
                crate::devices::ddr::dcpmm::validate(c)?;
            }
        }
        Ok(())
    }

    /// Build the device (validated configurations only). RAID members are
    /// looked up among the built-in presets; see [`Self::build_device_in`].
    pub fn build_device(&self) -> Result<Box<dyn Device>, ConfigError> {
        self.build_device_in(&PresetStore::default())
    }

    /// Build the device, looking RAID members up in `store`.
    pub fn build_device_in(&self, store: &PresetStore) -> Result<Box<dyn Device>, ConfigError> {
        self.build_nested(store, 0)
    }

    fn build_nested(
        &self,
        store: &PresetStore,
        depth: u32,
    ) -> Result<Box<dyn Device>, ConfigError> {
        self.validate()?;
        let cap = self.device.capacity_bytes;
        Ok(match self.device.class {
            DeviceClass::PcieArray => Box::new(PcieArray::new(
                self.pcie.clone().expect("validated"),
                self.media.clone().expect("validated"),
                self.power.clone().expect("validated"),
                cap,
            )),
            DeviceClass::Ddr => Box::new(DdrRamDisk::new(
                self.ddr.clone().expect("validated"),
                self.media.clone().expect("validated"),
                cap,
            )),
            DeviceClass::Fixed => {
                let d = FixedLatency::new(self.device.latency_ns, cap);
                match self.device.bandwidth_bytes_per_s {
                    Some(bw) => Box::new(d.with_bandwidth(bw)),
                    None => Box::new(d),
                }
            }
            DeviceClass::Nvmm => Box::new(crate::devices::ddr::nvmm::Nvmm::new(
                self.nvmm.clone().expect("validated"),
                cap,
            )),
            DeviceClass::Ssd => Box::new(crate::devices::flash::ssd::Ssd::new(
                self.ssd.clone().expect("validated"),
                cap,
            )?),
            DeviceClass::Disk => Box::new(crate::devices::disk::drive::Disk::new(
                self.disk.clone().expect("validated"),
                cap,
            )?),
            DeviceClass::Raid0 => {
                let r = self.raid.as_ref().expect("validated");
                nest_ok(depth, "raid.members")?;
                let mut members = Vec::with_capacity(r.members.len());
                for name in &r.members {
                    let (_, mc) =
                        SystemConfig::load_set_by(store, name, &r.member_set, "raid.member_set")?;
                    members.push(mc.build_nested(store, depth + 1)?);
                }
                crate::devices::raid::build(r, members, cap)?
            }
            DeviceClass::Tier => {
                let t = self.tier.as_ref().expect("validated");
                nest_ok(depth, "tier.cache")?;
                let (_, cc) =
                    SystemConfig::load_set_by(store, &t.cache, &t.cache_set, "tier.cache_set")?;
                let cache = cc.build_nested(store, depth + 1)?;
                let (_, bc) = SystemConfig::load_set_by(
                    store,
                    &t.backing,
                    &t.backing_set,
                    "tier.backing_set",
                )?;
                let backing = bc.build_nested(store, depth + 1)?;
                crate::devices::tier::flash_cache::build(t, cache, backing, cap)?
            }
            DeviceClass::Cxl => Box::new(crate::devices::cxl::CxlMemory::new(
                self.cxl.clone().expect("validated"),
                cap,
            )),
            DeviceClass::Dcpmm => Box::new(crate::devices::ddr::dcpmm::Dcpmm::new(
                self.dcpmm.clone().expect("validated"),
                cap,
            )),
        })
    }
}
