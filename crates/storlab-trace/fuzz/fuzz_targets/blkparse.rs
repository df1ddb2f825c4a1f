#![no_main]
//! The blkparse parser on arbitrary input.

use libfuzzer_sys::fuzz_target;
use storlab_trace::Format;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| common::run(data, Some(Format::Blkparse)));
