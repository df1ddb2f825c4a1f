//! The paging study: thrash through Linux's swap path on each device.

use storlab_lab::studies;

#[test]
fn paging_reproduces() {
    let rep = studies::prepare("paging")
        .expect("known")
        .run(&|| {})
        .expect("runs");
    let mut out = Vec::new();
    rep.write_text(&mut out).expect("text");
    eprintln!("{}", String::from_utf8_lossy(&out));
    assert!(rep.failures().is_empty(), "{:?}", rep.failures());
    assert_eq!(rep.rows.len(), 11);
}
