//! The NBD server: listeners, handshakes, the reactor that serves every
//! connection, power cuts, shutdown.
//!
//! A connection's handshake runs on a thread of its own (blocking reads
//! with a timeout; nothing timed happens there). Once in transmission
//! phase the socket goes to the reactor ([`crate::reactor`]): one thread
//! that reads requests from every connection, checks them at the boundary
//! ([`crate::request::RequestStream`]), applies their data to the store (writes land at
//! arrival; a read's data is read as its reply is sent), submits them to the model with the
//! time their bytes were read ([`ModelDriver::arrive`](crate::driver::ModelDriver::arrive)) and sends each
//! reply when its deadline comes, sleeping or spinning in between. A
//! zero-latency completion goes out in the same pass as its request, and
//! replies due together for one connection go out in one `send`.
//! A client that does not read gets its replies queued (the reactor never
//! blocks on a socket), so no client can stall another.
//!
//! An emulated power cut takes the gate (a lock the reactor holds from a
//! request's data access to its submission, and while it commits
//! durability and builds replies), rolls the store back to the durable
//! image and bumps the power epoch: requests in flight at the cut get
//! `EIO`.

mod bind;
mod connection;
mod control;
pub(crate) mod handle;
mod listen;
mod record;
mod run;
mod signals;

pub use crate::options::{RecordSpec, ServeOptions, ShutdownHandle};
pub use bind::Server;
pub use control::ServerControl;
pub use handle::ServerHandle;

use storlab_model::Device;

use crate::error::EmuError;
use crate::report::ServeReport;

impl Server {
    /// Check options, open the store and bind the listeners. Clients can
    /// connect as soon as this returns (they are served once `run` starts).
    pub fn bind(
        opts: ServeOptions,
        device: Box<dyn Device>,
        shutdown: ShutdownHandle,
    ) -> Result<Server, EmuError> {
        Server::bind_with(opts, device, shutdown, crate::probe::transport_floor)
    }
}

/// Serve `device` over NBD until shut down; returns the report.
pub fn serve(
    opts: ServeOptions,
    device: Box<dyn Device>,
    shutdown: ShutdownHandle,
) -> Result<ServeReport, EmuError> {
    Server::bind(opts, device, shutdown)?.run()
}

/// Bind and start serving on a new thread; stop with [`ServerHandle::stop`].
pub fn spawn(opts: ServeOptions, device: Box<dyn Device>) -> Result<ServerHandle, EmuError> {
    handle::spawn_with(opts, device, crate::probe::transport_floor)
}
