//! The studies' hosts, and how a CPU cost measured on one carries to
//! another.
//!
//! Each study ran its programs on its own machine. An application's CPU
//! per operation is fitted once, on the host of the figure it is fitted
//! to (for most, the Moneta study's Table V); on another study's host the
//! same work takes that time scaled by the hosts' documented ratio: the
//! clock (cycles are the work) and, where both hosts' IPC for the program
//! is published, the IPC. It is never fitted a second time. Core counts
//! are not a ratio of one operation's time: they are the host's `cores`
//! ([`Host::cores`]), on which the closed-loop driver queues threads
//! (`host.cores` of the system the run uses).

/// One study's machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Host {
    /// Short name, as `host=` takes it (`--app-set host=nvmm`).
    pub name: &'static str,
    /// What it is, with its source.
    pub about: &'static str,
    /// Core clock, GHz.
    pub ghz: f64,
    /// Physical cores.
    pub cores: u32,
    /// Hardware threads per core (2 with Hyper-Threading).
    pub smt: u32,
    /// DRAM, bytes.
    pub dram: u64,
}

/// The Moneta study's host (docs/spec/pcie-arrays.md, Host): two quad-core
/// 2.26 GHz Core i7 (Nehalem) sockets, Hyper-Threading, 8 GB of DRAM. The
/// host every CALIBRATED CPU cost of Table V is measured on.
pub const MONETA: Host = Host {
    name: "moneta",
    about: "the Moneta study's host: two quad-core 2.26 GHz Core i7 (Nehalem) sockets, 8 GB (docs/spec/pcie-arrays.md)",
    ghz: 2.26,
    cores: 8,
    smt: 2,
    dram: 8 << 30,
};

/// The HASTE study's host. ESTIMATE: the study publishes its DDR3 system
/// (6 channels, 63 GB/s: two sockets of three channels, the Nehalem-EP
/// and Westmere-EP platform) and its 8 GB paging runs, not the processor;
/// the same group's Moneta host is that platform, so its clock and cores
/// are taken (ratio 1).
pub const HASTE: Host = Host {
    name: "haste",
    about: "the HASTE study's host: not published beyond its 6 DDR3 channels (a two-socket Nehalem-EP platform); ESTIMATE: the Moneta study's 2x4 cores at 2.26 GHz, 8 GB",
    ghz: 2.26,
    cores: 8,
    smt: 2,
    dram: 8 << 30,
};

/// The NVMM study's PMEP machine (docs/spec/nvmm.md): two 8-core 2.6 GHz
/// Xeons (Sandy Bridge-EP), 40 MB of cache, 8 GB of DRAM beside the
/// emulated NVMM.
pub const NVMM: Host = Host {
    name: "nvmm",
    about: "the NVMM study's PMEP: two 8-core 2.6 GHz Xeons, 40 MB cache, 8 GB DRAM (docs/spec/nvmm.md)",
    ghz: 2.6,
    cores: 16,
    smt: 2,
    dram: 8 << 30,
};

/// The flash placement study's OLTP server (docs/spec/hybrid.md): 8 Xeon
/// cores at 2.3 GHz, 24 GB of DDR3.
pub const PLACEMENT: Host = Host {
    name: "placement",
    about: "the flash placement study's OLTP server: 8 Xeon cores at 2.3 GHz, 24 GB DDR3 (docs/spec/hybrid.md)",
    ghz: 2.3,
    cores: 8,
    smt: 1,
    dram: 24 << 30,
};

/// Every study host, `host=` order.
pub const HOSTS: &[Host] = &[MONETA, HASTE, NVMM, PLACEMENT];

/// The host named `name`.
pub fn find(name: &str) -> Option<Host> {
    HOSTS.iter().copied().find(|h| h.name == name)
}

impl Host {
    /// Time on this host of work that takes `ns` on `from`: the same
    /// cycles at this host's clock. (No study publishes a program's IPC on
    /// two of these hosts, so the clock is the whole ratio; a program
    /// whose IPC differs between them would carry that too.)
    pub fn carry_ns(&self, ns: f64, from: &Host) -> f64 {
        ns * from.ghz / self.ghz
    }

    /// Hardware threads.
    pub fn threads(&self) -> u32 {
        self.cores * self.smt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_carries_by_the_clock_ratio_and_back() {
        let on_nvmm = NVMM.carry_ns(1000.0, &MONETA);
        assert!((on_nvmm - 1000.0 * 2.26 / 2.6).abs() < 1e-9, "{on_nvmm}");
        assert!(on_nvmm < 1000.0, "a faster clock takes less time");
        let back = MONETA.carry_ns(on_nvmm, &NVMM);
        assert!((back - 1000.0).abs() < 1e-9);
        assert_eq!(MONETA.carry_ns(5.0, &MONETA), 5.0);
    }

    #[test]
    fn every_host_is_found_by_its_name_and_names_are_unique() {
        for h in HOSTS {
            assert_eq!(find(h.name), Some(*h));
            assert!(h.ghz > 1.0 && h.cores >= 1 && h.dram >= 1 << 30);
        }
        let mut names: Vec<_> = HOSTS.iter().map(|h| h.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), HOSTS.len());
        assert_eq!(find("nope"), None);
    }
}
