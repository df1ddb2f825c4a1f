//! Report writers: fio's JSON layout and a terminal summary like fio's.
//!
//! # JSON
//!
//! [`write_json`] writes what `fio --output-format=json` (fio 3.33) writes,
//! key for key and in the same order, with fio's own text layout (two-space
//! indentation, `"key" : value`, doubles printed like C's `%f` with six
//! decimals), so that tools written for fio read it unchanged. Differences,
//! all deliberate:
//!
//! * `"fio version"` is `storlab-<version>`.
//! * `"timestamp"`, `"timestamp_ms"` are 0 and `"time"` is the C `ctime` of
//!   0 (`Thu Jan  1 00:00:00 1970`): the simulator's output is byte-for-byte
//!   deterministic, so it cannot contain the wall-clock time.
//! * `"eta"` is 0 and `"elapsed"` is the simulated run time in whole seconds
//!   (rounded up); `"error"` is 0 but for a job past its `max_latency`
//!   (110, ETIMEDOUT, as fio).
//! * `bw_bytes`, `bw` and `iops` divide by the runtime in nanoseconds, not
//!   by fio's whole milliseconds (so short simulated runs stay accurate);
//!   `"runtime"` is still milliseconds, rounded, and at least 1 when any
//!   time passed. The run status group figures do the same.
//! * Percentiles come from HDR histograms with 3 significant digits (error
//!   at most 0.1 %, clamped to the exact min and max) instead of fio's
//!   log-linear buckets (error up to about 1.6 %); min, max, mean and
//!   stddev are exact.
//! * Sync entries report their completion latency as `lat_ns`, as fio does.
//! * With `unified_rw_reporting=both`, the job's `mixed` entry holds the
//!   sums of read, write and trim (fio 3.33 prints zeros there, though its
//!   group line has the sums); with `mixed` it stands alone, as in fio.
//! * Strings escape control characters too (fio escapes only `"` and `\`).
//! * Each job ends with a `"storlab"` object (see below), and the top level
//!   always ends with `"disk_util"` (empty: there is no real disk).
//!
//! # The `storlab` object
//!
//! [`JobStats::storlab`] is written as the job's `"storlab"` object as it
//! is (`null` becomes `{}`); numbers in it are printed by `serde_json`
//! (shortest exact form). The agreed shape, every member optional:
//!
//! ```json
//! "storlab" : {
//!   "device" : { ... the resolved configuration, free form ... },
//!   "breakdown_ns" : { "read" : { "syscall" : 512.5, "media" : 9000.0, ... },
//!                      "write" : { ... }, "trim" : { ... }, "sync" : { ... } },
//!   "utilisation" : [ { "resource" : "link.read", "busy" : 0.42 } ],
//!   "host_software" : { "cpu_ns_per_io" : { "read" : 17470.0, "write" : null },
//!                       "instructions_per_io" : { "read" : 20780.5, "write" : null },
//!                       "ghz" : 2.26, "cpi" : 1.9,
//!                       "device_requests" : { "read" : 4096, "write" : 0, "flush" : 0,
//!                                             "trim" : 0, "read_bytes" : 16777216,
//!                                             "write_bytes" : 0 } },
//!   "power" : [ { "component" : "controller", "avg_w" : 1.25, "energy_j" : 0.5 } ],
//!   "wear" : { "unit" : "line writes", "units" : 1024, "max" : 17, "mean" : 3.5 },
//!   "counters" : { "gc_runs" : 3 }
//! }
//! ```
//!
//! `breakdown_ns` is the mean ns per request by component, per direction
//! that saw requests; fill it with [`JobStats::breakdown_ns`].
//! `utilisation`, `power` and `wear` are storlab-model's `DeviceReport`
//! fields serialised as they are. `host_software` is the host stack's
//! mean core time and instructions per finished request of each direction
//! over the whole run (`null` for a direction with none, or instructions
//! when the preset gives no `host.ghz` and `host.cpi`), and
//! `device_requests` the requests it finished and their bytes: what the
//! device was asked for below the file-system layer (page writeback,
//! journal writes, page-cache misses), as a block trace would count it.
//!
//! # Terminal
//!
//! [`write_terminal`] prints fio's normal output for each job (same lines,
//! units, auto-scaling and rounding as fio 3.33's `show_thread_status`,
//! except the header ends at `pid=0` with no date), the run status group
//! summaries, then a storlab section per job: the mean latency breakdown
//! table (µs and % of the total per direction, from the job's own
//! statistics) and the power and wear lines found in the `storlab` value.
//!
//! # Grouping
//!
//! With `group_reporting`, pass [`crate::stats::group`]`(jobs)` to the
//! writers. The run status groups are always formed by `group_id`.

mod common;
mod json;
mod section;
mod terminal;

pub use common::{ReportOptions, FIO_PERCENTILES, FIXED_TIME};
pub use json::{json_string, write_json};
pub use terminal::{num2str, terminal_string, write_terminal};
