//! fio's IO engines: which complete IO in the call (sync) and which keep
//! several IOs in flight (async).

/// fio's IO engine when a job names none (on Linux).
pub const DEFAULT_ENGINE: &str = "psync";

/// How an fio IO engine completes IO: the one property of an engine a
/// simulation honours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// fio flags it `FIO_SYNCIO`: each IO completes inside the call that
    /// issues it, so fio caps the queue depth at 1 whatever `iodepth` says.
    Sync,
    /// Keeps up to `iodepth` IOs in flight.
    Async,
}

/// fio's built-in engines with `FIO_SYNCIO` (fio's `engines/*.c`).
const SYNC_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "mmap",
    "splice",
    "net",
    "netsplice",
    "sg",
    "falloc",
    "ftruncate",
    "e4defrag",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "dev-dax",
    "libpmem",
    "http",
    "cpuio",
    "exec",
    "mtd",
    "libhdfs",
    "gfapi",
    "ime_psync",
    "ime_psyncv",
];

/// fio's built-in engines that keep several IOs in flight.
const ASYNC_ENGINES: &[&str] = &[
    "libaio",
    "io_uring",
    "io_uring_cmd",
    "posixaio",
    "solarisaio",
    "windowsaio",
    "null",
    "libzbc",
    "rdma",
    "rados",
    "rbd",
    "gfapi_async",
    "ime_aio",
    "libiscsi",
    "nbd",
    "libcufile",
    "dfs",
    "nfs",
    "xnvme",
    "libblkio",
    "spdk",
    "spdk_bdev",
];

/// The kind of the engine `name` (as `ioengine=` takes it), or `None` for
/// a name fio does not know. An external engine (`external:path`, or a path
/// to a shared object, as fio loads them) counts as asynchronous: its
/// flags are not known before it is loaded, and `iodepth` is honoured.
pub fn engine_kind(name: &str) -> Option<EngineKind> {
    if SYNC_ENGINES.contains(&name) {
        Some(EngineKind::Sync)
    } else if ASYNC_ENGINES.contains(&name) || name.starts_with("external:") || name.contains('/') {
        Some(EngineKind::Async)
    } else {
        None
    }
}

/// The engine names [`engine_kind`] knows, for messages.
pub fn engine_names() -> String {
    let mut all: Vec<&str> = SYNC_ENGINES.iter().chain(ASYNC_ENGINES).copied().collect();
    all.sort_unstable();
    all.join(", ")
}
