//! Table V: the device rows on the full Moneta hold or say why, and the
//! whole table runs for any devices with the Moneta study's shape
//! (speedups over the first device, harmonic means).

mod support;
use support::reproduce;

#[test]
fn apps_table_rows_hold_or_say_why() {
    let (r, table) = reproduce("apps-table");
    // 4 XDD rows on Moneta, and the RAID-SSD column: 4 XDD and 11
    // application rows
    assert_eq!(r.rows.len(), 19, "{table}");
    // through XFS the random mix loses more than the sequential one
    let v = |w: &str| {
        r.rows
            .iter()
            .find(|row| row.what.starts_with("Table V, Moneta:") && row.what.ends_with(w))
            .and_then(|row| row.value)
            .unwrap_or_else(|| panic!("no row {w}"))
    };
    let seq = v("XDD-Sequential-FS") / v("XDD-Sequential-Raw");
    let rand = v("XDD-Random-FS") / v("XDD-Random-Raw");
    assert!(rand < seq && rand < 1.0 && seq > 0.8, "{table}");
    // the audit's "mislabelled rows": Table V's XDD rows are device
    // benchmarks, summarised apart from the applications and the devices
    assert!(r
        .rows
        .iter()
        .all(|row| (r.class_of(row) == storlab_lab::Class::Xdd) == row.what.contains("XDD")));
    let xdd = storlab_lab::Summary::of_class([&r], storlab_lab::Class::Xdd);
    let app = storlab_lab::Summary::of_class([&r], storlab_lab::Class::App);
    assert_eq!((xdd.rows, app.rows), (8, 11));
}

#[test]
fn table_v_has_the_studys_shape_on_any_devices() {
    let devices = vec!["raid-disk".to_string(), "moneta-balance".to_string()];
    let t = storlab_lab::tablev::run(
        &devices,
        &["scale=0.02".into(), "transactions=300".into()],
        &|| {},
    )
    .expect("runs");
    let bt = t
        .rows
        .iter()
        .position(|(b, _)| b.label == "Berkeley-DB BTree")
        .expect("a BTree row");
    assert_eq!(t.speedup(bt, 0), Some(1.0));
    // a durable transaction per commit: the PCM array beats the disks
    assert!(t.speedup(bt, 1).unwrap() > 3.0, "{}", t.markdown());
    let h = t.harmonic_mean(1).expect("a mean");
    assert!(h > 1.0, "{}", t.markdown());
    let md = t.markdown();
    assert!(
        md.contains("harmonic mean") && md.contains("moneta-balance"),
        "{md}"
    );
}
