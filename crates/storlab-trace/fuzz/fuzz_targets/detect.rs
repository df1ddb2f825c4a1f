#![no_main]
//! Format detection, then whichever parser it picks.

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = storlab_trace::detect(data);
    common::run(data, None);
});
