//! Zoned flash (issue 63): the ZN540-class drive's zone rules, the errors
//! it returns in fio's `error` field, fio's zonemode=zbd host handling
//! with its open-zone limit, and write amplification 1.0 when the host
//! resets whole zones.

mod common;

use common::counter;

use storlab_sim::stats::JobStats;

const MIB: u64 = 1 << 20;

fn jobs(overrides: &[String], fio: &[&str]) -> Vec<JobStats> {
    common::jobs("zn540", overrides, fio)
}

/// zn540 shrunk: `zones` zones of 64 MiB with 32 MiB writable, blocks of
/// 64 pages (1 MiB, so a zone fills one block on each of the 32 planes),
/// `blocks` a plane. The open and active limits stay the preset's (14).
fn small(zones: u64, blocks: u64) -> Vec<String> {
    vec![
        format!("device.capacity_bytes={}", zones * 64 * MIB),
        format!("ssd.zns.zone_bytes={}", 64 * MIB),
        format!("ssd.zns.zone_capacity_bytes={}", 32 * MIB),
        format!("ssd.nand.blocks_per_plane={blocks}"),
        "ssd.nand.pages_per_block=64".to_string(),
    ]
}

#[test]
fn zbd_random_writes_keep_to_the_drives_open_zone_limit() {
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=zr",
            "--rw=randwrite",
            "--bs=16k",
            "--iodepth=8",
            "--ioengine=libaio",
            "--direct=1",
            "--zonemode=zbd",
            "--io_size=256m",
        ],
    )[0];
    assert_eq!(j.error, 0, "{:?}", j.error_detail);
    assert_eq!(j.dirs[1].io_bytes(), 256 * MIB);
    // fio's write-zone set reached the drive's limit and never passed it
    assert_eq!(counter(j, "zone_open_max_seen"), 14.0);
    assert_eq!(counter(j, "zone_errors"), 0.0);
}

#[test]
fn a_max_open_zones_above_the_drives_is_fios_einval() {
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=zr",
            "--rw=randwrite",
            "--bs=16k",
            "--zonemode=zbd",
            "--max_open_zones=20",
            "--io_size=16m",
        ],
    )[0];
    assert_eq!(j.error, 22);
    let detail = j.error_detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("max_open_zones (20) is larger than max (14)"),
        "{detail}"
    );
    assert_eq!(j.dirs[1].io_bytes(), 0);
    // a limit within the drive's runs
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=zr",
            "--rw=randwrite",
            "--bs=16k",
            "--zonemode=zbd",
            "--max_open_zones=4",
            "--io_size=64m",
        ],
    )[0];
    assert_eq!(j.error, 0);
    assert_eq!(counter(j, "zone_open_max_seen"), 4.0);
}

#[test]
fn writes_that_break_the_zone_rules_get_the_drives_error() {
    // random writes without zonemode=zbd: not at the write pointer, Zone
    // Invalid Write, which Linux returns as EIO
    let j = &jobs(
        &small(64, 128),
        &["--name=r", "--rw=randwrite", "--bs=4k", "--size=256m"],
    )[0];
    assert_eq!(j.error, 5, "{:?}", j.error_detail);
    assert!(j
        .error_detail
        .as_deref()
        .unwrap()
        .contains("Input/output error"));
    // 4 KiB at the start of one zone after another: the fifteenth zone
    // would be the fifteenth active one, Too Many Active Zones (EOVERFLOW)
    let j = &jobs(
        &small(64, 128),
        &[
            "--name=z",
            "--rw=write",
            "--bs=4k",
            "--zonemode=strided",
            "--zonesize=4k",
            "--zonerange=64m",
            "--size=4g",
        ],
    )[0];
    assert_eq!(j.error, 75, "{:?}", j.error_detail);
    assert_eq!(j.dirs[1].io_bytes(), 14 * 4096);
}

#[test]
fn whole_zone_resets_keep_write_amplification_at_one() {
    // 1 GiB of zone capacity on 2 GiB of flash, written six times over in
    // sequence: fio resets each zone before it writes it again, and the
    // drive erases whole blocks without moving a page
    let j = &jobs(
        &small(32, 64),
        &[
            "--name=zs",
            "--rw=write",
            "--bs=128k",
            "--iodepth=4",
            "--ioengine=libaio",
            "--direct=1",
            "--zonemode=zbd",
            "--io_size=6g",
        ],
    )[0];
    assert_eq!(j.error, 0, "{:?}", j.error_detail);
    assert!(counter(j, "zone_resets") >= 150.0);
    assert!(counter(j, "erases") > 1000.0, "{}", counter(j, "erases"));
    assert_eq!(counter(j, "gc_units_moved"), 0.0);
    assert_eq!(counter(j, "write_amplification"), 1.0);
}

