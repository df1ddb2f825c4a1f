//! What a run of a real application is given: its options (`RunOpts`,
//! shared by `app run` and `app compare`, with the device attachment and
//! the duration syntax) and its context while it runs (`Ctx`).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::teardown::{self, Proc, Teardown};

/// How to attach the export as a block device.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// The kernel's NBD client when /dev/nbd0 exists, else nbdfuse.
    Auto,
    /// The kernel's NBD client (nbd-client, the nbd module).
    Nbd,
    /// nbdfuse exposing the export as a file, on a loop device with
    /// direct IO.
    Nbdfuse,
}

/// The device, file system and sizes of a run (shared with `app compare`).
#[derive(clap::Args, Debug, Clone)]
pub struct RunOpts {
    /// Device preset name or TOML file [default: moneta-spin].
    #[arg(long)]
    pub device: Option<String>,
    /// File system made on the device.
    #[arg(long, default_value = "xfs", value_parser = ["xfs", "ext4"])]
    pub fs: String,
    /// Size of the emulated device (K, M, G, T: binary units).
    #[arg(long, default_value = "8G", value_parser = parse_app_size)]
    pub size: u64,
    /// How long a timed application runs (`60s`, `2m`, `500ms`).
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// A timed application does this much work instead of running for
    /// --duration: the amounts its report's `work` gives (transactions;
    /// sqlite: inserts,reads; rocksdb: fill,read operations).
    #[arg(long, value_delimiter = ',')]
    pub work: Vec<u64>,
    /// Data set size relative to the study's (1 = the study's); default:
    /// the application's, sized to run in about a minute here.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Threads (clients) of the application.
    #[arg(long, default_value_t = 4)]
    pub threads: u32,
    /// Record every request the device serves, the whole session (mkfs,
    /// preparation, the measured phase), to this trace file (`storlab
    /// serve --record`); a closed-loop trace unless --record-format says
    /// otherwise: `storlab sim --trace FILE --replay closed --device D`
    /// predicts the application on device D.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Format of --record (`storlab serve --record-format`: closed, the
    /// default here, or fio3, blkparse...).
    #[arg(long = "record-format")]
    pub record_format: Option<String>,
    /// postmark only: direct IO (the file system is mounted `sync`: see
    /// `storlab app list`).
    #[arg(long)]
    pub direct: bool,
    /// How to attach the device.
    #[arg(long, value_enum, default_value = "auto")]
    pub attach: Attach,
    /// Round trips of the server's transport-floor probe (0 skips it).
    #[arg(long, default_value_t = 20_000)]
    pub floor_probe: u32,
    /// Configuration overrides passed to the server, `key.path=value`.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Also look for presets in this directory.
    #[arg(long = "preset-dir")]
    pub preset_dir: Option<PathBuf>,
}

/// `60s`, `2m`, `1h`, `500ms`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mul) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && (v * mul).is_finite() && v * mul < 1e7 => {
            Ok(Duration::from_secs_f64(v * mul))
        }
        _ => Err(format!(
            "{s}: a duration is a positive number with s, m, h or ms (60s, 2m, 500ms)"
        )),
    }
}

/// What an application sees of the run.
pub struct Ctx<'a> {
    /// The undo stack (processes started are pushed on it).
    pub td: &'a mut Teardown,
    /// The run's private directory (sockets, logs, config files).
    pub tmp: PathBuf,
    /// The mounted file system on the emulated device.
    pub mnt: PathBuf,
    /// Threads of the application.
    pub threads: u32,
    /// How long a timed application runs.
    pub duration: Duration,
    /// Data set size relative to the study's.
    pub scale: f64,
    /// Fixed work instead of the duration (`--work`), if given.
    pub work: Option<Vec<u64>>,
}

impl Ctx<'_> {
    /// Run a command to completion (own process group, output logged in
    /// the private directory as `NAME.log`); its output.
    pub fn run(&mut self, name: &str, cmd: &mut Command) -> anyhow::Result<String> {
        cmd.env("TMPDIR", self.tmp.join("scratch"));
        let log = self
            .tmp
            .join(format!("{}.log", name.replace([' ', '/'], "_")));
        teardown::run(self.td, name, cmd, &log, None)
    }

    /// Start a long-lived process (a database server) in its own process
    /// group, killed on teardown after `grace`.
    pub fn spawn(
        &mut self,
        name: &str,
        cmd: &mut Command,
        grace: Duration,
    ) -> anyhow::Result<Proc> {
        cmd.env("TMPDIR", self.tmp.join("scratch"));
        let log = self
            .tmp
            .join(format!("{}.log", name.replace([' ', '/'], "_")));
        teardown::spawn(self.td, name, cmd, &log, grace)
    }

    /// Wait until `ready` holds (polled every 50 ms), at most `limit`;
    /// an error naming `what` if `proc` ends first or time runs out.
    pub fn wait_ready(
        &mut self,
        what: &str,
        proc: &mut Proc,
        limit: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> anyhow::Result<()> {
        let end = Instant::now() + limit;
        loop {
            if ready() {
                return Ok(());
            }
            if !proc.running() {
                bail!(
                    "{what} ended before it was ready; its last output:\n{}",
                    teardown::tail(&proc.log, 20)
                );
            }
            if Instant::now() > end {
                bail!(
                    "{what} not ready after {limit:?}; its last output:\n{}",
                    teardown::tail(&proc.log, 20)
                );
            }
            teardown::sleep(Duration::from_millis(50))?;
        }
    }
}

/// The device of `app run` without --device.
pub const DEFAULT_DEVICE: &str = "moneta-spin";

impl RunOpts {
    /// The device preset (or TOML file) to run on.
    pub fn device(&self) -> &str {
        self.device.as_deref().unwrap_or(DEFAULT_DEVICE)
    }

    /// Check that `device` loads with these options' --preset-dir and
    /// --set, as the server would load it, before anything is set up.
    pub fn check_device(&self, device: &str) -> anyhow::Result<()> {
        let mut store = storlab_model::config::PresetStore::default();
        if let Some(d) = &self.preset_dir {
            store = store.with_dir(d);
        }
        storlab_model::SystemConfig::load(&store, device, &self.set)
            .with_context(|| format!("device '{device}'"))?;
        Ok(())
    }
}

/// `app run --size`: a zero points to the default (8G), not to the
/// device's capacity as `serve --size`'s does.
fn parse_app_size(s: &str) -> Result<u64, String> {
    crate::serve::nonzero_size(s, " (leave --size out for app run's default, 8G)")
}
