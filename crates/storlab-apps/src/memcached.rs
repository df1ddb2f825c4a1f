//! memcached 1.4 under memtier_benchmark with NVMM as its memory
//! (docs/spec/nvmm.md: set:get 1:6 and 1:30, values of 10-500 bytes, 100,000
//! requests).
//!
//! memtier's connections (4 threads x 50 clients, its defaults) each keep
//! one request outstanding. A request: the client's CPU (building or
//! parsing the request, its send and receive); the memcached worker
//! thread that owns the connection (memcached's 4 worker threads, `-t 4`
//! by default; connections are dealt round-robin) reads and parses it;
//! under the global `cache_lock` (memcached 1.4's `items.c`/`assoc.c`) it
//! looks the key up in the hash table (the bucket's pointer, then one
//! item header per chain entry, each a dependent load), and for a set
//! allocates from the slab class and links the item (hash chain and LRU
//! list); the value is copied into the item (set, at the memory's
//! bandwidth) or out of it into the reply (get hit) outside the lock.
//!
//! Memory: on an NVMM device its parameters price the loads (L_READ per
//! exposed miss) and the copies (Th_BW); on any other device the PMEP's
//! DRAM (the `pdram` configuration's latency and bandwidth, no flushes:
//! memcached persists nothing). A load misses the CPU caches with the
//! share of memcached's data (items and hash table) that does not fit the
//! last-level cache.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;
use storlab_pmem::model::{NvmmParams, Preset};

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{MetricKind, Model, PlanCx, SetupCx, Step};

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "ratio",
        default: "1:6",
        help: "set:get ratio (docs/spec/nvmm.md: 1:6 and 1:30), as S:G",
    },
    ParamDef {
        name: "requests",
        default: "100000",
        help: "requests in all connections together (docs/spec/nvmm.md: 100,000)",
    },
    ParamDef {
        name: "client_threads",
        default: "4",
        help: "memtier threads (memtier_benchmark's default --threads=4; the study does not say otherwise)",
    },
    ParamDef {
        name: "clients",
        default: "50",
        help: "connections per memtier thread (memtier_benchmark's default --clients=50)",
    },
    ParamDef {
        name: "workers",
        default: "4",
        help: "memcached worker threads (memcached's default -t 4)",
    },
    ParamDef {
        name: "value_min",
        default: "10",
        help: "smallest value, bytes (docs/spec/nvmm.md: 10-500 bytes, uniform)",
    },
    ParamDef {
        name: "value_max",
        default: "500",
        help: "largest value, bytes (docs/spec/nvmm.md)",
    },
    ParamDef {
        name: "keys",
        default: "10000000",
        help: "key space, keys drawn uniformly (memtier's defaults --key-maximum=10000000, --key-pattern=R:R)",
    },
    ParamDef {
        name: "client_us",
        default: "8",
        help: "memtier's CPU per request, µs (ESTIMATE: a send and a receive system call on loopback TCP, ~3 µs each on 2013 Xeons, and libevent and protocol handling)",
    },
    ParamDef {
        name: "server_us",
        default: "6",
        help: "memcached's CPU per request outside its memory accesses, µs (ESTIMATE: libevent, read and sendmsg system calls on loopback TCP, the ASCII protocol's parsing)",
    },
    ParamDef {
        name: "llc",
        default: "20m",
        help: "last-level cache memcached's data competes for, bytes (docs/spec/nvmm.md: 40 MB on the PMEP's two sockets; one socket's 20 MB)",
    },
];

const MODELS: &[&str] = &[
    "memtier: client_threads x clients connections (200), each with one request outstanding; keys uniform over `keys`, values uniform from value_min to value_max; a set stores the key (a new item the first time), a get of a key never set misses",
    "each request: the client's CPU (client_us, on the host's cores); the connection's memcached worker (connection mod workers) handles it, one request at a time: server_us of CPU, then under the global cache_lock a hash lookup (the bucket pointer and each chain entry's header: dependent loads; chains hold items / buckets entries, the table doubling from 2^16 buckets when items exceed 1.5x buckets as assoc_expand does) and, for a set, the slab allocation and the item's links (3 dependent loads); outside the lock, the value's copy into the item (set) or out of it (get hit) at the memory's bandwidth",
    "memory costs: on NVMM the device's L_READ (floored at PMEP's DRAM latency) per exposed miss and Th_BW x DRAM bandwidth for copies; elsewhere PMEP's DRAM (the pdram configuration); a load misses the CPU caches with the share of the data (items with their 48-byte headers and slab rounding, and the hash table) above `llc`",
];

