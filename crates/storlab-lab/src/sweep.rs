//! Parameter sweeps: one simulation per point of the cartesian product of
//! the varied parameters, a table of results (CSV) and a figure.
//!
//! A table is a plain CSV file, its header first (what `csv.DictReader`
//! and `pandas.read_csv` read with no options), and its metadata (points
//! in the whole sweep, the shard, the sweep's definition) in a JSON file
//! beside it ([`meta_path`]: `X.csv` and `X.json`).
//!
//! A sweep splits into shards (`K/N`: the points whose index modulo N is
//! K-1) so that any scheduler that runs commands can spread it over
//! machines (a Slurm array, GNU parallel, Kubernetes jobs, Ray tasks each
//! running `storlab lab sweep ... --shard K/N`); `merge` joins the shards'
//! tables into the table one unsharded run writes, byte for byte, and
//! refuses missing, repeated or foreign points. [`Sweep::run_points`] runs
//! any set of points, for schedulers that hand out points themselves
//! (the Python package's Dask sweep).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{LabError, Result};
use crate::figure::{csv_field, Figure, Panel, Series, SeriesKind};
use crate::measure::{Plan, Run, Spec};

/// One varied parameter: a fio option (`bs`, `iodepth`, `rw`...) or, when
/// the name has a dot, a model key as `storlab sim --set` takes it
/// (`pcie.controllers`, `media.read_ns`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vary {
    /// Option or key.
    pub name: String,
    /// Its values, in sweep order.
    pub values: Vec<String>,
}

impl Vary {
    /// Parse `NAME=V1,V2,...`.
    pub fn parse(arg: &str) -> Result<Vary> {
        let bad = |why: &str| LabError::Sweep(format!("--vary {arg}: {why}"));
        let (name, vals) = arg
            .split_once('=')
            .ok_or_else(|| bad("expected NAME=V1,V2,..."))?;
        let values: Vec<String> = vals.split(',').map(|v| v.trim().to_string()).collect();
        Vary::check(name, values).map_err(|why| bad(&why))
    }

    /// A varied parameter from its name and values (as a program gives
    /// them), checked as [`Vary::parse`] checks them; errors name it.
    pub fn new(name: &str, values: Vec<String>) -> Result<Vary> {
        Vary::check(name, values.clone())
            .map_err(|why| LabError::Sweep(format!("--vary {name}={}: {why}", values.join(","))))
    }

    fn check(name: &str, values: Vec<String>) -> std::result::Result<Vary, String> {
        let name = name.trim().trim_start_matches("--");
        if name.is_empty() || name.contains([',', ' ', '=']) {
            return Err("the name is empty or has a comma, space or =".into());
        }
        if values.is_empty() {
            return Err("no values".into());
        }
        if values.iter().any(|v| v.trim().is_empty()) {
            return Err("an empty value".into());
        }
        for (i, v) in values.iter().enumerate() {
            if values[..i].contains(v) {
                return Err(format!("'{v}' given twice"));
            }
        }
        Ok(Vary {
            name: name.to_string(),
            values,
        })
    }

    /// A model key (`--set`) rather than a fio option.
    pub fn is_model_key(&self) -> bool {
        self.name.contains('.')
    }
}

/// Shard `k` of `n` (1-based): the points `i` with `i % n == k - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 1.
    pub k: usize,
    /// How many.
    pub n: usize,
}

impl std::str::FromStr for Shard {
    type Err = LabError;
    fn from_str(s: &str) -> Result<Shard> {
        let bad = || LabError::Sweep(format!("--shard {s}: expected K/N with 1 <= K <= N"));
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (k, n): (usize, usize) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if k == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }
}

/// The metrics a table holds for each point and direction.
/// `lat` is fio's total latency (submission + completion), `clat` the
/// completion latency, the one fio keeps percentiles of by default.
pub const METRICS: [&str; 8] = [
    "ios",
    "iops",
    "bw_mb_s",
    "lat_mean_us",
    "clat_mean_us",
    "clat_p50_us",
    "clat_p99_us",
    "clat_p99.9_us",
];

