//! Configuration: presets as TOML files, `extends` chains, command-line
//! overrides, and the resolved configuration with the source of every value.
//!
//! A preset is a TOML file in `presets/`. Each leaf value carries a comment
//! naming its source; the comment is kept (we parse with `toml_edit`, which
//! preserves comments) so that `storlab devices show` prints every resolved
//! value next to where it came from. A preset may say `extends = "other"`:
//! its values override the other's, key by key, so a variant differs from
//! its predecessor exactly by the keys it sets. Unknown keys are refused by
//! serde (`deny_unknown_fields`) with the key's path in the message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use toml_edit::{DocumentMut, Item, Value};

/// A configuration error, with the place it came from.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A preset name that is neither built in nor a file.
    #[error("unknown device '{name}': not a preset (try `storlab devices`) and not a TOML file{}",
        suggestion.as_ref().map(|s| format!("; did you mean '{s}'?")).unwrap_or_default())]
    UnknownPreset {
        /// What was asked for.
        name: String,
        /// The known preset nearest in spelling, if one is near.
        suggestion: Option<String>,
    },
    /// A file could not be read.
    // the OS error is the source, not repeated here
    #[error("{path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax error.
    #[error("{file}: {message}")]
    Syntax {
        /// File or preset name.
        file: String,
        /// Parser message (with line and column).
        message: String,
    },
    /// A value of the wrong type or an unknown key.
    #[error("{file}: {message}")]
    Schema {
        /// File(s) the configuration came from.
        file: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A value out of its allowed range.
    #[error("{field}: {message}")]
    Invalid {
        /// Dotted key path.
        field: String,
        /// Why.
        message: String,
    },
    /// A value out of its allowed range, with the place that set it.
    #[error("{}: {}: {}", .0.place, .0.field, .0.message)]
    InvalidAt(Box<InvalidAt>),
    /// A key set (in a preset, a file or on the command line) that the
    /// resolved device does not read: setting it would change nothing.
    #[error("{}: `{}` is not used by device '{}' (class {}); {}", .0.place, .0.key, .0.device, .0.class, .0.readers)]
    Unused(Box<UnusedKey>),
    /// `extends` loops.
    #[error("preset '{0}' extends itself (through a chain)")]
    Cycle(String),
    /// A bad `--set key=value`.
    #[error("--set {arg}: {message}")]
    Override {
        /// The argument.
        arg: String,
        /// Why.
        message: String,
    },
}

/// A value out of range ([`ConfigError::InvalidAt`]).
#[derive(Debug)]
pub struct InvalidAt {
    /// Where the value was set: `file:line` or `command line`.
    pub place: String,
    /// Dotted key path.
    pub field: String,
    /// Why.
    pub message: String,
}

/// A key set that the device does not read ([`ConfigError::Unused`]).
#[derive(Debug)]
pub struct UnusedKey {
    /// Where the key was set: `file:line`, `command line`,
    /// `raid.member_set`...
    pub place: String,
    /// Dotted key path.
    pub key: String,
    /// The preset or file resolved.
    pub device: String,
    /// Its device class.
    pub class: String,
    /// Which classes read the key.
    pub readers: String,
}

/// One resolved leaf: its value, the comment naming its source, and the file
/// that set it.
#[derive(Clone, Debug)]
pub struct Leaf {
    /// The value as TOML.
    pub value: Value,
    /// 1-based line in `origin` (0 when set on the command line).
    pub line: usize,
    /// The source comment (without the leading `#`), may be empty.
    pub source: String,
    /// The preset or file that set it (or `command line`).
    pub origin: String,
}

impl Leaf {
    /// Where it was set: `file:line`, or `command line`.
    pub fn place(&self) -> String {
        if self.line > 0 {
            format!("{}:{}", self.origin, self.line)
        } else {
            self.origin.clone()
        }
    }
}

/// A configuration as a flat, ordered map from dotted key paths to leaves.
#[derive(Clone, Debug, Default)]
pub struct Resolved {
    /// Leaves by dotted path, in sorted order.
    pub leaves: BTreeMap<String, Leaf>,
    /// The chain of presets/files, most derived first.
    pub chain: Vec<String>,
}

