use super::*;

pub(crate) fn cfg() -> DcpmmConfig {
    DcpmmConfig {
        mode: PmemMode::AppDirect,
        persistence: Persistence::Adr,
        flush: FlushMode::Clwb,
        sync: SyncMode::Spf,
        dimms: 6,
        interleave_bytes: 4096,
        line_bytes: 64,
        xpline_bytes: 256,
        wc_buffer_xplines: 64,
        media_units: 4,
        media_read_ns: 100,
        media_write_ns: 287,
        host_path_ns: 53,
        ddrt_ns: 50,
        controller_ns: 55,
        bus_bytes_per_s: 6 * 21_333_000_000,
        fence_ns: 30,
        page_bytes: 4096,
        near_bytes: 0,
        near_ns: 81,
    }
}

fn run(d: &mut Dcpmm, reqs: &[DevRequest]) -> Vec<Nanos> {
    let mut cx = Cx::default();
    let mut t = 0;
    let mut out = Vec::new();
    for r in reqs {
        d.submit(t, *r, &mut cx);
        let c = cx.completions.pop().expect("completes at once");
        assert_eq!(c.breakdown.total(), c.at - t, "every ns attributed");
        t = c.at;
        out.push(c.at);
    }
    out
}

#[test]
fn a_64_byte_write_costs_a_256_byte_media_access() {
    let mut c = cfg();
    c.wc_buffer_xplines = 1;
    let mut d = Dcpmm::new(c.clone(), 1 << 30);
    // one 64 B store, then a store to another XPLine of the same DIMM
    // pushes it out of the one-entry buffer
    let stride = c.interleave_bytes * c.dimms as u64;
    run(
        &mut d,
        &[
            DevRequest::new(0, Op::Write, 0, 64),
            DevRequest::new(1, Op::Write, stride, 256),
        ],
    );
    let m = d.media_counts();
    assert_eq!(m.write_bytes, 256, "{m:?}");
    assert_eq!(m.read_bytes, 256, "the partial XPLine is read first: {m:?}");
    assert_eq!(m.rmw, 1);
    // a whole XPLine leaves without a read
    run(&mut d, &[DevRequest::new(2, Op::Write, 2 * stride, 64)]);
    let m = d.media_counts();
    assert_eq!((m.write_bytes, m.read_bytes, m.rmw), (512, 256, 1), "{m:?}");
}

#[test]
fn the_write_combining_buffer_merges_sequential_lines() {
    let mut d = Dcpmm::new(cfg(), 1 << 30);
    // 64 B stores one after another over 64 KB: every XPLine fills up in
    // the buffer, so none is read back when it leaves
    let reqs: Vec<DevRequest> = (0..1024)
        .map(|i| DevRequest::new(i, Op::Write, i * 64, 64))
        .collect();
    run(&mut d, &reqs);
    let m = d.media_counts();
    assert_eq!(m.rmw, 0, "{m:?}");
    assert_eq!(m.read_bytes, 0, "{m:?}");
}

#[test]
fn eadr_makes_clwb_free() {
    let sync_after_write = |p: Persistence| {
        let mut c = cfg();
        c.persistence = p;
        let mut d = Dcpmm::new(c, 1 << 30);
        let mut w = DevRequest::new(0, Op::Write, 0, 1 << 20);
        w.fua = false;
        let t = run(&mut d, &[w, DevRequest::new(1, Op::Flush, 0, 0)]);
        (t[1] - t[0], d.media_counts().lines_flushed)
    };
    let (adr_ns, adr_lines) = sync_after_write(Persistence::Adr);
    let (eadr_ns, eadr_lines) = sync_after_write(Persistence::Eadr);
    assert_eq!(adr_lines, 16384, "1 MiB of dirty lines flushed under ADR");
    assert_eq!(eadr_lines, 0, "nothing flushed under eADR");
    assert_eq!(eadr_ns, cfg().fence_ns, "only the fence under eADR");
    assert!(adr_ns > 10 * eadr_ns, "adr {adr_ns} eadr {eadr_ns}");
}

#[test]
fn a_random_load_pays_the_dimm_path_and_the_media() {
    let c = cfg();
    let mut d = Dcpmm::new(c.clone(), 1 << 30);
    let t = run(&mut d, &[DevRequest::new(0, Op::Read, 1 << 20, 64)]);
    let front = c.host_path_ns + c.ddrt_ns + c.controller_ns + c.media_read_ns;
    assert!(t[0] >= front && t[0] <= front + 2, "{} vs {front}", t[0]);
}

#[test]
fn memory_mode_hits_cost_dram_and_misses_the_dimm() {
    let mut c = cfg();
    c.mode = PmemMode::MemoryMode;
    c.near_bytes = 1 << 20;
    let mut d = Dcpmm::new(c.clone(), 1 << 30);
    let t = run(
        &mut d,
        &[
            DevRequest::new(0, Op::Read, 0, 64),
            DevRequest::new(1, Op::Read, 0, 64),
        ],
    );
    let miss = t[0];
    let hit = t[1] - t[0];
    assert!(hit <= c.near_ns + 1, "hit {hit}");
    assert!(miss > hit + c.media_read_ns, "miss {miss} hit {hit}");
}
