//! The driver shared by the line-per-request text formats (fio, MSR,
//! DiskSim): read a line, parse it, skip or report what is bad.

use crate::error::TraceError;
use crate::text::{Lines, Problem};
use crate::TraceRecord;

/// A parser for a format where each line stands alone.
pub(crate) trait LineFormat {
    /// Parses one line. `Ok(None)` means the line carries no request (a
    /// blank line, a header, a file action).
    fn parse(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, Problem>;
}

/// Reads records from a line format.
pub(crate) struct LineSource<P> {
    pub(crate) lines: Lines,
    pub(crate) parser: P,
    skip_bad: bool,
    skipped: u64,
}

impl<P: LineFormat> LineSource<P> {
    pub(crate) fn new(lines: Lines, parser: P, skip_bad: bool) -> Self {
        LineSource {
            lines,
            parser,
            skip_bad,
            skipped: 0,
        }
    }

    pub(crate) fn skipped(&self) -> u64 {
        self.skipped
    }

    pub(crate) fn next_record(&mut self) -> Option<Result<TraceRecord, TraceError>> {
        loop {
            match self.lines.advance() {
                Err(e) => return Some(Err(e)),
                Ok(false) => return None,
                Ok(true) => {}
            }
            let result = if self.lines.too_long() {
                Err(Problem::from("line too long (more than 4096 bytes)"))
            } else {
                self.parser.parse(self.lines.line())
            };
            match result {
                Ok(Some(r)) => return Some(Ok(r)),
                Ok(None) => continue,
                Err(p) => {
                    if self.skip_bad {
                        self.skipped += 1;
                    } else {
                        return Some(Err(self.lines.error(p)));
                    }
                }
            }
        }
    }
}
