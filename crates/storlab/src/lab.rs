//! `storlab lab`: reproductions of the published studies, sweeps, merges.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use storlab_lab::{studies, sweep, Spec};

#[derive(Subcommand)]
pub enum LabCmd {
    /// List the studies that can be reproduced.
    List,
    /// Reproduce studies: each published figure beside the model's, and
    /// the study's figures drawn as SVG with their data as CSV. A row
    /// whose published value is a model input says `input`; a known miss
    /// says why. Ends with the median error over every row that is not an
    /// input. Exits 1 if a figure falls outside its published tolerance
    /// with no known reason.
    Reproduce {
        /// Studies to run (default: all).
        studies: Vec<String>,
        /// Directory for <study>.md, <study>.json and the figures.
        #[arg(long, default_value = "reproduction")]
        out: PathBuf,
        /// With `apps`: the devices of the Table V printed after the
        /// studies (the Moneta study's columns by default), speedups over
        /// the first.
        #[arg(long, value_delimiter = ',')]
        devices: Vec<String>,
        /// With `apps`: parameters added to every application of the
        /// Table V (`scale=0.1` for a quicker table).
        #[arg(long = "app-set")]
        app_set: Vec<String>,
        /// Also write an HTML report into this directory: index.html and
        /// one self-contained page per study (tables with the verdicts,
        /// figures inline, each device's resolved configuration, the runs
        /// as commands); opens from disk, no server or network.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Then run each study again with every device's media latency x2,
        /// and again with its bandwidth /2, and list the numeric rows that
        /// change by less than 0.1% under both: rows that do not move with
        /// the device they measure. Also writes <out>/sensitivity.json.
        #[arg(long)]
        sensitivity: bool,
    },
    /// Run one simulation per point of the varied parameters (the last
    /// varies fastest) and write a CSV table: per point and direction, IOs,
    /// IOPS, MB/s, mean latency, and completion latency mean, p50, p99,
    /// p99.9. The CSV is plain (header first); with --output X.csv the
    /// sweep's metadata (points, shard, definition) goes beside it as
    /// X.json. `--shard K/N` runs every N-th point from the K-th, for
    /// spreading a sweep over machines; `storlab lab merge` joins the
    /// shards. `--dask ADDRESS` runs the points on a Dask cluster.
    Sweep(SweepArgs),
    /// Join sweep shards (CSV tables from `sweep --shard`, each with its
    /// metadata X.json beside it) into the whole sweep's table, refusing
    /// missing or repeated points.
    Merge {
        /// The shards' tables (X.csv; X.json is read beside each).
        #[arg(required = true)]
        tables: Vec<PathBuf>,
        #[command(flatten)]
        out: TableOut,
    },
}

#[derive(clap::Args)]
pub struct SweepArgs {
    /// Device preset name or TOML file.
    #[arg(long, default_value = "moneta-spin")]
    device: String,
    /// Override a configuration value at every point: `--set pcie.controllers=8`.
    #[arg(long = "set")]
    set: Vec<String>,
    /// A varied parameter, `NAME=V1,V2,...`: a fio option (bs, iodepth,
    /// numjobs, rw...) or a model key with a dot (media.read_ns).
    #[arg(long = "vary", required = true)]
    vary: Vec<String>,
    /// Seed for anything the jobs leave unseeded.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Measure only the jobs with this name (a measured group after a
    /// warm-up group); default: every job.
    #[arg(long)]
    job: Option<String>,
    /// Run only shard K of N (1-based): points i with i mod N = K-1.
    /// Needs --output (the shard's metadata is written beside it).
    #[arg(long)]
    shard: Option<String>,
    /// Run the points on the Dask cluster whose scheduler is at ADDRESS
    /// (`tcp://host:8786`), one task per batch of points, through the
    /// Python package (`python3 -m storlab.dask_sweep`; the interpreter is
    /// $STORLAB_PYTHON when set). Needs Python 3 with storlab
    /// (`pip install ./python`) and dask.distributed.
    #[arg(long, conflicts_with = "shard")]
    dask: Option<String>,
    #[command(flatten)]
    out: TableOut,
    /// The fio job after `--`: options (--name=x --rw=randread ...) or a
    /// job file (default: storlab sim's default job).
    #[arg(last = true)]
    fio: Vec<String>,
}

#[derive(clap::Args)]
pub struct TableOut {
    /// Write the CSV table here (default: standard output), and its
    /// metadata beside it (the same name with .json).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Also draw the metric given by --y against the first parameter as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// The plotted metric: ios, iops, bw_mb_s, lat_mean_us, clat_mean_us,
    /// clat_p50_us, clat_p99_us, clat_p99.9_us.
    #[arg(long, default_value = "iops")]
    y: String,
}

