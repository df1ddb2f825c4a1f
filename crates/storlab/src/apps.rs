//! `storlab apps`: the application models, what each models and
//! simplifies, and the calibration of an application's CPU against a
//! measured figure.

use anyhow::Context;
use clap::Subcommand;
use storlab_apps as apps;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

/// `storlab apps` subcommands (none: list them).
#[derive(Subcommand, Debug)]
pub enum AppsCmd {
    /// What an application models, what it simplifies, its calibration and
    /// parameters.
    Show {
        /// Application name.
        name: String,
    },
    /// Find the value of one parameter (CPU per operation, usually) at
    /// which the application's metric on a device matches a figure you
    /// measured: bisection over simulated runs.
    Calibrate {
        /// Application name.
        name: String,
        /// Device preset.
        #[arg(long)]
        device: String,
        /// The parameter to solve for.
        #[arg(long, default_value = "cpu_us")]
        param: String,
        /// The metric to reach (in the application's unit).
        #[arg(long)]
        target: f64,
        /// Other parameters, `name=value,...`.
        #[arg(long = "app-set")]
        app_set: Vec<String>,
        /// Configuration overrides.
        #[arg(long = "set")]
        set: Vec<String>,
        /// Lowest and highest value to search.
        #[arg(long, default_value_t = 0.1)]
        lo: f64,
        /// Highest value to search.
        #[arg(long, default_value_t = 100000.0)]
        hi: f64,
    },
}

/// Run `storlab apps`.
pub fn run(cmd: &Option<AppsCmd>) -> anyhow::Result<()> {
    match cmd {
        None => {
            print!("{}", apps::list_text());
            println!("\n`storlab apps show NAME` says what one models; run one with `storlab sim --device D --app NAME [--app-set k=v,...]`.");
            Ok(())
        }
        Some(AppsCmd::Show { name }) => {
            let a = apps::find(name, "storlab apps show")?;
            print!("{}", apps::show_text(a));
            print!("{}", storlab_lab::approws::show_text(a.name));
            Ok(())
        }
        Some(AppsCmd::Calibrate {
            name,
            device,
            param,
            target,
            app_set,
            set,
            lo,
            hi,
        }) => {
            let info = apps::find(name, "storlab apps calibrate")?;
            let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, set)
                .with_context(|| format!("device '{device}'"))?;
            let metric = |v: f64| -> anyhow::Result<f64> {
                let mut pairs = app_set.clone();
                pairs.push(format!("{param}={v}"));
                let r = apps::simulate_app(&cfg, &resolved, info, &pairs, "--app-set", 1)?;
                Ok(r)
            };
            let v = apps::calibrate(metric, *target, *lo, *hi)?;
            println!(
                "{name} on {device}: {param}={v:.4} gives {target} {}",
                info.unit
            );
            Ok(())
        }
    }
}
