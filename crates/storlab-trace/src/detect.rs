//! Recognising a trace's format from its first bytes.

use crate::{blkparse, blktrace, disksim, fio, msr, Format};

/// How many non-empty lines detection looks at.
const LINES: usize = 8;

/// Guesses the format of a trace from its beginning (a few KiB are
/// plenty). Binary blktrace is recognised by its magic in either byte
/// order; fio logs by their header line; the other text formats by the
/// shape of the first non-empty line, confirmed by the following ones.
/// Returns a description of what was seen when nothing matches.
pub fn detect(head: &[u8]) -> Result<Format, String> {
    if head.is_empty() {
        return Err("the input is empty".into());
    }
    if blktrace::detect_endian(head).is_some() {
        return Ok(Format::Blktrace);
    }
    // Only complete lines, unless the whole input is shorter than a line.
    let complete = match memchr::memrchr(b'\n', head) {
        Some(i) => &head[..i],
        None => head,
    };
    let mut lines = complete
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !crate::text::is_blank(l))
        .take(LINES);
    let Some(first) = lines.next() else {
        return Err("no non-empty line in the first bytes".into());
    };
    if first.split(|b| b.is_ascii_whitespace()).next() == Some(crate::closed::MAGIC.as_bytes()) {
        // the reader checks the version and the column line
        return Ok(Format::Closed);
    }
    match fio::header_version(first) {
        Some(2) => return Ok(Format::Fio2),
        Some(_) => return Ok(Format::Fio3),
        None => {}
    }
    type LooksLike = fn(&[u8]) -> bool;
    let candidates: [(Format, LooksLike); 3] = [
        (Format::Msr, msr::looks_like),
        (Format::Blkparse, blkparse::looks_like),
        (Format::Disksim, disksim::looks_like),
    ];
    for (format, looks_like) in candidates {
        if looks_like(first) {
            // Blkparse output may end with its summary; only the first
            // lines vote, and only to confirm.
            let rest: Vec<&[u8]> = lines.collect();
            let agree = rest.iter().filter(|l| looks_like(l)).count();
            if rest.is_empty() || agree * 2 >= rest.len() {
                return Ok(format);
            }
            return Err(format!(
                "the first line looks like {format} but most of the following lines do not"
            ));
        }
    }
    if first.contains(&0) || std::str::from_utf8(first).is_err() {
        return Err("binary data without a blktrace magic".into());
    }
    Err(format!(
        "the first line `{}` matches none of fio2, fio3, blkparse, msr, disksim, closed (storlab-closed)",
        crate::error::excerpt(first)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_recognised() {
        assert_eq!(
            detect(b"fio version 2 iolog\n/dev/x add\n"),
            Ok(Format::Fio2)
        );
        assert_eq!(
            detect(b"fio version 3 iolog\n0 /dev/x add\n"),
            Ok(Format::Fio3)
        );
        assert_eq!(
            detect(b"128166372003061629,hm,1,Read,3840000,4096,11720\n"),
            Ok(Format::Msr)
        );
        assert_eq!(
            detect(b"  8,0    3        1     0.000000000  4162  Q  WS 3417048 + 8 [kworker]\n"),
            Ok(Format::Blkparse)
        );
        assert_eq!(
            detect(b"0.000000 0 1024 8 1\n1.5 0 8 8 0\n"),
            Ok(Format::Disksim)
        );
        assert_eq!(
            detect(b"storlab-closed 1\ncolumns stream thread rank after op offset len fua arrival_ns complete_ns reply_ns think_ns\n"),
            Ok(Format::Closed)
        );
        assert_eq!(
            detect(&[0x07, 0x74, 0x61, 0x65, 0, 0]),
            Ok(Format::Blktrace)
        );
        assert_eq!(
            detect(&[0x65, 0x61, 0x74, 0x07, 0, 0]),
            Ok(Format::Blktrace)
        );
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        let e = detect(b"hello world\n").unwrap_err();
        assert!(e.contains("hello world"), "{e}");
        assert!(detect(b"").is_err());
        assert!(detect(b"\n\n  \n").is_err());
        assert!(detect(&[0xff, 0xfe, 0, 1, 2])
            .unwrap_err()
            .contains("binary"));
        let e = detect(b"0.0 0 1 8 1\nfoo\nbar\nbaz\n").unwrap_err();
        assert!(e.contains("disksim"), "{e}");
    }
}
