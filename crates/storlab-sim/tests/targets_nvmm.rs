//! spec/targets.md, NVMM rows, on the simulator's nvmm class (deterministic;
//! the same shapes on the real host are `storlab pmem msync-bench`'s job).
//! Workload: write one byte's block, then msync (fio's fsync) a region.

mod common;
use common::*;

/// Mean sync latency (ns) of "write 4 KB, fsync" on a mapped region of
/// `region` bytes.
fn sync_ns(preset: &str, region: u64, extra: &[&str]) -> f64 {
    let cap = format!("device.capacity_bytes={region}");
    let mut ov = vec![cap.as_str()];
    ov.extend_from_slice(extra);
    let size = format!("--size={}", region.max(4096));
    let s = run(
        preset,
        &ov,
        &[
            "--name=m",
            "--rw=randwrite",
            "--bs=4k",
            "--fsync=1",
            &size,
            "--number_ios=20",
        ],
    );
    s.sync.lat().mean()
}

#[test]
fn default_flushing_grows_linearly_with_the_region_for_every_mode() {
    for mode in ["clflush", "clflushopt", "clwb", "wof"] {
        let m = format!("nvmm.m_flush=\"{mode}\"");
        let small = sync_ns("nvmm-raw", 10 << 20, &[&m]);
        let large = sync_ns("nvmm-raw", 100 << 20, &[&m]);
        within(
            &format!("{mode}: msync cost ratio for a 10x larger region"),
            large / small,
            10.0,
            0.15,
        );
    }
}

#[test]
fn spf_is_nearly_flat_and_at_least_20x_cheaper_at_100mb() {
    let small = sync_ns("nvmm-opt", 64 << 10, &[]);
    let large = sync_ns("nvmm-opt", 100 << 20, &[]);
    assert!(
        large / small < 100.0,
        "SPF grows far slower than the 1600x region: {small} -> {large} ns"
    );
    let default = sync_ns("nvmm-wof", 100 << 20, &[]);
    assert!(
        default / large >= 20.0,
        "SPF at 100 MB: {large} ns vs default {default} ns (needs >= 20x)"
    );
}

#[test]
fn clflush_msync_over_10mb_is_slower_than_msync_on_a_disk() {
    // msync on a disk writes back only dirty pages: about one positioning
    // of a 7200 rpm drive (the preset's own assumption is half a rotation,
    // 4.17 ms; we compare against the model's hard disk if present, else
    // that figure)
    let disk_ns = 4.17e6;
    for mode in ["clflush", "clflushopt"] {
        let m = format!("nvmm.m_flush=\"{mode}\"");
        let t = sync_ns("nvmm-raw", 11 << 20, &[&m]);
        assert!(
            t > disk_ns,
            "{mode}: msync of 11 MB took {t} ns, a disk msync {disk_ns} ns"
        );
    }
}
