//! A flash drive in use on a host that never trims (issue 58, the SSD
//! RAID's random mix).
//!
//! Linux issued no ATA TRIM before 2.6.33 and XFS no discards before
//! 2.6.38, so every unit the Moneta study's X25-Es were ever given stayed
//! valid in their FTL. `ssd.ftl.precondition = "aged-in-full"` is that
//! state: the whole drive written once, a hot region (`fullness`) in the
//! steady state of random overwrites, the rest cold. `"aged"` over the
//! same share leaves the rest never written, spare for the collector, as
//! after a secure erase: random writes there collect almost nothing.

mod common;

/// A small X25-E (the peers study's scaled drive) in `state` over the
/// first `fullness` of its space.
fn x25e(state: &str, fullness: f64) -> Vec<String> {
    vec![
        "device.capacity_bytes=536870912".to_string(),
        "ssd.nand.blocks_per_plane=64".to_string(),
        format!("ssd.ftl.precondition=\"{state}\""),
        format!("ssd.ftl.fullness={fullness}"),
    ]
}

fn run(ov: &[String], fio: &[&str]) -> storlab_sim::stats::JobStats {
    let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
    common::run("x25e", &ov, fio)
}

#[test]
fn the_cold_rest_of_a_drive_in_use_is_read_from_flash() {
    // a read of the last 64 MB, outside the hot 40 %: written once on a
    // drive in use, never written after a secure erase
    let fio = [
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--offset=448m",
        "--size=64m",
        "--number_ios=200",
    ];
    let in_use = run(&x25e("aged-in-full", 0.4), &fio);
    let erased = run(&x25e("aged", 0.4), &fio);
    assert_eq!(common::counter(&in_use, "unmapped_reads"), 0.0);
    assert!(common::counter(&in_use, "nand_reads") >= 200.0);
    assert_eq!(common::counter(&erased, "unmapped_reads"), 200.0);
}

#[test]
fn random_writes_on_a_drive_in_use_pay_garbage_collection() {
    // sustained random writes over the hot 40 %: with the rest cold and
    // valid the collector copies valid units; with it never written the
    // spare is so large that victims are (nearly) empty
    let fio = [
        "--name=w",
        "--rw=randwrite",
        "--bs=4k",
        "--direct=1",
        "--iodepth=32",
        "--ioengine=libaio",
        "--size=204m",
        "--number_ios=20000",
    ];
    let in_use = run(&x25e("aged-in-full", 0.4), &fio);
    let erased = run(&x25e("aged", 0.4), &fio);
    let wa_in_use = common::counter(&in_use, "write_amplification");
    let wa_erased = common::counter(&erased, "write_amplification");
    assert!(
        wa_in_use > 1.3,
        "write amplification on a drive in use {wa_in_use:.2}"
    );
    assert!(
        wa_in_use > wa_erased + 0.2,
        "in use {wa_in_use:.2} against secure-erased {wa_erased:.2}"
    );
    assert!(common::counter(&in_use, "gc_units_moved") > 0.0);
}
