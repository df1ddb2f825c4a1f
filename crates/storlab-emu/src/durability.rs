//! Durability as the emulated device has it, and emulated power cuts.
//!
//! The store always holds the latest image (what reads return). For a
//! device with a volatile write cache, a journal keeps, for every write
//! since the last durable point, the bytes it overwrote (undo). Writes are
//! numbered in the order they were applied.
//!
//! A write is durable when any of these holds:
//! - it was FUA and its reply was released;
//! - a flush's reply was released and the write was applied before the
//!   flush arrived (the NBD rule: writes replied to before the flush must
//!   be durable; writes racing with it may be);
//! - the model destaged it: at the cut, no volatile cache of the model
//!   holds its range ([`Device::volatile_holds`]), or a later write found
//!   its range clean when it arrived (so what it overwrote had reached the
//!   media).
//!
//! A power cut walks the journal newest first. A durable record settles
//! its range (what is in the store there now is what the media holds); a
//! lost record is undone on the part of its range not settled yet, and
//! settles its range if the model held none of it when it arrived. What
//! remains is the image the model's media holds; the server keeps serving
//! it. The model is asked about ranges of the journal's records only, at
//! the cut and once per journalled write while older writes are
//! journalled: the simulator never pays for it.
//!
//! A device without a volatile cache loses nothing: writes are durable when
//! applied and no journal is kept. The journal is bounded
//! ([`Durability::new`]'s `limit`): past it the oldest writes are treated
//! as written back (counted in [`DurabilityStats::destaged_writes`], as are
//! the writes the model had destaged at a cut).
//!
//! For a file store, FLUSH and FUA also `fdatasync` the host file, and a
//! clean shutdown syncs it, so nothing acknowledged is lost on the host
//! either. The host syncs run on a worker thread ([`Durability::run_host_syncs`]),
//! not on the thread serving requests: a request needing one takes a
//! ticket ([`Durability::sync_ticket`]) once its data is applied, and its
//! reply waits for the deadline and for a sync that started after the
//! ticket ([`Durability::sync_state`]). Syncs are batched: one `fdatasync`
//! answers every ticket taken before it started.
//!
//! [`Device::volatile_holds`]: storlab_model::Device::volatile_holds

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use crate::store::Store;

/// Sequence number of an applied write (0: not journalled).
pub type WriteSeq = u64;

/// Asks the model whether a volatile cache still holds any byte of
/// `(offset, len)` ([`storlab_model::Device::volatile_holds`]).
pub type Holds<'a> = &'a dyn Fn(u64, u64) -> bool;

/// A cache that never destages on its own (no model to ask): every write
/// not flushed or FUA is lost at a cut.
pub fn never_destaged(_offset: u64, _len: u64) -> bool {
    true
}

struct Record {
    seq: WriteSeq,
    /// The request it is part of: the sequence number of the request's
    /// first piece (a large write is journalled in pieces).
    request: WriteSeq,
    offset: u64,
    len: u64,
    /// Data extents of the overwritten range (the rest was zeros).
    undo: Vec<(u64, Vec<u8>)>,
    /// No volatile cache of the model held the range when the write
    /// arrived: what it overwrote was on the media.
    base_clean: bool,
    durable: bool,
    bytes: u64,
}

#[derive(Default)]
struct Journal {
    next: WriteSeq,
    records: VecDeque<Record>,
    bytes: u64,
    destaged: u64,
}

impl Journal {
    /// Drop durable records at the front (nothing before them is undone).
    fn trim_front(&mut self) {
        while self.records.front().is_some_and(|r| r.durable) {
            if let Some(r) = self.records.pop_front() {
                self.bytes -= r.bytes;
            }
        }
    }
}

