#![no_main]
//! The closed-loop trace reader and loader on arbitrary input: errors, never
//! a panic; what loads is consistent (ranks a permutation per stream, no
//! request waiting for a later arrival).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = storlab_trace::closed::load_from(data, "fuzz") {
        for (_, recs) in &t.streams {
            let n = recs.len() as u64;
            for r in recs {
                assert!(r.rank < n && r.after <= r.rank);
            }
        }
        let _ = t.recorded_span_ns();
    }
});
