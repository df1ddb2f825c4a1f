//! Cached lines: their slots, the index that finds them, and the
//! least-recently-used order of the clean ones (the controller cache's
//! lines and the tier's blocks).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NIL: u32 = u32::MAX;

/// A fixed multiplicative hasher for line numbers (no random state).
#[derive(Default)]
struct LineHasher(u64);

impl Hasher for LineHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 31)
    }
}

/// One cached line (also a flash-cache block, `flash_cache.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line {
    pub(crate) line: u64,
    pub(crate) dirty: bool,
    pub(crate) destaging: bool,
    pub(crate) gen: u32,
    /// Clean lines: neighbours in the LRU list (oldest at the head).
    prev: u32,
    next: u32,
}

/// Cached lines: slots, an index, and the LRU list of clean lines. A
/// line keeps its slot while cached, so a cache on a device (`flash_cache.rs`)
/// uses the slot number as the line's place on that device.
#[derive(Default)]
pub(crate) struct LineStore {
    map: HashMap<u64, u32, BuildHasherDefault<LineHasher>>,
    pub(crate) slots: Vec<Line>,
    free: Vec<u32>,
    head: u32,
    tail: u32,
}

impl LineStore {
    pub(crate) fn new() -> Self {
        Self {
            head: NIL,
            tail: NIL,
            ..Default::default()
        }
    }
    pub(crate) fn len(&self) -> u64 {
        self.map.len() as u64
    }
    pub(crate) fn contains(&self, l: u64) -> bool {
        self.map.contains_key(&l)
    }
    pub(crate) fn get(&self, l: u64) -> Option<Line> {
        self.map.get(&l).map(|&s| self.slots[s as usize])
    }
    pub(crate) fn slot(&self, l: u64) -> Option<u32> {
        self.map.get(&l).copied()
    }
    pub(crate) fn unlink(&mut self, s: u32) {
        let Line { prev, next, .. } = self.slots[s as usize];
        if prev == NIL {
            self.head = next;
        } else {
            self.slots[prev as usize].next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            self.slots[next as usize].prev = prev;
        }
        self.slots[s as usize].prev = NIL;
        self.slots[s as usize].next = NIL;
    }
    pub(crate) fn push_tail(&mut self, s: u32) {
        self.slots[s as usize].prev = self.tail;
        self.slots[s as usize].next = NIL;
        if self.tail == NIL {
            self.head = s;
        } else {
            self.slots[self.tail as usize].next = s;
        }
        self.tail = s;
    }
    /// Most recently used: a clean line moves to the tail.
    pub(crate) fn touch(&mut self, l: u64) {
        if let Some(s) = self.slot(l) {
            if !self.slots[s as usize].dirty {
                self.unlink(s);
                self.push_tail(s);
            }
        }
    }
    /// Drop the least recently used clean line; which one, if any.
    pub(crate) fn evict(&mut self) -> Option<u64> {
        let s = self.head;
        if s == NIL {
            return None;
        }
        self.unlink(s);
        let l = self.slots[s as usize].line;
        self.map.remove(&l);
        self.free.push(s);
        Some(l)
    }
    pub(crate) fn insert(&mut self, l: u64, dirty: bool, gen: u32) -> u32 {
        let line = Line {
            line: l,
            dirty,
            destaging: false,
            gen,
            prev: NIL,
            next: NIL,
        };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = line;
                s
            }
            None => {
                self.slots.push(line);
                (self.slots.len() - 1) as u32
            }
        };
        self.map.insert(l, s);
        if !dirty {
            self.push_tail(s);
        }
        s
    }
    pub(crate) fn remove(&mut self, l: u64) {
        if let Some(s) = self.map.remove(&l) {
            if !self.slots[s as usize].dirty {
                self.unlink(s);
            }
            self.free.push(s);
        }
    }
}
