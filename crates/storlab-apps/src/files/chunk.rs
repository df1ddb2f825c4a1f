//! What the file workloads share: a long transfer cut into requests of
//! at most [`PIECE`] bytes with the program's smaller system calls inside
//! each costed as CPU ([`Chunker`]), and their CPU parameters.

use crate::error::AppError;
use crate::info::Params;
use crate::model::{FileIo, PlanCx, Step};
use storlab_model::host::HostConfig;

/// Largest request a long transfer is issued in, bytes (the page cache's
/// largest read-ahead window, `VM_MAX_READAHEAD`).
pub(super) const PIECE: u64 = 128 << 10;

/// Splits a transfer into requests of at most [`PIECE`] bytes and
/// accounts for the program's own, smaller system calls inside each
/// piece as CPU.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Chunker {
    /// Bytes per system call of the program.
    syscall: u64,
    /// CPU of one read system call the simulation does not issue (entry,
    /// exit, the file system's per-call cost), ns.
    read_ns: u64,
    /// The same for a write, ns.
    write_ns: u64,
}

impl Chunker {
    pub(super) fn new(host: &HostConfig, syscall: u64) -> Self {
        Chunker {
            syscall: syscall.max(1),
            read_ns: host.syscall_entry_ns.read + host.syscall_exit_ns.read + host.xfs_ns.read,
            write_ns: host.syscall_entry_ns.write + host.syscall_exit_ns.write + host.xfs_ns.write,
        }
    }

    /// Push the requests moving `len` bytes of `file` from `offset`.
    pub(super) fn transfer(
        &self,
        cx: &mut PlanCx,
        file: u32,
        offset: u64,
        len: u64,
        write: bool,
        direct: bool,
    ) {
        if len == 0 {
            return;
        }
        let mut at = offset;
        let end = offset + len;
        let mut calls = 0;
        let mut pieces = 0;
        while at < end {
            let n = PIECE.min(end - at);
            let io = [FileIo::read, FileIo::write][usize::from(write)](file, at, n);
            cx.push(Step::Io(io.direct(direct)));
            calls += n.div_ceil(self.syscall);
            pieces += 1;
            at += n;
        }
        let elided = calls.saturating_sub(pieces);
        if elided > 0 {
            let per = if write { self.write_ns } else { self.read_ns };
            cx.push(Step::Cpu(elided * per));
        }
    }
}

/// CPU parameter `name` (in units of `unit_ns`), or `default` when
/// empty, ns.
pub(super) fn cpu_param(
    p: &Params,
    name: &str,
    default: f64,
    unit_ns: f64,
) -> Result<u64, AppError> {
    let v = match p.str(name) {
        "" => default,
        _ => p.f64(name)?,
    };
    if !(0.0..=1e9).contains(&v) {
        return Err(p.bad(name, "must be from 0 to 1,000,000,000"));
    }
    Ok((v * unit_ns).round() as u64)
}