impl TableOut {
    fn check(&self) -> anyhow::Result<()> {
        if !sweep::METRICS.contains(&self.y.as_str()) {
            anyhow::bail!("--y {}: one of {}", self.y, sweep::METRICS.join(", "));
        }
        if let Some(p) = &self.output {
            if sweep::meta_path(p).is_none() {
                anyhow::bail!(
                    "--output {}: the table's metadata goes beside it as .json; name the table otherwise (X.csv)",
                    p.display()
                );
            }
        }
        Ok(())
    }

    fn write(&self, t: &sweep::Table) -> anyhow::Result<()> {
        let csv = t.to_csv();
        match &self.output {
            Some(p) => {
                std::fs::write(p, csv).with_context(|| format!("--output {}", p.display()))?;
                let m = sweep::meta_path(p).expect("checked in check()");
                std::fs::write(&m, t.meta_json())
                    .with_context(|| format!("--output {}: its metadata", m.display()))?;
            }
            None => std::io::stdout().lock().write_all(csv.as_bytes())?,
        }
        if let Some(p) = &self.plot {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            t.figure(&self.y, &stem)?.write_svg(p)?;
        }
        Ok(())
    }
}

/// Run `storlab lab`.
pub fn run(cmd: &LabCmd) -> anyhow::Result<()> {
    match cmd {
        LabCmd::List => {
            let w = studies::STUDIES
                .iter()
                .map(|(n, _)| n.len())
                .max()
                .unwrap_or(0);
            for (name, what) in studies::STUDIES {
                println!("{name:<w$}  {what}");
            }
            Ok(())
        }
        LabCmd::Reproduce {
            studies: names,
            out,
            devices,
            app_set,
            html,
            sensitivity,
        } => reproduce(names, out, devices, app_set, html.as_deref(), *sensitivity),
        LabCmd::Sweep(a) => run_sweep(a),
        LabCmd::Merge { tables, out } => {
            out.check()?;
            let mut parts = Vec::new();
            for p in tables {
                let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
                let m = sweep::meta_path(p).ok_or_else(|| {
                    anyhow::anyhow!(
                        "{}: a table is X.csv with its metadata X.json beside it",
                        p.display()
                    )
                })?;
                let meta = std::fs::read_to_string(&m).with_context(|| {
                    format!(
                        "{}: the metadata of {} (written beside the table by `lab sweep --output`)",
                        m.display(),
                        p.display()
                    )
                })?;
                parts.push((p.clone(), sweep::Table::parse(p, &text, &m, &meta)?));
            }
            out.write(&sweep::Table::merge(&parts)?)
        }
    }
}

fn run_sweep(a: &SweepArgs) -> anyhow::Result<()> {
    a.out.check()?;
    let shard = a
        .shard
        .as_deref()
        .map(str::parse::<sweep::Shard>)
        .transpose()?;
    if shard.is_some() && a.out.output.is_none() {
        anyhow::bail!(
            "--shard needs --output X.csv: `lab merge` reads the shard's metadata, written beside it as X.json"
        );
    }
    let vary = a
        .vary
        .iter()
        .map(|v| sweep::Vary::parse(v))
        .collect::<Result<Vec<_>, _>>()?;
    let fio: Vec<String> = if a.fio.is_empty() {
        crate::sim::DEFAULT_JOB
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        a.fio.clone()
    };
    let base = Spec {
        device: a.device.clone(),
        overrides: a.set.clone(),
        fio,
        seed: a.seed,
        only: a.job.clone(),
    };
    let sw = sweep::Sweep::new(base, vary)?;
    if let Some(addr) = &a.dask {
        let table = dask_sweep(&sw, addr)?;
        return a.out.write(&table);
    }
    let bar = crate::sim::progress_bar_len(sw.shard_len(shard) as u64, "points");
    let table = sw.run(shard, &|| bar.inc(1))?;
    bar.finish_and_clear();
    a.out.write(&table)
}

