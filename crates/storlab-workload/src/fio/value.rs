//! Value syntax of fio options: integers with unit suffixes, percentages,
//! times, booleans, floats and per-direction lists.
//!
//! Every function returns `Err(reason)` with a human sentence; the caller adds
//! the option name and the place it was written.

use super::types::SizeSpec;

/// Parse an unsigned integer with an optional size suffix (bytes by default).
///
/// Suffixes follow fio 3.x as it actually behaves (checked against
/// `fio --debug=parse`): `b` is bytes; `k`/`kb`/`ki` are `kb_base`,
/// `m`/`mb`/`mi` are `kb_base`², and so on up to `p`; the three-letter IEC
/// forms `kib`..`pib` use the *other* base (so with the default
/// `kb_base=1024`, `4KiB` is 4000, a compatibility quirk fio documents).
/// Case does not matter. `0x` introduces a hexadecimal number without
/// suffix. Fractions, signs, exponents and unknown suffixes are refused,
/// where fio would silently read a prefix of the text.
pub(crate) fn parse_size(text: &str, kb_base: u32) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("a number is required".into());
    }
    if s.starts_with('(') {
        return Err(
            "arithmetic expressions in parentheses are not supported by storlab; write the number"
                .into(),
        );
    }
    if s.starts_with('$') {
        return Err("fio's reserved keywords ($pagesize, $mb_memory, $ncpus) depend on the host and are not supported".into());
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("malformed hexadecimal number".into());
        }
        return u64::from_str_radix(hex, 16).map_err(|_| "number is too large".to_string());
    }
    let (digits, suffix) = split_digits(s)?;
    if suffix.starts_with('.') {
        return Err("fractional values are not supported (fio would silently truncate them); use a smaller unit".into());
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| "number is too large".to_string())?;
    let mult = size_multiplier(suffix, kb_base)?;
    n.checked_mul(mult)
        .ok_or_else(|| "value is too large".to_string())
}

/// Split leading ASCII digits from the rest; at least one digit is needed.
fn split_digits(s: &str) -> Result<(&str, &str), String> {
    if s.starts_with('-') {
        return Err("negative values are not allowed".into());
    }
    let s = s.strip_prefix('+').unwrap_or(s);
    let end = s.bytes().take_while(|b| b.is_ascii_digit()).count();
    if end == 0 {
        return Err("expected a number".into());
    }
    Ok(s.split_at(end))
}

fn size_multiplier(suffix: &str, kb_base: u32) -> Result<u64, String> {
    let base = u64::from(kb_base);
    let other = if kb_base == 1000 { 1024 } else { 1000 };
    let lower = suffix.to_ascii_lowercase();
    let (pow, mult) = match lower.as_str() {
        "" | "b" => (0, 1),
        "k" | "kb" | "ki" => (1, base),
        "m" | "mb" | "mi" => (2, base),
        "g" | "gb" | "gi" => (3, base),
        "t" | "tb" | "ti" => (4, base),
        "p" | "pb" | "pi" => (5, base),
        "kib" => (1, other),
        "mib" => (2, other),
        "gib" => (3, other),
        "tib" => (4, other),
        "pib" => (5, other),
        _ => {
            return Err(format!(
                "unknown unit `{suffix}` (expected b, k, m, g, t or p, optionally followed by b, or kib..pib)"
            ))
        }
    };
    Ok(mult.pow(pow))
}

/// A size that may also be written as a percentage (`20%`) of the device.
pub(crate) fn parse_size_or_percent(text: &str, kb_base: u32) -> Result<SizeSpec, String> {
    let s = text.trim();
    if let Some(pct) = s.strip_suffix('%') {
        let (digits, rest) = split_digits(pct.trim())?;
        if !rest.is_empty() {
            return Err("a percentage must be a whole number from 1 to 100".into());
        }
        let v: u64 = digits
            .parse()
            .map_err(|_| "percentage is too large".to_string())?;
        if !(1..=100).contains(&v) {
            return Err("a percentage must be from 1 to 100".into());
        }
        return Ok(SizeSpec::Percent(v as u8));
    }
    parse_size(s, kb_base).map(SizeSpec::Bytes)
}