/// Where presets live: built into the binary, plus an optional directory.
#[derive(Clone, Debug)]
pub struct PresetStore {
    builtin: &'static [(&'static str, &'static str)],
    dir: Option<PathBuf>,
    /// Presets given as text (`with_text`), by name.
    texts: BTreeMap<String, String>,
}

impl Default for PresetStore {
    fn default() -> Self {
        Self {
            builtin: crate::presets::BUILTIN,
            dir: None,
            texts: BTreeMap::new(),
        }
    }
}

impl PresetStore {
    /// Also look for `<name>.toml` in `dir` (it overrides built-in presets).
    pub fn with_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// A preset given as TOML text (a program's own, or a fuzzer's): it
    /// overrides a preset of the same name in the directory or built in,
    /// and its errors are placed in `<name>.toml`.
    pub fn with_text(mut self, name: &str, text: impl Into<String>) -> Self {
        self.texts.insert(name.to_string(), text.into());
        self
    }

    /// Names and descriptions of all presets, sorted by name.
    pub fn list(&self) -> Vec<(String, String)> {
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for (name, _) in self.builtin {
            names.insert(name.to_string(), String::new());
        }
        for name in self.texts.keys() {
            names.insert(name.clone(), String::new());
        }
        if let Some(dir) = &self.dir {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.extension().and_then(|x| x.to_str()) == Some("toml") {
                        if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                            names.insert(stem.to_string(), String::new());
                        }
                    }
                }
            }
        }
        let mut out = Vec::new();
        for name in names.into_keys() {
            let desc = self
                .resolve(&name, &[])
                .ok()
                .and_then(|r| {
                    r.leaves
                        .get("description")
                        .and_then(|l| l.value.as_str().map(String::from))
                })
                .unwrap_or_default();
            // presets with no class (pure media/include fragments) are skipped
            out.push((name, desc));
        }
        out
    }

    fn load_text(&self, name: &str) -> Result<(String, String), ConfigError> {
        let as_path = Path::new(name);
        if name.ends_with(".toml") || name.contains('/') {
            let text = std::fs::read_to_string(as_path).map_err(|source| ConfigError::Io {
                path: as_path.to_path_buf(),
                source,
            })?;
            return Ok((name.to_string(), text));
        }
        if let Some(text) = self.texts.get(name) {
            return Ok((format!("{name}.toml"), text.clone()));
        }
        if let Some(dir) = &self.dir {
            let p = dir.join(format!("{name}.toml"));
            if p.exists() {
                let text = std::fs::read_to_string(&p).map_err(|source| ConfigError::Io {
                    path: p.clone(),
                    source,
                })?;
                return Ok((p.display().to_string(), text));
            }
        }
        for (n, text) in self.builtin {
            if *n == name {
                return Ok((format!("presets/{n}.toml"), text.to_string()));
            }
        }
        Err(ConfigError::UnknownPreset {
            name: name.to_string(),
            suggestion: self.nearest(name),
        })
    }

    /// The preset whose name is nearest `name` in spelling (Jaro-Winkler
    /// similarity at least 0.8, as clap and cargo suggest), if any.
    fn nearest(&self, name: &str) -> Option<String> {
        let mut names: Vec<String> = self.builtin.iter().map(|(n, _)| n.to_string()).collect();
        names.extend(self.texts.keys().cloned());
        if let Some(dir) = &self.dir {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let p = e.path();
                    if p.extension().and_then(|x| x.to_str()) == Some("toml") {
                        if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                            names.push(stem.to_string());
                        }
                    }
                }
            }
        }
        names
            .into_iter()
            .map(|n| (strsim::jaro_winkler(name, &n), n))
            .filter(|(score, _)| *score >= 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
            .map(|(_, n)| n)
    }

    /// Resolve a preset name or TOML file path, following `extends`, then
    /// apply `overrides` (`key.path=value`, value in TOML syntax; bare words
    /// are taken as strings).
    pub fn resolve(&self, name: &str, overrides: &[String]) -> Result<Resolved, ConfigError> {
        self.resolve_set_by(name, overrides, "command line")
    }

    /// [`Self::resolve`], the overrides' place (their leaves' origin) named
    /// `origin` rather than `command line`.
    pub fn resolve_set_by(
        &self,
        name: &str,
        overrides: &[String],
        origin: &str,
    ) -> Result<Resolved, ConfigError> {
        let mut chain = Vec::new();
        let mut layers = Vec::new();
        let mut cur = Some(name.to_string());
        while let Some(n) = cur.take() {
            if chain.contains(&n) {
                return Err(ConfigError::Cycle(n));
            }
            let (origin, text) = self.load_text(&n)?;
            let doc: DocumentMut =
                text.parse()
                    .map_err(|e: toml_edit::TomlError| ConfigError::Syntax {
                        file: origin.clone(),
                        message: e.to_string(),
                    })?;
            let mut flat = BTreeMap::new();
            flatten_table(doc.as_table(), "", (&origin, &text), &mut flat)?;
            for (path, leaf) in flat.iter_mut() {
                leaf.line = find_line(&text, path);
            }
            if let Some(ext) = flat.remove("extends") {
                match ext.value.as_str() {
                    Some(s) => cur = Some(s.to_string()),
                    None => {
                        return Err(ConfigError::Schema {
                            file: origin,
                            message: "`extends` must be a preset name (a string)".into(),
                        })
                    }
                }
            }
            chain.push(n);
            layers.push(flat);
        }
        let mut leaves = BTreeMap::new();
        for layer in layers.into_iter().rev() {
            for (k, v) in layer {
                put_leaf(&mut leaves, k, v);
            }
        }
        let mut r = Resolved { leaves, chain };
        for o in overrides {
            r.set_by(o, origin)?;
        }
        Ok(r)
    }
}

