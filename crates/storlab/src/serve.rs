//! `storlab serve`: an emulated block device over NBD, timed by the same
//! model the simulator runs.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use storlab_emu::{RecordSpec, ServeOptions, ShutdownHandle, StoreSpec};
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

/// Options.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Device preset name or TOML file.
    #[arg(long, default_value = "moneta-spin")]
    pub device: String,
    /// Export size (bytes, or with K/M/G/T, binary units); default: the
    /// device's capacity, which a memory store cuts to half this machine's
    /// RAM less --max-buffer (said at start; --memory-over-ram keeps it).
    #[arg(long, value_parser = parse_export_size, allow_hyphen_values = true)]
    pub size: Option<u64>,
    /// Listen on this unix socket.
    #[arg(long)]
    pub socket: Option<PathBuf>,
    /// Listen on this TCP address (default 127.0.0.1:10809 when no socket).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Allow a non-loopback --listen address (the export has no
    /// authentication).
    #[arg(long)]
    pub allow_remote: bool,
    /// Where data lives: memory (sparse, default) or file:PATH (sparse).
    #[arg(long, default_value = "memory")]
    pub store: String,
    /// Refuse writes.
    #[arg(long)]
    pub read_only: bool,
    /// Export name.
    #[arg(long, default_value = "")]
    pub export_name: String,
    /// Record every request served as a trace to this file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Format of --record: fio3, blkparse, ... (open loop), or closed (a
    /// closed-loop trace with each request's dependencies and think time,
    /// for `storlab sim --replay closed`).
    #[arg(long = "record-format", default_value = "fio3")]
    pub record_format: String,
    /// A unix socket taking line commands: powercut, stats, reset-stats,
    /// shutdown.
    #[arg(long)]
    pub control: Option<PathBuf>,
    /// Override any configuration value: `--set pcie.controllers=8`.
    #[arg(long = "set")]
    pub set: Vec<String>,
    /// Also look for presets in this directory.
    #[arg(long = "preset-dir")]
    pub preset_dir: Option<PathBuf>,
    /// Do not keep idle CPUs polling while replies are due (by default a
    /// 0 µs CPU latency request is held then, when running as root, so a
    /// client's wake-up from a halted CPU does not add to the latency).
    #[arg(long)]
    pub no_wake_assist: bool,
    /// Never run the reactor SCHED_FIFO (by default it does while replies
    /// wait for deadlines, when allowed).
    #[arg(long)]
    pub no_realtime: bool,
    /// Before serving, measure the transport floor (what a zero-latency
    /// device costs over NBD here) with this many round trips; the report
    /// shows it. 0 skips it; at most 10 million (about a minute).
    #[arg(long, default_value_t = 20_000,
          value_parser = clap::value_parser!(u32).range(0..=10_000_000))]
    pub floor_probe: u32,
    /// Most connections served at once. A slot is no lease for life: a
    /// newcomer arriving when all are taken evicts one at the end of its
    /// handshake (the idlest of its own peer, process or address, if that
    /// peer is served, else of the peer holding the most slots), and
    /// waiting newcomers are served in arrival order, within a second.
    #[arg(long, default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_connections: u32,
    /// Most handshakes at once, apart from the serving slots; when all are
    /// taken, the one that has lasted longest is cut for the newcomer.
    #[arg(long, default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_handshakes: u32,
    /// The whole handshake must end within this many seconds.
    #[arg(long, default_value = "10", value_parser = parse_seconds)]
    pub handshake_timeout: f64,
    /// Close a connection idle this many seconds (nothing sent, nothing
    /// in flight; or its replies not taken); `off` never does.
    #[arg(long, default_value = "60", value_parser = parse_timeout)]
    pub idle_timeout: f64,
    /// Bytes one connection may hold in the server (replies queued, read
    /// replies in flight, a write's payload being received) before the
    /// server stops reading its requests until it takes its replies
    /// (K/M/G).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub max_buffer_per_connection: u64,
    /// The memory budget for all clients (K/M/G): replies queued, read
    /// replies in flight and write payloads being received. Half is split
    /// evenly (each connection may always hold its share), the other half
    /// is shared; a request whose memory is not admitted is not read
    /// until it is. Trims and write-zeroes reach the device in pieces of
    /// the largest write, one piece's worth per connection at a time. A
    /// memory store with this may take at most half of RAM (see
    /// --memory-over-ram); the server's resident memory stays within the
    /// store's data, this budget and a fixed overhead.
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    pub max_buffer: u64,
    /// Allow a memory store whose export plus --max-buffer is more than
    /// half of this machine's RAM (by default refused: use a file store
    /// or a smaller --size).
    #[arg(long)]
    pub memory_over_ram: bool,
}

/// Seconds: a positive number, at most a day.
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('s').parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        Ok(v) => Err(format!(
            "{v}: seconds must be more than 0 and at most 86400"
        )),
        Err(_) => Err(format!("{s}: not a number of seconds")),
    }
}

/// Seconds, or `off` / `0` for never (0).
pub fn parse_timeout(s: &str) -> Result<f64, String> {
    match s.trim() {
        "off" | "0" | "0s" | "none" => Ok(0.0),
        t => parse_seconds(t),
    }
}

/// `8G`, `512m`, `1.5GiB`, `4096`: binary units (K = 1024), more than
/// zero (an empty export or buffer is never what a user meant).
pub fn parse_size(s: &str) -> Result<u64, String> {
    nonzero_size(s, "")
}

