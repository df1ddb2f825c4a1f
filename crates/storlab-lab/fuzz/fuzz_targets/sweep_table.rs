#![no_main]
//! The sweep-table reader (`storlab lab merge`) on arbitrary input: the
//! table's CSV, then a NUL byte, then its metadata (JSON).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let (csv, meta) = text.split_once('\0').unwrap_or((text, "{}"));
        storlab_lab::sweep::check_table_text(csv, meta);
    }
});
