//! The recorder of the requests served (`ServeOptions::record`): a thread
//! that writes them as a block trace, or hands them to the closed-loop
//! recorder (`crate::closedrec`).

use std::fs::File;
use std::io::BufWriter;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use storlab_trace::{writer as trace_writer, TraceRecord, WriteOptions};

use crate::error::EmuError;
use crate::options::RecordSpec;
use crate::report::RecordReport;
use crate::shared::RecorderMsg;

/// Create the trace file and start the thread that writes it (file IO
/// stays off the reply path).
pub(super) fn start_recorder(
    spec: &RecordSpec,
) -> Result<(mpsc::Sender<RecorderMsg>, JoinHandle<RecordReport>), EmuError> {
    let file = File::create(&spec.path)
        .map_err(|e| EmuError::io(format!("creating {}", spec.path.display()), e))?;
    if spec.closed {
        return crate::closedrec::start(spec, file);
    }
    let (tx, rx) = mpsc::channel::<RecorderMsg>();
    let spec = spec.clone();
    let handle = thread::Builder::new()
        .name("nbd-record".into())
        .spawn(move || {
            let opts = WriteOptions {
                reorder_window_ns: spec.reorder_window_ns,
                ..WriteOptions::default()
            };
            let mut w = trace_writer(spec.format, BufWriter::new(file), &opts);
            let mut report = RecordReport {
                path: spec.path.clone(),
                format: spec.format.to_string(),
                written: 0,
                dropped: 0,
                inexact: 0,
                error: None,
            };
            let mut late = 0;
            while let Ok(RecorderMsg::Served(s)) = rx.recv() {
                let r = TraceRecord {
                    time_ns: s.arrival_ns,
                    op: s.op,
                    offset: s.offset,
                    len: s.len,
                    device: 0,
                    recorded_latency_ns: Some(s.reply_ns.saturating_sub(s.arrival_ns)),
                    stream: s.stream,
                };
                if w.record(&r).is_err() {
                    late += 1;
                }
            }
            if let Err(e) = w.finish() {
                report.error = Some(e.to_string());
            }
            let st = w.stats();
            report.written = st.written;
            report.dropped = st.dropped + late;
            report.inexact = st.inexact;
            report
        })
        .map_err(|e| EmuError::io("spawning the recorder thread", e))?;
    Ok((tx, handle))
}
