//! NBD wire constants and encoders (the protocol as the NBD project's
//! `doc/proto.md` defines it). All integers are big-endian on the wire.

/// `NBDMAGIC`, the first 8 bytes a server sends.
pub const INIT_PASSWD: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle greeting magic and the magic of every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of every option reply.
pub const REPLY_MAGIC_OPT: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Magic of a structured reply chunk.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flag: fixed newstyle supported.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag: the 124 zero bytes after `NBD_OPT_EXPORT_NAME` may be
/// omitted.
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flag: fixed newstyle.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag: no zeroes.
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Transmission flag: always set.
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
/// Transmission flag: the export is read-only.
pub const FLAG_READ_ONLY: u16 = 1 << 1;
/// Transmission flag: `NBD_CMD_FLUSH` supported.
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: `NBD_CMD_FLAG_FUA` supported.
pub const FLAG_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: the medium is rotational.
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
/// Transmission flag: `NBD_CMD_TRIM` supported.
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` supported.
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Transmission flag: `NBD_CMD_FLAG_DF` supported on reads.
pub const FLAG_SEND_DF: u16 = 1 << 7;
/// Transmission flag: flush and FUA are visible across connections.
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;
/// Transmission flag: `NBD_CMD_FLAG_FAST_ZERO` supported.
pub const FLAG_SEND_FAST_ZERO: u16 = 1 << 11;

/// Option: choose an export and enter transmission (no error possible).
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option: abort the negotiation.
pub const OPT_ABORT: u32 = 2;
/// Option: list exports.
pub const OPT_LIST: u32 = 3;
/// Option: start TLS.
pub const OPT_STARTTLS: u32 = 5;
/// Option: describe an export.
pub const OPT_INFO: u32 = 6;
/// Option: describe an export and enter transmission.
pub const OPT_GO: u32 = 7;
/// Option: use structured replies.
pub const OPT_STRUCTURED_REPLY: u32 = 8;
/// Option: list metadata contexts.
pub const OPT_LIST_META_CONTEXT: u32 = 9;
/// Option: select metadata contexts.
pub const OPT_SET_META_CONTEXT: u32 = 10;

/// Option reply: done.
pub const REP_ACK: u32 = 1;
/// Option reply: one export of a list.
pub const REP_SERVER: u32 = 2;
/// Option reply: one piece of export information.
pub const REP_INFO: u32 = 3;
/// Option reply: one metadata context (id and name).
pub const REP_META_CONTEXT: u32 = 4;
/// Option reply error: option unknown.
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
/// Option reply error: forbidden by policy.
pub const REP_ERR_POLICY: u32 = 0x8000_0002;
/// Option reply error: malformed option.
pub const REP_ERR_INVALID: u32 = 0x8000_0003;
/// Option reply error: no such export.
pub const REP_ERR_UNKNOWN: u32 = 0x8000_0006;
/// Option reply error: the server is shutting down.
pub const REP_ERR_SHUTDOWN: u32 = 0x8000_0007;
/// Option reply error: the client must ask for block sizes.
pub const REP_ERR_BLOCK_SIZE_REQD: u32 = 0x8000_0008;
/// Option reply error: request too big.
pub const REP_ERR_TOO_BIG: u32 = 0x8000_0009;

/// Information type: size and transmission flags.
pub const INFO_EXPORT: u16 = 0;
/// Information type: export name.
pub const INFO_NAME: u16 = 1;
/// Information type: description.
pub const INFO_DESCRIPTION: u16 = 2;
/// Information type: block size constraints.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Command: read.
pub const CMD_READ: u16 = 0;
/// Command: write.
pub const CMD_WRITE: u16 = 1;
/// Command: disconnect.
pub const CMD_DISC: u16 = 2;
/// Command: flush.
pub const CMD_FLUSH: u16 = 3;
/// Command: trim.
pub const CMD_TRIM: u16 = 4;
/// Command: write zeroes.
pub const CMD_WRITE_ZEROES: u16 = 6;
/// Command: report the status of a range in the selected metadata context.
pub const CMD_BLOCK_STATUS: u16 = 7;

/// Command flag: force unit access.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
/// Command flag: write zeroes must not punch holes.
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
/// Command flag: do not fragment a structured read reply.
pub const CMD_FLAG_DF: u16 = 1 << 2;
/// Command flag: block status may answer with one extent only.
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
/// Command flag: fail write zeroes unless it is fast.
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

/// Structured reply flag: last chunk.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
/// Structured reply type: no payload.
pub const REPLY_TYPE_NONE: u16 = 0;
/// Structured reply type: data at an offset.
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// Structured reply type: an error.
pub const REPLY_TYPE_ERROR: u16 = 0x8001;
/// Structured reply type: extents of one metadata context.
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;

/// The one metadata context defined by the protocol: allocation.
pub const META_BASE_ALLOCATION: &str = "base:allocation";
/// The id this server gives `base:allocation` (any nonzero value would do).
pub const META_BASE_ALLOCATION_ID: u32 = 1;
/// `base:allocation` extent flag: not allocated on the server.
pub const STATE_HOLE: u32 = 1 << 0;
/// `base:allocation` extent flag: reads as zeros.
pub const STATE_ZERO: u32 = 1 << 1;

/// Error: operation not permitted.
pub const EPERM: u32 = 1;
/// Error: input/output error.
pub const EIO: u32 = 5;
/// Error: cannot allocate memory.
pub const ENOMEM: u32 = 12;
/// Error: invalid argument.
pub const EINVAL: u32 = 22;
/// Error: no space left on device.
pub const ENOSPC: u32 = 28;
/// Error: value too large.
pub const EOVERFLOW: u32 = 75;
/// Error: the operation is not supported.
pub const ENOTSUP: u32 = 95;
/// Error: the server is shutting down.
pub const ESHUTDOWN: u32 = 108;

/// Length of a request header.
pub const REQUEST_LEN: usize = 28;
/// Length of a simple reply header.
pub const SIMPLE_REPLY_LEN: usize = 16;
/// Length of a structured reply chunk header.
pub const STRUCTURED_REPLY_LEN: usize = 20;
/// Header bytes before the data of a structured `OFFSET_DATA` read reply.
pub const STRUCTURED_READ_PREFIX: usize = STRUCTURED_REPLY_LEN + 8;

/// Append an option reply.
pub fn put_option_reply(out: &mut Vec<u8>, option: u32, reply: u32, data: &[u8]) {
    out.extend_from_slice(&REPLY_MAGIC_OPT.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
}

/// Write a simple reply header into `buf[..16]`.
pub fn write_simple_header(buf: &mut [u8], error: u32, handle: u64) {
    buf[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&error.to_be_bytes());
    buf[8..16].copy_from_slice(&handle.to_be_bytes());
}

/// Write a structured chunk header into `buf[..20]`.
pub fn write_structured_header(buf: &mut [u8], flags: u16, typ: u16, handle: u64, len: u32) {
    buf[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    buf[4..6].copy_from_slice(&flags.to_be_bytes());
    buf[6..8].copy_from_slice(&typ.to_be_bytes());
    buf[8..16].copy_from_slice(&handle.to_be_bytes());
    buf[16..20].copy_from_slice(&len.to_be_bytes());
}

/// A complete simple reply without data.
pub fn simple_reply(error: u32, handle: u64) -> Vec<u8> {
    let mut v = vec![0u8; SIMPLE_REPLY_LEN];
    write_simple_header(&mut v, error, handle);
    v
}

/// A complete structured error reply (`NBD_REPLY_TYPE_ERROR`, final chunk)
/// with a message for humans.
pub fn structured_error(error: u32, handle: u64, message: &str) -> Vec<u8> {
    let msg = &message.as_bytes()[..message.len().min(4096)];
    let payload = 4 + 2 + msg.len();
    let mut v = vec![0u8; STRUCTURED_REPLY_LEN];
    write_structured_header(
        &mut v,
        REPLY_FLAG_DONE,
        REPLY_TYPE_ERROR,
        handle,
        payload as u32,
    );
    v.extend_from_slice(&error.to_be_bytes());
    v.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    v.extend_from_slice(msg);
    v
}

/// A complete `NBD_REPLY_TYPE_BLOCK_STATUS` reply (final chunk) for
/// context `context`: `extents` are (length, flags) in order from the
/// request's offset.
pub fn block_status_reply(handle: u64, context: u32, extents: &[(u32, u32)]) -> Vec<u8> {
    let payload = 4 + 8 * extents.len();
    let mut v = vec![0u8; STRUCTURED_REPLY_LEN];
    write_structured_header(
        &mut v,
        REPLY_FLAG_DONE,
        REPLY_TYPE_BLOCK_STATUS,
        handle,
        payload as u32,
    );
    v.reserve(payload);
    v.extend_from_slice(&context.to_be_bytes());
    for (len, flags) in extents {
        v.extend_from_slice(&len.to_be_bytes());
        v.extend_from_slice(&flags.to_be_bytes());
    }
    v
}

/// Name of an errno value as NBD knows it.
pub fn errno_name(e: u32) -> &'static str {
    match e {
        0 => "ok",
        EPERM => "EPERM",
        EIO => "EIO",
        ENOMEM => "ENOMEM",
        EINVAL => "EINVAL",
        ENOSPC => "ENOSPC",
        EOVERFLOW => "EOVERFLOW",
        ENOTSUP => "ENOTSUP",
        ESHUTDOWN => "ESHUTDOWN",
        _ => "error",
    }
}