const SIMPLIFIES: &[&str] = &[
    "items never expire and memory never fills (100,000 requests of at most 500 bytes): no LRU eviction, no slab rebalancing",
    "the network is loopback CPU only (client_us, server_us): no NIC, no wire latency",
    "the hash table's expansion is instantaneous (memcached moves buckets in a background thread)",
    "the memory's bandwidth is not shared between concurrent copies (values under 500 bytes: 160 ns at 1/8 of DRAM bandwidth)",
    "the LLC model uses the expected share of misses (no per-line cache state)",
    "a get hit copies a value of the average size (the model does not keep each key's value size)",
];

/// `memcached`.
pub static APPS: &[&AppInfo] = &[&MEMCACHED];

static MEMCACHED: AppInfo = AppInfo {
    name: "memcached",
    summary: "memcached 1.4 under memtier (set:get 1:6 or 1:30) with NVMM as its memory",
    unit: "operations/s",
    models: MODELS,
    simplifies: SIMPLIFIES,
    calibration: "none (no Table V figure for memcached): client_us and server_us are ESTIMATEs; memory costs come from the device's NVMM parameters",
    params: PARAMS,
    build,
};

/// memcached's item header (`item` in memcached.h, 64-bit, with CAS): 48
/// bytes.
const ITEM_HEADER: u64 = 48;
/// Slab classes grow by a factor of 1.25 (memcached's default -f): an
/// item wastes ~12 % of its chunk on average (ESTIMATE: half a step).
const SLAB_WASTE: f64 = 1.12;
/// Initial hash power (memcached's default `hashpower` 16).
const HASHPOWER: u32 = 16;
/// memtier's keys: "memtier-" + the number, ~16 bytes.
const KEY_BYTES: u64 = 16;
/// Dependent loads of a set's allocation and links (slab free list, LRU
/// head, hash chain head).
const SET_LINKS: u64 = 3;
/// Cache line, bytes.
const LINE: u64 = 64;

fn build(p: &Params) -> Result<AppKind, AppError> {
    let ratio = p.str("ratio");
    let (s, g) = ratio
        .split_once(':')
        .and_then(|(a, b)| Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?)))
        .filter(|&(a, b)| a + b > 0 && a <= 1_000_000 && b <= 1_000_000)
        .ok_or_else(|| p.bad("ratio", "expected SETS:GETS, two whole numbers (1:6, 1:30)"))?;
    let value_min = p.u64("value_min", 1, 1 << 20)?;
    let value_max = p.u64("value_max", value_min, 1 << 20)?;
    let keys = p.scaled(p.u64("keys", 1, 1 << 34)?, 1);
    let us = |name: &str| -> Result<u64, AppError> {
        let v = p.f64(name)?;
        if !(0.0..=1e7).contains(&v) {
            return Err(p.bad(name, "must be from 0 to 10,000,000"));
        }
        Ok((v * 1000.0).round() as u64)
    };
    let client_threads = p.u64("client_threads", 1, 1024)?;
    let clients = p.u64("clients", 1, 4096)?;
    let conns = p.threads((client_threads * clients).min(4096) as u32);
    Ok(AppKind::Closed(Box::new(Memcached {
        set_share: s as f64 / (s + g) as f64,
        requests: p.u64("requests", 1, 1 << 40)?,
        started: 0,
        conns,
        workers: p.u64("workers", 1, 1024)? as u32,
        value_min,
        value_max,
        keys,
        present: vec![0; keys.div_ceil(64) as usize],
        items: 0,
        item_bytes: 0,
        client_ns: us("client_us")?,
        server_ns: us("server_us")?,
        llc: p.u64("llc", 0, 1 << 40)?,
        mem: NvmmParams::preset(Preset::Pdram),
        on_nvmm: false,
        rng: Pcg64Mcg::seed_from_u64(0),
        hits: 0,
        gets: 0,
        line_misses: 0.0,
    })))
}

