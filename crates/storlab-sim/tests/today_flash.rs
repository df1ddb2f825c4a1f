//! Today's flash (issue 63): the QLC drive's read-modify-writes, the SLC
//! cache's cliff and its idle folding, and sustained random overwrite of
//! every flash preset at 100 % occupancy (small capacities; the zoned
//! drive through fio's zbd).

mod common;

use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

use storlab_sim::stats::JobStats;

use common::{counter, jobs};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Write bandwidth of a job, bytes per ns.
fn wbw(j: &JobStats) -> f64 {
    j.dirs[1].io_bytes() as f64 / j.runtime_ns[1].max(1) as f64
}

/// A small drive of `preset`: `blocks` per plane, the capacity at the
/// preset's share of its raw space (less the blocks the FTL keeps aside).
fn small(preset: &str, blocks: u64, pages: u64) -> Vec<String> {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &[]).expect("preset");
    let ssd = cfg.ssd.as_ref().expect("a flash preset");
    let n = &ssd.nand;
    let planes = (n.channels * n.dies_per_channel * n.planes_per_die) as u64;
    let raw = planes * n.blocks_per_plane as u64 * n.pages_per_block as u64 * n.page_bytes;
    let block_bytes = pages * n.page_bytes;
    let share = cfg.device.capacity_bytes as f64 / raw as f64;
    let reserve = (ssd.ftl.gc_threshold_blocks as u64 + 2) * planes * block_bytes;
    let cap = ((planes * blocks * block_bytes) as f64 * share) as u64;
    let cap = cap.min(planes * blocks * block_bytes - reserve);
    let unit = ssd.ftl.map_unit_bytes;
    vec![
        format!("ssd.nand.blocks_per_plane={blocks}"),
        format!("ssd.nand.pages_per_block={pages}"),
        format!("device.capacity_bytes={}", cap / unit * unit),
    ]
}

#[test]
fn qlc_drive_counts_read_modify_writes_of_4k_writes_into_16k_units() {
    let ov = s(&["ssd.ftl.precondition=\"full\""]);
    let run = |bs: &str| {
        let j = jobs(
            "p5336",
            &ov,
            &s(&[
                "--name=w",
                "--rw=randwrite",
                &format!("--bs={bs}"),
                "--size=1g",
                "--number_ios=400",
                "--norandommap",
            ]),
        );
        counter(&j[0], "rmw_reads")
    };
    let small = run("4k");
    assert!(
        (300.0..=400.0).contains(&small),
        "4 KB writes into 16 KB units: {small} read-modify-writes for 400 writes"
    );
    assert_eq!(run("16k"), 0.0, "whole-unit writes read nothing");
}

/// The 990pro at 1/32 of its blocks with its SLC cache scaled alike.
fn small_990pro() -> Vec<String> {
    let mut ov = small("990pro", 32, 1024);
    ov.extend(s(&[
        "ssd.nand.slc_cache.static_bytes=187500000",
        "ssd.nand.slc_cache.dynamic_max_bytes=6875000000",
    ]));
    ov
}

#[test]
fn the_990pro_write_bandwidth_falls_off_a_cliff_once_its_slc_cache_is_full() {
    let ov = small_990pro();
    // eight stonewalled sequential writers, 7 GiB each, in order (56 of
    // the drive's 62 GB)
    let mut fio = s(&[
        "--rw=write",
        "--bs=1m",
        "--ioengine=libaio",
        "--iodepth=32",
        "--size=7g",
    ]);
    for k in 0..8 {
        fio.extend([
            format!("--name=c{k}"),
            format!("--offset={}g", 7 * k),
            "--stonewall".into(),
        ]);
    }
    let j = jobs("990pro", &ov, &fio);
    let first = wbw(&j[0]);
    let last = wbw(&j[7]);
    assert!(
        first > 1.8 * last,
        "in the cache {first:.2} GB/s, past it {last:.2} GB/s"
    );
    let end = &j[7];
    assert!(counter(end, "slc_units_written") > 0.0);
    assert!(counter(end, "native_units_written") > 0.0);
    assert!(
        counter(end, "slc_cache_capacity_bytes") < 7.0e9,
        "the cache shrinks as the drive fills"
    );
}

