//! The job-file layer: lines, comments, sections, `include` and `${VAR}`.
//!
//! This stage knows nothing about option names; it turns text into a list of
//! sections, each with its raw `key[=value]` entries and where they were
//! written.

use std::path::{Path, PathBuf};

use super::error::{FioError, Location};

/// Looks up an environment variable for `${VAR}` expansion in job files.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Deepest nesting of `include` directives (fio has no limit; a limit turns
/// an include cycle into an error instead of a stack overflow).
const MAX_INCLUDE_DEPTH: usize = 16;

/// One `key[=value]` as written.
#[derive(Clone, Debug)]
pub(crate) struct RawOption {
    /// The key, trimmed.
    pub key: String,
    /// The value, trimmed and with `${VAR}` expanded; `None` for a bare key.
    pub value: Option<String>,
    /// Where it was written.
    pub location: Location,
}

/// A `[name]` section with its entries in order.
#[derive(Clone, Debug)]
pub(crate) struct Section {
    /// The name between the brackets.
    pub name: String,
    /// Where the header was written.
    pub location: Location,
    /// Entries in order, includes expanded in place.
    pub options: Vec<RawOption>,
}

/// Split a job file into sections.
///
/// `base_dir` resolves relative `include` paths; `None` refuses `include`
/// (text that did not come from a file).
pub(crate) fn parse_sections(
    source: &str,
    text: &str,
    base_dir: Option<&Path>,
    env: EnvLookup<'_>,
) -> Result<Vec<Section>, FioError> {
    let mut sections: Vec<Section> = Vec::new();
    for (idx, raw_line) in text.lines().enumerate() {
        let location = Location::file(source, idx + 1);
        let line = strip_comment(raw_line).trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            let name = parse_header(line, &location)?;
            sections.push(Section {
                name,
                location,
                options: Vec::new(),
            });
            continue;
        }
        let Some(current) = sections.last_mut() else {
            return Err(FioError::Syntax {
                location,
                message: format!(
                    "`{line}` is outside of any [section] (fio refuses this too); put it under [global] or a job section"
                ),
            });
        };
        if let Some(path) = include_target(line) {
            include_file(path, base_dir, &location, env, 1, &mut current.options)?;
            continue;
        }
        current
            .options
            .push(parse_option_line(line, location, env)?);
    }
    Ok(sections)
}

/// fio discards everything from the first `;` or `#` on a line (checked
/// against fio 3.33: `filename=/a#b` names `/a`).
fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(i) => &line[..i],
        None => line,
    }
}

fn parse_header(line: &str, location: &Location) -> Result<String, FioError> {
    let syntax = |message: &str| FioError::Syntax {
        location: location.clone(),
        message: message.to_string(),
    };
    let Some(inner) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) else {
        return Err(syntax("malformed section header: expected `[name]`"));
    };
    let name = inner.trim();
    if name.is_empty() {
        return Err(syntax("empty section name `[]`"));
    }
    if name.contains(['[', ']']) {
        return Err(syntax("section name may not contain `[` or `]`"));
    }
    Ok(name.to_string())
}

/// `include path` (the keyword followed by whitespace).
fn include_target(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    if rest.starts_with([' ', '\t']) {
        Some(rest.trim())
    } else {
        None
    }
}

fn include_file(
    path: &str,
    base_dir: Option<&Path>,
    location: &Location,
    env: EnvLookup<'_>,
    depth: usize,
    out: &mut Vec<RawOption>,
) -> Result<(), FioError> {
    let syntax = |message: String| FioError::Syntax {
        location: location.clone(),
        message,
    };
    let Some(base) = base_dir else {
        return Err(syntax(format!(
            "`include {path}`: include is only possible in a job file read from disk"
        )));
    };
    if depth > MAX_INCLUDE_DEPTH {
        return Err(syntax(format!(
            "`include {path}`: includes nested more than {MAX_INCLUDE_DEPTH} deep (a cycle?)"
        )));
    }
    if path.is_empty() {
        return Err(syntax("`include` needs a file name".into()));
    }
    let full: PathBuf = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        base.join(path)
    };
    let text = std::fs::read_to_string(&full).map_err(|source| FioError::Io {
        path: full.clone(),
        source,
    })?;
    let source_name = full.display().to_string();
    let inner_base = full.parent().map(Path::to_path_buf);
    for (idx, raw_line) in text.lines().enumerate() {
        let loc = Location::file(&source_name, idx + 1);
        let line = strip_comment(raw_line).trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            return Err(FioError::Syntax {
                location: loc,
                message: "included files may not contain [sections]".into(),
            });
        }
        if let Some(p) = include_target(line) {
            include_file(p, inner_base.as_deref(), &loc, env, depth + 1, out)?;
            continue;
        }
        out.push(parse_option_line(line, loc, env)?);
    }
    Ok(())
}

fn parse_option_line(
    line: &str,
    location: Location,
    env: EnvLookup<'_>,
) -> Result<RawOption, FioError> {
    let (key, value) = match line.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (line, None),
    };
    if key.is_empty() || key.contains(char::is_whitespace) {
        return Err(FioError::Syntax {
            location,
            message: format!("malformed line `{line}`: expected `option=value` or `option`"),
        });
    }
    let value = value.map(|v| expand_env(v, env));
    Ok(RawOption {
        key: key.to_string(),
        value,
        location,
    })
}

/// Replace every `${NAME}` with the variable's value, or with nothing when
/// it is not set (fio's rule). An unterminated `${` is left as written.
pub(crate) fn expand_env(value: &str, env: EnvLookup<'_>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                if let Some(v) = env(&after[..end]) {
                    out.push_str(&v);
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn comments_sections_and_values() {
        let text = "; head\n[global]\nbs=4k ; trailing\n  # indented comment\n[job1]\nrw = randread#x\ndirect=1\ntime_based\n";
        let s = parse_sections("t.fio", text, None, &no_env).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].name, "global");
        assert_eq!(s[0].options[0].value.as_deref(), Some("4k"));
        assert_eq!(s[1].options[0].key, "rw");
        assert_eq!(s[1].options[0].value.as_deref(), Some("randread"));
        assert_eq!(s[1].options[0].location.line, 6);
        assert_eq!(s[1].options[2].value, None);
    }

    #[test]
    fn env_expansion() {
        let env = |k: &str| (k == "SIZE").then(|| "64m".to_string());
        assert_eq!(expand_env("${SIZE}", &env), "64m");
        assert_eq!(expand_env("a${NOPE}b", &env), "ab");
        assert_eq!(expand_env("x${SIZE", &env), "x${SIZE");
    }

    #[test]
    fn option_before_section_is_refused() {
        let err = parse_sections("t.fio", "bs=4k\n[j]\n", None, &no_env).unwrap_err();
        assert!(err.to_string().contains("t.fio:1"), "{err}");
    }
}
