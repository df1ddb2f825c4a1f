//! Serve a fixed-latency device over NBD: the emulator without the main
//! binary, for trying clients by hand and for the benchmark.
//!
//! ```text
//! cargo run --release -p storlab-emu --example serve -- --socket /tmp/dev.sock --latency-ns 20000 --size 1G
//! ```

use std::path::PathBuf;

use clap::Parser;
use storlab_emu::{serve, BlockSizes, RecordSpec, ServeOptions, ShutdownHandle, StoreSpec};
use storlab_model::devices::fixed::FixedLatency;

/// Serve a FixedLatency device (0 ns = the transport floor).
#[derive(Parser)]
struct Args {
    /// Unix socket to listen on.
    #[arg(long)]
    socket: Option<PathBuf>,
    /// TCP address to listen on.
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// Device latency per request, ns.
    #[arg(long, default_value_t = 0)]
    latency_ns: u64,
    /// Size with an optional K/M/G/T suffix (powers of 1024).
    #[arg(long, default_value = "1G")]
    size: String,
    /// memory or file:PATH.
    #[arg(long, default_value = "memory")]
    store: StoreSpec,
    /// Refuse writes.
    #[arg(long)]
    read_only: bool,
    /// Minimum block size advertised (1 or 512...).
    #[arg(long, default_value_t = 1)]
    min_block: u32,
    /// Control socket (powercut, stats, reset-stats, shutdown).
    #[arg(long)]
    control: Option<PathBuf>,
    /// Record every request to this trace file.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Trace format: fio2, fio3, blkparse, blktrace, msr, disksim.
    #[arg(long, default_value = "blkparse")]
    record_format: storlab_trace::Format,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Keep the reactor at normal priority (no SCHED_FIFO).
    #[arg(long)]
    no_realtime: bool,
    /// Spin this long after a connection's last reply (ns).
    #[arg(long)]
    idle_poll_ns: Option<u64>,
    /// Smallest spin window before a deadline (ns).
    #[arg(long)]
    spin_threshold_ns: Option<u64>,
    /// No wake assist (idle CPUs may halt while replies are due).
    #[arg(long)]
    no_wake_assist: bool,
}

fn parse_size(s: &str) -> Result<u64, String> {
    parse_size::Config::new()
        .with_binary()
        .parse_size(s.trim())
        .map_err(|e| format!("bad size {s:?}: {e}"))
}

fn main() {
    let a = Args::parse();
    let size = match parse_size(&a.size) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let opts = ServeOptions {
        socket: a.socket,
        listen: a.listen,
        size,
        store: a.store,
        read_only: a.read_only,
        block: BlockSizes {
            minimum: a.min_block,
            ..BlockSizes::default()
        },
        control: a.control,
        record: a.record.map(|p| RecordSpec::new(p, a.record_format)),
        handle_signals: true,
        realtime: !a.no_realtime,
        idle_poll_ns: a
            .idle_poll_ns
            .unwrap_or(ServeOptions::default().idle_poll_ns),
        spin_threshold_ns: a
            .spin_threshold_ns
            .unwrap_or(ServeOptions::default().spin_threshold_ns),
        wake_assist: !a.no_wake_assist,
        ..ServeOptions::default()
    };
    let device = Box::new(FixedLatency::new(a.latency_ns, size));
    match serve(opts, device, ShutdownHandle::new()) {
        Ok(r) if a.json => println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default()),
        Ok(r) => eprint!("{r}"),
        Err(e) => {
            // With the OS error behind it (the error's source).
            eprintln!("error: {:#}", anyhow::Error::from(e));
            std::process::exit(1);
        }
    }
}