#[test]
fn the_slc_cache_folds_back_while_the_drive_is_idle() {
    let ov = small_990pro();
    let j = jobs(
        "990pro",
        &ov,
        &s(&[
            "--rw=write",
            "--bs=1m",
            "--ioengine=libaio",
            "--iodepth=32",
            "--size=2g",
            "--name=a",
            "--name=b",
            "--offset=2g",
            "--stonewall",
            "--startdelay=5s",
        ]),
    );
    let folded = counter(&j[1], "slc_units_folded");
    assert!(folded > 0.0, "an idle 5 s folds the cache");
    let wa = counter(&j[1], "write_amplification");
    assert!(wa > 1.0, "folded units are programmed twice: WA {wa}");
}

/// `segments` stonewalled jobs of `ios` 16 KiB random overwrites each
/// (QD32, `fio` on top) of a small aged `preset` (64 blocks of 64 pages a
/// plane, so that each segment collects many victims on every plane),
/// `extra` set on top.
fn aged_overwrite(
    preset: &str,
    extra: &[&str],
    fio: &[&str],
    segments: u32,
    ios: u32,
) -> Vec<JobStats> {
    let mut ov = small(preset, 64, 64);
    ov.push("ssd.ftl.precondition=\"aged\"".into());
    ov.extend(extra.iter().map(|x| x.to_string()));
    let mut args = s(&[
        "--rw=randwrite",
        "--bs=16k",
        "--ioengine=libaio",
        "--iodepth=32",
        "--norandommap",
        &format!("--number_ios={ios}"),
    ]);
    args.extend(fio.iter().map(|x| x.to_string()));
    for k in 0..segments {
        args.extend([format!("--name=s{k}"), "--stonewall".into()]);
    }
    jobs(preset, &ov, &args)
}

/// Two halves of [`aged_overwrite`], one job each: the halves' jobs,
/// after checking that the second holds the first's rate.
fn overwrite_halves(preset: &str, extra: &[&str], ios: u32) -> Vec<JobStats> {
    let j = aged_overwrite(preset, extra, &[], 2, ios);
    let (a, b) = (wbw(&j[0]), wbw(&j[1]));
    assert!(
        b > 0.5 * a && b < 2.0 * a,
        "{preset}: {a:.3} then {b:.3} GB/s"
    );
    j
}

#[test]
fn sustained_random_overwrite_at_full_occupancy_is_stable_on_every_new_flash_preset() {
    for preset in ["pm9a3", "990pro", "p5336"] {
        let j = overwrite_halves(preset, &[], 12000);
        assert!(
            counter(&j[1], "gc_runs") > 0.0,
            "{preset}: garbage collection ran"
        );
        assert!(counter(&j[1], "write_amplification") > 1.0, "{preset}");
    }
}

#[test]
fn sustained_random_overwrite_at_full_occupancy_is_stable_on_the_older_flash_presets() {
    // the same run on the flash presets of the studies, every logical
    // unit in use (and on the PCM SSD, which writes in place and collects
    // nothing, the same run holds its rate too)
    for preset in [
        "x25e",
        "sata-ssd",
        "fusion-io",
        "placement-flash",
        "micron-psd",
    ] {
        let j = overwrite_halves(preset, &["ssd.ftl.fullness=1.0"], 6000);
        if preset != "micron-psd" {
            assert!(
                counter(&j[1], "gc_runs") > 0.0,
                "{preset}: garbage collection ran"
            );
        }
    }
}

