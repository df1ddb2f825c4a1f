//! SNIA IOTTA MSR Cambridge block traces (CSV).
//!
//! ```text
//! 128166372003061629,hm,1,Read,3840000,4096,11720
//! ```
//!
//! Fields (the trace set's README): `Timestamp,Hostname,DiskNumber,Type,
//! Offset,Size,ResponseTime`. Timestamp is a Windows filetime (100 ns ticks
//! since 1601-01-01), Type is `Read` or `Write`, Offset and Size are bytes,
//! ResponseTime is in 100 ns ticks.
//!
//! Quirks: the published files have no header line, but one starting with
//! `Timestamp` is accepted and ignored; `\r\n` line ends are accepted; the
//! hostname is not kept (each file holds one host). This is the hot path of
//! large replays, so the line is scanned once with no allocation.

use crate::linesrc::LineFormat;
use crate::text::{is_blank, parse_u32, parse_u64, to_ns, Clock, Problem};
use crate::{TraceOp, TraceRecord};

/// Nanoseconds per filetime tick.
pub const NS_PER_TICK: u64 = 100;

/// The Unix epoch (1970-01-01) as a Windows filetime; the MSR writer counts
/// time from here.
pub const UNIX_EPOCH_FILETIME: u64 = 116_444_736_000_000_000;

#[derive(Default)]
pub(crate) struct MsrParser {
    clock: Clock,
}

/// Splits off the next comma-separated field.
#[inline]
fn field<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
    if rest.is_empty() {
        return None;
    }
    match memchr::memchr(b',', rest) {
        Some(i) => {
            let f = &rest[..i];
            *rest = &rest[i + 1..];
            Some(f)
        }
        None => {
            let f = *rest;
            *rest = &rest[rest.len()..];
            Some(f)
        }
    }
}

/// Whether a line looks like an MSR record (used by format detection).
pub(crate) fn looks_like(line: &[u8]) -> bool {
    if line.starts_with(b"Timestamp,Hostname") {
        return true;
    }
    let mut rest = crate::text::trim(line);
    let f: Vec<&[u8]> = std::iter::from_fn(|| field(&mut rest)).collect();
    f.len() == 7
        && parse_u64(f[0]).is_some()
        && parse_u32(f[2]).is_some()
        && (f[3].eq_ignore_ascii_case(b"read") || f[3].eq_ignore_ascii_case(b"write"))
        && parse_u64(f[4]).is_some()
}

/// Reads the digits at `s[*i..]`, leaving `*i` on the first non-digit.
/// Up to 19 digits need no overflow check; 20 are checked; more fail.
#[inline(always)]
fn digits(s: &[u8], i: &mut usize) -> Option<u64> {
    let start = *i;
    let mut v: u64 = 0;
    while let Some(&b) = s.get(*i) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as u64);
        *i += 1;
    }
    match *i - start {
        1..=19 => Some(v),
        20 => parse_u64(&s[start..*i]),
        _ => None,
    }
}

/// Steps over the comma at `s[*i]`.
#[inline(always)]
fn comma(s: &[u8], i: &mut usize) -> Option<()> {
    (s.get(*i) == Some(&b',')).then(|| *i += 1)
}

/// The fields of a well-formed line: one pass over the bytes, no
/// allocation. Anything unusual returns `None` and goes to [`diagnose`].
#[inline]
fn parse_fast(s: &[u8]) -> Option<(u64, u32, TraceOp, u64, u64, u64)> {
    let mut i = 0;
    let ts = digits(s, &mut i)?;
    comma(s, &mut i)?;
    i += memchr::memchr(b',', &s[i..])?;
    comma(s, &mut i)?;
    let disk = u32::try_from(digits(s, &mut i)?).ok()?;
    comma(s, &mut i)?;
    let op = match &s[i..] {
        [b'R', b'e', b'a', b'd', b',', ..] => {
            i += 4;
            TraceOp::Read
        }
        [b'W', b'r', b'i', b't', b'e', b',', ..] => {
            i += 5;
            TraceOp::Write
        }
        _ => return None,
    };
    comma(s, &mut i)?;
    let offset = digits(s, &mut i)?;
    comma(s, &mut i)?;
    let size = digits(s, &mut i)?;
    comma(s, &mut i)?;
    let resp = digits(s, &mut i)?;
    (i == s.len()).then_some((ts, disk, op, offset, size, resp))
}

/// Says what is wrong with a line the fast path refused (or parses it, for
/// the unusual but valid cases: lower-case types).
fn diagnose(s: &[u8]) -> Result<(u64, u32, TraceOp, u64, u64, u64), Problem> {
    let mut rest = s;
    const SHAPE: &str =
        "expected 7 fields: Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime";
    let ts = field(&mut rest).ok_or(SHAPE)?;
    let _host = field(&mut rest).ok_or(SHAPE)?;
    let disk = field(&mut rest).ok_or(SHAPE)?;
    let kind = field(&mut rest).ok_or(SHAPE)?;
    let offset = field(&mut rest).ok_or(SHAPE)?;
    let size = field(&mut rest).ok_or(SHAPE)?;
    let resp = field(&mut rest).ok_or(SHAPE)?;
    if !rest.is_empty() || s.last() == Some(&b',') {
        return Err(SHAPE.into());
    }
    let op = if kind.eq_ignore_ascii_case(b"read") {
        TraceOp::Read
    } else if kind.eq_ignore_ascii_case(b"write") {
        TraceOp::Write
    } else {
        return Err("Type must be Read or Write".into());
    };
    let ts = parse_u64(ts).ok_or_else(|| {
        if ts.first() == Some(&b'-') {
            Problem::from("negative timestamp")
        } else {
            Problem::from("bad Timestamp (expected a Windows filetime)")
        }
    })?;
    let disk = parse_u32(disk).ok_or("bad DiskNumber")?;
    let offset = parse_u64(offset).ok_or("bad Offset")?;
    let size = parse_u64(size).ok_or("bad Size")?;
    let resp = parse_u64(resp).ok_or("bad ResponseTime")?;
    Ok((ts, disk, op, offset, size, resp))
}

impl LineFormat for MsrParser {
    #[inline]
    fn parse(&mut self, line: &[u8]) -> Result<Option<TraceRecord>, Problem> {
        let fields = match parse_fast(line) {
            Some(f) => f,
            None => {
                if is_blank(line) || line.starts_with(b"Timestamp") {
                    return Ok(None);
                }
                diagnose(crate::text::trim(line))?
            }
        };
        let (ts, device, op, offset, len, resp) = fields;
        crate::text::check_extent(offset, len)?;
        let latency = to_ns(resp, NS_PER_TICK)?;
        let time_ns = to_ns(self.clock.relative(ts)?, NS_PER_TICK)?;
        Ok(Some(TraceRecord {
            time_ns,
            op,
            offset,
            len,
            device,
            recorded_latency_ns: Some(latency),
            stream: 0,
        }))
    }
}
