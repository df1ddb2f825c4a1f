//! Closed-loop record and replay, checked against the emulator: fio
//! (random 4 KiB reads and writes, queue depth 1, think time) recorded on
//! one device, its run time predicted on another by the simulator, and
//! run there for real. Disk to flash and back, in about 10 s.
//!
//! The bounds. Flash to disk, 30 %: the device's time dominates the run
//! (3.7 ms per request against 0.2 ms of think time), so what the replay
//! cannot know (the disk's rotational position at each arrival, the
//! host's noise in the think times) is a small part of it; measured -13
//! to +19 % over many runs on the loaded 2-CPU machine, usually within
//! 5 %. Disk to flash: there the think time is the run, and two runs of
//! fio on the *same* flash device differ by up to -78 to +362 % when the
//! machine is loaded (crates/storlab-sim/README.md), so no bound on the
//! error would be honest in CI; the test asserts instead that the
//! prediction follows the device: at most half the error of taking the
//! recorded time (which is off by +600 to +1400 %). And a replay on the
//! recording device gives back the recorded run time exactly: the
//! emulator and the simulator drive the same model the same way.

mod closed_harness;

use closed_harness::*;

#[test]
fn fio_with_think_time_predicted_from_disk_to_flash_and_back() {
    require("fio", "fio");
    let dir = tempfile::tempdir().expect("tempdir");
    let app = App::FioThink {
        ios: 300,
        think_us: 100,
    };
    let disk = record("raid-disk", &app, 256 * MIB, dir.path());
    let flash = record("fusion-io", &app, 256 * MIB, dir.path());
    assert_eq!(disk.requests, 300);
    assert_eq!(flash.requests, 300);
    for (from, to) in [(&disk, &flash), (&flash, &disk)] {
        let c = check(from, to);
        eprintln!(
            "{} -> {}: predicted {:.4} s, actual {:.4} s, error {:+.1} % (ignoring the device: {:+.1} %)",
            c.from,
            c.to,
            c.prediction.runtime_s,
            c.actual_s,
            c.error * 100.0,
            c.naive_error * 100.0
        );
        if c.to == "raid-disk" {
            assert!(c.error.abs() < 0.30, "{c:?}");
        }
        assert!(c.error.abs() < c.naive_error.abs() / 2.0, "{c:?}");
    }
    for run in [&disk, &flash] {
        let c = check(run, run);
        assert!(
            (c.prediction.runtime_s / run.span_s - 1.0).abs() < 1e-6,
            "replayed on its own device: {c:?}"
        );
    }
}
