//! The fault handler: one thread that reads userfaultfd messages, drives
//! the device model in wall-clock time and moves pages (see the crate
//! documentation for the policy).

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use storlab_emu::store::Store;
use storlab_emu::{Clock, ModelDriver, Released, WallClock};
use storlab_model::units::Bits;
use storlab_model::{DevRequest, Device, Nanos, Op};
use storlab_pmem::sys;

use crate::stats::{HybridStats, Latency};

/// Below this much time to the next device completion the handler polls
/// without sleeping (a timed sleep ends 15-60 µs late in a VM).
const SPIN_NS: Nanos = 60_000;
/// `UFFD_PAGEFAULT_FLAG_WP`: the fault was a write to a write-protected page.
const FLAG_WP: u64 = 1 << 1;
/// Messages read per `read(2)`.
const BATCH: usize = 64;

/// What the handler shares with [`crate::HybridMemory::stats`].
pub(crate) struct Shared {
    stats: HybridStats,
    fault_ns: Histogram<u64>,
    model_ns: Histogram<u64>,
}

impl Shared {
    pub(crate) fn new(dram_pages: u64) -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        Shared {
            stats: HybridStats {
                dram_pages,
                ..HybridStats::default()
            },
            fault_ns: h(),
            model_ns: h(),
        }
    }

    pub(crate) fn snapshot(&self) -> HybridStats {
        let mut s = self.stats.clone();
        s.fault_us = Latency::of(&self.fault_ns);
        s.model_read_us = Latency::of(&self.model_ns);
        s
    }
}

enum Job {
    Read { page: u64, fault_at: Nanos },
    Write,
}

pub(crate) struct Handler {
    uffd: OwnedFd,
    stop: OwnedFd,
    base: u64,
    page: u64,
    dram: u64,
    store: Box<dyn Store>,
    driver: ModelDriver<Job>,
    clock: WallClock,
    resident: Bits,
    on_device: Bits,
    inflight: Bits,
    resident_count: u64,
    inflight_count: u64,
    fifo: VecDeque<u64>,
    deferred: VecDeque<(u64, Nanos)>,
    next_id: u64,
    shared: Arc<Mutex<Shared>>,
    /// A page read from the store, to install.
    buf: Vec<u8>,
    /// A page being evicted (apart from `buf`: an install may evict).
    ebuf: Vec<u8>,
    cmp: Vec<u8>,
    zero: Vec<u8>,
    released: Vec<Released<Job>>,
}