/// Flatten `t` into `table.key` leaves. A quoted key holding a dot
/// (`"a.b" = 1`) would flatten to the same path as the nested key `a.b` and
/// silently shadow or drop its neighbours, so it is refused, naming it and
/// its line in `text` (the file `origin`).
fn flatten_table(
    t: &toml_edit::Table,
    prefix: &str,
    (origin, text): (&str, &str),
    out: &mut BTreeMap<String, Leaf>,
) -> Result<(), ConfigError> {
    let dotted = |k: &str| ConfigError::Schema {
        // the first line holding the key quoted either way
        file: match text
            .lines()
            .position(|l| l.contains(&format!("\"{k}\"")) || l.contains(&format!("'{k}'")))
        {
            Some(i) => format!("{origin}:{}", i + 1),
            None => origin.to_string(),
        },
        message: format!(
            "key \"{k}\"{} holds a dot; write nested keys as `a.b = ...` or a [table]",
            if prefix.is_empty() {
                String::new()
            } else {
                format!(" in [{prefix}]")
            }
        ),
    };
    for (k, item) in t.iter() {
        if k.contains('.') {
            return Err(dotted(k));
        }
        let path = if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        };
        let decor_comment = t
            .key(k)
            .and_then(|key| {
                key.leaf_decor()
                    .prefix()
                    .and_then(|p| p.as_str().map(String::from))
            })
            .unwrap_or_default();
        match item {
            Item::Table(sub) => flatten_table(sub, &path, (origin, text), out)?,
            Item::Value(v) => {
                let trailing = v
                    .decor()
                    .suffix()
                    .and_then(|s| s.as_str())
                    .unwrap_or("")
                    .to_string();
                let source = comment_text(&trailing)
                    .or_else(|| comment_text(&decor_comment))
                    .unwrap_or_default();
                if let Value::InlineTable(it) = v {
                    for (ik, iv) in it.iter() {
                        if ik.contains('.') {
                            return Err(dotted(ik));
                        }
                        let mut iv = iv.clone();
                        iv.decor_mut().clear();
                        out.insert(
                            format!("{path}.{ik}"),
                            Leaf {
                                value: iv,
                                line: 0,
                                source: source.clone(),
                                origin: origin.to_string(),
                            },
                        );
                    }
                } else {
                    let mut v = v.clone();
                    v.decor_mut().clear();
                    out.insert(
                        path,
                        Leaf {
                            value: v,
                            line: 0,
                            source,
                            origin: origin.to_string(),
                        },
                    );
                }
            }
            Item::ArrayOfTables(_) | Item::None => {}
        }
    }
    Ok(())
}

