//! SQLite (`sqlite`): one-row INSERT transactions into a table of 1 KiB
//! rows in rollback-journal mode (`journal_mode=DELETE`,
//! `synchronous=FULL`, SQLite's defaults apart from FULL), as the real
//! program `storlab app run sqlite` runs them (crates/storlab/src/app/
//! sqlite.rs). No study measured SQLite: the model exists so that `storlab
//! app check sqlite` can hold it against the real program on the same
//! emulated device (issue 57).
//!
//! A transaction follows SQLite's atomic commit ("Atomic Commit In
//! SQLite", sqlite.org/atomiccommit.html, and the pager,
//! `sqlite3PagerCommitPhaseOne`): the rollback journal is created; its
//! header (one sector, 4,096 bytes: the unix VFS's
//! SQLITE_DEFAULT_SECTOR_SIZE) and the original content of every page the
//! transaction changes (a 4-byte page number, the page, a 4-byte
//! checksum) are written to it; `syncJournal` syncs it, writes the
//! record count into its header and syncs it again (FULL, on a file
//! system without SQLITE_IOCAP_SEQUENTIAL); the first sync of a new
//! journal also syncs its directory (`unixSync`, UNIXFILE_DIRSYNC); the
//! changed pages are written to the database file, which is synced; the
//! journal is deleted (`unixDelete`, no directory sync below
//! synchronous=EXTRA). Syncs are fdatasync(2) (`full_fsync` under
//! HAVE_FDATASYNC, Linux builds).

use serde_json::json;
use storlab_model::host::fs::Layout;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{FileIo, MetricKind, Model, PlanCx, SetupCx, Step};

/// SQLite's default page size, bytes.
const PAGE: u64 = 4096;
/// The journal header: one sector of the unix VFS (SQLITE_DEFAULT_SECTOR_SIZE).
const JOURNAL_HEADER: u64 = 4096;
/// A journal page record: page number, the page, checksum.
const JOURNAL_RECORD: u64 = 4 + PAGE + 4;
/// The header bytes `syncJournal` rewrites (magic and record count).
const NREC_BYTES: u64 = 12;
/// Room a journal file may grow to (header and a few records), bytes.
const JOURNAL_ROOM: u64 = 64 << 10;
/// Rows of 1 KiB a table leaf page holds: a leaf's 4,088 usable bytes
/// over a cell of about 1,034 bytes (the 1,024-byte blob, its record
/// header, the payload-size and rowid varints and the 2-byte cell
/// pointer): 3 (SQLite file format, "B-tree Pages").
const ROWS_PER_LEAF: u64 = 3;
/// Children of an interior table page: a 4-byte child page number, a
/// rowid varint of about 3 bytes and a 2-byte cell pointer per child,
/// in 4,084 usable bytes: about 450.
const INTERIOR_FANOUT: u64 = 450;

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "rows",
        default: "1048576",
        help: "rows of 1 KiB in the table before the run, at scale 1 (the real program's 1 Mi rows, a 1 GiB table: an ESTIMATE of its own, no study gives SQLite's size)",
    },
    ParamDef {
        name: "transactions",
        default: "10000",
        help: "insert transactions (the run ends after them, or at runtime=)",
    },
    ParamDef {
        name: "cpu_us",
        default: "50",
        help: "CPU per transaction, µs (ESTIMATE, not calibrated: no study measured SQLite; the sqlite3 shell parsing BEGIN, the INSERT with its 1 KiB randomblob and COMMIT, the B-tree insert and the pager's commit logic, about 20 µs, and its start per 50 transactions, about 1.5 ms, as the real program runs it in batches)",
    },
];

const MODELS: &[&str] = &[
    "one connection (SQLite serializes writers) runs one-row INSERT transactions back to back; each row (a rowid one above the last and a 1 KiB blob) goes to the table's rightmost leaf, 3 rows a leaf; when the leaf is full the row starts a new leaf appended to the file and the rightmost interior page gains a divider (balance_quick)",
    "every transaction changes page 1 (the file change counter) and its leaf, or page 1, the interior page and the new leaf; the pages that existed when it began are journaled",
    "commit as SQLite's pager makes it with journal_mode=DELETE and synchronous=FULL: create the journal, write its 4 KiB header and a record per journaled page, fdatasync it (and its directory, the first time), rewrite the header's record count, fdatasync it again, write the changed pages to the database, fdatasync the database, unlink the journal",
];

const SIMPLIFIES: &[&str] = &[
    "the table's pages are resident in SQLite's page cache and the operating system's (a scaled table of tens of MB); reads are not modelled",
    "the rightmost interior page never splits (a split every 450 new leaves, 1,350 rows); its place in the file is taken as the file's last page when the run starts (the bulk load wrote the interior pages last)",
    "CPU per transaction is one ESTIMATE, not calibrated (`storlab app check sqlite` runs the model with the sqlite3 shells' own user CPU instead: 57-146 µs a transaction on the project's two-core test host, 2026-12-01, docs/apps.md)",
];

