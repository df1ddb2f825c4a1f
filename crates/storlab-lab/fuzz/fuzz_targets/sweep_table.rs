#![no_main]
//! The sweep-table reader (`storlab lab merge`) on arbitrary input.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        storlab_lab::sweep::check_table_text(text);
    }
});
