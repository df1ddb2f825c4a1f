//! The fio iolog writer (version 2 or 3).

use super::base::{multiple_of, Core, TraceWriter, WriteOptions, WriteStats};
use crate::error::TraceError;
use crate::{Format, TraceOp, TraceRecord};
use std::io::{BufWriter, Write};

/// fio iolog writer (version 2 or 3).
pub struct FioWriter<W: Write> {
    out: BufWriter<W>,
    version: u8,
    prefix: String,
    files: Vec<u32>,
    header_done: bool,
    core: Core,
}

impl<W: Write> FioWriter<W> {
    /// A writer of version `version` (2 or 3; anything else means 3).
    pub fn new(out: W, version: u8, opts: &WriteOptions) -> Self {
        let version = if version == 2 { 2 } else { 3 };
        FioWriter {
            out: BufWriter::new(out),
            version,
            prefix: opts.fio_file_prefix.clone(),
            files: Vec::new(),
            header_done: false,
            core: Core::new(if version == 2 {
                Format::Fio2
            } else {
                Format::Fio3
            }),
        }
    }

    fn stamp(&mut self, us: u64) -> std::io::Result<()> {
        if self.version == 3 {
            write!(self.out, "{us} ")?;
        }
        Ok(())
    }

    fn header(&mut self) -> std::io::Result<()> {
        if !self.header_done {
            self.header_done = true;
            let h = if self.version == 2 {
                crate::fio::FIO2_HEADER
            } else {
                crate::fio::FIO3_HEADER
            };
            writeln!(self.out, "{h}")?;
        }
        Ok(())
    }

    fn write_record(&mut self, rec: &TraceRecord) -> std::io::Result<()> {
        self.header()?;
        let us = rec.time_ns / 1000;
        if !self.files.contains(&rec.device) {
            self.files.push(rec.device);
            for act in ["add", "open"] {
                self.stamp(us)?;
                writeln!(self.out, "{}{} {act}", self.prefix, rec.device)?;
            }
        }
        self.stamp(us)?;
        let (name, offset, len) = match rec.op {
            TraceOp::Read => ("read", rec.offset, rec.len),
            TraceOp::Write => ("write", rec.offset, rec.len),
            TraceOp::Trim => ("trim", rec.offset, rec.len),
            TraceOp::Flush => ("sync", 0, 0),
        };
        writeln!(
            self.out,
            "{}{} {name} {offset} {len}",
            self.prefix, rec.device
        )
    }
}

impl<W: Write> TraceWriter for FioWriter<W> {
    fn record(&mut self, rec: &TraceRecord) -> Result<(), TraceError> {
        self.core.begin(rec)?;
        let exact = if self.version == 2 {
            rec.time_ns == 0
        } else {
            multiple_of(rec.time_ns, 1000)
        };
        self.write_record(rec).map_err(|e| self.core.io(e))?;
        self.core.wrote(exact);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), TraceError> {
        let us = self.core.last_time / 1000;
        let r = (|| {
            self.header()?;
            for dev in std::mem::take(&mut self.files) {
                self.stamp(us)?;
                writeln!(self.out, "{}{dev} close", self.prefix)?;
            }
            self.out.flush()
        })();
        r.map_err(|e| self.core.io(e))
    }

    fn stats(&self) -> WriteStats {
        self.core.stats
    }
}
