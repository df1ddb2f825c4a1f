//! The sweep-table reader's invariants (the fuzz target's, see
//! `fuzz/`) on generated input: near-valid tables with damage, and
//! arbitrary text.

use proptest::prelude::*;
use storlab_lab::sweep::check_table_text;

const GOOD: &str = "point,bs,\"a,b\",dir,ios,iops,bw_mb_s,lat_mean_us,clat_mean_us,clat_p50_us,clat_p99_us,clat_p99.9_us\n\
0,4k,\"x\"\"y\",read,10,1.0,2.0,3.0,4.0,5.0,6.0,7.0\n\
2,8k,z,write,10,1.0,2.0,3.0,4.0,5.0,6.0,7.0\n";

const META: &str = r#"{
  "format": "storlab-sweep-table/1",
  "points": 3,
  "shard": "1/2",
  "columns": ["bs", "a,b"],
  "metrics": ["ios", "iops", "bw_mb_s", "lat_mean_us", "clat_mean_us", "clat_p50_us", "clat_p99_us", "clat_p99.9_us"],
  "sweep": null,
  "storlab_version": "0.1.0"
}"#;

#[test]
fn a_good_table_reads_back_and_quotes_survive() {
    let p = std::path::Path::new("g.csv");
    let m = std::path::Path::new("g.json");
    let t = storlab_lab::sweep::Table::parse(p, GOOD, m, META).expect("valid");
    assert_eq!(t.columns, ["bs", "a,b"]);
    assert_eq!(t.rows[0].values[1], "x\"y");
    assert_eq!(t.points, 3);
    assert_eq!(t.to_csv(), GOOD);
    // the metadata written reads back as the same table
    let again = storlab_lab::sweep::Table::parse(p, &t.to_csv(), m, &t.meta_json()).expect("own");
    assert_eq!(again, t);
    check_table_text(GOOD, META);
    // columns that are not the metadata's
    let e = storlab_lab::sweep::Table::parse(p, &GOOD.replacen("bs", "iodepth", 1), m, META)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("g.csv:1:") && e.contains("not those of its metadata"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn damaged_tables_never_panic(pos in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
        let mut b = GOOD.as_bytes().to_vec();
        let p = pos % b.len();
        b[p] = byte;
        b.truncate(cut.max(1).min(b.len()));
        if let Ok(text) = std::str::from_utf8(&b) {
            check_table_text(text, META);
            check_table_text(GOOD, text);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(point,bs,dir,ios,iops,bw_mb_s,lat_mean_us,clat_mean_us,clat_p50_us,clat_p99_us,clat_p99.9_us\n)?[-a-z0-9,.\"\r\n ]{0,200}") {
        check_table_text(&text, META);
    }

    #[test]
    fn arbitrary_metadata_never_panics(points in 0usize..1_000_000_000_000, shard in "[0-9]{1,3}/[0-9]{1,3}", cut in 0usize..400) {
        let meta = META.replace("\"points\": 3", &format!("\"points\": {points}")).replace("1/2", &shard);
        check_table_text(GOOD, &meta[..cut.min(meta.len())]);
        check_table_text(GOOD, &meta);
    }
}
