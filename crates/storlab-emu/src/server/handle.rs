//! A server running on its own thread ([`ServerHandle`]).

use std::net::SocketAddr;
use std::thread::{self, JoinHandle};

use storlab_model::Device;

use crate::error::EmuError;
use crate::options::{ServeOptions, ShutdownHandle};
use crate::report::ServeReport;

use super::bind::{FloorProbe, Server};
use super::control::ServerControl;

/// A server running on its own thread (for tests and benchmarks).
pub struct ServerHandle {
    control: ServerControl,
    uris: Vec<String>,
    tcp_addr: Option<SocketAddr>,
    thread: Option<JoinHandle<Result<ServeReport, EmuError>>>,
}

/// [`spawn`](super::spawn), the transport floor measured (when
/// `opts.floor_probe` asks) by `probe`.
pub(crate) fn spawn_with(
    opts: ServeOptions,
    device: Box<dyn Device>,
    probe: FloorProbe,
) -> Result<ServerHandle, EmuError> {
    let server = Server::bind_with(opts, device, ShutdownHandle::new(), probe)?;
    let control = server.control();
    let uris = server.uris().to_vec();
    let tcp_addr = server.tcp_addr();
    let thread = thread::Builder::new()
        .name("nbd-server".into())
        .spawn(move || server.run())
        .map_err(|e| EmuError::io("spawning the server thread", e))?;
    Ok(ServerHandle {
        control,
        uris,
        tcp_addr,
        thread: Some(thread),
    })
}

impl ServerHandle {
    /// The first URI (the unix socket's when there is one).
    pub fn uri(&self) -> &str {
        self.uris.first().map(String::as_str).unwrap_or("")
    }
    /// All URIs.
    pub fn uris(&self) -> &[String] {
        &self.uris
    }
    /// The bound TCP address, if any.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp_addr
    }
    /// Control (power cut, report).
    pub fn control(&self) -> &ServerControl {
        &self.control
    }
    /// Stop the server and return its final report.
    pub fn stop(mut self) -> Result<ServeReport, EmuError> {
        self.control.shutdown();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            _ => Err(EmuError::Config("server thread panicked".into())),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.control.shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