struct Memcached {
    set_share: f64,
    requests: u64,
    started: u64,
    conns: u32,
    workers: u32,
    value_min: u64,
    value_max: u64,
    keys: u64,
    /// Keys stored, one bit each.
    present: Vec<u64>,
    items: u64,
    /// Bytes of items in slab chunks.
    item_bytes: u64,
    client_ns: u64,
    server_ns: u64,
    llc: u64,
    mem: NvmmParams,
    on_nvmm: bool,
    rng: Pcg64Mcg,
    hits: u64,
    gets: u64,
    line_misses: f64,
}

impl Memcached {
    /// Hash buckets: 2^16, doubled whenever items exceed 1.5x buckets
    /// (assoc.c's `assoc_expand`).
    fn buckets(&self) -> u64 {
        let mut hp = HASHPOWER;
        while self.items as f64 > 1.5 * (1u64 << hp) as f64 && hp < 40 {
            hp += 1;
        }
        1 << hp
    }

    /// Share of loads that miss the CPU caches.
    fn miss_share(&self) -> f64 {
        let data = self.item_bytes + self.buckets() * 8;
        if data <= self.llc {
            0.0
        } else {
            1.0 - self.llc as f64 / data as f64
        }
    }

    /// `n` dependent loads, ns.
    fn loads(&mut self, n: f64) -> u64 {
        let share = self.miss_share();
        self.line_misses += n * share;
        (n * share * self.mem.read_latency_ns()).round() as u64
    }

    /// Copy of `bytes` in or out of an item, ns: its first line's miss
    /// exposed, the bytes at the memory's bandwidth.
    fn copy(&mut self, bytes: u64, store: bool) -> u64 {
        let share = self.miss_share();
        if store {
            self.mem.write_ns(bytes)
        } else {
            self.line_misses += bytes.div_ceil(LINE) as f64 * share;
            (share * self.mem.read_latency_ns()).round() as u64 + self.mem.read_ns(bytes, 0)
        }
    }
}

impl Model for Memcached {
    fn op_names(&self) -> &'static [&'static str] {
        &["get", "set"]
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.conns, 0)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x6d656d63);
        if let Some(n) = cx.nvmm() {
            self.mem = n.clone();
            self.on_nvmm = true;
        }
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if self.started >= self.requests {
            return Ok(false);
        }
        self.started += 1;
        let set = self.rng.gen_bool(self.set_share);
        let key = self.rng.gen_range(0..self.keys);
        let worker = 1 + t % self.workers;
        cx.push(Step::Cpu(self.client_ns));
        cx.push(Step::Lock(worker));
        cx.push(Step::Cpu(self.server_ns));
        // the hash lookup under cache_lock: the bucket's pointer, then the
        // chain's entries (half of them before a hit, all of them on a miss)
        let present = self.present[(key / 64) as usize] >> (key % 64) & 1 == 1;
        let chain = self.items as f64 / self.buckets() as f64;
        let walked = 1.0 + if present { 1.0 + chain / 2.0 } else { chain };
        let mut locked = self.loads(walked);
        let mut outside = 0;
        if set {
            let value = self.rng.gen_range(self.value_min..=self.value_max);
            locked += self.loads(SET_LINKS as f64);
            outside += self.copy(value + KEY_BYTES, true);
            if !present {
                self.present[(key / 64) as usize] |= 1 << (key % 64);
                self.items += 1;
                self.item_bytes +=
                    ((ITEM_HEADER + KEY_BYTES + value) as f64 * SLAB_WASTE).round() as u64;
            }
        } else {
            self.gets += 1;
            if present {
                self.hits += 1;
                let avg = (self.value_min + self.value_max) / 2;
                outside += self.copy(avg, false);
            }
        }
        cx.push(Step::Lock(0));
        if locked > 0 {
            cx.push(Step::Mem(locked));
        }
        cx.push(Step::Unlock(0));
        if outside > 0 {
            cx.push(Step::Mem(outside));
        }
        cx.push(Step::Unlock(worker));
        cx.push(Step::End(set as u16));
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        json!({
            "memory": if self.on_nvmm { "nvmm" } else { "dram (pdram's latency and bandwidth)" },
            "items": self.items,
            "item_bytes": self.item_bytes,
            "hash_buckets": self.buckets(),
            "get_hit_ratio": self.hits as f64 / self.gets.max(1) as f64,
            "llc_miss_share": self.miss_share(),
            "line_misses": self.line_misses,
        })
    }
}