/// Run the sweep's points on a Dask cluster through the Python package:
/// `python3 -m storlab.dask_sweep` reads the sweep's definition (the
/// metadata's JSON) and writes the rows of every point as JSON; the table
/// is then written here, as a local sweep writes it.
fn dask_sweep(sw: &sweep::Sweep, address: &str) -> anyhow::Result<sweep::Table> {
    let python = std::env::var("STORLAB_PYTHON").unwrap_or_else(|_| "python3".into());
    let tmp = tempfile::tempdir().context("--dask: a temporary directory")?;
    let dir = tmp.path();
    let spec = dir.join("sweep.json");
    let result = dir.join("rows.json");
    std::fs::write(&spec, serde_json::to_string(&sw.definition())?)
        .with_context(|| spec.display().to_string())?;
    let status = std::process::Command::new(&python)
        .args(["-m", "storlab.dask_sweep", "--address", address, "--spec"])
        .arg(&spec)
        .arg("--result")
        .arg(&result)
        // the table may go to standard output: nothing of Python's there
        // (its messages go to standard error, which stays the user's)
        .stdout(std::process::Stdio::null())
        .status();
    let outcome = (|| -> anyhow::Result<sweep::Table> {
        let status = status.map_err(|e| {
            anyhow::anyhow!(
                "--dask: cannot run {python} ({e}); --dask needs Python 3 with the storlab package (pip install ./python) and dask.distributed; set STORLAB_PYTHON to choose the interpreter"
            )
        })?;
        if !status.success() {
            anyhow::bail!(
                "--dask {address}: `{python} -m storlab.dask_sweep` failed ({status}); its message is above"
            );
        }
        let text =
            std::fs::read_to_string(&result).with_context(|| result.display().to_string())?;
        let rows: Vec<(usize, Vec<String>, String, Vec<String>)> = serde_json::from_str(&text)
            .with_context(|| format!("--dask: the rows written by {python}"))?;
        Ok(sweep::Table {
            points: sw.points(),
            shard: None,
            columns: sw.vary.iter().map(|v| v.name.clone()).collect(),
            rows: rows
                .into_iter()
                .map(|(point, values, dir, metrics)| sweep::TableRow {
                    point,
                    values,
                    dir,
                    metrics,
                })
                .collect(),
            sweep: Some(sw.definition()),
        })
    })();
    drop(tmp);
    outcome
}

