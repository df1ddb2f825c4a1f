//! Durability as the emulated device has it, and emulated power cuts.
//!
//! The store always holds the latest image (what reads return). For a
//! device with a volatile write cache, a journal keeps, for every write
//! since the last durable point, the bytes it overwrote (undo) and, for FUA
//! writes, the bytes it wrote (redo). Writes are numbered in the order they
//! were applied.
//!
//! - A FUA write becomes durable when its reply is released.
//! - A flush, when its reply is released, makes durable every write applied
//!   before the flush arrived (the NBD rule: writes replied to before the
//!   flush must be durable; writes racing with it may be).
//! - A power cut undoes every journalled write newest first (back to the
//!   last point before which everything is durable), then redoes the
//!   durable FUA writes oldest first. What remains is exactly the durable
//!   image; the server keeps serving it.
//!
//! A device without a volatile cache loses nothing: writes are durable when
//! applied and no journal is kept. The journal is bounded
//! ([`Durability::new`]'s `limit`): past it the oldest writes are treated
//! as written back, as a real cache destages when full (counted in
//! [`DurabilityStats::destaged_writes`]).
//!
//! For a file store, FLUSH and FUA also `fdatasync` the host file, and a
//! clean shutdown syncs it, so nothing acknowledged is lost on the host
//! either.

use std::collections::VecDeque;
use std::io;
use std::sync::Mutex;

use crate::store::Store;

/// Sequence number of an applied write (0: not journalled).
pub type WriteSeq = u64;

enum Redo {
    Data(Vec<u8>),
    Zero,
}

struct Record {
    seq: WriteSeq,
    offset: u64,
    len: u64,
    /// Data extents of the overwritten range (the rest was zeros).
    undo: Vec<(u64, Vec<u8>)>,
    redo: Option<Redo>,
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
    /// Writes treated as written back because the journal was full.
    pub destaged_writes: u64,
    /// Writes in the journal now (not yet durable).
    pub volatile_writes: u64,
}

/// The store plus the durability rules of the emulated device.
pub struct Durability {
    store: Box<dyn Store>,
    volatile: bool,
    limit: u64,
    journal: Mutex<Journal>,
    stats: Mutex<DurabilityStats>,
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
        }
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

    /// Counters so far.
    pub fn stats(&self) -> DurabilityStats {
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
        s.volatile_writes = self.journal().records.len() as u64;
        s
    }

    /// Read `buf.len()` bytes at `offset`.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.store.read_at(buf, offset)
    }

    /// Write `data` at `offset`; with `fua`, also sync the host. Returns the
    /// write's sequence number for [`Durability::fua_released`].
    pub fn write(&self, data: &[u8], offset: u64, fua: bool) -> io::Result<WriteSeq> {
        let redo = if fua {
            Some(Redo::Data(data.to_vec()))
        } else {
            None
        };
        let seq = self.mutate(offset, data.len() as u64, redo, |s| {
            s.write_at(data, offset)
        })?;
        if fua {
            self.store.sync()?;
        }
        Ok(seq)
    }

    /// Zero `[offset, offset + len)` (trim or write-zeroes).
    pub fn zero(&self, offset: u64, len: u64, fua: bool) -> io::Result<WriteSeq> {
        let redo = if fua { Some(Redo::Zero) } else { None };
        let seq = self.mutate(offset, len, redo, |s| s.zero(offset, len))?;
        if fua {
            self.store.sync()?;
        }
        Ok(seq)
    }

    fn mutate(
        &self,
        offset: u64,
        len: u64,
        redo: Option<Redo>,
        apply: impl FnOnce(&dyn Store) -> io::Result<()>,
    ) -> io::Result<WriteSeq> {
        if !self.volatile {
            apply(self.store.as_ref())?;
            return Ok(0);
        }
        let mut j = self.journal();
        let extents = self.store.data_extents(offset, len)?;
        let undo_bytes: u64 = extents.iter().map(|e| e.1).sum();
        let redo_bytes = match &redo {
            Some(Redo::Data(d)) => d.len() as u64,
            _ => 0,
        };
        // Count the range itself too: the journal stands for the device's
        // cache, which holds every byte written until it is destaged.
        let bytes = len + undo_bytes + redo_bytes + 64;
        if bytes > self.limit {
            // Bigger than the whole cache (a huge trim, say): everything
            // before is written back and this goes straight to the medium.
            let n = j.records.len() as u64;
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
            offset,
            len,
            undo,
            redo,
            durable: false,
            bytes,
        });
        j.bytes += bytes;
        while j.bytes > self.limit {
            let Some(r) = j.records.pop_front() else {
                break;
            };
            j.bytes -= r.bytes;
            j.destaged += 1;
        }
        Ok(seq)
    }

    /// A flush arrived: sync the host and return the point it covers (pass
    /// it to [`Durability::flush_released`] when the reply goes out).
    pub fn flush_arrived(&self) -> io::Result<WriteSeq> {
        let upto = self.journal().next;
        self.store.sync()?;
        Ok(upto)
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

    /// A FUA write's reply was released: it is durable.
    pub fn fua_released(&self, seq: WriteSeq) {
        if seq == 0 {
            return;
        }
        let mut j = self.journal();
        if let Some(r) = j.records.iter_mut().find(|r| r.seq == seq) {
            r.durable = true;
        }
        j.trim_front();
    }

    /// Emulated power cut: the store goes back to the durable image. The
    /// caller must stop all other use of the store while this runs.
    pub fn power_cut(&self) -> io::Result<()> {
        let mut j = self.journal();
        let records: Vec<Record> = j.records.drain(..).collect();
        j.bytes = 0;
        let destaged = std::mem::take(&mut j.destaged);
        let (mut lost, mut lost_bytes) = (0, 0);
        for r in records.iter().rev() {
            self.store.zero(r.offset, r.len)?;
            for (o, data) in &r.undo {
                self.store.write_at(data, *o)?;
            }
        }
        for r in &records {
            match (&r.redo, r.durable) {
                (Some(Redo::Data(d)), true) => self.store.write_at(d, r.offset)?,
                (Some(Redo::Zero), true) => self.store.zero(r.offset, r.len)?,
                _ => {
                    lost += 1;
                    lost_bytes += r.len;
                }
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
        let upto = d.flush_arrived().unwrap();
        d.write(&[2; 4096], 4096, false).unwrap(); // races with the flush
        d.flush_released(upto);
        d.write(&[3; 4096], 0, false).unwrap(); // unflushed overwrite
        let f = d.write(&[4; 100], 8192, true).unwrap();
        d.fua_released(f);
        d.write(&[5; 50], 8192, false).unwrap(); // unflushed over the FUA write
        d.zero(0, 100, false).unwrap();
        d.power_cut().unwrap();
        assert_eq!(read(&d, 0, 4096), vec![1; 4096]);
        assert_eq!(read(&d, 4096, 4096), vec![0; 4096]);
        assert_eq!(read(&d, 8192, 100), vec![4; 100]);
        let s = d.stats();
        assert_eq!((s.power_cuts, s.lost_writes), (1, 4));
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
}
