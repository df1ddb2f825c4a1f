//! 512-byte requests on every preset (issue 58): a 512 B request pays the
//! host stack's per-request costs as a 4 KB one does, and less of what
//! moves data, so its IOPS lie between the 4 KB IOPS (a device bound by
//! per-request costs) and the bound the 4 KB request's per-request share
//! sets (a device bound by its transfers); and a 512 B write into a
//! written flash mapping unit reads the unit's old data first (counted in
//! `rmw_reads`; a cache tier's partial-block writes fill their block or
//! page likewise, on another path, so only its reads are compared).

use storlab_model::breakdown::Component;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;
use storlab_sim::run::simulate;
use storlab_sim::stats::JobStats;

/// Host components a request pays whatever its size: the system call,
/// the block layer, the driver's instructions, the doorbell and the
/// interrupt handler.
const PER_REQUEST: [Component; 5] = [
    Component::Syscall,
    Component::BlockLayer,
    Component::Driver,
    Component::Pio,
    Component::Interrupt,
];

/// Presets without a time to compare: `null` completes every request at
/// once.
const NO_TIME: [&str; 1] = ["null"];

fn run(device: &str, flash: bool, rw: &str, bs: &str) -> JobStats {
    let ov: Vec<String> = if flash {
        // written once, so reads and sub-unit writes reach the flash
        vec!["ssd.ftl.precondition=\"full\"".into()]
    } else {
        Vec::new()
    };
    let (resolved, cfg) =
        SystemConfig::load(&PresetStore::default(), device, &ov).expect("preset loads");
    let fio: Vec<String> = [
        "--name=j",
        &format!("--rw={rw}"),
        &format!("--bs={bs}"),
        "--direct=1",
        "--size=256m",
        "--number_ios=200",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let jobs = storlab_workload::fio::parse_cli_args(&fio).expect("fio args parse");
    simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{device} {rw} {bs}: {e}"))
        .jobs
        .remove(0)
}

fn counter(j: &JobStats, name: &str) -> Option<f64> {
    j.storlab["counters"]
        .as_array()?
        .iter()
        .find(|c| c["name"] == name)?["value"]
        .as_f64()
}

/// (mean latency, mean per-request part), ns, of direction `d`.
fn split(j: &JobStats, d: usize) -> (f64, f64) {
    let b = j.dirs[d].mean_breakdown_ns();
    let total: f64 = b.iter().sum();
    let fixed: f64 = PER_REQUEST.iter().map(|&c| b[c as usize]).sum();
    (total, fixed)
}

fn iops(j: &JobStats, d: usize) -> f64 {
    j.dirs[d].ios() as f64 * 1e9 / j.runtime_ns[d].max(1) as f64
}

#[test]
fn small_requests_pay_per_request_costs_and_less_transfer_on_every_preset() {
    let store = PresetStore::default();
    let mut checked = 0;
    for (name, _) in store.list() {
        if NO_TIME.contains(&name.as_str()) {
            continue;
        }
        let (_, cfg) = SystemConfig::load(&store, &name, &[]).expect("preset loads");
        let flash = cfg.ssd.is_some();
        // a cache tier keeps whole blocks (a block cache) or pages (hybrid
        // memory): a 512 B write into one fills the rest first
        let tier = cfg.tier.is_some();
        // a zoned drive takes writes only at a zone's write pointer: a
        // random write is refused (crates/storlab-sim/tests/zoned.rs)
        let zoned = cfg.ssd.as_ref().is_some_and(|s| s.zns.is_some());
        for (rw, d) in [("randread", 0), ("randwrite", 1)] {
            if rw == "randwrite" && zoned {
                continue;
            }
            if rw == "randwrite" && tier {
                // hybrid memory serves a whole-page write from DRAM with no
                // host request and faults the page in for a partial one:
                // paths, not sizes, differ
                continue;
            }
            let big = run(&name, flash, rw, "4k");
            let small = run(&name, flash, rw, "512");
            let (t4, f4) = split(&big, d);
            let (t5, f5) = split(&small, d);
            // the host stack costs a 512 B request what it costs a 4 KB one
            assert!(
                (f5 - f4).abs() <= 0.02 * f4 + 50.0,
                "{name} {rw}: per-request host costs {f5:.0} ns at 512 B, {f4:.0} ns at 4 KB"
            );
            let (i4, i5) = (iops(&big, d), iops(&small, d));
            // a 512 B request saves at most what is not per-request
            assert!(
                i5 <= i4 * t4 / f4.max(1.0) * 1.05,
                "{name} {rw}: {i5:.0} IOPS at 512 B, {i4:.0} at 4 KB, of whose {t4:.0} ns \
                 {f4:.0} are per request"
            );
            if rw == "randwrite" && flash {
                // every 512 B write lands in a written unit: its old data is
                // read first
                let rmw = counter(&small, "rmw_reads").expect("rmw_reads counted");
                assert!(
                    rmw >= 0.9 * small.dirs[1].ios() as f64,
                    "{name}: {rmw} read-modify-writes for {} 512 B writes",
                    small.dirs[1].ios()
                );
                assert!(
                    t5 > t4 * 0.98,
                    "{name}: a 512 B write ({t5:.0} ns) no cheaper than a 4 KB one ({t4:.0} ns) \
                     once it reads the unit's old data"
                );
            } else {
                // less data never costs more
                assert!(
                    i5 >= 0.97 * i4,
                    "{name} {rw}: {i5:.0} IOPS at 512 B, {i4:.0} at 4 KB"
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 30, "only {checked} presets checked");
}
