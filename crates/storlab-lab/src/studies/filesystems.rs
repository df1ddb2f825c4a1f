//! File systems as mechanisms (the HASTE study, SC 2010, section V-A):
//! XDD through XFS and ext3 against the raw device, on the HASTE and DDR
//! devices and the disk and SSD RAIDs (docs/spec/workloads.md, "Raw device and file
//! access"; the file-system layer is `storlab_model::host::fs`).
//!
//! The XDD runs: 16 threads, one request outstanding each, direct IO, one
//! file shared by every thread; 4 MB sequential (each thread streams its
//! own 1/16 of the file) and 4 KB random (every thread over the whole
//! file); reads, writes and 50/50. Latency: one thread, 4 KB random.
//! The study's file was 55 GB; so is ours on the disk RAID, and 4 GiB on the
//! memory devices (to fit the 16 GB RAM disk; where the data lies makes
//! no difference to their timing, and random 4 KB writes over either
//! touch each block at most once in a run this short, so every one
//! allocates in both).
//!
//! The one rule for the file's state ([`STATE_RULE`]), from how XDD
//! works: XDD opens its target file, creating it if it is missing, and
//! preallocates only when told to (`-preallocate`, which the study does
//! not mention), so a write test writes a file it made (no blocks yet:
//! every write allocates; fio's `fallocate=none`); the read and mixed
//! tests, and the latency tests after them, run on the file a write pass
//! left, every block written. No row picks its own state.
//!
//! The SSD RAID is preconditioned as the `peers` study's runs of the same
//! XDD tests are (see its module doc): the study's drives were in use and
//! XDD wrote its files before reading them, so a fresh simulated drive,
//! which answers reads of never-written pages from its mapping table
//! without touching flash, would measure no media. Runs with random writes
//! (sustained in the study) start from the steady state of random
//! overwrites of the file's span (`ssd.ftl.precondition = "aged"` over
//! the file's share of the array, the rest never written, as no test
//! writes there), every other run from the
//! drive written once (`"full"`: every read is a NAND read). As there, the
//! array is four small X25-Es with the real one's spare ratio
//! ([`crate::studies::psd::SMALL_RAID_SSD`]) and its file 768 MiB, not 55 GB: a flash read
//! or write costs the same wherever it lies, and the steady state is set by
//! the spare ratio, not the capacity.

use crate::measure::{Plan, RunId, Spec};
use crate::places::HASTE_5A;
use crate::report::{at_all, Class, Prepared, Reproduction, Row};

/// The one rule for the state of the file and the device (module doc).
pub const STATE_RULE: &str = "XDD makes its own file and preallocates nothing (no -preallocate): the write tests write a new file, each block allocated as it is first written (fio fallocate=none); the read, mixed and latency tests run on the file a write pass left, every block written; the SSD RAID as in the peers study (random writes from the steady state of random writes over the file, the rest from drives written once)";

/// The file on the disk RAID: the study's 55 GB (where the data lies matters
/// to disks).
pub const FILE_BYTES: &str = "55g";
/// The file on the memory devices, scaled down to fit the 16 GB RAM disk
/// (placement makes no difference to their timing).
pub const SMALL_FILE_BYTES: &str = "4g";

/// The file on the (scaled-down, preconditioned) SSD RAID: it fits the
/// 2 GiB array with XFS's log or ext3's journal in its middle.
pub const SSD_FILE_BYTES: &str = "768m";

/// [`SSD_FILE_BYTES`] in MiB.
const SSD_FILE_MIB: u64 = 768;

/// The file size XDD uses on `device`.
pub fn file_bytes(device: &str) -> &'static str {
    match device {
        "raid-ssd" => SSD_FILE_BYTES,
        "raid-disk" => FILE_BYTES,
        _ => SMALL_FILE_BYTES,
    }
}

/// Each thread's part of the file in a sequential run (a 16th of it).
fn seq_part(device: &str) -> &'static str {
    match file_bytes(device) {
        FILE_BYTES => "3520m",
        SSD_FILE_BYTES => "48m",
        _ => "256m",
    }
}

