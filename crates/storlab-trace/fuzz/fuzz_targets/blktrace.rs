#![no_main]
//! The blktrace reader on arbitrary bytes, split into two per-CPU streams
//! so that the merge and the reorder buffer are exercised too.

use libfuzzer_sys::fuzz_target;
use std::io::{BufRead, Cursor};
use std::sync::Arc;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let opts = common::options(flags);
    // A multiple of the record size, so that valid seeds stay valid.
    let cut = (rest.len() / 2) / 48 * 48;
    let inputs: Vec<(Arc<str>, Box<dyn BufRead + Send>)> = vec![
        ("cpu0".into(), Box::new(Cursor::new(rest[..cut].to_vec()))),
        ("cpu1".into(), Box::new(Cursor::new(rest[cut..].to_vec()))),
    ];
    common::check(
        storlab_trace::blktrace_from_readers(inputs, &opts),
        opts.skip_bad_lines,
    );
});
