//! Tests of the persistence model (`super`).

use super::*;

#[test]
fn covered_lines_counts_touched_lines() {
    assert_eq!(covered_lines(0, 0, 64), 0);
    assert_eq!(covered_lines(0, 1, 64), 1);
    assert_eq!(covered_lines(63, 2, 64), 2);
    assert_eq!(covered_lines(64, 64, 64), 1);
    assert_eq!(covered_lines(1, 4096, 64), 65);
}

#[test]
fn split_pages_cases() {
    let s = split_pages(100, 10, 4096);
    assert_eq!(s.head.unwrap().page, 0);
    assert_eq!(s.pages(), 1);
    assert!(s.tail.is_none());
    let s = split_pages(4000, 200, 4096);
    assert_eq!((s.head.unwrap().len, s.tail.unwrap().len), (96, 104));
    assert_eq!(s.pages(), 2);
    let s = split_pages(4096, 3 * 4096, 4096);
    assert_eq!((s.full_first, s.full_end), (1, 4));
    assert!(s.head.is_none() && s.tail.is_none());
    let s = split_pages(10, 3 * 4096, 4096);
    assert_eq!((s.full_first, s.full_end, s.pages()), (1, 3, 4));
}

#[test]
fn names_round_trip() {
    for m in FlushMode::ALL {
        assert_eq!(m.name().parse::<FlushMode>().unwrap(), m);
    }
    for m in SyncMode::ALL {
        assert_eq!(m.name().parse::<SyncMode>().unwrap(), m);
    }
    for p in Preset::ALL {
        assert_eq!(p.name().parse::<Preset>().unwrap(), p);
        NvmmParams::preset(p).validate().unwrap();
    }
    assert!("clflush2".parse::<FlushMode>().is_err());
}

#[test]
fn read_latency_has_the_pmep_floor() {
    let mut p = NvmmParams::preset(Preset::PmLat);
    p.l_read_ns = 100.0;
    assert_eq!(p.read_ns(64, 1), p.read_ns(64, 1));
    assert_eq!(p.read_latency_ns(), 150.0);
    p.l_read_ns = 600.0;
    assert_eq!(p.read_latency_ns(), 600.0);
}
