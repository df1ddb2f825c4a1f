//! The emulator's error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why the server could not start or stopped with an error. Problems with
/// one client never become an `EmuError`: they close that connection.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    /// An option is inconsistent or out of range.
    #[error("invalid serve option: {0}")]
    Config(String),
    /// A non-loopback address without the explicit permission flag.
    #[error("refusing to listen on non-loopback address {0}: the export has no authentication; pass the allow-remote option to do it anyway")]
    NonLoopback(SocketAddr),
    /// A live server already listens on this unix socket.
    #[error("unix socket {0} is in use by a running server")]
    SocketInUse(PathBuf),
    /// An IO error, with what was being done (the OS error is the
    /// `source()`, which error reporters print after it).
    #[error("{context}")]
    Io {
        /// What failed (with the path or address).
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl EmuError {
    /// Wrap an IO error with its context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EmuError::Io {
            context: context.into(),
            source,
        }
    }
}
