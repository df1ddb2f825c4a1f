//! fio's data placement options (HOWTO: `fdp`, `dataplacement`,
//! `plids`/`fdp_pli`, `plid_select`/`fdp_pli_select`; fio's options.c,
//! `str_fdp_pli_cb`; init.c, the `fdp=1` check; dataplacement.c,
//! `dp_init` and `dp_fill_dspec_data`). Described here, not copied:
//!
//! * `fdp=1` is `dataplacement=fdp`; `fdp=1` beside an explicit
//!   `dataplacement=none` or `streams` is an error.
//! * `plids` is a list of values and ranges (`0,2-4`), at most 128 ids,
//!   each at most 0xFFFF, a range's start not past its end; fio sorts it.
//!   With FDP the values are indices into the placement identifiers the
//!   drive lists (its reclaim-unit handle status); without the option the
//!   job uses all of them. An index past the drive's list fails the job
//!   before it starts with EINVAL.
//! * Only an engine that can fetch the drive's reclaim-unit handles
//!   (`io_uring_cmd`, `xnvme`: NVMe passthrough) can run an FDP job; with
//!   any other, fio fails the job at setup ("engine ... lacks fetch
//!   ruhs").
//! * Each write (never a read or a trim) takes the next placement
//!   identifier: round robin over the job's list (`plid_select`'s
//!   default) or uniformly at random.

use rand::{Rng, SeedableRng};

/// Most placement ids in a job (fio's `FIO_MAX_DP_IDS`).
pub const MAX_IDS: usize = 128;

/// The placement interface (`dataplacement=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpType {
    /// No directive (fio's default).
    #[default]
    None,
    /// Flexible Data Placement.
    Fdp,
    /// NVMe Streams.
    Streams,
}

/// How a write's placement id is chosen (`plid_select=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DpSelect {
    /// Round robin over the ids (fio's default).
    #[default]
    RoundRobin,
    /// Uniformly at random.
    Random,
}

/// A job's data placement options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DpOptions {
    /// The interface.
    pub kind: DpType,
    /// `plids=` as written, sorted (empty: every id the drive lists).
    pub ids: Vec<u16>,
    /// `plid_select=`.
    pub select: DpSelect,
}

/// Parse a `plids=` list as fio does (values and `a-b` ranges, separated
/// by commas; an empty item ends the list). Errors are the message for
/// the option.
pub fn parse_ids(text: &str) -> Result<Vec<u16>, String> {
    let mut ids = Vec::new();
    let num = |s: &str| -> Result<u64, String> {
        let s = s.trim();
        let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(h) => u64::from_str_radix(h, 16),
            None => s.parse::<u64>(),
        };
        parsed.map_err(|_| format!("`{s}` is not a placement id"))
    };
    for item in text.trim().split(',') {
        if item.trim().is_empty() {
            break;
        }
        let (start, end) = match item.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let v = num(item)?;
                (v, v)
            }
        };
        if start > end {
            return Err(format!(
                "`{}`: the range's start is past its end",
                item.trim()
            ));
        }
        for v in start..=end {
            if ids.len() >= MAX_IDS {
                return Err(format!("only {MAX_IDS} IDs supported"));
            }
            if v > 0xFFFF {
                return Err("Placement IDs cannot exceed 0xFFFF".into());
            }
            ids.push(v as u16);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// Why a placement job cannot run (before any IO; fio's EINVAL).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DpError {
    /// The engine cannot ask the drive for its handles.
    #[error("fdp=1 (dataplacement=fdp) needs an engine that fetches the drive's reclaim unit handles, io_uring_cmd or xnvme (fio: \"engine ({0}) lacks fetch ruhs\")")]
    Engine(String),
    /// The drive has no FDP.
    #[error("fdp=1: the device has no flexible data placement enabled (fio: \"fdp fetch ruhs failed\"; a drive with [ssd.fdp] turns it on with enabled=true)")]
    NoFdp,
    /// A `plids` index past the drive's placement identifiers.
    #[error("plids (fdp_pli) index {index} is beyond the drive's {handles} placement identifiers (indices 0 to {last})", last = handles.saturating_sub(1))]
    BadIndex {
        /// The index.
        index: u16,
        /// Placement identifiers the drive lists.
        handles: u32,
    },
    /// Streams directives.
    #[error("dataplacement=streams: the simulated drives have no Streams directive (a real drive without it fails the writes)")]
    Streams,
}