fn reproduce(
    names: &[String],
    out: &std::path::Path,
    devices: &[String],
    app_set: &[String],
    html: Option<&std::path::Path>,
    sensitivity: bool,
) -> anyhow::Result<()> {
    let all = || studies::STUDIES.iter().map(|(n, _)| n.to_string());
    // `apps` is every application study, and the Table V after them
    let table_v = names.iter().any(|n| n == "apps") || !devices.is_empty();
    let names: Vec<String> = if names.is_empty() {
        all().collect()
    } else {
        names
            .iter()
            .flat_map(|n| -> Vec<String> {
                if n == "apps" {
                    all().filter(|s| s.starts_with("apps-")).collect()
                } else {
                    vec![n.clone()]
                }
            })
            .collect()
    };
    // every name checked before anything runs
    let prepared = names
        .iter()
        .map(|n| studies::prepare(n))
        .collect::<Result<Vec<_>, _>>()?;
    let total: usize = prepared.iter().map(|p| p.plan.len()).sum();
    let bar = crate::sim::progress_bar_len(total as u64, "runs");
    let mut missed = 0;
    let mut reps = Vec::new();
    let stdout = std::io::stdout();
    for p in prepared {
        let rep = p.run(&|| bar.inc(1))?;
        let files = rep.write_files(out)?;
        bar.suspend(|| -> std::io::Result<()> {
            let mut w = stdout.lock();
            rep.write_text(&mut w)?;
            for f in &files {
                writeln!(w, "  wrote {}", f.display())?;
            }
            writeln!(w)
        })?;
        missed += rep.failures().len();
        reps.push(rep);
    }
    bar.finish_and_clear();
    if table_v {
        let devices: Vec<String> = if devices.is_empty() {
            storlab_lab::tablev::DEFAULT_DEVICES
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            devices.to_vec()
        };
        let (plan, _) = storlab_lab::tablev::plan(&devices, app_set);
        let bar = crate::sim::progress_bar_len(plan.len() as u64, "runs");
        let t = storlab_lab::tablev::run(&devices, app_set, &|| bar.inc(1))?;
        bar.finish_and_clear();
        std::fs::create_dir_all(out).with_context(|| out.display().to_string())?;
        let md = t.markdown();
        for (name, text) in [
            ("table-v.md", md.clone()),
            ("table-v.json", serde_json::to_string_pretty(&t.json())?),
            ("table-v.csv", t.csv()),
        ] {
            let p = out.join(name);
            std::fs::write(&p, text).with_context(|| p.display().to_string())?;
        }
        let mut w = stdout.lock();
        writeln!(
            w,
            "Moneta (MICRO 2010) Table V shape: raw performance and speedup over {}\n\n{md}",
            devices[0]
        )?;
        writeln!(w, "  wrote {}", out.join("table-v.md").display())?;
        writeln!(w)?;
    }
    if let Some(dir) = html {
        let command = std::env::args()
            .map(|a| storlab_lab::html::shell_word(&a))
            .collect::<Vec<_>>()
            .join(" ");
        let meta = storlab_lab::html::SiteMeta::new(command);
        let pages = storlab_lab::html::write_site(dir, &reps, &meta)?;
        writeln!(
            stdout.lock(),
            "  wrote {} (and {} study pages)\n",
            pages[0].display(),
            pages.len() - 1
        )?;
    }
    storlab_lab::Summary::write_by_class(&reps, &mut stdout.lock())?;
    // the totals as a page of the guide (docs/studies/totals.md is this
    // file, copied when the totals change; the lab test compares them)
    std::fs::create_dir_all(out).with_context(|| out.display().to_string())?;
    let totals_path = out.join("totals.md");
    std::fs::write(&totals_path, storlab_lab::report::totals_markdown(&reps)?)
        .with_context(|| totals_path.display().to_string())?;
    // the run's verdicts against the committed record
    // (docs/studies/verdicts.json): a row that held and now misses, or a
    // recorded row that is gone, fails the run
    let record = storlab_lab::verdicts::record_of(&reps);
    std::fs::create_dir_all(out).with_context(|| out.display().to_string())?;
    let rec_path = out.join("verdicts.json");
    std::fs::write(&rec_path, storlab_lab::verdicts::to_json(&record))
        .with_context(|| rec_path.display().to_string())?;
    let moves = storlab_lab::verdicts::moves(&storlab_lab::verdicts::committed(), &record);
    let regressions = moves.iter().filter(|m| m.is_regression()).count();
    {
        let mut w = stdout.lock();
        if moves.is_empty() {
            writeln!(
                w,
                "  verdicts: every row as recorded in {}",
                storlab_lab::verdicts::RECORD_PATH
            )?;
        } else {
            writeln!(
                w,
                "  verdicts: {} rows moved against {} ({regressions} regressions); this run's record is {}:",
                moves.len(),
                storlab_lab::verdicts::RECORD_PATH,
                rec_path.display()
            )?;
            for m in &moves {
                writeln!(w, "    {}", m.describe())?;
            }
        }
    }
    if regressions > 0 {
        anyhow::bail!(
            "{regressions} row(s) regressed against {} (a row that held now misses, or a recorded row is gone)",
            storlab_lab::verdicts::RECORD_PATH
        );
    }
    if sensitivity {
        sensitivity_check(&reps, out)?;
    }
    if missed > 0 {
        anyhow::bail!(
            "{missed} row(s) fail the lab: a miss with no reason, a reason beside a row that holds, or a target with no published place (each marked FAILS above)"
        );
    }
    Ok(())
}

/// `--sensitivity`: each study of `reps` again under both perturbations
/// (`storlab_lab::sensitivity`), the rows that do not move printed and
/// written to `<out>/sensitivity.json`.
fn sensitivity_check(
    reps: &[storlab_lab::Reproduction],
    out: &std::path::Path,
) -> anyhow::Result<()> {
    use storlab_lab::sensitivity::{self, Perturbation};
    // every study prepared (and every device perturbed) before anything runs
    let mut prepared = Vec::new();
    for rep in reps {
        for p in Perturbation::ALL {
            prepared.push(sensitivity::prepare(&rep.study, p)?);
        }
    }
    let total: usize = prepared.iter().map(|p| p.plan.len()).sum();
    let bar = crate::sim::progress_bar_len(total as u64, "runs (sensitivity)");
    let mut checked = Vec::new();
    let mut prepared = prepared.into_iter();
    for base in reps {
        let (lat, bw) = (
            prepared.next().expect("prepared"),
            prepared.next().expect("prepared"),
        );
        let lat = lat.run(&|| bar.inc(1))?;
        let bw = bw.run(&|| bar.inc(1))?;
        checked.push((base, sensitivity::compare(base, &lat, &bw)?));
    }
    bar.finish_and_clear();
    let report = sensitivity::Report::new(checked);
    std::fs::create_dir_all(out).with_context(|| out.display().to_string())?;
    let path = out.join("sensitivity.json");
    std::fs::write(&path, report.to_json()).with_context(|| path.display().to_string())?;
    let mut w = std::io::stdout().lock();
    writeln!(w)?;
    report.write_text(&mut w)?;
    writeln!(w, "  wrote {}", path.display())?;
    Ok(())
}