/// `serve --size`: as [`parse_size`], a zero pointing to the default.
pub fn parse_export_size(s: &str) -> Result<u64, String> {
    nonzero_size(s, " (leave --size out for the device's capacity)")
}

/// A size of at least one byte; `hint` follows the message for zero.
pub fn nonzero_size(s: &str, hint: &str) -> Result<u64, String> {
    match parse_size::Config::new().with_binary().parse_size(s.trim()) {
        Ok(0) => Err(format!("{s}: needs at least one byte{hint}")),
        Ok(n) => Ok(n),
        Err(e) => Err(format!(
            "{s}: {e} (a size is a number with an optional K, M, G or T)"
        )),
    }
}

/// Run `storlab serve`.
pub fn run(a: &ServeArgs) -> anyhow::Result<()> {
    let mut store = PresetStore::default();
    if let Some(d) = &a.preset_dir {
        store = store.with_dir(d);
    }
    let (_resolved, cfg) = SystemConfig::load(&store, &a.device, &a.set)
        .with_context(|| format!("device '{}'", a.device))?;
    let device = cfg.build_device_in(&store)?;
    let store_spec: StoreSpec = a
        .store
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--store: {e}"))?;
    let record = match &a.record {
        Some(p) if a.record_format == "closed" => Some(RecordSpec::closed(p.clone())),
        Some(p) => {
            let format = a
                .record_format
                .parse()
                .with_context(|| "--record-format".to_string())?;
            Some(RecordSpec::new(p.clone(), format))
        }
        None => None,
    };
    let opts = ServeOptions {
        socket: a.socket.clone(),
        listen: a.listen,
        allow_remote: a.allow_remote,
        size: a.size.unwrap_or(0),
        store: store_spec,
        read_only: a.read_only,
        export_name: a.export_name.clone(),
        description: format!("storlab {}: {}", a.device, cfg.description),
        record,
        control: a.control.clone(),
        handle_signals: true,
        wake_assist: !a.no_wake_assist,
        realtime: !a.no_realtime,
        floor_probe: a.floor_probe as usize,
        max_connections: a.max_connections as usize,
        max_handshakes: a.max_handshakes as usize,
        handshake_timeout: std::time::Duration::from_secs_f64(a.handshake_timeout),
        idle_timeout: (a.idle_timeout > 0.0)
            .then(|| std::time::Duration::from_secs_f64(a.idle_timeout)),
        max_buffer_per_connection: a.max_buffer_per_connection,
        max_buffer: a.max_buffer,
        memory_over_ram: a.memory_over_ram,
        ..ServeOptions::default()
    };
    let server = storlab_emu::Server::bind(opts, device, ShutdownHandle::new())?;
    // On a terminal, say where it serves and what the floor is; quiet
    // otherwise (the report at exit says it all).
    if std::io::stderr().is_terminal() {
        eprintln!("storlab serve: {} at {}", a.device, server.uris().join(" "));
        eprintln!("  {}", server.memory_note());
        if let Some(f) = server.control().report().transport_floor {
            eprintln!(
                "  transport floor: mean {:.1} µs, p99 {:.1} µs (model latencies well above it are reproduced honestly)",
                f.mean_ns / 1000.0,
                f.p99_ns as f64 / 1000.0
            );
        }
    }
    let report = server.run()?;
    println!("{report}");
    let reads = report.ops.first().map_or(0, |o| o.requests);
    if let Some(note) = unmapped_note(&report.device.counters, reads) {
        eprintln!("{note}");
    }
    Ok(())
}

/// The note `storlab serve` prints at exit when reads hit never-written
/// flash (answered from the mapping table: no media time), as `storlab
/// sim` does (`storlab_sim::run::unmapped_note`); `None` when none did.
fn unmapped_note(counters: &[(String, f64)], reads: u64) -> Option<String> {
    let n: f64 = counters
        .iter()
        .filter(|(k, _)| k == "unmapped_reads" || k.ends_with(".unmapped_reads"))
        .map(|(_, v)| v)
        .sum();
    (n >= 1.0).then(|| {
        format!(
            "storlab: note: {} never-written flash mapping units (of the pages the {reads} reads \
             asked for) were answered from the mapping table without touching the media (a fresh \
             drive's pages), so those reads measure no flash; \
             write the region first or precondition the drive \
             (--set ssd.ftl.precondition='\"full\"', or '\"aged\"' for the garbage-collection \
             steady state; in an array, through raid.member_set)",
            n as u64
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_of_never_written_flash_get_a_note() {
        let c = |n: f64| {
            vec![
                ("gc_runs".to_string(), 3.0),
                ("member0.unmapped_reads".to_string(), n),
            ]
        };
        let note = unmapped_note(&c(12.0), 40).expect("a note");
        assert!(
            note.contains("12 never-written flash mapping units (of the pages the 40 reads"),
            "{note}"
        );
        assert!(note.contains("precondition"), "{note}");
        assert_eq!(unmapped_note(&c(0.0), 40), None);
        assert_eq!(unmapped_note(&[], 40), None);
    }

    #[test]
    fn timeouts_parse_with_off() {
        assert_eq!(parse_seconds("10"), Ok(10.0));
        assert_eq!(parse_seconds("0.5s"), Ok(0.5));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("soon").unwrap_err().contains("soon"));
        assert_eq!(parse_timeout("off"), Ok(0.0));
        assert_eq!(parse_timeout("0"), Ok(0.0));
        assert_eq!(parse_timeout("60"), Ok(60.0));
    }
}
