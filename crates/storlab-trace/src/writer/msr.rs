//! The MSR Cambridge CSV writer.

use super::base::{multiple_of, Core, TraceWriter, WriteOptions, WriteStats};
use crate::error::TraceError;
use crate::msr::{NS_PER_TICK, UNIX_EPOCH_FILETIME};
use crate::{Format, TraceOp, TraceRecord};
use std::io::{BufWriter, Write};

/// MSR Cambridge CSV writer. Times count from the Unix epoch as a Windows
/// filetime; a record without a latency gets a ResponseTime of 0.
pub struct MsrWriter<W: Write> {
    out: BufWriter<W>,
    host: String,
    core: Core,
}

impl<W: Write> MsrWriter<W> {
    /// An MSR writer.
    pub fn new(out: W, opts: &WriteOptions) -> Self {
        MsrWriter {
            out: BufWriter::new(out),
            host: opts.msr_hostname.clone(),
            core: Core::new(Format::Msr),
        }
    }
}

impl<W: Write> TraceWriter for MsrWriter<W> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core.begin(rec)?;
        let kind = match rec.op {
            TraceOp::Read => "Read",
            TraceOp::Write => "Write",
            TraceOp::Trim | TraceOp::Flush => {
                self.core.stats.dropped += 1;
                return Ok(());
            }
        };
        let lat = rec.recorded_latency_ns.unwrap_or(0);
        let exact = multiple_of(rec.time_ns, NS_PER_TICK) && multiple_of(lat, NS_PER_TICK);
        let ts = UNIX_EPOCH_FILETIME + rec.time_ns / NS_PER_TICK;
        writeln!(
            self.out,
            "{ts},{},{},{kind},{},{},{}",
            self.host,
            rec.device,
            rec.offset,
            rec.len,
            lat / NS_PER_TICK
        )
        .map_err(|e| self.core.io(e))?;
        self.core.wrote(exact);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        self.out.flush().map_err(|e| self.core.io(e))
    }

    fn stats(&self) -> WriteStats {
        self.core.stats
    }
}
