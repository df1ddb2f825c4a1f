//! The six presets load, equal the built-in parameters, carry a source on
//! every value, and order their costs as the study says.

use std::path::PathBuf;

use serde::Deserialize;
use storlab_pmem::model::{
    FlushMode, NvmmParams, Preset, SyncMode, HOST_EPYC_KVM_2026_11_21, LINE_BYTES,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetFile {
    description: String,
    device: DeviceSection,
    nvmm: NvmmParams,
    /// The simulator's host stack for this class (checked by storlab-model).
    #[allow(dead_code)]
    host: toml::Table,
    /// The simulator's file-system costs on this memory (checked by
    /// storlab-model).
    #[allow(dead_code)]
    fs: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeviceSection {
    class: String,
    #[allow(dead_code)]
    capacity_bytes: u64,
}

fn preset_path(p: Preset) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../presets")
        .join(format!("{}.toml", p.name()))
}

fn load(p: Preset) -> (PresetFile, String) {
    let path = preset_path(p);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let f: PresetFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (f, text)
}

const MIB: u64 = 1 << 20;

#[test]
fn presets_load_equal_the_builtins_and_cite_sources() {
    for p in Preset::ALL {
        let (f, text) = load(p);
        assert_eq!(f.device.class, "nvmm", "{}", p.name());
        assert!(!f.description.is_empty());
        f.nvmm.validate().unwrap();
        assert_eq!(
            f.nvmm,
            NvmmParams::preset(p),
            "{} differs from the built-in",
            p.name()
        );
        for line in text.lines() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || l.starts_with('[') {
                continue;
            }
            assert!(
                l.contains("# source: "),
                "{}: value without a source: {l}",
                p.name()
            );
        }
    }
}

#[test]
fn presets_follow_the_study_table() {
    let get = |p| NvmmParams::preset(p);
    assert_eq!(get(Preset::Pdram).read_latency_ns(), 150.0);
    for p in [
        Preset::PmLat,
        Preset::PmBw,
        Preset::NvmmRaw,
        Preset::NvmmWof,
        Preset::NvmmOpt,
    ] {
        assert_eq!(get(p).read_latency_ns(), 300.0);
    }
    assert_eq!(
        get(Preset::PmBw).bandwidth_bytes_per_s() * 8.0,
        get(Preset::PmLat).bandwidth_bytes_per_s()
    );
    assert_eq!(get(Preset::NvmmRaw).l_wbar_ns, 1000.0);
    assert_eq!(get(Preset::NvmmWof).m_flush, FlushMode::Wof);
    assert_eq!(get(Preset::NvmmOpt).m_sync, SyncMode::Spf);
}

/// "Write one byte, then sync a region of `size` bytes" in the model.
fn write_then_sync_ns(p: &NvmmParams, size: u64) -> u64 {
    p.write_ns(1) + p.sync_ns(0, size, &[0])
}

#[test]
fn default_sync_grows_linearly() {
    for p in [Preset::Pdram, Preset::NvmmRaw, Preset::NvmmWof] {
        let m = NvmmParams::preset(p);
        let a = m.sync_ns(0, MIB, &[]);
        let b = m.sync_ns(0, 100 * MIB, &[]);
        let barrier = (m.fence_ns + m.l_wbar_ns) as u64;
        let ratio = (b - barrier) as f64 / (a - barrier) as f64;
        assert!((ratio - 100.0).abs() < 0.01, "{}: ratio {ratio}", p.name());
        assert_eq!(m.sync_plan(0, 10 * MIB, &[]).lines, 10 * MIB / LINE_BYTES);
    }
}

#[test]
fn spf_stays_nearly_flat() {
    let m = NvmmParams::preset(Preset::NvmmOpt);
    let small = write_then_sync_ns(&m, 4096);
    let big = write_then_sync_ns(&m, 100 * MIB);
    // One dirty page whatever the size; only the per-page scan grows.
    assert_eq!(m.sync_plan(0, 100 * MIB, &[0]).lines, 4096 / LINE_BYTES);
    assert!(big < 20 * small, "SPF 100 MiB {big} ns vs 4 KiB {small} ns");
    let wof = NvmmParams::preset(Preset::NvmmWof);
    assert!(
        big * 100 < write_then_sync_ns(&wof, 100 * MIB),
        "SPF must beat default by far at 100 MiB"
    );
    // Sub-page rule: a 64-byte sync of a dirty page flushes one line.
    let plan = m.sync_plan(64, 64, &[0]);
    assert_eq!(
        (plan.lines, plan.dirty_pages, plan.cleaned_pages),
        (1, 1, 0)
    );
}

