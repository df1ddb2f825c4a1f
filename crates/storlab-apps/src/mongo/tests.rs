//! The MongoDB models' tests.

use super::*;
use storlab_model::config::PresetStore;
use storlab_model::SystemConfig;

fn run(device: &str, fs: &str, app: &str, pairs: &[&str]) -> serde_json::Value {
    let ov = vec![format!("host.file_system=\"{fs}\"")];
    let (resolved, cfg) = SystemConfig::load(&PresetStore::default(), device, &ov).unwrap();
    let pairs: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
    let jobs =
        storlab_workload::fio::parse_cli_args(&crate::registry::job_args(app, &pairs)).unwrap();
    let r = crate::run::simulate(&cfg, &resolved, &jobs, 1, &mut |_, _| {}).unwrap();
    r.jobs[0].app.clone().unwrap()
}

/// `Step::Mem` holds the thread for its time and counts as the
/// device's; `Step::Append` waits for the next `Step::FlushLog`, as
/// group commit.
#[test]
fn mem_steps_are_device_time_and_appends_wait_for_the_log_thread() {
    let a = run("nvmm-raw", "pmfs", "ycsb-a", &["operations=50"]);
    let dev = a["time_by_layer"]["device"]["ns_per_op"].as_f64().unwrap();
    let msync = a["model"]["nvmm_msync_ns_mean"].as_f64().unwrap();
    let writes = a["operations"]["update"]["count"].as_f64().unwrap();
    // every update's msync is device time, nothing else is large
    assert!((dev * 50.0 - msync * writes).abs() < 0.01 * dev * 50.0);
    let j = run(
        "nvmm-raw",
        "pmfs",
        "ycsb-a",
        &["operations=50", "mode=journaled"],
    );
    let gc = j["time_by_layer"]["group_commit"]["ns_per_op"]
        .as_f64()
        .unwrap();
    let upd = j["operations"]["update"]["mean_ns"].as_f64().unwrap();
    // a third of 100 ms (+1 ms) is the longest wait; an update waits
    // for the next round
    assert!(gc > 0.0 && upd > 1e6 && upd < 35.5e6, "{gc} {upd}");
    assert_eq!(
        j["group_commit"]["commits"],
        j["operations"]["update"]["count"]
    );
}

#[test]
fn bad_parameters_are_refused_by_name() {
    let a = crate::registry::find("ycsb-a", "t").unwrap();
    for bad in [
        "mode=eventually",
        "commit_interval=0",
        "cpu_us=-1",
        "record=10",
    ] {
        let p = Params::parse(a, &[bad.into()], "--app-set").unwrap();
        let e = build(&p, Workload::A).err().expect(bad).to_string();
        assert!(e.contains(bad.split('=').next().unwrap()), "{e}");
    }
}

#[test]
fn zipfian_favours_low_ranks_and_stays_in_range() {
    let z = Zipfian::new(1000, ZIPF_THETA);
    let mut rng = Pcg64Mcg::seed_from_u64(7);
    let mut counts = vec![0u32; 1000];
    for _ in 0..100_000 {
        counts[z.next(&mut rng) as usize] += 1;
    }
    assert!(counts[0] > counts[10] && counts[10] > counts[500]);
    // rank 0's probability is 1/zeta(1000) ≈ 0.13 for theta 0.99
    let p0 = counts[0] as f64 / 1e5;
    assert!((0.11..0.16).contains(&p0), "{p0}");
}
