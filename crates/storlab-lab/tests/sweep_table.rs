//! The sweep-table reader's invariants (the fuzz target's, see
//! `fuzz/`) on generated input: near-valid tables with damage, and
//! arbitrary text.

use proptest::prelude::*;
use storlab_lab::sweep::check_table_text;

const GOOD: &str = "# storlab lab sweep: points 3, shard 1/2\n\
point,bs,\"a,b\",dir,ios,iops,bw_mb_s,lat_mean_us,clat_mean_us,clat_p50_us,clat_p99_us,clat_p99.9_us\n\
0,4k,\"x\"\"y\",read,10,1.0,2.0,3.0,4.0,5.0,6.0,7.0\n\
2,8k,z,write,10,1.0,2.0,3.0,4.0,5.0,6.0,7.0\n";

#[test]
fn a_good_table_reads_back_and_quotes_survive() {
    let t = storlab_lab::sweep::Table::parse(std::path::Path::new("g.csv"), GOOD).expect("valid");
    assert_eq!(t.columns, ["bs", "a,b"]);
    assert_eq!(t.rows[0].values[1], "x\"y");
    assert_eq!(t.to_csv(), GOOD);
    check_table_text(GOOD);
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
            check_table_text(text);
        }
    }

    #[test]
    fn arbitrary_text_never_panics(text in "(# storlab lab sweep: points [0-9]{1,20}(, shard [0-9]/[0-9])?\n)?[-a-z0-9,.\"\r\n ]{0,200}") {
        check_table_text(&text);
    }
}
