//! `storlab trace stats|convert`: block traces in the formats people have.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use storlab_trace::{ConvertOptions, Format, OpSet, ReadOptions};

/// How to read a trace: shared by `trace stats`, `trace convert` and
/// `sim --trace`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ReadArgs {
    /// Input format (fio2, fio3/iolog, blkparse, blktrace, msr, disksim,
    /// closed);
    /// detected from the content when omitted.
    #[arg(long = "trace-format")]
    pub trace_format: Option<String>,
    /// Skip unusable lines and count them instead of stopping.
    #[arg(long = "skip-bad-lines")]
    pub skip_bad_lines: bool,
    /// Keep only these operations (read,write,trim,flush).
    #[arg(long = "trace-ops")]
    pub trace_ops: Option<String>,
    /// Keep only this disk (MSR DiskNumber, DiskSim device, ...).
    #[arg(long = "trace-disk")]
    pub trace_disk: Option<u32>,
    /// Keep records from this time on (ns since the first record).
    #[arg(long = "trace-start-ns")]
    pub trace_start_ns: Option<u64>,
    /// Keep records before this time (ns since the first record).
    #[arg(long = "trace-end-ns")]
    pub trace_end_ns: Option<u64>,
}

impl ReadArgs {
    /// The format and read options these flags describe.
    pub fn options(&self) -> anyhow::Result<(Option<Format>, ReadOptions)> {
        let format = match &self.trace_format {
            Some(f) => Some(
                f.parse::<Format>()
                    .with_context(|| "--trace-format".to_string())?,
            ),
            None => None,
        };
        let mut o = ReadOptions {
            skip_bad_lines: self.skip_bad_lines,
            ..ReadOptions::default()
        };
        if let Some(ops) = &self.trace_ops {
            o.ops = ops
                .parse::<OpSet>()
                .map_err(|e| anyhow::anyhow!("--trace-ops: {e}"))?;
        }
        o.disk = self.trace_disk;
        o.start_ns = self.trace_start_ns;
        o.end_ns = self.trace_end_ns;
        Ok((format, o))
    }
}

/// `storlab trace ...`.
#[derive(clap::Subcommand, Debug)]
pub enum TraceCmd {
    /// Size, read/write mix, size distribution, sequentiality, inter-arrival
    /// times of a trace.
    Stats {
        /// The trace file (for blktrace, the device name or any of its
        /// per-CPU files).
        file: PathBuf,
        #[command(flatten)]
        read: ReadArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Convert a trace between formats.
    Convert {
        /// Input trace.
        input: PathBuf,
        /// Output file (`-` for standard output).
        output: PathBuf,
        /// Output format (fio2, fio3, blkparse, blktrace, msr, disksim).
        #[arg(long)]
        to: String,
        #[command(flatten)]
        read: ReadArgs,
    },
}

/// Run `storlab trace ...`.
pub fn run(cmd: &TraceCmd) -> anyhow::Result<()> {
    match cmd {
        TraceCmd::Stats { file, read, json } => {
            let (format, opts) = read.options()?;
            let reader = storlab_trace::open(file, format, &opts)?;
            let stats = storlab_trace::stats(reader)?;
            if *json {
                println!("{}", serde_json::to_string_pretty(&stats)?);
            } else {
                print!("{stats}");
            }
        }
        TraceCmd::Convert {
            input,
            output,
            to,
            read,
        } => {
            let (format, opts) = read.options()?;
            let to: Format = to.parse().with_context(|| "--to".to_string())?;
            if to == Format::Closed {
                anyhow::bail!("--to closed: a closed-loop trace is read, not written, by convert (record one with `storlab serve --record-format closed`)");
            }
            let copts = ConvertOptions {
                read: opts,
                ..ConvertOptions::default()
            };
            let mut out: Box<dyn Write> = if output.as_os_str() == "-" {
                Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
            } else {
                Box::new(std::io::BufWriter::new(
                    std::fs::File::create(output).with_context(|| output.display().to_string())?,
                ))
            };
            let summary = storlab_trace::convert(input, format, &mut out, to, &copts)?;
            out.flush()?;
            // the summary goes where it does not mix with the trace
            let line = serde_json::to_string(&summary)?;
            if output.as_os_str() == "-" {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        }
    }
    Ok(())
}
