//! storlab's emulator: an NBD server whose replies are timed by the
//! storlab timing model, over a real data store.
//!
//! A real client (fio, qemu, the kernel through nbdfuse and a loop device)
//! reads and writes real data; the model ([`storlab_model::Device`]) says
//! when each request completes; the server holds the reply until then,
//! spinning on the TSC for the last stretch. The same [`driver`] code runs
//! with a virtual clock ([`replay_virtual`]) so a test can check that the
//! emulator and the simulator agree.
//!
//! Entry points: [`serve`] (blocking, for `storlab serve`), [`spawn`] (on a
//! thread, for tests), [`replay_virtual`] (conformance).
//!
//! Modules, from the wire down: [`handshake`] and [`request`] (pure
//! protocol state machines), [`server`] (listeners, handshakes,
//! shutdown), [`reactor`] (the thread that serves connections and keeps
//! time),
//! [`driver`] (the model in time order), [`durability`] (volatile caches
//! and power cuts), [`store`] (bytes), [`clock`] (TSC time), [`probe`]
//! (the transport floor, measured before serving); `assist` keeps
//! idle CPUs polling, not halted, while replies are due (see
//! [`ServeOptions::wake_assist`]).
#![deny(missing_docs)]

mod assist;
pub mod clock;
mod closedrec;
pub mod driver;
pub mod durability;
pub mod error;
pub mod handshake;
pub mod hoststall;
mod options;
mod outq;
mod pagemem;
pub mod probe;
pub mod proto;
pub mod reactor;
pub mod report;
pub mod request;
pub mod server;
mod shared;
mod sock;
pub mod store;

pub use clock::{Clock, VirtualClock, WallClock};
pub use driver::{replay_virtual, ModelDriver, Released, VirtualClockDriver};
pub use error::EmuError;
pub use handshake::BlockSizes;
pub use report::ServeReport;
pub use server::{
    serve, spawn, RecordSpec, ServeOptions, Server, ServerControl, ServerHandle, ShutdownHandle,
};
pub use store::StoreSpec;
