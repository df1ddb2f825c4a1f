//! A power cut loses exactly what the model's volatile caches still hold:
//! one test per class of volatile cache (a disk's write cache, a RAID
//! controller's DRAM, an SSD's DRAM write buffer, a flash tier over
//! disks), each on the shipped preset.
//!
//! Each test writes without a flush, waits until the model has destaged
//! everything (the report's `volatile_writes`, asked of the model, falls to
//! 0), cuts the power and finds every write kept; then writes again and
//! cuts at once: every block then reads as either the new write (kept) or
//! the old one (lost, the durable image under it), and the lost count is
//! the number that read old.

mod common;

use std::time::{Duration, Instant};

use common::{pattern, RawClient, TestServer};
use storlab_emu::proto::CMD_WRITE;
use storlab_emu::ServeOptions;
use storlab_model::config::PresetStore;
use storlab_model::{Device, SystemConfig};

fn preset(name: &str) -> Box<dyn Device> {
    let store = PresetStore::default();
    let (_, cfg) = SystemConfig::load(&store, name, &[]).expect("preset loads");
    cfg.build_device_in(&store).expect("device builds")
}

/// `writes` writes of `len` bytes, `stride` apart, on preset `name`.
fn power_cut_follows_the_model(name: &str, writes: u64, len: usize, stride: u64) {
    let dev = preset(name);
    assert!(dev.volatile_write_cache(), "{name} has a volatile cache");
    let srv = TestServer::start(
        ServeOptions {
            size: 256 << 20,
            // Tests run side by side on two CPUs: no real-time spinning.
            realtime: false,
            wake_assist: false,
            ..ServeOptions::default()
        },
        dev,
    );
    let ctl = srv.handle().control().clone();
    let mut c = RawClient::connect(&srv.socket, false);
    // Sent back to back, replies read after: the writes reach the model
    // within milliseconds, before it can destage many.
    let send_all = |c: &mut RawClient, seed: u8| {
        for i in 0..writes {
            let data = pattern(seed.wrapping_add(i as u8), len);
            c.send(CMD_WRITE, 0, i, i * stride, len as u32, &data);
        }
    };
    let recv_all = |c: &mut RawClient| {
        for i in 0..writes {
            assert_eq!(c.recv(|_| 0).error, 0, "{name}: write {i}");
        }
    };

    // 1. Written, left until the model's destaging is over (what it
    // holds stops changing for half a second), then a cut.
    // What the model holds is asked both while the replies are still
    // unread and after: on a loaded host the client can be descheduled
    // long enough for the model to destage a small burst (a few ms on
    // the SSD) before either look. The same burst again then (same data,
    // so what is kept is unchanged), until one look sees it held.
    let mut held_at_first = 0;
    for _ in 0..20 {
        send_all(&mut c, 1);
        let during = ctl.report().durability.volatile_writes;
        recv_all(&mut c);
        held_at_first = during.max(ctl.report().durability.volatile_writes);
        if held_at_first > 0 {
            break;
        }
    }
    assert!(
        held_at_first > 0,
        "{name}: the model holds the writes at first"
    );
    let t = Instant::now();
    let (mut held, mut since) = (u64::MAX, Instant::now());
    loop {
        let now_held = ctl.report().durability.volatile_writes;
        if now_held != held {
            (held, since) = (now_held, Instant::now());
        }
        if held == 0 || since.elapsed() > Duration::from_millis(500) {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{name}: still destaging"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Destaging ends with the cache empty, or holding a remnant it keeps
    // until a flush (an SSD's partly filled page).
    assert!(
        held * 4 <= writes,
        "{name}: the model destaged ({held} held)"
    );
    ctl.power_cut().expect("power cut");
    let d = ctl.report().durability;
    assert_eq!(
        d.lost_writes, held,
        "{name}: only what was held is lost: {d:?}"
    );
    assert!(d.destaged_writes >= writes - held, "{name}: counted: {d:?}");
    let mut kept = 0;
    for i in 0..writes {
        let r = c.read(100 + i, i * stride, len as u32);
        kept += u64::from(r.data == pattern(1u8.wrapping_add(i as u8), len));
    }
    assert_eq!(kept, writes - held, "{name}: the destaged writes read back");

    // 2. Written again and cut at once: lost exactly what the model held.
    send_all(&mut c, 101);
    recv_all(&mut c);
    let held = ctl.report().durability.volatile_writes;
    ctl.power_cut().expect("power cut");
    let d2 = ctl.report().durability;
    let lost = d2.lost_writes - d.lost_writes;
    let mut old = 0;
    for i in 0..writes {
        let r = c.read(200 + i, i * stride, len as u32);
        if r.data != pattern(101u8.wrapping_add(i as u8), len) {
            old += 1;
        }
    }
    assert_eq!(old, lost, "{name}: the writes lost read as the old data");
    // The model may destage between the report and the cut, never undo.
    assert!(lost <= held, "{name}: lost {lost} of the {held} held");
    c.disconnect();
    srv.stop();
}

#[test]
fn disk_write_cache() {
    // 32 MB buffer; 2 MiB of writes spread over the platter.
    power_cut_follows_the_model("hdd-7200", 32, 64 << 10, 4 << 20);
}

#[test]
fn raid_controller_cache() {
    // The case: 256 MB of controller DRAM, no battery.
    power_cut_follows_the_model("raid-disk", 64, 64 << 10, 1 << 20);
}

#[test]
fn ssd_dram_buffer() {
    // 4 MB buffer, 4 KiB writes.
    power_cut_follows_the_model("sata-ssd", 256, 4096, 64 << 10);
}

#[test]
fn flash_tier_write_back() {
    // ioDrive write buffer in front of disks with write caches.
    power_cut_follows_the_model("flash-cache-wb", 64, 64 << 10, 1 << 20);
}