/// A sweep: a base run and the parameters varied over it.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The run every point starts from.
    pub base: Spec,
    /// The varied parameters; the first varies slowest.
    pub vary: Vec<Vary>,
}

impl Sweep {
    /// A sweep, checked: at least one parameter, each varied once, fio
    /// options only with jobs given on the command line (a job file's own
    /// settings would override them).
    pub fn new(base: Spec, vary: Vec<Vary>) -> Result<Sweep> {
        if vary.is_empty() {
            return Err(LabError::Sweep(
                "give at least one --vary NAME=V1,V2,...".into(),
            ));
        }
        for (i, v) in vary.iter().enumerate() {
            if vary[..i].iter().any(|w| w.name == v.name) {
                return Err(LabError::Sweep(format!("--vary {}: varied twice", v.name)));
            }
        }
        let job_file = base.fio.iter().find(|a| !a.starts_with("--"));
        if let (Some(f), Some(v)) = (job_file, vary.iter().find(|v| !v.is_model_key())) {
            return Err(LabError::Sweep(format!(
                "--vary {}: a fio option can be varied with jobs given as --name=... options, not with the job file {f} (its own settings would win)",
                v.name
            )));
        }
        if !base.fio.iter().any(|a| a.starts_with("--name=")) && job_file.is_none() {
            return Err(LabError::Sweep(
                "no job: give --name=... with its options, or a job file".into(),
            ));
        }
        Ok(Sweep { base, vary })
    }

    /// How many points.
    pub fn points(&self) -> usize {
        self.vary.iter().map(|v| v.values.len()).product()
    }

    /// The values of point `i` (the last parameter varies fastest).
    pub fn values(&self, mut i: usize) -> Vec<&str> {
        let mut out = vec![""; self.vary.len()];
        for (k, v) in self.vary.iter().enumerate().rev() {
            out[k] = &v.values[i % v.values.len()];
            i /= v.values.len();
        }
        out
    }

    /// The run of point `i`: model keys as overrides; fio options appended
    /// to every job's options, so they win over the job's own.
    pub fn spec(&self, i: usize) -> Spec {
        let mut s = self.base.clone();
        let values = self.values(i);
        let mut fio_opts = Vec::new();
        for (v, val) in self.vary.iter().zip(values) {
            if v.is_model_key() {
                s.overrides.push(format!("{}={val}", v.name));
            } else {
                fio_opts.push(format!("--{}={val}", v.name));
            }
        }
        if !fio_opts.is_empty() {
            let mut args = Vec::new();
            let mut in_job = false;
            for a in &self.base.fio {
                if a.starts_with("--name=") {
                    if in_job {
                        args.extend(fio_opts.iter().cloned());
                    }
                    in_job = true;
                }
                args.push(a.clone());
            }
            args.extend(fio_opts);
            s.fio = args;
        }
        s
    }

    /// Run the points of `shard` (all without one) in parallel;
    /// `progress` once per point.
    pub fn run(&self, shard: Option<Shard>, progress: &(dyn Fn() + Sync)) -> Result<Table> {
        let mine: Vec<usize> = (0..self.points())
            .filter(|i| shard.is_none_or(|s| i % s.n == s.k - 1))
            .collect();
        let mut t = self.run_points(&mine, progress)?;
        t.shard = shard;
        Ok(t)
    }

    /// Run the points listed (indices below [`Sweep::points`]) in
    /// parallel: a table of their rows, in the order given, each point's
    /// row exactly as in the whole sweep's table. `progress` once per point.
    pub fn run_points(&self, points: &[usize], progress: &(dyn Fn() + Sync)) -> Result<Table> {
        if let Some(&bad) = points.iter().find(|&&i| i >= self.points()) {
            return Err(LabError::Sweep(format!(
                "point {bad}: the sweep has {} points",
                self.points()
            )));
        }
        let mut plan = Plan::new();
        let ids: Vec<_> = points.iter().map(|&i| plan.add(self.spec(i))).collect();
        let results = plan.run(progress)?;
        let mut rows = Vec::new();
        for (&i, id) in points.iter().zip(ids) {
            rows.extend(point_rows(i, &self.values(i), &results[id]));
        }
        Ok(Table {
            points: self.points(),
            shard: None,
            columns: self.vary.iter().map(|v| v.name.clone()).collect(),
            rows,
            sweep: Some(self.definition()),
        })
    }

