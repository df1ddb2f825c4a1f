//! DiskSim ASCII traces.
//!
//! ```text
//! 0.000000 0 1024 8 1
//! 1.250000 0 2048 16 0
//! ```
//!
//! Fields (DiskSim manual, "ASCII" input format; DiskSim reads them with
//! `"%lf %d %d %d %x"`): arrival time in milliseconds (a float), device
//! number, starting block (512-byte sectors), size in blocks, and flags in
//! **hexadecimal** where bit 0 set means read and clear means write (other
//! bits, such as DiskSim's synchronous/asynchronous hints, are ignored).
//!
//! Times are converted to integer nanoseconds exactly (digits beyond the
//! sixth decimal, i.e. below a nanosecond, are truncated).

use crate::linesrc::LineFormat;
use crate::text::{
    parse_hex_u32, parse_scaled, parse_u32, parse_u64, sectors_to_bytes, tokens, Clock, Problem,
};
use crate::{TraceOp, TraceRecord};

/// DiskSim's read flag.
pub const DISKSIM_READ: u32 = 0x1;

#[derive(Default)]
pub(crate) struct DisksimParser {
    clock: Clock,
}

/// Whether a line looks like a DiskSim record (used by format detection).
pub(crate) fn looks_like(line: &[u8]) -> bool {
    let f: Vec<&[u8]> = tokens(line).collect();
    f.len() == 5
        && f[0].iter().all(|b| b.is_ascii_digit() || *b == b'.')
        && f[0].iter().any(u8::is_ascii_digit)
        && parse_u32(f[1]).is_some()
        && parse_u64(f[2]).is_some()
        && parse_u64(f[3]).is_some()
        && parse_hex_u32(f[4]).is_some()
}

impl LineFormat for DisksimParser {
    fn parse(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, Problem> {
        let mut t = tokens(line);
        let Some(time) = t.next() else {
            return Ok(None);
        };
        const SHAPE: &str = "expected 5 fields: time(ms) device block size(blocks) flags(hex)";
        let dev = t.next().ok_or(SHAPE)?;
        let block = t.next().ok_or(SHAPE)?;
        let count = t.next().ok_or(SHAPE)?;
        let flags = t.next().ok_or(SHAPE)?;
        if t.next().is_some() {
            return Err(SHAPE.into());
        }
        let raw_ns = parse_scaled(time, 6)?;
        let device = parse_u32(dev).ok_or("bad device number")?;
        let offset = sectors_to_bytes(parse_u64(block).ok_or("bad block number")?)?;
        let len = sectors_to_bytes(parse_u64(count).ok_or("bad request size")?)?;
        crate::text::check_extent(offset, len)?;
        let flags = parse_hex_u32(flags).ok_or("bad flags (expected hexadecimal)")?;
        let op = if flags & DISKSIM_READ != 0 {
            TraceOp::Read
        } else {
            TraceOp::Write
        };
        let time_ns = self.clock.relative(raw_ns)?;
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
