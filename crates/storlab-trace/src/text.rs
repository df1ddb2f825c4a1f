//! Shared machinery of the text readers: a line source with one reused
//! buffer and a bounded line length, hand-written number parsers, and the
//! clock that turns a format's timestamps into relative nanoseconds.
//!
//! The number parsers are written by hand because they sit on the hot path
//! (tens of millions of lines per trace): `str::parse` needs UTF-8
//! validation first, and float parsing is both slower and inexact (0.1 ms is
//! not representable in binary), whereas a decimal like `12.000100` can be
//! turned into integer nanoseconds exactly.

use crate::error::{excerpt, TraceError};
use std::borrow::Cow;
use std::io::BufRead;
use std::sync::Arc;

/// What went wrong with one line or record; becomes a [`TraceError`] with
/// the position attached, or is counted and dropped when skipping.
pub(crate) type Problem = Cow<'static, str>;

/// Longest line we accept. Anything longer is garbage (real trace lines are
/// under 200 bytes) and must not make us buffer a whole binary file.
pub(crate) const MAX_LINE: usize = 4096;

/// Size of the read buffer for large inputs. Large enough that reads
/// through a `BufReader` bypass its own buffer, so the data is copied once.
const CHUNK: usize = 1 << 20;

/// Size of the first read buffer; it grows to [`CHUNK`] when an input fills
/// it, so small inputs (tests, fuzzing) stay cheap.
const FIRST_CHUNK: usize = 64 << 10;

/// A line-at-a-time view of a text trace. Lines are slices of one reused
/// buffer: nothing is copied or allocated per line.
pub(crate) struct Lines {
    src: Box<dyn BufRead + Send>,
    buf: Vec<u8>,
    /// Unread data is `buf[start..end]`.
    start: usize,
    end: usize,
    /// The current line is `buf[line.0..line.1]`, or `long` when too long.
    line: (usize, usize),
    long: Vec<u8>,
    too_long: bool,
    eof: bool,
    line_no: u64,
    pub(crate) path: Arc<str>,
}

impl Lines {
    pub(crate) fn new(src: Box<dyn BufRead + Send>, path: Arc<str>) -> Lines {
        Lines {
            src,
            buf: Vec::new(),
            start: 0,
            end: 0,
            line: (0, 0),
            long: Vec::new(),
            too_long: false,
            eof: false,
            line_no: 0,
            path,
        }
    }

    fn io(&self, e: std::io::Error) -> TraceError {
        TraceError::Io {
            path: self.path.to_string(),
            source: e,
        }
    }

    /// Moves unread data to the front and reads more after it; sets `eof`
    /// when the input is exhausted.
    fn refill(&mut self) -> Result<(), TraceError> {
        if self.buf.is_empty() {
            self.buf = vec![0; FIRST_CHUNK];
        } else if self.end == self.buf.len() && self.buf.len() < CHUNK {
            self.buf.resize(CHUNK, 0);
        }
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
    }

    /// Steps to the next line (without its `\n` or `\r\n`). Returns
    /// `Ok(false)` at the end of the input.
    #[inline]
    pub(crate) fn advance(&mut self) -> Result<bool, TraceError> {
        self.too_long = false;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                let s = self.start;
                let mut e = s + i;
                self.start = e + 1;
                if e > s && self.buf[e - 1] == b'\r' {
                    e -= 1;
                }
                self.set_line(s, e);
                return Ok(true);
            }
            if self.eof {
                if self.start == self.end {
                    return Ok(false);
                }
                let (s, mut e) = (self.start, self.end);
                self.start = self.end;
                if self.buf[e - 1] == b'\r' {
                    e -= 1;
                }
                self.set_line(s, e);
                return Ok(true);
            }
            if self.end - self.start >= MAX_LINE {
                return self.skip_long_line();
            }
            self.refill()?;
        }
    }

    #[inline]
    fn set_line(&mut self, s: usize, e: usize) {
        self.line = (s, e);
        self.line_no += 1;
        if e - s > MAX_LINE {
            self.long = self.buf[s..s + MAX_LINE].to_vec();
            self.too_long = true;
        }
    }

    /// The current line is longer than [`MAX_LINE`]: keep its beginning
    /// for the error message and drop the rest up to the next newline.
    #[cold]
    fn skip_long_line(&mut self) -> Result<bool, TraceError> {
        self.long = self.buf[self.start..self.start + MAX_LINE].to_vec();
        self.too_long = true;
        self.line_no += 1;
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                self.start += i + 1;
                return Ok(true);
            }
            self.start = self.end;
            if self.eof {
                return Ok(true);
            }
            self.refill()?;
        }
    }

    /// The current line.
    #[inline]
    pub(crate) fn line(&self) -> &[u8] {
        if self.too_long {
            &self.long
        } else {
            &self.buf[self.line.0..self.line.1]
        }
    }

    /// Whether the current line was longer than [`MAX_LINE`] bytes (then
    /// [`Lines::line`] holds only its beginning).
    pub(crate) fn too_long(&self) -> bool {
        self.too_long
    }

    /// 1-based number of the current line.
    #[cfg(test)]
    pub(crate) fn line_no(&self) -> u64 {
        self.line_no
    }

    /// An error about the current line.
    pub(crate) fn error(&self, problem: Problem) -> TraceError {
        TraceError::Line {
            path: self.path.to_string(),
            line: self.line_no,
            problem: problem.into_owned(),
            text: excerpt(self.line()),
        }
    }
}