/// The line where `path` (`table.key` or `table.key.inner` for an inline
/// table) is written in `text`, 1-based; 0 if not found. Comments and the
/// table headers are tracked line by line (presets are simple TOML).
fn find_line(text: &str, path: &str) -> usize {
    let parts: Vec<&str> = path.split('.').collect();
    for split in (0..parts.len()).rev() {
        let (table, key) = (parts[..split].join("."), parts[split]);
        let mut current = String::new();
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if let Some(h) = l.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                current = h.trim().to_string();
                continue;
            }
            if current == table {
                if let Some((k, _)) = l.split_once('=') {
                    if k.trim() == key {
                        return i + 1;
                    }
                }
            }
        }
    }
    0
}

fn comment_text(s: &str) -> Option<String> {
    let lines: Vec<&str> = s
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim())
        .collect();
    if lines.is_empty() {
        None
    } else {
        Some(lines.join(" "))
    }
}

/// Set the leaf at `path`, replacing what it overlaps: the leaves under it
/// (a value set over a table replaces the table) and a leaf above it (a
/// table set over a value replaces the value). So no leaf is ever a prefix
/// of another, and the leaves always make one nested table (`to_toml`);
/// the typed parse then says what is wrong with a value of the wrong kind,
/// naming its key.
fn put_leaf(leaves: &mut BTreeMap<String, Leaf>, path: String, leaf: Leaf) {
    let under = format!("{path}.");
    leaves.retain(|p, _| !p.starts_with(&under));
    let mut above = path.as_str();
    while let Some((parent, _)) = above.rsplit_once('.') {
        leaves.remove(parent);
        above = parent;
    }
    leaves.insert(path, leaf);
}

impl Resolved {
    /// Apply one `key.path=value` override.
    pub fn set(&mut self, arg: &str) -> Result<(), ConfigError> {
        self.set_by(arg, "command line")
    }

    /// Apply one `key.path=value` override set at `origin` (`command
    /// line`, `raid.member_set`...).
    pub fn set_by(&mut self, arg: &str, origin: &str) -> Result<(), ConfigError> {
        let Some((k, v)) = arg.split_once('=') else {
            return Err(ConfigError::Override {
                arg: arg.into(),
                message: "expected key=value".into(),
            });
        };
        let k = k.trim().to_string();
        if k.is_empty() || k.split('.').any(|p| p.is_empty()) {
            return Err(ConfigError::Override {
                arg: arg.into(),
                message: "empty key".into(),
            });
        }
        let v = v.trim();
        let value: Value = match v.parse::<Value>() {
            Ok(val) => val,
            Err(_) => Value::from(v),
        };
        put_leaf(
            &mut self.leaves,
            k,
            Leaf {
                value,
                line: 0,
                source: origin.into(),
                origin: origin.into(),
            },
        );
        Ok(())
    }

