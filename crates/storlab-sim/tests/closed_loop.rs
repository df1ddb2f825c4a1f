//! Closed-loop record and replay, checked against the emulator: fio
//! (random 4 KiB reads and writes, queue depth 1, think time) recorded on
//! one device, its run time predicted on another by the simulator, and
//! run there for real. Disk to flash and back, in about 10 s.
//!
//! The bounds. Flash to disk, 30 %: the device's time dominates the run
//! (3.7 ms per request against 0.2 ms of think time), so what the replay
//! cannot know (the disk's rotational position at each arrival, the
//! host's noise in the think times) is a small part of it; measured
//! +3 to +5 %. Disk to flash, 60 %: there the think time is the run, and
//! on a loaded 2-CPU machine a client that never waits for its device
//! is preempted during its think time far more often than one that
//! sleeps 3.7 ms per request (measured -32 to -37 %: the prediction is
//! short by the preemptions; a second run on the same device differs by
//! up to 7 %). Both directions must also beat, by 3 times, the prediction
//! that ignores the device (the recorded run time, off by +600 % and
//! -88 %), so the test fails if the replay stops following the device.

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
        // see the module documentation for the bounds
        let bound = if c.to == "raid-disk" { 0.30 } else { 0.60 };
        assert!(c.error.abs() < bound, "{c:?}");
        assert!(c.naive_error.abs() > 3.0 * c.error.abs(), "{c:?}");
    }
}