impl DpError {
    /// fio's errno for the job.
    pub fn errno(&self) -> i32 {
        22
    }
}

/// The placement ids a job's thread gives its writes, in fio's order.
#[derive(Clone, Debug)]
pub struct PlacementPicker {
    pids: Vec<u16>,
    next: usize,
    select: DpSelect,
    rng: rand_pcg::Pcg64Mcg,
}

impl PlacementPicker {
    /// The picker for `opts` on a drive listing `handles` placement
    /// identifiers (0 to `handles - 1`, one reclaim group), for the
    /// thread seeded `seed`.
    pub fn new(opts: &DpOptions, handles: u32, seed: u64) -> Result<Self, DpError> {
        let pids = if opts.ids.is_empty() {
            (0..handles.min(u32::from(u16::MAX) + 1))
                .map(|h| h as u16)
                .collect()
        } else {
            if let Some(&bad) = opts.ids.iter().find(|&&i| u32::from(i) >= handles) {
                return Err(DpError::BadIndex {
                    index: bad,
                    handles,
                });
            }
            opts.ids.clone()
        };
        Ok(PlacementPicker {
            pids,
            next: 0,
            select: opts.select,
            rng: rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x6664_705f_706c_6964),
        })
    }

    /// The next write's placement identifier.
    pub fn next_pid(&mut self) -> u16 {
        match self.select {
            DpSelect::RoundRobin => {
                if self.next >= self.pids.len() {
                    self.next = 0;
                }
                let p = self.pids[self.next];
                self.next += 1;
                p
            }
            DpSelect::Random => self.pids[self.rng.gen_range(0..self.pids.len())],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plids_lists_and_ranges_as_fio_reads_them() {
        assert_eq!(parse_ids("5,1-3").unwrap(), vec![1, 2, 3, 5]);
        assert_eq!(parse_ids(" 0x2 ").unwrap(), vec![2]);
        assert!(parse_ids("3-1").unwrap_err().contains("start is past"));
        assert!(parse_ids("70000").unwrap_err().contains("0xFFFF"));
        assert!(parse_ids("0-200").unwrap_err().contains("128 IDs"));
        assert!(parse_ids("a").is_err());
    }

    #[test]
    fn round_robin_cycles_and_bad_indices_are_refused() {
        let opts = DpOptions {
            kind: DpType::Fdp,
            ids: vec![1, 3],
            select: DpSelect::RoundRobin,
        };
        let mut p = PlacementPicker::new(&opts, 4, 1).unwrap();
        let got: Vec<u16> = (0..5).map(|_| p.next_pid()).collect();
        assert_eq!(got, vec![1, 3, 1, 3, 1]);
        let e = PlacementPicker::new(&opts, 3, 1).unwrap_err();
        assert_eq!(
            e,
            DpError::BadIndex {
                index: 3,
                handles: 3
            }
        );
        assert!(e.to_string().contains("plids"));
        // no list: every id the drive lists
        let all = DpOptions {
            kind: DpType::Fdp,
            ..Default::default()
        };
        let mut p = PlacementPicker::new(&all, 3, 1).unwrap();
        let got: Vec<u16> = (0..4).map(|_| p.next_pid()).collect();
        assert_eq!(got, vec![0, 1, 2, 0]);
    }

    #[test]
    fn random_selection_stays_in_the_list_and_is_seeded() {
        let opts = DpOptions {
            kind: DpType::Fdp,
            ids: vec![2, 5, 7],
            select: DpSelect::Random,
        };
        let mut a = PlacementPicker::new(&opts, 8, 9).unwrap();
        let mut b = PlacementPicker::new(&opts, 8, 9).unwrap();
        let xs: Vec<u16> = (0..64).map(|_| a.next_pid()).collect();
        let ys: Vec<u16> = (0..64).map(|_| b.next_pid()).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|p| [2, 5, 7].contains(p)));
        for p in [2, 5, 7] {
            assert!(xs.contains(&p), "{p} never picked");
        }
    }
}
