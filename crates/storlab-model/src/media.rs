//! Memory technologies (docs/spec/media.md): named array timings a preset or the
//! command line can pick with `media = "<name>"`.

use serde::{Deserialize, Serialize};

/// Media timing: array read and write latency.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MediaConfig {
    /// Technology name (for reports).
    pub name: String,
    /// Array read latency (paid once per row opened).
    pub read_ns: u64,
    /// Array write latency.
    pub write_ns: u64,
}

/// `(name, read ns, write ns, source)`.
pub const TECHNOLOGIES: &[(&str, u64, u64, &str)] = &[
    ("dram", 25, 25, "docs/spec/media.md technology table (HASTE study, ITRS 2009)"),
    ("sttm", 30, 95, "docs/spec/media.md: STT-MRAM 29.5 ns read (rounded up to the 4 ns-step emulator's next ns), 95 ns write"),
    ("pcm", 68, 215, "docs/spec/media.md: PCM 67.5 ns read (rounded to whole ns), 215 ns write"),
    ("pcm-lee", 48, 150, "docs/spec/media.md: PCM per Lee et al. ISCA 2009, used by the Moneta study"),
    ("slc-nand", 25_000, 200_000, "docs/spec/media.md: SLC NAND flash 25 us read, 200 us program"),
];

/// Look up a technology by name.
pub fn technology(name: &str) -> Option<MediaConfig> {
    TECHNOLOGIES
        .iter()
        .find(|t| t.0 == name)
        .map(|t| MediaConfig {
            name: t.0.to_string(),
            read_ns: t.1,
            write_ns: t.2,
        })
}
