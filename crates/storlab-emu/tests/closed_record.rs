//! `RecordSpec::closed`: the server records a closed-loop trace whose
//! dependencies, threads, flags and think times follow what the client
//! did on the wire (the inference rules are unit-tested in
//! `storlab_trace::closed`; this checks the hook in the reactor).

mod common;

use common::*;
use storlab_emu::proto::{CMD_FLAG_FUA, CMD_WRITE};
use storlab_emu::{RecordSpec, ServeOptions};
use storlab_model::devices::fixed::FixedLatency;
use storlab_trace::TraceOp;

const MIB: u64 = 1 << 20;

#[test]
fn the_recorded_trace_follows_the_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.trace");
    let size = 16 * MIB;
    // 2 ms per request: two requests sent back to back are in flight together
    let srv = TestServer::start(
        ServeOptions {
            size,
            record: Some(RecordSpec::closed(&path)),
            ..ServeOptions::default()
        },
        Box::new(FixedLatency::new(2_000_000, size)),
    );
    let mut c = RawClient::connect(&srv.socket, false);
    let data = pattern(7, 4096);
    // two writes at once, the second with FUA
    c.send(CMD_WRITE, 0, 1, 0, 4096, &data);
    c.send(CMD_WRITE, CMD_FLAG_FUA, 2, 8192, 4096, &data);
    let a = c.recv(|_| 0);
    let b = c.recv(|_| 0);
    assert_eq!((a.error, b.error), (0, 0));
    // think 1 s, then a flush that covers both (long enough that the
    // read's think time after the flush's reply, a loop turn of this
    // client, stays shorter on a loaded host)
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert_eq!(c.flush(3).error, 0);
    // then a read after the flush
    assert_eq!(c.read(4, 0, 4096).data, data);
    c.disconnect();
    let report = srv.stop();
    let rec = report.record.expect("record report");
    assert_eq!(rec.format, "closed");
    assert_eq!(rec.written, 4);
    assert_eq!(rec.error, None);
    let t = storlab_trace::closed::load(&path).expect("loads");
    assert_eq!(t.streams.len(), 1);
    let r = &t.streams[0].1;
    let ops: Vec<TraceOp> = r.iter().map(|x| x.op).collect();
    assert_eq!(
        ops,
        [
            TraceOp::Write,
            TraceOp::Write,
            TraceOp::Flush,
            TraceOp::Read
        ]
    );
    assert_eq!(
        r.iter().map(|x| x.fua).collect::<Vec<_>>(),
        [false, true, false, false]
    );
    // the writes depend on nothing and overlap: two threads
    assert_eq!((r[0].after, r[1].after), (0, 0));
    assert_ne!(r[0].thread, r[1].thread);
    assert!(r[1].arrival_ns < r[0].complete_ns);
    // the flush waited for both writes, the read for all three
    assert_eq!(r[2].after, 2);
    assert_eq!(r[3].after, 3);
    // the device took its 2 ms; the think time before the flush holds the
    // client's 1 s sleep
    for x in r {
        assert!(x.complete_ns - x.arrival_ns >= 2_000_000, "{x:?}");
    }
    assert!(r[2].think_ns >= 1_000_000_000, "{:?}", r[2]);
    // the read's think time is what the client took between the flush's
    // reply and the read (a loop turn here), not the sleep before the
    // flush: shorter than it unless the host stalls this thread for a
    // whole second between the two (issue 59: with a 200 ms sleep, a
    // loaded host's stall made it longer)
    assert!(r[3].think_ns < r[2].think_ns, "{:?} after {:?}", r[3], r[2]);
    assert_eq!(t.recorded_span_ns(), r[3].complete_ns);
}