/// The device overrides of a run of `rw` on `device` (besides the file
/// system): the SSD RAID scaled down and preconditioned, random writes
/// from the steady state of random overwrites, everything else from the
/// drive written once (see the module doc).
pub fn device_overrides(device: &str, rw: &str) -> Vec<String> {
    if device != "raid-ssd" {
        return Vec::new();
    }
    use crate::studies::peers;
    if rw == "randwrite" || rw == "randrw" {
        // the steady state of XDD's writes over its file, the rest of the
        // drives never written
        let share = peers::footprint_share(SSD_FILE_MIB, peers::SMALL_RAID_SSD_BYTES);
        peers::raid_ssd_written("aged", share)
    } else {
        peers::raid_ssd("full")
    }
}
/// Random 4 KB requests per thread in a bandwidth run.
pub const RANDOM_IOS: u32 = 200;
/// Sequential 4 MB requests per thread in a bandwidth run.
pub const SEQ_IOS: u32 = 4;

/// The overrides of a run of `rw` on `device` through file system `fs`
/// (`None`: the raw device).
fn overrides(device: &str, fs: Option<&str>, rw: &str) -> Vec<String> {
    let mut v = device_overrides(device, rw);
    v.extend(fs.map(|f| format!("host.file_system=\"{f}\"")));
    v
}

/// An XDD bandwidth run: `rw` (`read`, `write`, `rw`, `randread`,
/// `randwrite`, `randrw`) through `fs` on `device`.
pub fn xdd(device: &str, fs: Option<&str>, rw: &str) -> Spec {
    let seq = !rw.starts_with("rand");
    let ov = overrides(device, fs, rw);
    let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
    let mut args = vec![
        "--name=xdd".to_string(),
        "--filename=xdd.dat".to_string(),
        "--direct=1".to_string(),
        format!("--rw={rw}"),
        "--rwmixread=50".to_string(),
        "--iodepth=1".to_string(),
        "--numjobs=16".to_string(),
    ];
    let file = file_bytes(device);
    if seq {
        let part = seq_part(device);
        args.extend([
            "--bs=4m".to_string(),
            format!("--size={part}"),
            format!("--offset_increment={part}"),
            format!("--number_ios={SEQ_IOS}"),
        ]);
    } else {
        args.extend([
            "--bs=4k".to_string(),
            format!("--size={file}"),
            format!("--number_ios={}", random_ios(device, rw)),
        ]);
    }
    if rw == "write" || rw == "randwrite" {
        // the write tests write a file they created
        args.push("--fallocate=none".to_string());
    }
    let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    Spec::new(device, &ov, &args)
}

/// Random 4 KB requests per thread: [`RANDOM_IOS`], or, for writes on
/// the disk RAID, enough to write twice its controller's 256 MB cache (the
/// study's runs were long: the cache was full and destaging). A 50/50 mix
/// writes with half its requests, so it makes twice as many (with 8192,
/// as before issue 58, its 128 MB of writes stayed under the cache's
/// destage threshold and its writes cost the disks nothing).
pub fn random_ios(device: &str, rw: &str) -> u32 {
    match (device, rw) {
        ("raid-disk", "randread") => RANDOM_IOS,
        ("raid-disk", "randrw") => 2 * 8192,
        ("raid-disk", _) => 8192,
        _ => RANDOM_IOS,
    }
}

/// A latency run: one thread, QD1, 4 KB random `rw` through `fs`.
pub fn latency(device: &str, fs: Option<&str>, rw: &str, n: u32) -> Spec {
    let ov = overrides(device, fs, rw);
    let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
    let size = format!("--size={}", file_bytes(device));
    // the study's rule: the latency tests run on the file a write pass
    // left, every block written (fio's overwrite=1 lays it out so)
    Spec::qd1(device, &ov, rw, "4k", n).with_fio(&[
        "--filename=lat.dat",
        "--direct=1",
        "--overwrite=1",
        &size,
    ])
}

const ACCESS: [&str; 3] = ["read", "write", "rw"];

/// Per device: the raw, XFS and ext3 bandwidth runs (sequential and
/// random, each access) and the raw and XFS latency runs.
struct DevRuns {
    bw: [[[RunId; 3]; 2]; 3],
    lat: [[RunId; 2]; 2],
}