/// What a thread issued and completed, in the engine's order.
#[derive(Default)]
struct Quiesce {
    outstanding: u32,
    after_reset: bool,
    resets: u32,
    /// Requests issued with others in flight.
    overlapped: u32,
    /// Resets, or requests after a reset, issued with others in flight.
    violations: Vec<String>,
}

struct Watch(std::rc::Rc<std::cell::RefCell<Quiesce>>);

impl storlab_sim::engine::IoObserver for Watch {
    fn issued(&mut self, at: u64, io: &storlab_sim::engine::IoReq) {
        let mut q = self.0.borrow_mut();
        let reset = io.op == storlab_model::Op::Trim;
        if (reset || q.after_reset) && q.outstanding > 0 {
            let what = if reset {
                "reset"
            } else {
                "request after a reset"
            };
            let n = q.outstanding;
            q.violations
                .push(format!("{what} at {at} ns with {n} in flight"));
        }
        if q.outstanding > 0 {
            q.overlapped += 1;
        }
        q.resets += reset as u32;
        q.after_reset = reset;
        q.outstanding += 1;
    }
    fn completed(&mut self, _: u64, _: storlab_model::Op, _: u64, _: u64, _: u64, _: u64) {
        self.0.borrow_mut().outstanding -= 1;
    }
    fn finished(&mut self, _: u64) {}
}

#[test]
fn a_zone_reset_waits_for_the_threads_io_in_flight_as_fio_does() {
    // a sequential job at depth 16 over 4 zones: fio resets each full
    // zone before writing it again, and waits for its writes in flight
    // first (zbd.c, io_u_quiesce)
    use storlab_model::config::PresetStore;
    use storlab_model::host::Host;
    use storlab_model::SystemConfig;
    use storlab_sim::engine::{Engine, ThreadPlan};
    use storlab_workload::gen::JobThread;
    let (_, cfg) =
        SystemConfig::load(&PresetStore::default(), "zn540", &small(64, 128)).expect("preset");
    let args: Vec<String> = [
        "--name=q",
        "--rw=write",
        "--bs=64k",
        "--iodepth=16",
        "--ioengine=libaio",
        "--zonemode=zbd",
        "--size=256m",
        "--io_size=384m",
    ]
    .map(String::from)
    .to_vec();
    let jobs = storlab_workload::fio::parse_cli_args(&args).expect("parses");
    let j = &jobs.jobs[0];
    let dev = cfg.build_device().expect("device");
    let cap = dev.capacity();
    let gen = JobThread::new(j, 0, cap, 1).expect("thread");
    let source = storlab_sim::zbd::ZbdSource::new(
        &cfg,
        j,
        gen,
        cap,
        None,
        &mut storlab_sim::zbd::Tables::new(),
    )
    .expect("zoned source");
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Quiesce::default()));
    let mut plan = ThreadPlan::new(Box::new(source), 16, JobStats::new("q", 0));
    plan.observer = Some(Box::new(Watch(seen.clone())));
    let mut engine = Engine::new(Host::new(cfg.host.clone(), dev, 1));
    let stats = engine
        .run_group(vec![plan], 0, &mut |_, _| {})
        .expect("runs");
    assert_eq!(stats[0].error, 0, "{:?}", stats[0].error_detail);
    let q = seen.borrow();
    // the 256 MiB range is 4 zones of 32 MiB capacity: 384 MiB writes
    // them three times over, each full zone reset before its next pass
    assert_eq!(q.resets, 8);
    assert!(q.violations.is_empty(), "{:?}", q.violations);
    // the job otherwise keeps its depth
    assert!(q.overlapped > 1000, "{}", q.overlapped);
}