#[test]
fn wof_is_cheaper_than_clflush_and_clflush_crosses_the_disk_above_10mb() {
    let raw = NvmmParams::preset(Preset::NvmmRaw);
    let wof = NvmmParams::preset(Preset::NvmmWof);
    for size in [4096, MIB, 10 * MIB, 100 * MIB] {
        assert!(
            write_then_sync_ns(&wof, size) < write_then_sync_ns(&raw, size),
            "{size}"
        );
    }
    for p in Preset::ALL {
        let m = NvmmParams::preset(p);
        assert!(m.flush_ns_per_line(FlushMode::Wof) < m.flush_ns_per_line(FlushMode::Clflush));
        assert!(m.flush_ns_per_line(FlushMode::Clwb) < m.flush_ns_per_line(FlushMode::Clflushopt));
    }
    // docs/spec/nvmm.md: msync with clflush of a region over 10 MB is slower than on
    // a hard disk (the presets take hdd-7200's msync, 5.64 ms).
    let disk = storlab_pmem::model::HDD_MSYNC_NS as u64;
    assert!(write_then_sync_ns(&raw, 8 * MIB) < disk);
    assert!(write_then_sync_ns(&raw, 12 * MIB) > disk);
    assert!(write_then_sync_ns(&wof, 12 * MIB) < disk);
}

#[test]
fn reads_and_writes_follow_latency_floor_and_throttle() {
    let lat = NvmmParams::preset(Preset::PmLat);
    let bw = NvmmParams::preset(Preset::PmBw);
    assert_eq!(lat.read_ns(0, 1), 300);
    assert_eq!(lat.read_ns(64, 2) - lat.read_ns(64, 1), 300);
    let mut floor = lat.clone();
    floor.l_read_ns = 50.0;
    assert_eq!(
        floor.read_ns(0, 1),
        150,
        "PMEP cannot go below DRAM latency"
    );
    assert_eq!(bw.write_ns(1 << 20), 8 * lat.write_ns(1 << 20));
    let mut bad = lat.clone();
    bad.th_bw = 1.0 / 32.0;
    assert!(bad.validate().unwrap_err().to_string().contains("th_bw"));
}

#[test]
fn host_calibration_keeps_this_hosts_ordering() {
    // On the calibration host WOF was the most expensive mode: a model of
    // that host must say so, unlike the study's presets.
    let m = NvmmParams::preset(Preset::NvmmWof).with_calibration(&HOST_EPYC_KVM_2026_11_21);
    assert!(m.flush_ns_per_line(FlushMode::Wof) > m.flush_ns_per_line(FlushMode::Clflush));
    m.validate().unwrap();
}

#[test]
fn unknown_fields_are_refused() {
    let (_, text) = load(Preset::Pdram);
    let bad = text.replace("l_read_ns =", "l_raed_ns =");
    let e = toml::from_str::<PresetFile>(&bad).unwrap_err();
    assert!(e.to_string().contains("l_raed_ns"), "{e}");
}

#[test]
fn a_non_temporal_write_flushes_only_its_unaligned_edges() {
    let m = NvmmParams::preset(Preset::NvmmRaw);
    let barrier = (m.fence_ns + m.l_wbar_ns).round() as u64;
    // an aligned 16 KiB write: no line flushed, the fence and L_WBAR
    let a = m.nt_write_persist_cost(4096, 16384);
    assert_eq!(a.lines_flushed, 0);
    assert_eq!(a.total_ns(), barrier);
    // through the caches, every line of it would be flushed
    let c = m.persist_cost(4096, 16384);
    assert_eq!(c.lines_flushed, 16384 / LINE_BYTES);
    assert!(c.total_ns() > a.total_ns() + 100 * 16);
    // an append at an odd offset and length: both edge lines
    let e = m.nt_write_persist_cost(4099, 1000);
    assert_eq!(e.lines_flushed, 2);
    assert!(e.total_ns() > barrier);
    // a short write inside one line, unaligned at both ends: that line once
    assert_eq!(m.nt_write_persist_cost(4099, 3).lines_flushed, 1);
    // nothing written, nothing to make durable
    assert_eq!(m.nt_write_persist_cost(0, 0).total_ns(), 0);
}
