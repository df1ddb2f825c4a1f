//! `storlab lab`: reproductions of the published studies, sweeps, merges.

use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use storlab_lab::studies;

#[derive(Subcommand)]
pub enum LabCmd {
    /// List the studies that can be reproduced.
    List,
    /// Reproduce studies: each published figure beside the model's, and
    /// the study's figures drawn as SVG with their data as CSV. Exits 1 if
    /// a figure falls outside its published tolerance.
    Reproduce {
        /// Studies to run (default: all).
        studies: Vec<String>,
        /// Directory for <study>.md, <study>.json and the figures.
        #[arg(long, default_value = "reproduction")]
        out: PathBuf,
    },
}

/// Run `storlab lab`.
pub fn run(cmd: &LabCmd) -> anyhow::Result<()> {
    match cmd {
        LabCmd::List => {
            for (name, what) in studies::STUDIES {
                println!("{name:<10}  {what}");
            }
            Ok(())
        }
        LabCmd::Reproduce {
            studies: names,
            out,
        } => reproduce(names, out),
    }
}

fn reproduce(names: &[String], out: &std::path::Path) -> anyhow::Result<()> {
    let names: Vec<String> = if names.is_empty() {
        studies::STUDIES
            .iter()
            .map(|(n, _)| n.to_string())
            .collect()
    } else {
        names.to_vec()
    };
    // every name checked before anything runs
    let prepared = names
        .iter()
        .map(|n| studies::prepare(n))
        .collect::<Result<Vec<_>, _>>()?;
    let total: usize = prepared.iter().map(|p| p.plan.len()).sum();
    let bar = crate::sim::progress_bar_len(total as u64, "runs");
    let mut missed = 0;
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
    }
    bar.finish_and_clear();
    if missed > 0 {
        anyhow::bail!("{missed} published figure(s) not reproduced within tolerance");
    }
    Ok(())
}
