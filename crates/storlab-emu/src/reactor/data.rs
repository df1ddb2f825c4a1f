//! A request's data access at arrival (the store read or written, block
//! status scanned), large requests in pieces with due replies released
//! between, and the request as the model times it.

use std::io;

use storlab_model::{Device, Op};

use crate::driver::ModelDriver;
use crate::durability::WriteSeq;
use crate::proto::*;
use crate::request::{AllocationExtents, Command};
use crate::shared::{Job, JobKind, Shared};

use super::conn::Conn;
use super::state::Reactor;

/// Large writes are applied to the store this much at a time, with the
/// replies that fell due sent between pieces: applying 1 MiB takes 100 µs
/// (1 ms on fresh pages), which every other connection's replies would
/// otherwise wait out.
const APPLY_CHUNK: usize = 64 << 10;
/// Block status scans the store this much of the range at a time (16384
/// pages of a memory store: tens of µs), releasing due replies between.
const STATUS_SLICE: u64 = 64 << 20;

impl Reactor {
    /// A block status reply's extents, the store scanned `STATUS_SLICE`
    /// at a time with due replies released between slices (a memory
    /// store walks every allocated page of a slice: a few GiB of data
    /// would otherwise hold every other reply for milliseconds).
    pub(super) fn allocation(
        &mut self,
        core: &mut ModelDriver<Job>,
        offset: u64,
        len: u32,
        req_one: bool,
    ) -> io::Result<Vec<(u32, u32)>> {
        let shared = self.shared.clone();
        let mut a = AllocationExtents::new(offset, len, req_one);
        while let Some((pos, n)) = a.next_slice(STATUS_SLICE) {
            let data = shared.data.store().data_extents(pos, n)?;
            a.add(n, &data);
            self.release_between(core);
        }
        Ok(a.finish())
    }

    /// Apply a large write `APPLY_CHUNK` at a time, releasing due
    /// replies between pieces: all but its last piece (`prepare` applies
    /// the rest, and learns the bytes applied and the first piece's
    /// journal sequence). A read's data is not touched here: it is read
    /// as its reply is sent (`OutQueue`). `Err` when the store failed:
    /// the request gets an error reply (a write part applied, as a failed
    /// write may leave a device).
    pub(super) fn copy_leading_pieces<'a>(
        &mut self,
        core: &mut ModelDriver<Job>,
        command: Command,
        payload: &'a [u8],
    ) -> Result<Lead<'a>, ()> {
        let mut lead = Lead {
            payload,
            applied: 0,
            first: None,
        };
        let shared = self.shared.clone();
        let Command::Write { offset, fua, .. } = command else {
            return Ok(lead);
        };
        while payload.len() - lead.applied > APPLY_CHUNK {
            let piece = &payload[lead.applied..lead.applied + APPLY_CHUNK];
            let dev = core.device();
            let seq = shared
                .data
                .write_part(
                    piece,
                    offset + lead.applied as u64,
                    fua,
                    lead.first,
                    &|o, l| dev.volatile_holds(o, l),
                )
                .map_err(|_| ())?;
            if lead.first.is_none() {
                lead.first = Some(seq);
            }
            lead.applied += APPLY_CHUNK;
            self.release_between(core);
        }
        Ok(lead)
    }
}

/// Time a command as the model sees it: `(op, offset, len, fua)`.
pub(super) fn timing_of(command: Command) -> (Op, u64, u64, bool) {
    match command {
        Command::Read { offset, len } => (Op::Read, offset, len as u64, false),
        Command::Write { offset, len, fua } => (Op::Write, offset, len as u64, fua),
        Command::Trim { offset, len, fua } => (Op::Trim, offset, len as u64, fua),
        // Zeroing moves no data over the link: timed as a trim, unless the
        // client forbids holes, when the device really writes.
        Command::WriteZeroes {
            offset,
            len,
            fua,
            no_hole,
        } => (
            if no_hole { Op::Write } else { Op::Trim },
            offset,
            len as u64,
            fua,
        ),
        Command::Flush | Command::Disconnect => (Op::Flush, 0, 0, false),
        // Never timed: answered at arrival (`Reactor::process_input`); a
        // read of nothing if it ever were.
        Command::BlockStatus { offset, .. } => {
            debug_assert!(false, "block status reached the model");
            (Op::Read, offset, 0, false)
        }
    }
}

/// What `Reactor::copy_leading_pieces` did of a write's `payload`: the
/// first `applied` bytes (the first piece's journal sequence `first`).
pub(super) struct Lead<'a> {
    payload: &'a [u8],
    applied: usize,
    first: Option<WriteSeq>,
}

/// Bytes before the data in a read's reply.
pub(super) fn reply_header_len(structured: bool) -> usize {
    if structured {
        STRUCTURED_READ_PREFIX
    } else {
        SIMPLE_REPLY_LEN
    }
}

/// The bytes of a read's reply of `len` bytes of data (what the budget
/// reserves for it while it is in flight).
pub(super) fn read_reply_len(structured: bool, len: u64) -> u64 {
    reply_header_len(structured) as u64 + len
}

/// Carry out a valid request's data access at arrival (a large write's
/// leading pieces are already applied, `lead`; a read's comes when its
/// reply is sent); `None` (with an error reply queued) when the store
/// failed.
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare(
    shared: &Shared,
    dev: &dyn Device,
    c: &mut Conn,
    slot: usize,
    handle: u64,
    command: Command,
    lead: Lead<'_>,
    epoch: u64,
) -> Option<Job> {
    let data = &shared.data;
    let holds = |o, l| dev.volatile_holds(o, l);
    let kind = match command {
        // Read when its reply is sent: nothing is done for a client that
        // leaves first, and nothing held for one that does not read.
        Command::Read { .. } => Ok(JobKind::Read),
        Command::Write { offset, fua, .. } => data
            .write_part(
                &lead.payload[lead.applied..],
                offset + lead.applied as u64,
                fua,
                lead.first,
                &holds,
            )
            .map(|seq| JobKind::Write {
                first: lead.first.unwrap_or(seq),
                seq,
                fua,
            }),
        Command::Trim { offset, len, fua }
        | Command::WriteZeroes {
            offset, len, fua, ..
        } => data
            .zero(offset, len as u64, fua, &holds)
            .map(|seq| JobKind::Write {
                first: seq,
                seq,
                fua,
            }),
        _ => Ok(JobKind::Flush {
            upto: data.flush_arrived(),
        }),
    };
    let (_, offset, len, fua) = timing_of(command);
    // The data is applied: a sync started from now on covers it.
    let needs_sync = matches!(command, Command::Flush) || fua;
    let sync = if needs_sync && kind.is_ok() {
        data.sync_ticket()
    } else {
        0
    };
    match kind {
        Ok(kind) => Some(Job {
            sync,
            reserved: match kind {
                JobKind::Read => read_reply_len(c.structured, len),
                _ => 0,
            },
            slot,
            generation: c.generation,
            handle,
            kind,
            epoch,
            offset,
            len,
        }),
        Err(_) => {
            c.store_error(shared, handle);
            None
        }
    }
}
