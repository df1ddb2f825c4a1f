//! Tests of the drive's internals: multi-plane batching and rounding.

use super::nand::{take_batch, SamePlane, WOp};
use super::spread::round_non_negative;
use super::ssd::Ssd;
use std::collections::VecDeque;

#[test]
fn remembering_a_one_plane_front_takes_the_scans_batches() {
    // long runs on one plane (a victim's ops), with other planes' and
    // other kinds' ops now and then, taken with the remembered front
    // and with none (a full scan each time): the same batches
    let mut x = 12345u64;
    let mut rnd = |n: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (x >> 33) % n
    };
    for ppd in [2u32, 4] {
        let mut q = VecDeque::new();
        let mut plane = 0;
        for i in 0..5000u32 {
            if rnd(40) == 0 {
                plane = rnd(ppd as u64) as u8;
            }
            let p = if rnd(10) == 0 {
                rnd(ppd as u64) as u8
            } else {
                plane
            };
            q.push_back(WOp {
                block: i,
                units: 1,
                seq: 0,
                page: 0,
                plane: p,
                flags: rnd(3) as u8 | WOp::BACKGROUND,
            });
        }
        let (mut a, mut b) = (q.clone(), q);
        let mut same = SamePlane::default();
        let (mut ca, mut cb) = (Vec::new(), Vec::new());
        let mut batches = 0;
        let mut paired = 0;
        loop {
            ca.clear();
            cb.clear();
            let ta = take_batch(
                &mut a,
                Some(&mut same),
                &mut ca,
                true,
                ppd,
                true,
                false,
                |o| Ssd::wop_op(o, 0, 0),
            );
            let tb = take_batch(&mut b, None, &mut cb, true, ppd, true, false, |o| {
                Ssd::wop_op(o, 0, 0)
            });
            assert_eq!(ta, tb);
            if !ta {
                break;
            }
            let blocks = |c: &Vec<super::nand::FOp>| c.iter().map(|o| o.block).collect::<Vec<_>>();
            assert_eq!(blocks(&ca), blocks(&cb), "batch {batches}");
            batches += 1;
            paired += usize::from(ca.len() > 1);
            // the odd batch with nothing remembered, as after a
            // read took the die
            if batches % 97 == 0 {
                same = SamePlane::default();
            }
        }
        assert!(paired > 0 && batches > paired, "both kinds of batch");
    }
}

#[test]
fn rounding_without_the_library_call_is_f64_round() {
    let mut xs = vec![
        0.0,
        0.49999999999999994,
        0.5,
        1.5,
        2.5,
        1e6 + 0.5,
        4503599627370495.5,
        4503599627370496.0,
        9007199254740993.0,
        9.2e18,
        9_223_372_036_854_774_784.0,
        9_223_372_036_854_775_808.0,
        1.8e19,
    ];
    let mut x = 0.37f64;
    for _ in 0..10_000 {
        x = (x * 1.618_033_988_749_895 + 0.123) % 3.0e6;
        xs.push(x);
        xs.push(x.trunc() + 0.5);
    }
    for x in xs {
        assert_eq!(round_non_negative(x), x.round() as u64, "{x}");
    }
}
