//! `storlab pmem`: the persistent-memory runtime's experiments and
//! capabilities. The msync-bench flags come from the library's own list
//! (`MSYNC_BENCH_FLAGS`), so each is defined once.

use clap::{Arg, Command};
use storlab_pmem::{capabilities, msync_bench, MsyncBenchOptions, MSYNC_BENCH_FLAGS};

fn command() -> Command {
    let mut bench = Command::new("msync-bench")
        .about(
            "Write one byte, sync a region, repeat: median and p99 per mode, sync policy and size",
        )
        .arg(
            Arg::new("output-format")
                .long("output-format")
                .default_value("normal")
                .help("normal (a table) or json"),
        );
    for f in MSYNC_BENCH_FLAGS {
        bench = bench.arg(
            Arg::new(f.name)
                .long(f.name)
                .value_name(f.value_name)
                // `--sizes -4k` reaches the flag's own parser, which says
                // what is wrong with the value
                .allow_hyphen_values(true)
                .help(f.help),
        );
    }
    Command::new("storlab pmem")
        .about("Persistent-memory runtime: flush modes, write barriers, selective persistence flushing")
        .subcommand_required(true)
        .subcommand(bench)
        .subcommand(Command::new("caps").about("What this host can and cannot emulate"))
}

/// Run `storlab pmem ...`.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let m = command().try_get_matches_from(
        std::iter::once("storlab pmem".to_string()).chain(args.iter().cloned()),
    );
    let m = match m {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => {
            print!("{e}");
            return Ok(());
        }
        // clap's message starts with its own "error: ", which main adds
        Err(e) => {
            let text = e.to_string();
            anyhow::bail!("{}", text.trim_start_matches("error: ").trim_end())
        }
    };
    match m.subcommand() {
        Some(("caps", _)) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&capabilities().to_json())?
            );
        }
        Some(("msync-bench", sub)) => {
            let mut flags: Vec<(&str, &str)> = Vec::new();
            for f in MSYNC_BENCH_FLAGS {
                if let Some(v) = sub.get_one::<String>(f.name) {
                    flags.push((f.name, v.as_str()));
                }
            }
            let opts = MsyncBenchOptions::parse(&flags)?;
            let report = msync_bench(&opts)?;
            match sub.get_one::<String>("output-format").map(String::as_str) {
                Some("json") => println!("{}", serde_json::to_string_pretty(&report.to_json())?),
                Some("normal") | None => report.write_table(&mut std::io::stdout().lock())?,
                Some(other) => {
                    anyhow::bail!("--output-format={other}: supported formats are normal and json")
                }
            }
        }
        _ => unreachable!("clap requires a subcommand"),
    }
    Ok(())
}