    /// The definition the metadata file records.
    pub fn definition(&self) -> Definition {
        Definition {
            device: self.base.device.clone(),
            set: self.base.overrides.clone(),
            vary: self.vary.clone(),
            seed: self.base.seed,
            job: self.base.only.clone(),
            fio: self.base.fio.clone(),
        }
    }

    /// The number of points in shard `s`.
    pub fn shard_len(&self, s: Option<Shard>) -> usize {
        (0..self.points())
            .filter(|i| s.is_none_or(|s| i % s.n == s.k - 1))
            .count()
    }
}

/// The table's rows of one point: one per direction that did IO.
fn point_rows(point: usize, values: &[&str], r: &Run) -> Vec<TableRow> {
    let mut rows = Vec::new();
    for (d, dir) in ["read", "write", "trim"].iter().enumerate() {
        let st = &r.stats.dirs[d];
        if st.ios() == 0 {
            continue;
        }
        let us = |ns: f64| ns / 1000.0;
        let metrics = [
            st.ios().to_string(),
            format!("{:.1}", r.iops(d)),
            format!("{:.3}", r.mbps(d)),
            format!("{:.3}", us(st.lat().mean())),
            format!("{:.3}", us(st.clat().mean())),
            format!("{:.3}", us(st.percentile(50.0) as f64)),
            format!("{:.3}", us(st.percentile(99.0) as f64)),
            format!("{:.3}", us(st.percentile(99.9) as f64)),
        ];
        rows.push(TableRow {
            point,
            values: values.iter().map(|s| s.to_string()).collect(),
            dir: dir.to_string(),
            metrics: metrics.to_vec(),
        });
    }
    rows
}

/// One line of a sweep's table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRow {
    /// The point's index.
    pub point: usize,
    /// The varied parameters' values.
    pub values: Vec<String>,
    /// read, write or trim.
    pub dir: String,
    /// [`METRICS`], as written.
    pub metrics: Vec<String>,
}

/// What a sweep ran, as its metadata file records it: merging refuses
/// tables of different definitions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// Device preset or file.
    pub device: String,
    /// `--set` overrides at every point.
    pub set: Vec<String>,
    /// The varied parameters.
    pub vary: Vec<Vary>,
    /// The seed.
    pub seed: u64,
    /// `--job`: only the jobs of this name are measured.
    pub job: Option<String>,
    /// The fio arguments.
    pub fio: Vec<String>,
}

/// A sweep's results (or one shard's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Points in the whole sweep.
    pub points: usize,
    /// The shard these rows are, if one.
    pub shard: Option<Shard>,
    /// The varied parameters' names.
    pub columns: Vec<String>,
    /// The rows, by point then direction.
    pub rows: Vec<TableRow>,
    /// The sweep's definition, when known (tables written before the
    /// metadata recorded it, or by hand, have none).
    pub sweep: Option<Definition>,
}

/// The metadata file of a table (`X.csv` and `X.json`), as JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta {
    /// [`FORMAT`].
    format: String,
    points: usize,
    /// `K/N`, or null.
    shard: Option<String>,
    columns: Vec<String>,
    metrics: Vec<String>,
    sweep: Option<Definition>,
    /// The storlab that wrote it.
    storlab_version: String,
}

/// The `format` of a table's metadata file.
pub const FORMAT: &str = "storlab-sweep-table/1";

/// Where the metadata of the table at `csv` lives: beside it, the same
/// name with `.json` for its extension. None when `csv` itself ends in
/// `.json` (the two would be one file).
pub fn meta_path(csv: &Path) -> Option<PathBuf> {
    let p = csv.with_extension("json");
    (p != csv).then_some(p)
}