/// Counters of the durability layer.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DurabilityStats {
    /// Emulated power cuts.
    pub power_cuts: u64,
    /// Writes (including trims and write-zeroes) undone by power cuts.
    pub lost_writes: u64,
    /// Bytes those writes covered.
    pub lost_bytes: u64,
    /// Writes treated as written back because the journal was full, or
    /// found destaged by the model at a power cut.
    pub destaged_writes: u64,
    /// Writes not yet durable: journalled, not flushed, not FUA, and (in
    /// a server's report) still held by a volatile cache of the model.
    pub volatile_writes: u64,
    /// `fdatasync` calls on the host store for FLUSH and FUA requests.
    pub host_syncs: u64,
    /// FLUSH and FUA replies whose deadline came before the host's sync
    /// finished (their lateness includes the wait).
    pub held_for_host_sync: u64,
}

/// Where a host-sync ticket stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncState {
    /// No sync that started after the ticket has finished yet.
    Pending,
    /// Durable on the host.
    Done,
    /// The sync covering it failed.
    Failed,
}

#[derive(Default)]
struct HostSyncQueue {
    /// Tickets handed out (the last one).
    requested: u64,
    stop: bool,
    /// Ticket ranges whose sync failed.
    failed: Vec<(u64, u64)>,
    syncs: u64,
}

/// The store plus the durability rules of the emulated device.
pub struct Durability {
    store: Box<dyn Store>,
    volatile: bool,
    limit: u64,
    journal: Mutex<Journal>,
    stats: Mutex<DurabilityStats>,
    syncs: Mutex<HostSyncQueue>,
    sync_wanted: Condvar,
    /// Every ticket up to this one is answered (durable or failed).
    synced: AtomicU64,
    held: AtomicU64,
}

impl Durability {
    /// Wrap `store`; `volatile` says whether the device has a volatile
    /// write cache; `limit` bounds the journal in bytes.
    pub fn new(store: Box<dyn Store>, volatile: bool, limit: u64) -> Self {
        Durability {
            store,
            volatile,
            limit,
            journal: Mutex::new(Journal::default()),
            stats: Mutex::new(DurabilityStats::default()),
            syncs: Mutex::new(HostSyncQueue::default()),
            sync_wanted: Condvar::new(),
            synced: AtomicU64::new(0),
            held: AtomicU64::new(0),
        }
    }

    fn sync_queue(&self) -> std::sync::MutexGuard<'_, HostSyncQueue> {
        self.syncs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether FLUSH and FUA need a host sync (a file store) and so the
    /// worker of [`Durability::run_host_syncs`].
    pub fn needs_host_sync(&self) -> bool {
        self.store.needs_sync()
    }

    /// Ask for a host sync covering every write applied so far; 0 when the
    /// store needs none. Check it with [`Durability::sync_state`].
    pub fn sync_ticket(&self) -> u64 {
        if !self.store.needs_sync() {
            return 0;
        }
        let mut q = self.sync_queue();
        q.requested += 1;
        let t = q.requested;
        drop(q);
        self.sync_wanted.notify_one();
        t
    }

    /// Where `ticket` stands (0 is always done).
    pub fn sync_state(&self, ticket: u64) -> SyncState {
        if ticket == 0 {
            return SyncState::Done;
        }
        if ticket > self.synced.load(Ordering::Acquire) {
            return SyncState::Pending;
        }
        let q = self.sync_queue();
        if q.failed.iter().any(|&(lo, hi)| (lo..=hi).contains(&ticket)) {
            SyncState::Failed
        } else {
            SyncState::Done
        }
    }

    /// Count a reply that waited for the host's sync after its deadline.
    pub fn note_held(&self) {
        self.held.fetch_add(1, Ordering::Relaxed);
    }

    /// The host-sync worker: sync whenever tickets are waiting (one
    /// `fdatasync` for all of them), calling `answered` after each, until
    /// [`Durability::stop_host_syncs`] and no ticket is left.
    pub fn run_host_syncs(&self, answered: impl Fn()) {
        loop {
            let mut q = self.sync_queue();
            let target = loop {
                let done = self.synced.load(Ordering::Acquire);
                if q.requested > done {
                    break q.requested;
                }
                if q.stop {
                    return;
                }
                q = self.sync_wanted.wait(q).unwrap_or_else(|e| e.into_inner());
            };
            drop(q);
            // Every write applied before `target` was handed out is in the
            // host's page cache now: this sync covers them all.
            let ok = self.store.sync().is_ok();
            let mut q = self.sync_queue();
            q.syncs += 1;
            if !ok {
                let from = self.synced.load(Ordering::Acquire) + 1;
                q.failed.push((from, target));
            }
            self.synced.store(target, Ordering::Release);
            drop(q);
            answered();
        }
    }