    /// Rebuild a nested TOML table from the leaves.
    pub fn to_toml(&self) -> toml::Table {
        let mut root = toml::Table::new();
        for (path, leaf) in &self.leaves {
            let parts: Vec<&str> = path.split('.').collect();
            let mut t = &mut root;
            for p in &parts[..parts.len() - 1] {
                t = t
                    .entry(p.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                    .as_table_mut()
                    .expect(
                        "intermediate keys are tables: leaves never share a prefix with a table",
                    );
            }
            let v: toml::Value = toml::from_str::<toml::Table>(&format!("x = {}", leaf.value))
                .ok()
                .and_then(|mut t| t.remove("x"))
                .unwrap_or(toml::Value::String(leaf.value.to_string()));
            t.insert(parts[parts.len() - 1].to_string(), v);
        }
        root
    }

    /// Rules every field of a kind shares, checked by its name before the
    /// typed parse (so a field added later is covered without a line of its
    /// own): numbers are finite and not negative; durations (a key part
    /// ending in `_ns`, or `_ns_per_...`) are at most [`MAX_DURATION_NS`];
    /// rates (ending in `_per_s`) are at least [`MIN_RATE_PER_S`]. The
    /// message names the key and where it was set.
    pub fn check_domains(&self) -> Result<(), ConfigError> {
        for (path, leaf) in &self.leaves {
            let v = match &leaf.value {
                Value::Integer(i) => *i.value() as f64,
                Value::Float(f) => *f.value(),
                _ => continue,
            };
            let parts = || path.split('.');
            let duration = parts().any(|p| p.ends_with("_ns") || p.contains("_ns_per_"));
            let rate = parts().any(|p| p.ends_with("_per_s"));
            let why = if !v.is_finite() || v < 0.0 {
                Some("must be a finite number >= 0".to_string())
            } else if duration && v > MAX_DURATION_NS as f64 {
                Some(format!(
                    "is over {MAX_DURATION_NS} ns (the longest step the clock takes safely)"
                ))
            } else if rate && v < MIN_RATE_PER_S {
                Some(format!("must be at least {MIN_RATE_PER_S} per second"))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(ConfigError::Schema {
                    file: leaf.place(),
                    message: format!("`{path}` = {}: {why}", leaf.value.to_string().trim()),
                });
            }
        }
        Ok(())
    }

    /// Deserialize into a typed configuration; unknown keys and wrong types
    /// are errors naming the key.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        let table = self.to_toml();
        let text = toml::to_string(&table).map_err(|e| ConfigError::Schema {
            file: self.chain.join(" <- "),
            message: e.to_string(),
        })?;
        toml::from_str::<T>(&text).map_err(|e| {
            // serde names unknown keys but not mistyped ones: recover the key
            // from the span in the text we generated
            let key = e.span().and_then(|sp| {
                let line_start = text[..sp.start.min(text.len())]
                    .rfind('\n')
                    .map_or(0, |i| i + 1);
                let line = text[line_start..].lines().next().unwrap_or("");
                // a span on a table header (a missing field) names no key
                if line.trim_start().starts_with('[') {
                    return None;
                }
                line.split('=').next().map(|k| k.trim().to_string())
            });
            let mut message = e.message().to_string();
            if let Some(k) = key
                .as_ref()
                .filter(|k| !message.contains(&format!("`{k}`")))
            {
                message = format!("`{k}`: {message}");
            }
            message += &key_hint(&e, &text);
            if let Some(field) = field_suggestion(e.message()) {
                let key = match table_at(&e, &text) {
                    Some(t) => format!("{t}.{field}"),
                    None => field.to_string(),
                };
                message += &format!("; did you mean `{key}`?");
            }
            ConfigError::Schema {
                file: self
                    .place_of(&message, table_at(&e, &text).as_deref())
                    .unwrap_or_else(|| self.chain.join(" <- ")),
                message,
            }
        })
    }

    /// Where the key a serde message names (`unknown field `x``, `invalid
    /// type ... for key `a.b``) was written: `file:line`. `table` is the
    /// table the error's span sits in (`[pcie]`), when known: the key is
    /// looked for there first (an unknown top-level table such as
    /// `nosuch.key` is a leaf under `nosuch`).
    fn place_of(&self, message: &str, table: Option<&str>) -> Option<String> {
        let name = message.split('`').nth(1)?;
        if let Some(t) = table {
            let prefix = if t == name || t.ends_with(&format!(".{name}")) {
                t.to_string()
            } else {
                format!("{t}.{name}")
            };
            let under = format!("{prefix}.");
            if let Some((_, leaf)) = self
                .leaves
                .iter()
                .find(|(p, _)| **p == prefix || p.starts_with(&under))
            {
                return Some(leaf.place());
            }
        }
        let (_, leaf) = self.leaves.iter().find(|(p, _)| {
            p.as_str() == name
                || p.starts_with(&format!("{name}."))
                || p.ends_with(&format!(".{name}"))
                || p.contains(&format!(".{name}."))
        })?;
        Some(leaf.place())
    }