impl Table {
    fn header(&self) -> Vec<String> {
        let mut h = vec!["point".to_string()];
        h.extend(self.columns.iter().cloned());
        h.push("dir".into());
        h.extend(METRICS.iter().map(|m| m.to_string()));
        h
    }

    /// The table as CSV: the header line, then a line per row.
    pub fn to_csv(&self) -> String {
        let mut s = String::new();
        s.push_str(
            &self
                .header()
                .iter()
                .map(|h| csv_field(h))
                .collect::<Vec<_>>()
                .join(","),
        );
        s.push('\n');
        for r in &self.rows {
            let mut f = vec![r.point.to_string()];
            f.extend(r.values.iter().map(|v| csv_field(v)));
            f.push(r.dir.clone());
            f.extend(r.metrics.iter().cloned());
            s.push_str(&f.join(","));
            s.push('\n');
        }
        s
    }

    /// The table's metadata file ([`meta_path`]), as JSON.
    pub fn meta_json(&self) -> String {
        let meta = Meta {
            format: FORMAT.into(),
            points: self.points,
            shard: self.shard.map(|s| format!("{}/{}", s.k, s.n)),
            columns: self.columns.clone(),
            metrics: METRICS.iter().map(|m| m.to_string()).collect(),
            sweep: self.sweep.clone(),
            storlab_version: env!("CARGO_PKG_VERSION").into(),
        };
        serde_json::to_string_pretty(&meta).expect("a table's metadata serializes") + "\n"
    }

    /// Read a table written by [`Table::to_csv`] (`path`, `text`) and
    /// [`Table::meta_json`] (`meta_path`, `meta_text`); errors name the
    /// file and the line.
    pub fn parse(path: &Path, text: &str, meta_path: &Path, meta_text: &str) -> Result<Table> {
        let bad = |line: usize, message: String| LabError::Merge {
            path: path.to_path_buf(),
            line,
            message,
        };
        let bad_meta = |line: usize, message: String| LabError::Merge {
            path: meta_path.to_path_buf(),
            line,
            message,
        };
        let meta: Meta = serde_json::from_str(meta_text).map_err(|e| {
            bad_meta(
                e.line(),
                format!("not the metadata of a storlab sweep table: {e}"),
            )
        })?;
        if meta.format != FORMAT {
            return Err(bad_meta(
                0,
                format!("format '{}', this storlab reads '{FORMAT}'", meta.format),
            ));
        }
        if meta.metrics != METRICS {
            return Err(bad_meta(
                0,
                format!(
                    "metrics {:?}, this storlab writes {}",
                    meta.metrics,
                    METRICS.join(", ")
                ),
            ));
        }
        let points = meta.points;
        let shard = meta
            .shard
            .as_deref()
            .map(|s| s.parse::<Shard>().map_err(|e| bad_meta(0, e.to_string())))
            .transpose()?;
        let mut lines = text.lines();
        let header = parse_csv_line(
            lines
                .next()
                .ok_or_else(|| bad(1, "no header line".into()))?,
        )
        .map_err(|m| bad(1, m))?;
        let ncol = header.len();
        let fixed = 2 + METRICS.len();
        if ncol < fixed + 1
            || header[0] != "point"
            || header[ncol - METRICS.len() - 1] != "dir"
            || header[ncol - METRICS.len()..] != METRICS
        {
            return Err(bad(
                1,
                format!(
                    "header {header:?} is not point, parameters..., dir, {}",
                    METRICS.join(", ")
                ),
            ));
        }
        let columns = header[1..ncol - METRICS.len() - 1].to_vec();
        if columns != meta.columns {
            return Err(bad(
                1,
                format!(
                    "the parameters {columns:?} are not those of its metadata {} ({:?})",
                    meta_path.display(),
                    meta.columns
                ),
            ));
        }
        if let Some(d) = &meta.sweep {
            let names: Vec<&String> = d.vary.iter().map(|v| &v.name).collect();
            if names.len() != columns.len() || names.iter().zip(&columns).any(|(a, b)| *a != b) {
                return Err(bad_meta(
                    0,
                    format!("the sweep varies {names:?}, the columns are {columns:?}"),
                ));
            }
            let n: usize = d.vary.iter().map(|v| v.values.len()).product();
            if n != points {
                return Err(bad_meta(
                    0,
                    format!("the sweep has {n} points, the metadata says {points}"),
                ));
            }
        }
        let mut rows = Vec::new();
        for (n, line) in lines.enumerate() {
            let ln = n + 2;
            if line.is_empty() {
                continue;
            }
            let f = parse_csv_line(line).map_err(|m| bad(ln, m))?;
            if f.len() != ncol {
                return Err(bad(
                    ln,
                    format!("{} fields, the header has {ncol}", f.len()),
                ));
            }
            let point: usize = f[0]
                .parse()
                .map_err(|_| bad(ln, format!("point '{}' is not a number", f[0])))?;
            if point >= points {
                return Err(bad(ln, format!("point {point} but the sweep has {points}")));
            }
            if let Some(sh) = shard {
                if point % sh.n != sh.k - 1 {
                    return Err(bad(
                        ln,
                        format!("point {point} is not in shard {}/{}", sh.k, sh.n),
                    ));
                }
            }
            for m in &f[ncol - METRICS.len()..] {
                if m.parse::<f64>().map(|v| !v.is_finite()).unwrap_or(true) {
                    return Err(bad(ln, format!("metric '{m}' is not a finite number")));
                }
            }
            rows.push(TableRow {
                point,
                values: f[1..ncol - METRICS.len() - 1].to_vec(),
                dir: f[ncol - METRICS.len() - 1].clone(),
                metrics: f[ncol - METRICS.len()..].to_vec(),
            });
        }
        Ok(Table {
            points,
            shard,
            columns,
            rows,
            sweep: meta.sweep,
        })
    }