    /// Let the worker of [`Durability::run_host_syncs`] end once the
    /// tickets handed out are answered.
    pub fn stop_host_syncs(&self) {
        self.sync_queue().stop = true;
        self.sync_wanted.notify_all();
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Whether writes can be lost until flushed.
    pub fn volatile(&self) -> bool {
        self.volatile
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counters so far (every write not flushed or FUA counts as
    /// volatile).
    pub fn stats(&self) -> DurabilityStats {
        self.stats_with(&never_destaged)
    }

    /// Counters so far, a write counting as volatile only while the model
    /// still `holds` its range.
    pub fn stats_with(&self, holds: Holds<'_>) -> DurabilityStats {
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
        s.volatile_writes = {
            let j = self.journal();
            let mut v: Vec<WriteSeq> = j
                .records
                .iter()
                .filter(|r| !r.durable && holds(r.offset, r.len))
                .map(|r| r.request)
                .collect();
            v.dedup();
            v.len() as u64
        };
        s.host_syncs = self.sync_queue().syncs;
        s.held_for_host_sync = self.held.load(Ordering::Relaxed);
        s
    }

    /// Read `buf.len()` bytes at `offset`.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.store.read_at(buf, offset)
    }

    /// Write `data` at `offset` (the caller takes a
    /// [`Durability::sync_ticket`] for the host with `fua`), with a cache
    /// that never destages on its own. Returns the write's sequence number
    /// for [`Durability::fua_released`].
    pub fn write(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<WriteSeq> {
        self.write_part(data, offset, fua, None, &never_destaged)
    }

    /// [`Durability::write`] for a piece of a larger write whose first
    /// piece got sequence number `first` (`None`: this is the first);
    /// `holds` asks the model what its volatile caches hold now (before
    /// this write reaches it). Reports count requests, not pieces.
    pub fn write_part(
        &self,
        data: &[u8],
        offset: u64,
        _fua: bool,
        first: Option<WriteSeq>,
        holds: Holds<'_>,
    ) -> io::Result<WriteSeq> {
        self.mutate(offset, data.len() as u64, first, true, holds, |s| {
            s.write_at(data, offset)
        })
    }

    /// Zero `[offset, offset + len)` (trim or write-zeroes).
    pub fn zero(
        &self,
        offset: u64,
        len: u64,
        _fua: bool,
        holds: Holds<'_>,
    ) -> io::Result<WriteSeq> {
        self.zero_part(offset, len, None, holds)
    }

    /// [`Durability::zero`] for a piece of a larger trim or write-zeroes
    /// whose first piece got sequence number `first` (`None`: this is
    /// the first).
    pub fn zero_part(
        &self,
        offset: u64,
        len: u64,
        first: Option<WriteSeq>,
        holds: Holds<'_>,
    ) -> io::Result<WriteSeq> {
        self.mutate(offset, len, first, false, holds, |s| s.zero(offset, len))
    }

    /// Apply a write (`data`: it carries bytes the device's cache holds)
    /// or a zeroing (no data: only what it overwrote is journalled).
    fn mutate(
        &self,
        offset: u64,
        len: u64,
        first: Option<WriteSeq>,
        data: bool,
        holds: Holds<'_>,
        apply: impl FnOnce(&dyn Store) -> io::Result<()>,
    ) -> io::Result<WriteSeq> {
        if !self.volatile {
            apply(self.store.as_ref())?;
            return Ok(0);
        }
        let mut j = self.journal();
        let extents = self.store.data_extents(offset, len)?;
        let undo_bytes: u64 = extents.iter().map(|e| e.1).sum();
        // Only matters when an older write may be undone under this one.
        let base_clean = !j.records.is_empty() && !holds(offset, len);
        // Count a write's range too: the journal stands for the device's
        // cache, which holds every byte written until it is destaged. A
        // trim or write-zeroes carries no data: only what it overwrote
        // counts, so a trim larger than the journal (over data never
        // written) does not push other clients' unflushed writes out of
        // it; whether they survive a cut is the model's word alone
        // (issue 59: a 2 GiB trim used to make them all durable).
        let bytes = if data { len } else { 0 } + undo_bytes + 64;
        if bytes > self.limit {
            // Bigger than the whole journal (a write larger than it, or a
            // trim over more written data than it holds): everything
            // before is written back and this goes straight to the medium.
            let n = j.records.iter().filter(|r| r.request == r.seq).count() as u64;
            j.records.clear();
            j.bytes = 0;
            j.destaged += n + 1;
            apply(self.store.as_ref())?;
            j.next += 1;
            return Ok(0);
        }
        let mut undo = Vec::with_capacity(extents.len());
        for (o, l) in extents {
            let mut b = vec![0u8; l as usize];
            self.store.read_at(&mut b, o)?;
            undo.push((o, b));
        }
        apply(self.store.as_ref())?;
        j.next += 1;
        let seq = j.next;
        j.records.push_back(Record {
            seq,
            request: first.filter(|&f| f != 0).unwrap_or(seq),
            offset,
            len,
            undo,
            base_clean,
            durable: false,
            bytes,
        });
        j.bytes += bytes;
        while j.bytes > self.limit {
            let Some(r) = j.records.pop_front() else {
                break;
            };
            j.bytes -= r.bytes;
            j.destaged += u64::from(r.request == r.seq);
        }
        Ok(seq)
    }

    /// A flush arrived: the point it covers (pass it to
    /// [`Durability::flush_released`] when the reply goes out; the caller
    /// takes a [`Durability::sync_ticket`] for the host).
    pub fn flush_arrived(&self) -> WriteSeq {
        self.journal().next
    }

    /// A flush's reply was released: writes up to `upto` are durable.
    pub fn flush_released(&self, upto: WriteSeq) {
        let mut j = self.journal();
        for r in j.records.iter_mut() {
            if r.seq > upto {
                break;
            }
            r.durable = true;
        }
        j.trim_front();
    }

    /// A FUA write's reply was released: it is durable, all its pieces
    /// (`seqs`, from [`Durability::write_part`]; 0 stands for none).
    pub fn fua_released(&self, seqs: std::ops::RangeInclusive<WriteSeq>) {
        let seqs = (*seqs.start()).max(1)..=*seqs.end();
        if seqs.is_empty() {
            return;
        }
        let mut j = self.journal();
        for r in j.records.iter_mut().filter(|r| seqs.contains(&r.seq)) {
            r.durable = true;
        }
        j.trim_front();
    }

    /// Emulated power cut with a cache that never destages on its own.
    pub fn power_cut(&self) -> io::Result<()> {
        self.power_cut_with(&never_destaged)
    }

    /// Emulated power cut: the store goes back to the image the media
    /// holds, the model saying which ranges its volatile caches still hold
    /// (`holds`). The caller must stop all other use of the store while
    /// this runs.
    pub fn power_cut_with(&self, holds: Holds<'_>) -> io::Result<()> {
        let mut j = self.journal();
        let records: Vec<Record> = j.records.drain(..).collect();
        j.bytes = 0;
        let mut destaged = std::mem::take(&mut j.destaged);
        let (mut lost, mut lost_bytes, mut last_lost, mut last_kept) = (0, 0, 0, 0);
        let mut settled = Ranges::default();
        for r in records.iter().rev() {
            let end = r.offset + r.len;
            if r.durable || !holds(r.offset, r.len) {
                // On the media: flushed, FUA, or destaged by the model.
                if !r.durable && r.request != last_kept {
                    destaged += 1;
                    last_kept = r.request;
                }
                settled.insert(r.offset, end);
                continue;
            }
            for (lo, hi) in settled.gaps(r.offset, end) {
                self.store.zero(lo, hi - lo)?;
                for (o, data) in &r.undo {
                    let (a, b) = ((*o).max(lo), (o + data.len() as u64).min(hi));
                    if a < b {
                        self.store
                            .write_at(&data[(a - o) as usize..(b - o) as usize], a)?;
                    }
                }
            }
            // A request counts once, however many of its pieces.
            lost += u64::from(r.request != last_lost);
            last_lost = r.request;
            lost_bytes += r.len;
            if r.base_clean {
                settled.insert(r.offset, end);
            }
        }
        self.store.sync()?;
        drop(j);
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        s.power_cuts += 1;
        s.lost_writes += lost;
        s.lost_bytes += lost_bytes;
        s.destaged_writes += destaged;
        Ok(())
    }

    /// Fold the journal's destage count into the stats (for reports).
    pub fn collect_destaged(&self) {
        let d = std::mem::take(&mut self.journal().destaged);
        self.stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .destaged_writes += d;
    }

    /// Sync the host store (clean shutdown).
    pub fn sync(&self) -> io::Result<()> {
        self.store.sync()
    }
}

/// Disjoint byte ranges (start -> end), merged as they are inserted.
/// Hand-written: a few lines over `BTreeMap`, where an interval crate
/// would be a dependency for one power-cut loop.
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn insert(&mut self, mut lo: u64, mut hi: u64) {
        if lo >= hi {
            return;
        }
        // Merge with a range starting before `lo` that reaches it.
        if let Some((&s, &e)) = self.0.range(..=lo).next_back() {
            if e >= lo {
                lo = s;
                hi = hi.max(e);
                self.0.remove(&s);
            }
        }
        // Swallow ranges starting inside [lo, hi].
        while let Some((&s, &e)) = self.0.range(lo..=hi).next() {
            hi = hi.max(e);
            self.0.remove(&s);
        }
        self.0.insert(lo, hi);
    }

    /// The parts of `[lo, hi)` no range covers.
    fn gaps(&self, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = lo;
        if let Some((_, &e)) = self.0.range(..=lo).next_back() {
            at = at.max(e);
        }
        for (&s, &e) in self.0.range(lo..hi) {
            if s > at {
                out.push((at, s));
            }
            at = at.max(e);
        }
        if at < hi {
            out.push((at, hi));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn read(d: &Durability, off: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        d.read(&mut b, off).unwrap();
        b
    }

    #[test]
    fn power_cut_keeps_flushed_and_fua_only() {
        let d = Durability::new(Box::new(MemoryStore::new(1 << 20)), true, 1 << 30);
        d.write(&[1; 4096], 0, false).unwrap();
        let upto = d.flush_arrived();
        d.write(&[2; 4096], 4096, false).unwrap(); // races with the flush
        d.flush_released(upto);
        d.write(&[3; 4096], 0, false).unwrap(); // unflushed overwrite
        let f = d.write(&[4; 100], 8192, true).unwrap();
        d.fua_released(f..=f);
        d.write(&[5; 50], 8192, false).unwrap(); // unflushed over the FUA write
        d.zero(0, 100, false, &never_destaged).unwrap();
        d.power_cut().unwrap();
        assert_eq!(read(&d, 0, 4096), vec![1; 4096]);
        assert_eq!(read(&d, 4096, 4096), vec![0; 4096]);
        assert_eq!(read(&d, 8192, 100), vec![4; 100]);
        let s = d.stats();
        assert_eq!((s.power_cuts, s.lost_writes), (1, 4));
    }

    #[test]
    fn what_the_model_destaged_survives_a_cut() {
        let d = Durability::new(Box::new(MemoryStore::new(1 << 20)), true, 1 << 30);
        d.write(&[1; 4096], 0, false).unwrap();
        d.write(&[2; 4096], 4096, false).unwrap();
        d.write(&[3; 4096], 8192, false).unwrap();
        // The model still holds only the second write's range.
        d.power_cut_with(&|o, l| o < 8192 && 4096 < o + l).unwrap();
        assert_eq!(read(&d, 0, 4096), vec![1; 4096]);
        assert_eq!(read(&d, 4096, 4096), vec![0; 4096]);
        assert_eq!(read(&d, 8192, 4096), vec![3; 4096]);
        let s = d.stats();
        assert_eq!((s.lost_writes, s.destaged_writes), (1, 2));
    }

    #[test]
    fn an_overwrite_of_destaged_data_loses_only_itself() {
        let d = Durability::new(Box::new(MemoryStore::new(1 << 20)), true, 1 << 30);
        let dirty = std::cell::Cell::new(false);
        let holds = |_o: u64, _l: u64| dirty.get();
        d.write_part(&[1; 4096], 0, false, None, &holds).unwrap();
        // The model destages it; then a second write dirties the range.
        d.write_part(&[7; 100], 9000, false, None, &holds).unwrap();
        d.write_part(&[2; 4096], 0, false, None, &holds).unwrap();
        dirty.set(true);
        d.power_cut_with(&holds).unwrap();
        // The first write reached the media before the second arrived.
        assert_eq!(read(&d, 0, 4096), vec![1; 4096]);
        assert_eq!(read(&d, 9000, 100), vec![0; 100]);
    }

    #[test]
    fn ranges_merge_and_give_gaps() {
        let mut r = Ranges::default();
        r.insert(10, 20);
        r.insert(30, 40);
        r.insert(18, 31);
        r.insert(50, 60);
        assert_eq!(r.0.len(), 2);
        assert_eq!(r.gaps(0, 70), vec![(0, 10), (40, 50), (60, 70)]);
        assert_eq!(r.gaps(12, 15), vec![]);
        assert_eq!(r.gaps(35, 55), vec![(40, 50)]);
    }

    #[test]
    fn non_volatile_loses_nothing() {
        let d = Durability::new(Box::new(MemoryStore::new(1 << 20)), false, 1 << 30);
        d.write(&[9; 10], 3, false).unwrap();
        d.power_cut().unwrap();
        assert_eq!(read(&d, 3, 10), vec![9; 10]);
    }

    #[test]
    fn full_journal_destages_oldest() {
        let d = Durability::new(Box::new(MemoryStore::new(1 << 20)), true, 10_000);
        for i in 0..10u8 {
            d.write(&[i + 1; 4096], i as u64 * 4096, false).unwrap();
        }
        d.power_cut().unwrap();
        // The oldest writes were written back, the newest (at most two
        // fit) were lost.
        assert_eq!(read(&d, 0, 1), vec![1]);
        assert_eq!(read(&d, 9 * 4096, 1), vec![0]);
        assert!(d.stats().destaged_writes >= 8);
    }

    /// Issue 59: a trim larger than the journal, over unwritten space,
    /// leaves other unflushed writes to the model (here: never destaged,
    /// so all lost), as a small trim does.
    #[test]
    fn a_trim_larger_than_the_journal_keeps_other_writes_volatile() {
        for trim in [4096u64 << 4, 1 << 30] {
            let d = Durability::new(Box::new(MemoryStore::new(2 << 30)), true, 1 << 20);
            for i in 0..16u8 {
                d.write(&[i + 1; 4096], i as u64 * 4096, false).unwrap();
            }
            d.zero(1 << 30, trim, false, &never_destaged).unwrap();
            d.power_cut().unwrap();
            assert_eq!(d.stats().lost_writes, 17, "trim of {trim} B");
            assert_eq!(read(&d, 0, 1), vec![0], "trim of {trim} B");
        }
    }

    /// A memory store whose `sync` waits for the test to open it, and may
    /// fail.
    struct GatedSync {
        inner: MemoryStore,
        open: Mutex<(u64, bool)>,
        cv: Condvar,
        started: AtomicU64,
    }

    impl GatedSync {
        /// Let `n` more syncs through, failing them if `fail`.
        fn allow(&self, n: u64, fail: bool) {
            let mut g = self.open.lock().unwrap();
            *g = (g.0 + n, fail);
            self.cv.notify_all();
        }
    }

    impl Store for std::sync::Arc<GatedSync> {
        fn size(&self) -> u64 {
            self.inner.size()
        }
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.inner.read_at(buf, offset)
        }
        fn write_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
            self.inner.write_at(data, offset)
        }
        fn zero(&self, offset: u64, len: u64) -> io::Result<()> {
            self.inner.zero(offset, len)
        }
        fn sync(&self) -> io::Result<()> {
            self.started.fetch_add(1, Ordering::SeqCst);
            let mut g = self.open.lock().unwrap();
            while g.0 == 0 {
                g = self.cv.wait(g).unwrap();
            }
            g.0 -= 1;
            if g.1 {
                Err(io::Error::other("injected"))
            } else {
                Ok(())
            }
        }
        fn data_extents(&self, offset: u64, len: u64) -> io::Result<Vec<(u64, u64)>> {
            self.inner.data_extents(offset, len)
        }
        fn allocated_bytes(&self) -> u64 {
            self.inner.allocated_bytes()
        }
    }

    fn wait_until(what: &str, f: impl Fn() -> bool) {
        let t = std::time::Instant::now();
        while !f() {
            assert!(t.elapsed().as_secs() < 10, "timed out waiting for {what}");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn host_syncs_run_on_the_worker_and_cover_only_earlier_tickets() {
        let store = std::sync::Arc::new(GatedSync {
            inner: MemoryStore::new(1 << 20),
            open: Mutex::new((0, false)),
            cv: Condvar::new(),
            started: AtomicU64::new(0),
        });
        let d = std::sync::Arc::new(Durability::new(Box::new(store.clone()), true, 1 << 30));
        assert!(d.needs_host_sync());
        // Taking a ticket does not sync on the caller's thread.
        let t1 = d.sync_ticket();
        let t2 = d.sync_ticket();
        assert_eq!(store.started.load(Ordering::SeqCst), 0);
        let answered = std::sync::Arc::new(AtomicU64::new(0));
        let worker = {
            let (d, a) = (d.clone(), answered.clone());
            std::thread::spawn(move || {
                d.run_host_syncs(|| {
                    a.fetch_add(1, Ordering::SeqCst);
                })
            })
        };
        wait_until("the first sync", || {
            store.started.load(Ordering::SeqCst) == 1
        });
        // A ticket taken while a sync runs is not covered by it.
        let t3 = d.sync_ticket();
        assert_eq!(d.sync_state(t1), SyncState::Pending);
        store.allow(1, false);
        wait_until("the first answer", || answered.load(Ordering::SeqCst) == 1);
        // One sync answered both tickets taken before it started.
        assert_eq!(d.sync_state(t1), SyncState::Done);
        assert_eq!(d.sync_state(t2), SyncState::Done);
        assert_eq!(d.sync_state(t3), SyncState::Pending);
        store.allow(1, true);
        wait_until("the second answer", || answered.load(Ordering::SeqCst) == 2);
        assert_eq!(d.sync_state(t3), SyncState::Failed);
        assert_eq!(d.sync_state(t1), SyncState::Done);
        // Stopping waits for outstanding tickets.
        let t4 = d.sync_ticket();
        d.stop_host_syncs();
        store.allow(1, false);
        worker.join().unwrap();
        assert_eq!(d.sync_state(t4), SyncState::Done);
        assert_eq!(d.stats().host_syncs, 3);
        assert!(d.sync_ticket() > t4);
    }

    #[test]
    fn memory_store_needs_no_host_sync() {
        let d = Durability::new(Box::new(MemoryStore::new(1 << 20)), true, 1 << 30);
        assert!(!d.needs_host_sync());
        assert_eq!(d.sync_ticket(), 0);
        assert_eq!(d.sync_state(0), SyncState::Done);
    }
}