    /// An [`ConfigError::Invalid`] for a key set here, with the place that
    /// set it ([`ConfigError::InvalidAt`]); other errors unchanged.
    pub fn placed(&self, e: ConfigError) -> ConfigError {
        match e {
            ConfigError::Invalid { field, message } => match self.leaves.get(&field) {
                Some(leaf) => ConfigError::InvalidAt(Box::new(InvalidAt {
                    place: leaf.place(),
                    field,
                    message,
                })),
                None => ConfigError::Invalid { field, message },
            },
            e => e,
        }
    }

    /// The resolved configuration as text, one `key = value  # source` per
    /// line, grouped by table.
    pub fn show(&self) -> String {
        let mut tables: BTreeMap<String, Vec<(String, &Leaf)>> = BTreeMap::new();
        for (path, leaf) in &self.leaves {
            let (table, key) = match path.rsplit_once('.') {
                Some((t, k)) => (t.to_string(), k.to_string()),
                None => (String::new(), path.clone()),
            };
            tables.entry(table).or_default().push((key, leaf));
        }
        let mut out = String::new();
        out.push_str(&format!("# resolved from: {}\n", self.chain.join(" <- ")));
        out.push_str("# units are in the key names (_ns, _bytes, _bytes_per_s, _w, _pj_per_bit); [file] is where the value was set\n");
        for (table, keys) in tables {
            if !table.is_empty() {
                out.push_str(&format!("\n[{table}]\n"));
            }
            for (key, leaf) in keys {
                let src = if leaf.source.is_empty() {
                    String::new()
                } else {
                    format!("  # {}", leaf.source)
                };
                let origin = leaf.origin.rsplit('/').next().unwrap_or(&leaf.origin);
                out.push_str(&format!("{key} = {}{src}  [{origin}]\n", leaf.value));
            }
        }
        out
    }
}

/// The table (`a.b` of a `[a.b]` header) the span of `e` sits in, in
/// `text`, the TOML generated from the leaves.
fn table_at(e: &toml::de::Error, text: &str) -> Option<String> {
    let span = e.span()?;
    let start = span.start.min(text.len());
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    text[..end]
        .lines()
        .rev()
        .map(str::trim)
        .find_map(|l| l.strip_prefix('[').and_then(|r| r.strip_suffix(']')))
        .map(|h| h.trim().to_string())
}

/// For serde's "unknown field `x`, expected one of `a`, `b`, ...": the
/// expected field nearest in spelling to `x`, if near enough to be a typo.
fn field_suggestion(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected = rest.split_once("expected ")?.1;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|f| (strsim::jaro_winkler(unknown, f), f))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, f)| f)
}

fn key_hint(e: &toml::de::Error, text: &str) -> String {
    // serde's message names the key; add the table it sits in.
    if let Some(span) = e.span() {
        // up to the end of the line the span starts on: a span on a table
        // header belongs to that table
        let start = span.start.min(text.len());
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let before = &text[..end];
        if let Some(h) = before
            .lines()
            .rev()
            .find(|l| l.trim_start().starts_with('['))
        {
            return format!(" (in table {})", h.trim());
        }
    }
    String::new()
}

/// Longest value of any duration field: 10^12 ns, about 17 minutes. The
/// clock is u64 nanoseconds (584 years), and a few requests each taking a
/// step near that overflowed it; no storage operation takes this long.
pub const MAX_DURATION_NS: u64 = 1_000_000_000_000;

/// Least value of any rate field (bytes or operations per second): a
/// slower rate turns one request into a step past [`MAX_DURATION_NS`].
pub const MIN_RATE_PER_S: f64 = 1.0;

/// Require `lo <= v <= hi`, naming the field otherwise.
pub fn check_range<T: PartialOrd + std::fmt::Display>(
    field: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ConfigError> {
    if v < lo || v > hi {
        return Err(ConfigError::Invalid {
            field: field.into(),
            message: format!("{v} is outside {lo}..={hi}"),
        });
    }
    Ok(())
}
