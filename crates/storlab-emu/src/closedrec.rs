//! The closed-loop recorder (`RecordSpec::closed`): a thread that turns
//! the requests served, in the order their replies were sent, into a
//! `storlab-closed` trace (`storlab_trace::closed`, which documents the
//! inference and what it approximates). File IO stays off the reply path,
//! as for the other formats.

use std::fs::File;
use std::io::BufWriter;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use storlab_trace::closed::{ClosedWriter, Inference};

use crate::error::EmuError;
use crate::options::RecordSpec;
use crate::report::RecordReport;
use crate::shared::RecorderMsg;

/// Start the recorder thread writing `file`.
pub(crate) fn start(
    spec: &RecordSpec,
    file: File,
) -> Result<(mpsc::Sender<RecorderMsg>, JoinHandle<RecordReport>), EmuError> {
    let (tx, rx) = mpsc::channel::<RecorderMsg>();
    let spec = spec.clone();
    let handle = thread::Builder::new()
        .name("nbd-record".into())
        .spawn(move || {
            let mut report = RecordReport {
                path: spec.path.clone(),
                format: "closed".into(),
                written: 0,
                dropped: 0,
                inexact: 0,
                error: None,
            };
            let comment = format!(
                "recorded by storlab serve {}; times in ns since the server started",
                env!("CARGO_PKG_VERSION")
            );
            let mut w = match ClosedWriter::new(BufWriter::new(file), &[&comment]) {
                Ok(w) => w,
                Err(e) => {
                    report.error = Some(format!("{}: {e}", spec.path.display()));
                    // keep receiving so the reactor's sends never fail
                    while let Ok(RecorderMsg::Served(_)) = rx.recv() {}
                    return report;
                }
            };
            let mut inf = Inference::new(spec.reorder_window_ns);
            let mut out = Vec::new();
            let mut failed: Option<std::io::Error> = None;
            let mut emit = |out: &mut Vec<_>, w: &mut ClosedWriter<_>| {
                for r in out.drain(..) {
                    if failed.is_none() {
                        if let Err(e) = w.write(&r) {
                            failed = Some(e);
                        }
                    }
                }
            };
            while let Ok(RecorderMsg::Served(s)) = rx.recv() {
                inf.push(s, &mut out);
                emit(&mut out, &mut w);
            }
            inf.finish(&mut out);
            emit(&mut out, &mut w);
            report.written = w.written();
            report.inexact = inf.stats().inexact;
            if let Err(e) = w.finish() {
                failed.get_or_insert(e);
            }
            if let Some(e) = failed {
                report.error = Some(format!("{}: {e}", spec.path.display()));
            }
            report
        })
        .map_err(|e| EmuError::io("spawning the recorder thread", e))?;
    Ok((tx, handle))
}
