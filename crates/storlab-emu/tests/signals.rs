//! SIGUSR1 cuts the power and SIGTERM stops the server cleanly, syncing a
//! file store. One test in its own binary: signal handlers are process-wide.

mod common;

use std::time::Duration;

use common::*;
use storlab_emu::{serve, ServeOptions, ShutdownHandle, StoreSpec};
use storlab_model::devices::fixed::FixedLatency;

#[test]
fn sigusr1_cuts_power_and_sigterm_shuts_down_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("s.sock");
    let img = dir.path().join("disk.img");
    let size = 8 << 20;
    let opts = ServeOptions {
        socket: Some(socket.clone()),
        size,
        store: StoreSpec::File(img.clone()),
        handle_signals: true,
        ..ServeOptions::default()
    };
    let server = std::thread::spawn(move || {
        serve(
            opts,
            Box::new(Volatile(FixedLatency::new(0, size))),
            ShutdownHandle::new(),
        )
    });
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(std::time::Instant::now() < end, "server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut c = RawClient::connect(&socket, false);
    c.write(1, 0, &[1; 4096], 0);
    c.flush(2);
    c.write(3, 4096, &[2; 4096], 0);
    // SAFETY: raising a signal whose handler the server installed.
    unsafe { libc::raise(libc::SIGUSR1) };
    let end = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = c.read(4, 4096, 4096);
        if r.data.iter().all(|&b| b == 0) {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "SIGUSR1 did not cut the power"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.read(5, 0, 4096).data, vec![1; 4096]);
    c.write(6, 8192, &[3; 4096], 0);
    c.disconnect();
    // SAFETY: as above, for SIGTERM.
    unsafe { libc::raise(libc::SIGTERM) };
    let report = server
        .join()
        .expect("server thread")
        .expect("clean shutdown");
    assert_eq!(report.durability.power_cuts, 1);
    assert!(!socket.exists(), "socket removed at shutdown");
    // Nothing acknowledged is lost on a clean shutdown.
    let bytes = std::fs::read(&img).expect("image");
    assert_eq!(&bytes[..4096], &[1; 4096][..]);
    assert_eq!(&bytes[4096..8192], &[0; 4096][..]);
    assert_eq!(&bytes[8192..12288], &[3; 4096][..]);
}