/// `sqlite`.
pub static APPS: &[&AppInfo] = &[&SQLITE];

static SQLITE: AppInfo = AppInfo {
    name: "sqlite",
    summary: "SQLite: one-row INSERT transactions, rollback journal, synchronous=FULL",
    unit: "transactions/s",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "no calibration: no study measured SQLite; cpu_us is an ESTIMATE and every IO follows from SQLite's commit sequence",
    params: PARAMS,
    build,
};

fn build(p: &Params) -> Result<AppKind, AppError> {
    let rows = p.scaled(p.u64("rows", 1, 1 << 40)?, 1000);
    let cpu_us = p.f64("cpu_us")?;
    if !(0.0..=1e7).contains(&cpu_us) {
        return Err(p.bad("cpu_us", "must be from 0 to 10,000,000"));
    }
    let leaves = rows.div_ceil(ROWS_PER_LEAF);
    let interior = leaves.div_ceil(INTERIOR_FANOUT);
    // page 1 (the schema), the table's root, its interior pages and
    // leaves
    let pages = 2 + interior + leaves;
    Ok(AppKind::Closed(Box::new(Sqlite {
        pages,
        rows,
        leaf: pages - 1,
        parent: pages - 1,
        in_leaf: rows - (leaves - 1) * ROWS_PER_LEAF,
        cpu_ns: (cpu_us * 1000.0).round() as u64,
        transactions: p.u64("transactions", 1, 1 << 40)?,
        started: 0,
        db: 0,
        new_leaves: 0,
    })))
}

struct Sqlite {
    /// Pages in the database file.
    pages: u64,
    rows: u64,
    /// The rightmost leaf's page number (0-based).
    leaf: u64,
    /// The rightmost interior page.
    parent: u64,
    /// Rows in the rightmost leaf.
    in_leaf: u64,
    cpu_ns: u64,
    transactions: u64,
    started: u64,
    db: u32,
    new_leaves: u64,
}

impl Model for Sqlite {
    fn op_names(&self) -> &'static [&'static str] {
        &["insert"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (1, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, _seed: u64) -> Result<(), AppError> {
        // the loaded table, room for the run's new leaves after it
        let room = (self.pages + self.transactions.div_ceil(ROWS_PER_LEAF) + 1) * PAGE;
        self.db = cx.create_written(room, self.pages * PAGE)?;
        Ok(())
    }

    fn next_op(&mut self, _t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if self.started >= self.transactions {
            return Ok(false);
        }
        self.started += 1;
        cx.push(Step::Cpu(self.cpu_ns));
        // the pages this insert changes, and those of them the journal
        // keeps (pages that existed when the transaction began)
        let new_leaf = self.in_leaf == ROWS_PER_LEAF;
        // page 1 (0), then the interior page and the new leaf, or the
        // leaf: in page order
        let (changed, written) = if new_leaf {
            self.leaf = self.pages;
            self.pages += 1;
            self.in_leaf = 1;
            self.new_leaves += 1;
            ([0, self.parent, self.leaf], 3)
        } else {
            self.in_leaf += 1;
            ([0, self.leaf, 0], 2)
        };
        // the first two existed when the transaction began
        let journaled = 2;
        self.rows += 1;
        // the rollback journal: created, header, the original pages
        let j = cx.create_file(JOURNAL_ROOM, Layout::Empty)?;
        cx.push(Step::Io(FileIo::create(j, 0)));
        cx.push(Step::Io(FileIo::write(j, 0, JOURNAL_HEADER)));
        for k in 0..journaled {
            let off = JOURNAL_HEADER + k * JOURNAL_RECORD;
            cx.push(Step::Io(FileIo::write(j, off, JOURNAL_RECORD)));
        }
        // syncJournal: sync (and the new journal's directory: its entry
        // went out with the journal's log force, so that sync finds
        // nothing to force and flushes the device's cache), the record
        // count, sync again
        cx.push(Step::Io(FileIo::fdatasync(j)));
        cx.push(Step::Io(FileIo::fdatasync(j)));
        cx.push(Step::Io(FileIo::write(j, 0, NREC_BYTES)));
        cx.push(Step::Io(FileIo::fdatasync(j)));
        // the database's pages, in page order, then its sync
        for &pg in &changed[..written] {
            cx.push(Step::Io(FileIo::write(self.db, pg * PAGE, PAGE)));
        }
        cx.push(Step::Io(FileIo::fdatasync(self.db)));
        // journal_mode=DELETE: the commit is the journal's unlink
        cx.push(Step::Io(FileIo::unlink(j, 0)));
        cx.push(Step::End(0));
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "rows": self.rows,
            "database_pages": self.pages,
            "new_leaves": self.new_leaves,
        })
    }
}
