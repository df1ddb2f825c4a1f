//! fio iologs, versions 2 and 3 (`write_iolog=` / `read_iolog=`).
//!
//! Layout (fio's HOWTO, "Trace file format v2/v3"):
//!
//! ```text
//! fio version 3 iolog
//! 0 /dev/sdb add
//! 0 /dev/sdb open
//! 118 /dev/sdb read 4096 4096
//! 305 /dev/sdb write 0 8192
//! 900 /dev/sdb close
//! ```
//!
//! Version 2 lines are the same without the leading timestamp. File
//! actions are `add`, `open`, `close`; I/O actions are `read`, `write`,
//! `trim`, `sync`, `datasync`, and (version 2 only) `wait`.
//!
//! Quirks, and what we decided:
//! - The HOWTO does not give the unit of the v3 timestamp. fio writes it
//!   with `utime_since_now()` and its replay delays are in microseconds, so
//!   it is **microseconds** since the start of the run.
//! - Version 2 has no timestamps. `wait N` adds `N` microseconds to the time
//!   of the following requests (the HOWTO: relative to the previous wait,
//!   values below 100 are discarded). Without waits every record is at 0.
//! - `sync`/`datasync` become [`TraceOp::Flush`] with offset and length 0.
//! - The device number is the file's index in order of first appearance
//!   (normally its `add` line).
//! - Forcing `fio2` on a version 3 log (or the reverse) follows the header:
//!   the header is what fio itself trusts.

use crate::linesrc::LineFormat;
use crate::text::{check_extent, parse_u64, to_ns, tokens, Clock, Problem};
use crate::{TraceOp, TraceRecord};

/// Header line of a version 2 log.
pub const FIO2_HEADER: &str = "fio version 2 iolog";
/// Header line of a version 3 log.
pub const FIO3_HEADER: &str = "fio version 3 iolog";

/// Most distinct file names one log may use; bounds memory on garbage.
const MAX_FILES: usize = 65536;

/// Which header a first line is, if any.
pub(crate) fn header_version(line: &[u8]) -> Option<u8> {
    let line = crate::text::trim(line);
    if line.starts_with(FIO2_HEADER.as_bytes()) {
        Some(2)
    } else if line.starts_with(FIO3_HEADER.as_bytes()) {
        Some(3)
    } else {
        None
    }
}

pub(crate) struct FioParser {
    version: u8,
    files: Vec<Box<[u8]>>,
    clock: Clock,
    /// Version 2: accumulated `wait` time in microseconds.
    wait_us: u64,
}

impl FioParser {
    pub(crate) fn new(version: u8) -> FioParser {
        FioParser {
            version,
            files: Vec::new(),
            clock: Clock::default(),
            wait_us: 0,
        }
    }

    /// The log's version (2 or 3).
    pub(crate) fn version(&self) -> u8 {
        self.version
    }

    fn file_index(&mut self, name: &[u8]) -> Result<u32, Problem> {
        if let Some(i) = self.files.iter().position(|f| &**f == name) {
            return Ok(i as u32);
        }
        if self.files.len() >= MAX_FILES {
            return Err("too many distinct file names (more than 65536)".into());
        }
        self.files.push(name.into());
        Ok((self.files.len() - 1) as u32)
    }
}

enum Action {
    File,
    Io(TraceOp),
    Wait,
}

fn action(word: &[u8]) -> Option<Action> {
    Some(match word {
        b"add" | b"open" | b"close" => Action::File,
        b"read" => Action::Io(TraceOp::Read),
        b"write" => Action::Io(TraceOp::Write),
        b"trim" => Action::Io(TraceOp::Trim),
        b"sync" | b"datasync" => Action::Io(TraceOp::Flush),
        b"wait" => Action::Wait,
        _ => return None,
    })
}

impl LineFormat for FioParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, Problem> {
        let mut t = tokens(line);
        let mut f: [&[u8]; 5] = [&[]; 5];
        let mut n = 0;
        for tok in t.by_ref() {
            if n == 5 {
                return Err("too many fields".into());
            }
            f[n] = tok;
            n += 1;
        }
        if n == 0 {
            return Ok(None);
        }
        if header_version(line).is_some() {
            return Err("repeated header line".into());
        }
        let (stamp, rest) = if self.version == 3 {
            let ts = parse_u64(f[0]).ok_or_else(|| {
                if f[0].first() == Some(&b'-') {
                    Problem::from("negative timestamp")
                } else {
                    Problem::from("first field is not a timestamp (microseconds)")
                }
            })?;
            (Some(ts), &f[1..n])
        } else {
            (None, &f[..n])
        };
        if rest.len() < 2 {
            return Err("expected `filename action [offset length]`".into());
        }
        let act = action(rest[1]).ok_or(
            "unknown action (expected add, open, close, read, write, trim, sync, datasync or wait)",
        )?;
        match act {
            Action::File => {
                if rest.len() != 2 {
                    return Err("file actions take no offset or length".into());
                }
                self.file_index(rest[0])?;
                Ok(None)
            }
            Action::Wait => {
                if self.version == 3 {
                    return Err("`wait` is not allowed in version 3 iologs".into());
                }
                if rest.len() != 4 {
                    return Err("expected `filename wait microseconds length`".into());
                }
                let us = parse_u64(rest[2]).ok_or("bad wait time")?;
                if us >= 100 {
                    self.wait_us = self
                        .wait_us
                        .checked_add(us)
                        .ok_or("accumulated wait time too large")?;
                }
                Ok(None)
            }
            Action::Io(op) => {
                let (offset, len) = match (op, rest.len()) {
                    (TraceOp::Flush, 2) => (0, 0),
                    (TraceOp::Flush, 4) => {
                        parse_u64(rest[2]).ok_or("bad offset")?;
                        parse_u64(rest[3]).ok_or("bad length")?;
                        (0, 0)
                    }
                    (_, 4) => (
                        parse_u64(rest[2]).ok_or("bad offset")?,
                        parse_u64(rest[3]).ok_or("bad length")?,
                    ),
                    _ => return Err("expected `filename action offset length`".into()),
                };
                check_extent(offset, len)?;
                let time_ns = match stamp {
                    Some(us) => to_ns(self.clock.relative(us)?, 1000)?,
                    None => to_ns(self.wait_us, 1000)?,
                };
                let device = self.file_index(rest[0])?;
                Ok(Some(TraceRecord {
                    time_ns,
                    op,
                    offset,
                    len,
                    device,
                    recorded_latency_ns: None,
                    stream: 0,
                }))
            }
        }
    }
}
