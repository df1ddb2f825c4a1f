use storlab_model::config::PresetStore;
use storlab_model::{Cx, DevRequest, Op, SystemConfig};
#[test]
fn one_read() {
    let (_, cfg) = SystemConfig::load(&PresetStore::default(), "moneta-base", &[]).unwrap();
    let mut d = cfg.build_device().unwrap();
    let mut cx = Cx::default();
    d.submit(0, DevRequest { id: 7, op: Op::Read, offset: 8192 * 5, len: 4096, fua: false }, &mut cx);
    let mut q: Vec<(u64, u64)> = cx.wakeups.drain(..).collect();
    while !q.is_empty() {
        q.sort();
        let (t, tok) = q.remove(0);
        println!("t={t} tok kind={} idx={}", tok & 7, tok >> 3);
        d.on_event(t, tok, &mut cx);
        q.extend(cx.wakeups.drain(..));
        for c in cx.completions.drain(..) { println!("done {:?}", c); }
    }
}
