//! Issue 62: today's devices through `storlab sim`, as a user runs them.
//! The per-mechanism checks (a 64 B store costs a 256 B media access,
//! eADR makes clwb free) are the device classes' own tests
//! (crates/storlab-model/src/devices/ddr/dcpmm/tests.rs, devices/cxl/tests.rs);
//! these check the presets end to end, in virtual time.

#[path = "../../../testsupport/command.rs"]
mod command;

use std::process::Command;

use serde_json::Value;

fn sim(device: &str, set: &[&str], fio: &[&str]) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_storlab"));
    cmd.args(["sim", "--output-format=json", "--device", device]);
    for s in set {
        cmd.args(["--set", s]);
    }
    let out = command::stdout_of(cmd.args(fio));
    serde_json::from_slice(&out).unwrap()
}

/// Mean read latency of the first job, ns.
fn read_ns(v: &Value) -> f64 {
    v["jobs"][0]["read"]["lat_ns"]["mean"].as_f64().unwrap()
}

fn qd1_read(device: &str, set: &[&str], bs: &str) -> f64 {
    read_ns(&sim(
        device,
        set,
        &[
            "--name=r",
            "--rw=randread",
            &format!("--bs={bs}"),
            "--size=1g",
            "--number_ios=500",
        ],
    ))
}

#[test]
fn a_cxl_read_is_slower_than_local_dram_and_faster_than_an_optane_ssd_read() {
    let local = qd1_read("cxl-type3", &["cxl.attach=\"ddr\""], "64");
    let cxl = qd1_read("cxl-type3", &[], "64");
    let ssd = qd1_read("optane-p4800x", &[], "4k");
    assert!(cxl > local, "CXL {cxl} ns, local DRAM {local} ns");
    // the link's ports, wire and controller add tens of ns, not µs
    assert!(
        cxl - local > 20.0 && cxl - local < 200.0,
        "added {} ns",
        cxl - local
    );
    // 4 KB too: CXL's whole transfer stays far below the SSD's
    let cxl4k = qd1_read("cxl-type3", &[], "4k");
    assert!(cxl4k * 10.0 < ssd, "CXL 4 KB {cxl4k} ns, P4800X {ssd} ns");
}

#[test]
fn a_p4800x_shows_no_garbage_collection_under_sustained_random_writes() {
    // three rounds of random 4 KB writes at QD16 over the same 2 GiB, one
    // after another: overwrites from the second round on
    let mut fio = Vec::new();
    for name in ["w1", "w2", "w3"] {
        fio.extend([
            format!("--name={name}"),
            "--stonewall".into(),
            "--rw=randwrite".into(),
            "--bs=4k".into(),
            "--iodepth=16".into(),
            "--ioengine=libaio".into(),
            "--size=2g".into(),
            "--number_ios=60000".into(),
        ]);
    }
    let fio: Vec<&str> = fio.iter().map(String::as_str).collect();
    let v = sim("optane-p4800x", &[], &fio);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    let iops: Vec<f64> = jobs
        .iter()
        .map(|j| j["write"]["iops"].as_f64().unwrap())
        .collect();
    for w in iops.windows(2) {
        assert!((w[1] / w[0] - 1.0).abs() < 0.02, "IOPS drift: {iops:?}");
    }
    // written in place: nothing in the report moves data behind the host
    let counters = jobs[2]["storlab"]["counters"].as_array().unwrap();
    for c in counters {
        let name = c["name"].as_str().unwrap();
        assert!(
            !name.starts_with("gc") && name != "erases",
            "a GC counter on an in-place device: {name}"
        );
    }
    // and the media wrote what the host wrote: 4 KB = 16 rows of 256 B
    let rows = counters
        .iter()
        .find(|c| c["name"] == "rows_written")
        .and_then(|c| c["value"].as_f64())
        .unwrap();
    assert_eq!(rows, 3.0 * 60000.0 * 16.0, "write amplification 1");
}

#[test]
fn the_memory_presets_run_fio_and_their_msync_follows_the_persistence_domain() {
    let sync = |set: &[&str]| {
        let v = sim(
            "optane-pmem-100",
            set,
            &[
                "--name=m",
                "--rw=randwrite",
                "--bs=4k",
                "--fsync=1",
                "--size=1m",
                "--number_ios=20",
            ],
        );
        v["jobs"][0]["sync"]["lat_ns"]["mean"].as_f64().unwrap()
    };
    let adr = sync(&["device.capacity_bytes=1048576"]);
    let eadr = sync(&[
        "device.capacity_bytes=1048576",
        "dcpmm.persistence=\"eadr\"",
    ]);
    assert!(
        eadr > 0.0 && adr > 100.0 * eadr,
        "ADR {adr} ns, eADR {eadr} ns"
    );
    // Memory Mode reads what App Direct reads, through its DRAM cache
    let mm = qd1_read("optane-pmem-100-mm", &[], "4k");
    assert!(mm > 0.0);
}