#[test]
fn a_zoned_job_starts_from_the_drives_zone_report() {
    // a fill writes 2.5 zones; a later (stonewalled) zbd reader reads what
    // it wrote, and a later sequential zbd writer, landing in the first
    // (full) zone, resets it and writes it and the next afresh, as fio's
    // zbd, which reads the drive's zone report when a job starts, does
    // (from empty zones, the reader found nothing to read and the writer's
    // first write hit a full zone: EIO)
    let out = jobs(
        &small(16, 64),
        &[
            "--direct=1",
            "--zonemode=zbd",
            "--offset=0",
            "--size=512m",
            "--name=fill",
            "--rw=write",
            "--bs=64k",
            "--io_size=80m",
            "--name=reader",
            "--stonewall",
            "--rw=randread",
            "--bs=4k",
            "--number_ios=500",
            "--name=more",
            "--stonewall",
            "--rw=write",
            "--bs=64k",
            "--io_size=64m",
        ],
    );
    let [fill, reader, more] = &out[..] else {
        panic!("three jobs, got {}", out.len());
    };
    for j in [fill, reader, more] {
        assert_eq!(j.error, 0, "{}: {:?}", j.name, j.error_detail);
    }
    assert_eq!(fill.dirs[1].io_bytes(), 80 * MIB);
    assert_eq!(reader.dirs[0].io_bytes(), 500 * 4096);
    assert_eq!(more.dirs[1].io_bytes(), 64 * MIB);
    // the drive saw no rule broken, and two zones reset (the counters are
    // the drive's, over the run)
    assert_eq!(counter(more, "zone_errors"), 0.0);
    assert_eq!(counter(more, "zone_resets"), 2.0);
}

#[test]
fn concurrent_zbd_jobs_share_the_zones_and_their_writes_reach_each_zone_in_order() {
    // fio keeps one zone table per device, shared by its jobs: four
    // sequential writers write the same zones (before, each started at the
    // first zone's write pointer as if it were alone: Zone Invalid Write).
    // Sixteen random writers at depth 8 on two cores share the open
    // zones; a write that overtakes an earlier one to its zone in the
    // stack waits for it at the device's door (Linux's zone write
    // ordering), so none reaches the drive off its write pointer
    let seq = jobs(
        &small(64, 128),
        &[
            "--name=s",
            "--rw=write",
            "--bs=64k",
            "--direct=1",
            "--zonemode=zbd",
            "--numjobs=4",
            "--io_size=48m",
        ],
    );
    assert_eq!(seq.len(), 4);
    for j in &seq {
        assert_eq!(j.error, 0, "{:?}", j.error_detail);
        assert_eq!(j.dirs[1].io_bytes(), 48 * MIB);
    }
    assert_eq!(counter(&seq[0], "zone_errors"), 0.0);
    let mut ov = small(64, 128);
    ov.push("host.cores=2".into());
    let rnd = jobs(
        &ov,
        &[
            "--name=r",
            "--rw=randwrite",
            "--bs=4k",
            "--direct=1",
            "--zonemode=zbd",
            "--ioengine=libaio",
            "--iodepth=8",
            "--numjobs=16",
            "--io_size=8m",
        ],
    );
    assert_eq!(rnd.len(), 16);
    let mut held = 0;
    for j in &rnd {
        assert_eq!(j.error, 0, "{:?}", j.error_detail);
        assert_eq!(j.dirs[1].io_bytes(), 8 * MIB);
        held += j.dirs[1]
            .breakdown_sum()
            .get(storlab_model::Component::SchedulerWait);
    }
    assert_eq!(counter(&rnd[0], "zone_errors"), 0.0);
    assert!(counter(&rnd[0], "zone_open_max_seen") <= 14.0);
    assert!(held > 0, "no write waited for an earlier one to its zone");
}

#[test]
fn a_read_past_a_zones_capacity_still_moves_its_bytes_to_the_host() {
    // zone 0 is unwritten: its first 32 MiB (within the capacity) are
    // answered from the mapping table, its last 32 MiB (past the capacity)
    // hold nothing at all; either way the drive returns zeros, and the
    // zeros cross the link, so both reads take the link's time
    let read = |offset: &str| {
        jobs(
            &small(4, 128),
            &[
                "--name=r",
                "--rw=read",
                "--bs=128k",
                "--iodepth=16",
                "--ioengine=libaio",
                "--direct=1",
                &format!("--offset={offset}"),
                "--size=32m",
            ],
        )[0]
        .clone()
    };
    let within = read("0");
    let past = read("32m");
    assert_eq!(within.error, 0);
    assert_eq!(past.error, 0);
    assert_eq!(past.dirs[0].io_bytes(), 32 * MIB);
    let (w, p) = (within.dirs[0].clat().mean(), past.dirs[0].clat().mean());
    assert!(
        (p / w - 1.0).abs() < 0.1,
        "mean clat within the capacity {w:.0} ns, past it {p:.0} ns"
    );
}
