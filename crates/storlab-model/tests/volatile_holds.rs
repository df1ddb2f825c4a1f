//! `Device::volatile_holds`: every device with a volatile write cache says
//! which ranges it still holds unwritten, from the write's completion (it
//! is in the cache) until the model destages it, and never a range it was
//! not given. One test per cache class, on the shipped presets.

mod common;

use common::{build, Drv};
use storlab_model::{DevRequest, Op};

impl Drv {
    fn submit(&mut self, t: u64, req: DevRequest) {
        self.run_until(t);
        self.now = t;
        self.dev.submit(t, req, &mut self.cx);
        self.drain();
    }
    /// Run until request `id` has completed; its completion time.
    fn until_done(&mut self, id: u64) -> u64 {
        loop {
            if let Some(c) = self.done.iter().find(|c| c.id == id) {
                return c.at;
            }
            let Some(&std::cmp::Reverse((at, _, _))) = self.heap.peek() else {
                panic!("request {id} never completed");
            };
            self.run_until(at);
        }
    }
    /// Run every wake-up left.
    fn settle(&mut self) {
        self.run_until(u64::MAX);
    }
}

fn write(id: u64, offset: u64, len: u64) -> DevRequest {
    DevRequest::new(id, Op::Write, offset, len)
}

/// 4 KiB blocks of `[off, off + len)` the device holds unwritten.
fn held_blocks(d: &Drv, off: u64, len: u64) -> u64 {
    (0..len / 4096)
        .filter(|i| d.dev.volatile_holds(off + i * 4096, 4096))
        .count() as u64
}

/// `preset` (with `set`): a write of `len` at `off` is held once done,
/// other ranges are not, and once the model is idle at most `remnant`
/// 4 KiB blocks of it are still held (0: all destaged).
fn holds_until_destaged(preset: &str, set: &[&str], off: u64, len: u64, remnant: u64) {
    let mut d = Drv::new(build(preset, set));
    assert!(d.dev.volatile_write_cache(), "{preset}");
    assert!(!d.dev.volatile_holds(off, len), "{preset}: empty at first");
    d.submit(0, write(1, off, len));
    let at = d.until_done(1);
    d.run_until(at);
    let at_first = held_blocks(&d, off, len);
    assert!(at_first > 0, "{preset}: held once acked");
    assert!(
        !d.dev.volatile_holds(off + len + (64 << 20), len),
        "{preset}: not a range never written"
    );
    d.settle();
    let left = held_blocks(&d, off, len);
    assert!(
        left <= remnant && left < at_first,
        "{preset}: {left} of {at_first} blocks still held once idle"
    );
}

#[test]
fn disk_write_cache() {
    holds_until_destaged("hdd-7200", &[], 1 << 30, 64 << 10, 0);
}

#[test]
fn raid_controller_cache() {
    holds_until_destaged("raid-disk", &[], 1 << 30, 256 << 10, 0);
}

#[test]
fn ssd_dram_buffer() {
    holds_until_destaged("sata-ssd", &[], 1 << 30, 1 << 20, 0);
}

#[test]
fn flash_tier_over_disks() {
    // The ioDrive's buffer keeps a partly filled 96 KiB page until more
    // writes fill it (the tier's flush flushes the disks behind it, not
    // the ioDrive): 1 MiB is 10 pages and 64 KiB.
    holds_until_destaged("flash-cache-wb", &[], 1 << 30, 1 << 20, 16);
}

#[test]
fn a_cache_without_a_volatile_part_holds_nothing() {
    // Write-through controller over disks with their caches off.
    let mut d = Drv::new(build("raid-disk", &["raid.controller.write_back=false"]));
    d.submit(0, write(1, 0, 64 << 10));
    let at = d.until_done(1);
    d.run_until(at);
    assert!(!d.dev.volatile_holds(0, 64 << 10));
}
