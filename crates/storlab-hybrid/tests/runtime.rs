//! The hybrid memory runtime with real page faults: data survives any
//! number of evictions from several threads, DRAM stays within its bound,
//! and every device read takes at least the model's time.

use storlab_emu::store::StoreSpec;
use storlab_hybrid::{page_size, HybridConfig, HybridError, HybridMemory};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

fn device(preset: &str, set: &[&str]) -> Box<dyn storlab_model::Device> {
    let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), preset, &set).expect("preset");
    cfg.build_device().expect("device")
}

fn region(size: u64, dram: u64, preset: &str, set: &[&str]) -> HybridMemory {
    let cfg = HybridConfig {
        size_bytes: size,
        dram_bytes: dram,
        store: StoreSpec::Memory,
    };
    HybridMemory::new(&cfg, device(preset, set)).expect("region")
}

/// A byte that depends on where it is and on the pass.
fn pattern(off: usize, pass: u8) -> u8 {
    (off as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(17) as u8
        ^ pass
}

#[test]
fn data_survives_eviction_from_several_threads() {
    let page = page_size() as usize;
    let (size, dram) = (8 << 20, 64 * page as u64); // 2048 pages behind 64
    let mut m = region(size, dram, "null", &[]);
    for pass in 0..2u8 {
        let chunk = size as usize / 4;
        std::thread::scope(|s| {
            for (t, part) in m.as_mut_slice().chunks_mut(chunk).enumerate() {
                s.spawn(move || {
                    // write every byte of a page in a scattered page order
                    let pages = part.len() / page;
                    for k in 0..pages {
                        let pg = (k * 7919) % pages;
                        for i in 0..page {
                            let off = t * chunk + pg * page + i;
                            part[pg * page + i] = pattern(off, pass);
                        }
                    }
                });
            }
        });
        let bad = m
            .as_slice()
            .iter()
            .enumerate()
            .filter(|(off, b)| **b != pattern(*off, pass))
            .count();
        assert_eq!(bad, 0, "pass {pass}: bytes differ after eviction");
        let r = m.resident_pages();
        assert!(r <= 64, "resident {r} pages, bound 64");
    }
    let s = m.stats();
    assert!(s.resident_peak <= 64 && s.resident_peak >= 60, "{s:?}");
    // every page is zero-filled at its first touch, and again after each
    // eviction that caught it before its writer wrote to it (the threads
    // race the handler, so how often is up to the scheduler)
    assert_eq!(
        s.zero_fills,
        2048 + s.zero_evictions,
        "every page touched first once: {s:?}"
    );
    assert!(s.zero_evictions <= s.clean_evictions, "{s:?}");
    assert!(
        s.device_reads >= 2048,
        "the second pass and the check read pages back: {s:?}"
    );
    assert!(
        s.device_writes >= 2 * 2048 - 64,
        "dirty pages written on eviction: {s:?}"
    );
    // reading only: evicted pages are clean, nothing is written
    let before = m.stats();
    let sum: u64 = m.as_slice().iter().map(|&b| b as u64).sum();
    assert!(sum > 0);
    let after = m.stats();
    assert_eq!(
        after.device_writes, before.device_writes,
        "clean pages are not written back"
    );
    assert!(after.clean_evictions > before.clean_evictions);
}

#[test]
fn a_fault_waits_for_the_model_latency() {
    let page = page_size();
    let latency_ns = 200_000u64;
    let mut m = region(
        256 * page,
        16 * page,
        "null",
        &[&format!("device.latency_ns={latency_ns}")],
    );
    // write every page, then read them back: the reads of evicted pages
    // go to the device
    let len = m.len();
    for off in (0..len).step_by(page as usize) {
        m.as_mut_slice()[off] = 1;
    }
    let t0 = std::time::Instant::now();
    let sum: u64 = m
        .as_slice()
        .iter()
        .step_by(page as usize)
        .map(|&b| b as u64)
        .sum();
    let took = t0.elapsed();
    assert_eq!(sum, 256);
    let s = m.stats();
    assert!(s.device_reads >= 240, "{s:?}");
    assert!(
        (s.model_read_us.mean - 200.0).abs() < 1.0,
        "the model's read latency: {s:?}"
    );
    assert!(
        s.fault_us.p50 >= 200.0,
        "no fault served before its deadline: {s:?}"
    );
    // one thread, one fault at a time: the reads cannot overlap
    assert!(
        took.as_micros() as u64 >= s.device_reads * latency_ns / 1000,
        "{took:?} for {} reads",
        s.device_reads
    );
}

#[test]
fn bad_configurations_name_the_field() {
    let page = page_size();
    let cases = [
        (page + 1, 4 * page, "null", "size_bytes"),
        (0, 4 * page, "null", "size_bytes"),
        (16 * page, page, "null", "dram_bytes"),
    ];
    for (size, dram, preset, field) in cases {
        let cfg = HybridConfig {
            size_bytes: size,
            dram_bytes: dram,
            store: StoreSpec::Memory,
        };
        match HybridMemory::new(&cfg, device(preset, &[])) {
            Err(HybridError::Config { field: f, message }) => {
                assert_eq!(f, field, "{message}")
            }
            Err(e) => panic!("{size}/{dram}: {e}"),
            Ok(_) => panic!("{size}/{dram}: accepted"),
        }
    }
    let cfg = HybridConfig {
        size_bytes: 1 << 30,
        dram_bytes: 1 << 20,
        store: StoreSpec::Memory,
    };
    let e = HybridMemory::new(&cfg, device("null", &["device.capacity_bytes=1048576"]))
        .err()
        .expect("refused");
    assert!(
        e.to_string().contains("exceeds the device's capacity"),
        "{e}"
    );
}