/// Splits on runs of spaces and tabs.
#[inline]
pub(crate) fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|b| *b == b' ' || *b == b'\t')
        .filter(|t| !t.is_empty())
}

/// Whether the line holds only spaces and tabs.
#[inline]
pub(crate) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| *b == b' ' || *b == b'\t')
}

/// Trims spaces and tabs on both ends.
pub(crate) fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Parses a non-empty run of ASCII digits. `None` on anything else or on
/// overflow. Up to 19 digits cannot overflow a `u64`, so the common case
/// runs without overflow checks.
#[inline]
pub(crate) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s.len() == 20 {
        let mut v: u64 = 0;
        for &b in s {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v.checked_mul(10)?.checked_add(d as u64)?;
        }
        return Some(v);
    }
    let mut v: u64 = 0;
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as u64;
    }
    Some(v)
}

/// [`parse_u64`] limited to `u32`.
#[inline]
pub(crate) fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|v| u32::try_from(v).ok())
}

/// Parses hexadecimal digits, with or without a `0x` prefix.
pub(crate) fn parse_hex_u32(s: &[u8]) -> Option<u32> {
    let s = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    if s.is_empty() || s.len() > 8 {
        return None;
    }
    let mut v: u32 = 0;
    for &b in s {
        let d = (b as char).to_digit(16)?;
        v = (v << 4) | d;
    }
    Some(v)
}

/// Parses an unsigned decimal `int[.frac]` into an integer scaled by
/// `10^scale_digits`, exactly: `parse_scaled(b"1.5", 3) == Some(1500)`.
/// Fraction digits beyond `scale_digits` are truncated. Falls back to float
/// parsing for exponent notation (`1e-3`). Negative numbers, NaN and
/// infinities are refused.
pub(crate) fn parse_scaled(s: &[u8], scale_digits: u32) -> Result<u64, Problem> {
    if s.first() == Some(&b'-') {
        return Err("negative timestamp".into());
    }
    let s = s.strip_prefix(b"+").unwrap_or(s);
    let (int, frac) = match memchr::memchr(b'.', s) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    };
    let simple = !(int.is_empty() && frac.is_empty())
        && int.iter().all(u8::is_ascii_digit)
        && frac.iter().all(u8::is_ascii_digit);
    if !simple {
        return parse_scaled_float(s, scale_digits);
    }
    let scale = 10u64.pow(scale_digits);
    let whole = if int.is_empty() {
        0
    } else {
        parse_u64(int).ok_or("number too large")?
    };
    let mut f: u64 = 0;
    for i in 0..scale_digits as usize {
        let d = frac.get(i).map_or(0, |b| (b - b'0') as u64);
        f = f * 10 + d;
    }
    whole
        .checked_mul(scale)
        .and_then(|v| v.checked_add(f))
        .ok_or_else(|| "number too large".into())
}

fn parse_scaled_float(s: &[u8], scale_digits: u32) -> Result<u64, Problem> {
    let text = std::str::from_utf8(s).map_err(|_| Problem::from("not a number"))?;
    let v: f64 = text.parse().map_err(|_| Problem::from("not a number"))?;
    if !v.is_finite() {
        return Err("not a finite number".into());
    }
    if v < 0.0 {
        return Err("negative timestamp".into());
    }
    let scaled = v * 10f64.powi(scale_digits as i32);
    if scaled >= u64::MAX as f64 {
        return Err("number too large".into());
    }
    Ok(scaled as u64)
}

/// Turns raw timestamps (in a format's own unit) into time since the first
/// record, refusing timestamps that go backwards.
#[derive(Debug, Default)]
pub(crate) struct Clock {
    first: Option<u64>,
    last: u64,
}

