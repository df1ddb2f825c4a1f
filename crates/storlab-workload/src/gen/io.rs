//! What a thread yields: one IO ([`IoDesc`]) and what it does ([`IoOp`]).

/// What an IO does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoOp {
    /// Read `len` bytes at `offset`.
    Read,
    /// Write `len` bytes at `offset`.
    Write,
    /// Trim (discard) `len` bytes at `offset`.
    Trim,
    /// fsync: make all written data and metadata durable.
    Fsync,
    /// fdatasync: make all written data durable.
    Fdatasync,
}

/// One IO of a thread: byte offset on the device and length (both 0 for the
/// sync ops).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IoDesc {
    /// What to do.
    pub op: IoOp,
    /// Byte offset from the start of the device.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
}