#[test]
fn sustained_zoned_overwrite_of_a_full_zoned_drive_is_stable() {
    // the zoned drive overwritten as a zoned drive is: fio's zbd random
    // writes over a small zn540 whose every zone is filled first, each
    // full zone reset as fio resets it, in two stonewalled halves; the
    // drive's collection finds reset zones' blocks all invalid, so write
    // amplification stays 1.0 and the bandwidth steady
    let zones = 16u64;
    let mib = 1u64 << 20;
    let ov = s(&[
        &format!("device.capacity_bytes={}", zones * 64 * mib),
        &format!("ssd.zns.zone_bytes={}", 64 * mib),
        &format!("ssd.zns.zone_capacity_bytes={}", 32 * mib),
        "ssd.nand.blocks_per_plane=64",
        "ssd.nand.pages_per_block=64",
    ]);
    let span = format!("--size={}", zones * 64 * mib);
    let mut fio = s(&["--direct=1", "--zonemode=zbd", &span, "--bs=64k"]);
    fio.extend(s(&[
        "--name=fill",
        "--rw=write",
        "--iodepth=8",
        "--ioengine=libaio",
    ]));
    for k in 0..2 {
        fio.extend([
            format!("--name=h{k}"),
            "--stonewall".into(),
            "--rw=randwrite".into(),
            "--ioengine=libaio".into(),
            "--iodepth=8".into(),
            format!("--io_size={}", zones * 32 * mib),
        ]);
    }
    let j = jobs("zn540", &ov, &fio);
    for x in &j {
        assert_eq!(x.error, 0, "{}: {:?}", x.name, x.error_detail);
    }
    let (a, b) = (wbw(&j[1]), wbw(&j[2]));
    assert!(b > 0.5 * a && b < 2.0 * a, "{a:.3} then {b:.3} GB/s");
    assert!(counter(&j[2], "zone_resets") >= zones as f64);
    let wa = counter(&j[2], "write_amplification");
    assert!((wa - 1.0).abs() < 0.01, "write amplification {wa}");
}

/// Write bandwidth of each of `segments` stonewalled segments of
/// sustained 16 KiB random overwrites on a small aged `preset` (64 blocks
/// of 64 pages a plane) with `ov` on top, and the last segment's write
/// amplification.
fn overwrite_segments(preset: &str, ov: &[&str], segments: u32) -> (Vec<f64>, f64) {
    let j = aged_overwrite(
        preset,
        ov,
        &["--numjobs=4", "--group_reporting"],
        segments,
        3000,
    );
    let bw: Vec<f64> = j.iter().map(wbw).collect();
    let wa = counter(&j[j.len() - 1], "write_amplification");
    (bw, wa)
}

fn cv(v: &[f64]) -> f64 {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt() / m
}

#[test]
fn paced_collection_keeps_sustained_overwrite_bandwidth_steady() {
    // today's presets collect in step with the host (ssd.ftl.gc_pacing):
    // under uniform random overwrites every plane reaches its threshold
    // at the same host-write count, and collecting whole victims then
    // stalls every die at once (segments alternate between about half
    // and the full rate); paced, each victim's pages move a few at a
    // time per host unit and the segments agree, with no more write
    // amplification. The first segment writes the aged drive's free
    // blocks (the ramp before the steady state) and is left out.
    let (paced, wa_paced) = overwrite_segments("pm9a3", &[], 12);
    let (whole, wa_whole) = overwrite_segments("pm9a3", &["ssd.ftl.gc_pacing=false"], 12);
    let (cp, cw) = (cv(&paced[1..]), cv(&whole[1..]));
    assert!(
        cp < 0.06 && cw > 3.0 * cp,
        "segments' coefficient of variation: paced {cp:.3}, whole victims {cw:.3}"
    );
    assert!(
        wa_paced < wa_whole * 1.05,
        "write amplification paced {wa_paced:.2}, whole victims {wa_whole:.2}"
    );
    assert!(wa_paced > 2.0, "collection ran: {wa_paced:.2}");
}