    /// Join shards into the whole sweep's table: the same sweep (points
    /// and parameters), each shard once, together every point.
    pub fn merge(parts: &[(std::path::PathBuf, Table)]) -> Result<Table> {
        // about a whole table, not one of its lines
        let whole = |message: String, path: &Path| {
            LabError::Sweep(format!("merge: {}: {message}", path.display()))
        };
        let (p0, first) = parts
            .first()
            .ok_or_else(|| LabError::Sweep("merge: no tables given".into()))?;
        let mut rows: Vec<TableRow> = Vec::new();
        for (i, (path, t)) in parts.iter().enumerate() {
            let same = |(p, _): &(std::path::PathBuf, Table)| {
                p == path
                    || p.canonicalize()
                        .ok()
                        .is_some_and(|c| path.canonicalize().ok() == Some(c))
            };
            if parts[..i].iter().any(same) {
                return Err(whole("given twice".into(), path));
            }
            let other_def = matches!((&t.sweep, &first.sweep), (Some(a), Some(b)) if a != b);
            if t.points != first.points || t.columns != first.columns || other_def {
                return Err(whole(
                    format!(
                        "a different sweep from {} ({} points of {:?} against {} of {:?})",
                        p0.display(),
                        t.points,
                        t.columns,
                        first.points,
                        first.columns
                    ),
                    path,
                ));
            }
            if let Some(r) = t
                .rows
                .iter()
                .find(|r| rows.iter().any(|o| o.point == r.point))
            {
                return Err(whole(
                    format!("point {} is also in an earlier table", r.point),
                    path,
                ));
            }
            rows.extend(t.rows.iter().cloned());
        }
        rows.sort_by_key(|r| r.point);
        // rows are sorted by point: the first point not where counting
        // from 0 expects it is missing (no allocation by the declared count,
        // which a damaged file could make huge)
        let mut next = 0;
        let mut missing = None;
        for r in &rows {
            if r.point > next {
                missing = Some(next);
                break;
            }
            next = r.point + 1;
        }
        let missing = missing.or((next < first.points).then_some(next));
        if let Some(missing) = missing {
            let shards = parts
                .iter()
                .filter_map(|(_, t)| t.shard.map(|s| format!("{}/{}", s.k, s.n)))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(LabError::Sweep(format!(
                "merge: point {missing} of {} is in none of the tables (shards given: {})",
                first.points,
                if shards.is_empty() {
                    "none".into()
                } else {
                    shards
                }
            )));
        }
        Ok(Table {
            points: first.points,
            shard: None,
            columns: first.columns.clone(),
            rows,
            sweep: first.sweep.clone(),
        })
    }