const FS: [Option<&str>; 3] = [None, Some("xfs"), Some("ext3")];

fn plan_device(p: &mut Plan, dev: &str, lat_ios: u32) -> DevRuns {
    let bw = FS.map(|fs| {
        [false, true].map(|random| {
            ACCESS.map(|a| {
                let rw = if random {
                    format!("rand{a}")
                } else {
                    a.to_string()
                };
                p.add(xdd(dev, fs, &rw))
            })
        })
    });
    let lat = [None, Some("xfs")]
        .map(|fs| ["randread", "randwrite"].map(|rw| p.add(latency(dev, fs, rw, lat_ios))));
    DevRuns { bw, lat }
}

/// Prepare the study.
pub fn prepare() -> Prepared {
    let mut p = Plan::new();
    let devs = [
        "haste-dram",
        "ddr-dram",
        "haste-pcm",
        "ddr-pcm",
        "raid-ssd",
        "raid-disk",
    ];
    let runs: Vec<DevRuns> = devs
        .iter()
        .map(|d| plan_device(&mut p, d, if d.starts_with("raid") { 60 } else { 300 }))
        .collect();
    // the raw RAM disk's sequential runs with its pages behind both
    // sockets' channels (for the reason of the fast-devices XFS row)
    let six = ACCESS.map(|a| {
        let mut s = xdd("ddr-dram", None, a);
        s.overrides.push("ddr.disk_channels=6".to_string());
        p.add(s)
    });
    let finish = move |r: &crate::measure::Results| {
        let dev = |name: &str| &runs[devs.iter().position(|d| *d == name).expect("planned")];
        // bandwidth, MB/s: fs 0 raw 1 xfs 2 ext3; random or not; access
        let bw = |name: &str, fs: usize, random: bool, a: usize| {
            let run = &r[dev(name).bw[fs][random as usize][a]];
            if a == 2 {
                run.total_mbps()
            } else {
                run.mbps(a)
            }
        };
        // relative change of fs against raw over reads, writes and 50/50
        let change = |name: &str, fs: usize, random: bool| {
            let raw: f64 = (0..3).map(|a| bw(name, 0, random, a)).sum();
            let f: f64 = (0..3).map(|a| bw(name, fs, random, a)).sum();
            (f / raw - 1.0) * 100.0
        };
        // mean QD1 latency over reads and writes, µs
        let lat = |name: &str, xfs: bool| {
            let l = dev(name).lat[xfs as usize];
            (r[l[0]].lat_us(0) + r[l[1]].lat_us(1)) / 2.0
        };
        let adds = |name: &str| lat(name, true) - lat(name, false);
        let adds_pct = |name: &str| adds(name) / lat(name, false) * 100.0;
        let loss = |name: &str, fs: usize, random: bool, a: usize| {
            (1.0 - bw(name, fs, random, a) / bw(name, 0, random, a)) * 100.0
        };
        // one 4 MB request's time in the queue of 16 on the raw device, ms
        let service_ms = |name: &str, a: usize| 16.0 * 4.194_304 / bw(name, 0, false, a) * 1e3;
        // what 2.6.2x XFS does differently on a 4 MB direct request (the
        // reasons of the 4 MB rows)
        let same_bios = "a direct IO through XFS builds the same bios as on the raw device (xfs_get_blocks_direct maps the request's extent, blkdev_get_blocks the request; fs/direct-io.c does the same per-page work for both), the iolock an extending or cached-page write takes exclusive is demoted before the IO (xfs_write), and the file's size and time stamps are set in core and written with the inode, not logged per request (xfs_setfilesize, xfs_ichgtime: XFS logged them per IO only from 3.x)";
        let mut rows = Vec::new();
        let mut notes: Vec<(String, String)> = vec![("same-bios".into(), same_bios.into())];
        for (a, what) in [(0, "reads"), (1, "writes")] {
            rows.push(Row::within(
                format!("haste-dram, 4 MB sequential {what}: XFS loses"),
                bw("haste-dram", 0, false, a) - bw("haste-dram", 1, false, a),
                50.0,
                0.25,
                "MB/s",
            )
            .miss_because(format!(
                "the raw array moves {:.0} MB/s, bound by its link, and XFS's work per 4 MB request runs while 15 other requests keep the link busy; 50 MB/s needs the link idle {:.0} µs per request, which nothing in XFS does (note [same-bios]).",
                bw("haste-dram", 0, false, a),
                50.0 / bw("haste-dram", 0, false, a) * service_ms("haste-dram", a) * 1e3 / 16.0,
            )));
        }
        rows.push(Row::within(
            "haste-dram, 4 KB random writes, raw device",
            bw("haste-dram", 0, true, 1) / 1000.0,
            1.3,
            0.25,
            "GB/s",
        ));
        rows.push(
            Row::within(
                "haste-dram, 4 KB random writes through XFS",
                bw("haste-dram", 1, true, 1),
                210.0,
                0.25,
                "MB/s",
            )
            .input("alloc_ns (fs.alloc_ns, CALIBRATED against this figure)"),
        );
        rows.push(Row::within(
            "haste-dram, 4 KB random writes: XFS loses",
            loss("haste-dram", 1, true, 1),
            84.0,
            0.25,
            "%",
        ));
        rows.push(Row::within(
            "ddr-dram, 4 KB latency through XFS / raw",
            lat("ddr-dram", true) / lat("ddr-dram", false),
            2.7,
            0.25,
            "x",
        ));
        rows.push(Row::within(
            "ddr-dram, 4 KB random writes: XFS loses",
            loss("ddr-dram", 1, true, 1),
            96.0,
            0.25,
            "%",
        ));
        rows.push(Row::within(
            "ddr-dram, 4 KB random reads: XFS loses",
            loss("ddr-dram", 1, true, 0),
            55.0,
            0.25,
            "%",
        ));
        for name in ["ddr-dram", "haste-dram"] {
            rows.push(Row::within(
                format!("{name}, XFS adds per 4 KB access"),
                adds(name),
                6.0,
                0.25,
                "µs",
            ));
        }
        let raw = |name: &str| lat(name, false);
        rows.push(Row::within(
            "ddr-pcm, XFS adds per 4 KB access",
            adds_pct("ddr-pcm"),
            93.0,
            0.25,
            "%",
        ));
        rows.push(
            Row::within(
                "haste-pcm, XFS adds per 4 KB access",
                adds_pct("haste-pcm"),
                50.0,
                0.25,
                "%",
            )
            .miss_because(format!(
                "XFS adds {:.1} µs, as on haste-dram; the raw haste-pcm latency is {:.1} µs (the 15-16 µs the haste-ddr rows publish), where +50% of about 6 µs implies about 12 µs.",
                adds("haste-pcm"),
                raw("haste-pcm")
            )),
        );
        let dl = dev("raid-disk").lat[0];
        notes.push(("raid-disk-xfs".into(), format!(
            "XFS adds its per-request CPU ({:.1} µs) and nothing with seeks of its own: a laid-out file lies in one allocation group near its inode (inode32, the 2.6.2x default, keeps inodes in the first TB), as compact as the raw test's 55 GB (16 streams' extents interleave without gaps: xfs_bmap_adjacent puts an extent right after its logical predecessor when the gap between them is over four times the allocation, and NEAR_BNO takes the nearest free block); its extent list is read into core once (xfs_iread_extents); atime, mtime and size are set in core and written with the inode by xfssyncd at most every 30 s (no transaction per access before 3.x); no 2.6.2x mechanism found adds 580 µs. The +8% rests on the raw latency too: 580 µs is 8% of 7.25 ms, where the model's raw mean is {:.2} ms (reads {:.2} ms; writes {:.0} µs, taken by the controller's write-back cache)",
            adds("raid-disk"),
            lat("raid-disk", false) / 1e3,
            r[dl[0]].lat_us(0) / 1e3,
            r[dl[1]].lat_us(1),
        )));
        let disk_why = "no 2.6.2x XFS mechanism found that adds 580 µs per access on the disk RAID; see note [raid-disk-xfs].";
        rows.push(
            Row::within(
                "raid-disk, XFS adds per 4 KB access",
                adds("raid-disk"),
                580.0,
                0.25,
                "µs",
            )
            .miss_because(disk_why),
        );
        rows.push(
            Row::within(
                "raid-disk, XFS adds per 4 KB access, relative to raw",
                adds_pct("raid-disk"),
                8.0,
                0.25,
                "%",
            )
            .miss_because(disk_why),
        );
        let (worst, which) = (0..2)
            .flat_map(|random| (0..3).map(move |a| (random == 1, a)))
            .map(|(random, a)| {
                let kind = if random { "random" } else { "sequential" };
                let what = ["reads", "writes", "50/50"][a];
                (loss("raid-disk", 1, random, a), format!("{kind} {what}"))
            })
            .fold(
                (f64::MIN, String::new()),
                |w, x| if x.0 > w.0 { x } else { w },
            );
        rows.push(Row::holds(
            "raid-disk, bandwidth lost to XFS",
            "never more than 10%",
            format!("at most {worst:.1}% ({which})"),
            worst <= 10.0,
        ));
        rows.push(
            Row::within(
                "raid-ssd, sequential bandwidth through XFS",
                -change("raid-ssd", 1, false),
                5.0,
                0.25,
                "% lost",
            )
            .miss_because(format!(
                "the array is bound by its drives at 4 MB ({:.0} MB/s reads, {:.0} MB/s writes raw) and XFS's costs are per request, with extents aligned to md's stripe unit; 5% needs per-byte work, which XFS does not add (note [same-bios]).",
                bw("raid-ssd", 0, false, 0),
                bw("raid-ssd", 0, false, 1),
            )),
        );
        let ssd_w = loss("raid-ssd", 1, true, 1);
        rows.push(
            Row::within(
                "raid-ssd, random bandwidth through XFS",
                -change("raid-ssd", 1, true),
                10.0,
                0.25,
                "% lost",
            )
            .miss_because(format!(
                "raw random writes run at {:.0} MB/s, under XFS's allocation cap, so XFS costs its CPU and the section's latency: writes lose {ssd_w:.1}%, reads {:.1}%, the 50/50 {:.1}%. 10% over the three needs reads to lose as much as writes, where XFS's 5 µs is a few % of a {:.0} µs read.",
                bw("raid-ssd", 0, true, 1),
                loss("raid-ssd", 1, true, 0),
                -((bw("raid-ssd", 1, true, 2) / bw("raid-ssd", 0, true, 2)) - 1.0) * 100.0,
                r[dev("raid-ssd").lat[0][0]].lat_us(0),
            )),
        );
        rows.push(
            Row::within(
                "raid-ssd, XFS adds to 4 KB latency",
                adds_pct("raid-ssd"),
                4.0,
                0.25,
                "%",
            )
            .miss_because(format!(
                "XFS adds {:.1} µs, as on the other devices, to a raw QD1 latency of {:.0} µs (reads {:.0} µs, writes {:.0} µs); +4% implies about {:.0} µs raw or {:.1} µs of XFS.",
                adds("raid-ssd"),
                raw("raid-ssd"),
                r[dev("raid-ssd").lat[0][0]].lat_us(0),
                r[dev("raid-ssd").lat[0][1]].lat_us(1),
                adds("raid-ssd") / 0.04,
                raw("raid-ssd") * 0.04,
            )),
        );
        let ext3_vs_xfs = |random: bool| {
            let x: f64 = (0..3).map(|a| bw("raid-disk", 1, random, a)).sum();
            let e: f64 = (0..3).map(|a| bw("raid-disk", 2, random, a)).sum();
            (e / x - 1.0) * 100.0
        };
        let (s, rnd) = (ext3_vs_xfs(false), ext3_vs_xfs(true));
        rows.push(Row::holds(
            "raid-disk, ext3 against XFS",
            "about the same",
            format!("sequential {s:+.1}%, random {rnd:+.1}%"),
            s.abs() <= 10.0 && rnd.abs() <= 10.0,
        ));
        // the fast devices: the HASTE array and the DDR RAM disk
        let fast =
            |fs: usize| (change("haste-dram", fs, false) + change("ddr-dram", fs, false)) / 2.0;
        rows.push(Row::within(
            "fast devices (haste-dram, ddr-dram), sequential bandwidth through ext3",
            -fast(2),
            74.0,
            0.25,
            "% lost",
        )
        .miss_because("the model's ext3 reads through the HASTE array overlap (it completes by interrupt), so the mean falls short of 74%; see note [ext3-fast]."));
        notes.push(("ext3-fast".into(), format!(
            "the model's ext3 differs from XFS by i_mutex around writes and around a direct read's submission (DIO_LOCKING), and its fall-back to the page cache for direct writes into holes: writes lose {:.0}% (haste-dram) and {:.0}% (ddr-dram), reads {:.0}% and {:.0}% (the RAM disk's submission is its copy, so its reads take turns; the HASTE array's submission is a few µs of a 2 ms transfer, and ext3 maps a 4 MB request in one or two get_block calls, ext3_get_blocks_handle mapping contiguous blocks up to an indirect block's end); the mean over reads, writes and 50/50 on both devices falls short of the published 74%, which needs the HASTE array's reads to lose too. They would if HASTE's driver spun inside its submission (docs/spec/pcie-arrays.md: the requesting thread issues the command and spins until it completes; 2.6.2x has no block-layer polling, so a spinning driver spins in its make_request and submit_bio returns at completion): a direct read's i_mutex would then cover its transfer as on the RAM disk, and ext3's reads would take turns as its writes do; the haste presets complete by interrupt (host.completion, following the latency breakdown's interrupt and context switch), so the model's reads through ext3 overlap",
            loss("haste-dram", 2, false, 1),
            loss("ddr-dram", 2, false, 1),
            loss("haste-dram", 2, false, 0),
            loss("ddr-dram", 2, false, 0)
        )));
        rows.push(Row::within(
            "fast devices (haste-dram, ddr-dram), sequential bandwidth through XFS",
            fast(1),
            2.0,
            0.25,
            "% gained",
        )
        .miss_because(format!(
            "XFS cannot make the same bios faster (note [same-bios]): haste-dram changes {:+.2}%, ddr-dram {:+.2}%; see note [ram-disk-gain].",
            change("haste-dram", 1, false),
            change("ddr-dram", 1, false),
        )));
        notes.push(("ram-disk-gain".into(), format!(
            "As the study's haste-dram lost about 2% (50 MB/s) on reads and writes, its +2% mean implies ddr-dram gained about 6%: a RAM-disk effect, if any: brd takes a page from the node of the CPU that first writes it, so a file written by 16 threads over both sockets would have its pages behind all six channels where a disk filled by one writer has them behind three; the model keeps every page behind three (ddr.disk_channels) whoever wrote it, and with six its raw ddr-dram runs gain {:.0}%, not 6%",
            (six.iter().enumerate().map(|(a, &id)| if a == 2 { r[id].total_mbps() } else { r[id].mbps(a) }).sum::<f64>()
                / (0..3).map(|a| bw("ddr-dram", 0, false, a)).sum::<f64>()
                - 1.0)
                * 100.0,
        )));
        Reproduction {
            study: "filesystems".into(),
            title: "Caulfield et al., Understanding the Impact of Emerging Non-Volatile Memories, SC 2010: file systems (V-A)".into(),
            class: Class::Device,
            state_rule: STATE_RULE.into(),
            notes,
            setting: "XDD through XFS and ext3 against the raw device: 16 threads, QD1 each, direct IO, one file (the study's 55 GB on the disk RAID; 768 MB on the SSD RAID, scaled down and preconditioned: random writes from the steady state of random writes over the file, the other tests from the drives written once; 4 GB on the memory devices); 4 MB sequential and 4 KB random; latency one thread, 4 KB random. Write tests write a fresh file; read, mixed and latency tests a laid-out one.".into(),
            rows: at_all(rows, HASTE_5A),
            figures: Vec::new(),
        }
    };
    Prepared {
        plan: p,
        finish: Box::new(finish),
    }
}