impl Clock {
    /// Checks `raw` against the previous timestamp and returns `raw` minus
    /// the first timestamp seen. Nothing is recorded on error, so a skipped
    /// line does not disturb the clock.
    #[inline]
    pub(crate) fn relative(&mut self, raw: u64) -> Result<u64, Problem> {
        match self.first {
            None => {
                self.first = Some(raw);
                self.last = raw;
                Ok(0)
            }
            Some(first) => {
                if raw < self.last {
                    return Err(format!(
                        "timestamp goes backwards ({raw} after {}, in the trace's units)",
                        self.last
                    )
                    .into());
                }
                self.last = raw;
                Ok(raw - first)
            }
        }
    }
}

/// Multiplies a relative time in a format's unit into nanoseconds.
#[inline]
pub(crate) fn to_ns(rel: u64, ns_per_unit: u64) -> Result<u64, Problem> {
    rel.checked_mul(ns_per_unit)
        .ok_or_else(|| "timestamp too large".into())
}

/// Checks that a request of `len` bytes at `offset` ends inside the 64-bit
/// address space (a reader's records promise `offset + len` fits).
#[inline]
pub(crate) fn check_extent(offset: u64, len: u64) -> Result<(), Problem> {
    offset
        .checked_add(len)
        .map(|_| ())
        .ok_or_else(|| "request ends beyond 2^64 bytes".into())
}

/// Multiplies a sector number or count by 512.
#[inline]
pub(crate) fn sectors_to_bytes(s: u64) -> Result<u64, Problem> {
    s.checked_mul(512)
        .ok_or_else(|| "sector number too large".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaled_decimals_are_exact() {
        assert_eq!(parse_scaled(b"1.5", 3), Ok(1500));
        assert_eq!(parse_scaled(b"0.000100", 6), Ok(100));
        assert_eq!(parse_scaled(b"12", 6), Ok(12_000_000));
        assert_eq!(parse_scaled(b".25", 2), Ok(25));
        assert_eq!(parse_scaled(b"3.123456789", 6), Ok(3_123_456));
        assert_eq!(parse_scaled(b"1e-3", 6), Ok(1000));
        assert!(parse_scaled(b"-1.0", 6).is_err());
        assert!(parse_scaled(b"nan", 6).is_err());
        assert!(parse_scaled(b"", 6).is_err());
        assert!(parse_scaled(b".", 6).is_err());
        assert!(parse_scaled(b"99999999999999999999.0", 6).is_err());
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"12a"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u32(b"4294967296"), None);
        assert_eq!(parse_hex_u32(b"0x1f"), Some(31));
        assert_eq!(parse_hex_u32(b"A"), Some(10));
        assert_eq!(parse_hex_u32(b"g"), None);
    }

    #[test]
    fn clock_refuses_going_back_and_is_unchanged_after() {
        let mut c = Clock::default();
        assert_eq!(c.relative(100), Ok(0));
        assert_eq!(c.relative(150), Ok(50));
        assert!(c.relative(149).is_err());
        assert_eq!(c.relative(150), Ok(50));
    }

    #[test]
    fn many_lines_across_buffer_growth() {
        let text: String = (0..200_000).map(|i| format!("line {i}\r\n")).collect();
        let mut l = Lines::new(
            Box::new(std::io::Cursor::new(text.into_bytes())),
            "t".into(),
        );
        let mut n = 0;
        while l.advance().unwrap() {
            assert_eq!(l.line(), format!("line {n}").as_bytes());
            n += 1;
        }
        assert_eq!(n, 200_000);
        assert_eq!(l.buf.len(), CHUNK);
        // A last line without a newline still counts.
        let mut l = Lines::new(Box::new(std::io::Cursor::new(b"a\nb".to_vec())), "t".into());
        assert!(l.advance().unwrap() && l.line() == b"a");
        assert!(l.advance().unwrap() && l.line() == b"b");
        assert!(!l.advance().unwrap());
    }

    #[test]
    fn long_lines_are_cut_not_buffered() {
        let mut data = vec![b'x'; MAX_LINE * 3];
        data.extend_from_slice(b"\nok\r\n");
        let mut l = Lines::new(Box::new(std::io::Cursor::new(data)), "t".into());
        assert!(l.advance().unwrap());
        assert!(l.too_long());
        assert_eq!(l.line().len(), MAX_LINE);
        assert!(l.advance().unwrap());
        assert!(!l.too_long());
        assert_eq!(l.line(), b"ok");
        assert_eq!(l.line_no(), 2);
        assert!(!l.advance().unwrap());
    }
}
