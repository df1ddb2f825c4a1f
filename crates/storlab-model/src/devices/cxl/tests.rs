use super::*;

fn cfg(attach: Attach) -> CxlConfig {
    CxlConfig {
        attach,
        link_lanes: 8,
        lane_bytes_per_s: 3_938_461_538,
        flit_bytes: 68,
        slots_per_flit: 4,
        slot_bytes: 16,
        line_bytes: 64,
        request_header_slots: Rw { read: 1, write: 1 },
        response_header_slots: Rw { read: 1, write: 1 },
        port_ns: 15,
        flight_ns: 1,
        controller_ns: 10,
        dram_ns: 80,
        dram_bytes_per_s: 60_000_000_000,
        local_bytes: 0,
    }
}

fn one(d: &mut CxlMemory, op: Op, len: u64) -> Nanos {
    let mut cx = Cx::default();
    d.submit(0, DevRequest::new(0, op, 0, len), &mut cx);
    let c = &cx.completions[0];
    assert_eq!(c.breakdown.total(), c.at, "every ns attributed");
    c.at
}

#[test]
fn a_line_over_cxl_pays_the_ports_the_wire_and_the_controller_on_top_of_dram() {
    let mut local = CxlMemory::new(cfg(Attach::Ddr), 1 << 30);
    let mut far = CxlMemory::new(cfg(Attach::Cxl), 1 << 30);
    let l = one(&mut local, Op::Read, 64);
    let f = one(&mut far, Op::Read, 64);
    // 4 port crossings, 2 flights, the controller, and the flits' serialisation
    let fixed = 4 * 15 + 2 + 10;
    assert!(f >= l + fixed && f <= l + fixed + 10, "local {l} far {f}");
}

#[test]
fn reads_fill_the_device_to_host_direction_and_writes_the_other() {
    let d = CxlMemory::new(cfg(Attach::Cxl), 1 << 30);
    // a read: one header slot out, header + 4 data slots back (17 B a slot)
    assert_eq!(d.wire_bytes(Op::Read, 1), (17, 85));
    assert_eq!(d.wire_bytes(Op::Write, 1), (85, 17));
    // many 64 KB reads: bound by x8 at 31.5 GB/s x 64 / 85
    let mut d = CxlMemory::new(cfg(Attach::Cxl), 1 << 30);
    let mut cx = Cx::default();
    for i in 0..1000 {
        d.submit(0, DevRequest::new(i, Op::Read, i << 16, 1 << 16), &mut cx);
    }
    let end = cx.completions.iter().map(|c| c.at).max().unwrap();
    let gbps = 1000.0 * 65536.0 / end as f64;
    let expect = 8.0 * 3.938461538 * 64.0 / 85.0;
    assert!(
        (gbps - expect).abs() / expect < 0.02,
        "{gbps} GB/s vs {expect}"
    );
    // reads and writes together use both directions: a mix finishes
    // sooner than the same bytes all read
    let mut d = CxlMemory::new(cfg(Attach::Cxl), 1 << 30);
    let mut cx = Cx::default();
    for i in 0..1000 {
        let op = if i % 2 == 0 { Op::Read } else { Op::Write };
        d.submit(0, DevRequest::new(i, op, i << 16, 1 << 16), &mut cx);
    }
    let mixed = cx.completions.iter().map(|c| c.at).max().unwrap();
    assert!(mixed * 10 < end * 7, "mixed {mixed} all reads {end}");
}

#[test]
fn bad_values_are_refused_by_name() {
    let mut c = cfg(Attach::Cxl);
    c.flit_bytes = 10;
    let e = validate(&c).unwrap_err().to_string();
    assert!(e.contains("cxl.flit_bytes"), "{e}");
    let mut c = cfg(Attach::Cxl);
    c.link_lanes = 0;
    assert!(validate(&c)
        .unwrap_err()
        .to_string()
        .contains("cxl.link_lanes"));
}

#[test]
fn local_bytes_put_the_first_lines_on_the_hosts_dram_and_the_rest_behind_the_link() {
    // each request on a fresh device: no queueing behind an earlier one
    let at = |attach: Attach, local_bytes: u64, off: u64, len: u64| {
        let mut c = cfg(attach);
        c.local_bytes = local_bytes;
        let mut d = CxlMemory::new(c, 1 << 30);
        let mut cx = Cx::default();
        d.submit(0, DevRequest::new(0, Op::Read, off, len), &mut cx);
        let c = &cx.completions[0];
        assert_eq!(c.breakdown.total(), c.at, "every ns attributed");
        c.at
    };
    let mib = 1 << 20;
    let l = at(Attach::Ddr, 0, 0, 64);
    let f = at(Attach::Cxl, 0, 0, 64);
    assert!(f > l);
    // below the boundary: local timing; at and above it: CXL timing
    assert_eq!(at(Attach::Cxl, mib, 0, 64), l);
    assert_eq!(at(Attach::Cxl, mib, mib - 64, 64), l);
    assert_eq!(at(Attach::Cxl, mib, mib, 64), f);
    // a request across the boundary ends with its far part (two lines)
    let f2 = at(Attach::Cxl, 0, 0, 128);
    assert_eq!(at(Attach::Cxl, mib, mib - 128, 256), f2);
}
