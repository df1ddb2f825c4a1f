//! The `storlab` command: argument parsing and wiring only. Errors map to a
//! message on stderr and a non-zero exit status.

mod app;
mod apps;
mod bench;
mod hybrid;
mod lab;
mod paging;
mod pmem;
mod serve;
mod sim;
mod trace;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// storlab: a laboratory for storage and memory built from fast
/// non-volatile memories.
#[derive(Parser)]
#[command(name = "storlab", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate fio jobs on a device model in virtual time (default: a 4 KB
    /// random-read job on moneta-spin). fio options (--name=, --rw=, ...)
    /// and job files are accepted as fio accepts them.
    #[command(disable_help_flag = true)]
    Sim {
        /// Everything after `sim` (split into storlab's and fio's options).
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        args: Vec<String>,
    },
    /// Application models (databases, file workloads, key-value stores,
    /// paging programs): list them, show one, calibrate one's CPU.
    /// (`storlab app` runs the real programs on an emulated device.)
    Apps {
        #[command(subcommand)]
        cmd: Option<apps::AppsCmd>,
    },
    /// Real applications (Berkeley DB, postmark, MariaDB, PostgreSQL,
    /// SQLite, RocksDB, a build) on an emulated device, one command.
    /// (`storlab apps` lists the simulator's application models.)
    App {
        #[command(subcommand)]
        cmd: app::AppCmd,
    },
    /// List device presets, or show one fully resolved with sources.
    Devices {
        #[command(subcommand)]
        what: Option<DevicesCmd>,
        /// Also look for presets (NAME.toml) in this directory.
        #[arg(long)]
        preset_dir: Option<std::path::PathBuf>,
    },
    /// Measure the simulator's speed (simulated IOs per second of wall time).
    Bench(bench::BenchArgs),
    /// Serve an emulated block device over NBD, each reply timed by the model.
    Serve(serve::ServeArgs),
    /// Block traces: statistics and conversion between formats.
    Trace {
        #[command(subcommand)]
        cmd: trace::TraceCmd,
    },
    /// The lab: reproduce the published studies beside their figures;
    /// parameter sweeps.
    Lab {
        #[command(subcommand)]
        cmd: lab::LabCmd,
    },
    /// Paging through the model of Linux's swap path: a memory workload
    /// (thrash by default) with too little DRAM, swapping to any preset,
    /// beside the same workload with enough DRAM.
    Paging(paging::PagingArgs),
    /// Hybrid DRAM + device memory on this host: the thrash benchmark.
    Hybrid {
        #[command(subcommand)]
        cmd: hybrid::HybridCmd,
    },
    /// Persistent-memory runtime: msync-bench, capabilities.
    #[command(disable_help_flag = true)]
    Pmem {
        /// msync-bench or caps, and their options.
        #[arg(allow_hyphen_values = true, trailing_var_arg = true)]
        args: Vec<String>,
    },
}

#[derive(Subcommand)]
enum DevicesCmd {
    /// Show a preset's resolved configuration, every value with its source.
    Show {
        /// Preset name or TOML file.
        name: String,
        /// Overrides, `key.path=value`.
        #[arg(long = "set")]
        set: Vec<String>,
    },
}

fn main() -> ExitCode {
    // Like other Unix filters, end quietly when the reader of our output
    // goes away (`storlab ... | head`) instead of failing to print.
    // SAFETY: resetting a signal's disposition to the default at startup,
    // before any thread exists, has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Sim { args } => sim::run(&args),
        Cmd::Devices { what, preset_dir } => devices(what, preset_dir),
        Cmd::Apps { cmd } => apps::run(&cmd),
        Cmd::App { cmd } => app::main(&cmd),
        Cmd::Bench(a) => bench::run(&a),
        Cmd::Pmem { args } => pmem::run(&args),
        Cmd::Trace { cmd } => trace::run(&cmd),
        Cmd::Serve(a) => serve::run(&a),
        Cmd::Lab { cmd } => lab::run(&cmd),
        Cmd::Hybrid { cmd } => hybrid::run(&cmd),
        Cmd::Paging(a) => paging::run(&a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("storlab: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn devices(what: Option<DevicesCmd>, dir: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let mut store = storlab_model::config::PresetStore::default();
    if let Some(d) = dir {
        store = store.with_dir(d);
    }
    match what {
        None => {
            let list = store.list();
            let w = list.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
            for (name, desc) in list {
                println!("{name:<w$}  {desc}");
            }
        }
        Some(DevicesCmd::Show { name, set }) => {
            let (resolved, _cfg) = storlab_model::SystemConfig::load(&store, &name, &set)?;
            print!("{}", resolved.show());
        }
    }
    Ok(())
}
