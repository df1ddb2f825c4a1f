//! Dirty-page tracking for SPF: which pages of a region were written since
//! their last SPF sync.
//!
//! Two mechanisms, neither using soft-dirty bits:
//!
//! * `uffd-wp-async` ([`uffd`]): the region is registered with a
//!   userfaultfd in write-protect mode with `UFFD_FEATURE_WP_ASYNC`, so the
//!   kernel itself resolves a write to a protected page by unprotecting it;
//!   `PAGEMAP_SCAN` on `/proc/self/pagemap` then returns the written pages
//!   of a range and write-protects them again in one ioctl. No signal, no
//!   user-space fault handling. Linux 6.7+.
//! * `mprotect` ([`mprotect`]): the region is mapped read-only; the first
//!   write to a page raises SIGSEGV, a process-wide handler marks the page
//!   in the region's bitmap and makes it writable; a sync takes the marks
//!   and protects the pages again. Works everywhere, costs a signal per
//!   first write to a page, and makes kernel writes into the region (e.g.
//!   `read(2)` into it) fail with `EFAULT` instead of faulting.

pub(crate) mod mprotect;
mod runs;
pub mod uffd;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::PmemError;

/// The dirty-tracking mechanism a region uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum TrackingKind {
    /// userfaultfd write protection in asynchronous mode plus PAGEMAP_SCAN.
    #[serde(rename = "uffd-wp-async")]
    UffdWpAsync,
    /// mprotect plus a SIGSEGV handler.
    #[serde(rename = "mprotect")]
    Mprotect,
    /// None: only `M_SYNC = default` is possible.
    #[serde(rename = "off")]
    Off,
}

impl TrackingKind {
    /// The mechanism's name as printed in reports.
    pub fn name(self) -> &'static str {
        match self {
            TrackingKind::UffdWpAsync => "uffd-wp-async",
            TrackingKind::Mprotect => "mprotect",
            TrackingKind::Off => "off",
        }
    }
}

impl fmt::Display for TrackingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which dirty-tracking mechanism to set up when mapping a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackingChoice {
    /// `uffd-wp-async` if the kernel and permissions allow, else `mprotect`
    /// (the reason is kept in [`crate::Region::tracking_note`]).
    #[default]
    Auto,
    /// `uffd-wp-async` or an error.
    Uffd,
    /// The `mprotect` fallback, even where userfaultfd works.
    Mprotect,
    /// No tracking (SPF is refused).
    Off,
}

impl TrackingChoice {
    /// The choice's name as used in flags.
    pub fn name(self) -> &'static str {
        match self {
            TrackingChoice::Auto => "auto",
            TrackingChoice::Uffd => "uffd",
            TrackingChoice::Mprotect => "mprotect",
            TrackingChoice::Off => "off",
        }
    }
}

impl FromStr for TrackingChoice {
    type Err = PmemError;
    fn from_str(s: &str) -> Result<Self, PmemError> {
        match s {
            "auto" => Ok(TrackingChoice::Auto),
            "uffd" | "uffd-wp-async" => Ok(TrackingChoice::Uffd),
            "mprotect" => Ok(TrackingChoice::Mprotect),
            "off" => Ok(TrackingChoice::Off),
            _ => Err(PmemError::InvalidArgument(format!(
                "unknown dirty tracking {s:?}; expected auto, uffd, mprotect or off"
            ))),
        }
    }
}

/// A region's tracker. Page indices are relative to the region start.
pub(crate) enum Tracker {
    Uffd(uffd::UffdTracker),
    Mprotect(mprotect::MprotectTracker),
    Off,
}

impl Tracker {
    /// Set up tracking on `[base, base+len)`, which must be mapped
    /// read-write, populated, and not yet shared with other threads.
    /// Returns the tracker and, when `Auto` fell back, why.
    pub(crate) fn setup(
        choice: TrackingChoice,
        base: usize,
        len: usize,
        page: usize,
    ) -> Result<(Tracker, Option<String>), PmemError> {
        match choice {
            TrackingChoice::Off => Ok((Tracker::Off, None)),
            TrackingChoice::Uffd => Ok((
                Tracker::Uffd(uffd::UffdTracker::new(base, len, page)?),
                None,
            )),
            TrackingChoice::Mprotect => Ok((
                Tracker::Mprotect(mprotect::MprotectTracker::new(base, len, page)?),
                None,
            )),
            TrackingChoice::Auto => match uffd::UffdTracker::new(base, len, page) {
                Ok(t) => Ok((Tracker::Uffd(t), None)),
                Err(e) => {
                    let t = mprotect::MprotectTracker::new(base, len, page)?;
                    Ok((
                        Tracker::Mprotect(t),
                        Some(format!("uffd-wp-async unavailable, using mprotect: {e}")),
                    ))
                }
            },
        }
    }

    pub(crate) fn kind(&self) -> TrackingKind {
        match self {
            Tracker::Uffd(_) => TrackingKind::UffdWpAsync,
            Tracker::Mprotect(_) => TrackingKind::Mprotect,
            Tracker::Off => TrackingKind::Off,
        }
    }

    /// Append to `out` the runs `[a, b)` of pages in `[first, end)` written
    /// since their last take, and mark them clean (write-protect them).
    pub(crate) fn take_dirty(
        &mut self,
        first: u64,
        end: u64,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<(), PmemError> {
        match self {
            Tracker::Uffd(t) => t.scan(first, end, true, out),
            Tracker::Mprotect(t) => t.take(first, end, out),
            Tracker::Off => Err(PmemError::NoTracking),
        }
    }

    /// Whether `page` was written since its last take; leaves it as is.
    pub(crate) fn is_dirty(&mut self, page: u64) -> Result<bool, PmemError> {
        match self {
            Tracker::Uffd(t) => {
                let mut v = Vec::new();
                t.scan(page, page + 1, false, &mut v)?;
                Ok(!v.is_empty())
            }
            Tracker::Mprotect(t) => Ok(t.is_dirty(page)),
            Tracker::Off => Err(PmemError::NoTracking),
        }
    }
}