impl Handler {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        uffd: OwnedFd,
        stop: OwnedFd,
        base: u64,
        page: u64,
        pages: u64,
        dram: u64,
        store: Box<dyn Store>,
        device: Box<dyn Device>,
        shared: Arc<Mutex<Shared>>,
    ) -> Self {
        Handler {
            uffd,
            stop,
            base,
            page,
            dram,
            store,
            driver: ModelDriver::new(device),
            clock: WallClock::new(std::time::Duration::from_millis(20)),
            resident: Bits::new(pages),
            on_device: Bits::new(pages),
            inflight: Bits::new(pages),
            resident_count: 0,
            inflight_count: 0,
            fifo: VecDeque::new(),
            deferred: VecDeque::new(),
            next_id: 0,
            shared,
            buf: vec![0; page as usize],
            ebuf: vec![0; page as usize],
            cmp: vec![0; page as usize],
            zero: vec![0; page as usize],
            released: Vec::new(),
        }
    }

    fn stats(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn addr(&self, p: u64) -> u64 {
        self.base + p * self.page
    }

    /// Wake the threads waiting on page `p` (they retry the access).
    fn wake(&self, p: u64) {
        // a failure leaves nobody waiting that a later wake would find
        let _ = sys::uffd_wake(self.uffd.as_raw_fd(), self.addr(p), self.page);
    }

    /// Put `data` in place at page `p` and wake its waiters, evicting
    /// first if DRAM is full.
    fn install(&mut self, p: u64, zero: bool) {
        while self.resident_count >= self.dram {
            match self.fifo.pop_front() {
                Some(v) => self.evict(v),
                None => break,
            }
        }
        let src = if zero {
            self.zero.as_ptr()
        } else {
            self.buf.as_ptr()
        };
        // SAFETY: `src` is one of our page-sized buffers.
        if unsafe { sys::uffd_copy(self.uffd.as_raw_fd(), self.addr(p), src, self.page) }.is_err() {
            // EEXIST: present already (cannot happen while we track
            // residency; waking is right either way)
            self.wake(p);
        }
        self.resident.set(p, true);
        self.resident_count += 1;
        self.fifo.push_back(p);
        let mut sh = self.stats();
        sh.stats.resident_peak = sh.stats.resident_peak.max(self.resident_count);
    }

    /// Move page `v` out of DRAM (see the crate documentation).
    fn evict(&mut self, v: u64) {
        let now = self.clock.now();
        // writers of the page now fault and wait
        let _ = sys::uffd_writeprotect(self.uffd.as_raw_fd(), self.addr(v), self.page, true);
        // SAFETY: the page is resident and write-protected: reading it
        // neither faults nor races a writer.
        let page =
            unsafe { std::slice::from_raw_parts(self.addr(v) as *const u8, self.page as usize) };
        self.ebuf.copy_from_slice(page);
        let off = v * self.page;
        let on_device = self.on_device.get(v);
        let same = if on_device {
            self.store.read_at(&mut self.cmp, off).is_ok() && self.cmp == self.ebuf
        } else {
            self.ebuf == self.zero
        };
        if same {
            let mut sh = self.stats();
            sh.stats.clean_evictions += 1;
            sh.stats.zero_evictions += u64::from(!on_device);
        } else {
            // the store must hold it before the page is dropped: on a
            // failure keep the page resident rather than lose it
            if self.store.write_at(&self.ebuf, off).is_err() {
                // unprotecting also wakes the waiting writers
                let _ =
                    sys::uffd_writeprotect(self.uffd.as_raw_fd(), self.addr(v), self.page, false);
                self.fifo.push_back(v);
                return;
            }
            self.on_device.set(v, true);
            let req = DevRequest::new(self.next_id, Op::Write, off, self.page);
            self.next_id += 1;
            self.driver.arrive(now, req, Job::Write, &mut self.released);
            self.stats().stats.device_writes += 1;
        }
        // SAFETY: discarding a page of our own mapping; its contents are in
        // the store (or are zeros), so the next access faults them back.
        unsafe {
            libc::madvise(
                self.addr(v) as *mut libc::c_void,
                self.page as usize,
                libc::MADV_DONTNEED,
            )
        };
        self.resident.set(v, false);
        self.resident_count -= 1;
        // writers blocked on the protection retry and fault the page in
        self.wake(v);
    }

    /// Take deferred faults while there is room (evicting as needed).
    fn admit(&mut self) {
        while let Some(&(p, fault_at)) = self.deferred.front() {
            if self.resident.get(p) {
                self.deferred.pop_front();
                self.wake(p);
                continue;
            }
            if self.inflight.get(p) {
                self.deferred.pop_front();
                continue;
            }
            // room for one more page, now or by evicting: else wait for
            // the reads in flight
            if self.resident_count + self.inflight_count >= self.dram && self.fifo.is_empty() {
                return;
            }
            self.deferred.pop_front();
            self.stats().stats.faults += 1;
            if !self.on_device.get(p) {
                self.stats().stats.zero_fills += 1;
                self.install(p, true);
                continue;
            }
            // the read enters the model at the fault's time, and the
            // eviction that makes its room runs while the device works
            self.inflight.set(p, true);
            self.inflight_count += 1;
            let req = DevRequest::new(self.next_id, Op::Read, p * self.page, self.page);
            self.next_id += 1;
            self.driver.arrive(
                fault_at,
                req,
                Job::Read { page: p, fault_at },
                &mut self.released,
            );
            while self.resident_count + self.inflight_count > self.dram {
                match self.fifo.pop_front() {
                    Some(v) => self.evict(v),
                    None => break,
                }
            }
            self.finish_released();
        }
    }

    /// Install the pages whose device reads are complete by now.
    fn release_due(&mut self) {
        let now = self.clock.now();
        self.driver.tick(now, &mut self.released);
        self.finish_released();
    }

    fn finish_released(&mut self) {
        let done: Vec<Released<Job>> = std::mem::take(&mut self.released);
        for r in done {
            if let Job::Read { page, fault_at } = r.job {
                // a missing store page reads as zeros; a failed read must
                // not install garbage: retry it from the top later
                if self.store.read_at(&mut self.buf, page * self.page).is_err() {
                    self.inflight.set(page, false);
                    self.inflight_count -= 1;
                    self.deferred.push_back((page, fault_at));
                    continue;
                }
                self.inflight.set(page, false);
                self.inflight_count -= 1;
                self.install(page, false);
                let t = self.clock.now();
                let mut sh = self.stats();
                sh.stats.device_reads += 1;
                let _ = sh.fault_ns.record(t.saturating_sub(fault_at).max(1));
                let _ = sh.model_ns.record(r.at.saturating_sub(r.arrival).max(1));
            }
        }
    }

    /// Read every message waiting and take the faults.
    fn read_messages(&mut self, msgs: &mut [u8]) {
        loop {
            // SAFETY: reading into our buffer of BATCH messages.
            let n = unsafe {
                libc::read(
                    self.uffd.as_raw_fd(),
                    msgs.as_mut_ptr() as *mut libc::c_void,
                    msgs.len(),
                )
            };
            if n <= 0 {
                return;
            }
            let now = self.clock.now();
            for m in msgs[..n as usize].chunks_exact(sys::UFFD_MSG_BYTES) {
                if m[0] != sys::UFFD_EVENT_PAGEFAULT {
                    continue;
                }
                let word =
                    |at: usize| u64::from_ne_bytes(m[at..at + 8].try_into().expect("8 bytes"));
                let flags = word(8);
                let addr = word(sys::UFFD_MSG_ADDRESS_OFFSET);
                if addr < self.base {
                    continue;
                }
                let p = (addr - self.base) / self.page;
                if flags & FLAG_WP != 0 {
                    // a writer that met an eviction: it retries (and
                    // faults the page in if it is gone)
                    self.stats().stats.write_protect_waits += 1;
                    self.wake(p);
                } else {
                    self.deferred.push_back((p, now));
                }
            }
            self.admit();
        }
    }

    pub(crate) fn run(mut self) {
        let mut msgs = vec![0u8; BATCH * sys::UFFD_MSG_BYTES];
        loop {
            let now = self.clock.now();
            let timeout = self.driver.next_due().map(|t| t.saturating_sub(now));
            let ts = timeout.map(|d| {
                let d = d.saturating_sub(SPIN_NS);
                libc::timespec {
                    tv_sec: (d / 1_000_000_000) as libc::time_t,
                    tv_nsec: (d % 1_000_000_000) as libc::c_long,
                }
            });
            let mut fds = [
                libc::pollfd {
                    fd: self.uffd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.stop.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let tsp = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: two valid pollfds; `tsp` is null or points at `ts`.
            let r = unsafe { libc::ppoll(fds.as_mut_ptr(), 2, tsp, std::ptr::null()) };
            if r > 0 && fds[1].revents != 0 {
                return;
            }
            if r > 0 && fds[0].revents != 0 {
                self.read_messages(&mut msgs);
            }
            self.release_due();
            self.admit();
        }
    }
}
