//! [`Format`]: the trace formats, by name. (Parsing a name, `FromStr`, is
//! in `error.rs`, beside the error it returns, so that this module needs
//! nothing of the crate.)

use serde::{Deserialize, Serialize};
use std::fmt;

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// fio iolog version 2 (no timestamps).
    Fio2,
    /// fio iolog version 3 (microsecond timestamps).
    Fio3,
    /// blkparse's default text output.
    Blkparse,
    /// blktrace binary files.
    Blktrace,
    /// SNIA IOTTA MSR Cambridge CSV.
    Msr,
    /// DiskSim ASCII.
    Disksim,
    /// A closed-loop trace ([`crate::closed`]), read as open-loop records
    /// (read only: [`writer`](fn@crate::writer) refuses it).
    Closed,
}

impl Format {
    /// Every format this crate writes (all but [`Format::Closed`]).
    pub const ALL: [Format; 6] = [
        Format::Fio2,
        Format::Fio3,
        Format::Blkparse,
        Format::Blktrace,
        Format::Msr,
        Format::Disksim,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Fio2 => "fio2",
            Format::Fio3 => "fio3",
            Format::Blkparse => "blkparse",
            Format::Blktrace => "blktrace",
            Format::Msr => "msr",
            Format::Disksim => "disksim",
            Format::Closed => "closed",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