    /// A figure of `metric` against the first parameter (numeric: sizes
    /// as fio reads them), one line per value of the others and direction.
    pub fn figure(&self, metric: &str, id: &str) -> Result<Figure> {
        let m = METRICS.iter().position(|x| *x == metric).ok_or_else(|| {
            LabError::Sweep(format!("--y {metric}: one of {}", METRICS.join(", ")))
        })?;
        let xname = &self.columns[0];
        let mut series: Vec<Series> = Vec::new();
        for r in &self.rows {
            let x = storlab_workload::fio::parse_size(&r.values[0])
                .map(|v| v as f64)
                .or_else(|_| r.values[0].parse::<f64>())
                .map_err(|_| {
                    LabError::Sweep(format!(
                        "plot: {xname}={} is not a number; put a numeric parameter first",
                        r.values[0]
                    ))
                })?;
            let y: f64 = r.metrics[m].parse().unwrap_or(f64::NAN);
            let mut label: Vec<String> = self.columns[1..]
                .iter()
                .zip(&r.values[1..])
                .map(|(c, v)| format!("{c}={v}"))
                .collect();
            label.push(r.dir.clone());
            let label = label.join(" ");
            match series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push((x, y)),
                None => series.push(Series {
                    label,
                    kind: SeriesKind::Model,
                    points: vec![(x, y)],
                }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let (lo, hi) = (xs().fold(f64::MAX, f64::min), xs().fold(f64::MIN, f64::max));
        let x_log = lo > 0.0 && hi / lo >= 16.0;
        let x_bytes = matches!(
            xname.as_str(),
            "bs" | "size" | "io_size" | "blocksize" | "filesize"
        ) || xname.ends_with("_bytes");
        Ok(Figure {
            id: id.to_string(),
            title: format!("{metric} against {xname}"),
            x_label: xname.clone(),
            y_label: metric.to_string(),
            x_log,
            x_bytes,
            y_log: false,
            panels: vec![Panel {
                title: String::new(),
                series,
            }],
        })
    }
}

/// The reader's invariants on any text (a table's CSV and its metadata),
/// for the fuzz target and the property tests: no panic; a table read
/// back from its own CSV and metadata is the same table; merging it alone
/// either gives it back whole or says why.
#[doc(hidden)]
pub fn check_table_text(text: &str, meta: &str) {
    let p = Path::new("fuzz.csv");
    let m = Path::new("fuzz.json");
    if let Ok(t) = Table::parse(p, text, m, meta) {
        let again =
            Table::parse(p, &t.to_csv(), m, &t.meta_json()).expect("a table's own CSV reads back");
        assert_eq!(again, t, "round trip");
        if let Ok(m) = Table::merge(&[(p.to_path_buf(), t.clone())]) {
            assert_eq!(m.rows.len(), t.rows.len());
            assert!(m.rows.windows(2).all(|w| w[0].point <= w[1].point));
        }
        if !t.columns.is_empty() {
            let _ = t.figure("iops", "f");
        }
    }
}

/// Split one CSV line (RFC 4180 quoting, no line breaks inside fields).
/// By hand: the tables are small and of one known shape, and this keeps
/// the reader's errors in our words, with the line.
fn parse_csv_line(line: &str) -> std::result::Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => cur.push(c),
            (false, '"') if cur.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            (false, '"') => return Err("a quote inside an unquoted field".into()),
            (false, ',') => {
                out.push(std::mem::take(&mut cur));
                was_quoted = false;
            }
            (false, c) => {
                if was_quoted {
                    return Err("text after a closing quote".into());
                }
                cur.push(c)
            }
        }
    }
    if quoted {
        return Err("an unterminated quote".into());
    }
    out.push(cur);
    Ok(out)
}

#[cfg(test)]
mod tests;