/// Parse a time and return nanoseconds. `default_unit_us` is the unit when
/// no suffix is written: 1 000 000 for options counted in seconds (runtime,
/// ramp_time, startdelay), 1 for those in microseconds (thinktime).
///
/// Suffixes (any case): `us`/`usec`, `ms`/`msec`, `s`/`sec`, `m`/`min`,
/// `h`, `d`. fio 3.33 reads `sec` and `min` as a silent 1 µs although its
/// HOWTO documents `sec`; storlab gives them their obvious meaning.
pub(crate) fn parse_time_ns(text: &str, default_unit_us: u64) -> Result<u64, String> {
    let s = text.trim();
    if s.is_empty() {
        return Err("a time is required".into());
    }
    if s.starts_with('(') {
        return Err(
            "arithmetic expressions in parentheses are not supported by storlab; write the number"
                .into(),
        );
    }
    let (digits, suffix) = split_digits(s)?;
    if suffix.starts_with('.') {
        return Err("fractional values are not supported (fio would silently truncate them); use a smaller unit".into());
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| "number is too large".to_string())?;
    let unit_us: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => default_unit_us,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" | "sec" => 1_000_000,
        "m" | "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => {
            return Err(format!(
                "unknown time unit `{suffix}` (expected us, ms, s, m, h or d)"
            ))
        }
    };
    n.checked_mul(unit_us)
        .and_then(|us| us.checked_mul(1_000))
        .ok_or_else(|| "time is too large".to_string())
}

/// fio's `bool`: exactly `0` or `1`.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err("expected 0 or 1".into()),
    }
}

/// A finite floating-point number.
pub(crate) fn parse_float(text: &str) -> Result<f64, String> {
    let s = text.trim();
    let ok_chars = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E'));
    match s.parse::<f64>() {
        Ok(v) if ok_chars && v.is_finite() => Ok(v),
        _ => Err("expected a decimal number".into()),
    }
}

/// An integer option (fio's `int`), with fio's size suffixes allowed, that
/// must lie in `min..=max`.
pub(crate) fn parse_int_in(text: &str, kb_base: u32, min: u64, max: u64) -> Result<u64, String> {
    let v = parse_size(text, kb_base)?;
    if v < min || v > max {
        return Err(format!("must be from {min} to {max}"));
    }
    Ok(v)
}

/// Split a per-direction value `read[,write][,trim]` by fio's rule: a single
/// value applies to all three directions; an empty field keeps the default
/// for its direction; a list not terminated by a comma carries its last
/// value on to the remaining directions (`bs=8k,32k` is 8k reads, 32k writes
/// and trims; `bs=8k,32k,` leaves trims at the default).
pub(crate) fn split_per_dir(text: &str) -> Result<[Option<&str>; 3], String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err("at most three comma-separated values (read,write,trim) are allowed".into());
    }
    let last = parts.len() - 1;
    let mut out = [None; 3];
    for (i, slot) in out.iter_mut().enumerate() {
        let field = if i <= last { parts[i] } else { parts[last] };
        if !field.is_empty() {
            *slot = Some(field);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_units() {
        assert_eq!(parse_size("4k", 1024), Ok(4096));
        assert_eq!(parse_size("4KB", 1024), Ok(4096));
        assert_eq!(parse_size("4KiB", 1024), Ok(4000));
        assert_eq!(parse_size("4KiB", 1000), Ok(4096));
        assert_eq!(parse_size("4k", 1000), Ok(4000));
        assert_eq!(parse_size("1mi", 1024), Ok(1 << 20));
        assert_eq!(parse_size("0x10", 1024), Ok(16));
        assert_eq!(parse_size("4096B", 1024), Ok(4096));
        assert_eq!(parse_size("1p", 1024), Ok(1 << 50));
        assert!(parse_size("1.5k", 1024).is_err());
        assert!(parse_size("4q", 1024).is_err());
        assert!(parse_size("-1", 1024).is_err());
        assert!(parse_size("99999999999999999999", 1024).is_err());
        assert!(parse_size("16777216p", 1024).is_err());
    }

    #[test]
    fn times_have_per_option_default_units() {
        assert_eq!(parse_time_ns("10", 1_000_000), Ok(10_000_000_000));
        assert_eq!(parse_time_ns("10", 1), Ok(10_000));
        assert_eq!(parse_time_ns("5ms", 1), Ok(5_000_000));
        assert_eq!(parse_time_ns("2m", 1), Ok(120_000_000_000));
        assert_eq!(parse_time_ns("1MIN", 1), Ok(60_000_000_000));
        assert_eq!(parse_time_ns("3usec", 1_000_000), Ok(3_000));
        assert!(parse_time_ns("1x", 1).is_err());
    }

    #[test]
    fn per_direction_rule() {
        assert_eq!(split_per_dir("8k"), Ok([Some("8k"); 3]));
        assert_eq!(
            split_per_dir("8k,32k"),
            Ok([Some("8k"), Some("32k"), Some("32k")])
        );
        assert_eq!(
            split_per_dir("8k,32k,"),
            Ok([Some("8k"), Some("32k"), None])
        );
        assert_eq!(split_per_dir(",8k"), Ok([None, Some("8k"), Some("8k")]));
        assert_eq!(split_per_dir(",8k,"), Ok([None, Some("8k"), None]));
        assert!(split_per_dir("1,2,3,4").is_err());
    }
}
