//! `storlab app`: real applications (Debian's programs, or small C
//! programs of this repository compiled at run time) on an emulated
//! device, in one command: `storlab serve` on a private unix socket, the
//! export attached as a block device, a file system made and mounted, the
//! application prepared and run, its own metric reported beside the
//! emulator's device-level figures, and everything taken down again.
//! (`storlab apps`, plural, lists the simulator's application models.)

mod bdb;
mod build;
pub mod check;
pub mod compare;
mod kit;
mod opts;
mod pgbench;
mod postmark;
mod registry;
mod rocksdb;
pub mod run;
mod sqlite;
mod sysbench;
pub mod teardown;

use clap::Subcommand;

use kit::{missing, DEFAULT_DURATION};
use registry::all;

/// `storlab app` subcommands.
#[derive(Subcommand, Debug)]
pub enum AppCmd {
    /// The applications: what each runs, its Debian package, its default
    /// size and duration, and whether it is installed here.
    List,
    /// Run one application on an emulated device (needs root, or
    /// CAP_SYS_ADMIN, for the loop device and the mount).
    Run(run::RunArgs),
    /// Run one application on several devices: raw metric per device and
    /// the speedup of each over the first (the Moneta study's Table V
    /// shape).
    Compare(compare::CompareArgs),
    /// The simulator's model against the real program: per device, time
    /// and IO per operation of the real program on the emulator beside
    /// the model's at the same scaled configuration.
    Check(check::CheckArgs),
}

/// Run `storlab app`.
pub fn main(cmd: &AppCmd) -> anyhow::Result<()> {
    match cmd {
        AppCmd::List => {
            list();
            Ok(())
        }
        AppCmd::Run(a) => run::main(a),
        AppCmd::Compare(a) => compare::main(a),
        AppCmd::Check(a) => check::main(a),
    }
}

fn list() {
    let apps = all();
    println!(
        "{:<14} {:<9} {:<5} {:<10} {:<44} what it runs",
        "app", "installed", "scale", "duration", "Debian packages"
    );
    for a in apps {
        let miss = missing(&a.needs());
        let mut pkgs: Vec<&str> = a.needs().iter().map(|(_, p)| *p).collect();
        pkgs.dedup();
        println!(
            "{:<14} {:<9} {:<5} {:<10} {:<44} {}",
            a.name(),
            if miss.is_empty() { "yes" } else { "no" },
            a.default_scale(),
            if a.timed() {
                format!("{}s", DEFAULT_DURATION.as_secs())
            } else {
                "fixed work".into()
            },
            pkgs.join(","),
            a.about()
        );
        println!("{:<14} scale 1 = {}", "", a.study());
        if !miss.is_empty() {
            println!("{:<14} missing: {}", "", miss.join(", "));
        }
    }
    println!(
        "\nDefault device size 8G (--size), file system xfs (--fs). `storlab app run APP --device D` needs root."
    );
}
