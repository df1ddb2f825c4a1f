//! A thread's accesses: the next page by pattern, computation, page
//! faults (minor and major), and swap-in read-ahead.

use rand::Rng;

use super::config::NONE;
use super::machine::{Frame, Machine, Phase, MY_BIT};
use super::workload::{MemReport, Pattern};

impl Machine<'_> {
    pub(super) fn next_access(&mut self, now: u64, t: u32) {
        let w = self.w;
        let th = &mut self.threads[t as usize];
        th.entered = false;
        th.reclaimed = false;
        if th.phase == Phase::Touch && th.n == w.pages_per_thread {
            th.phase = Phase::Random;
            th.n = 0;
            self.touched_done += 1;
            if self.touched_done == w.threads {
                // every thread has touched its part: the random phase starts
                self.rep.touch_ns = now;
                self.t0 = now;
                let keep_touch = self.rep.touch_ns;
                self.rep = MemReport {
                    touch_ns: keep_touch,
                    ..MemReport::default()
                };
                self.fault_ns_sum = 0;
                for u in 0..w.threads {
                    self.push(now, MY_BIT | u as u64);
                }
            }
            return;
        }
        let th = &mut self.threads[t as usize];
        if th.phase == Phase::Random && th.n == w.accesses {
            th.phase = Phase::Done;
            self.random_done += 1;
            self.rep.elapsed_ns = self.rep.elapsed_ns.max(now - self.t0);
            return;
        }
        if th.phase == Phase::Done {
            return;
        }
        let n = w.pages_per_thread;
        let mut store = w.write_fraction;
        let i = match (th.phase, w.pattern) {
            (Phase::Touch, _) | (_, Pattern::Sequential) => th.n % n,
            (_, p @ (Pattern::Adi { .. } | Pattern::Zigzag)) => p.sweep_index(th.n, n),
            (
                _,
                Pattern::Stream {
                    random,
                    region,
                    stream_store,
                },
            ) => {
                let r = ((region * n as f64).round() as u64).clamp(1, n);
                // the stream covers the rest, or the whole part
                let len = if r == n { n } else { n - r };
                if random > 0.0 && th.rng.gen::<f64>() < random {
                    th.rng.gen_range(n - r..n)
                } else {
                    store = stream_store;
                    th.stream += 1;
                    (th.stream - 1) % len
                }
            }
            (
                _,
                Pattern::Scatter {
                    random,
                    region,
                    fronts,
                },
            ) => {
                let r = ((region * n as f64).round() as u64).clamp(1, n);
                let len = if r == n { n } else { n - r };
                if random > 0.0 && th.rng.gen::<f64>() < random {
                    // the next page of a bucket chosen at random; the last
                    // bucket takes the pages left over
                    let f = (fronts as u64).clamp(1, r);
                    let b = th.rng.gen_range(0..f);
                    let size = r / f;
                    let pages = if b == f - 1 { r - b * size } else { size };
                    if th.fronts.len() < f as usize {
                        th.fronts.resize(f as usize, 0);
                    }
                    let at = th.fronts[b as usize];
                    th.fronts[b as usize] = at + 1;
                    n - r + b * size + at % pages
                } else {
                    store = 0.0;
                    th.stream += 1;
                    (th.stream - 1) % len
                }
            }
            (_, Pattern::Uniform) => th.rng.gen_range(0..n),
            (_, Pattern::Hot { pages, accesses }) => {
                let hot = ((pages * n as f64) as u64).clamp(1, n);
                if hot == n || th.rng.gen::<f64>() < accesses {
                    th.rng.gen_range(0..hot)
                } else {
                    th.rng.gen_range(hot..n)
                }
            }
        };
        th.write = th.phase == Phase::Touch
            || store >= 1.0
            || (store > 0.0 && th.rng.gen::<f64>() < store);
        th.page = (t as u64 * w.pages_per_thread + i) as u32;
        self.access(now, t);
    }

    /// The thread computes until its next event.
    pub(super) fn compute(&mut self, t: u32) {
        let th = &mut self.threads[t as usize];
        if !th.on_cpu {
            th.on_cpu = true;
            th.ipi_seen = self.shootdowns_total;
        }
    }

    /// The computation of thread `t`'s current access, ns: its CPU time
    /// or, if longer, its DRAM traffic's time at its share of the host's
    /// sustained bandwidth (`dram_bytes_per_s`), shared with every thread
    /// computing when it starts (itself included). A page visit of a
    /// streaming program (CG's matrix, IS's keys and buckets) moves its
    /// whole page: with enough DRAM, 16 threads each doing so in their
    /// CPU time would need more than the memory channels deliver.
    pub(super) fn visit_ns(&mut self, t: u32) -> u64 {
        let cpu = self.w.cpu_ns;
        let Some(bw) = self.cfg.dram_bytes_per_s else {
            return cpu;
        };
        if self.w.bytes_per_access == 0 {
            return cpu;
        }
        let th = &mut self.threads[t as usize];
        if !th.streaming {
            th.streaming = true;
            self.streaming += 1;
        }
        // a store's lines are read for ownership and written back
        let bytes = self.w.bytes_per_access as u128 * if th.write { 2 } else { 1 };
        // ceil(traffic / bw) > cpu exactly when traffic > cpu x bw: the
        // division only for a bound visit
        let traffic = bytes * self.streaming as u128 * 1_000_000_000;
        if traffic > cpu as u128 * bw as u128 {
            self.rep.bandwidth_bound += 1;
            traffic.div_ceil(bw as u128) as u64
        } else {
            cpu
        }
    }

    /// A thread's event: after computing, first the IPIs it took meanwhile.
    pub(super) fn thread_event(&mut self, now: u64, t: u32) {
        let total = self.shootdowns_total;
        let ipi = self.cfg.tlb_ipi_ns;
        let th = &mut self.threads[t as usize];
        if th.streaming {
            // its access's computation is over
            th.streaming = false;
            self.streaming -= 1;
        }
        let th = &mut self.threads[t as usize];
        if th.on_cpu {
            let d = total - th.ipi_seen;
            th.ipi_seen = total;
            if d > 0 && ipi > 0 {
                let lost = d.saturating_mul(ipi);
                self.rep.ipi_ns = self.rep.ipi_ns.saturating_add(lost);
                self.push(now.saturating_add(lost), MY_BIT | t as u64);
                return;
            }
        }
        th.on_cpu = false;
        self.access(now, t);
    }

    pub(super) fn finish_access(&mut self, at: u64, t: u32) {
        self.compute(t);
        let th = &mut self.threads[t as usize];
        th.n += 1;
        if th.phase == Phase::Random {
            self.rep.accesses += 1;
        }
        th.page = NONE;
        self.push(at, MY_BIT | t as u64);
    }

    /// The thread's current access (or its retry after a wait).
    fn access(&mut self, now: u64, t: u32) {
        let th = &self.threads[t as usize];
        if th.phase == Phase::Done {
            return;
        }
        if th.page == NONE {
            self.next_access(now, t);
            return;
        }
        if th.phase == Phase::Random && self.touched_done < self.w.threads {
            // the random phase waits for every thread's touch
            return;
        }
        let p = th.page;
        let entered = th.entered;
        if !th.batch.is_empty() {
            // after a direct reclaim's CPU time: its writes go out
            let b = std::mem::take(&mut self.threads[t as usize].batch);
            let b = self.write_batch(now, t, b);
            self.threads[t as usize].batch = b;
        }
        let f = self.page_frame[p as usize];
        if f != NONE {
            let fr = self.frames[f as usize];
            if fr.reading {
                self.read_waiters.push((f, t));
                return;
            }
            if fr.mapped {
                self.map(f, t);
                let c = self.access_ns + self.visit_ns(t);
                self.finish_access(now + c, t);
                return;
            }
            // minor fault: the page is in the swap cache
            if !entered {
                self.enter(now, t);
                return;
            }
            self.rep.minor_faults += 1;
            self.map(f, t);
            let c = self.cfg.swapcache_ns + self.cfg.map_ns + self.access_ns + self.visit_ns(t);
            self.finish_access(now + c, t);
            return;
        }
        if !entered {
            self.enter(now, t);
            return;
        }
        let Some(nf) = self.take_frame(now, t) else {
            return;
        };
        let slot = self.page_slot[p as usize];
        if slot == NONE {
            // first touch: a zeroed page
            self.frames[nf as usize] = Frame {
                page: p,
                slot: NONE,
                ..Frame::default()
            };
            self.page_frame[p as usize] = nf;
            self.map(nf, t);
            let c = self.cfg.zero_page_ns + self.cfg.map_ns + self.access_ns + self.visit_ns(t);
            self.finish_access(now + c, t);
            return;
        }
        // major fault: swap-in with read-ahead (the swap-cache lookup was
        // paid with the entry)
        self.install_reading(nf, p, slot, false);
        let (lo, hi) = self.readahead_window(slot);
        // read_swap_cache_async in ascending order; pages only above min
        let mut run_start = NONE;
        for s in lo..=hi {
            let need = if s == slot {
                true
            } else {
                let q = self.slot_owner[s as usize];
                if self.page_frame[q as usize] == NONE && self.free.len() > self.min {
                    let f = self.free.pop().expect("above min");
                    self.install_reading(f, q, s, true);
                    true
                } else {
                    false
                }
            };
            if need && run_start == NONE {
                run_start = s;
            }
            if (!need || s == hi) && run_start != NONE {
                let end = if need { s + 1 } else { s };
                self.submit_run(now, t, false, run_start, end - run_start, slot);
                run_start = NONE;
            }
        }
        self.wake_kswapd(now);
    }

    /// Fault entry; a page on swap is also looked up in the swap cache.
    fn enter(&mut self, now: u64, t: u32) {
        self.compute(t);
        let th = &mut self.threads[t as usize];
        th.entered = true;
        th.fault_start = now;
        let p = th.page as usize;
        let mut c = self.cfg.fault_ns;
        if self.page_frame[p] == NONE && self.page_slot[p] != NONE {
            c += self.cfg.swapcache_ns;
        }
        self.push(now + c, MY_BIT | t as u64);
    }

    fn install_reading(&mut self, f: u32, p: u32, s: u32, ahead: bool) {
        self.frames[f as usize] = Frame {
            page: p,
            slot: s,
            reading: true,
            ahead,
            ..Frame::default()
        };
        self.page_frame[p as usize] = f;
    }

    /// `valid_swaphandles`: the contiguous slots in use around `slot`
    /// within its aligned window of 2^page_cluster.
    fn readahead_window(&self, slot: u32) -> (u32, u32) {
        let size = 1u32 << self.cfg.page_cluster;
        let base = slot & !(size - 1);
        let end = (base + size).min(self.slot_owner.len() as u32);
        let mut hi = slot;
        while hi + 1 < end && self.slot_owner[(hi + 1) as usize] != NONE {
            hi += 1;
        }
        let mut lo = slot;
        while lo > base && self.slot_owner[(lo - 1) as usize] != NONE {
            lo -= 1;
        }
        (lo, hi)
    }
}
