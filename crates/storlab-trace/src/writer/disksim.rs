//! The DiskSim ASCII writer.

use super::base::{sectors, Core, TraceWriter, WriteStats};
use crate::error::TraceError;
use crate::{Format, TraceOp, TraceRecord};
use std::io::{BufWriter, Write};

/// DiskSim ASCII writer (times in milliseconds with six decimals, which is
/// exact to the nanosecond).
pub struct DisksimWriter<W: Write> {
    out: BufWriter<W>,
    core: Core,
}

impl<W: Write> DisksimWriter<W> {
    /// A DiskSim writer.
    pub fn new(out: W) -> Self {
        DisksimWriter {
            out: BufWriter::new(out),
            core: Core::new(Format::Disksim),
        }
    }
}

impl<W: Write> TraceWriter for DisksimWriter<W> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core.begin(rec)?;
        let flags = match rec.op {
            TraceOp::Read => crate::disksim::DISKSIM_READ,
            TraceOp::Write => 0,
            TraceOp::Trim | TraceOp::Flush => {
                self.core.stats.dropped += 1;
                return Ok(());
            }
        };
        let (sector, count, exact) = sectors(rec.offset, rec.len);
        writeln!(
            self.out,
            "{}.{:06} {} {sector} {count} {flags:x}",
            rec.time_ns / 1_000_000,
            rec.time_ns % 1_000_000,
            rec.device
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
